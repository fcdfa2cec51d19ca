package engine

import (
	"bytes"
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"testing"
	"time"
)

// t0 is an instant aligned to every window of a whole number of seconds up
// to 100s, like the windows of the tables below.
const wt0 = int64(1_700_000_000) * int64(time.Second)

func wat(d time.Duration) int64 { return wt0 + int64(d) }

func fmtWT(t int64) string { return "t0+" + time.Duration(t-wt0).String() }

func fmtWD(d Decision) string {
	return fmt.Sprintf("{ok=%v limit=%d rem=%d retry=%v reset=%v}", d.Allowed, d.Limit, d.Remaining, d.RetryAfter, d.ResetAfter)
}

// windowStep is one call of a step table: Take (or Check) at t of n units,
// and the decision it must return. p overrides the table's params.
type windowStep struct {
	t     int64
	n     int64
	ok    bool
	rem   int64
	retry time.Duration
	reset time.Duration
	check bool         // call Check, which must change nothing
	p     WindowParams // zero: the table's
}

func runWindowSteps(t *testing.T, p WindowParams, steps []windowStep) {
	t.Helper()
	var s Window
	for i, st := range steps {
		q := p
		if st.p != (WindowParams{}) {
			q = st.p
		}
		before, _ := appendV1(&s, nil)
		name := "Take"
		var got Decision
		if st.check {
			name = "Check"
			got = s.Check(st.t, q, st.n)
		} else {
			got = s.Take(st.t, q, st.n)
		}
		want := Decision{Allowed: st.ok, Limit: q.Limit, Remaining: st.rem, RetryAfter: st.retry, ResetAfter: st.reset}
		if got != want {
			t.Errorf("step %d: %s(%s, %d) = %s, want %s", i, name, fmtWT(st.t), st.n, fmtWD(got), fmtWD(want))
		}
		after, _ := appendV1(&s, nil)
		if (st.check || !got.Allowed || st.n == 0) && !bytes.Equal(before, after) {
			t.Errorf("step %d: %s(%s, %d) changed the state", i, name, fmtWT(st.t), st.n)
		}
	}
}

func TestWindowFixed(t *testing.T) {
	p := WindowParams{Limit: 3, Window: time.Second, Mode: WindowFixed}
	runWindowSteps(t, p, []windowStep{
		0:  {t: wat(0), n: 0, ok: true, rem: 3},                     // peek on a fresh key
		1:  {t: wat(0), n: 1, ok: true, rem: 2, reset: time.Second}, // window [t0, t0+1s)
		2:  {t: wat(100 * time.Millisecond), n: 2, ok: true, rem: 0, reset: 900 * time.Millisecond},
		3:  {t: wat(500 * time.Millisecond), n: 1, rem: 0, retry: 500 * time.Millisecond, reset: 500 * time.Millisecond},
		4:  {t: wat(500 * time.Millisecond), n: 0, ok: true, rem: 0, reset: 500 * time.Millisecond},
		5:  {t: wat(600 * time.Millisecond), n: 4, rem: 0, retry: Never, reset: 400 * time.Millisecond}, // n > limit
		6:  {t: wat(time.Second - 1), n: 1, rem: 0, retry: 1, reset: 1},
		7:  {t: wat(time.Second), n: 3, ok: true, rem: 0, reset: time.Second}, // the next window starts empty
		8:  {t: wat(1500 * time.Millisecond), n: 1, check: true, rem: 0, retry: 500 * time.Millisecond, reset: 500 * time.Millisecond},
		9:  {t: wat(2 * time.Second), n: 0, ok: true, rem: 3},                                                     // fresh again
		10: {t: wat(2500 * time.Millisecond), n: 1, check: true, ok: true, rem: 2, reset: 500 * time.Millisecond}, // Check admits, changes nothing
		11: {t: wat(2500 * time.Millisecond), n: 0, ok: true, rem: 3},
		12: {t: wat(3 * time.Second), n: 4, rem: 3, retry: Never}, // fresh and n > limit: nothing to reset
	})
}

func TestWindowFixedParamsChange(t *testing.T) {
	p := WindowParams{Limit: 5, Window: 10 * time.Second, Mode: WindowFixed}
	runWindowSteps(t, p, []windowStep{
		0: {t: wat(1 * time.Second), n: 4, ok: true, rem: 1, reset: 9 * time.Second},
		// Limit lowered: the 4 units are clamped to the new limit 2.
		1: {t: wat(2 * time.Second), n: 1, p: WindowParams{Limit: 2, Window: 10 * time.Second, Mode: WindowFixed},
			rem: 0, retry: 8 * time.Second, reset: 8 * time.Second},
		// Limit raised: the 4 units still count.
		2: {t: wat(3 * time.Second), n: 4, p: WindowParams{Limit: 8, Window: 10 * time.Second, Mode: WindowFixed},
			ok: true, rem: 0, reset: 7 * time.Second},
		// Window shortened to 1s: the 8 units count as admitted at the last
		// admission, in [t0+3s, t0+4s).
		3: {t: wat(3500 * time.Millisecond), n: 1, p: WindowParams{Limit: 8, Window: time.Second, Mode: WindowFixed},
			rem: 0, retry: 500 * time.Millisecond, reset: 500 * time.Millisecond},
		4: {t: wat(4 * time.Second), n: 1, p: WindowParams{Limit: 8, Window: time.Second, Mode: WindowFixed},
			ok: true, rem: 7, reset: time.Second},
		// Window back to 10s: the unit admitted at t0+4s counts in [t0, t0+10s).
		5: {t: wat(6 * time.Second), n: 0, p: WindowParams{Limit: 8, Window: 10 * time.Second, Mode: WindowFixed},
			ok: true, rem: 7, reset: 4 * time.Second},
		// Shortened again, but first seen late: the unit of t0+4s is gone.
		6: {t: wat(5500 * time.Millisecond), n: 8, p: WindowParams{Limit: 8, Window: time.Second, Mode: WindowFixed},
			ok: true, rem: 0, reset: 500 * time.Millisecond},
	})
}

// TestWindowClockBackwards: time going backwards is clamped on purpose. A
// call earlier than the last admission is answered as if made at that
// instant: the earlier window is not revisited, and no unit that had left
// comes back.
func TestWindowClockBackwards(t *testing.T) {
	runWindowSteps(t, WindowParams{Limit: 3, Window: time.Second, Mode: WindowFixed}, []windowStep{
		0: {t: wat(3 * time.Second), n: 1, ok: true, rem: 2, reset: time.Second},
		// Unclamped, t0+2.5s would be an empty window with reset 500ms.
		1: {t: wat(2500 * time.Millisecond), n: 1, ok: true, rem: 1, reset: time.Second},
		2: {t: wat(3500 * time.Millisecond), n: 1, ok: true, rem: 0, reset: 500 * time.Millisecond},
		3: {t: wat(time.Second), n: 1, rem: 0, retry: 500 * time.Millisecond, reset: 500 * time.Millisecond},
		4: {t: -5, n: 0, ok: true, rem: 0, reset: 500 * time.Millisecond},
	})
	runWindowSteps(t, WindowParams{Limit: 2, Window: time.Second, Mode: WindowLog}, []windowStep{
		0: {t: wat(0), n: 1, ok: true, rem: 1, reset: time.Second},
		1: {t: wat(1500 * time.Millisecond), n: 1, ok: true, rem: 1, reset: time.Second},
		// At t0+900ms the first unit would be back inside the window.
		2: {t: wat(900 * time.Millisecond), n: 0, ok: true, rem: 1, reset: time.Second},
		3: {t: wat(900 * time.Millisecond), n: 1, ok: true, rem: 0, reset: time.Second},
		4: {t: wat(1600 * time.Millisecond), n: 1, rem: 0, retry: 900 * time.Millisecond, reset: 900 * time.Millisecond},
	})
	runWindowSteps(t, WindowParams{Limit: 10, Window: 10 * time.Second, Mode: WindowSliding}, []windowStep{
		0: {t: wat(15 * time.Second), n: 10, ok: true, rem: 0, reset: 15 * time.Second},
		// The previous window's weight does not grow back when the clock does.
		1: {t: wat(12 * time.Second), n: 0, ok: true, rem: 0, reset: 15 * time.Second},
		2: {t: wat(25 * time.Second), n: 0, ok: true, rem: 5, reset: 5 * time.Second},
	})
}

func TestWindowSliding(t *testing.T) {
	p := WindowParams{Limit: 10, Window: 10 * time.Second, Mode: WindowSliding}
	runWindowSteps(t, p, []windowStep{
		0: {t: wat(5 * time.Second), n: 6, ok: true, rem: 4, reset: 15 * time.Second},
		1: {t: wat(9 * time.Second), n: 4, ok: true, rem: 0, reset: 11 * time.Second},
		// Full: this window cannot take 1 more; in the next one the
		// estimate is 10×(10s-e)/10s and fits 1 more once e >= 1s.
		2: {t: wat(9 * time.Second), n: 1, rem: 0, retry: 2 * time.Second, reset: 11 * time.Second},
		3: {t: wat(9 * time.Second), n: 11, rem: 0, retry: Never, reset: 11 * time.Second},
		// At t0+12s the previous 10 weigh 10×0.8 = 8.
		4: {t: wat(12 * time.Second), n: 0, ok: true, rem: 2, reset: 8 * time.Second},
		5: {t: wat(12 * time.Second), n: 3, rem: 2, retry: time.Second, reset: 8 * time.Second},
		6: {t: wat(13 * time.Second), n: 3, ok: true, rem: 0, reset: 17 * time.Second},
		// 10×0.65 + 3 = 9.5: remaining floor(0.5) = 0; 1 fits at 10×0.6 + 3.
		7: {t: wat(13500 * time.Millisecond), n: 1, rem: 0, retry: 500 * time.Millisecond, reset: 16500 * time.Millisecond},
		8: {t: wat(14 * time.Second), n: 1, ok: true, rem: 0, reset: 16 * time.Second},
		// 4 now, 10×(1-e) before: 7 fit only in the next window, where the
		// 4 weigh 4×(1-e') <= 3 from e' = 2.5s.
		9:  {t: wat(19 * time.Second), n: 7, rem: 5, retry: 3500 * time.Millisecond, reset: 11 * time.Second},
		10: {t: wat(22500 * time.Millisecond), n: 7, ok: true, rem: 0, reset: 17500 * time.Millisecond},
		// Long idle: fresh.
		11: {t: wat(40 * time.Second), n: 0, ok: true, rem: 10},
	})
}

// TestWindowSlidingRounding: the estimate is exact, and a denied RetryAfter
// is the first whole nanosecond at which the request fits.
func TestWindowSlidingRounding(t *testing.T) {
	p := WindowParams{Limit: 3, Window: time.Second, Mode: WindowSliding}
	runWindowSteps(t, p, []windowStep{
		0: {t: wat(0), n: 3, ok: true, rem: 0, reset: 2 * time.Second},
		// In [t0+1s, t0+2s) the 3 weigh 3×(1s-e)/1s; 1 fits once that is
		// <= 2, at e = ⌈1s/3⌉ = 333333334ns (3×666666666 <= 2e9 < 3×666666667).
		1: {t: wat(time.Second), n: 1, rem: 0, retry: 333333334, reset: time.Second},
		2: {t: wat(time.Second + 333333333), n: 1, rem: 0, retry: 1, reset: 666666667},
		3: {t: wat(time.Second + 333333333), n: 0, ok: true, rem: 0, reset: 666666667},
		4: {t: wat(time.Second + 333333334), n: 1, ok: true, rem: 0, reset: 1666666666},
	})
}

func TestWindowSlidingParamsChange(t *testing.T) {
	p := WindowParams{Limit: 10, Window: 10 * time.Second, Mode: WindowSliding}
	runWindowSteps(t, p, []windowStep{
		0: {t: wat(15 * time.Second), n: 8, ok: true, rem: 2, reset: 15 * time.Second},
		// Limit 4: the current 8 are clamped to 4.
		1: {t: wat(16 * time.Second), n: 1, p: WindowParams{Limit: 4, Window: 10 * time.Second, Mode: WindowSliding},
			rem: 0, retry: 6500 * time.Millisecond, reset: 14 * time.Second},
		// Window 1s: the 8 count in [t0+15s, t0+16s), the window of the last
		// admission, then as the previous window.
		2: {t: wat(15500 * time.Millisecond), n: 0, p: WindowParams{Limit: 10, Window: time.Second, Mode: WindowSliding},
			ok: true, rem: 2, reset: 1500 * time.Millisecond},
		3: {t: wat(16500 * time.Millisecond), n: 7, p: WindowParams{Limit: 10, Window: time.Second, Mode: WindowSliding},
			rem: 6, retry: 125 * time.Millisecond, reset: 500 * time.Millisecond},
		4: {t: wat(16500 * time.Millisecond), n: 6, p: WindowParams{Limit: 10, Window: time.Second, Mode: WindowSliding},
			ok: true, rem: 0, reset: 1500 * time.Millisecond},
	})
}

func TestWindowLog(t *testing.T) {
	p := WindowParams{Limit: 3, Window: time.Second, Mode: WindowLog}
	runWindowSteps(t, p, []windowStep{
		0: {t: wat(0), n: 1, ok: true, rem: 2, reset: time.Second},
		1: {t: wat(200 * time.Millisecond), n: 1, ok: true, rem: 1, reset: time.Second},
		2: {t: wat(200 * time.Millisecond), n: 1, ok: true, rem: 0, reset: time.Second}, // merged with step 1
		// 1 more fits when the unit of t0 leaves, 2 when those of t0+200ms do.
		3: {t: wat(500 * time.Millisecond), n: 1, rem: 0, retry: 500 * time.Millisecond, reset: 700 * time.Millisecond},
		4: {t: wat(500 * time.Millisecond), n: 2, rem: 0, retry: 700 * time.Millisecond, reset: 700 * time.Millisecond},
		5: {t: wat(500 * time.Millisecond), n: 3, rem: 0, retry: 700 * time.Millisecond, reset: 700 * time.Millisecond},
		6: {t: wat(500 * time.Millisecond), n: 4, rem: 0, retry: Never, reset: 700 * time.Millisecond},
		// (now-1s, now] excludes t0 itself.
		7:  {t: wat(time.Second - 1), n: 1, rem: 0, retry: 1, reset: 200*time.Millisecond + 1},
		8:  {t: wat(time.Second), n: 1, ok: true, rem: 0, reset: time.Second},
		9:  {t: wat(1200 * time.Millisecond), n: 0, ok: true, rem: 2, reset: 800 * time.Millisecond},
		10: {t: wat(1200 * time.Millisecond), n: 2, ok: true, rem: 0, reset: time.Second},
		11: {t: wat(1900 * time.Millisecond), n: 2, check: true, rem: 0, retry: 300 * time.Millisecond, reset: 300 * time.Millisecond},
		// Limit lowered to 1: the oldest unit is dropped first, so the
		// two of t0+1.2s are clamped to one.
		12: {t: wat(1900 * time.Millisecond), n: 0, p: WindowParams{Limit: 1, Window: time.Second, Mode: WindowLog},
			ok: true, rem: 0, reset: 300 * time.Millisecond},
		13: {t: wat(1900 * time.Millisecond), n: 1, p: WindowParams{Limit: 1, Window: time.Second, Mode: WindowLog},
			rem: 0, retry: 300 * time.Millisecond, reset: 300 * time.Millisecond},
		// Window lengthened to 2s: units that left stay gone, those of
		// t0+1s and t0+1.2s now leave at t0+3s and t0+3.2s.
		14: {t: wat(2100 * time.Millisecond), n: 0, p: WindowParams{Limit: 3, Window: 2 * time.Second, Mode: WindowLog},
			ok: true, rem: 0, reset: 1100 * time.Millisecond},
		15: {t: wat(2100 * time.Millisecond), n: 1, p: WindowParams{Limit: 3, Window: 2 * time.Second, Mode: WindowLog},
			rem: 0, retry: 900 * time.Millisecond, reset: 1100 * time.Millisecond},
		16: {t: wat(5 * time.Second), n: 0, ok: true, rem: 3},
	})
}

// TestWindowLogRing drives the log through growth, wrap-around and
// shrinking of its ring with one unit per instant.
func TestWindowLogRing(t *testing.T) {
	const limit = 100
	p := WindowParams{Limit: limit, Window: time.Second, Mode: WindowLog}
	var s Window
	now := wt0
	for round := 0; round < 5; round++ {
		for i := 0; i < limit; i++ {
			if d := s.Take(now, p, 1); !d.Allowed || d.Remaining != int64(limit-1-i) {
				t.Fatalf("round %d, take %d at %s: %s", round, i, fmtWT(now), fmtWD(d))
			}
			now += int64(3 * time.Millisecond)
		}
		// Full: the next unit fits when the oldest leaves.
		oldest := now - limit*int64(3*time.Millisecond)
		if d := s.Take(now, p, 1); d.Allowed || d.RetryAfter != time.Duration(oldest+int64(time.Second)-now) {
			t.Fatalf("round %d: full log at %s: %s", round, fmtWT(now), fmtWD(d))
		}
		now += int64(time.Second)
	}
	if s.log == nil {
		t.Fatal("a LOG window holds no log")
	}
	if s.log.n != 0 && s.log.n > limit {
		t.Fatalf("log holds %d entries, limit %d", s.log.n, limit)
	}
	// One admission after a long pause keeps little memory.
	s.Take(now+int64(time.Hour), p, 1)
	if c := len(s.log.blocks); c > 1 {
		t.Errorf("%d blocks after the log emptied, want 1", c)
	}
}

func TestWindowValidate(t *testing.T) {
	for _, tc := range []struct {
		p   WindowParams
		err error
	}{
		{WindowParams{1, 1, WindowFixed}, nil},
		{WindowParams{maxInt64, time.Duration(maxInt64), WindowLog}, nil},
		{WindowParams{0, time.Second, WindowSliding}, ErrWindowLimit},
		{WindowParams{-1, time.Second, WindowSliding}, ErrWindowLimit},
		{WindowParams{1, 0, WindowSliding}, ErrWindowLength},
		{WindowParams{1, -time.Second, WindowFixed}, ErrWindowLength},
		{WindowParams{1, time.Second, 0}, ErrWindowMode},
		{WindowParams{1, time.Second, 4}, ErrWindowMode},
	} {
		if err := tc.p.Validate(); err != tc.err {
			t.Errorf("%+v.Validate() = %v, want %v", tc.p, err, tc.err)
		}
	}
	// Invalid input is denied and changes nothing.
	var s Window
	for _, d := range []Decision{
		s.Take(wt0, WindowParams{0, time.Second, WindowFixed}, 1),
		s.Take(wt0, WindowParams{1, time.Second, WindowFixed}, -1),
	} {
		if d.Allowed || d.RetryAfter != Never || s.Mode() != 0 {
			t.Errorf("invalid call: %s, mode %d", fmtWD(d), s.Mode())
		}
	}
}

// TestWindowSaturation: huge windows and limits saturate, never wrap.
func TestWindowSaturation(t *testing.T) {
	huge := time.Duration(maxInt64)
	for _, mode := range []WindowMode{WindowFixed, WindowSliding, WindowLog} {
		for _, now := range []int64{0, wt0, maxInt64 - 1, maxInt64} {
			var s Window
			p := WindowParams{Limit: maxInt64, Window: huge, Mode: mode}
			d := s.Take(now, p, maxInt64-1)
			if !d.Allowed || d.Remaining != 1 || d.ResetAfter <= 0 {
				t.Errorf("%v at %d: first take %s", mode, now, fmtWD(d))
			}
			d = s.Take(now, p, 2)
			if d.Allowed || d.RetryAfter <= 0 || d.ResetAfter <= 0 {
				t.Errorf("%v at %d: second take %s", mode, now, fmtWD(d))
			}
			d = s.Take(now, p, 1)
			if !d.Allowed || d.Remaining != 0 {
				t.Errorf("%v at %d: third take %s", mode, now, fmtWD(d))
			}
			d = s.Take(now, WindowParams{Limit: 1, Window: 1, Mode: mode}, 1)
			if d.Allowed && mode != WindowFixed || d.Remaining != 0 {
				t.Errorf("%v at %d: after shrinking: %s", mode, now, fmtWD(d))
			}
		}
	}
}

// winEvent is a unit count admitted at an instant, for the reference models.
type winEvent struct{ t, n int64 }

// refWindow is the reference model of every window mode: the list of
// admissions, and exact rational arithmetic (math/big) on it. It is
// deliberately naive: counts are sums over the list, and durations are found
// by searching for the first instant at which a predicate holds.
type refWindow struct {
	p      WindowParams
	events []winEvent
	last   int64
}

func (r *refWindow) w() int64 { return int64(r.p.Window) }

// sum returns the units admitted in [a, b).
func (r *refWindow) sum(a, b int64) int64 {
	var s int64
	for _, e := range r.events {
		if e.t >= a && e.t < b {
			s += e.n
		}
	}
	return s
}

func (r *refWindow) alignedStart(t int64) int64 {
	q := new(big.Int).Div(big.NewInt(t), big.NewInt(r.w())) // Euclidean: floor for w > 0
	return q.Mul(q, big.NewInt(r.w())).Int64()
}

// estimate returns the units counted at t as an exact rational.
func (r *refWindow) estimate(t int64) *big.Rat {
	w := r.w()
	switch r.p.Mode {
	case WindowFixed:
		ws := r.alignedStart(t)
		return new(big.Rat).SetInt64(r.sum(ws, ws+w))
	case WindowSliding:
		ws := r.alignedStart(t)
		overlap := big.NewRat(ws+w-t, w) // share of the previous window inside (t-w, t]
		est := new(big.Rat).Mul(new(big.Rat).SetInt64(r.sum(ws-w, ws)), overlap)
		return est.Add(est, new(big.Rat).SetInt64(r.sum(ws, ws+w)))
	default:
		return new(big.Rat).SetInt64(r.sum(t-w+1, t+1))
	}
}

func (r *refWindow) fits(t, n int64) bool {
	est := r.estimate(t)
	return est.Add(est, new(big.Rat).SetInt64(n)).Cmp(new(big.Rat).SetInt64(r.p.Limit)) <= 0
}

func (r *refWindow) fresh(t int64) bool {
	w := r.w()
	switch r.p.Mode {
	case WindowSliding:
		ws := r.alignedStart(t)
		return r.sum(ws-w, ws+w) == 0
	default:
		return r.estimate(t).Sign() == 0
	}
}

// winFirstFrom returns the least instant >= from at which ok holds, given that
// ok is monotonic and holds at from+bound.
func winFirstFrom(from, bound int64, ok func(int64) bool) int64 {
	if ok(from) {
		return from
	}
	lo, hi := from, from+bound // ok(lo) false, ok(hi) true
	for hi-lo > 1 {
		m := lo + (hi-lo)/2
		if ok(m) {
			hi = m
		} else {
			lo = m
		}
	}
	return hi
}

func (r *refWindow) take(now, n int64) Decision {
	now = max(now, r.last)
	d := Decision{Limit: r.p.Limit}
	bound := 2*r.w() + 1
	if r.fits(now, n) {
		d.Allowed = true
		if n > 0 {
			r.events = append(r.events, winEvent{now, n})
			r.last = now
		}
	} else if n > r.p.Limit {
		d.RetryAfter = Never
	} else {
		d.RetryAfter = time.Duration(winFirstFrom(now, bound, func(t int64) bool { return r.fits(t, n) }) - now)
	}
	room := new(big.Rat).Sub(new(big.Rat).SetInt64(r.p.Limit), r.estimate(now))
	if room.Sign() > 0 {
		d.Remaining = new(big.Int).Quo(room.Num(), room.Denom()).Int64()
	}
	d.ResetAfter = time.Duration(winFirstFrom(now, bound, r.fresh) - now)
	// Forget what can never count again.
	kept := r.events[:0]
	for _, e := range r.events {
		if e.t > now-3*r.w() {
			kept = append(kept, e)
		}
	}
	r.events = kept
	return d
}

// randomWindowRun drives a Window and the reference model with random
// advances (some backwards) and costs, checking that they agree exactly and
// that Check and denied Takes change nothing.
func randomWindowRun(t *testing.T, seed uint64, p WindowParams, steps int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, uint64(p.Mode)))
	var s Window
	ref := refWindow{p: p}
	w := int64(p.Window)
	now := wt0 + rng.Int64N(int64(time.Hour))
	var admitted, denied int
	defer func() {
		if admitted < steps/10 || denied < steps/20 {
			t.Errorf("seed %d: %d admitted, %d denied of %d: the run explores too little", seed, admitted, denied, steps)
		}
	}()
	for i := 0; i < steps; i++ {
		switch k := rng.IntN(20); {
		case k < 4: // same instant
		case k < 12:
			now += rng.Int64N(w/4 + 1)
		case k < 17:
			now += rng.Int64N(2*w + 1)
		case k < 18:
			now += 5 * w
		default:
			now -= rng.Int64N(w + 1) // the clock steps back
		}
		n := rng.Int64N(3)
		if rng.IntN(4) == 0 {
			n = rng.Int64N(p.Limit + 2)
		}
		before, _ := appendV1(&s, nil)
		chk := s.Check(now, p, n)
		got := s.Take(now, p, n)
		want := ref.take(now, n)
		if got != want {
			t.Fatalf("seed %d step %d: Take(%s, %d) = %s, want %s", seed, i, fmtWT(now), n, fmtWD(got), fmtWD(want))
		}
		if got.Allowed && n > 0 {
			admitted++
		} else if !got.Allowed {
			denied++
		}
		if chk != got {
			t.Fatalf("seed %d step %d: Check(%s, %d) = %s, Take = %s", seed, i, fmtWT(now), n, fmtWD(chk), fmtWD(got))
		}
		after, _ := appendV1(&s, nil)
		if (!got.Allowed || n == 0) && !bytes.Equal(before, after) {
			t.Fatalf("seed %d step %d: Take(%s, %d) = %s changed the state", seed, i, fmtWT(now), n, fmtWD(got))
		}
		if i%97 == 0 { // persist and restore
			d, err := decodeWindow(after)
			if err != nil {
				t.Fatalf("seed %d step %d: decode: %v", seed, i, err)
			}
			s = *d
		}
	}
}

var randomWindowParams = []struct {
	limit  int64
	window time.Duration
}{
	{1, time.Second},
	{3, 7},
	{5, 1000},
	{10, time.Second},
	{7, time.Second + 17},
	{20, time.Hour},
}

func TestWindowRandomFixed(t *testing.T)   { testWindowRandom(t, WindowFixed) }
func TestWindowRandomSliding(t *testing.T) { testWindowRandom(t, WindowSliding) }
func TestWindowRandomLog(t *testing.T)     { testWindowRandom(t, WindowLog) }

func testWindowRandom(t *testing.T, mode WindowMode) {
	steps := 3000
	if testing.Short() {
		steps = 500
	}
	for i, rp := range randomWindowParams {
		p := WindowParams{Limit: rp.limit, Window: rp.window, Mode: mode}
		t.Run(fmt.Sprintf("limit=%d,window=%v", rp.limit, rp.window), func(t *testing.T) {
			randomWindowRun(t, uint64(i+1), p, steps)
		})
	}
}

// checkWindowBound reports the first violation of the mode's guarantee by
// the admissions evs (in order, at their effective instants): at most limit
// units per aligned window for FIXED and SLIDING, and in any window (t-w, t]
// for LOG.
func checkWindowBound(p WindowParams, evs []winEvent) error {
	w := int64(p.Window)
	if p.Mode == WindowLog {
		// The sum over (t-w, t] peaks at admission instants.
		lo, sum := 0, int64(0)
		for _, e := range evs {
			sum += e.n
			for evs[lo].t <= e.t-w {
				sum -= evs[lo].n
				lo++
			}
			if sum > p.Limit {
				return fmt.Errorf("%d units admitted in (%d, %d], limit %d", sum, e.t-w, e.t, p.Limit)
			}
		}
		return nil
	}
	sums := map[int64]int64{}
	for _, e := range evs {
		ws := winAlign(e.t, w)
		if sums[ws] += e.n; sums[ws] > p.Limit {
			return fmt.Errorf("%d units admitted in the window at %d, limit %d", sums[ws], ws, p.Limit)
		}
	}
	return nil
}

// TestWindowBound is the property test: random bursts never get more than
// the limit through, in every aligned window (FIXED, SLIDING) or in any
// window (LOG).
func TestWindowBound(t *testing.T) {
	for _, mode := range []WindowMode{WindowFixed, WindowSliding, WindowLog} {
		for seed := uint64(1); seed <= 20; seed++ {
			rng := rand.New(rand.NewPCG(seed, 99))
			p := WindowParams{Limit: 1 + rng.Int64N(50), Window: time.Duration(1 + rng.Int64N(int64(time.Second))), Mode: mode}
			var s Window
			var evs []winEvent
			now, last := wt0, int64(0)
			for i := 0; i < 2000; i++ {
				now += rng.Int64N(int64(p.Window)/8 + 1)
				if rng.IntN(50) == 0 {
					now -= rng.Int64N(int64(p.Window))
				}
				n := 1 + rng.Int64N(p.Limit/2+1)
				if d := s.Take(now, p, n); d.Allowed {
					last = max(last, now)
					evs = append(evs, winEvent{last, n})
				}
			}
			if len(evs) == 0 {
				t.Fatalf("%v seed %d: nothing admitted", mode, seed)
			}
			if err := checkWindowBound(p, evs); err != nil {
				t.Errorf("%v seed %d, %+v: %v", mode, seed, p, err)
			}
		}
	}
}

func TestWindowEncoding(t *testing.T) {
	states := map[string]*Window{"fresh": {}}
	for _, mode := range []WindowMode{WindowFixed, WindowSliding, WindowLog} {
		p := WindowParams{Limit: 50, Window: time.Second, Mode: mode}
		s := &Window{}
		now := wt0
		for i := 0; i < 80; i++ { // wraps the LOG ring
			s.Take(now, p, 1+int64(i%3))
			now += int64(97 * time.Millisecond)
		}
		states[mode.String()] = s
	}
	for name, s := range states {
		b, err := appendV1(s, []byte("prefix"))
		if err != nil || !bytes.HasPrefix(b, []byte("prefix")) {
			t.Fatalf("%s: appendV1 = %q, %v", name, b, err)
		}
		b = b[len("prefix"):]
		d, err := decodeWindow(b)
		if err != nil {
			t.Fatalf("%s: decodeWindow: %v", name, err)
		}
		if b2, _ := appendV1(d, nil); !bytes.Equal(b, b2) {
			t.Errorf("%s: re-encoding differs:\n%x\n%x", name, b, b2)
		}
		if d.Mode() != s.Mode() || d.Kind() != KindWindow || d.Size() <= 0 {
			t.Errorf("%s: decoded mode %v kind %v size %d", name, d.Mode(), d.Kind(), d.Size())
		}
		// The restored state decides like the original.
		mode := s.Mode()
		if mode == 0 {
			mode = WindowSliding
		}
		p := WindowParams{Limit: 50, Window: time.Second, Mode: mode}
		for i := int64(0); i < 30; i++ {
			now := wt0 + int64(8*time.Second) + i*int64(45*time.Millisecond)
			if a, b := s.Take(now, p, 2), d.Take(now, p, 2); a != b {
				t.Fatalf("%s: at %s original %s, restored %s", name, fmtWT(now), fmtWD(a), fmtWD(b))
			}
		}
		for i := 0; i < len(b); i++ {
			if _, err := decodeWindow(b[:i]); !errors.Is(err, ErrCorrupt) {
				t.Errorf("%s: decodeWindow of %d of %d bytes: %v, want ErrCorrupt", name, i, len(b), err)
			}
		}
		if _, err := decodeWindow(append(b, 0)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: trailing byte: %v, want ErrCorrupt", name, err)
		}
	}
}

func TestWindowDecodeCorrupt(t *testing.T) {
	valid := func(mode WindowMode, n int64) []byte {
		var s Window
		s.Take(wt0, WindowParams{Limit: 10, Window: time.Second, Mode: mode}, n)
		s.Take(wt0+1, WindowParams{Limit: 10, Window: time.Second, Mode: mode}, n)
		b, _ := appendV1(&s, nil)
		return b
	}
	set := func(b []byte, i int, v ...byte) []byte {
		b = bytes.Clone(b)
		copy(b[i:], v)
		return b
	}
	ff := []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	for name, b := range map[string][]byte{
		"empty":            nil,
		"version":          set(valid(WindowFixed, 1), 0, 2),
		"mode":             set(valid(WindowFixed, 1), 1, 4),
		"fresh with data":  {windowVersion, 0, 0},
		"limit zero":       set(valid(WindowFixed, 1), 2, 0, 0, 0, 0, 0, 0, 0, 0),
		"negative window":  set(valid(WindowFixed, 1), 10, ff...),
		"negative cur":     set(valid(WindowSliding, 1), 34, ff...),
		"fixed prev":       set(valid(WindowFixed, 1), 42, 1),
		"start after last": set(valid(WindowFixed, 1), 26, ff[:7]...),
		"log count":        set(valid(WindowLog, 1), 34, 3),
		"log order":        set(valid(WindowLog, 1), 38+16, 0),
		"log empty entry":  set(valid(WindowLog, 1), 38+16+8, 1),
	} {
		if _, err := decodeWindow(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: decodeWindow(%x) = %v, want ErrCorrupt", name, b, err)
		}
	}
}

func benchmarkWindow(b *testing.B, mode WindowMode) {
	p := WindowParams{Limit: 1000, Window: time.Second, Mode: mode}
	var s Window
	now := wt0
	b.ReportAllocs()
	for b.Loop() {
		now += int64(500 * time.Microsecond) // 2000 calls per window: half denied
		s.Take(now, p, 1)
	}
}

func BenchmarkWindowFixed(b *testing.B)   { benchmarkWindow(b, WindowFixed) }
func BenchmarkWindowSliding(b *testing.B) { benchmarkWindow(b, WindowSliding) }
func BenchmarkWindowLog(b *testing.B)     { benchmarkWindow(b, WindowLog) }

// TestWindowResetKeepsRing: Reset makes a fresh state (the same decisions
// as a zero Window) but keeps the LOG ring, so a reused scratch window
// admits into its old ring without allocating.
func TestWindowResetKeepsRing(t *testing.T) {
	p := WindowParams{Limit: 3, Window: time.Second, Mode: WindowLog}
	var w Window
	for i := int64(0); i < 3; i++ {
		w.Take(1e9+i, p, 1)
	}
	w.Reset()
	var zero Window
	for i := int64(0); i < 5; i++ {
		now := 5e9 + i
		if got, want := w.Take(now, p, 1), zero.Take(now, p, 1); got != want {
			t.Fatalf("take %d after Reset = %+v, a fresh window says %+v", i, got, want)
		}
	}
	if allocs := testing.AllocsPerRun(100, func() {
		w.Reset()
		w.Take(9e9, p, 1)
	}); allocs != 0 {
		t.Fatalf("Reset then Take allocated %v times, want 0", allocs)
	}
	fixed := WindowParams{Limit: 3, Window: time.Second, Mode: WindowFixed}
	w.Reset()
	zero = Window{}
	if got, want := w.Take(1e10, fixed, 1), zero.Take(1e10, fixed, 1); got != want {
		t.Fatalf("FIXED after a LOG Reset = %+v, want %+v", got, want)
	}
}
