package engine

import (
	"errors"
	"time"
	"unsafe"
)

// GCRAParams are the limits of a GCRA limiter, as given to CL.THROTTLE and
// GCRA: Count units per Period on average, with bursts of up to MaxBurst+1
// units at once.
type GCRAParams struct {
	MaxBurst int64         // units: extra burst beyond one; the limit is MaxBurst+1
	Count    int64         // units admitted per Period at the steady rate
	Period   time.Duration // the period Count refers to
}

// Validate reports whether Count and Period are positive and MaxBurst is not
// negative (0 is redis-cell's "no burst": a limit of one).
func (p GCRAParams) Validate() error {
	if p.MaxBurst < 0 || !allPositive(p.Count, int64(p.Period)) {
		return errGCRAParams
	}
	return nil
}

var errGCRAParams = errors.New("engine: gcra: count and period must be positive, max_burst not negative")

// Limit returns MaxBurst+1 (saturating at the largest int64): the most units
// that can ever be admitted at once.
func (p GCRAParams) Limit() int64 {
	if p.MaxBurst >= maxInt64 {
		return maxInt64
	}
	return p.MaxBurst + 1
}

// GCRA is the state of one key limited by the generic cell rate algorithm,
// with the semantics and replies of redis-cell's CL.THROTTLE.
//
// redis-cell keeps the theoretical arrival time (TAT) and an emission
// interval EI = period/count truncated to whole ns, admits n when
// max(TAT, now) + n·EI − DVT ≤ now with DVT = EI·limit, and answers
// remaining = (DVT − (TAT − now))/EI computed in whole microseconds. That
// truncation is what lets remaining exceed the limit at high rates
// (redis-cell issue 50: at 6000/s, EI = 166 666.67 ns becomes 166 µs and
// remaining 6025 of 6001). Here nothing is truncated: the state is the time
// of the last update and TAT − last multiplied by Count, the backlog of
// mathutil.go in token·ns. It drains by Count per ns, grows by Period per
// unit admitted, and DVT·Count = limit·Period, so the admission test is
// exact and remaining = ⌊limit − backlog/Period⌋ ≤ limit at any rate. Only
// the durations handed out are rounded, up, to whole nanoseconds. The last
// update time is kept (redis-cell has none) to clamp time going backwards.
//
// The zero value is a fresh key. A GCRA is not safe for concurrent use.
type GCRA struct {
	p GCRAParams // the parameters last used
	b backlog
}

var _ State = (*GCRA)(nil)

// Take asks for n units at now (ns since the Unix epoch) and consumes them
// if admitted. n == 0 peeks. A denied request changes nothing. The decision
// follows redis-cell: Limit is MaxBurst+1; a denied request's RetryAfter is
// the time until it would be admitted, or Never when n exceeds the limit;
// ResetAfter is the time until the key is fresh again (TAT − now).
// Parameters that differ from those last used take effect as of the last
// update: the TAT (the time the key becomes fresh again) is kept, clamped
// so that TAT − last ≤ the new DVT. Applying them there rather than at now
// keeps a denied call's answer true over time even though it stores
// nothing: waiting RetryAfter with the same parameters is enough. Invalid
// parameters or a negative n are denied with Never; callers validate first.
func (s *GCRA) Take(now int64, p GCRAParams, n int64) Decision {
	d, nb := s.decide(now, p, n)
	if d.Allowed && n > 0 {
		s.p, s.b = p, nb
	}
	return d
}

// Check returns exactly what Take would return, without changing s.
func (s *GCRA) Check(now int64, p GCRAParams, n int64) Decision {
	d, _ := s.decide(now, p, n)
	return d
}

// decide is the core of Take and Check: it returns the decision and the
// backlog to store if the request is admitted, without mutating s.
func (s *GCRA) decide(now int64, p GCRAParams, n int64) (Decision, backlog) {
	limit := p.Limit()
	if p.Validate() != nil || n < 0 {
		return Decision{Limit: limit, RetryAfter: Never}, s.b
	}
	full := mul64(uint64(limit), uint64(p.Period)) // DVT·Count
	now, back := s.at(now, p, full)
	d := Decision{Limit: limit}
	after := back
	switch need := back.add(mul64(uint64(n), uint64(p.Period))); {
	case n == 0:
		d.Allowed = true
	case n > limit:
		d.RetryAfter = Never
	case need.cmp(full) <= 0:
		d.Allowed = true
		after = need
	default:
		d.RetryAfter = durCeil(need.sub(full), p.Count)
	}
	d.Remaining = tokensFloor(full, after, int64(p.Period))
	d.ResetAfter = durCeil(after, p.Count)
	return d, backlog{last: now, s: after}
}

// at returns the effective time and the backlog at now under valid
// parameters p, whose DVT·Count is full: new parameters apply from the
// last update (see Take), so the stored backlog is converted and clamped
// there, then drained to now.
func (s *GCRA) at(now int64, p GCRAParams, full u128) (int64, u128) {
	// Keep TAT − last = back/Count: rescale to the new count.
	return s.b.drain(now, s.b.carried(s.p.Count, p.Count, full), p.Count)
}

// GiveBack returns n units at now (a refund of units taken before): the
// TAT moves back by n emission intervals, never before now (a fresh key).
// It answers what a peek then would: Allowed, the units now available,
// the time until the key is fresh. A fresh key, or n == 0, changes
// nothing. Invalid parameters or a negative n are answered as Take answers
// them, changing nothing.
//
// A Take of n at t followed by GiveBack of n at t2 >= t, with no other
// admission in between and the same parameters, leaves the state that
// answers every later call as if neither had happened (the TAT is
// max(TAT, now) + n·EI after the take, and max(TAT, now) − n·EI clamped at
// now takes exactly that back). With other admissions in between it is
// exact unless the key would have become fresh in the meantime without the
// n units (then the idle time lost is given back too: at most n units more
// than never taking would have left).
func (s *GCRA) GiveBack(now int64, p GCRAParams, n int64) Decision {
	limit := p.Limit()
	if p.Validate() != nil || n < 0 {
		return Decision{Limit: limit, RetryAfter: Never}
	}
	if n == 0 || s.b.s.isZero() {
		return s.Check(now, p, 0)
	}
	full := mul64(uint64(limit), uint64(p.Period))
	now, back := s.at(now, p, full)
	back = back.sub(mul64(uint64(n), uint64(p.Period)))
	s.p, s.b = p, backlog{last: now, s: back}
	return Decision{Allowed: true, Limit: limit, Remaining: tokensFloor(full, back, int64(p.Period)), ResetAfter: durCeil(back, p.Count)}
}

// Kind returns KindThrottle.
func (s *GCRA) Kind() Kind { return KindThrottle }

// KindThrottle is the kind of GCRA: CL.THROTTLE, GCRA and THROTTLE rules share it. Its value is persisted: never change it.
const KindThrottle Kind = 1

func init() { register(KindThrottle, "throttle", func() State { return new(GCRA) }) }

// Reset makes s a fresh key's state.
func (s *GCRA) Reset() { *s = GCRA{} }

// CopyTo copies s into dst, when dst is a GCRA (Copier).
func (s *GCRA) CopyTo(dst State) bool {
	d, ok := dst.(*GCRA)
	if ok {
		*d = *s
	}
	return ok
}

// Size returns the bytes a GCRA state holds (no pointers: just the struct).
func (s *GCRA) Size() int { return int(unsafe.Sizeof(*s)) }

// The compact codec of a GCRA (see compact.go for the shared format).

var _ State = (*GCRA)(nil)

// AppendCompact appends the compact encoding of s (see State and the
// bucket layout above) to b.
func (s *GCRA) AppendCompact(b []byte, ref int64) []byte {
	return appendBucketCompact(b, ref, s.p.MaxBurst, s.p.Count, int64(s.p.Period), s.b)
}

// DecodeCompact replaces s with the state AppendCompact encoded in b with
// the same ref. It accepts the states decodeGCRA does and allocates nothing;
// on error s is left unchanged.
func (s *GCRA) DecodeCompact(b []byte, ref int64) error {
	a, rate, period, bk, err := decodeBucketCompact(b, ref)
	if err != nil {
		return err
	}
	p := GCRAParams{MaxBurst: a, Count: rate, Period: time.Duration(period)}
	if (p != GCRAParams{} || !bk.s.isZero()) && p.Validate() != nil {
		return errCompactParams
	}
	s.p, s.b = p, bk
	return nil
}
