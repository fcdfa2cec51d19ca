package shard

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/rlserver/rlserver/engine"
)

// fake is a minimal state for keyspace tests. Its encoding, its size then
// maxInline zeros, is too long to keep inline, so the shard always keeps a
// fake boxed (an inline record would be decoded into its kind's real state).
type fake struct{ size int }

func (f *fake) Kind() engine.Kind { return engine.KindTokenBucket }
func (f *fake) Size() int         { return f.size }
func (f *fake) Reset()            { *f = fake{} }

func (f *fake) AppendCompact(b []byte, _ int64) []byte {
	return append(append(b, byte(f.size)), make([]byte, maxInline)...)
}

func (f *fake) DecodeCompact(b []byte, _ int64) error {
	if len(b) != 1+maxInline {
		return engine.ErrCorrupt
	}
	f.size = int(b[0])
	return nil
}

const sec = int64(time.Second)

// takeOp is an Op for keyspace tests: Run takes with take, and remembers
// the state it ran on.
type takeOp[P engine.State] struct {
	take func(P) engine.Decision
	kind engine.Kind
	last engine.State
}

func newTakeOp[P engine.State](take func(P) engine.Decision) *takeOp[P] {
	var zero P
	return &takeOp[P]{take: take, kind: reflectNew(zero).Kind()}
}

func (o *takeOp[P]) Kind() engine.Kind { return o.kind }

func (o *takeOp[P]) Run(st engine.State, now int64, commit bool) (engine.Decision, bool, bool) {
	o.last = st
	return o.take(st.(P)), true, true
}

// reflectNew returns a new state of P's type (P is a pointer type).
func reflectNew[P engine.State](P) P {
	return reflect.New(reflect.TypeFor[P]().Elem()).Interface().(P)
}

// call runs one limiter call on key through the keyspace (Update, under
// the key's shard lock). It returns what Find saw before, the state the op
// ran on, and whether the shard kept that state itself as the key's box
// (it was the shard's scratch, not a box, before).
func call[P engine.State](s *Store, key []byte, now int64, op *takeOp[P]) (f Found, live engine.State, kept bool) {
	h := s.Hash(key)
	sh := s.ShardOf(h)
	sh.Lock()
	f = sh.Find(key, h)
	sh.update(key, h, now, op, false)
	live = op.last
	g := sh.Find(key, h)
	kept = g.OK && g.boxed && !f.boxed && sh.boxes[boxIndex(g.pay)] == live
	sh.Unlock()
	return f, live, kept
}

func TestLazyExpiry(t *testing.T) {
	s := New(Options{Seed: testSeed(t), Shards: 1})
	sh := s.Shard(0)
	sh.Insert([]byte("a"), &fake{}, 10*sec)
	if _, _, ok := sh.Get([]byte("a"), 10*sec-1); !ok {
		t.Fatal("a expired one ns early")
	}
	if _, _, ok := sh.Get([]byte("a"), 10*sec); ok {
		t.Fatal("a still live at its expiry")
	}
	if sh.Len() != 0 {
		t.Fatalf("Len after lazy expiry = %d, want 0", sh.Len())
	}
	if st := s.Stats(); st.Expired != 1 || st.Memory != 0 {
		t.Fatalf("stats after expiry = %+v", st)
	}
}

// TestSweep checks the active sweep: it removes only expired keys, visits
// no more slots than its budget per call, and a pass over the table finds
// every expired key, including one whose expiry moved earlier.
func TestSweep(t *testing.T) {
	s := New(Options{Seed: testSeed(t), Shards: 1})
	sh := s.Shard(0)
	for i := 0; i < 100; i++ {
		sh.Insert([]byte(fmt.Sprint("k", i)), &fake{}, int64(i+1)*sec)
	}
	sh.Insert([]byte("k0"), &fake{}, 1000*sec) // expiry moved later
	sh.Insert([]byte("k99"), &fake{}, 3*sec)   // and earlier
	now := int64(50)*sec + 1
	if n := sh.Sweep(now, 7); n > 7 {
		t.Fatalf("Sweep removed %d with a budget of 7 slots", n)
	}
	for sh.Sweep(now, 7) > 0 {
	}
	sh.Sweep(now, 1000) // a whole pass
	var left []string
	sh.Each(minInt64, func(it Item) bool { left = append(left, string(it.Key)); return true })
	sort.Strings(left)
	want := []string{"k0"}
	for i := 50; i < 99; i++ {
		want = append(want, fmt.Sprint("k", i))
	}
	sort.Strings(want)
	if fmt.Sprint(left) != fmt.Sprint(want) {
		t.Fatalf("after sweeping at 50 s: %v\nwant %v", left, want)
	}
	if st := s.Stats(); st.Expired != 50 {
		t.Fatalf("expired = %d, want 50", st.Expired)
	}
	for sh.Sweep(2000*sec, 1000) > 0 {
	}
	if sh.Len() != 0 || s.Stats().Memory != 0 {
		t.Fatalf("after sweep at 2000 s: %d keys, %d bytes", sh.Len(), s.Stats().Memory)
	}
}

func TestDrainChanges(t *testing.T) {
	s := New(Options{Seed: testSeed(t), Shards: 1, TrackChanges: true})
	sh := s.Shard(0)
	sh.Insert([]byte("a"), &fake{size: 1}, 10*sec)
	sh.Insert([]byte("b"), &fake{size: 2}, 10*sec)
	sh.Insert([]byte("a"), &fake{size: 1}, 11*sec)
	sh.Delete([]byte("b"), 0)
	ch, _, left := sh.DrainChanges(nil, nil, 0)
	if left != 0 {
		t.Fatalf("DrainChanges left %d entries", left)
	}
	got := fmt.Sprint(ch)
	want := fmt.Sprint([]Change{{Key: []byte("b"), Deleted: true}, {Key: []byte("a"), Kind: engine.KindTokenBucket, ExpireAt: 11 * sec, Payload: (&fake{size: 1}).AppendCompact(nil, 11*sec)}})
	if got != want {
		t.Fatalf("changes = %s\nwant      %s", got, want)
	}
	if ch, _, _ := sh.DrainChanges(nil, nil, 0); len(ch) != 0 {
		t.Fatalf("second drain = %v, want nothing", ch)
	}
	// An unchanged state with the same expiry is not a change.
	h := s.Hash([]byte("a"))
	f := sh.Find([]byte("a"), h)
	sh.write(f, []byte("a"), h, sh.load(&sh.sc, f), 11*sec, false)
	if ch, _, _ := sh.DrainChanges(nil, nil, 0); len(ch) != 0 {
		t.Fatalf("drain after a no-op = %v", ch)
	}
}

// A dirty list drained in pieces while writes go on, never empty at the
// end of a drain, keeps to about the size of what is outstanding.
func TestDrainInPiecesUnderWritesKeepsListBounded(t *testing.T) {
	s := New(Options{Seed: testSeed(t), Shards: 1, TrackChanges: true})
	sh := s.Shard(0)
	const keys, piece = 1000, 100
	for i := 0; i < keys; i++ {
		sh.Insert([]byte(fmt.Sprintf("k%04d", i)), &fake{size: 1}, 10*sec)
	}
	var ch []Change
	for round := 0; round < 200; round++ {
		var left int
		ch, _, left = sh.DrainChanges(ch[:0], nil, piece)
		if len(ch) != piece || left != keys-piece {
			t.Fatalf("round %d: drained %d, left %d; want %d, %d", round, len(ch), left, piece, keys-piece)
		}
		// The keys just written are changed again before the next piece.
		for _, c := range ch {
			sh.Insert(c.Key, &fake{size: 1}, 10*sec+int64(round+1))
		}
	}
	if c := len(sh.dirty.chunks); c > keys/chunkRefs+2 {
		t.Fatalf("dirty list holds %d chunks after 200 pieces of %d with %d outstanding", c, piece, keys)
	}
	ch, _, left := sh.DrainChanges(ch[:0], nil, 0)
	if len(ch) != keys || left != 0 {
		t.Fatalf("final drain: %d changes, %d left; want %d, 0", len(ch), left, keys)
	}
}

func TestMemoryBoundEvictsClosestToFresh(t *testing.T) {
	s := New(Options{Seed: testSeed(t), Shards: 1})
	sh := s.Shard(0)
	sh.Insert([]byte("k0"), &fake{size: 10}, 50*sec)
	per := s.Stats().Memory
	s.SetMaxMemory(3*per + per/2)
	for i, exp := range []int64{10, 30, 40} {
		sh.Insert([]byte(fmt.Sprint("k", i+1)), &fake{size: 10}, exp*sec)
	}
	var keys []string
	sh.Each(0, func(it Item) bool { keys = append(keys, string(it.Key)); return true })
	sort.Strings(keys)
	if fmt.Sprint(keys) != "[k0 k2 k3]" {
		t.Fatalf("after eviction: %v, want k1 (expiring first) gone", keys)
	}
	if st := s.Stats(); st.Evicted != 1 || st.Memory != 3*per {
		t.Fatalf("stats = %+v, want 1 evicted and %d bytes", st, 3*per)
	}
}

// In a table too large to look at every key, eviction samples: of keys
// of three record sizes with expiries spread over 1..1000 s, the half
// evicted is mostly the half closest to fresh, in every size class.
func TestMemoryBoundSamplesClosestToFresh(t *testing.T) {
	s := New(Options{Shards: 1, Seed: 11})
	sh := s.Shard(0)
	const n = 30000
	key := func(i int) string { return fmt.Sprintf("k%d:%s", i, strings.Repeat("p", i%3*60)) }
	exp := func(i int) int64 { return int64(1 + i*7919%1000) }
	for i := range n {
		sh.Insert([]byte(key(i)), &fake{size: 10}, exp(i)*sec)
	}
	bound := s.Stats().Memory / 2
	s.SetMaxMemory(bound)
	sh.EvictOver(n)
	var early, late [3]int // per size: keys left expiring in the first and last quarter
	for i := range n {
		if f := sh.Find([]byte(key(i)), s.Hash([]byte(key(i)))); f.OK {
			switch e := exp(i); {
			case e <= 250:
				early[i%3]++
			case e > 750:
				late[i%3]++
			}
		}
	}
	for c := range 3 {
		// Each size has n/12 keys in each quarter.
		if early[c] > n/12/10 || late[c] < n/12*9/10 {
			t.Errorf("size %d: %d of %d keys of the first quarter kept, %d of %d of the last", c, early[c], n/12, late[c], n/12)
		}
	}
	if st := s.Stats(); st.Memory > bound || st.Evicted < n/3 {
		t.Fatalf("stats %+v, bound %d", st, bound)
	}
}

// A size class whose slots are mostly free (its keys deleted) still gives
// up keys: where the slab samples find none, the index is sampled.
func TestMemoryBoundSparseClass(t *testing.T) {
	s := New(Options{Shards: 1, Seed: 5})
	sh := s.Shard(0)
	const n = 40000
	for i := range n {
		sh.Insert([]byte(fmt.Sprint("k", i)), &fake{size: 10}, int64(1+i%1000)*sec)
	}
	for i := range n {
		if i%500 != 0 {
			sh.Delete([]byte(fmt.Sprint("k", i)), 0)
		}
	}
	bound := s.Stats().Memory / 2
	s.SetMaxMemory(bound)
	sh.EvictOver(n)
	if st := s.Stats(); st.Memory > bound || st.Evicted < n/500/2 || st.Evicted > n/500/2+5 {
		t.Fatalf("stats %+v, bound %d: want about %d evicted", st, bound, n/500/2)
	}
}

// Eviction chooses each victim one write early (evictAhead). By the time
// it is taken, that record may be the key being written, or its slot may
// hold another key: neither may go in its stead.
func TestEvictAheadStale(t *testing.T) {
	s := New(Options{Shards: 1, Seed: 9})
	sh := s.Shard(0)
	for i := range 5000 {
		sh.Insert([]byte(fmt.Sprint("k", i)), &fake{size: 10}, int64(1+i%1000)*sec)
	}
	bound := s.Stats().Memory
	s.SetMaxMemory(bound)
	late := int64(1e6) * sec // never the closest to fresh among samples
	inserted, deleted := 5000, 0
	insert := func(k []byte) {
		sh.Insert(k, &fake{size: 10}, late)
		inserted++
	}
	// aheadKey inserts new keys until a victim is chosen ahead (samples
	// may all fall on free slots) and returns its key.
	aheadKey := func() []byte {
		t.Helper()
		for i := 0; sh.ahead.victim == 0; i++ {
			if i == 100 {
				t.Fatal("no victim chosen ahead in 100 evicting inserts")
			}
			insert(fmt.Appendf(nil, "n%d", inserted))
		}
		k, _ := recSplit(sh.slabs.get(sh.ahead.victim))
		return bytes.Clone(k)
	}

	// The victim is the key written, by a write that evicts: it stays.
	v := aheadKey()
	bound = s.Stats().Memory - 1
	s.SetMaxMemory(bound)
	before := s.Stats().Evicted
	sh.Insert(v, &fake{size: 10}, late)
	if _, _, ok := sh.Get(v, 0); !ok || s.Stats().Evicted != before+1 {
		t.Fatalf("%s, chosen ahead, evicted by its own write (%t), %d others", v, !ok, s.Stats().Evicted-before)
	}

	// The victim's slot now holds another key: that key stays.
	v = aheadKey()
	slot := sh.ahead.victim
	sh.Delete(v, 0)
	deleted++
	// Keys as long as the victim's, so of its record's size class, without
	// evicting, until one takes its slot (a slab fills its lowest free
	// slot first).
	s.SetMaxMemory(0)
	var reuse []byte
	for i := 0; ; i++ {
		if i == 4*pageSlots {
			t.Fatalf("no key took the freed victim's slot %#x in %d inserts", slot, i)
		}
		reuse = fmt.Appendf(nil, "r%0*d", len(v)-1, i)
		if insert(reuse); sh.Find(reuse, s.Hash(reuse)).ref == slot {
			break
		}
	}
	if sh.ahead.victim != slot {
		t.Fatalf("victim chosen ahead %#x, want still %#x", sh.ahead.victim, slot)
	}
	bound = s.Stats().Memory
	s.SetMaxMemory(bound)
	before = s.Stats().Evicted
	insert([]byte("last"))
	if _, _, ok := sh.Get(reuse, 0); !ok || s.Stats().Evicted != before+1 {
		t.Fatalf("%s, in the slot of the victim chosen ahead, evicted (%t), %d others", reuse, !ok, s.Stats().Evicted-before)
	}

	var keys int
	sh.Each(0, func(Item) bool { keys++; return true })
	if st := s.Stats(); keys != inserted-deleted-int(st.Evicted) || st.Memory > bound {
		t.Fatalf("stats %+v, bound %d, %d keys; want %d", st, bound, keys, inserted-deleted-int(st.Evicted))
	}
}

// TestScanStableCursor checks SCAN's guarantee: every key present for the
// whole iteration is returned exactly once, while keys are added and removed
// between calls.
func TestScanStableCursor(t *testing.T) {
	s := New(Options{Seed: testSeed(t), Shards: 8})
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
		next, keys := s.View().Scan(cursor, 17, 0, func(Item) bool { return true })
		for _, k := range keys {
			seen[k]++
		}
		// Churn: add and remove other keys between calls.
		put(fmt.Sprint("churn", round))
		if round%3 == 0 {
			k := []byte(fmt.Sprint("churn", round/2))
			s.ShardFor(k).Delete(k, 0)
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

// TestBoxedStateInPlace: a LOG window (not hot: HotKeys other keys are
// written between its calls) starts inline, is boxed once its
// encoding outgrows maxInline (the caller's scratch is kept then, and only
// then), is then handed out and stored in place without copies, and its
// growth is accounted for.
func TestBoxedStateInPlace(t *testing.T) {
	s := New(Options{Seed: testSeed(t), Shards: 1})
	sh := s.Shard(0)
	key := []byte("log")
	p := engine.WindowParams{Limit: 100000, Window: time.Hour, Mode: engine.WindowLog}
	now := int64(1.8e18)
	op := newTakeOp(func(w *engine.Window) engine.Decision { return w.Take(now, p, 1) })
	var others [][]byte
	for i := range HotKeys {
		others = append(others, fmt.Appendf(nil, "other%d", i))
	}
	var box engine.State
	keptAt := -1
	for i := 0; i < 500; i++ {
		now += 1e9 + int64(i)*7919
		for _, o := range others {
			sh.Insert(o, &fake{}, now+1e12) // so that "log" is never hot
		}
		_, st, kept := call(s, key, now, op)
		if box != nil && st != box {
			t.Fatalf("call %d: Load returned %p, not the box %p", i, st, box)
		}
		if kept {
			if keptAt >= 0 {
				t.Fatalf("call %d: Put kept a state again (first at %d)", i, keptAt)
			}
			keptAt, box = i, st
		}
		if got := s.Stats().Memory; box != nil && got < int64(box.Size()) {
			t.Fatalf("call %d: memory %d < the box's %d bytes", i, got, box.Size())
		}
	}
	if keptAt < 10 || keptAt > 100 {
		t.Fatalf("boxed after %d entries, want once the encoding outgrew %d bytes", keptAt, maxInline)
	}
	st, _, _ := sh.Get(key, now)
	if d := st.(*engine.Window).Check(now, p, 0); d.Remaining != p.Limit-500 {
		t.Fatalf("remaining %d after 500 takes, want %d", d.Remaining, p.Limit-500)
	}
	sh.Delete(key, now)
	for _, o := range others {
		sh.Delete(o, now)
	}
	if m := s.Stats().Memory; m != 0 {
		t.Fatalf("memory after delete = %d", m)
	}
}

// TestHotKey: a key written twice in a row is kept as a box (Load hands
// out the same object, Put does not encode), stays hot while other keys
// get hot beside it, and goes back inline, with its state, when HotKeys
// others got hot after it; nothing is lost either way.
func TestHotKey(t *testing.T) {
	s := New(Options{Seed: testSeed(t), Shards: 1, TrackChanges: true})
	sh := s.Shard(0)
	p := engine.GCRAParams{MaxBurst: 99, Count: 10, Period: time.Second}
	now := int64(1.8e18)
	op := newTakeOp(func(g *engine.GCRA) engine.Decision { return g.Take(now, p, 1) })
	take := func(key string) (Found, bool) {
		f, _, kept := call(s, []byte(key), now, op)
		return f, kept
	}
	remaining := func(key string) int64 {
		st, _, ok := sh.Get([]byte(key), now)
		if !ok {
			t.Fatalf("%s is gone", key)
		}
		return st.(*engine.GCRA).Check(now, p, 0).Remaining
	}
	if f, kept := take("a"); f.OK || kept {
		t.Fatal("a new key was boxed")
	}
	if f, kept := take("a"); f.boxed || !kept {
		t.Fatalf("the second write in a row did not box a: %+v kept %v", f, kept)
	}
	for i := 0; i < 10; i++ {
		if f, kept := take("a"); !f.boxed || kept {
			t.Fatalf("hot a: %+v kept %v", f, kept)
		}
	}
	boxed := func(key string) bool { return sh.Find([]byte(key), s.Hash([]byte(key))).boxed }
	others := []string{"b", "c", "d", "e"}[:HotKeys]
	for i, o := range others {
		take(o)
		take(o) // o gets hot
		if cooled := i == HotKeys-1; boxed("a") == cooled || !boxed(o) {
			t.Fatalf("after %s got hot: a boxed %v, %s boxed %v", o, boxed("a"), o, boxed(o))
		}
	}
	if got := remaining("a"); got != 100-12 {
		t.Fatalf("a after cooling: remaining %d, want 88", got)
	}
	for _, o := range others {
		if got := remaining(o); got != 98 {
			t.Fatalf("%s: remaining %d, want 98", o, got)
		}
	}
	ch, _, left := sh.DrainChanges(nil, nil, 0)
	if left != 0 || len(ch) != 1+len(others) {
		t.Fatalf("drained %v, %d left, want a and %v", ch, left, others)
	}
	sh.Delete([]byte("a"), now)
	for _, o := range others {
		sh.Delete([]byte(o), now)
	}
	if m := s.Stats().Memory; m != 0 {
		t.Fatalf("memory after deleting them = %d", m)
	}
}

// TestHotKeysTakingTurns: keys of one shard written in turn (a b a b, as
// CL.ALL's rules sharing a shard are) get hot together and stay boxed;
// more keys in turn than the shard looks back on never get hot.
func TestHotKeysTakingTurns(t *testing.T) {
	for _, n := range []int{2, HotKeys, HotKeys + 1} {
		s := New(Options{Seed: testSeed(t), Shards: 1})
		sh := s.Shard(0)
		p := engine.GCRAParams{MaxBurst: 999, Count: 10, Period: time.Second}
		now := int64(1.8e18)
		op := newTakeOp(func(g *engine.GCRA) engine.Decision { return g.Take(now, p, 1) })
		var keys [][]byte
		for i := range n {
			keys = append(keys, fmt.Appendf(nil, "k%d", i))
		}
		for round := range 10 {
			for _, k := range keys {
				f, _, kept := call(s, k, now, op)
				wantBoxed := n <= HotKeys && round >= 2 // written again in round 1, boxed since
				if f.boxed != wantBoxed || kept != (n <= HotKeys && round == 1) {
					t.Fatalf("%d keys, round %d, %s: found boxed %v, kept %v", n, round, k, f.boxed, kept)
				}
			}
		}
		for _, k := range keys {
			st, _, _ := sh.Get(k, now)
			if got := st.(*engine.GCRA).Check(now, p, 0).Remaining; got != 1000-10 {
				t.Fatalf("%d keys: %s remaining %d after 10 takes, want 990", n, k, got)
			}
		}
	}
}

// TestHotKeysTakingTurnsAllocateNothing: more keys of one shard than it
// keeps hot, each hot in turn (A A B B C C ...), reuse the object a cooled
// key gave back, so neither the shard nor the caller allocates.
func TestHotKeysTakingTurnsAllocateNothing(t *testing.T) {
	s := New(Options{Seed: testSeed(t), Shards: 1})
	sh := s.Shard(0)
	p := engine.TokenBucketParams{Capacity: 1e9, Rate: 1, Period: time.Hour}
	now := int64(1.8e18)
	var keys [][]byte
	for i := range HotKeys + 2 {
		keys = append(keys, fmt.Appendf(nil, "k%d", i))
	}
	op := newTakeOp(func(b *engine.TokenBucket) engine.Decision { return b.Take(now, p, 1) })
	take := func(i int) { call(s, keys[i], now, op) }
	round := func() {
		for i := range keys {
			take(i)
			take(i)
		}
	}
	round()
	round()
	if allocs := testing.AllocsPerRun(100, round); allocs != 0 {
		t.Fatalf("a round of keys hot in turn allocated %v times", allocs)
	}
	for i, k := range keys {
		st, _, _ := sh.Get(k, now)
		if got := st.(*engine.TokenBucket).Check(now, p, 0).Remaining; got != 1e9-2*103 { // 2 rounds, then AllocsPerRun: 1 + 100
			t.Fatalf("%s: remaining %d after 206 takes, want %d", keys[i], got, int64(1e9-2*103))
		}
	}
}

// TestHashSeed: a store's key hash follows Options.Seed, so two stores of
// one seed place every key alike and another seed places them otherwise;
// Seed 0 draws one.
func TestHashSeed(t *testing.T) {
	a, b := New(Options{Shards: 16, Seed: 42}), New(Options{Shards: 16, Seed: 42})
	c := New(Options{Shards: 16, Seed: 43})
	if a.Seed() != 42 || New(Options{}).Seed() == 0 {
		t.Fatalf("seeds %d and %d", a.Seed(), New(Options{}).Seed())
	}
	differ, perShard := 0, make([]int, 16)
	for i := range 16000 {
		k := fmt.Appendf(nil, "user:%d", i)
		if a.Hash(k) != b.Hash(k) {
			t.Fatalf("seed 42 hashes %s as %x and %x", k, a.Hash(k), b.Hash(k))
		}
		if a.Hash(k) != c.Hash(k) {
			differ++
		}
		if a.hash.string(string(k)) != a.Hash(k) {
			t.Fatalf("%s hashed as a string differs", k)
		}
		perShard[a.ShardIndex(k)]++
	}
	if differ < 15990 {
		t.Fatalf("seeds 42 and 43 hash %d of 16000 keys alike", 16000-differ)
	}
	for i, n := range perShard {
		if n < 800 || n > 1200 { // 1000 expected; 6 standard deviations off
			t.Fatalf("shard %d holds %d of 16000 keys", i, n)
		}
	}
}

// TestPendingAndHeadsTakeNoLock: Pending and Heads answer while every
// shard lock is held (EXEC holds them all, and INFO, WAIT and ROLE run
// inside it), with what the last unlock of each shard published.
func TestPendingAndHeadsTakeNoLock(t *testing.T) {
	s := New(Options{Shards: 4, TrackChanges: true, Seed: 1})
	feed := s.Subscribe() // the streams record changes only while subscribed
	defer feed.Close()
	now := int64(1.8e18)
	p := engine.WindowParams{Limit: 10, Window: time.Hour, Mode: engine.WindowFixed}
	op := newTakeOp(func(w *engine.Window) engine.Decision { return w.Take(now, p, 1) })
	for _, k := range []string{"a", "b", "c"} {
		call(s, []byte(k), now, op)
	}
	heads := s.Heads(nil)
	v := s.LockAll()
	locked := true
	defer func() { // before feed.Close, which takes the locks, even on failure
		if locked {
			v.UnlockAll()
		}
	}()
	done := make(chan struct{})
	var pending int
	var during []uint64
	go func() {
		pending, during = s.Pending(), s.Heads(nil)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Pending and Heads wait for the shard locks")
	}
	v.UnlockAll()
	locked = false
	if pending != 3 || !slices.Equal(during, heads) {
		t.Fatalf("under every lock: Pending %d, Heads %v; want 3 and %v", pending, during, heads)
	}
	var sum uint64
	for _, h := range heads {
		sum += h
	}
	if sum == 0 {
		t.Fatal("the three changes moved no stream head")
	}
}

// TestPending: Pending counts each changed key once however often it
// changed (its record moving to larger slots included), and each removed
// key, until a drain.
func TestPending(t *testing.T) {
	s := New(Options{Shards: 1, TrackChanges: true, Seed: 1})
	sh := s.Shard(0)
	now := int64(1.8e18)
	p := engine.WindowParams{Limit: 1000, Window: time.Hour, Mode: engine.WindowLog}
	op := newTakeOp(func(w *engine.Window) engine.Decision { return w.Take(now, p, 1) })
	for i := range 60 { // a LOG grows an entry a call: its record moves up the size classes
		now += int64(i+1) * 7919
		call(s, []byte("log"), now, op)
		call(s, []byte("other"), now, op)
	}
	if got := s.Pending(); got != 2 {
		t.Fatalf("Pending = %d after 60 changes of 2 keys, want 2", got)
	}
	sh.Lock()
	sh.Delete([]byte("other"), now)
	sh.Unlock()
	if got := s.Pending(); got != 2 {
		t.Fatalf("Pending = %d with one key changed and one removed, want 2", got)
	}
	sh.Lock()
	ch, _, _ := sh.DrainChanges(nil, nil, 0)
	sh.Unlock()
	if len(ch) != 2 || s.Pending() != 0 {
		t.Fatalf("drained %d changes, then Pending = %d; want 2 and 0", len(ch), s.Pending())
	}
	call(s, []byte("log"), now, op)
	sh.Lock()
	sh.clear()
	sh.Unlock()
	if got := s.Pending(); got != 1 {
		t.Fatalf("Pending = %d after a flush, want 1 (the removed key)", got)
	}
}

// TestMemoryBoundHoldsWhenKeysGrow: a key that grows (a LOG window, a
// lease set) is held to the bound like a new one: others are evicted, the
// growing key is kept, and the shard ends within its budget.
func TestMemoryBoundHoldsWhenKeysGrow(t *testing.T) {
	s := New(Options{Seed: testSeed(t), Shards: 1})
	sh := s.Shard(0)
	for i := range 20 {
		sh.Insert([]byte(fmt.Sprint("k", i)), &fake{size: 10}, int64(100+i)*sec)
	}
	full := s.Stats().Memory
	s.SetMaxMemory(full)
	sh.Insert([]byte("k19"), &fake{size: 200}, 200*sec) // grows by 190 bytes
	st := s.Stats()
	if st.Memory > full || st.Evicted == 0 {
		t.Fatalf("after growth: %d bytes (bound %d), %d evicted", st.Memory, full, st.Evicted)
	}
	if _, _, ok := sh.Get([]byte("k19"), 0); !ok {
		t.Fatal("the growing key itself was evicted")
	}
	// Lowering the bound: EvictOver brings an idle shard back under it.
	s.SetMaxMemory(full / 2)
	for sh.EvictOver(4) > 0 {
	}
	if m := s.Stats().Memory; m > full/2 {
		t.Fatalf("after EvictOver: %d bytes, bound %d", m, full/2)
	}
}

// TestDrainReleasesBurstLists: lists grown by a burst of changes (here a
// flush of every key) give their chunks back once drained.
func TestDrainReleasesBurstLists(t *testing.T) {
	s := New(Options{Seed: testSeed(t), Shards: 1, TrackChanges: true})
	sh := s.Shard(0)
	n := 100 * chunkRefs
	for i := range n {
		sh.Insert([]byte(fmt.Sprintf("k%07d", i)), &fake{size: 1}, 10*sec)
	}
	if c := len(sh.dirty.chunks); c != 100 {
		t.Fatalf("dirty list in %d chunks after %d inserts, want 100", c, n)
	}
	if ch, _, left := sh.DrainChanges(nil, nil, 0); len(ch) != n || left != 0 {
		t.Fatalf("drained %d, %d left; want %d, 0", len(ch), left, n)
	}
	if c := len(sh.dirty.chunks); c != 0 {
		t.Fatalf("dirty list keeps %d chunks after draining %d", c, n)
	}
	sh.clear()
	if c := len(sh.deleted.chunks); c < 2 {
		t.Fatalf("deleted list in %d chunks after clearing %d keys", c, n)
	}
	ch, _, left := sh.DrainChanges(nil, nil, 0)
	keys := map[string]bool{}
	for _, c := range ch {
		if c.Deleted {
			keys[string(c.Key)] = true
		}
	}
	if len(ch) != n || left != 0 || len(keys) != n || !keys["k0000000"] || !keys[fmt.Sprintf("k%07d", n-1)] {
		t.Fatalf("drained %d changes (%d distinct deletions, %d left) after Clear, want %d deletions", len(ch), len(keys), left, n)
	}
	if c := len(sh.deleted.chunks); c != 0 {
		t.Fatalf("deleted list keeps %d chunks after draining %d", c, n)
	}
	for _, free := range []int{len(refChunks.free), len(byteChunks.free)} {
		if free > freeChunks {
			t.Fatalf("%d free chunks of a kind kept, at most %d", free, freeChunks)
		}
	}
}

// Deletions drained in pieces hold back the dirty list's records: a key
// deleted and created again is drained as a deletion, then its new state.
func TestDrainDeletionsInPieces(t *testing.T) {
	s := New(Options{Seed: testSeed(t), Shards: 1, TrackChanges: true})
	sh := s.Shard(0)
	for i := range 10 {
		sh.Insert([]byte(fmt.Sprint("k", i)), &fake{size: 1}, 10*sec)
	}
	sh.DrainChanges(nil, nil, 0)
	for i := range 10 {
		sh.Delete([]byte(fmt.Sprint("k", i)), 0)
	}
	sh.Insert([]byte("k3"), &fake{size: 2}, 20*sec)
	var got []string
	for round := 0; ; round++ {
		ch, _, left := sh.DrainChanges(nil, nil, 4)
		for _, c := range ch {
			got = append(got, fmt.Sprintf("%s:%v", c.Key, c.Deleted))
		}
		if left == 0 {
			break
		}
		if round > 5 {
			t.Fatalf("still %d left after %d pieces", left, round+1)
		}
	}
	want := "[k0:true k1:true k2:true k3:true k4:true k5:true k6:true k7:true k8:true k9:true k3:false]"
	if fmt.Sprint(got) != want {
		t.Fatalf("drained %v\nwant    %s", got, want)
	}
}

func TestKeyQueue(t *testing.T) {
	var q keyQueue
	long := bytes.Repeat([]byte("x"), chunkBytes+10)
	var want [][]byte
	for i := range 3000 {
		k := []byte(fmt.Sprintf("key-%d-%s", i, bytes.Repeat([]byte("y"), i%40)))
		if i == 1500 {
			k = long
		}
		q.push(k)
		want = append(want, k)
		if i%7 == 0 { // pops interleaved with pushes
			if got := q.popTo(nil); !bytes.Equal(got, want[0]) {
				t.Fatalf("pop %q, want %q", got, want[0])
			}
			want = want[1:]
		}
	}
	for len(want) > 0 {
		if q.len() != len(want) {
			t.Fatalf("len %d, want %d", q.len(), len(want))
		}
		if got := q.popTo(nil); !bytes.Equal(got, want[0]) {
			t.Fatalf("pop %.40q, want %.40q", got, want[0])
		}
		want = want[1:]
	}
	if q.len() != 0 || len(q.chunks) != 0 {
		t.Fatalf("emptied queue: len %d, %d chunks", q.len(), len(q.chunks))
	}
}

func TestRefQueue(t *testing.T) {
	var q refQueue
	next, out := ref(1), ref(1)
	for round := range 50 {
		for range 997 * (round % 5) {
			q.push(next)
			next++
		}
		for n := 300 * (round % 4); n > 0 && q.len() > 0; {
			refs := q.peek(n)
			for _, r := range refs {
				if r != out {
					t.Fatalf("round %d: peeked %d, want %d", round, r, out)
				}
				out++
			}
			q.drop(len(refs))
			n -= len(refs)
		}
		if q.len() != int(next-out) {
			t.Fatalf("round %d: len %d, want %d", round, q.len(), next-out)
		}
	}
}
