package engine

import (
	"fmt"
	"math/big"
	"slices"
	"testing"
	"time"
)

// Shared test helpers for the bucket-shaped algorithms (GCRA, token bucket,
// leaky bucket) and their fuzz targets.

// t0 is the fixed instant the step tables start from.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC).UnixNano()

// admitted is one admitted request: n units at time at (ns).
type admitted struct {
	at int64
	n  int64
}

// checkRateBound reports an error if, for some interval [a, b] of length T,
// the units of events falling in it exceed capacity + rate·(T+slack)/period.
// The check is exact (big integers) and O(n log n): with P the prefix sums
// in time order, the bound over all pairs i ≤ j is
// P_j·period − rate·t_j − (P_{i−1}·period − rate·t_i) ≤ capacity·period + rate·slack.
func checkRateBound(events []admitted, capacity, rate, period, slack int64) error {
	ev := slices.Clone(events)
	slices.SortStableFunc(ev, func(x, y admitted) int {
		switch {
		case x.at < y.at:
			return -1
		case x.at > y.at:
			return 1
		}
		return 0
	})
	bp, br := big.NewInt(period), big.NewInt(rate)
	limit := new(big.Int).Mul(big.NewInt(capacity), bp)
	limit.Add(limit, new(big.Int).Mul(br, big.NewInt(slack)))
	prefix := new(big.Int) // P_{j−1}
	var minG *big.Int
	for j, e := range ev {
		// g(j) = P_{j−1}·period − rate·t_j
		g := new(big.Int).Mul(prefix, bp)
		g.Sub(g, new(big.Int).Mul(br, big.NewInt(e.at)))
		if minG == nil || g.Cmp(minG) < 0 {
			minG = g
		}
		prefix.Add(prefix, big.NewInt(e.n))
		f := new(big.Int).Mul(prefix, bp)
		f.Sub(f, new(big.Int).Mul(br, big.NewInt(e.at)))
		if f.Sub(f, minG).Cmp(limit) > 0 {
			return fmt.Errorf("event %d (t=%d, n=%d): more than %d + %d/%dns units admitted in an interval", j, e.at, e.n, capacity, rate, period)
		}
	}
	return nil
}

// ratDur returns d as a big.Rat of nanoseconds.
func ratNs(d int64) *big.Rat { return new(big.Rat).SetInt64(d) }

// checkDur reports whether got (ns) rounds the exact duration want up to
// whole nanoseconds: 0 ≤ got − want < 1ns. A nil want means Never.
func checkDur(got time.Duration, want *big.Rat) bool {
	if want == nil {
		return got == Never
	}
	diff := new(big.Rat).Sub(ratNs(int64(got)), want)
	return diff.Sign() >= 0 && diff.Cmp(big.NewRat(1, 1)) < 0
}

// ratFloor returns ⌊x⌋ (x must fit an int64).
func ratFloor(x *big.Rat) int64 {
	q := new(big.Int).Div(x.Num(), x.Denom()) // Euclidean: floor for positive denominators
	return q.Int64()
}

// ratCeil returns ⌈x⌉.
func ratCeil(x *big.Rat) int64 {
	return -ratFloor(new(big.Rat).Neg(x))
}

// quantize returns x rounded to a multiple of 1/den, up if up is set and
// down otherwise.
func quantize(x *big.Rat, den int64, up bool) *big.Rat {
	y := new(big.Rat).Mul(x, new(big.Rat).SetInt64(den))
	var k int64
	if up {
		k = ratCeil(y)
	} else {
		k = ratFloor(y)
	}
	return big.NewRat(k, den)
}

// ratMin and ratMax return one of their arguments (not a copy).
func ratMin(x, y *big.Rat) *big.Rat {
	if x.Cmp(y) <= 0 {
		return x
	}
	return y
}

func ratMax(x, y *big.Rat) *big.Rat {
	if x.Cmp(y) >= 0 {
		return x
	}
	return y
}

// fuzzOps decodes a fuzz input into bucket parameters and a sequence of
// (time step, cost, peek) operations. The parameters come from the first
// four bytes; the period choices include huge ones to exercise saturation.
type fuzzOp struct {
	dt   int64
	n    int64
	kind byte // 0 Take, 1 Check only, 2 Take after a backwards step
}

var fuzzPeriods = []time.Duration{1, 7, time.Millisecond, 333 * time.Millisecond, time.Second, 7 * time.Second, 100 * 365 * 24 * time.Hour, time.Duration(maxInt64)}

func decodeFuzz(data []byte) (capacity, rate int64, period time.Duration, maxWait time.Duration, ops []fuzzOp) {
	if len(data) < 4 {
		return 0, 0, 0, 0, nil
	}
	capacity = int64(data[0]%64) + 1
	rate = int64(data[1]%64) + 1
	if data[1] >= 250 {
		rate = maxInt64 - int64(data[1]-250)
	}
	period = fuzzPeriods[int(data[2])%len(fuzzPeriods)]
	maxWait = time.Duration(data[3]%8) * period / 4
	data = data[4:]
	for len(data) >= 3 && len(ops) < 512 {
		op := fuzzOp{n: int64(data[1]) % (capacity + 3), kind: data[2] % 3}
		// time steps from 0 to a few periods, in 1/16ths of a period
		op.dt = int64(data[0]) * (int64(period)/16 + 1)
		if op.dt < 0 || int64(period) > maxInt64/4 {
			op.dt = int64(data[0]) * int64(time.Hour)
		}
		ops = append(ops, op)
		data = data[3:]
	}
	return
}

// fuzzBucket runs ops against take/check and verifies invariants: no
// panic, Check equals Take, fields in range, and admitted units within
// capacity + rate·T/period for every interval T.
func fuzzBucket(t *testing.T, data []byte, limitOf func(capacity int64) int64,
	take, check func(now, n int64) Decision) {
	capacity, rate, period, _, ops := decodeFuzz(data)
	if ops == nil {
		return
	}
	limit := limitOf(capacity)
	now := t0
	var events []admitted
	for i, op := range ops {
		if op.kind == 2 {
			now -= op.dt / 2 // the clock stepped back
		} else if now <= maxInt64-op.dt {
			now += op.dt
		}
		c := check(now, op.n)
		if op.kind == 1 {
			continue
		}
		d := take(now, op.n)
		if c != d {
			t.Fatalf("op %d: Check = %+v, Take = %+v", i, c, d)
		}
		if d.Limit != limit || d.Remaining < 0 || d.Remaining > limit || d.ResetAfter < 0 ||
			(d.RetryAfter < 0 && d.RetryAfter != Never) {
			t.Fatalf("op %d: Take(%d, %d) = %+v out of range", i, now, op.n, d)
		}
		if op.n == 0 && (!d.Allowed || d.RetryAfter != 0) {
			t.Fatalf("op %d: peek = %+v", i, d)
		}
		if op.n > limit && (d.Allowed || d.RetryAfter != Never) {
			t.Fatalf("op %d: Take(n=%d > limit) = %+v", i, op.n, d)
		}
		if d.Allowed && op.n > 0 {
			// With the clock stepping back, time is clamped to the latest
			// admission: count the admission there.
			at := now
			if len(events) > 0 && at < events[len(events)-1].at {
				at = events[len(events)-1].at
			}
			events = append(events, admitted{at: at, n: op.n})
		}
	}
	if err := checkRateBound(events, limit, rate, int64(period), 0); err != nil {
		t.Fatal(err)
	}
}

func FuzzGCRA(f *testing.F) {
	f.Add([]byte{4, 0, 4, 0, 0, 6, 0, 0, 1, 0, 0, 1, 0, 48, 1, 0, 2, 1, 0, 16, 2, 0})
	f.Add([]byte{63, 255, 7, 0, 0, 64, 0, 1, 1, 0, 255, 1, 2})
	f.Fuzz(func(t *testing.T, data []byte) {
		capacity, rate, period, _, _ := decodeFuzz(data)
		p := GCRAParams{MaxBurst: capacity, Count: rate, Period: period}
		var s GCRA
		fuzzBucket(t, data, func(c int64) int64 { return c + 1 },
			func(now, n int64) Decision { return s.Take(now, p, n) },
			func(now, n int64) Decision { return s.Check(now, p, n) })
	})
}

func FuzzTokenBucket(f *testing.F) {
	f.Add([]byte{3, 2, 4, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 5, 1, 0, 2, 1, 0, 16, 2, 0})
	f.Add([]byte{1, 250, 6, 0, 0, 2, 0, 200, 1, 2, 255, 1, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		capacity, rate, period, _, _ := decodeFuzz(data)
		// MaxWait is left out here: a reservation acts later than it is
		// admitted, see FuzzTokenBucketReserve.
		p := TokenBucketParams{Capacity: capacity, Rate: rate, Period: period}
		var s TokenBucket
		fuzzBucket(t, data, func(c int64) int64 { return c },
			func(now, n int64) Decision { return s.Take(now, p, n) },
			func(now, n int64) Decision { return s.Check(now, p, n) })
	})
}

// FuzzTokenBucketReserve checks RESERVE: the units acting in any interval
// (admission time plus RetryAfter) stay within capacity + rate·T/period,
// and a reservation never waits longer than MaxWait.
func FuzzTokenBucketReserve(f *testing.F) {
	f.Add([]byte{2, 1, 4, 5, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 5, 2, 0, 0, 2, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		capacity, rate, period, maxWait, ops := decodeFuzz(data)
		if ops == nil || maxWait == 0 {
			return
		}
		p := TokenBucketParams{Capacity: capacity, Rate: rate, Period: period, MaxWait: maxWait}
		var s TokenBucket
		now := t0
		var acts []admitted
		for i, op := range ops {
			if now > maxInt64/2 {
				break
			}
			now += op.dt // monotonic: action times are compared across calls
			d := s.Take(now, p, op.n)
			if d.Allowed && d.RetryAfter > maxWait {
				t.Fatalf("op %d: admitted with RetryAfter %v > MaxWait %v", i, d.RetryAfter, maxWait)
			}
			if d.Allowed && op.n > 0 {
				acts = append(acts, admitted{at: now + int64(d.RetryAfter), n: op.n})
			}
		}
		// Action times are rounded up to whole ns: allow 1ns of slack.
		if err := checkRateBound(acts, capacity, rate, int64(period), 1); err != nil {
			t.Fatal(err)
		}
	})
}

func FuzzLeakyBucket(f *testing.F) {
	f.Add([]byte{3, 0, 4, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 8, 2, 0, 16, 2, 0})
	f.Add([]byte{64, 255, 7, 0, 0, 64, 0, 1, 1, 0, 255, 65, 2})
	f.Fuzz(func(t *testing.T, data []byte) {
		capacity, rate, period, _, _ := decodeFuzz(data)
		p := LeakyBucketParams{Capacity: capacity, Rate: rate, Period: period}
		var s LeakyBucket
		fuzzBucket(t, data, func(c int64) int64 { return c },
			func(now, n int64) Decision { return s.Take(now, p, n) },
			func(now, n int64) Decision { return s.Check(now, p, n) })
	})
}

// FuzzBucketDecode feeds arbitrary bytes to the three version-1 decoders: they must
// not panic, and what they accept must re-encode to the same bytes and be
// usable.
func FuzzBucketDecode(f *testing.F) {
	var g GCRA
	g.Take(t0, GCRAParams{MaxBurst: 4, Count: 1, Period: time.Second}, 1)
	b, _ := appendV1(&g, nil)
	f.Add(b)
	f.Add(make([]byte, 49))
	f.Fuzz(func(t *testing.T, data []byte) {
		if s, err := decodeGCRA(data); err == nil {
			if b, _ := appendV1(s, nil); string(b) != string(data) {
				t.Fatalf("gcra re-encoding differs")
			}
			s.Take(t0, GCRAParams{MaxBurst: 2, Count: 3, Period: time.Second}, 1)
		}
		if s, err := decodeTokenBucket(data); err == nil {
			if b, _ := appendV1(s, nil); string(b) != string(data) {
				t.Fatalf("token bucket re-encoding differs")
			}
			s.Take(t0, TokenBucketParams{Capacity: 2, Rate: 3, Period: time.Second, MaxWait: time.Second}, 2)
		}
		if s, err := decodeLeakyBucket(data); err == nil {
			if b, _ := appendV1(s, nil); string(b) != string(data) {
				t.Fatalf("leaky bucket re-encoding differs")
			}
			s.Take(t0, LeakyBucketParams{Capacity: 2, Rate: 3, Period: 2 * time.Second}, 1)
		}
	})
}

// TestCheckRateBound makes sure the bound checker used by the property
// tests and fuzz targets can fail.
func TestCheckRateBound(t *testing.T) {
	sec := int64(time.Second)
	ok := []admitted{{0, 2}, {sec, 1}, {2 * sec, 1}, {2 * sec, 0}}
	if err := checkRateBound(ok, 2, 1, sec, 0); err != nil {
		t.Errorf("within the bound: %v", err)
	}
	over := []admitted{{2 * sec, 1}, {0, 2}, {sec - 1, 1}} // 3 units in [0, 1s−1ns]
	if err := checkRateBound(over, 2, 1, sec, 0); err == nil {
		t.Errorf("3 units in under a second at capacity 2, 1/s: no error")
	}
	if err := checkRateBound(over, 2, 1, sec, 1); err != nil {
		t.Errorf("with 1ns of slack: %v", err)
	}
}
