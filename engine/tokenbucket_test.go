package engine

import (
	"errors"
	"math/big"
	"math/rand/v2"
	"testing"
	"time"
)

// step is one call in a step table: Take(t0+at, n) must return want.
type step struct {
	at   time.Duration
	n    int64
	want Decision
}

// taker is what the step runner needs of a state.
type taker func(now, n int64) Decision

func runSteps(t *testing.T, name string, take taker, steps []step) {
	t.Helper()
	for i, st := range steps {
		if got := take(t0+int64(st.at), st.n); got != st.want {
			t.Errorf("step %d: %s(t+%v, %d) = %+v, want %+v", i, name, st.at, st.n, got, st.want)
		}
	}
}

func tbTake(s *TokenBucket, p TokenBucketParams) taker {
	return func(now, n int64) Decision { return s.Take(now, p, n) }
}

const (
	ms = time.Millisecond
	s1 = time.Second
)

// TestTokenBucketExactRefill: 3 per second refills one token every
// 333 333 333⅓ ns, exactly.
func TestTokenBucketExactRefill(t *testing.T) {
	p := TokenBucketParams{Capacity: 3, Rate: 3, Period: s1}
	runSteps(t, "Take", tbTake(new(TokenBucket), p), []step{
		{0, 1, Decision{true, 3, 2, 0, 333333334}},
		{0, 2, Decision{true, 3, 0, 0, s1}},
		{0, 1, Decision{false, 3, 0, 333333334, s1}},
		{333333333, 1, Decision{false, 3, 0, 1, 666666667}},
		{333333334, 1, Decision{true, 3, 0, 0, s1}},
		{333333334, 0, Decision{true, 3, 0, 0, s1}},
		{s1 + 333333334, 0, Decision{true, 3, 3, 0, 0}},
		{2 * s1, 4, Decision{false, 3, 3, Never, 0}},
		{2 * s1, 3, Decision{true, 3, 0, 0, s1}},
	})
}

// TestTokenBucketNoDrift makes 10,000 calls 1 ms apart and checks the exact
// number admitted: the initial capacity plus every whole token refilled.
func TestTokenBucketNoDrift(t *testing.T) {
	for _, tc := range []struct {
		p    TokenBucketParams
		want int64
	}{
		{TokenBucketParams{Capacity: 3, Rate: 3, Period: s1}, 3 + 9999*3/1000},
		{TokenBucketParams{Capacity: 1, Rate: 1, Period: 7 * ms}, 1 + 9999/7},
		{TokenBucketParams{Capacity: 5, Rate: 7, Period: 3 * s1}, 5 + 9999*7/3000},
		{TokenBucketParams{Capacity: 2, Rate: 1000, Period: 1001 * ms}, 2 + 9999*1000/1001},
	} {
		var s TokenBucket
		var got int64
		for i := range int64(10000) {
			if s.Take(t0+i*int64(ms), tc.p, 1).Allowed {
				got++
			}
		}
		if got != tc.want {
			t.Errorf("%+v: admitted %d of 10000 calls 1ms apart, want %d", tc.p, got, tc.want)
		}
	}
}

// TestTokenBucketReserve: RESERVE admits into debt within MaxWait, later
// callers queue behind the debt, and a reservation beyond MaxWait is denied
// and consumes nothing.
func TestTokenBucketReserve(t *testing.T) {
	p := TokenBucketParams{Capacity: 2, Rate: 1, Period: s1, MaxWait: 3 * s1}
	runSteps(t, "Take", tbTake(new(TokenBucket), p), []step{
		{0, 2, Decision{true, 2, 0, 0, 2 * s1}},
		{0, 1, Decision{true, 2, 0, 1 * s1, 3 * s1}},
		{0, 1, Decision{true, 2, 0, 2 * s1, 4 * s1}},
		{0, 1, Decision{true, 2, 0, 3 * s1, 5 * s1}},
		{0, 1, Decision{false, 2, 0, 4 * s1, 5 * s1}}, // beyond MaxWait
		{0, 3, Decision{false, 2, 0, Never, 5 * s1}},  // more than capacity
		{0, 0, Decision{true, 2, 0, 0, 5 * s1}},       // a peek in debt
		{s1, 1, Decision{true, 2, 0, 3 * s1, 5 * s1}},
		{5 * s1, 1, Decision{true, 2, 0, 0, 2 * s1}},
		{5 * s1, 1, Decision{true, 2, 0, s1, 3 * s1}},
	})
	// Without RESERVE the same debt-free bucket just denies.
	p.MaxWait = 0
	runSteps(t, "Take", tbTake(new(TokenBucket), p), []step{
		{0, 2, Decision{true, 2, 0, 0, 2 * s1}},
		{0, 1, Decision{false, 2, 0, s1, 2 * s1}},
		{500 * ms, 2, Decision{false, 2, 0, 1500 * ms, 1500 * ms}},
	})
}

// TestTokenBucketClockBackwards: time going backwards is clamped on purpose
// and counts as no time elapsed.
func TestTokenBucketClockBackwards(t *testing.T) {
	p := TokenBucketParams{Capacity: 1, Rate: 1, Period: s1}
	runSteps(t, "Take", tbTake(new(TokenBucket), p), []step{
		{10 * s1, 1, Decision{true, 1, 0, 0, s1}},
		{5 * s1, 1, Decision{false, 1, 0, s1, s1}},
		{-time.Hour, 0, Decision{true, 1, 0, 0, s1}},
		{10*s1 + 500*ms, 1, Decision{false, 1, 0, 500 * ms, 500 * ms}},
		{11 * s1, 1, Decision{true, 1, 0, 0, s1}},
	})
}

// TestTokenBucketHuge: extreme parameters saturate, never wrap or panic.
func TestTokenBucketHuge(t *testing.T) {
	maxDur := time.Duration(maxInt64)
	p := TokenBucketParams{Capacity: maxInt64, Rate: maxInt64, Period: maxDur, MaxWait: maxDur}
	runSteps(t, "Take", tbTake(new(TokenBucket), p), []step{
		{0, maxInt64, Decision{true, maxInt64, 0, 0, maxDur}},
		{0, maxInt64, Decision{true, maxInt64, 0, maxDur, maxDur}}, // reserved a whole period ahead
		{0, 1, Decision{false, maxInt64, 0, maxDur, maxDur}},
		{0, 0, Decision{true, maxInt64, 0, 0, maxDur}},
	})
	century := 100 * 365 * 24 * time.Hour
	p = TokenBucketParams{Capacity: maxInt64, Rate: 1, Period: century, MaxWait: maxDur}
	var s TokenBucket
	for i := range 4 {
		d := s.Take(t0+int64(i), p, maxInt64)
		if d.ResetAfter < 0 || (d.RetryAfter < 0 && d.RetryAfter != Never) || d.Remaining < 0 {
			t.Errorf("step %d: %+v", i, d)
		}
	}
}

// TestTokenBucketParamChange: the token count is carried over and clamped
// to the new capacity.
func TestTokenBucketParamChange(t *testing.T) {
	var s TokenBucket
	p := TokenBucketParams{Capacity: 10, Rate: 10, Period: s1}
	runSteps(t, "Take", tbTake(&s, p), []step{{0, 2, Decision{true, 10, 8, 0, 200 * ms}}})
	p.Capacity = 5 // 8 tokens, clamped to 5: full
	runSteps(t, "Take", tbTake(&s, p), []step{
		{0, 0, Decision{true, 5, 5, 0, 0}},
		{0, 1, Decision{true, 5, 4, 0, 100 * ms}},
	})
	p.Period = 2 * s1 // 4 tokens kept, refilling at 5/s now
	runSteps(t, "Take", tbTake(&s, p), []step{
		{0, 0, Decision{true, 5, 4, 0, 200 * ms}},
		{0, 4, Decision{true, 5, 0, 0, s1}},
	})
	p.Capacity = 20 // 0 tokens, up to 20
	runSteps(t, "Take", tbTake(&s, p), []step{
		{0, 1, Decision{false, 20, 0, 200 * ms, 4 * s1}},
	})
}

// refTB is an independent model of the token bucket in exact rationals, in
// the style of x/time/rate: a (possibly negative) token count and the time
// it was last updated.
type refTB struct {
	p      TokenBucketParams
	tokens *big.Rat // nil: fresh (full)
	last   int64
}

func (r *refTB) take(now int64, p TokenBucketParams, n int64) refDecision {
	capR := new(big.Rat).SetInt64(p.Capacity)
	eff := now
	tokens := capR
	if r.tokens != nil {
		tokens = new(big.Rat).Set(r.tokens)
		if tokens.Cmp(new(big.Rat).SetInt64(r.p.Capacity)) < 0 && eff < r.last {
			eff = r.last
		}
		// New parameters apply as of the last update: tokens rounded down
		// to a multiple of 1/Period when Period changes, clamped.
		if p.Period != r.p.Period {
			tokens = quantize(tokens, int64(p.Period), false)
		}
		tokens = ratMin(tokens, capR)
		refill := big.NewRat(max(eff-r.last, 0), int64(p.Period))
		refill.Mul(refill, new(big.Rat).SetInt64(p.Rate))
		tokens = ratMin(new(big.Rat).Add(tokens, refill), capR)
	}
	perToken := big.NewRat(int64(p.Period), p.Rate) // ns per token
	nR := new(big.Rat).SetInt64(n)
	d := refDecision{retry: new(big.Rat)}
	after := tokens
	switch {
	case n == 0:
		d.allowed = true
	case n > p.Capacity:
		d.retry = nil
	case tokens.Cmp(nR) >= 0:
		d.allowed = true
		after = new(big.Rat).Sub(tokens, nR)
	default:
		wait := new(big.Rat).Sub(nR, tokens)
		wait.Mul(wait, perToken)
		d.retry = wait
		if p.MaxWait > 0 && wait.Cmp(ratNs(int64(p.MaxWait))) <= 0 {
			d.allowed = true
			after = new(big.Rat).Sub(tokens, nR)
		}
	}
	d.remaining = max(0, ratFloor(after))
	d.reset = new(big.Rat).Mul(new(big.Rat).Sub(capR, after), perToken)
	if d.allowed && n > 0 {
		r.p, r.tokens, r.last = p, after, eff
	}
	return d
}

func randTBParams(r *rand.Rand) TokenBucketParams {
	p := TokenBucketParams{
		Capacity: r.Int64N(20) + 1,
		Rate:     r.Int64N(10) + 1,
		Period:   randPeriods[r.IntN(len(randPeriods))],
	}
	if r.IntN(2) == 0 {
		p.MaxWait = time.Duration(r.Int64N(3*int64(p.Period)) + 1)
	}
	return p
}

// TestTokenBucketRandomized runs thousands of random steps (time advances,
// clock steps back, costs, RESERVE, parameter changes) against refTB.
func TestTokenBucketRandomized(t *testing.T) {
	for seed := range uint64(8) {
		r := rand.New(rand.NewPCG(seed, 3))
		var s TokenBucket
		var ref refTB
		p := randTBParams(r)
		now := t0
		for i := range 3000 {
			if r.IntN(50) == 0 {
				p = randTBParams(r)
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

// TestTokenBucketBound: the units admitted in any interval of length T
// never exceed capacity + rate·T/period; with RESERVE, the same holds for
// the times the callers act (admission + RetryAfter), and no reservation
// waits longer than MaxWait.
func TestTokenBucketBound(t *testing.T) {
	for seed := range uint64(20) {
		r := rand.New(rand.NewPCG(seed, 4))
		p := randTBParams(r)
		var s TokenBucket
		now := t0
		var admits, acts []admitted
		for range 2000 {
			now += r.Int64N(int64(p.Period)/p.Rate + 1)
			n := r.Int64N(p.Capacity + 2)
			d := s.Take(now, p, n)
			if d.Allowed && d.RetryAfter > p.MaxWait {
				t.Fatalf("seed %d: admitted with RetryAfter %v > MaxWait %v", seed, d.RetryAfter, p.MaxWait)
			}
			if d.Allowed && n > 0 {
				admits = append(admits, admitted{now, n})
				acts = append(acts, admitted{now + int64(d.RetryAfter), n})
			}
		}
		if p.MaxWait == 0 {
			if err := checkRateBound(admits, p.Capacity, p.Rate, int64(p.Period), 0); err != nil {
				t.Fatalf("seed %d %+v: %v", seed, p, err)
			}
		}
		if err := checkRateBound(acts, p.Capacity, p.Rate, int64(p.Period), 1); err != nil {
			t.Fatalf("seed %d %+v (action times): %v", seed, p, err)
		}
	}
}

func TestTokenBucketEncoding(t *testing.T) {
	var s TokenBucket
	p := TokenBucketParams{Capacity: 4, Rate: 3, Period: s1, MaxWait: 5 * s1}
	s.Take(t0, p, 4)
	s.Take(t0, p, 2) // into debt
	b, err := appendV1(&s, []byte("x"))
	if err != nil || string(b[:1]) != "x" || len(b) != 1+bucketEncodedLen {
		t.Fatalf("appendV1 = %q, %v", b, err)
	}
	got, err := decodeTokenBucket(b[1:])
	if err != nil || *got != s {
		t.Fatalf("decodeTokenBucket = %+v, %v, want %+v", got, err, s)
	}
	if d1, d2 := s.Check(t0+1e8, p, 1), got.Check(t0+1e8, p, 1); d1 != d2 {
		t.Errorf("decoded Check = %+v, want %+v", d2, d1)
	}
	var fresh TokenBucket
	fb, _ := appendV1(&fresh, nil)
	if got, err := decodeTokenBucket(fb); err != nil || *got != fresh {
		t.Errorf("fresh round trip = %+v, %v", got, err)
	}
	enc := b[1:]
	for i := range len(enc) {
		if _, err := decodeTokenBucket(enc[:i]); !errors.Is(err, ErrCorrupt) {
			t.Errorf("decodeTokenBucket(truncated to %d) = %v, want ErrCorrupt", i, err)
		}
	}
	if _, err := decodeTokenBucket(append(enc[:len(enc):len(enc)], 0)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("trailing byte: %v, want ErrCorrupt", err)
	}
	bad := append([]byte(nil), enc...)
	bad[0] = 0
	if _, err := decodeTokenBucket(bad); !errors.Is(err, ErrCorrupt) {
		t.Errorf("bad version: %v, want ErrCorrupt", err)
	}
	bad = append([]byte(nil), enc...)
	clear(bad[1:9]) // capacity 0 with a backlog
	if _, err := decodeTokenBucket(bad); !errors.Is(err, ErrCorrupt) {
		t.Errorf("zero capacity: %v, want ErrCorrupt", err)
	}
}

func BenchmarkTokenBucketTake(b *testing.B) {
	b.ReportAllocs()
	var s TokenBucket
	p := TokenBucketParams{Capacity: 100, Rate: 3, Period: time.Millisecond}
	now := t0
	for b.Loop() {
		now += 300_000
		s.Take(now, p, 1)
	}
}
