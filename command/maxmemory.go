package command

import (
	"slices"
	"strings"
)

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
	i := policyIndex(name)
	if i < 0 {
		return false
	}
	h.policy.Store(int32(i))
	h.SetMaxMemory(h.maxMemory.Load()) // the store evicts, or not
	return true
}

// policyIndex returns name's place in MaxMemoryPolicies, or -1.
func policyIndex(name string) int {
	return slices.Index(MaxMemoryPolicies, strings.ToLower(name))
}

// maxMemoryPolicy returns the policy's name.
func (h *Handler) maxMemoryPolicy() string { return MaxMemoryPolicies[h.policy.Load()] }

// noEviction reports whether the policy is noeviction.
func (h *Handler) noEviction() bool { return h.policy.Load() == 1 }

// outOfMemory reports whether a denyoom command must be refused: under
// noeviction, when the keyspace holds more than --maxmemory.
func (h *Handler) outOfMemory() bool {
	max := h.maxMemory.Load()
	return max > 0 && h.noEviction() && h.store.Memory() > max
}

func init() {
	configParams["maxmemory-policy"] = configParam{
		get:   func(c *Ctx) string { return c.h.maxMemoryPolicy() },
		parse: func(v []byte) (int64, bool) { return 0, policyIndex(string(v)) >= 0 },
		set:   func(c *Ctx, _ int64, v []byte) { c.h.SetMaxMemoryPolicy(string(v)) },
		why: func(v []byte) string {
			if policyIndex(string(v)) >= 0 {
				return ""
			}
			return "argument(s) must be one of the following: volatile-lru, volatile-lfu, volatile-random, volatile-ttl, allkeys-lru, allkeys-lfu, allkeys-random, noeviction"
		},
	}
}
