package engine

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// limiterUnderTest is one algorithm under fixed parameters, for the
// give-back tests: take, check and give back on a state of its own.
type limiterUnderTest interface {
	take(now, n int64) Decision
	check(now, n int64) Decision
	giveBack(now, n int64) Decision
	clone() limiterUnderTest
	period() int64 // ns: the window or period, to scale the times tried
	capacity() int64
}

type tbUnder struct {
	s TokenBucket
	p TokenBucketParams
}

func (l *tbUnder) take(now, n int64) Decision     { return l.s.Take(now, l.p, n) }
func (l *tbUnder) check(now, n int64) Decision    { return l.s.Check(now, l.p, n) }
func (l *tbUnder) giveBack(now, n int64) Decision { return l.s.GiveBack(now, l.p, n) }
func (l *tbUnder) clone() limiterUnderTest        { c := *l; return &c }
func (l *tbUnder) period() int64                  { return int64(l.p.Period) }
func (l *tbUnder) capacity() int64                { return l.p.Capacity }

type gcraUnder struct {
	s GCRA
	p GCRAParams
}

func (l *gcraUnder) take(now, n int64) Decision     { return l.s.Take(now, l.p, n) }
func (l *gcraUnder) check(now, n int64) Decision    { return l.s.Check(now, l.p, n) }
func (l *gcraUnder) giveBack(now, n int64) Decision { return l.s.GiveBack(now, l.p, n) }
func (l *gcraUnder) clone() limiterUnderTest        { c := *l; return &c }
func (l *gcraUnder) period() int64                  { return int64(l.p.Period) }
func (l *gcraUnder) capacity() int64                { return l.p.Limit() }

type winUnder struct {
	s Window
	p WindowParams
}

func (l *winUnder) take(now, n int64) Decision     { return l.s.Take(now, l.p, n) }
func (l *winUnder) check(now, n int64) Decision    { return l.s.Check(now, l.p, n) }
func (l *winUnder) giveBack(now, n int64) Decision { return l.s.GiveBack(now, l.p, n) }
func (l *winUnder) clone() limiterUnderTest        { c := *l; return &c }
func (l *winUnder) period() int64                  { return int64(l.p.Window) }
func (l *winUnder) capacity() int64                { return l.p.Limit }

// randomLimiter returns a fresh limiter of algorithm alg with random
// parameters.
func randomLimiter(r *rand.Rand, alg string) limiterUnderTest {
	capacity := 1 + r.Int64N(20)
	rate := 1 + r.Int64N(20)
	period := time.Duration(1+r.Int64N(5000)) * time.Millisecond
	switch alg {
	case "token_bucket":
		return &tbUnder{p: TokenBucketParams{Capacity: capacity, Rate: rate, Period: period}}
	case "gcra":
		return &gcraUnder{p: GCRAParams{MaxBurst: capacity - 1, Count: rate, Period: period}}
	case "fixed":
		return &winUnder{p: WindowParams{Limit: capacity, Window: period, Mode: WindowFixed}}
	default:
		return &winUnder{p: WindowParams{Limit: capacity, Window: period, Mode: WindowSliding}}
	}
}

var giveBackAlgorithms = []string{"token_bucket", "gcra", "fixed", "sliding"}

// TestGiveBackRestores: for each algorithm, random parameters and
// histories, a take of n admitted at t and a give-back of n at t2 >= t
// (only peeks between) leave a state whose every later decision (takes
// and peeks at times from t2 on) is the one the state that never took the
// n units gives; and the give-back answers what that state's peek does.
func TestGiveBackRestores(t *testing.T) {
	for _, alg := range giveBackAlgorithms {
		t.Run(alg, func(t *testing.T) {
			r := rand.New(rand.NewPCG(44, uint64(len(alg))))
			gave := 0
			defer func() {
				if gave < 1000 {
					t.Errorf("only %d of 2000 trials took and gave back", gave)
				}
			}()
			for trial := range 2000 {
				never := randomLimiter(r, alg)
				w := never.period()
				now := t0 + r.Int64N(w)
				// A shared history.
				for range r.IntN(6) {
					now += r.Int64N(w)
					never.take(now, r.Int64N(never.capacity()+1))
				}
				took := never.clone()
				now += r.Int64N(w)
				n := 1 + r.Int64N(took.capacity())
				if !took.take(now, n).Allowed {
					continue
				}
				// Peeks between take and give-back change nothing.
				for range r.IntN(3) {
					now += r.Int64N(w / 2)
					took.check(now, r.Int64N(took.capacity()+1))
				}
				if r.IntN(3) == 0 {
					now += r.Int64N(3 * w) // the window may roll over, even twice
				}
				gave++
				got, want := took.giveBack(now, n), never.check(now, 0)
				if got != want {
					t.Fatalf("trial %d: giveBack(t, %d) = %+v, never taking: peek %+v", trial, n, got, want)
				}
				for i := range 12 {
					if r.IntN(4) == 0 {
						now += r.Int64N(2 * w)
					} else {
						now += r.Int64N(w / 4)
					}
					m := r.Int64N(took.capacity() + 2)
					var a, b Decision
					if r.IntN(3) == 0 {
						a, b = took.check(now, m), never.check(now, m)
					} else {
						a, b = took.take(now, m), never.take(now, m)
					}
					if a != b {
						t.Fatalf("trial %d, call %d after the give-back of %d: %d units = %+v, never taking: %+v", trial, i, n, m, a, b)
					}
				}
			}
		})
	}
}

// TestGiveBackSteps: the give-back's answers, step by step, for each
// algorithm: a refund frees its units at once, is capped at what was
// taken, and a fresh state stays fresh.
func TestGiveBackSteps(t *testing.T) {
	type call struct {
		at   time.Duration
		give bool // GiveBack, else Take
		n    int64
		want Decision
	}
	run := func(t *testing.T, l limiterUnderTest, calls []call) {
		t.Helper()
		for i, c := range calls {
			now := t0 + int64(c.at)
			var got Decision
			name := "Take"
			if c.give {
				got, name = l.giveBack(now, c.n), "GiveBack"
			} else {
				got = l.take(now, c.n)
			}
			if got != c.want {
				t.Errorf("step %d: %s(t+%v, %d) = %+v, want %+v", i, name, c.at, c.n, got, c.want)
			}
		}
	}
	t.Run("token_bucket", func(t *testing.T) {
		// 4 tokens, one a second.
		l := &tbUnder{p: TokenBucketParams{Capacity: 4, Rate: 1, Period: s1}}
		run(t, l, []call{
			{0, true, 3, Decision{true, 4, 4, 0, 0}}, // fresh: nothing to give back
			{0, false, 4, Decision{true, 4, 0, 0, 4 * s1}},
			{0, false, 1, Decision{false, 4, 0, s1, 4 * s1}},
			{500 * ms, true, 2, Decision{true, 4, 2, 0, 1500 * ms}}, // 0.5 refilled + 2: 2.5 tokens
			{500 * ms, false, 3, Decision{false, 4, 2, 500 * ms, 1500 * ms}},
			{s1, false, 3, Decision{true, 4, 0, 0, 4 * s1}},
			{s1, true, 100, Decision{true, 4, 4, 0, 0}}, // capped at a full bucket
			{s1, false, 4, Decision{true, 4, 0, 0, 4 * s1}},
		})
		if l.giveBack(t0+int64(s1), 4); l.s != (TokenBucket{p: l.p, b: backlog{last: t0 + int64(s1)}}) {
			t.Errorf("a full refund left %+v", l.s)
		}
	})
	t.Run("gcra", func(t *testing.T) {
		// A limit of 4, one a second.
		l := &gcraUnder{p: GCRAParams{MaxBurst: 3, Count: 1, Period: s1}}
		run(t, l, []call{
			{0, true, 3, Decision{true, 4, 4, 0, 0}},
			{0, false, 4, Decision{true, 4, 0, 0, 4 * s1}},
			{0, false, 1, Decision{false, 4, 0, s1, 4 * s1}},
			{500 * ms, true, 2, Decision{true, 4, 2, 0, 1500 * ms}},
			{500 * ms, false, 3, Decision{false, 4, 2, 500 * ms, 1500 * ms}},
			{s1, false, 3, Decision{true, 4, 0, 0, 4 * s1}},
			{s1, true, 100, Decision{true, 4, 4, 0, 0}},
		})
	})
	t.Run("fixed", func(t *testing.T) {
		// 5 per 10 s; t0 is 2 s into a window.
		l := &winUnder{p: WindowParams{Limit: 5, Window: 10 * s1, Mode: WindowFixed}}
		base := time.Duration(t0 % int64(10*s1))
		left := 10*s1 - base
		run(t, l, []call{
			{0, true, 2, Decision{true, 5, 5, 0, 0}},
			{0, false, 5, Decision{true, 5, 0, 0, left}},
			{s1, true, 2, Decision{true, 5, 2, 0, left - s1}},
			{s1, false, 3, Decision{false, 5, 2, left - s1, left - s1}},
			{s1, true, 9, Decision{true, 5, 5, 0, 0}}, // capped at the units taken
			{s1, false, 1, Decision{true, 5, 4, 0, left - s1}},
			// The next window: the unit expired; nothing to give back.
			{left, true, 1, Decision{true, 5, 5, 0, 0}},
			// Units of the new window are given back instead (as
			// envoyproxy/ratelimit's refund: the current window's counter).
			{left, false, 2, Decision{true, 5, 3, 0, 10 * s1}},
			{left + s1, true, 1, Decision{true, 5, 4, 0, 9 * s1}},
		})
	})
	t.Run("sliding", func(t *testing.T) {
		// 4 per 10 s, t0 aligned to the window.
		l := &winUnder{p: WindowParams{Limit: 4, Window: 10 * s1, Mode: WindowSliding}}
		at0 := -time.Duration(t0 % int64(10*s1)) // the window's start, from t0
		run(t, l, []call{
			{at0, false, 4, Decision{true, 4, 0, 0, 20 * s1}},
			// Half way through the next window the previous 4 weigh 2.
			{at0 + 15*s1, false, 3, Decision{false, 4, 2, 2500 * ms, 5 * s1}},
			// Giving back 2 from the previous window: it weighs 1.
			{at0 + 15*s1, true, 2, Decision{true, 4, 3, 0, 5 * s1}},
			// Taken in the current window, then given back from it.
			{at0 + 15*s1, false, 3, Decision{true, 4, 0, 0, 15 * s1}},
			{at0 + 15*s1, true, 3, Decision{true, 4, 3, 0, 5 * s1}},
			// Both windows: the current first, then the previous (2 → 1,
			// weighing 0.5: 3 left).
			{at0 + 15*s1, false, 1, Decision{true, 4, 2, 0, 15 * s1}},
			{at0 + 15*s1, true, 2, Decision{true, 4, 3, 0, 5 * s1}},
			{at0 + 15*s1, true, 5, Decision{true, 4, 4, 0, 0}},
		})
	})
}

// TestGiveBackInexact: where an algorithm cannot know when a refund's
// units were taken, what it does instead (see each GiveBack's comment).
func TestGiveBackInexact(t *testing.T) {
	// A token bucket that would have filled up in between: the refill lost
	// to overflow comes back too, never more than n.
	p := TokenBucketParams{Capacity: 4, Rate: 1, Period: s1}
	var took, never TokenBucket
	took.Take(t0, p, 3)
	took.Take(t0+int64(5*s1), p, 2)
	never.Take(t0+int64(5*s1), p, 2)
	if got, want := took.GiveBack(t0+int64(5*s1), p, 3), never.Check(t0+int64(5*s1), p, 0); got.Remaining != 4 || want.Remaining != 2 {
		t.Errorf("token bucket: give-back %+v, never taking %+v", got, want)
	}
	// A sliding window: 2 taken in the previous window, 2 others a
	// quarter into the current one, then a refund of the first 2: the
	// current window's come back. Half way through, the estimate is the
	// previous window's 2 weighing 1 (3 left), where never taking them
	// leaves the current window's 2 (2 left).
	wp := WindowParams{Limit: 4, Window: 4 * s1, Mode: WindowSliding}
	start := t0 - t0%int64(4*s1)
	var ws, wn Window
	ws.Take(start, wp, 2)
	ws.Take(start+int64(5*s1), wp, 2)
	wn.Take(start+int64(5*s1), wp, 2)
	ws.GiveBack(start+int64(5*s1), wp, 2)
	if a, b := ws.Check(start+int64(6*s1), wp, 0), wn.Check(start+int64(6*s1), wp, 0); a.Remaining != 3 || b.Remaining != 2 {
		t.Errorf("sliding: after the give-back %+v, never taking %+v", a, b)
	}
}

// TestGiveBackInvalid: bad parameters, a negative n or a LOG window are
// answered with RetryAfter Never and change nothing; a window of another
// mode is not touched; time going backwards is clamped.
func TestGiveBackInvalid(t *testing.T) {
	var tb TokenBucket
	tbp := TokenBucketParams{Capacity: 4, Rate: 1, Period: s1}
	tb.Take(t0, tbp, 3)
	before := tb
	for _, c := range []struct {
		p TokenBucketParams
		n int64
	}{{tbp, -1}, {TokenBucketParams{Capacity: 0, Rate: 1, Period: s1}, 1}, {TokenBucketParams{Capacity: 4, Rate: 1}, 1}} {
		if d := tb.GiveBack(t0, c.p, c.n); d.RetryAfter != Never || d.Allowed || tb != before {
			t.Errorf("token bucket %+v, %d: %+v, state %+v", c.p, c.n, d, tb)
		}
	}
	var g GCRA
	gp := GCRAParams{MaxBurst: 3, Count: 1, Period: s1}
	g.Take(t0, gp, 3)
	gb := g
	if d := g.GiveBack(t0, GCRAParams{MaxBurst: -1, Count: 1, Period: s1}, 1); d.RetryAfter != Never || g != gb {
		t.Errorf("gcra: %+v, state %+v", d, g)
	}
	if d := g.GiveBack(t0, gp, -2); d.RetryAfter != Never || g != gb {
		t.Errorf("gcra n < 0: %+v, state %+v", d, g)
	}
	var w Window
	fp := WindowParams{Limit: 4, Window: 10 * s1, Mode: WindowFixed}
	w.Take(t0, fp, 3)
	wb := w
	for _, p := range []WindowParams{{Limit: 4, Window: 10 * s1, Mode: WindowLog}, {Limit: 0, Window: s1, Mode: WindowFixed}, {Limit: 4, Window: 10 * s1, Mode: 9}} {
		if d := w.GiveBack(t0, p, 1); d.RetryAfter != Never || w != wb {
			t.Errorf("window %+v: %+v, state %+v", p, d, w)
		}
	}
	// Another mode: a peek under the params asked, the state untouched.
	if d := w.GiveBack(t0, WindowParams{Limit: 4, Window: 10 * s1, Mode: WindowSliding}, 1); d.Remaining != 4 || w != wb {
		t.Errorf("window of another mode: %+v, state %+v", d, w)
	}
	// Time going backwards: the give-back happens at the last instant.
	back := w.GiveBack(t0-int64(s1), fp, 1)
	if at := w.Check(t0, fp, 0); back != at || back.Remaining != 2 {
		t.Errorf("backwards: %+v, at the last instant %+v", back, at)
	}
	var g2 GCRA
	g2.Take(t0, gp, 4)
	if d := g2.GiveBack(t0-int64(s1), gp, 1); d.Remaining != 1 || d.ResetAfter != 3*s1 {
		t.Errorf("gcra backwards: %+v", d)
	}
}

// ExampleTokenBucket_GiveBack shows a refund: a request that took 3
// tokens gives them back.
func ExampleTokenBucket_GiveBack() {
	p := TokenBucketParams{Capacity: 10, Rate: 1, Period: time.Second}
	var b TokenBucket
	now := int64(1_700_000_000) * int64(time.Second)
	fmt.Println(b.Take(now, p, 3).Remaining)
	fmt.Println(b.GiveBack(now, p, 3).Remaining)
	// Output:
	// 7
	// 10
}
