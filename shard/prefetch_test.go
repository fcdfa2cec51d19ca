package shard

import "testing"

// TestPrefetch: prefetchRecord finds the record of a present key unless its
// probe run is long; both prefetches are safe on an empty shard and while
// the index grows (a key still in the old table is not fetched).
func TestPrefetch(t *testing.T) {
	s := New(Options{Seed: testSeed(t), Shards: 1})
	sh := s.Shard(0)
	sh.prefetchIndex(s.Hash([]byte("x")))
	if sh.prefetchRecord(s.Hash([]byte("x"))) {
		t.Fatal("an empty shard had a record to fetch")
	}
	keys := fillUntilGrowth(t, sh)
	if sh.idx.old == nil {
		t.Fatal("no growth under way")
	}
	inNew := 0
	for _, k := range keys {
		h := s.Hash([]byte(k))
		sh.prefetchIndex(h)
		if sh.prefetchRecord(h) {
			inNew++
		}
	}
	sh.idx.migrate(&sh.slabs, sh.idx.oldSize) // finish the move
	read := 0
	for _, k := range keys {
		if sh.prefetchRecord(s.Hash([]byte(k))) {
			read++
		}
	}
	// A key more than probeGuess slots from its home is not fetched: a hint
	// may give up.
	if read < len(keys)*99/100 {
		t.Fatalf("%d of %d records read", read, len(keys))
	}
	if inNew >= len(keys) {
		t.Fatalf("all %d keys read during the growth: the test did not cover the old table", inNew)
	}
}
