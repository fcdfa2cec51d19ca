package engine

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"
)

// leaseStep is one call of a lease step table. For "acquire" and "check" the
// decision must match; for "release" and "renew" the result must be ok. After
// every step Held(t) and ResetAfter(t) must be held and reset.
type leaseStep struct {
	t     int64
	op    string // acquire, check, release, renew
	id    string
	n     int64
	lease time.Duration
	limit int64 // 0: the table's
	ok    bool
	rem   int64
	retry time.Duration
	reset time.Duration
	held  int64
}

func runLeaseSteps(t *testing.T, limit int64, steps []leaseStep) {
	t.Helper()
	var s Concurrency
	for i, st := range steps {
		lim := limit
		if st.limit != 0 {
			lim = st.limit
		}
		before, _ := appendV1(&s, nil)
		var call string
		changed := false
		switch st.op {
		case "acquire", "check":
			var got Decision
			if st.op == "acquire" {
				call = fmt.Sprintf("Acquire(%s, %d, %v, %d, %q)", fmtWT(st.t), lim, st.lease, st.n, st.id)
				got = s.Take(st.t, ConcurrencyParams{Limit: lim, Lease: st.lease, ID: st.id}, st.n)
				changed = got.Allowed && st.n > 0
			} else {
				call = fmt.Sprintf("Check(%s, %d, %d)", fmtWT(st.t), lim, st.n)
				got = s.Check(st.t, ConcurrencyParams{Limit: lim}, st.n)
			}
			want := Decision{Allowed: st.ok, Limit: lim, Remaining: st.rem, RetryAfter: st.retry, ResetAfter: st.reset}
			if got != want {
				t.Errorf("step %d: %s = %s, want %s", i, call, fmtWD(got), fmtWD(want))
			}
		case "release", "renew":
			var got bool
			if st.op == "release" {
				call = fmt.Sprintf("Release(%s, %q)", fmtWT(st.t), st.id)
				got = s.Release(st.t, st.id)
			} else {
				call = fmt.Sprintf("Renew(%s, %q, %v)", fmtWT(st.t), st.id, st.lease)
				got = s.Renew(st.t, st.id, st.lease)
			}
			if got != st.ok {
				t.Errorf("step %d: %s = %v, want %v", i, call, got, st.ok)
			}
			changed = got
		default:
			t.Fatalf("step %d: unknown op %q", i, st.op)
		}
		if held := s.Held(st.t); held != st.held {
			t.Errorf("step %d: after %s: Held = %d, want %d", i, call, held, st.held)
		}
		if reset := s.ResetAfter(st.t); reset != st.reset {
			t.Errorf("step %d: after %s: ResetAfter = %v, want %v", i, call, reset, st.reset)
		}
		if after, _ := appendV1(&s, nil); !changed && !bytes.Equal(before, after) {
			t.Errorf("step %d: %s changed the state", i, call)
		}
	}
}

func TestConcurrency(t *testing.T) {
	s := time.Second
	runLeaseSteps(t, 3, []leaseStep{
		0: {t: wat(0), op: "check", n: 3, ok: true, rem: 0},
		1: {t: wat(0), op: "acquire", id: "a", n: 1, lease: 10 * s, ok: true, rem: 2, reset: 10 * s, held: 1},
		2: {t: wat(s), op: "acquire", id: "b", n: 2, lease: 5 * s, ok: true, rem: 0, reset: 9 * s, held: 3},
		// Denied: retry when the earliest lease (b, at t0+6s) expires.
		3:  {t: wat(2 * s), op: "acquire", id: "c", n: 1, lease: 10 * s, rem: 0, retry: 4 * s, reset: 8 * s, held: 3},
		4:  {t: wat(2 * s), op: "acquire", id: "c", n: 4, lease: 10 * s, rem: 0, retry: Never, reset: 8 * s, held: 3},
		5:  {t: wat(2 * s), op: "acquire", id: "c", n: 0, lease: 10 * s, ok: true, rem: 0, reset: 8 * s, held: 3}, // peek
		6:  {t: wat(2 * s), op: "check", n: 1, rem: 0, retry: 4 * s, reset: 8 * s, held: 3},
		7:  {t: wat(3 * s), op: "release", id: "b", ok: true, reset: 7 * s, held: 1},
		8:  {t: wat(3 * s), op: "release", id: "b", reset: 7 * s, held: 1}, // released already
		9:  {t: wat(3 * s), op: "release", id: "zz", reset: 7 * s, held: 1},
		10: {t: wat(3 * s), op: "acquire", id: "c", n: 2, lease: s, ok: true, rem: 0, reset: 7 * s, held: 3},
		// c expires at t0+4s: live while now < expiry.
		11: {t: wat(4*s - 1), op: "check", n: 1, rem: 0, retry: 1, reset: 6*s + 1, held: 3},
		12: {t: wat(4 * s), op: "release", id: "c", reset: 6 * s, held: 1},
		13: {t: wat(4 * s), op: "renew", id: "c", lease: s, reset: 6 * s, held: 1},
		14: {t: wat(4 * s), op: "renew", id: "a", lease: s, ok: true, reset: s, held: 1}, // may shorten
		15: {t: wat(4 * s), op: "renew", id: "a", lease: 0, reset: s, held: 1},
		16: {t: wat(5 * s), op: "renew", id: "a", lease: s, reset: 0, held: 0},
		17: {t: wat(5 * s), op: "acquire", id: "d", n: 3, lease: 2 * s, ok: true, rem: 0, reset: 2 * s, held: 3},
		// Limit lowered below what is held: denied until enough drains.
		18: {t: wat(5500 * time.Millisecond), op: "acquire", id: "e", n: 1, lease: s, limit: 1,
			rem: 0, retry: 1500 * time.Millisecond, reset: 1500 * time.Millisecond, held: 3},
		19: {t: wat(7 * s), op: "acquire", id: "e", n: 1, lease: s, limit: 1, ok: true, rem: 0, reset: s, held: 1},
	})
}

// TestConcurrencyClockBackwards: time going backwards is clamped on purpose;
// a call earlier than the last change is answered as at that change, so an
// expired lease stays expired and a lease is not held longer.
func TestConcurrencyClockBackwards(t *testing.T) {
	s := time.Second
	runLeaseSteps(t, 2, []leaseStep{
		0: {t: wat(0), op: "acquire", id: "a", n: 1, lease: 2 * s, ok: true, rem: 1, reset: 2 * s, held: 1},
		1: {t: wat(3 * s), op: "acquire", id: "b", n: 1, lease: 2 * s, ok: true, rem: 1, reset: 2 * s, held: 1},
		// At t0+1s, a would be live again: it is not.
		2: {t: wat(s), op: "check", n: 1, ok: true, rem: 0, reset: 2 * s, held: 1},
		3: {t: wat(s), op: "release", id: "a", reset: 2 * s, held: 1},
		4: {t: wat(s), op: "renew", id: "b", lease: 3 * s, ok: true, reset: 3 * s, held: 1},
		5: {t: -1, op: "acquire", id: "c", n: 2, lease: s, rem: 1, retry: 3 * s, reset: 3 * s, held: 1},
	})
}

func TestConcurrencyInvalid(t *testing.T) {
	var s Concurrency
	for _, d := range []Decision{
		s.Take(wt0, ConcurrencyParams{Limit: 0, Lease: time.Second, ID: "a"}, 1),
		s.Take(wt0, ConcurrencyParams{Limit: 1, Lease: 0, ID: "a"}, 1),
		s.Take(wt0, ConcurrencyParams{Limit: 1, Lease: time.Second, ID: "a"}, -1),
		s.Check(wt0, ConcurrencyParams{Limit: -1}, 1),
	} {
		if d.Allowed || d.RetryAfter != Never || len(s.leases) != 0 {
			t.Errorf("invalid call: %s, %d leases", fmtWD(d), len(s.leases))
		}
	}
	// A huge lease saturates instead of wrapping into the past.
	if d := s.Take(wt0, ConcurrencyParams{Limit: 1, Lease: time.Duration(maxInt64), ID: "a"}, 1); !d.Allowed || d.ResetAfter != time.Duration(maxInt64-wt0) {
		t.Errorf("huge lease: %s", fmtWD(d))
	}
	if !s.Renew(wt0+1, "a", time.Duration(maxInt64)) || s.Held(maxInt64-1) != 1 {
		t.Errorf("huge renew: held %d", s.Held(maxInt64-1))
	}
}

// refLeases is the reference model of Concurrency: every lease ever
// admitted, live while now < expiry.
type refLeases struct {
	limit  int64
	leases map[string]*lease
	last   int64
}

func (r *refLeases) now(t int64) int64 { return max(t, r.last) }

func (r *refLeases) live(now int64) (held int64, earliest, latest time.Duration, any bool) {
	earliest = time.Duration(maxInt64)
	for _, l := range r.leases {
		if l.expiry > now {
			held += l.units
			earliest = min(earliest, time.Duration(l.expiry-now))
			latest = max(latest, time.Duration(l.expiry-now))
			any = true
		}
	}
	return held, earliest, latest, any
}

func (r *refLeases) acquire(t int64, dur time.Duration, n int64, id string) Decision {
	now := r.now(t)
	held, earliest, latest, any := r.live(now)
	d := Decision{Limit: r.limit}
	if held+n <= r.limit {
		d.Allowed = true
		held += n
		if n > 0 {
			r.leases[id] = &lease{units: n, expiry: now + int64(dur)}
			r.last = now
			latest = max(latest, dur)
		}
	} else if n > r.limit {
		d.RetryAfter = Never
	} else if any {
		d.RetryAfter = earliest
	}
	d.Remaining = max(r.limit-held, 0)
	d.ResetAfter = latest
	return d
}

func (r *refLeases) release(t int64, id string) bool {
	now := r.now(t)
	l := r.leases[id]
	if l == nil || l.expiry <= now {
		return false
	}
	delete(r.leases, id)
	r.last = now
	return true
}

func (r *refLeases) renew(t int64, id string, dur time.Duration) bool {
	now := r.now(t)
	l := r.leases[id]
	if l == nil || l.expiry <= now {
		return false
	}
	l.expiry = now + int64(dur)
	r.last = now
	return true
}

// TestConcurrencyRandom drives Concurrency and the reference model with
// random calls, checking that they agree exactly, that failed calls change
// nothing, and (the property) that never more than limit units are held.
func TestConcurrencyRandom(t *testing.T) {
	steps := 5000
	if testing.Short() {
		steps = 1000
	}
	for seed := uint64(1); seed <= 8; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		limit := 1 + rng.Int64N(12)
		maxLease := int64(time.Millisecond) * (1 + rng.Int64N(5000))
		var s Concurrency
		ref := refLeases{limit: limit, leases: map[string]*lease{}}
		now := wt0
		nextID := 0
		var admitted, denied, released int
		for i := 0; i < steps; i++ {
			switch k := rng.IntN(10); {
			case k < 3:
			case k < 9:
				now += rng.Int64N(maxLease / 3)
			default:
				now -= rng.Int64N(maxLease)
			}
			oldID := strconv.Itoa(nextID - 1 - rng.IntN(int(limit)+3)) // recent, expired or unknown
			lease := time.Duration(1 + rng.Int64N(maxLease))
			before, _ := appendV1(&s, nil)
			var call string
			changed := false
			switch op := rng.IntN(10); {
			case op < 5:
				id := strconv.Itoa(nextID)
				n := rng.Int64N(limit/2 + 2)
				call = fmt.Sprintf("Acquire(%s, %d, %v, %d, %q)", fmtWT(now), limit, lease, n, id)
				chk, got := s.Check(now, ConcurrencyParams{Limit: limit}, n), s.Take(now, ConcurrencyParams{Limit: limit, Lease: lease, ID: id}, n)
				want := ref.acquire(now, lease, n, id)
				// Check does not know the lease: all but ResetAfter agree.
				if chk.Allowed != got.Allowed || chk.Remaining != got.Remaining || chk.RetryAfter != got.RetryAfter {
					t.Fatalf("seed %d step %d: Check = %s, %s = %s", seed, i, fmtWD(chk), call, fmtWD(got))
				}
				if got != want {
					t.Fatalf("seed %d step %d: %s = %s, want %s", seed, i, call, fmtWD(got), fmtWD(want))
				}
				if got.Allowed && n > 0 {
					nextID++
					admitted++
					changed = true
				} else if !got.Allowed {
					denied++
				}
			case op < 8:
				call = fmt.Sprintf("Release(%s, %q)", fmtWT(now), oldID)
				got, want := s.Release(now, oldID), ref.release(now, oldID)
				if got != want {
					t.Fatalf("seed %d step %d: %s = %v, want %v", seed, i, call, got, want)
				}
				if got {
					released++
				}
				changed = got
			default:
				call = fmt.Sprintf("Renew(%s, %q, %v)", fmtWT(now), oldID, lease)
				got, want := s.Renew(now, oldID, lease), ref.renew(now, oldID, lease)
				if got != want {
					t.Fatalf("seed %d step %d: %s = %v, want %v", seed, i, call, got, want)
				}
				changed = got
			}
			for id, l := range ref.leases { // expired for good: the clock is clamped
				if l.expiry <= ref.last {
					delete(ref.leases, id)
				}
			}
			held, _, latest, _ := ref.live(ref.now(now))
			if got := s.Held(now); got != held || got > limit {
				t.Fatalf("seed %d step %d: after %s: Held = %d, want %d (limit %d)", seed, i, call, got, held, limit)
			}
			if got := s.ResetAfter(now); got != latest {
				t.Fatalf("seed %d step %d: after %s: ResetAfter = %v, want %v", seed, i, call, got, latest)
			}
			after, _ := appendV1(&s, nil)
			if !changed && !bytes.Equal(before, after) {
				t.Fatalf("seed %d step %d: %s changed the state", seed, i, call)
			}
			if len(s.leases) > int(limit) {
				t.Fatalf("seed %d step %d: %d leases stored, limit %d", seed, i, len(s.leases), limit)
			}
			if i%89 == 0 {
				d, err := decodeConcurrency(after)
				if err != nil {
					t.Fatalf("seed %d step %d: decode: %v", seed, i, err)
				}
				s = *d
			}
		}
		if admitted < steps/20 || denied < steps/50 || released < steps/50 {
			t.Errorf("seed %d: %d admitted, %d denied, %d released: explores too little", seed, admitted, denied, released)
		}
	}
}

func TestConcurrencyEncoding(t *testing.T) {
	var full Concurrency
	full.Take(wt0, ConcurrencyParams{Limit: 10, Lease: time.Second, ID: "lease-a"}, 2)
	full.Take(wt0+1, ConcurrencyParams{Limit: 10, Lease: 3 * time.Second, ID: ""}, 1)
	full.Take(wt0+2, ConcurrencyParams{Limit: 10, Lease: 2 * time.Second, ID: "lease-\x00-c"}, 3)
	for name, s := range map[string]*Concurrency{"fresh": {}, "full": &full} {
		b, err := appendV1(s, []byte("prefix"))
		if err != nil || !bytes.HasPrefix(b, []byte("prefix")) {
			t.Fatalf("%s: appendV1 = %q, %v", name, b, err)
		}
		b = b[len("prefix"):]
		d, err := decodeConcurrency(b)
		if err != nil {
			t.Fatalf("%s: decodeConcurrency: %v", name, err)
		}
		if b2, _ := appendV1(d, nil); !bytes.Equal(b, b2) {
			t.Errorf("%s: re-encoding differs:\n%x\n%x", name, b, b2)
		}
		if d.Kind() != KindConcurrency || d.Size() <= 0 {
			t.Errorf("%s: kind %v size %d", name, d.Kind(), d.Size())
		}
		for _, now := range []int64{wt0 + 5, wt0 + int64(1500*time.Millisecond), wt0 + int64(5*time.Second)} {
			if s.Held(now) != d.Held(now) || s.ResetAfter(now) != d.ResetAfter(now) {
				t.Errorf("%s at %s: held %d/%d reset %v/%v", name, fmtWT(now), s.Held(now), d.Held(now), s.ResetAfter(now), d.ResetAfter(now))
			}
		}
		if name == "full" && !d.Release(wt0+3, "lease-\x00-c") {
			t.Errorf("restored lease id lost")
		}
		for i := 0; i < len(b); i++ {
			if _, err := decodeConcurrency(b[:i]); !errors.Is(err, ErrCorrupt) {
				t.Errorf("%s: decodeConcurrency of %d of %d bytes: %v, want ErrCorrupt", name, i, len(b), err)
			}
		}
		if _, err := decodeConcurrency(append(b, 0)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: trailing byte: %v, want ErrCorrupt", name, err)
		}
	}
	b, _ := appendV1(&full, nil)
	set := func(i int, v ...byte) []byte {
		c := bytes.Clone(b)
		copy(c[i:], v)
		return c
	}
	for name, c := range map[string][]byte{
		"version":        set(0, 2),
		"negative limit": set(8, 0x80),
		"count":          set(25, 4),
		"huge count":     set(25, 0xff, 0xff, 0xff, 0xff),
		"zero units":     set(29+8, 0),
		"id length":      set(29+16, 0xff),
	} {
		if _, err := decodeConcurrency(c); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: decodeConcurrency(%x) = %v, want ErrCorrupt", name, c, err)
		}
	}
}

func BenchmarkConcurrencyAcquireRelease(b *testing.B) {
	var s Concurrency
	const limit = 16
	for i := range limit / 2 { // half the permits held by long leases
		s.Take(wt0, ConcurrencyParams{Limit: limit, Lease: time.Hour, ID: "held-" + strconv.Itoa(i)}, 1)
	}
	ids := make([]string, 1024)
	for i := range ids {
		ids[i] = "lease-" + strconv.Itoa(i)
	}
	now := wt0
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		now += 1000
		id := ids[i%len(ids)]
		if !s.Take(now, ConcurrencyParams{Limit: limit, Lease: time.Minute, ID: id}, 1).Allowed || !s.Release(now, id) {
			b.Fatal("acquire/release failed")
		}
		i++
	}
}

// TestConcurrencyResetKeepsLeases: Reset makes a fresh state (the same
// decisions as a zero Concurrency) but keeps the lease slice, so a reused
// scratch state acquires without allocating.
func TestConcurrencyResetKeepsLeases(t *testing.T) {
	var c Concurrency
	for i := int64(0); i < 3; i++ {
		c.Take(1e9+i, ConcurrencyParams{Limit: 3, Lease: time.Second, ID: fmt.Sprint("id", i)}, 1)
	}
	c.Reset()
	var zero Concurrency
	for i := int64(0); i < 4; i++ {
		now := 5e9 + i
		id := fmt.Sprint("again", i)
		if got, want := c.Take(now, ConcurrencyParams{Limit: 3, Lease: time.Second, ID: id}, 1), zero.Take(now, ConcurrencyParams{Limit: 3, Lease: time.Second, ID: id}, 1); got != want {
			t.Fatalf("acquire %d after Reset = %+v, a fresh state says %+v", i, got, want)
		}
	}
	if allocs := testing.AllocsPerRun(100, func() {
		c.Reset()
		c.Take(9e9, ConcurrencyParams{Limit: 3, Lease: time.Second, ID: "id"}, 1)
	}); allocs != 0 {
		t.Fatalf("Reset then Acquire allocated %v times, want 0", allocs)
	}
}
