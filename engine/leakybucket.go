package engine

import (
	"errors"
	"time"
	"unsafe"
)

// LeakyBucketParams are the limits of a leaky bucket, as given to
// CL.LEAKYBUCKET: it holds at most Capacity units and drains at Rate units
// per Period.
type LeakyBucketParams struct {
	Capacity int64         // units: the most the bucket holds
	Rate     int64         // units drained per Period
	Period   time.Duration // the period Rate refers to
}

// Validate reports whether every field is positive.
func (p LeakyBucketParams) Validate() error {
	if !allPositive(p.Capacity, p.Rate, int64(p.Period)) {
		return errLeakyBucketParams
	}
	return nil
}

var errLeakyBucketParams = errors.New("engine: leakybucket: capacity, rate and period must be positive")

// LeakyBucket is the state of one key limited by a leaky bucket used as a
// queue (nginx limit_req with burst=, without nodelay): admitted work is
// released at the constant rate, and each admitted request is told how long
// to wait for its turn.
//
// The state is the backlog of mathutil.go, level·Period in unit·ns, which
// drains by exactly Rate per nanosecond (no drift). The level is fractional
// while it drains; Remaining counts it rounded up, so Remaining is exactly
// the largest n that would be admitted now.
//
// The zero value is a fresh key (an empty bucket). A LeakyBucket is not safe
// for concurrent use.
type LeakyBucket struct {
	p LeakyBucketParams // the parameters last used
	b backlog
}

var _ State = (*LeakyBucket)(nil)

// Take asks to add n units at now (ns since the Unix epoch) and adds them if
// they fit. n == 0 peeks (always Allowed, RetryAfter 0). A denied request
// changes nothing.
//
// The decision: Limit is Capacity; Remaining is Capacity − ⌈level⌉ after
// the call; ResetAfter is the time until the bucket is empty. An admitted
// request's RetryAfter is the time for the level before it to drain (0 when
// the bucket was empty): the caller acts after it, so admitted work leaves
// at the constant rate. A request that would overflow (level + n >
// Capacity) is denied with RetryAfter the time until it fits, or Never when
// n > Capacity. Durations are rounded up to whole ns.
//
// Parameters that differ from those last used take effect as of the last
// update: the level then is carried over (rounded up to a multiple of
// 1/Period when Period changes) and clamped to the new Capacity, and it
// drains since then at the new rate. Applying them there rather than at
// now keeps a denied call's answer true over time even though it stores
// nothing. Invalid parameters or a negative n are denied with Never;
// callers validate first.
func (s *LeakyBucket) Take(now int64, p LeakyBucketParams, n int64) Decision {
	d, nb := s.decide(now, p, n)
	if d.Allowed && n > 0 {
		s.p, s.b = p, nb
	}
	return d
}

// Check returns exactly what Take would return, without changing s.
func (s *LeakyBucket) Check(now int64, p LeakyBucketParams, n int64) Decision {
	d, _ := s.decide(now, p, n)
	return d
}

// decide is the core of Take and Check: it returns the decision and the
// backlog to store if the request is admitted, without mutating s.
func (s *LeakyBucket) decide(now int64, p LeakyBucketParams, n int64) (Decision, backlog) {
	if p.Validate() != nil || n < 0 {
		return Decision{Limit: p.Capacity, RetryAfter: Never}, s.b
	}
	// New parameters apply from the last update (see Take): carry the
	// stored level over there, then drain it to now.
	full := mul64(uint64(p.Capacity), uint64(p.Period))
	now, back := s.b.drain(now, s.b.carried(int64(s.p.Period), int64(p.Period), full), p.Rate)
	d := Decision{Limit: p.Capacity}
	after := back
	switch need := back.add(mul64(uint64(n), uint64(p.Period))); {
	case n == 0:
		d.Allowed = true
	case n > p.Capacity:
		d.RetryAfter = Never
	case need.cmp(full) <= 0:
		d.Allowed = true
		d.RetryAfter = durCeil(back, p.Rate)
		after = need
	default:
		d.RetryAfter = durCeil(need.sub(full), p.Rate)
	}
	d.Remaining = tokensFloor(full, after, int64(p.Period))
	d.ResetAfter = durCeil(after, p.Rate)
	return d, backlog{last: now, s: after}
}

// Kind returns KindLeakyBucket.
func (s *LeakyBucket) Kind() Kind { return KindLeakyBucket }

// KindLeakyBucket is the kind of leaky buckets. Its value is persisted: never change it.
const KindLeakyBucket Kind = 3

func init() { register(KindLeakyBucket, "leakybucket", func() State { return new(LeakyBucket) }) }

// Reset makes s a fresh key's state.
func (s *LeakyBucket) Reset() { *s = LeakyBucket{} }

// CopyTo copies s into dst, when dst is a LeakyBucket (Copier).
func (s *LeakyBucket) CopyTo(dst State) bool {
	d, ok := dst.(*LeakyBucket)
	if ok {
		*d = *s
	}
	return ok
}

// Size returns the bytes a LeakyBucket state holds (no pointers: just the struct).
func (s *LeakyBucket) Size() int { return int(unsafe.Sizeof(*s)) }

// The compact codec of a LeakyBucket (see compact.go for the shared format).

var _ State = (*LeakyBucket)(nil)

// AppendCompact appends the compact encoding of s (see State and the
// bucket layout above) to b.
func (s *LeakyBucket) AppendCompact(b []byte, ref int64) []byte {
	return appendBucketCompact(b, ref, s.p.Capacity, s.p.Rate, int64(s.p.Period), s.b)
}

// DecodeCompact replaces s with the state AppendCompact encoded in b with
// the same ref. It accepts the states decodeLeakyBucket does and allocates
// nothing; on error s is left unchanged.
func (s *LeakyBucket) DecodeCompact(b []byte, ref int64) error {
	a, rate, period, bk, err := decodeBucketCompact(b, ref)
	if err != nil {
		return err
	}
	p := LeakyBucketParams{Capacity: a, Rate: rate, Period: time.Duration(period)}
	if (p != LeakyBucketParams{} || !bk.s.isZero()) && p.Validate() != nil {
		return errCompactParams
	}
	s.p, s.b = p, bk
	return nil
}
