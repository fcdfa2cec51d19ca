package shard

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/rlserver/rlserver/engine"
)

// fake is a minimal state for keyspace tests.
type fake struct{ size int }

func (f *fake) Kind() engine.Kind                     { return engine.KindTokenBucket }
func (f *fake) AppendBinary(b []byte) ([]byte, error) { return append(b, byte(f.size)), nil }
func (f *fake) Size() int                             { return f.size }

const sec = int64(time.Second)

func TestLazyExpiry(t *testing.T) {
	s := New(Options{Shards: 1})
	sh := s.Shard(0)
	sh.Insert([]byte("a"), &fake{}, 10*sec)
	if sh.Get([]byte("a"), 10*sec-1) == nil {
		t.Fatal("a expired one ns early")
	}
	if sh.Get([]byte("a"), 10*sec) != nil {
		t.Fatal("a still live at its expiry")
	}
	if sh.Len() != 0 {
		t.Fatalf("Len after lazy expiry = %d, want 0", sh.Len())
	}
	if st := s.Stats(); st.Expired != 1 || st.Memory != 0 {
		t.Fatalf("stats after expiry = %+v", st)
	}
}

// TestSweepOrderAndBudget checks the active sweep: it removes only expired
// entries, earliest first, never more than its budget per call, and re-files
// entries whose expiry moved later instead of removing them.
func TestSweepOrderAndBudget(t *testing.T) {
	s := New(Options{Shards: 1})
	sh := s.Shard(0)
	for i := 0; i < 100; i++ {
		sh.Insert([]byte(fmt.Sprint("k", i)), &fake{}, int64(i+1)*sec)
	}
	moved := sh.Get([]byte("k0"), 0)
	sh.Update(moved, 1000*sec, true) // filed early, now expires late

	now := int64(50)*sec + 1
	work := 0
	for {
		n := sh.Sweep(now, 7)
		if n > 7 {
			t.Fatalf("Sweep did %d > budget 7", n)
		}
		if n == 0 {
			break
		}
		work += n
	}
	// k1..k49 expire at 2..50 s; k0 moved to 1000 s; buckets ending after now
	// are not visited, so k49 (expiring at 50 s) may stay for lazy expiry.
	if got := sh.Len(); got < 51 || got > 52 {
		t.Fatalf("after sweep at 50s: %d keys, want 51 or 52", got)
	}
	if sh.Get([]byte("k0"), now) == nil {
		t.Fatal("k0, whose expiry moved to 1000 s, was swept")
	}
	for i := 1; i < 48; i++ {
		if _, ok := sh.m[fmt.Sprint("k", i)]; ok {
			t.Fatalf("k%d (expired at %d s) not swept", i, i+1)
		}
	}
	if _, ok := sh.m["k60"]; !ok {
		t.Fatal("k60 swept before its expiry")
	}
	// Later, everything goes but k0.
	for sh.Sweep(999*sec, 1000) > 0 {
	}
	if sh.Len() != 1 {
		t.Fatalf("after sweep at 999 s: %d keys, want 1 (k0)", sh.Len())
	}
	for sh.Sweep(2000*sec, 1000) > 0 {
	}
	if sh.Len() != 0 {
		t.Fatalf("after sweep at 2000 s: %d keys", sh.Len())
	}
}

func TestExpiryMovedEarlier(t *testing.T) {
	s := New(Options{Shards: 1})
	sh := s.Shard(0)
	e := sh.Insert([]byte("a"), &fake{}, 100*sec)
	sh.Update(e, 5*sec, true)
	for sh.Sweep(6*sec, 100) > 0 {
	}
	if sh.Len() != 0 {
		t.Fatal("an entry whose expiry moved earlier was not swept at its new expiry")
	}
}

func TestDrainChanges(t *testing.T) {
	s := New(Options{Shards: 1, TrackChanges: true})
	sh := s.Shard(0)
	a := sh.Insert([]byte("a"), &fake{size: 1}, 10*sec)
	b := sh.Insert([]byte("b"), &fake{size: 2}, 10*sec)
	sh.Update(a, 11*sec, true)
	sh.Remove(b)
	ch, _, err := sh.DrainChanges(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(ch)
	want := fmt.Sprint([]Change{{Key: "b", Deleted: true}, {Key: "a", Kind: engine.KindTokenBucket, ExpireAt: 11 * sec, Payload: []byte{1}}})
	if got != want {
		t.Fatalf("changes = %s\nwant      %s", got, want)
	}
	if ch, _, _ := sh.DrainChanges(nil, nil); len(ch) != 0 {
		t.Fatalf("second drain = %v, want nothing", ch)
	}
	// An unchanged state with the same expiry is not a change.
	sh.Update(a, 11*sec, false)
	if ch, _, _ := sh.DrainChanges(nil, nil); len(ch) != 0 {
		t.Fatalf("drain after a no-op = %v", ch)
	}
}

func TestMemoryBoundEvictsClosestToFresh(t *testing.T) {
	s := New(Options{Shards: 1})
	sh := s.Shard(0)
	per := int64(entryOverhead + 2 + 10)
	s.SetMaxMemory(3 * per)
	for i, exp := range []int64{50, 10, 30} {
		sh.Insert([]byte(fmt.Sprint("k", i)), &fake{size: 10}, exp*sec)
	}
	sh.Insert([]byte("k3"), &fake{size: 10}, 40*sec)
	var keys []string
	sh.Each(0, func(e *Entry) bool { keys = append(keys, e.Key); return true })
	sort.Strings(keys)
	if fmt.Sprint(keys) != "[k0 k2 k3]" {
		t.Fatalf("after eviction: %v, want k1 (expiring first) gone", keys)
	}
	if st := s.Stats(); st.Evicted != 1 || st.Memory != 3*per {
		t.Fatalf("stats = %+v", st)
	}
}

// TestScanStableCursor checks SCAN's guarantee: every key present for the
// whole iteration is returned exactly once, while keys are added and removed
// between calls.
func TestScanStableCursor(t *testing.T) {
	s := New(Options{Shards: 8})
	put := func(k string) {
		sh := s.ShardFor([]byte(k))
		sh.Insert([]byte(k), &fake{}, 100*sec)
	}
	for i := 0; i < 1000; i++ {
		put(fmt.Sprint("stable", i))
	}
	seen := map[string]int{}
	cursor := uint64(0)
	for round := 0; ; round++ {
		next, keys := s.Scan(cursor, 17, 0, false, func(*Entry) bool { return true })
		for _, k := range keys {
			seen[k]++
		}
		// Churn: add and remove other keys between calls.
		put(fmt.Sprint("churn", round))
		if round%3 == 0 {
			k := []byte(fmt.Sprint("churn", round/2))
			sh := s.ShardFor(k)
			if e := sh.Get(k, 0); e != nil {
				sh.Remove(e)
			}
		}
		if cursor = next; cursor == 0 {
			break
		}
		if round > 10000 {
			t.Fatal("SCAN never finished")
		}
	}
	for i := 0; i < 1000; i++ {
		if n := seen[fmt.Sprint("stable", i)]; n != 1 {
			t.Fatalf("stable%d returned %d times", i, n)
		}
	}
}

func TestDefaultShardsIsPowerOfTwo(t *testing.T) {
	n := DefaultShards()
	if n < 1 || n&(n-1) != 0 {
		t.Fatalf("DefaultShards() = %d", n)
	}
	if got := New(Options{Shards: 5}).NumShards(); got != 8 {
		t.Fatalf("5 shards rounded to %d, want 8", got)
	}
}

func TestClock(t *testing.T) {
	c := NewClock()
	if d := c.Now() - time.Now().UnixNano(); d > int64(time.Second) || d < -int64(time.Second) {
		t.Fatalf("real clock off by %v", time.Duration(d))
	}
	c.Set(1000)
	c.Advance(500)
	if c.Now() != 1500 {
		t.Fatalf("frozen clock = %d, want 1500", c.Now())
	}
	c.Real()
	if d := c.Now() - time.Now().UnixNano(); d > int64(time.Second) || d < -int64(time.Second) {
		t.Fatalf("clock after Real off by %v", time.Duration(d))
	}
}
