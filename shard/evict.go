package shard

import (
	"unsafe"

	"github.com/rlserver/rlserver/engine"
)

// Eviction. A shard over its share of the memory bound removes keys as
// Redis's maxmemory policies do (Policy), approximately as Redis does: it
// samples maxmemory-samples keys the policy may evict (SetMaxMemorySamples),
// keeps the best candidates it has seen in a pool (Redis's eviction pool),
// and removes the one the policy ranks first (score). A write evicts at most
// evictPerWrite keys, far more than one write adds, so a shard over its
// bound (after CONFIG SET maxmemory lowers it) comes back under within a
// few writes without any of them waiting long; the sweep helps an idle
// one. A shard that finds nothing its policy may evict says so (Stuck):
// the commands that grow the keyspace are then refused, as Redis refuses
// them when eviction fails.
const (
	evictPerWrite = 16
	evictScanAll  = 256 // index slots up to which every key is looked at
	// evictProbes bounds the index slots a sample looks at once it has
	// found an evictable key: under a volatile policy the keys with a TTL
	// may be few among the others. Until then it looks further, through
	// the whole table if it must (a shard with none gives up at once, see
	// anyEvictable).
	evictProbes = 1024
	poolSize    = 16 // candidates kept between evictions (Redis's EVPOOL_SIZE)
	prefetchMax = 16 // sample lines worth asking for at once
)

// DefaultMaxMemorySamples is Redis's maxmemory-samples default: the
// evictable keys each eviction samples.
const DefaultMaxMemorySamples = 5

// SetMaxMemorySamples sets maxmemory-samples, the evictable keys each
// eviction samples (default DefaultMaxMemorySamples), at least 1 and at
// most 2^32-1. More samples rank victims better and cost more per
// eviction; only eviction reads it. It takes no lock.
func (s *Store) SetMaxMemorySamples(n int) {
	v := uint32(min(max(int64(n), 1), 1<<32-1))
	for i := range s.shards {
		s.shards[i].samples.Store(v)
	}
}

// MaxMemorySamples returns maxmemory-samples.
func (s *Store) MaxMemorySamples() int { return int(s.shards[0].samples.Load()) }

// fitBudget evicts, a few keys at most, while the shard is over its memory
// bound, sparing the key just written. Every write that grows the shard
// (a new key, a LOG window or lease set that grows) comes through here, so
// the bound holds without a pass over the shard that would stall it.
func (sh *Shard) fitBudget() {
	if b := sh.budget.Load(); b > 0 && sh.mem.Load() > b && !sh.noEvict {
		sh.evictSome(b, sh.lastRef, evictPerWrite)
	}
}

// evictOver evicts up to max keys while the shard is over its memory bound
// (the sweep calls it, so that an idle shard comes back under a lowered
// bound); it returns how many it removed.
func (sh *Shard) evictOver(max int) int {
	if b := sh.budget.Load(); b > 0 && sh.mem.Load() > b {
		return sh.evictSome(b, 0, max)
	}
	return 0
}

// score ranks record rec for eviction under the shard's policy, the
// higher the sooner it goes; ok is false for a key the policy never
// evicts. Under the LRU and LFU policies a limiter key ranks by how soon
// its state is fresh, ahead of every value: forgetting it changes the
// least, and a value's loss is its data's.
func (sh *Shard) score(rec []byte) (s uint64, ok bool) {
	exp := recExp(rec)
	p := sh.pol()
	if p.volatile() && exp == engine.NoExpiry {
		return 0, false
	}
	switch p {
	case NoEviction:
		return 0, false
	case AllKeysRandom, VolatileRandom:
		return 0, true // the first sampled goes: samples start at random
	case VolatileTTL:
		return soonest(exp), true
	}
	if !engine.Kind(rec[0] & kindMask).IsValue() {
		return 1<<63 | soonest(exp)>>1, true
	}
	if p.lfu() {
		return uint64(255 - sh.lfuCounter(recAccess(rec))), true // Redis's 255 - LFUDecrAndReturn
	}
	return uint64(lruIdle(lruClock(sh.now), recAccess(rec))), true
}

// soonest ranks an expiry: the earlier, the higher.
func soonest(exp int64) uint64 { return ^(uint64(exp) ^ 1<<63) }

// evictSome removes up to max keys while the shard holds more than budget
// bytes, never keep's record. A small table has every key looked at; a
// larger one is sampled in its slabs (sampleSlab), a step ahead: each
// eviction takes the victim the one before it chose, whose index slot is
// in cache by then, and chooses the next from the pool once the samples
// it prefetched are in, so an eviction's cache misses overlap the
// commands between two of them. It records whether it stopped over
// budget for want of a key to evict.
func (sh *Shard) evictSome(budget int64, keep ref, max int) (removed int) {
	if sh.idx.old != nil {
		sh.idx.migrate(&sh.slabs, 64*max) // sample one table: finish a growth first
	}
	size := sh.idx.size
	if p := sh.pol(); sh.pool.policy != p {
		sh.pool = evictPool{policy: p} // its scores are another policy's
	}
	stuck := !sh.anyEvictable()
	for ; !stuck && removed < max && sh.mem.Load() > budget; removed++ {
		var pos int
		var r ref
		if size <= evictScanAll {
			pos, r = sh.scanBest(keep)
		} else if pos, r = sh.takeAhead(keep); r == 0 {
			sh.sampleSlab(keep)
			if r, _ = sh.pool.take(sh, keep); r != 0 {
				key, _ := recSplit(sh.slabs.get(r))
				pos, r = sh.indexed(r, key, sh.hash.bytes(key))
			}
		}
		if r == 0 && size > evictScanAll { // the samples fell among free or unevictable slots
			pos, r = sh.sampleIndex(keep)
		}
		if r == 0 {
			// Nothing but keep, or samples that found nothing: only
			// a shard with nothing evictable at all is stuck (keep
			// is evictable by the next write).
			stuck = !sh.anyEvictable()
			break
		}
		sh.removeAt(pos, r, EventEvict)
		sh.evicted.Add(1)
	}
	if stuck = stuck && sh.mem.Load() > budget; stuck != sh.stuck.Load() {
		sh.stuck.Store(stuck)
	}
	if removed > 0 && size > evictScanAll {
		sh.chooseAhead(keep)
	}
	return removed
}

// anyEvictable reports whether the shard holds a key its policy may
// evict, by count: any key, or under a volatile policy one with an
// expiry.
func (sh *Shard) anyEvictable() bool {
	p := sh.pol()
	if p == NoEviction {
		return false
	}
	n := sh.idx.n
	if p.volatile() {
		n -= sh.persistent
	}
	return n > 0
}

// unstick clears the shard's stuck mark once it may evict again: a key
// it may evict appeared, or one was removed and it is back under budget.
func (sh *Shard) unstick() {
	if sh.stuck.Load() {
		sh.stuck.Store(false)
	}
}

// evictAhead is the eviction chosen early: its victim (0: none), the hash
// of the victim's key when chosen (the slot may hold another key by the
// time it is taken), its score then, and the size class and slot the
// samples for the one after start at (class 0: none).
type evictAhead struct {
	victim ref
	hash   uint64
	score  uint64
	class  uint32
	slot   int
}

// takeAhead returns the victim chosen ahead and its index slot if it still
// holds the key it held then, is not keep, and ranks no lower than it did
// (a key read or extended since is not the one chosen); else 0.
func (sh *Shard) takeAhead(keep ref) (int, ref) {
	r, h := sh.ahead.victim, sh.ahead.hash
	sh.ahead.victim = 0
	if r == 0 || r == keep {
		return 0, 0
	}
	rec := sh.slabs.lookup(r)
	if rec == nil || rec[0] == 0 {
		return 0, 0
	}
	if s, ok := sh.score(rec); !ok || s < sh.ahead.score {
		return 0, 0
	}
	key, _ := recSplit(rec)
	if sh.hash.bytes(key) != h {
		return 0, 0
	}
	return sh.indexed(r, key, h)
}

// indexed returns the index slot of record r holding key, or 0s if the
// index does not lead there (cannot happen; such a record must not go).
func (sh *Shard) indexed(r ref, key []byte, h uint64) (int, ref) {
	if pos, found, _ := sh.idx.find(&sh.slabs, key, h); found == r {
		return pos, r
	}
	return 0, 0
}

// chooseAhead adds the samples prefetched by the eviction before (or
// fresh ones) to the pool, chooses the next victim from it, asks for its
// index slot, and picks and prefetches the samples for the one after.
func (sh *Shard) chooseAhead(keep ref) {
	if sh.ahead.class != 0 {
		sh.sampleFrom(sh.ahead.class, sh.ahead.slot, keep)
	} else {
		sh.sampleSlab(keep)
	}
	r, s := sh.pool.take(sh, keep)
	sh.ahead = evictAhead{victim: r, score: s}
	if r != 0 {
		key, _ := recSplit(sh.slabs.get(r))
		sh.ahead.hash = sh.hash.bytes(key)
		sh.idx.prefetchHome(sh.ahead.hash)
	}
	sh.ahead.class, sh.ahead.slot = sh.sampleSpot()
	sh.prefetchSamples(sh.ahead.class, sh.ahead.slot)
}

// best keeps the highest-scored of the samples offered to it.
type best struct {
	pos   int
	r     ref
	score uint64
}

// offer considers record r (in index slot pos, when known) with its
// score; the first offered wins ties, so that random policies take the
// first sample.
func (b *best) offer(pos int, r ref, s uint64) {
	if b.r == 0 || s > b.score {
		*b = best{pos, r, s}
	}
}

// scanBest returns the index slot and record of the key the policy ranks
// first other than keep, looking at every key (a small table).
func (sh *Shard) scanBest(keep ref) (int, ref) {
	var b best
	start := 0
	if sh.pol().random() {
		start = sh.randN(sh.idx.size) // the first evictable key from a random slot
	}
	for k := range sh.idx.size {
		i := (start + k) % sh.idx.size
		if sh.idx.tag(i) != 0 {
			if r := sh.idx.ref(i); r != keep {
				if s, ok := sh.score(sh.slabs.get(r)); ok {
					b.offer(i, r, s)
				}
			}
		}
	}
	return b.pos, b.r
}

// sampleIndex is sampleSlab through the index: maxmemory-samples
// evictable keys from random slots on, a cache miss each (see
// evictProbes).
func (sh *Shard) sampleIndex(keep ref) (int, ref) {
	size, samples := sh.idx.size, int(sh.samples.Load())
	var b best
	i := sh.randN(size)
	for seen, probes := 0, 0; seen < samples && probes < size && (probes < evictProbes || seen == 0); probes++ {
		if sh.idx.tag(i) != 0 {
			if r := sh.idx.ref(i); r != keep {
				if s, ok := sh.score(sh.slabs.get(r)); ok {
					seen++
					b.offer(i, r, s)
				}
			}
		}
		// Neighbouring slots hold unrelated keys; jump elsewhere now
		// and then so one long run is not all we see.
		if i++; i == size || probes%8 == 7 {
			i = sh.randN(size)
		}
	}
	return b.pos, b.r
}

// sampleSlab adds to the pool up to maxmemory-samples evictable records
// other than keep found from a random slot of a random size class on. A
// class's records lie in consecutive slots, so the samples cost a few
// cache lines, where records reached through the index cost a cache miss
// each. One class's keys may all be alike (small counters read often,
// large values read once): the pool keeps the candidates of earlier
// samples from other classes to compare them with.
func (sh *Shard) sampleSlab(keep ref) {
	if c, i := sh.sampleSpot(); c != 0 {
		sh.prefetchSamples(c, i)
		sh.sampleFrom(c, i, keep)
	}
}

// sampleSpot picks where samples start: a size class drawn by how many
// records it holds, and a random slot of it (class 0: no records).
func (sh *Shard) sampleSpot() (uint32, int) {
	s := &sh.slabs
	live := len(s.big) - len(s.bfree)
	for c := 1; c < bigClass; c++ {
		live += int(s.live[c])
	}
	if live <= 0 {
		return 0, 0
	}
	x := sh.randN(live)
	c, n := uint32(bigClass), len(s.big)
	for k := uint32(1); k < bigClass; k++ {
		if l := int(s.live[k]); x < l {
			c, n = k, s.slots(k)
			break
		} else {
			x -= l
		}
	}
	return c, sh.randN(n)
}

// prefetchSamples asks for the lines of the first samples from slot i of
// class c together, so that their misses overlap.
func (sh *Shard) prefetchSamples(c uint32, i int) {
	s := &sh.slabs
	if c == 0 || c == bigClass {
		return
	}
	n := s.slots(c)
	for k := range min(n, int(sh.samples.Load()), prefetchMax) {
		if rec := s.lookup(c<<classShift | uint32((i+k)%n)); rec != nil {
			prefetch(unsafe.Pointer(&rec[0]))
		}
	}
}

// sampleFrom adds to the pool up to maxmemory-samples evictable records
// other than keep from slot i of class c on.
func (sh *Shard) sampleFrom(c uint32, i int, keep ref) {
	s := &sh.slabs
	n := len(s.big)
	if c != bigClass {
		n = s.slots(c)
	}
	if n == 0 {
		return
	}
	i %= n // pages may have been given back since the slot was picked
	samples := int(sh.samples.Load())
	for seen, probes := 0, 0; seen < samples && probes < min(n, 8*samples); probes++ {
		r := c<<classShift | uint32(i)
		if rec := s.lookup(r); rec != nil && rec[0] != 0 && r != keep {
			if sc, ok := sh.score(rec); ok {
				seen++
				sh.pool.add(r, sc)
			}
		}
		if i++; i == n {
			i = 0
		}
	}
}

// evictPool is the best candidates recent samples found, as Redis's
// eviction pool: each eviction adds its samples and takes the best, so
// that a victim is the best of many samples, not of one draw. Its
// entries are checked when taken: the record may be gone, another key's
// since, or read since (its score lower).
type evictPool struct {
	e      [poolSize]poolEntry
	n      int
	policy Policy // the policy the scores are of
}

type poolEntry struct {
	r     ref
	score uint64
}

// add offers record r with its score: it takes a free entry, or the
// place of the lowest-scored one if r ranks higher.
func (p *evictPool) add(r ref, s uint64) {
	lo := 0
	for i := range p.n {
		if p.e[i].r == r {
			p.e[i].score = s
			return
		}
		if p.e[i].score < p.e[lo].score {
			lo = i
		}
	}
	switch {
	case p.n < poolSize:
		p.e[p.n] = poolEntry{r, s}
		p.n++
	case s > p.e[lo].score:
		p.e[lo] = poolEntry{r, s}
	}
}

// take removes and returns the best entry whose record is still live,
// evictable, not keep and scored no lower than when it was added, with
// its score; entries found otherwise are dropped. 0: none.
func (p *evictPool) take(sh *Shard, keep ref) (ref, uint64) {
	for p.n > 0 {
		hi := 0
		for i := 1; i < p.n; i++ {
			if p.e[i].score > p.e[hi].score {
				hi = i
			}
		}
		e := p.e[hi]
		p.n--
		p.e[hi] = p.e[p.n]
		if e.r == keep {
			continue
		}
		if rec := sh.slabs.lookup(e.r); rec != nil && rec[0] != 0 {
			if s, ok := sh.score(rec); ok && s >= e.score {
				return e.r, s
			}
		}
	}
	return 0, 0
}
