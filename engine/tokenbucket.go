package engine

import (
	"errors"
	"time"
	"unsafe"
)

// TokenBucketParams are the limits of a token bucket, as given to
// CL.TOKENBUCKET: it holds at most Capacity tokens and refills continuously
// at Rate tokens per Period.
type TokenBucketParams struct {
	Capacity int64         // tokens: the most the bucket holds
	Rate     int64         // tokens added per Period
	Period   time.Duration // the period Rate refers to
	// MaxWait > 0 enables RESERVE: a request servable within MaxWait is
	// admitted now and told to wait (RetryAfter). 0 disables it.
	MaxWait time.Duration
}

// Validate reports whether Capacity, Rate and Period are positive and
// MaxWait is not negative.
func (p TokenBucketParams) Validate() error {
	if !allPositive(p.Capacity, p.Rate, int64(p.Period)) || p.MaxWait < 0 {
		return errTokenBucketParams
	}
	return nil
}

var errTokenBucketParams = errors.New("engine: tokenbucket: capacity, rate and period must be positive, max_wait not negative")

// TokenBucket is the state of one key limited by a token bucket.
//
// The state is the backlog of mathutil.go, (Capacity − tokens)·Period in
// token·ns, which drains by exactly Rate per nanosecond: refills are exact
// (3 per second is one token every 333 333 333⅓ ns, with no drift however
// many calls land in between). In RESERVE debt the backlog exceeds
// Capacity·Period: tokens are negative and later callers queue behind it.
// The parameters last used are stored too (MaxWait is per request and is
// not).
//
// The zero value is a fresh key (a full bucket). A TokenBucket is not safe
// for concurrent use.
type TokenBucket struct {
	p TokenBucketParams // the parameters last used, MaxWait zeroed
	b backlog
}

var _ State = (*TokenBucket)(nil)

// Take asks for n tokens at now (ns since the Unix epoch) and takes them if
// admitted. n == 0 peeks (always Allowed, RetryAfter 0). A denied request
// changes nothing.
//
// The decision: Limit is Capacity; Remaining is ⌊tokens⌋, never below 0;
// ResetAfter is the time until the bucket is full, rounded up to whole ns.
// A request for more than Capacity is denied with RetryAfter Never.
// Otherwise, if n tokens exist it is admitted with RetryAfter 0; if not,
// RetryAfter is the time until n tokens exist (rounded up) and, with
// MaxWait > 0 and RetryAfter ≤ MaxWait, the request is admitted anyway: its
// tokens are taken now, putting the bucket in debt, and the caller must
// wait RetryAfter before acting.
//
// Parameters that differ from those last used take effect as of the last
// update: the token count then is carried over (rounded down to a multiple
// of 1/Period when Period changes, debt rounded up) and clamped to the new
// Capacity, and refills since then run at the new rate. Applying them there
// rather than at now keeps a denied call's answer true over time even
// though it stores nothing. Invalid parameters or a negative n are denied
// with Never; callers validate first.
func (s *TokenBucket) Take(now int64, p TokenBucketParams, n int64) Decision {
	d, nb := s.decide(now, p, n)
	if d.Allowed && n > 0 {
		s.p, s.b = p, nb
		s.p.MaxWait = 0
	}
	return d
}

// Check returns exactly what Take would return, without changing s.
func (s *TokenBucket) Check(now int64, p TokenBucketParams, n int64) Decision {
	d, _ := s.decide(now, p, n)
	return d
}

// decide is the core of Take and Check: it returns the decision and the
// backlog to store if the request is admitted, without mutating s.
func (s *TokenBucket) decide(now int64, p TokenBucketParams, n int64) (Decision, backlog) {
	if p.Validate() != nil || n < 0 {
		return Decision{Limit: p.Capacity, RetryAfter: Never}, s.b
	}
	now, back := s.at(now, p)
	full := mul64(uint64(p.Capacity), uint64(p.Period))
	d := Decision{Limit: p.Capacity}
	after := back
	switch need := back.add(mul64(uint64(n), uint64(p.Period))); {
	case n == 0:
		d.Allowed = true
	case n > p.Capacity:
		d.RetryAfter = Never
	case need.cmp(full) <= 0:
		d.Allowed = true
		after = need
	default:
		over := need.sub(full) // (n − tokens)·Period
		d.RetryAfter = durCeil(over, p.Rate)
		if p.MaxWait > 0 && over.cmp(mul64(uint64(p.MaxWait), uint64(p.Rate))) <= 0 {
			d.Allowed = true
			after = need
		}
	}
	d.Remaining = tokensFloor(full, after, int64(p.Period))
	d.ResetAfter = durCeil(after, p.Rate)
	return d, backlog{last: now, s: after}
}

// at returns the effective time and the backlog at now under valid
// parameters p: new parameters apply from the last update (see Take), so
// the stored backlog is carried over there, then refilled to now.
func (s *TokenBucket) at(now int64, p TokenBucketParams) (int64, u128) {
	back := s.b.s
	if !back.isZero() && (s.p.Capacity != p.Capacity || s.p.Period != p.Period) {
		back = s.carry(back, p)
	}
	return s.b.drain(now, back, p.Rate)
}

// GiveBack returns n tokens to the bucket at now (a refund of units taken
// before) and answers what a peek then would: Allowed, the tokens now
// available, the time until the bucket is full. The bucket never holds
// more than Capacity (nor less debt than none): tokens that would overflow
// are dropped. A fresh bucket, or n == 0, changes nothing. Invalid
// parameters or a negative n are answered as Take answers them, changing
// nothing.
//
// A Take of n at t followed by GiveBack of n at t2 >= t, with no other
// admission in between and the same parameters, leaves the state that
// answers every later call as if neither had happened: the backlog drains
// linearly and saturates at a full bucket, and the n·Period the take added
// is exactly what the give-back removes. With other admissions in between
// it is exact unless the bucket would have filled up in the meantime
// without the n tokens (then the refill lost to overflow is given back
// too: at most n tokens more than never taking would have left).
func (s *TokenBucket) GiveBack(now int64, p TokenBucketParams, n int64) Decision {
	if p.Validate() != nil || n < 0 {
		return Decision{Limit: p.Capacity, RetryAfter: Never}
	}
	if n == 0 || s.b.s.isZero() {
		return s.Check(now, p, 0)
	}
	now, back := s.at(now, p)
	back = back.sub(mul64(uint64(n), uint64(p.Period)))
	s.p, s.b = p, backlog{last: now, s: back}
	s.p.MaxWait = 0
	full := mul64(uint64(p.Capacity), uint64(p.Period))
	return Decision{Allowed: true, Limit: p.Capacity, Remaining: tokensFloor(full, back, int64(p.Period)), ResetAfter: durCeil(back, p.Rate)}
}

// carry converts a backlog under the stored parameters to one under p with
// the same number of tokens, clamped to p.Capacity.
func (s *TokenBucket) carry(back u128, p TokenBucketParams) u128 {
	if s.p.Validate() != nil {
		return u128{} // only a corrupt state gets here: start fresh
	}
	oldFull := mul64(uint64(s.p.Capacity), uint64(s.p.Period))
	newFull := mul64(uint64(p.Capacity), uint64(p.Period))
	samePeriod := s.p.Period == p.Period
	if back.cmp(oldFull) <= 0 {
		t := oldFull.sub(back) // tokens·old period
		if !samePeriod {
			t = t.mulDiv(uint64(p.Period), uint64(s.p.Period), false)
		}
		return newFull.sub(t) // 0 when t ≥ newFull: clamped to capacity
	}
	debt := back.sub(oldFull)
	if !samePeriod {
		debt = debt.mulDiv(uint64(p.Period), uint64(s.p.Period), true)
	}
	return newFull.add(debt)
}

// Kind returns KindTokenBucket.
func (s *TokenBucket) Kind() Kind { return KindTokenBucket }

// KindTokenBucket is the kind of token buckets. Its value is persisted: never change it.
const KindTokenBucket Kind = 2

func init() { register(KindTokenBucket, "tokenbucket", func() State { return new(TokenBucket) }) }

// Reset makes s a fresh key's state.
func (s *TokenBucket) Reset() { *s = TokenBucket{} }

// CopyTo copies s into dst, when dst is a TokenBucket (Copier).
func (s *TokenBucket) CopyTo(dst State) bool {
	d, ok := dst.(*TokenBucket)
	if ok {
		*d = *s
	}
	return ok
}

// Size returns the bytes a TokenBucket state holds (no pointers: just the struct).
func (s *TokenBucket) Size() int { return int(unsafe.Sizeof(*s)) }

// The compact codec of a TokenBucket (see compact.go for the shared format).

var _ State = (*TokenBucket)(nil)

// AppendCompact appends the compact encoding of s (see State and the
// bucket layout above) to b.
func (s *TokenBucket) AppendCompact(b []byte, ref int64) []byte {
	return appendBucketCompact(b, ref, s.p.Capacity, s.p.Rate, int64(s.p.Period), s.b)
}

// DecodeCompact replaces s with the state AppendCompact encoded in b with
// the same ref. It accepts the states decodeTokenBucket does and allocates
// nothing; on error s is left unchanged.
func (s *TokenBucket) DecodeCompact(b []byte, ref int64) error {
	a, rate, period, bk, err := decodeBucketCompact(b, ref)
	if err != nil {
		return err
	}
	p := TokenBucketParams{Capacity: a, Rate: rate, Period: time.Duration(period)}
	if (p != TokenBucketParams{} || !bk.s.isZero()) && p.Validate() != nil {
		return errCompactParams
	}
	s.p, s.b = p, bk
	return nil
}
