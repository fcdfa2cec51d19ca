package shard

import (
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/rlserver/rlserver/engine"
)

// testSeed returns the hash seed of a test's store, which decides its keys'
// places in the index: the one SHARD_SEED names, to replay a failure, or
// a random one. It logs the seed either way.
func testSeed(t testing.TB) uint64 {
	t.Helper()
	seed := rand.Uint64() | 1
	if v := os.Getenv("SHARD_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("SHARD_SEED=%q: %v", v, err)
		}
		seed = n
	}
	t.Logf("hash seed %d (replay with SHARD_SEED=%d)", seed, seed)
	return seed
}

// The shard's own tests call the lock-needing methods on the shard itself,
// holding its lock (or not needing it, single-threaded).

func (sh *Shard) Find(key []byte, h uint64) Found                       { return sh.lookup(key, h) }
func (sh *Shard) Len() int                                              { return sh.count() }
func (sh *Shard) Each(now int64, fn func(Item) bool)                    { sh.each(now, fn) }
func (sh *Shard) State(it Item) engine.State                            { return sh.state(it) }
func (sh *Shard) Sweep(now int64, budget int) int                       { return sh.sweepExpired(now, budget) }
func (sh *Shard) EvictOver(max int) int                                 { return sh.evictOver(max) }
func (sh *Shard) TrimSlabs()                                            { sh.trimSlabs() }
func (sh *Shard) Apply(e Entry) error                                   { return sh.apply(e) }
func (sh *Shard) Insert(key []byte, st engine.State, exp int64)         { sh.insert(key, st, exp) }
func (sh *Shard) Get(key []byte, now int64) (engine.State, int64, bool) { return sh.get(key, now) }
func (sh *Shard) Delete(key []byte, now int64) bool                     { return sh.del(key, now) }
func (sh *Shard) DrainChanges(dst []Change, buf []byte, max int) ([]Change, []byte, int) {
	return sh.drainChanges(dst, buf, max)
}
func (sh *Shard) MarkAll(cur *MarkCursor, now int64, budget int) bool {
	return sh.markAll(cur, now, budget)
}
func (sh *Shard) Redirty(keys []string) { sh.redirty(keys) }
