package shard

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/values"
)

// valOp is a ValueOp for the eviction tests: it reads the key (leaving
// its access stamp alone when peek), noting the idle time and counter it
// saw, or with set non-nil writes a string value expiring at exp.
type valOp struct {
	set  []byte
	exp  int64
	peek bool
	seen bool // the key existed
	idle time.Duration
	freq int
}

func (o *valOp) Kind() engine.Kind { return 0 }

func (o *valOp) Apply(_ int, v *Value, _ int64) Outcome {
	if o.peek {
		v.Peek()
	}
	o.seen, o.idle, o.freq = v.State != nil, v.IdleTime(), v.Freq()
	if o.set == nil {
		return Unchanged
	}
	st := v.New(values.KindString).(*values.String)
	st.B = append(st.B[:0], o.set...)
	v.Exp = o.exp
	return Changed
}

// t1 is the instant the eviction tests start at: late enough that the
// clocks (seconds, minutes) are far from zero.
const t1 = 1_767_225_600 * sec

func setValue(s *Store, key string, exp, now int64) {
	s.View().Value([]byte(key), now, &valOp{set: []byte("v"), exp: exp})
}

func readValue(s *Store, key string, now int64) bool {
	o := &valOp{}
	s.View().Value([]byte(key), now, o)
	return o.seen
}

// peekValue returns what OBJECT IDLETIME and FREQ would of key at now.
func peekValue(s *Store, key string, now int64) (bool, time.Duration, int) {
	o := &valOp{peek: true}
	s.View().Value([]byte(key), now, o)
	return o.seen, o.idle, o.freq
}

// exists reports whether key is in the store, live or not.
func exists(s *Store, key string) bool {
	return s.ShardFor([]byte(key)).lookup([]byte(key), s.Hash([]byte(key))).OK
}

// In a table small enough to look at every key, LRU is exact: values
// written at t1 and read at t1+100s outlive the ones never read since,
// and so do the keys written at t1+200s, which make room by evicting
// only keys never read.
func TestLRUEvictsLeastRecentlyUsedValues(t *testing.T) {
	s := New(Options{Shards: 1, Seed: testSeed(t)})
	for i := range 100 {
		setValue(s, fmt.Sprintf("old:%02d", i), engine.NoExpiry, t1)
	}
	per := s.Stats().Memory / 100
	s.SetMaxMemory(120 * per)
	touched := func(i int) bool { return i%5 == 0 }
	for i := range 100 {
		if touched(i) && !readValue(s, fmt.Sprintf("old:%02d", i), t1+100*sec) {
			t.Fatalf("old:%02d missing before any eviction", i)
		}
	}
	for j := range 50 {
		setValue(s, fmt.Sprintf("new:%02d", j), engine.NoExpiry, t1+200*sec)
	}
	if st := s.Stats(); st.Evicted != 30 || st.Memory > 120*per {
		t.Fatalf("stats %+v, want 30 evicted and at most %d bytes", st, 120*per)
	}
	for i := range 100 {
		if k := fmt.Sprintf("old:%02d", i); touched(i) && !exists(s, k) {
			t.Errorf("%s, read at t1+100s, evicted while keys unread since t1 remain", k)
		}
	}
	for j := range 50 {
		if k := fmt.Sprintf("new:%02d", j); !exists(s, k) {
			t.Errorf("%s, written at t1+200s, evicted", k)
		}
	}
}

// In a table too large to look at every key, eviction samples: of 30000
// values of three record sizes written at t1, a third read again at
// t1+100s, evicting half the keyspace at t1+200s keeps almost all of the
// third read again with maxmemory-samples at its default (5) or above,
// and about half with 1, where eviction takes keys as they come.
func TestLRUSamplesLeastRecentlyUsed(t *testing.T) {
	for _, tc := range []struct{ samples, minPct, maxPct int }{
		{DefaultMaxMemorySamples, 97, 100},
		{10, 97, 100},
		{1, 40, 60},
	} {
		s := New(Options{Shards: 1, Seed: 11})
		if tc.samples != DefaultMaxMemorySamples {
			s.SetMaxMemorySamples(tc.samples)
		}
		sh := s.Shard(0)
		const n = 30000
		key := func(i int) string { return fmt.Sprintf("k%d:%0*d", i, i%3*40, 0) }
		for i := range n {
			setValue(s, key(i), engine.NoExpiry, t1)
		}
		for i := 0; i < n; i += 3 {
			readValue(s, key(i), t1+100*sec)
		}
		bound := s.Stats().Memory / 2
		s.SetMaxMemory(bound)
		sh.now = t1 + 200*sec
		sh.EvictOver(n)
		kept := 0
		for i := 0; i < n; i += 3 {
			if exists(s, key(i)) {
				kept++
			}
		}
		if kept < n/3*tc.minPct/100 || kept > n/3*tc.maxPct/100 {
			t.Errorf("samples %d: %d of the %d keys read again kept, want %d%% to %d%%",
				tc.samples, kept, n/3, tc.minPct, tc.maxPct)
		}
		if st := s.Stats(); st.Memory > bound {
			t.Fatalf("samples %d: stats %+v, bound %d", tc.samples, st, bound)
		}
	}
}

// maxmemory-samples is the evictable records a round of sampling adds to
// an empty pool (all of them, up to the pool's size), in a slab class
// without free slots; values out of range are taken as the nearest
// bound.
func TestMaxMemorySamples(t *testing.T) {
	s := New(Options{Shards: 1, Seed: 11})
	if got := s.MaxMemorySamples(); got != DefaultMaxMemorySamples {
		t.Fatalf("default maxmemory-samples %d, want %d", got, DefaultMaxMemorySamples)
	}
	sh := s.Shard(0)
	for i := range 1000 {
		setValue(s, fmt.Sprintf("k%04d", i), engine.NoExpiry, t1)
	}
	for _, tc := range []struct{ set, want int }{{1, 1}, {3, 3}, {5, 5}, {10, 10}, {64, poolSize}, {0, 1}, {-7, 1}} {
		s.SetMaxMemorySamples(tc.set)
		if got := s.MaxMemorySamples(); got != max(tc.set, 1) {
			t.Errorf("SetMaxMemorySamples(%d): MaxMemorySamples() = %d", tc.set, got)
		}
		sh.pool = evictPool{}
		sh.sampleSlab(0)
		if sh.pool.n != tc.want {
			t.Errorf("samples %d: the pool holds %d after one round, want %d", tc.set, sh.pool.n, tc.want)
		}
	}
}

// Under the default policy, limiter keys go first, the one closest to
// its fresh state first, and then values, the least recently used
// first: one key evicted at a time, the order is exact.
func TestDefaultPolicyOrder(t *testing.T) {
	s := New(Options{Shards: 1, Seed: testSeed(t)})
	sh := s.Shard(0)
	sh.now = t1
	for i, exp := range []int64{300, 100, 200} {
		sh.Insert(fmt.Appendf(nil, "lim%d", i), &fake{size: 10}, t1+exp*sec)
	}
	for i, at := range []int64{30, 10, 20} {
		setValue(s, fmt.Sprint("val", i), engine.NoExpiry, t1+at*sec)
	}
	setValue(s, "ttl", t1+3600*sec, t1+40*sec) // a value with a TTL is still a value
	var order []string
	for range 7 {
		before := map[string]bool{}
		sh.Each(0, func(it Item) bool { before[string(it.Key)] = true; return true })
		s.SetMaxMemory(s.Stats().Memory - 1)
		sh.now = t1 + 50*sec
		if sh.EvictOver(1) != 1 {
			t.Fatalf("nothing evicted after %v", order)
		}
		for k := range before {
			if !exists(s, k) {
				order = append(order, k)
			}
		}
	}
	if want := []string{"lim1", "lim2", "lim0", "val1", "val2", "val0", "ttl"}; !slices.Equal(order, want) {
		t.Fatalf("eviction order %v, want %v", order, want)
	}
}

// The policies by name: what each may evict, and in which order where
// it has one. Tables are small, so every key is looked at.
func TestPolicies(t *testing.T) {
	// Six values with a TTL (expiring at t1+1..6 h, read in the reverse
	// order), six without; a limiter key expiring at t1+3h30.
	fill := func(t *testing.T, p Policy) *Store {
		s := New(Options{Shards: 1, Seed: testSeed(t)})
		s.SetPolicy(p)
		for i := range 6 {
			setValue(s, fmt.Sprint("vol", i), t1+int64(i+1)*3600*sec, t1)
			setValue(s, fmt.Sprint("per", i), engine.NoExpiry, t1)
		}
		for i := range 6 {
			readValue(s, fmt.Sprint("vol", 5-i), t1+int64(i+1)*sec)
			readValue(s, fmt.Sprint("per", 5-i), t1+int64(i+1)*sec)
		}
		sh := s.Shard(0)
		sh.now = t1
		sh.Insert([]byte("lim"), &fake{size: 10}, t1+3*3600*sec+1800*sec)
		return s
	}
	// evict evicts one key at a time while it can, returning the keys in
	// the order they went.
	evict := func(s *Store, n int) (order []string) {
		sh := s.Shard(0)
		for range n {
			var before []string
			sh.Each(0, func(it Item) bool { before = append(before, string(it.Key)); return true })
			s.SetMaxMemory(s.Stats().Memory - 1)
			sh.now = t1 + 60*sec
			if sh.EvictOver(1) == 0 {
				break
			}
			for _, k := range before {
				if !exists(s, k) {
					order = append(order, k)
				}
			}
		}
		return order
	}
	lru := []string{"lim", "vol5", "vol4", "vol3", "vol2", "vol1", "vol0"}
	for _, tc := range []struct {
		p    Policy
		want []string // nil: any order
		only string   // the prefix every victim has ("": any)
	}{
		{VolatileTTL, []string{"vol0", "vol1", "vol2", "lim", "vol3", "vol4", "vol5"}, ""},
		{VolatileLRU, lru, ""},
		{VolatileLFU, nil, ""},
		{VolatileRandom, nil, ""},
		{AllKeysRandom, nil, ""},
	} {
		t.Run(tc.p.String(), func(t *testing.T) {
			s := fill(t, tc.p)
			order := evict(s, 13)
			if tc.p.volatile() {
				if len(order) != 7 || slices.ContainsFunc(order, func(k string) bool { return k[:3] == "per" }) {
					t.Fatalf("evicted %v: want the 7 keys with an expiry, none other", order)
				}
				if !s.Stuck() {
					t.Fatal("over the bound with only keys without a TTL left, and not stuck")
				}
				// A key given a TTL may go: the shard is no longer stuck.
				setValue(s, "per0", t1+3600*sec, t1+61*sec)
				if s.Stuck() {
					t.Fatal("still stuck after a key was given a TTL")
				}
				if got := evict(s, 2); !slices.Equal(got, []string{"per0"}) {
					t.Fatalf("then evicted %v, want [per0]", got)
				}
			} else if len(order) != 13 {
				t.Fatalf("evicted %v: want every key", order)
			}
			if tc.want != nil && !slices.Equal(order[:len(tc.want)], tc.want) {
				t.Fatalf("eviction order %v, want %v", order, tc.want)
			}
		})
	}
	t.Run("allkeys-lru", func(t *testing.T) {
		s := fill(t, AllKeysLRU)
		order := evict(s, 13)
		// Limiter key first, then values by last access: the ones read
		// last (vol0, per0 at t1+6s) last; values read at the same
		// second go in either order.
		if order[0] != "lim" || order[11][3] != '0' || order[12][3] != '0' || order[1][3] != '5' || order[2][3] != '5' {
			t.Fatalf("eviction order %v", order)
		}
	})
	t.Run("noeviction", func(t *testing.T) {
		s := fill(t, NoEviction)
		if got := evict(s, 3); len(got) != 0 || !s.Stuck() {
			t.Fatalf("evicted %v (stuck %t): want none, stuck", got, s.Stuck())
		}
	})
	t.Run("names", func(t *testing.T) {
		for p := AllKeysLRU; p <= NoEviction; p++ {
			if got, ok := PolicyNamed(p.String()); !ok || got != p {
				t.Errorf("PolicyNamed(%q) = %v, %t", p.String(), got, ok)
			}
		}
		if p, ok := PolicyNamed("ALLKEYS-LFU"); !ok || p != AllKeysLFU {
			t.Errorf("PolicyNamed(ALLKEYS-LFU) = %v, %t", p, ok)
		}
		for _, bad := range []string{"", "lru", "allkeys-lru ", "volatile-ttlx"} {
			if _, ok := PolicyNamed(bad); ok {
				t.Errorf("PolicyNamed(%q) accepted", bad)
			}
		}
	})
}

// The LFU counter as Redis keeps it: 5 for a new key, one more per
// access with lfu-log-factor 0, one less per lfu-decay-time minutes
// without an access, at most 255; and what the LFU policy evicts.
func TestLFU(t *testing.T) {
	s := New(Options{Shards: 1, Seed: testSeed(t)})
	s.SetPolicy(AllKeysLFU)
	s.SetLFU(LFU{LogFactor: 0, DecayTime: 1})
	setValue(s, "a", engine.NoExpiry, t1)
	freq := func(key string, now int64) int {
		t.Helper()
		ok, _, f := peekValue(s, key, now)
		if !ok {
			t.Fatalf("%s missing", key)
		}
		return f
	}
	if f := freq("a", t1); f != 5 {
		t.Fatalf("a new key's counter %d, want 5", f)
	}
	for range 3 {
		readValue(s, "a", t1+sec)
	}
	if f := freq("a", t1+sec); f != 8 {
		t.Fatalf("after 3 reads: %d, want 8", f)
	}
	if f := freq("a", t1+sec+150*sec); f != 6 {
		t.Fatalf("2.5 minutes later: %d, want 6", f)
	}
	if f := freq("a", t1+sec+20*60*sec); f != 0 {
		t.Fatalf("20 minutes later: %d, want 0", f)
	}
	for range 300 {
		readValue(s, "a", t1+2*sec)
	}
	if f := freq("a", t1+2*sec); f != 255 {
		t.Fatalf("after 300 more reads: %d, want 255", f)
	}
	// With the default log factor a counter grows ever more slowly.
	s.SetLFU(LFU{LogFactor: DefaultLFULogFactor, DecayTime: DefaultLFUDecayTime})
	setValue(s, "b", engine.NoExpiry, t1+3*sec)
	for range 1000 {
		readValue(s, "b", t1+3*sec)
	}
	if f := freq("b", t1+3*sec); f < 10 || f > 40 {
		t.Fatalf("after 1000 reads with lfu-log-factor 10: %d, want 10-40", f)
	}
	// Rename carries the counter, raised by the rename's own access.
	s.SetLFU(LFU{LogFactor: 0, DecayTime: 1})
	before := freq("b", t1+3*sec)
	if found, moved, _ := s.View().Rename([]byte("b"), []byte("c"), t1+3*sec, false); !found || !moved {
		t.Fatal("RENAME b c did not move")
	}
	if f := freq("c", t1+3*sec); f != before+1 {
		t.Fatalf("after RENAME: %d, want %d", f, before+1)
	}

	// Eviction: the keys read less often go first.
	s2 := New(Options{Shards: 1, Seed: testSeed(t)})
	s2.SetPolicy(AllKeysLFU)
	s2.SetLFU(LFU{LogFactor: 0, DecayTime: 1})
	for i := range 100 {
		setValue(s2, fmt.Sprintf("k%02d", i), engine.NoExpiry, t1)
	}
	for i := 0; i < 100; i += 4 {
		for range 1 + i%3 {
			readValue(s2, fmt.Sprintf("k%02d", i), t1)
		}
	}
	s2.SetMaxMemory(s2.Stats().Memory * 30 / 100)
	sh2 := s2.Shard(0)
	sh2.now = t1
	if n := sh2.EvictOver(100); n != 70 {
		t.Fatalf("%d evicted, want 70", n)
	}
	for i := 0; i < 100; i += 4 {
		if k := fmt.Sprintf("k%02d", i); !exists(s2, k) {
			t.Errorf("%s, read since, evicted while keys never read remain", k)
		}
	}
}

// What touches a key and what does not: a read or write stamps it, a
// peek (OBJECT) does not, a rename stamps the source and carries it, a
// limiter key revived after expiring starts afresh.
func TestAccessStamps(t *testing.T) {
	s := New(Options{Shards: 1, Seed: testSeed(t)})
	setValue(s, "a", engine.NoExpiry, t1)
	idle := func(key string, now int64) time.Duration {
		t.Helper()
		ok, d, _ := peekValue(s, key, now)
		if !ok {
			t.Fatalf("%s missing", key)
		}
		return d
	}
	if d := idle("a", t1+30*sec); d != 30*time.Second {
		t.Fatalf("idle %v, want 30s", d)
	}
	if d := idle("a", t1+90*sec+sec/2); d != 90*time.Second {
		t.Fatalf("idle %v after a peek, want 90s (whole seconds)", d)
	}
	readValue(s, "a", t1+100*sec)
	if d := idle("a", t1+110*sec); d != 10*time.Second {
		t.Fatalf("idle %v 10s after a read, want 10s", d)
	}
	setValue(s, "a", engine.NoExpiry, t1+200*sec)
	if d := idle("a", t1+200*sec); d != 0 {
		t.Fatalf("idle %v after a write, want 0", d)
	}
	s.View().Rename([]byte("a"), []byte("b"), t1+300*sec, false)
	if d := idle("b", t1+305*sec); d != 5*time.Second {
		t.Fatalf("idle %v after RENAME, want 5s", d)
	}
	// A limiter key, through Update: a token every 10 s, so fresh again
	// about 20 s after its second take.
	now := t1
	op := newTakeOp(func(b *engine.TokenBucket) engine.Decision {
		return b.Take(now, engine.TokenBucketParams{Capacity: 100, Rate: 1, Period: 10 * time.Second}, 1)
	})
	v := s.View()
	v.Update([]byte("tb"), now, op)
	now = t1 + sec/2
	v.Update([]byte("tb"), now, op)
	if d := idle("tb", t1+2*sec); d != 2*time.Second {
		t.Fatalf("limiter key idle %v, want 2s", d)
	}
	// Expired, and revived at t1+60s: stamped then.
	now = t1 + 60*sec
	v.Update([]byte("tb"), now, op)
	if d := idle("tb", t1+61*sec); d != time.Second {
		t.Fatalf("revived limiter key idle %v, want 1s", d)
	}
}

// The LRU clock wraps every 2^24 seconds; a stamp a moment ahead of the
// clock (a concurrent command's) is no time at all.
func TestLRUIdleWraps(t *testing.T) {
	for _, tc := range []struct{ clock, stamp, want uint32 }{
		{100, 40, 60},
		{5, lruMax - 4, 9}, // Redis's formula: clock + (LRU_CLOCK_MAX - lru)
		{10, 11, 0},
		{10, 12, 0},
		{10, 13, 10 + lruMax - 13},
	} {
		if got := lruIdle(tc.clock, tc.stamp); got != tc.want {
			t.Errorf("lruIdle(%d, %d) = %d, want %d", tc.clock, tc.stamp, got, tc.want)
		}
	}
	if got := lfuElapsed(3, lfuMax-2); got != 5 {
		t.Errorf("lfuElapsed wraps to %d, want 5", got)
	}
	if lruClock(t1) != uint32(t1/sec)&lruMax || lfuMinute(t1) != uint32(t1/sec/60)&lfuMax {
		t.Error("clocks")
	}
}

// Eviction chooses its victim one write early (evictAhead): a key read
// between the choice and the eviction is not the least recently used any
// more, and stays.
func TestEvictAheadTouched(t *testing.T) {
	s := New(Options{Shards: 1, Seed: 9})
	sh := s.Shard(0)
	for i := range 5000 {
		setValue(s, fmt.Sprint("k", i), engine.NoExpiry, t1+int64(i%100)*sec)
	}
	s.SetMaxMemory(s.Stats().Memory)
	now := t1 + 1000*sec
	for i := 0; sh.ahead.victim == 0; i++ {
		if i == 100 {
			t.Fatal("no victim chosen ahead in 100 evicting writes")
		}
		setValue(s, fmt.Sprint("n", i), engine.NoExpiry, now)
	}
	k, _ := recSplit(sh.slabs.get(sh.ahead.victim))
	victim := string(k)
	readValue(s, victim, now)
	setValue(s, "last", engine.NoExpiry, now)
	if !exists(s, victim) {
		t.Fatalf("%s, chosen ahead and read since, evicted", victim)
	}
}
