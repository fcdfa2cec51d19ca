package shard

import (
	"time"
)

// Access stamps. Every record carries 24 bits about its last access, as
// Redis's objects do in their lru field, for the LRU and LFU policies and
// OBJECT IDLETIME and FREQ:
//
//   - under every policy but the LFU ones, the LRU clock of the last
//     access: the server clock's second, mod 2^24 (Redis's LRU_CLOCK, a
//     wrap every 194 days);
//   - under allkeys-lfu and volatile-lfu, the minute of the last decrement
//     (16 bits) and a logarithmic access counter (8 bits), which a key
//     starts at 5, each access raises with probability 1/((c-5) ×
//     lfu-log-factor + 1) and each lfu-decay-time minutes without one
//     lowers by one (Redis's updateLFU and LFUDecrAndReturn).
//
// A key is touched when a command reads or writes it (Redis's lookupKey),
// not when one only inspects it (Redis's LOOKUP_NOTOUCH: TYPE, TTL,
// EXISTS, OBJECT; Value.Peek). The time is the command's, so DEBUG CLOCK
// moves it. Switching between an LRU and an LFU policy leaves the stamps
// to be read the other way until keys are touched again, as in Redis.

// Policy is what a shard over its memory bound evicts: Redis's
// maxmemory-policy, by its names (Policy.String).
type Policy uint8

const (
	// AllKeysLRU (the zero value, rlserver's default): values least
	// recently used first; limiter keys closest to their fresh state
	// first, ahead of values.
	AllKeysLRU Policy = iota
	// VolatileLRU: as AllKeysLRU among the keys with an expiry (every
	// limiter key, values given a TTL).
	VolatileLRU
	// AllKeysLFU: values least frequently used first (the counter above);
	// limiter keys as under AllKeysLRU.
	AllKeysLFU
	// VolatileLFU: as AllKeysLFU among the keys with an expiry.
	VolatileLFU
	// AllKeysRandom: any key.
	AllKeysRandom
	// VolatileRandom: any key with an expiry.
	VolatileRandom
	// VolatileTTL: the keys with an expiry, the soonest to expire first
	// (for a limiter key, the one closest to fresh).
	VolatileTTL
	// NoEviction: nothing; the command layer refuses writes instead.
	NoEviction
)

var policyNames = [...]string{
	AllKeysLRU: "allkeys-lru", VolatileLRU: "volatile-lru", AllKeysLFU: "allkeys-lfu", VolatileLFU: "volatile-lfu",
	AllKeysRandom: "allkeys-random", VolatileRandom: "volatile-random", VolatileTTL: "volatile-ttl", NoEviction: "noeviction",
}

// String returns the policy's Redis name.
func (p Policy) String() string {
	if int(p) < len(policyNames) {
		return policyNames[p]
	}
	return "policy?"
}

// PolicyNamed returns the policy Redis names name (case-insensitively).
func PolicyNamed(name string) (Policy, bool) {
	for p, n := range policyNames {
		if len(n) == len(name) && equalFoldASCII(n, name) {
			return Policy(p), true
		}
	}
	return 0, false
}

func equalFoldASCII(a, b string) bool {
	for i := range len(a) {
		x, y := a[i], b[i]
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// volatile reports whether the policy evicts only keys with an expiry.
func (p Policy) volatile() bool {
	return p == VolatileLRU || p == VolatileLFU || p == VolatileRandom || p == VolatileTTL
}

// LFU reports whether the policy keeps access frequencies (OBJECT FREQ)
// rather than access times (OBJECT IDLETIME).
func (p Policy) LFU() bool { return p == AllKeysLFU || p == VolatileLFU }

func (p Policy) lfu() bool    { return p.LFU() }
func (p Policy) random() bool { return p == AllKeysRandom || p == VolatileRandom }

const (
	lruMax   = 1<<24 - 1 // Redis's LRU_CLOCK_MAX
	lfuMax   = 1<<16 - 1 // the LFU minute's wrap
	lfuInit  = 5         // Redis's LFU_INIT_VAL: a new key's counter
	clockLag = 2         // clock units a stamp may lie ahead of a command's clock (see lruIdle)

	// The defaults of Redis's lfu-log-factor and lfu-decay-time.
	DefaultLFULogFactor = 10
	DefaultLFUDecayTime = 1
)

// lruClock is Redis's LRU clock at now: the second, mod 2^24.
func lruClock(now int64) uint32 { return uint32(uint64(now)/1e9) & lruMax }

// lfuMinute is the LFU stamp's time at now: the minute, mod 2^16.
func lfuMinute(now int64) uint32 { return uint32(uint64(now)/60e9) & lfuMax }

// lruIdle returns the seconds from stamp to clock, wrapping once, as
// Redis's estimateObjectIdleTime counts them. A stamp just ahead of the
// clock is no time at all: commands read the clock before they lock the
// shard, so a key may be touched by one whose second has begun just
// before another, earlier, reads it.
func lruIdle(clock, stamp uint32) uint32 {
	if clock >= stamp {
		return clock - stamp
	}
	if stamp-clock <= clockLag {
		return 0
	}
	return clock + (lruMax - stamp)
}

// lfuElapsed returns the minutes from ldt to minute, wrapping once, as
// Redis's LFUTimeElapsed (a stamp just ahead counts as none, see lruIdle).
func lfuElapsed(minute, ldt uint32) uint32 {
	if minute >= ldt {
		return minute - ldt
	}
	if ldt-minute <= clockLag {
		return 0
	}
	return lfuMax - ldt + minute
}

// lfuCounter returns an LFU stamp's counter as of the shard's clock,
// lowered by one for every lfu-decay-time minutes since its minute
// (Redis's LFUDecrAndReturn).
func (sh *Shard) lfuCounter(acc uint32) uint32 {
	c := acc & 255
	if d := sh.lfuDecay.Load(); d > 0 {
		c -= min(c, lfuElapsed(lfuMinute(sh.now), acc>>8)/d)
	}
	return c
}

// lfuTouched returns an LFU stamp after an access (Redis's updateLFU).
func (sh *Shard) lfuTouched(acc uint32) uint32 {
	c := sh.lfuCounter(acc)
	if c < 255 {
		base := float64(max(int(c)-lfuInit, 0))
		if p := 1 / (base*float64(sh.lfuLog.Load()) + 1); sh.randFloat() < p {
			c++
		}
	}
	return lfuMinute(sh.now)<<8 | c
}

// randFloat returns a pseudo-random float64 in [0, 1).
func (sh *Shard) randFloat() float64 { return float64(sh.randN(1<<30)) / (1 << 30) }

// freshAccess is a new key's stamp at the shard's clock.
func (sh *Shard) freshAccess() uint32 {
	if sh.pol().lfu() {
		return lfuMinute(sh.now)<<8 | lfuInit
	}
	return lruClock(sh.now)
}

// touch stamps a record as accessed at the shard's clock, through the
// pointer to its stamp lookup gave (Found.acc), so that the limiters'
// path does not get at the record again.
func (sh *Shard) touch(acc *[3]byte) {
	if sh.pol().lfu() {
		sh.touchLFU(acc)
		return
	}
	sh.touchLRU(acc)
}

// touchLRU is touch under any other policy. It is small enough to inline:
// the limiters' path calls it itself (Shard.update).
func (sh *Shard) touchLRU(acc *[3]byte) {
	putAcc(acc, lruClock(sh.now))
}

// touchLFU is touch under an LFU policy.
func (sh *Shard) touchLFU(p *[3]byte) {
	putAcc(p, sh.lfuTouched(getAcc(p)))
}

// Peek leaves the key's access stamp as it was: the command only
// inspects the key (OBJECT, as Redis's LOOKUP_NOTOUCH).
func (v *Value) Peek() { v.peek = true }

// IdleTime returns how long ago the key was last read or written, in
// whole seconds as Redis's OBJECT IDLETIME reports it (0 for a missing
// key). Under an LFU policy the stamp holds no time: ask Freq.
func (v *Value) IdleTime() time.Duration {
	if v.ref == 0 {
		return 0
	}
	sh := v.sh
	return time.Duration(lruIdle(lruClock(sh.now), recAccess(sh.slabs.get(v.ref)))) * time.Second
}

// Freq returns the key's LFU counter, decayed to now, as Redis's OBJECT
// FREQ (0 for a missing key). Under an LRU policy the stamp holds no
// counter: ask IdleTime.
func (v *Value) Freq() int {
	if v.ref == 0 {
		return 0
	}
	return int(v.sh.lfuCounter(recAccess(v.sh.slabs.get(v.ref))))
}

// pol returns the shard's policy.
func (sh *Shard) pol() Policy { return Policy(sh.policy.Load()) }

// SetPolicy sets what the shards evict past the memory bound (default
// AllKeysLRU). The access stamps written under the policy before are
// kept, to be read under this one. It takes no lock.
func (s *Store) SetPolicy(p Policy) {
	for i := range s.shards {
		s.shards[i].policy.Store(uint32(p))
		s.shards[i].stuck.Store(false)
	}
}

// LFU is the LFU counter's tuning, as Redis's parameters of the same
// names.
type LFU struct {
	// LogFactor (lfu-log-factor) slows the counter's growth: an access
	// raises a counter c with probability 1/((c-5) × LogFactor + 1).
	// Default DefaultLFULogFactor.
	LogFactor int
	// DecayTime (lfu-decay-time) is the minutes without an access that
	// lower the counter by one; 0: it never decays. Default
	// DefaultLFUDecayTime.
	DecayTime int
}

// SetLFU sets the LFU counter's tuning (values beyond 2^32-1 are taken
// as that). It takes no lock.
func (s *Store) SetLFU(l LFU) {
	clamp := func(n int) uint32 { return uint32(min(max(int64(n), 0), 1<<32-1)) }
	for i := range s.shards {
		s.shards[i].lfuLog.Store(clamp(l.LogFactor))
		s.shards[i].lfuDecay.Store(clamp(l.DecayTime))
	}
}

// LFU returns the LFU counter's tuning.
func (s *Store) LFU() LFU {
	sh := &s.shards[0]
	return LFU{LogFactor: int(sh.lfuLog.Load()), DecayTime: int(sh.lfuDecay.Load())}
}

// Stuck reports whether a shard over its memory bound found nothing its
// policy may evict at its last try (under a volatile policy, no key with
// an expiry): writes that grow the keyspace would push it further over.
// It takes no lock.
func (s *Store) Stuck() bool {
	for i := range s.shards {
		if s.shards[i].stuck.Load() {
			return true
		}
	}
	return false
}
