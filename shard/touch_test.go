package shard

import "testing"

// TestTouch: TouchRecord reads the record of a present key (its header,
// never 0 for these boxed fakes) unless its probe run is long; both touches
// are safe on an empty shard and while the index grows (a key still in the
// old table reads nothing).
func TestTouch(t *testing.T) {
	s := New(Options{Shards: 1})
	sh := s.Shard(0)
	if sh.TouchIndex(s.Hash([]byte("x"))) != 0 || sh.TouchRecord(s.Hash([]byte("x"))) != 0 {
		t.Fatal("an empty shard read something")
	}
	keys := fillUntilGrowth(t, sh)
	if sh.idx.old == nil {
		t.Fatal("no growth under way")
	}
	inNew := 0
	for _, k := range keys {
		h := s.Hash([]byte(k))
		sh.TouchIndex(h)
		if sh.TouchRecord(h) != 0 {
			inNew++
		}
	}
	sh.idx.migrate(&sh.slabs, sh.idx.oldSize) // finish the move
	read := 0
	for _, k := range keys {
		if sh.TouchRecord(s.Hash([]byte(k))) != 0 {
			read++
		}
	}
	// A key more than probeTouch slots from its home is not read: a hint
	// may give up.
	if read < len(keys)*99/100 {
		t.Fatalf("%d of %d records read", read, len(keys))
	}
	if inNew >= len(keys) {
		t.Fatalf("all %d keys read during the growth: the test did not cover the old table", inNew)
	}
}
