package command

import "strings"

// --maxmemory-policy and CONFIG SET maxmemory-policy take Redis's names.
// noeviction stops evicting: past --maxmemory, the commands that may grow
// the keyspace (Redis's denyoom flag, every limiter command included)
// answer Redis's -OOM error, and the rest still run. Every other name
// keeps rlserver's eviction: the keys closest to expiring first, limiter
// keys before values given a TTL, values without one last.

// MaxMemoryPolicies are Redis's policy names, the default first.
var MaxMemoryPolicies = []string{"volatile-ttl", "noeviction", "allkeys-lru", "allkeys-lfu", "allkeys-random",
	"volatile-lru", "volatile-lfu", "volatile-random"}

const errOOM = "OOM command not allowed when used memory > 'maxmemory'."

// SetMaxMemoryPolicy applies a policy by name; it reports false for a
// name Redis does not have.
func (h *Handler) SetMaxMemoryPolicy(name string) bool {
	name = strings.ToLower(name)
	for _, p := range MaxMemoryPolicies {
		if p == name {
			h.policy.Store(&p)
			h.SetMaxMemory(h.maxMemory.Load()) // the store evicts, or not
			return true
		}
	}
	return false
}

// maxMemoryPolicy returns the policy's name.
func (h *Handler) maxMemoryPolicy() string {
	if p := h.policy.Load(); p != nil {
		return *p
	}
	return MaxMemoryPolicies[0]
}

// noEviction reports whether the policy is noeviction.
func (h *Handler) noEviction() bool { return h.maxMemoryPolicy() == "noeviction" }

// outOfMemory reports whether a denyoom command must be refused: under
// noeviction, when the keyspace holds more than --maxmemory.
func (h *Handler) outOfMemory() bool {
	max := h.maxMemory.Load()
	return max > 0 && h.noEviction() && h.store.Stats().Memory > max
}

func init() {
	configParams["maxmemory-policy"] = configParam{
		get:   func(c *Ctx) string { return c.h.maxMemoryPolicy() },
		parse: func(v []byte) (int64, bool) { return 0, validPolicy(string(v)) },
		set:   func(c *Ctx, _ int64, v []byte) { c.h.SetMaxMemoryPolicy(string(v)) },
		why: func(v []byte) string {
			if validPolicy(string(v)) {
				return ""
			}
			return "argument(s) must be one of the following: volatile-lru, volatile-lfu, volatile-random, volatile-ttl, allkeys-lru, allkeys-lfu, allkeys-random, noeviction"
		},
	}
}

func validPolicy(name string) bool {
	for _, p := range MaxMemoryPolicies {
		if strings.EqualFold(p, name) {
			return true
		}
	}
	return false
}
