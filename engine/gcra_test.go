package engine

import (
	"errors"
	"math/big"
	"math/rand/v2"
	"testing"
	"time"
)

// cellSeconds rounds d to seconds the way redis-cell does: whole seconds,
// plus one if the millisecond part is non-zero.
func cellSeconds(d time.Duration) int64 {
	s := int64(d / time.Second)
	if (d%time.Second)/time.Millisecond > 0 {
		s++
	}
	return s
}

// cellReply formats d as redis-cell's CL.THROTTLE reply
// [limited, limit, remaining, retry_after_s, reset_after_s].
func cellReply(d Decision) [5]int64 {
	r := [5]int64{0, d.Limit, d.Remaining, -1, cellSeconds(d.ResetAfter)}
	if !d.Allowed {
		r[0] = 1
		if d.RetryAfter != Never {
			r[3] = cellSeconds(d.RetryAfter)
		}
	}
	return r
}

// gcraStep is one call in a step table: Take(t0+at, n) must answer want
// (redis-cell's reply) and, unless reset is -1, that exact ResetAfter.
type gcraStep struct {
	at    time.Duration
	n     int64
	want  [5]int64
	reset time.Duration
}

func runGCRA(t *testing.T, s *GCRA, p GCRAParams, steps []gcraStep) {
	t.Helper()
	for i, st := range steps {
		d := s.Take(t0+int64(st.at), p, st.n)
		if got := cellReply(d); got != st.want {
			t.Errorf("step %d: Take(t+%v, %d) = %v (%+v), want %v", i, st.at, st.n, got, d, st.want)
		}
		if st.reset >= 0 && d.ResetAfter != st.reset {
			t.Errorf("step %d: Take(t+%v, %d).ResetAfter = %v, want %v", i, st.at, st.n, d.ResetAfter, st.reset)
		}
	}
}

// TestGCRARedisCell ports redis-cell's it_rate_limits table (src/cell/mod.rs):
// max_burst 4, 1 per second.
func TestGCRARedisCell(t *testing.T) {
	p := GCRAParams{MaxBurst: 4, Count: 1, Period: time.Second}
	const ms = time.Millisecond
	runGCRA(t, new(GCRA), p, []gcraStep{
		// You can never make a request larger than the maximum.
		{0, 6, [5]int64{1, 5, 5, -1, 0}, 0},
		// Rate limit normal requests appropriately.
		{0, 1, [5]int64{0, 5, 4, -1, 1}, 1000 * ms},
		{0, 1, [5]int64{0, 5, 3, -1, 2}, 2000 * ms},
		{0, 1, [5]int64{0, 5, 2, -1, 3}, 3000 * ms},
		{0, 1, [5]int64{0, 5, 1, -1, 4}, 4000 * ms},
		{0, 1, [5]int64{0, 5, 0, -1, 5}, 5000 * ms},
		{0, 1, [5]int64{1, 5, 0, 1, 5}, 5000 * ms},
		{3000 * ms, 1, [5]int64{0, 5, 2, -1, 3}, 3000 * ms},
		{3100 * ms, 1, [5]int64{0, 5, 1, -1, 4}, 3900 * ms},
		{4000 * ms, 1, [5]int64{0, 5, 1, -1, 4}, 4000 * ms},
		{8000 * ms, 1, [5]int64{0, 5, 4, -1, 1}, 1000 * ms},
		{9500 * ms, 1, [5]int64{0, 5, 4, -1, 1}, 1000 * ms},
		// Zero-volume request just peeks at the state.
		{9500 * ms, 0, [5]int64{0, 5, 4, -1, 1}, 1000 * ms},
		// High-volume request uses up more of the limit.
		{9500 * ms, 2, [5]int64{0, 5, 2, -1, 3}, 3000 * ms},
		// Large requests cannot exceed limits.
		{9500 * ms, 5, [5]int64{1, 5, 2, 3, 3}, 3000 * ms},
	})
}

// TestGCRARedisCellRetryAfter checks the exact RetryAfter of redis-cell's
// denied rows (steps 6 and 14: 1s and 3s).
func TestGCRARedisCellRetryAfter(t *testing.T) {
	p := GCRAParams{MaxBurst: 4, Count: 1, Period: time.Second}
	var s GCRA
	s.Take(t0, p, 5)
	if d := s.Take(t0, p, 1); d.Allowed || d.RetryAfter != time.Second {
		t.Errorf("Take(t, 1) after the burst = %+v, want denied, RetryAfter 1s", d)
	}
	if d := s.Take(t0, p, 6); d.Allowed || d.RetryAfter != Never {
		t.Errorf("Take(t, 6) = %+v, want denied, RetryAfter Never", d)
	}
}

// TestGCRAReadme is the README example: CL.THROTTLE user123 15 30 60.
func TestGCRAReadme(t *testing.T) {
	runGCRA(t, new(GCRA), GCRAParams{MaxBurst: 15, Count: 30, Period: 60 * time.Second}, []gcraStep{
		{0, 1, [5]int64{0, 16, 15, -1, 2}, 2 * time.Second},
	})
}

// TestGCRAPeekFresh: a peek on a fresh key answers [0, limit, limit, -1, 0]
// and leaves the key fresh.
func TestGCRAPeekFresh(t *testing.T) {
	var s GCRA
	p := GCRAParams{MaxBurst: 9, Count: 3, Period: time.Second}
	d := s.Take(t0, p, 0)
	if want := (Decision{Allowed: true, Limit: 10, Remaining: 10}); d != want {
		t.Errorf("peek = %+v, want %+v", d, want)
	}
	if got := cellReply(d); got != [5]int64{0, 10, 10, -1, 0} {
		t.Errorf("peek reply = %v", got)
	}
	if s != (GCRA{}) {
		t.Errorf("peek changed the state: %+v", s)
	}
}

// TestGCRAHighRate is redis-cell issue 50: CL.THROTTLE a 6000 6000 1 must
// never report remaining > limit.
func TestGCRAHighRate(t *testing.T) {
	p := GCRAParams{MaxBurst: 6000, Count: 6000, Period: time.Second}
	var s GCRA
	if d := s.Take(t0, p, 1); d.Remaining != 6000 || d.Limit != 6001 {
		t.Fatalf("first Take = %+v, want remaining 6000 of 6001", d)
	}
	r := rand.New(rand.NewPCG(50, 50))
	now := t0
	for i := range 100000 {
		now += r.Int64N(int64(200 * time.Microsecond))
		n := r.Int64N(3)
		d := s.Take(now, p, n)
		if d.Remaining > d.Limit || d.Remaining < 0 {
			t.Fatalf("step %d: Take(%d, %d) = %+v: remaining out of [0, limit]", i, now-t0, n, d)
		}
	}
	// A long rest refills exactly to the limit, not beyond.
	if d := s.Take(now+int64(time.Hour), p, 0); d.Remaining != 6001 || d.ResetAfter != 0 {
		t.Errorf("peek after an hour = %+v, want remaining 6001, ResetAfter 0", d)
	}
}

// TestGCRAClockBackwards: time going backwards is clamped on purpose and
// counts as no time elapsed; it never grants anything.
func TestGCRAClockBackwards(t *testing.T) {
	p := GCRAParams{MaxBurst: 1, Count: 1, Period: time.Second}
	const s1 = time.Second
	runGCRA(t, new(GCRA), p, []gcraStep{
		{10 * s1, 2, [5]int64{0, 2, 0, -1, 2}, 2 * s1},
		{5 * s1, 1, [5]int64{1, 2, 0, 1, 2}, 2 * s1},   // as if at 10s
		{-s1, 0, [5]int64{0, 2, 0, -1, 2}, 2 * s1},     // still 10s
		{11 * s1, 1, [5]int64{0, 2, 0, -1, 2}, 2 * s1}, // one second later
		{12 * s1, 1, [5]int64{0, 2, 0, -1, 2}, 2 * s1},
	})
}

// TestGCRAHuge: huge periods and counts saturate, never wrap or panic.
func TestGCRAHuge(t *testing.T) {
	century := 100 * 365 * 24 * time.Hour
	var s GCRA
	p := GCRAParams{MaxBurst: maxInt64, Count: maxInt64, Period: century}
	d := s.Take(t0, p, maxInt64)
	if !d.Allowed || d.Limit != maxInt64 || d.Remaining != 0 || d.ResetAfter != century {
		t.Errorf("Take(max) = %+v, want allowed, limit max, remaining 0, ResetAfter 100y", d)
	}
	if d := s.Take(t0, p, 1); d.Allowed || d.RetryAfter != 1 {
		t.Errorf("Take(1) after = %+v, want denied, RetryAfter 1ns", d)
	}

	// One unit a century with a huge burst: the time to reset saturates.
	s = GCRA{}
	p = GCRAParams{MaxBurst: maxInt64 - 1, Count: 1, Period: century}
	if d := s.Take(t0, p, maxInt64); !d.Allowed || d.ResetAfter != time.Duration(maxInt64) || d.Remaining != 0 {
		t.Errorf("Take(max) one per century = %+v, want allowed, ResetAfter saturated", d)
	}
	if d := s.Take(t0, p, 1); d.Allowed || d.RetryAfter != century {
		t.Errorf("Take(1) = %+v, want denied, RetryAfter 100y", d)
	}
	if d := s.Take(t0+int64(century), p, 1); !d.Allowed || d.ResetAfter != time.Duration(maxInt64) {
		t.Errorf("Take(1) a century later = %+v, want allowed, ResetAfter saturated", d)
	}
	// The largest period and a clock at the end of time.
	s = GCRA{}
	p = GCRAParams{MaxBurst: 3, Count: 1, Period: time.Duration(maxInt64)}
	for i := range 5 {
		d := s.Take(maxInt64-int64(i), p, 1)
		if d.ResetAfter < 0 || (d.RetryAfter < 0 && d.RetryAfter != Never) || d.Remaining < 0 {
			t.Errorf("step %d: %+v", i, d)
		}
	}
}

// TestGCRATooBig: n > limit is denied with RetryAfter Never and changes
// nothing.
func TestGCRATooBig(t *testing.T) {
	var s GCRA
	p := GCRAParams{MaxBurst: 2, Count: 1, Period: time.Second}
	s.Take(t0, p, 1)
	before := s
	if d := s.Take(t0, p, 4); d.Allowed || d.RetryAfter != Never || d.Remaining != 2 {
		t.Errorf("Take(4) = %+v, want denied, Never, remaining 2", d)
	}
	if s != before {
		t.Errorf("denied Take changed the state")
	}
}

// TestGCRAParamChange: the TAT is carried over and clamped to the new DVT.
func TestGCRAParamChange(t *testing.T) {
	const s1 = time.Second
	var s GCRA
	p := GCRAParams{MaxBurst: 9, Count: 1, Period: s1}
	runGCRA(t, &s, p, []gcraStep{{0, 3, [5]int64{0, 10, 7, -1, 3}, 3 * s1}})
	// Twice the rate: TAT − now stays 3s, which is 6 emission intervals.
	p.Count = 2
	runGCRA(t, &s, p, []gcraStep{{0, 0, [5]int64{0, 10, 4, -1, 3}, 3 * s1}})
	// A smaller burst: TAT − now is clamped to the new DVT (2 units at
	// 2/s = 1s).
	p.MaxBurst = 1
	runGCRA(t, &s, p, []gcraStep{
		{0, 0, [5]int64{0, 2, 0, -1, 1}, s1},
		{0, 1, [5]int64{1, 2, 0, 1, 1}, s1},
		{s1 / 2, 1, [5]int64{0, 2, 0, -1, 1}, s1},
	})
	// A rate that does not divide the period: rounding up by < 1/3 ns.
	p = GCRAParams{MaxBurst: 9, Count: 3, Period: s1}
	d := s.Take(t0+int64(s1/2), p, 0)
	if d.ResetAfter != s1 || d.Remaining != 7 {
		t.Errorf("peek at 3/s = %+v, want ResetAfter 1s, remaining 7", d)
	}
}

// refGCRA is an independent model of GCRA in exact rationals, written the
// way redis-cell states it: a theoretical arrival time (tat), an emission
// interval EI = period/count and a tolerance DVT = limit·EI.
type refGCRA struct {
	p    GCRAParams
	tat  *big.Rat // nil: fresh
	last int64
}

type refDecision struct {
	allowed   bool
	remaining int64
	retry     *big.Rat // nil: Never
	reset     *big.Rat
}

func (r *refGCRA) take(now int64, p GCRAParams, n int64) refDecision {
	ei := big.NewRat(int64(p.Period), p.Count)
	limit := p.MaxBurst + 1
	dvt := new(big.Rat).Mul(ei, new(big.Rat).SetInt64(limit))
	eff := now
	ttl := new(big.Rat)
	if r.tat != nil {
		// New parameters apply as of the last update: TAT − last is kept
		// (rounded up to 1/count ns) and clamped to the new DVT there.
		if eff < r.last {
			eff = r.last
		}
		ttl = new(big.Rat).Sub(r.tat, ratNs(r.last))
		if p.Count != r.p.Count {
			ttl = quantize(ttl, p.Count, true)
		}
		ttl = new(big.Rat).Sub(ratMin(ttl, dvt), ratNs(eff-r.last))
		ttl = ratMax(new(big.Rat), ttl)
	}
	inc := new(big.Rat).Mul(ei, new(big.Rat).SetInt64(n))
	newTTL := new(big.Rat).Add(ttl, inc)
	d := refDecision{retry: new(big.Rat)}
	after := ttl
	switch {
	case n == 0:
		d.allowed = true
	case n > limit:
		d.retry = nil
	case newTTL.Cmp(dvt) <= 0:
		d.allowed = true
		after = newTTL
	default:
		d.retry = new(big.Rat).Sub(newTTL, dvt)
	}
	next := new(big.Rat).Sub(dvt, after)
	d.remaining = max(0, ratFloor(new(big.Rat).Quo(next, ei)))
	d.reset = after
	if d.allowed && n > 0 {
		r.p, r.last = p, eff
		r.tat = new(big.Rat).Add(ratNs(eff), after)
	}
	return d
}

// compareRef checks a Decision against the reference: Allowed and
// Remaining exactly, durations rounded up to whole ns.
func compareRef(t *testing.T, step int, call string, d Decision, want refDecision) {
	t.Helper()
	retryOK := checkDur(d.RetryAfter, want.retry)
	if d.Allowed != want.allowed || d.Remaining != want.remaining || !retryOK || !checkDur(d.ResetAfter, want.reset) {
		t.Fatalf("step %d: %s = %+v, want allowed %v remaining %d retry %v reset %v",
			step, call, d, want.allowed, want.remaining, ratString(want.retry), ratString(want.reset))
	}
}

func ratString(x *big.Rat) string {
	if x == nil {
		return "Never"
	}
	return x.FloatString(3) + "ns"
}

// randPeriod picks periods that make the emission interval fractional.
var randPeriods = []time.Duration{time.Second, 7 * time.Millisecond, 333 * time.Millisecond, 1000003, 60 * time.Second, 3}

// TestGCRARandomized runs thousands of random steps (time advances, clock
// steps back, costs, parameter changes) against refGCRA.
func TestGCRARandomized(t *testing.T) {
	for seed := range uint64(8) {
		r := rand.New(rand.NewPCG(seed, 1))
		var s GCRA
		var ref refGCRA
		p := randGCRAParams(r)
		now := t0
		for i := range 3000 {
			if r.IntN(50) == 0 {
				p = randGCRAParams(r)
			}
			switch r.IntN(20) {
			case 0:
				now -= r.Int64N(int64(p.Period)) // the clock steps back
			default:
				now += r.Int64N(int64(p.Period)/max(p.Count, 1)*3 + 1)
			}
			n := r.Int64N(p.MaxBurst + 3)
			c := s.Check(now, p, n)
			d := s.Take(now, p, n)
			if c != d {
				t.Fatalf("seed %d step %d: Check = %+v, Take = %+v", seed, i, c, d)
			}
			compareRef(t, i, "Take", d, ref.take(now, p, n))
		}
	}
}

func randGCRAParams(r *rand.Rand) GCRAParams {
	return GCRAParams{
		MaxBurst: r.Int64N(20) + 1,
		Count:    r.Int64N(10) + 1,
		Period:   randPeriods[r.IntN(len(randPeriods))],
	}
}

// TestGCRABound: over random sequences, the units admitted in any interval
// of length T never exceed limit + count·T/period.
func TestGCRABound(t *testing.T) {
	for seed := range uint64(20) {
		r := rand.New(rand.NewPCG(seed, 2))
		p := randGCRAParams(r)
		var s GCRA
		now := t0
		var events []admitted
		for range 2000 {
			now += r.Int64N(int64(p.Period)/p.Count + 1)
			n := r.Int64N(p.MaxBurst + 2)
			if d := s.Take(now, p, n); d.Allowed && n > 0 {
				events = append(events, admitted{now, n})
			}
		}
		if err := checkRateBound(events, p.MaxBurst+1, p.Count, int64(p.Period), 0); err != nil {
			t.Fatalf("seed %d %+v: %v", seed, p, err)
		}
	}
}

func TestGCRAEncoding(t *testing.T) {
	var s GCRA
	s.Take(t0, GCRAParams{MaxBurst: 4, Count: 3, Period: time.Second}, 2)
	b, err := appendV1(&s, []byte("prefix"))
	if err != nil || string(b[:6]) != "prefix" || len(b) != 6+bucketEncodedLen {
		t.Fatalf("appendV1 = %q, %v", b, err)
	}
	got, err := decodeGCRA(b[6:])
	if err != nil || *got != s {
		t.Fatalf("decodeGCRA = %+v, %v, want %+v", got, err, s)
	}
	// The round trip keeps behaving the same.
	if d1, d2 := s.Check(t0+1e8, s.p, 1), got.Check(t0+1e8, s.p, 1); d1 != d2 {
		t.Errorf("decoded Check = %+v, want %+v", d2, d1)
	}
	// A fresh state round-trips too.
	var fresh GCRA
	fb, _ := appendV1(&fresh, nil)
	if got, err := decodeGCRA(fb); err != nil || *got != fresh {
		t.Errorf("fresh round trip = %+v, %v", got, err)
	}
	enc := b[6:]
	for i := range len(enc) {
		if _, err := decodeGCRA(enc[:i]); !errors.Is(err, ErrCorrupt) {
			t.Errorf("decodeGCRA(truncated to %d) = %v, want ErrCorrupt", i, err)
		}
	}
	if _, err := decodeGCRA(append(enc[:len(enc):len(enc)], 0)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("trailing byte: %v, want ErrCorrupt", err)
	}
	bad := append([]byte(nil), enc...)
	bad[0] = 99
	if _, err := decodeGCRA(bad); !errors.Is(err, ErrCorrupt) {
		t.Errorf("bad version: %v, want ErrCorrupt", err)
	}
	bad = append([]byte(nil), enc...)
	clear(bad[17:25]) // period 0 with a backlog
	if _, err := decodeGCRA(bad); !errors.Is(err, ErrCorrupt) {
		t.Errorf("zero period: %v, want ErrCorrupt", err)
	}
}

func BenchmarkGCRATake(b *testing.B) {
	b.ReportAllocs()
	var s GCRA
	p := GCRAParams{MaxBurst: 100, Count: 1000, Period: time.Second}
	now := t0
	for b.Loop() {
		now += 500_000
		s.Take(now, p, 1)
	}
}
