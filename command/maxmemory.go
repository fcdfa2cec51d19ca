package command

import "github.com/rlserver/rlserver/shard"

// --maxmemory-policy and CONFIG SET maxmemory-policy take Redis's names
// (shard.Policy has what each evicts). noeviction stops evicting: past
// --maxmemory, the commands that may grow the keyspace (Redis's denyoom
// flag, every limiter command included) answer Redis's -OOM error, and the
// rest still run. Under any other policy they answer it too while a shard
// over its bound finds nothing the policy may evict (a volatile policy
// with no key given a TTL), as Redis does when eviction fails.

// MaxMemoryPolicies are Redis's policy names, the default first.
var MaxMemoryPolicies = []string{"allkeys-lru", "noeviction", "volatile-ttl", "allkeys-lfu", "allkeys-random",
	"volatile-lru", "volatile-lfu", "volatile-random"}

const errOOM = "OOM command not allowed when used memory > 'maxmemory'."

// SetMaxMemoryPolicy applies a policy by name; it reports false for a
// name Redis does not have.
func (h *Handler) SetMaxMemoryPolicy(name string) bool {
	p, ok := shard.PolicyNamed(name)
	if !ok {
		return false
	}
	h.policy.Store(int32(p))
	h.store.SetPolicy(p)
	h.SetMaxMemory(h.maxMemory.Load()) // the store evicts, or not
	return true
}

// maxMemoryPolicy returns the policy.
func (h *Handler) maxMemoryPolicy() shard.Policy { return shard.Policy(h.policy.Load()) }

// noEviction reports whether the policy is noeviction.
func (h *Handler) noEviction() bool { return h.maxMemoryPolicy() == shard.NoEviction }

// outOfMemory reports whether a denyoom command must be refused: when the
// keyspace holds more than --maxmemory, under noeviction, or under another
// policy when a shard can evict nothing more.
func (h *Handler) outOfMemory() bool {
	return h.maxMemory.Load() > 0 && h.overMemory() // without a bound: one load, no call
}

func (h *Handler) overMemory() bool {
	return h.store.Memory() > h.maxMemory.Load() && (h.noEviction() || h.store.Stuck())
}

func init() {
	configParams["maxmemory-policy"] = configParam{
		get: func(c *Ctx) string { return c.h.maxMemoryPolicy().String() },
		parse: func(v []byte) (int64, bool) {
			_, ok := shard.PolicyNamed(string(v))
			return 0, ok
		},
		set: func(c *Ctx, _ int64, v []byte) { c.h.SetMaxMemoryPolicy(string(v)) },
		why: func(v []byte) string {
			if _, ok := shard.PolicyNamed(string(v)); ok {
				return ""
			}
			return "argument(s) must be one of the following: volatile-lru, volatile-lfu, volatile-random, volatile-ttl, allkeys-lru, allkeys-lfu, allkeys-random, noeviction"
		},
	}
	// The keys each eviction samples (see shard.Store.SetMaxMemorySamples).
	configParams["maxmemory-samples"] = rangedParam(func(c *Ctx) int64 { return int64(c.h.store.MaxMemorySamples()) },
		redisInt, 1, maxInt32, func(c *Ctx, n int64) { c.h.store.SetMaxMemorySamples(int(n)) })
	// The LFU counter's tuning, as Redis's (see shard.Store.SetLFU).
	configParams["lfu-log-factor"] = rangedParam(func(c *Ctx) int64 { return int64(c.h.store.LFU().LogFactor) },
		redisInt, 0, maxInt32, func(c *Ctx, n int64) {
			l := c.h.store.LFU()
			l.LogFactor = int(n)
			c.h.store.SetLFU(l)
		})
	configParams["lfu-decay-time"] = rangedParam(func(c *Ctx) int64 { return int64(c.h.store.LFU().DecayTime) },
		redisInt, 0, maxInt32, func(c *Ctx, n int64) {
			l := c.h.store.LFU()
			l.DecayTime = int(n)
			c.h.store.SetLFU(l)
		})
}

// objectIdle and objectFreq answer OBJECT IDLETIME and OBJECT FREQ for the
// key v holds, or Redis's error when the policy keeps the other stamp.
func objectIdle(c *Ctx, v *shard.Value) {
	if c.h.maxMemoryPolicy().LFU() {
		c.err("ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.")
		return
	}
	c.W.Int(int64(v.IdleTime().Seconds()))
}

func objectFreq(c *Ctx, v *shard.Value) {
	if !c.h.maxMemoryPolicy().LFU() {
		c.err("ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.")
		return
	}
	c.W.Int(int64(v.Freq()))
}
