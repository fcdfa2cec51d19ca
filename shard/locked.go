package shard

import "github.com/rlserver/rlserver/engine"

// Locked is a shard whose lock its holder took (Shard.Lock, until
// Unlock). The shard's methods that need the lock held are Locked's, so
// none can be called without taking it: persistence's drain and rewrite,
// the sweeper, replication's apply, tests. A Locked must not be used
// after Unlock.
type Locked struct{ sh *Shard }

// Unlock unlocks the shard (Shard.Unlock).
func (l Locked) Unlock() { l.sh.Unlock() }

// Find looks key (whose Store.Hash is h) up; see Found.
func (l Locked) Find(key []byte, h uint64) Found { return l.sh.lookup(key, h) }

// Len returns the number of keys, counting ones that expired but were not
// yet removed.
func (l Locked) Len() int { return l.sh.count() }

// Each calls fn for every key live at now until fn returns false; fn must
// not change the shard.
func (l Locked) Each(now int64, fn func(Item) bool) { l.sh.each(now, fn) }

// State returns a copy of the state of the key it (from Each) names.
func (l Locked) State(it Item) engine.State { return l.sh.state(it) }

// Sweep does up to budget units of active expiry and returns how many
// keys it removed.
func (l Locked) Sweep(now int64, budget int) int { return l.sh.sweepExpired(now, budget) }

// EvictOver evicts up to max keys while the shard is over its memory
// bound, and returns how many it evicted.
func (l Locked) EvictOver(max int) int { return l.sh.evictOver(max) }

// TrimSlabs gives back the spare slab pages left unused.
func (l Locked) TrimSlabs() { l.sh.trimSlabs() }

// Changes returns the shard's writes since its last DrainChanges.
func (l Locked) Changes() int64 { return l.sh.changes.Load() }

// DrainChanges appends the changes since the previous drain, up to max,
// and returns them, the buffer their keys and states are in, and how many
// are left.
func (l Locked) DrainChanges(dst []Change, buf []byte, max int) ([]Change, []byte, int) {
	return l.sh.drainChanges(dst, buf, max)
}

// MarkAll marks records live at now as changed, up to budget at a time
// from cur, for a rewrite; done when every record was visited.
func (l Locked) MarkAll(cur *MarkCursor, now int64, budget int) (done bool) {
	return l.sh.markAll(cur, now, budget)
}

// Redirty records keys as changed again (a flush that failed).
func (l Locked) Redirty(keys []string) { l.sh.redirty(keys) }

// Apply writes a change a replica received from its primary (see
// Shard.apply).
func (l Locked) Apply(e Entry) error { return l.sh.apply(e) }
