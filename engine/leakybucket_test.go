package engine

import (
	"errors"
	"math/big"
	"math/rand/v2"
	"testing"
	"time"
)

func lbTake(s *LeakyBucket, p LeakyBucketParams) taker {
	return func(now, n int64) Decision { return s.Take(now, p, n) }
}

// TestLeakyBucketQueue walks the queue semantics: each admitted request
// waits for the level before it to drain; overflow is denied until it fits.
func TestLeakyBucketQueue(t *testing.T) {
	p := LeakyBucketParams{Capacity: 3, Rate: 1, Period: s1}
	runSteps(t, "Take", lbTake(new(LeakyBucket), p), []step{
		{0, 1, Decision{true, 3, 2, 0, s1}},
		{0, 1, Decision{true, 3, 1, s1, 2 * s1}},
		{0, 1, Decision{true, 3, 0, 2 * s1, 3 * s1}},
		{0, 1, Decision{false, 3, 0, s1, 3 * s1}},
		{500 * ms, 1, Decision{false, 3, 0, 500 * ms, 2500 * ms}}, // level 2.5 counts as 3
		{500 * ms, 0, Decision{true, 3, 0, 0, 2500 * ms}},
		{s1, 1, Decision{true, 3, 0, 2 * s1, 3 * s1}},
		{s1, 4, Decision{false, 3, 0, Never, 3 * s1}},
		{3500 * ms, 2, Decision{true, 3, 0, 500 * ms, 2500 * ms}},
		{10 * s1, 0, Decision{true, 3, 3, 0, 0}},
	})
}

// TestLeakyBucketExactDrain: 3 per second drains one unit every
// 333 333 333⅓ ns, exactly, and 10,000 calls 1 ms apart admit exactly the
// capacity plus every whole unit drained.
func TestLeakyBucketExactDrain(t *testing.T) {
	p := LeakyBucketParams{Capacity: 3, Rate: 3, Period: s1}
	runSteps(t, "Take", lbTake(new(LeakyBucket), p), []step{
		{0, 3, Decision{true, 3, 0, 0, s1}},
		{333333333, 1, Decision{false, 3, 0, 1, 666666667}},
		{333333334, 1, Decision{true, 3, 0, 666666666, s1}},
	})
	var s LeakyBucket
	var got int64
	for i := range int64(10000) {
		if s.Take(t0+i*int64(ms), p, 1).Allowed {
			got++
		}
	}
	if want := int64(3 + 9999*3/1000); got != want {
		t.Errorf("admitted %d of 10000 calls 1ms apart, want %d", got, want)
	}
}

// TestLeakyBucketClockBackwards: time going backwards is clamped on purpose
// and counts as no time elapsed.
func TestLeakyBucketClockBackwards(t *testing.T) {
	p := LeakyBucketParams{Capacity: 1, Rate: 1, Period: s1}
	runSteps(t, "Take", lbTake(new(LeakyBucket), p), []step{
		{10 * s1, 1, Decision{true, 1, 0, 0, s1}},
		{5 * s1, 1, Decision{false, 1, 0, s1, s1}},
		{10*s1 + 500*ms, 1, Decision{false, 1, 0, 500 * ms, 500 * ms}},
		{11 * s1, 1, Decision{true, 1, 0, 0, s1}},
	})
}

// TestLeakyBucketHuge: extreme parameters saturate, never wrap or panic.
func TestLeakyBucketHuge(t *testing.T) {
	maxDur := time.Duration(maxInt64)
	p := LeakyBucketParams{Capacity: maxInt64, Rate: 1, Period: maxDur}
	runSteps(t, "Take", lbTake(new(LeakyBucket), p), []step{
		{0, maxInt64 - 1, Decision{true, maxInt64, 1, 0, maxDur}},
		{0, 1, Decision{true, maxInt64, 0, maxDur, maxDur}},
		{0, 1, Decision{false, maxInt64, 0, maxDur, maxDur}},
		{0, maxInt64, Decision{false, maxInt64, 0, maxDur, maxDur}},
	})
	p = LeakyBucketParams{Capacity: maxInt64, Rate: maxInt64, Period: 1}
	runSteps(t, "Take", lbTake(new(LeakyBucket), p), []step{
		{0, maxInt64, Decision{true, maxInt64, 0, 0, 1}},
		{1, maxInt64, Decision{true, maxInt64, 0, 0, 1}},
	})
}

// TestLeakyBucketParamChange: the level is carried over and clamped to the
// new capacity.
func TestLeakyBucketParamChange(t *testing.T) {
	var s LeakyBucket
	p := LeakyBucketParams{Capacity: 10, Rate: 10, Period: s1}
	runSteps(t, "Take", lbTake(&s, p), []step{{0, 6, Decision{true, 10, 4, 0, 600 * ms}}})
	p.Capacity = 4 // level 6, clamped to 4
	runSteps(t, "Take", lbTake(&s, p), []step{
		{0, 0, Decision{true, 4, 0, 0, 400 * ms}},
		{0, 1, Decision{false, 4, 0, 100 * ms, 400 * ms}},
	})
	p.Period = 2 * s1 // level 4 kept, draining at 5/s
	runSteps(t, "Take", lbTake(&s, p), []step{
		{0, 0, Decision{true, 4, 0, 0, 800 * ms}},
		{200 * ms, 1, Decision{true, 4, 0, 600 * ms, 800 * ms}},
	})
}

// refLB is an independent model of the leaky bucket in exact rationals: a
// level (units queued) and the time it was last updated.
type refLB struct {
	p     LeakyBucketParams
	level *big.Rat // nil: fresh (empty)
	last  int64
}

func (r *refLB) take(now int64, p LeakyBucketParams, n int64) refDecision {
	capR := new(big.Rat).SetInt64(p.Capacity)
	eff := now
	level := new(big.Rat)
	if r.level != nil {
		level.Set(r.level)
		if level.Sign() > 0 && eff < r.last {
			eff = r.last
		}
		// New parameters apply as of the last update: the level rounded up
		// to a multiple of 1/Period when Period changes, clamped.
		if p.Period != r.p.Period {
			level = quantize(level, int64(p.Period), true)
		}
		level = ratMin(level, capR)
		drained := big.NewRat(max(eff-r.last, 0), int64(p.Period))
		drained.Mul(drained, new(big.Rat).SetInt64(p.Rate))
		level = ratMax(new(big.Rat), new(big.Rat).Sub(level, drained))
	}
	perUnit := big.NewRat(int64(p.Period), p.Rate) // ns per unit
	nR := new(big.Rat).SetInt64(n)
	d := refDecision{retry: new(big.Rat)}
	after := level
	switch sum := new(big.Rat).Add(level, nR); {
	case n == 0:
		d.allowed = true
	case n > p.Capacity:
		d.retry = nil
	case sum.Cmp(capR) <= 0:
		d.allowed = true
		d.retry = new(big.Rat).Mul(level, perUnit)
		after = sum
	default:
		d.retry = new(big.Rat).Mul(new(big.Rat).Sub(sum, capR), perUnit)
	}
	d.remaining = p.Capacity - ratCeil(after)
	d.reset = new(big.Rat).Mul(after, perUnit)
	if d.allowed && n > 0 {
		r.p, r.level, r.last = p, after, eff
	}
	return d
}

func randLBParams(r *rand.Rand) LeakyBucketParams {
	return LeakyBucketParams{
		Capacity: r.Int64N(20) + 1,
		Rate:     r.Int64N(10) + 1,
		Period:   randPeriods[r.IntN(len(randPeriods))],
	}
}

// TestLeakyBucketRandomized runs thousands of random steps (time advances,
// clock steps back, costs, parameter changes) against refLB.
func TestLeakyBucketRandomized(t *testing.T) {
	for seed := range uint64(8) {
		r := rand.New(rand.NewPCG(seed, 5))
		var s LeakyBucket
		var ref refLB
		p := randLBParams(r)
		now := t0
		for i := range 3000 {
			if r.IntN(50) == 0 {
				p = randLBParams(r)
			}
			if r.IntN(20) == 0 {
				now -= r.Int64N(int64(p.Period))
			} else {
				now += r.Int64N(int64(p.Period)/p.Rate*3 + 1)
			}
			n := r.Int64N(p.Capacity + 3)
			c := s.Check(now, p, n)
			d := s.Take(now, p, n)
			if c != d {
				t.Fatalf("seed %d step %d: Check = %+v, Take = %+v", seed, i, c, d)
			}
			compareRef(t, i, "Take", d, ref.take(now, p, n))
		}
	}
}

// TestLeakyBucketBound: the units admitted in any interval of length T
// never exceed capacity + rate·T/period, and neither do the units whose
// turn (admission + RetryAfter) falls in it: admitted work leaves at the
// constant rate.
func TestLeakyBucketBound(t *testing.T) {
	for seed := range uint64(20) {
		r := rand.New(rand.NewPCG(seed, 6))
		p := randLBParams(r)
		var s LeakyBucket
		now := t0
		var admits, acts []admitted
		for range 2000 {
			now += r.Int64N(int64(p.Period)/p.Rate + 1)
			n := r.Int64N(p.Capacity + 2)
			if d := s.Take(now, p, n); d.Allowed && n > 0 {
				admits = append(admits, admitted{now, n})
				acts = append(acts, admitted{now + int64(d.RetryAfter), n})
			}
		}
		if err := checkRateBound(admits, p.Capacity, p.Rate, int64(p.Period), 0); err != nil {
			t.Fatalf("seed %d %+v: %v", seed, p, err)
		}
		if err := checkRateBound(acts, p.Capacity, p.Rate, int64(p.Period), 1); err != nil {
			t.Fatalf("seed %d %+v (turns): %v", seed, p, err)
		}
	}
}

func TestLeakyBucketEncoding(t *testing.T) {
	var s LeakyBucket
	p := LeakyBucketParams{Capacity: 4, Rate: 3, Period: s1}
	s.Take(t0, p, 3)
	b, err := appendV1(&s, []byte("x"))
	if err != nil || string(b[:1]) != "x" || len(b) != 1+bucketEncodedLen {
		t.Fatalf("appendV1 = %q, %v", b, err)
	}
	got, err := decodeLeakyBucket(b[1:])
	if err != nil || *got != s {
		t.Fatalf("decodeLeakyBucket = %+v, %v, want %+v", got, err, s)
	}
	if d1, d2 := s.Check(t0+1e8, p, 1), got.Check(t0+1e8, p, 1); d1 != d2 {
		t.Errorf("decoded Check = %+v, want %+v", d2, d1)
	}
	var fresh LeakyBucket
	fb, _ := appendV1(&fresh, nil)
	if got, err := decodeLeakyBucket(fb); err != nil || *got != fresh {
		t.Errorf("fresh round trip = %+v, %v", got, err)
	}
	enc := b[1:]
	for i := range len(enc) {
		if _, err := decodeLeakyBucket(enc[:i]); !errors.Is(err, ErrCorrupt) {
			t.Errorf("decodeLeakyBucket(truncated to %d) = %v, want ErrCorrupt", i, err)
		}
	}
	if _, err := decodeLeakyBucket(append(enc[:len(enc):len(enc)], 0)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("trailing byte: %v, want ErrCorrupt", err)
	}
	bad := append([]byte(nil), enc...)
	bad[0] = 2
	if _, err := decodeLeakyBucket(bad); !errors.Is(err, ErrCorrupt) {
		t.Errorf("bad version: %v, want ErrCorrupt", err)
	}
	bad = append([]byte(nil), enc...)
	bad[16] = 0x80 // negative rate
	if _, err := decodeLeakyBucket(bad); !errors.Is(err, ErrCorrupt) {
		t.Errorf("negative rate: %v, want ErrCorrupt", err)
	}
}

func BenchmarkLeakyBucketTake(b *testing.B) {
	b.ReportAllocs()
	var s LeakyBucket
	p := LeakyBucketParams{Capacity: 100, Rate: 3, Period: time.Millisecond}
	now := t0
	for b.Loop() {
		now += 300_000
		s.Take(now, p, 1)
	}
}
