package engine

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// compactKind drives one kind of Compact state in the tests below. Params
// are passed as any so that one driver serves every kind.
type compactKind struct {
	name   string
	kind   Kind
	fresh  func() State
	params func(r *rand.Rand) any
	take   func(s State, now int64, p any, n int64) Decision
	limit  func(p any) int64
}

// compactNum returns a random positive value: mostly round or small, as
// real parameters are, sometimes anything up to hi.
func compactNum(r *rand.Rand, hi int64) int64 {
	switch r.IntN(6) {
	case 0:
		return 1 + r.Int64N(20)
	case 1:
		return []int64{1, 3, 10, 15, 30, 60, 100, 1000, 10000, 1e6, 1e9, 6e10, 36e11}[r.IntN(13)]
	case 2:
		return (1 + r.Int64N(999)) * []int64{1e3, 1e6, 1e9}[r.IntN(3)]
	case 3:
		return 1 + r.Int64N(hi)
	case 4:
		return hi - r.Int64N(3)
	}
	return 1 + r.Int64N(1+r.Int64N(1e7))
}

// compactDur returns a random positive duration of up to about 11 days.
func compactDur(r *rand.Rand) time.Duration {
	return time.Duration(compactNum(r, int64(1e15)))
}

var compactKinds = []compactKind{
	{
		name: "gcra", kind: KindThrottle,
		fresh: func() State { return new(GCRA) },
		params: func(r *rand.Rand) any {
			return GCRAParams{MaxBurst: compactNum(r, 1e12) - 1, Count: compactNum(r, 1e12), Period: compactDur(r)}
		},
		take:  func(s State, now int64, p any, n int64) Decision { return s.(*GCRA).Take(now, p.(GCRAParams), n) },
		limit: func(p any) int64 { return p.(GCRAParams).Limit() },
	},
	{
		name: "tokenbucket", kind: KindTokenBucket,
		fresh: func() State { return new(TokenBucket) },
		params: func(r *rand.Rand) any {
			p := TokenBucketParams{Capacity: compactNum(r, 1e12), Rate: compactNum(r, 1e12), Period: compactDur(r)}
			if r.IntN(3) == 0 { // RESERVE: debt
				p.MaxWait = compactDur(r)
			}
			return p
		},
		take: func(s State, now int64, p any, n int64) Decision {
			return s.(*TokenBucket).Take(now, p.(TokenBucketParams), n)
		},
		limit: func(p any) int64 { return p.(TokenBucketParams).Capacity },
	},
	{
		name: "leakybucket", kind: KindLeakyBucket,
		fresh: func() State { return new(LeakyBucket) },
		params: func(r *rand.Rand) any {
			return LeakyBucketParams{Capacity: compactNum(r, 1e12), Rate: compactNum(r, 1e12), Period: compactDur(r)}
		},
		take: func(s State, now int64, p any, n int64) Decision {
			return s.(*LeakyBucket).Take(now, p.(LeakyBucketParams), n)
		},
		limit: func(p any) int64 { return p.(LeakyBucketParams).Capacity },
	},
	{
		name: "window", kind: KindWindow,
		fresh: func() State { return new(Window) },
		params: func(r *rand.Rand) any {
			p := WindowParams{Limit: compactNum(r, maxInt64), Window: compactDur(r), Mode: WindowMode(1 + r.IntN(3))}
			if p.Mode == WindowLog && r.IntN(4) != 0 {
				p.Limit = 1 + p.Limit%300 // keep most logs short
			}
			return p
		},
		take:  func(s State, now int64, p any, n int64) Decision { return s.(*Window).Take(now, p.(WindowParams), n) },
		limit: func(p any) int64 { return p.(WindowParams).Limit },
	},
}

// binaryOf returns the version-1 encoding of s (appendV1): it covers every
// field that affects behaviour, LOG entries included.
func binaryOf(t testing.TB, s State) []byte {
	t.Helper()
	b, err := appendV1(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkRing checks the shape DecodeCompact promises for a LOG log: entries
// from the start of the first block, and blocks for them plus one more push
// (a log of no entries keeps at most one block).
func checkRing(t testing.TB, s *Window) {
	t.Helper()
	l := s.log
	if l == nil {
		return
	}
	want := l.n>>logBlockShift + 1
	if l.n == 0 {
		want = min(len(l.blocks), 1)
	}
	if l.head != 0 || len(l.blocks) != want {
		t.Fatalf("log: %d blocks, n %d, head %d; want %d blocks from head 0", len(l.blocks), l.n, l.head, want)
	}
	for i, b := range l.blocks {
		if b == nil {
			t.Fatalf("log block %d of %d is nil", i, len(l.blocks))
		}
	}
}

// roundTrip encodes s at ref, decodes into recv, and checks that recv is s
// and that the encoding is canonical (recv re-encodes to the same bytes).
func roundTrip(t testing.TB, s, recv State, ref int64) []byte {
	t.Helper()
	enc := s.AppendCompact(nil, ref)
	if err := recv.DecodeCompact(enc, ref); err != nil {
		t.Fatalf("DecodeCompact(%x, %d) of %x: %v", enc, ref, binaryOf(t, s), err)
	}
	if got, want := binaryOf(t, recv), binaryOf(t, s); !bytes.Equal(got, want) {
		t.Fatalf("ref %d: compact %x decodes to %x, want %x", ref, enc, got, want)
	}
	if again := recv.AppendCompact(nil, ref); !bytes.Equal(again, enc) {
		t.Fatalf("ref %d: %x re-encodes as %x", ref, enc, again)
	}
	if w, ok := recv.(*Window); ok {
		checkRing(t, w)
	}
	return enc
}

// compactRefs returns the refs a state is round-tripped at: its expiry and
// around it, and refs far from any instant.
func compactRefs(expiry, now int64) []int64 {
	return []int64{expiry, expiry - 1, expiry + 1, now, 0, -1e18, 4e18, math.MinInt64, math.MaxInt64}
}

// TestCompactRoundTrip drives each kind through seeded random sequences of
// Take (parameter changes, clock steps back, RESERVE debt, mode switches,
// huge parameters) and after every step checks that the state round-trips
// exactly at several refs, into a fresh receiver and into one that held
// other states, and that the decoded copy answers the next Take exactly as
// the original does.
func TestCompactRoundTrip(t *testing.T) {
	for _, k := range compactKinds {
		t.Run(k.name, func(t *testing.T) {
			for seed := range uint64(40) {
				r := rand.New(rand.NewPCG(seed, 0xc0))
				s, dirty := k.fresh(), k.fresh()
				p := k.params(r)
				now := startClock(r, seed)
				ref := now
				for step := range 250 {
					if r.IntN(12) == 0 {
						p = k.params(r)
					}
					now = stepClock(r, now)
					lim := k.limit(p)
					var n int64
					switch r.IntN(8) {
					case 0:
						n = 0
					case 1:
						n = lim
					case 2:
						n = lim + 1
					default:
						n = 1 + r.Int64N(min(lim, 3))
					}
					// The copy decoded at the last expiry must answer this
					// Take as the original does and end up equal to it.
					cp := k.fresh()
					roundTrip(t, s, cp, ref)
					d := k.take(s, now, p, n)
					if dc := k.take(cp, now, p, n); dc != d {
						t.Fatalf("seed %d step %d: decoded copy answers %s, original %s", seed, step, fmtWD(dc), fmtWD(d))
					}
					if !bytes.Equal(binaryOf(t, cp), binaryOf(t, s)) {
						t.Fatalf("seed %d step %d: decoded copy diverged after Take", seed, step)
					}
					ref = int64(uint64(now) + uint64(d.ResetAfter))
					for _, rf := range compactRefs(ref, now) {
						roundTrip(t, s, k.fresh(), rf)
						roundTrip(t, s, dirty, rf)
					}
				}
			}
		})
	}
}

// TestCompactReceiverReuse decodes every state of a set into receivers that
// held every other one, as Take left them (another mode, a larger or
// smaller log, a ring whose head is not at 0, a log with a base): nothing
// of the previous content may survive.
func TestCompactReceiverReuse(t *testing.T) {
	const now = int64(1_800_000_000_123_456_789)
	sec := time.Second
	var makers []func() State
	for _, mode := range []WindowMode{WindowFixed, WindowSliding, WindowLog} {
		makers = append(makers, func() State {
			w := new(Window)
			w.Take(now, WindowParams{Limit: 1000, Window: sec, Mode: mode}, 3)
			w.Take(now+7, WindowParams{Limit: 1000, Window: sec, Mode: mode}, 2)
			return w
		})
	}
	makers = append(makers,
		func() State { // 100 entries, then 41 expire: the head moves off 0
			w := new(Window)
			for i := range int64(100) {
				w.Take(now+i*int64(10*time.Millisecond), WindowParams{Limit: 500, Window: sec, Mode: WindowLog}, 1+i%3)
			}
			w.Take(now+int64(1400*time.Millisecond), WindowParams{Limit: 500, Window: sec, Mode: WindowLog}, 1)
			if w.log.head == 0 {
				panic("head at 0")
			}
			return w
		},
		func() State {
			w := new(Window)
			w.Take(now, WindowParams{Limit: 10000, Window: 10 * time.Millisecond, Mode: WindowLog}, 1)
			return w
		},
		func() State {
			w, err := decodeWindow([]byte{windowVersion, byte(WindowLog),
				5, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, // limit, window, last
				42, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}) // base 42, no entries
			if err != nil {
				panic(err)
			}
			return w
		},
		func() State { return new(Window) },
	)
	for _, k := range compactKinds[:3] {
		makers = append(makers, k.fresh)
		for seed := range uint64(3) {
			makers = append(makers, func() State {
				s := k.fresh()
				k.take(s, now, k.params(rand.New(rand.NewPCG(seed, 9))), 1)
				return s
			})
		}
	}

	for _, prev := range makers {
		for _, next := range makers {
			if prev().Kind() != next().Kind() {
				continue
			}
			for _, ref := range []int64{now, now + int64(sec), math.MinInt64} {
				roundTrip(t, next(), prev(), ref)
			}
		}
	}
}

// cloneCompact returns a deep copy of s (a Window's log through the
// version-1 codec).
func cloneCompact(s State) State {
	switch s := s.(type) {
	case *GCRA:
		c := *s
		return &c
	case *TokenBucket:
		c := *s
		return &c
	case *LeakyBucket:
		c := *s
		return &c
	}
	b, _ := appendV1(s, nil)
	c, err := decodeWindow(b)
	if err != nil {
		panic(err)
	}
	return c
}

// kindOf returns the test driver of kind k (any byte maps to one).
func kindOf(k byte) compactKind { return compactKinds[(k+3)%4] }

// typicalCompact returns the benchmark states: one admitted Take of one
// unit at now ≈ 1.8e18 (37.1s into a minute, so a FIXED window's last −
// start needs its full six bytes), with ref the key's expiry.
func typicalCompact() []struct {
	name   string
	s      State
	ref    int64
	budget int // the most it may take
	want   int // what it takes now
} {
	const now = int64(1_800_000_037_123_456_789)
	type tc = struct {
		name   string
		s      State
		ref    int64
		budget int
		want   int
	}
	var out []tc
	g := new(GCRA)
	d := g.Take(now, GCRAParams{MaxBurst: 1e6, Count: 1e6, Period: time.Second}, 1)
	out = append(out, tc{"gcra", g, now + int64(d.ResetAfter), 24, 6})
	tb := new(TokenBucket)
	d = tb.Take(now, TokenBucketParams{Capacity: 1e6, Rate: 1e6, Period: time.Second}, 1)
	out = append(out, tc{"tokenbucket", tb, now + int64(d.ResetAfter), 24, 6})
	lb := new(LeakyBucket)
	d = lb.Take(now, LeakyBucketParams{Capacity: 1e6, Rate: 1e6, Period: time.Second}, 1)
	out = append(out, tc{"leakybucket", lb, now + int64(d.ResetAfter), 24, 6})
	for _, c := range []struct {
		mode         WindowMode
		limit        int64
		window       time.Duration
		budget, want int
	}{
		{WindowFixed, 1e9, time.Minute, 20, 11},
		{WindowSliding, 1e9, time.Minute, 22, 12},
		{WindowLog, 10000, 10 * time.Millisecond, 24, 8},
	} {
		w := new(Window)
		d := w.Take(now, WindowParams{Limit: c.limit, Window: c.window, Mode: c.mode}, 1)
		out = append(out, tc{"window-" + c.mode.String(), w, now + int64(d.ResetAfter), c.budget, c.want})
	}
	return out
}

// TestCompactSize checks the compact size of the typical states against
// their budgets (upper bounds) and their current sizes (so that a change
// that costs bytes is noticed), and logs the mean size over a longer mixed
// workload.
func TestCompactSize(t *testing.T) {
	for _, c := range typicalCompact() {
		b := c.s.AppendCompact(nil, c.ref)
		t.Logf("%-15s %2d bytes: %x", c.name, len(b), b)
		if len(b) > c.budget || len(b) != c.want {
			t.Errorf("%s: %d bytes (%x), want %d (budget %d)", c.name, len(b), b, c.want, c.budget)
		}
	}
	// Busy keys: one unit every 10ms on average against limits of about
	// that rate, so buckets hover near full and windows and logs fill up.
	for _, c := range []struct {
		name string
		p    any
	}{
		{"gcra", GCRAParams{MaxBurst: 99, Count: 100, Period: time.Second}},
		{"tokenbucket", TokenBucketParams{Capacity: 100, Rate: 100, Period: time.Second}},
		{"leakybucket", LeakyBucketParams{Capacity: 100, Rate: 100, Period: time.Second}},
		{"window-FIXED", WindowParams{Limit: 6000, Window: time.Minute, Mode: WindowFixed}},
		{"window-SLIDING", WindowParams{Limit: 6000, Window: time.Minute, Mode: WindowSliding}},
		{"window-LOG", WindowParams{Limit: 100, Window: time.Second, Mode: WindowLog}},
	} {
		r := rand.New(rand.NewPCG(1, 2))
		var k compactKind
		for _, k = range compactKinds {
			if c.name[:3] == k.name[:3] {
				break
			}
		}
		s := k.fresh()
		now := int64(1_800_000_000_000_000_000)
		var sum, worst, count int
		for range 20000 {
			now += r.Int64N(int64(20 * time.Millisecond))
			d := k.take(s, now, c.p, 1)
			n := len(s.AppendCompact(nil, now+int64(d.ResetAfter)))
			sum += n
			worst = max(worst, n)
			count++
		}
		t.Logf("%-15s busy key: mean %.1f bytes, max %d", c.name, float64(sum)/float64(count), worst)
	}
}

// TestCompactAllocs checks that encoding into a large enough buffer and
// decoding into a reused receiver allocate nothing, and that a LOG scratch
// state cycles through decode, Take and encode without allocating.
func TestCompactAllocs(t *testing.T) {
	for _, c := range typicalCompact() {
		buf := make([]byte, 0, 64)
		recv := cloneCompact(c.s)
		if a := testing.AllocsPerRun(100, func() {
			buf = c.s.AppendCompact(buf[:0], c.ref)
			if err := recv.DecodeCompact(buf, c.ref); err != nil {
				t.Fatal(err)
			}
		}); a != 0 {
			t.Errorf("%s: %.1f allocations per encode and decode", c.name, a)
		}
	}

	// A LOG scratch: decode a 1-entry key, Take at a later instant, encode
	// it back; the ring keeps room for the pushed entry and never shrinks.
	p := WindowParams{Limit: 10000, Window: 10 * time.Millisecond, Mode: WindowLog}
	const now = int64(1_800_000_000_123_456_789)
	var key Window
	key.Take(now, p, 1)
	rec := key.AppendCompact(nil, now+int64(p.Window))
	var scratch Window
	buf := make([]byte, 0, 64)
	step := int64(0)
	if a := testing.AllocsPerRun(100, func() {
		step++
		if err := scratch.DecodeCompact(rec, now+int64(p.Window)); err != nil {
			t.Fatal(err)
		}
		t0 := now + step%int64(20*time.Millisecond) // sometimes the entry has expired
		d := scratch.Take(t0, p, 1)
		buf = scratch.AppendCompact(buf[:0], t0+int64(d.ResetAfter))
	}); a != 0 {
		t.Errorf("LOG scratch cycle: %.1f allocations", a)
	}

	// Growing: decoding 100 entries into a receiver with too few blocks
	// takes the others from the pool (given back here first, so none is
	// allocated) and grows its block list: one allocation, and the winLog
	// too when the receiver has none.
	var many Window
	for i := range int64(100) {
		many.Take(now+i, WindowParams{Limit: 1000, Window: time.Second, Mode: WindowLog}, 1)
	}
	enc := many.AppendCompact(nil, 0)
	for _, c := range []struct {
		name string
		recv func() Window
		want float64
	}{
		{"one block", func() Window { return Window{log: &winLog{blocks: []*winBlock{new(winBlock)}}} }, 1},
		{"no log", func() Window { return Window{} }, 2},
	} {
		recvs := make([]Window, 102) // AllocsPerRun runs the function 101 times
		for i := range recvs {
			recvs[i] = c.recv()
		}
		spare := make([]*winBlock, 4*len(recvs))
		for i := range spare {
			spare[i] = new(winBlock)
		}
		i := 0
		if a := testing.AllocsPerRun(100, func() {
			for _, b := range spare[4*i : 4*i+4] {
				blockPool.Put(b)
			}
			if err := recvs[i].DecodeCompact(enc, 0); err != nil {
				t.Fatal(err)
			}
			i++
		}); a != c.want {
			t.Errorf("growing LOG, %s: %.1f allocations, want %v", c.name, a, c.want)
		}
	}
}

// TestCompactCorrupt checks that DecodeCompact rejects, with an error
// wrapping ErrCorrupt, every truncation of valid encodings, trailing bytes,
// overlong and non-canonical numbers, bad headers, invalid parameters and
// impossible logs.
func TestCompactCorrupt(t *testing.T) {
	var encs [][]byte
	var kinds []State
	for _, c := range typicalCompact() {
		encs = append(encs, c.s.AppendCompact(nil, c.ref))
		kinds = append(kinds, c.s)
	}
	fresh := func(s State) State {
		switch s.(type) {
		case *GCRA:
			return new(GCRA)
		case *TokenBucket:
			return new(TokenBucket)
		case *LeakyBucket:
			return new(LeakyBucket)
		}
		return new(Window)
	}
	// corruptAs checks that b fails with want (which wraps ErrCorrupt).
	corruptAs := func(want error, what string, s State, b []byte) {
		t.Helper()
		recv := fresh(s)
		if err := recv.DecodeCompact(b, 0); !errors.Is(err, ErrCorrupt) || !errors.Is(err, want) {
			t.Errorf("%s: %T.DecodeCompact(%x) = %v, want %v", what, s, b, err, want)
		}
	}
	corrupt := func(what string, s State, b []byte) { t.Helper(); corruptAs(ErrCorrupt, what, s, b) }
	for i, enc := range encs {
		s := kinds[i]
		for n := 1; n < len(enc); n++ {
			corrupt("truncated", s, enc[:n])
		}
		corrupt("trailing byte", s, append(enc[:len(enc):len(enc)], 0))
		// Each 1-byte number written as two bytes.
		for j := 1; j < len(enc); j++ {
			if enc[j] < 0x80 && (j == 1 || enc[j-1] < 0x80) {
				long := append(append(append([]byte{}, enc[:j]...), enc[j]|0x80, 0), enc[j+1:]...)
				corrupt(fmt.Sprintf("overlong byte %d", j), s, long)
			}
		}
		corrupt("10-byte overflow", s, append([]byte{enc[0]}, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f))
	}
	g := new(GCRA)
	corruptAs(errCompactFresh, "fresh written out", g, []byte{0, 0, 0, 0, 0, 0})
	corruptAs(errCompactVarint, "scale not the largest", g, []byte{0x3c, 0xe8, 0x07, 1, 1, 1, 0})            // MaxBurst 1000 at scale 1
	corruptAs(errCompactVarint, "zero with a scale", g, []byte{0x01, 0, 1, 1, 1, 0})                         // MaxBurst 0 at scale 1000
	corruptAs(errCompactParams, "count 0", g, []byte{0x00, 1, 0, 1, 1, 0})                                   // invalid parameters
	corruptAs(errCompactVarint, "int64 overflow", g, []byte{0x03, 0x80, 0x80, 0x80, 0x80, 0x40, 1, 1, 1, 0}) // 2^34·1e9
	corruptAs(errCompactVarint, "backlog overflow", g, append([]byte{0xc0, 1, 1, 1},
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x03, 0))
	corruptAs(errCompactVarint, "backlog beyond 128 bits", g, append([]byte{0x00, 1, 1, 1},
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x04, 0))
	corruptAs(errCompactVarint, "backlog 0 at scale 1e9", g, []byte{0xc0, 1, 1, 1, 0, 0})
	corruptAs(errCompactParams, "token bucket rate 0", new(TokenBucket), []byte{0x00, 1, 0, 1, 1, 0})
	corruptAs(errCompactParams, "leaky bucket rate 0", new(LeakyBucket), []byte{0x00, 1, 0, 1, 1, 0})
	w := new(Window)
	corruptAs(errCompactVarint, "cur beyond int64", w, []byte{0x01, 1, 1, 4, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	corruptAs(errCompactHeader, "mode 0", w, []byte{0x00, 1, 1, 0, 0, 1})
	corruptAs(errCompactHeader, "header bits 6-7", w, []byte{0x41, 1, 1, 0, 0, 1})
	corruptAs(errCompactParams, "limit 0", w, []byte{0x01, 0, 1, 0, 0, 1})
	corruptAs(errCompactState, "start < 0", w, []byte{0x01, 1, 1, 1, 0, 1}) // ref 0 − 1 window − 1 (zigzag 1 = −1)
	corruptAs(errCompactLog, "log count beyond the bytes", w, []byte{0x03, 1, 1, 2, 0, 3, 0, 0, 0, 0})
	corruptAs(errCompactLog, "log instants below 0", w, []byte{0x03, 1, 1, 2, 0, 2, 0, 0, 0, 0}) // last 0: a second entry at −1
	corruptAs(errCompactLog, "log units overflow", w, []byte{0x03, 1, 1, 4, 0, 2, 0, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0, 0})
	if err := w.DecodeCompact([]byte{0x03, 1, 1, 2, 0, 1, 0, 0}, 0); err != nil {
		t.Errorf("1-entry log at 0: %v", err) // the valid neighbour of the two above
	}
}

// FuzzDecodeCompact feeds arbitrary bytes to each kind's DecodeCompact: it
// must not panic, and what it accepts must re-encode to the same bytes
// (the encoding is canonical), decode again to the same state, and be
// readable by the version-1 decoder. The same bytes read as a version-1
// state must round-trip through the compact codec.
func FuzzDecodeCompact(f *testing.F) {
	for _, c := range typicalCompact() {
		k := byte(c.s.Kind())
		f.Add(k, c.ref, c.s.AppendCompact(nil, c.ref))
		f.Add(k, int64(0), c.s.AppendCompact(nil, 0))
		f.Add(k, c.ref, binaryOf(f, c.s))
	}
	f.Add(byte(KindWindow), int64(0), []byte{0x03, 1, 1, 2, 0, 1, 0, 0})
	f.Add(byte(KindThrottle), int64(math.MaxInt64), []byte{})
	f.Fuzz(func(t *testing.T, kind byte, ref int64, b []byte) {
		k := kindOf(kind)
		s := k.fresh()
		if s.DecodeCompact(b, ref) == nil {
			if enc := s.AppendCompact(nil, ref); !bytes.Equal(enc, b) {
				t.Fatalf("DecodeCompact(%x, %d) re-encodes as %x", b, ref, enc)
			}
			roundTrip(t, s, k.fresh(), ref)
			if _, err := DecodeV1(k.kind, binaryOf(t, s)); err != nil {
				t.Fatalf("DecodeCompact(%x, %d) gives a state DecodeV1 rejects: %v", b, ref, err)
			}
			if w, ok := s.(*Window); ok {
				checkRing(t, w)
			}
		}
		if st, err := DecodeV1(k.kind, b); err == nil {
			roundTrip(t, st.(State), k.fresh(), ref)
		}
	})
}

// BenchmarkCompact measures AppendCompact followed by DecodeCompact into a
// reused receiver, for each typical state.
func BenchmarkCompact(b *testing.B) {
	for _, c := range typicalCompact() {
		b.Run(c.name, func(b *testing.B) { benchCompactRoundTrip(b, c.s, cloneCompact(c.s), c.ref) })
	}
}

// benchCompactRoundTrip measures s.AppendCompact and recv.DecodeCompact of
// the result, and reports the encoding's size.
func benchCompactRoundTrip(b *testing.B, s, recv State, ref int64) {
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		buf = s.AppendCompact(buf[:0], ref)
		if err := recv.DecodeCompact(buf, ref); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(buf)), "bytes")
}

// startClock picks a randomised test's first instant by seed: near 0, near
// MaxInt64, or near today.
func startClock(r *rand.Rand, seed uint64) int64 {
	switch seed % 4 {
	case 0:
		return r.Int64N(1e6)
	case 3:
		return maxInt64 - r.Int64N(1e13)
	}
	return 1_800_000_000_000_000_000 + r.Int64N(1e12)
}

// stepClock moves a randomised test's clock: mostly forward by up to 0.1 s,
// sometimes by nanoseconds, far forward (up to 1000 s) or back (up to 1 s).
func stepClock(r *rand.Rand, now int64) int64 {
	switch r.IntN(10) {
	case 0:
		return now - r.Int64N(1e9) // the clock steps back
	case 1, 2:
		return now + r.Int64N(10)
	case 3:
		return winAdd(now, r.Int64N(1e12))
	}
	return winAdd(now, r.Int64N(1e8))
}

// TestScaleDown: v = m·1000^c with c as large as allowed (at most 3), so that
// every value has one encoding; checked against dividing by 1000 while it
// goes, on edge values and random multiples of powers of ten.
func TestScaleDown(t *testing.T) {
	slow := func(v uint64) (uint64, byte) {
		c := byte(0)
		for c < 3 && v != 0 && v%1000 == 0 {
			v /= 1000
			c++
		}
		return v, c
	}
	cases := []uint64{0, 1, 8, 125, 999, 1000, 1001, 2000, 8000, 1e6, 1e6 + 1000, 1e9, 1e12, 5e15, 1 << 63, math.MaxUint64, math.MaxInt64, 9223372036000000000}
	r := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		cases = append(cases, r.Uint64()/uint64(math.Pow10(r.IntN(19)))*uint64(math.Pow10(r.IntN(13))))
	}
	for _, v := range cases {
		m, c := scaleDown(v)
		wm, wc := slow(v)
		if m != wm || c != wc {
			t.Fatalf("scaleDown(%d) = %d, %d; want %d, %d", v, m, c, wm, wc)
		}
	}
}
