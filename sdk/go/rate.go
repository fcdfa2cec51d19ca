package rlserver

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"
)

// Rate is a token bucket bound to one key, shaped like x/time/rate's
// Limiter: Allow, AllowN, Reserve, Wait. The clock is the server's, so the
// methods take no time argument. Errors that the failure policy does not
// answer count as denials in Allow/Reserve and are returned by Wait.
type Rate struct {
	mu     sync.Mutex
	l      *TokenBucket // replaced by SetLimit and SetBurst
	key    string
	burst  int64
	rate   int64 // tokens per period, as the server takes them
	period time.Duration
}

// For returns key's bucket with an x/time/rate-shaped API.
func (l *TokenBucket) For(key string) *Rate {
	return &Rate{l: l, key: key, burst: l.capacity, rate: l.rate, period: l.period}
}

// bucket is the limiter the next call uses.
func (r *Rate) bucket() *TokenBucket {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.l
}

// Limit is the refill rate in tokens per second (x/time/rate's Limit).
func (r *Rate) Limit() float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return float64(r.rate) / r.period.Seconds()
}

// SetLimit makes later calls refill at perSecond tokens a second, as
// x/time/rate's SetLimit; it is sent as a whole number of tokens per
// period (2.5 is 25 per 10s, 0.001 one per 1000s), to a millionth of a
// token a second. It changes this Rate only: the TokenBucket it came from,
// and other Rates, keep their parameters. The server keeps the key's state
// across the change (parameters travel with every call): the tokens the
// bucket holds stay, and refill at the new rate from the next call. A
// perSecond that is not positive and finite is refused by the server: calls
// then fail (Allow is false, Wait returns the error).
func (r *Rate) SetLimit(perSecond float64) {
	rate, period := ratePerPeriod(perSecond)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rate, r.period = rate, period
	r.l = r.l.c.TokenBucket(r.burst, rate, period)
}

// SetBurst makes later calls use a bucket of newBurst tokens, as
// x/time/rate's SetBurst (this Rate only, as SetLimit). The server keeps
// the key's state: a bucket holding more tokens than newBurst is clamped to
// it, one holding fewer keeps them and refills up to newBurst (a key whose
// bucket was full has expired, and starts full at newBurst).
func (r *Rate) SetBurst(newBurst int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.burst = int64(newBurst)
	r.l = r.l.c.TokenBucket(r.burst, r.rate, r.period)
}

// ratePerPeriod writes perSecond as whole tokens per period: per 1s, 10s,
// ... up to 10⁶ s, the first that makes the count whole (rounded there).
func ratePerPeriod(perSecond float64) (int64, time.Duration) {
	if !(perSecond > 0) || perSecond >= 1<<53 {
		return 0, time.Second // refused by the server (infinity and NaN too)
	}
	period := time.Second
	for n := perSecond; ; n *= 10 {
		if math.Abs(n-math.Round(n)) <= 1e-9*n || period == 1e6*time.Second {
			return int64(math.Round(n)), period
		}
		period *= 10
	}
}

// Allow reports whether one token could be taken now.
func (r *Rate) Allow() bool { return r.AllowN(1) }

// AllowN reports whether n tokens could be taken now.
func (r *Rate) AllowN(n int) bool {
	d, err := r.bucket().AllowN(context.Background(), r.key, int64(n))
	return err == nil && d.Allowed
}

// Tokens is the number of whole tokens key's bucket holds now (a peek:
// nothing is taken); 0 while it is in reservation debt, and on an error.
// The server counts whole tokens, so there is no fraction.
func (r *Rate) Tokens() float64 {
	d, err := r.bucket().AllowN(context.Background(), r.key, 0)
	if err != nil {
		return 0
	}
	return float64(d.Remaining)
}

// Burst is the bucket's capacity (x/time/rate's burst).
func (r *Rate) Burst() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return int(r.burst)
}

// Reservation is a reservation of tokens: act after Delay if OK.
type Reservation struct {
	ok       bool
	Decision Decision
}

// OK reports whether the tokens were reserved (false when n exceeds the
// capacity, or on an error).
func (rv *Reservation) OK() bool { return rv.ok }

// Delay is how long to wait before acting on the reservation.
func (rv *Reservation) Delay() time.Duration {
	if !rv.ok {
		return Never
	}
	return rv.Decision.RetryAfter
}

// forever is the RESERVE max_wait used when the caller sets no bound.
const forever = 365 * 24 * time.Hour

// Reserve reserves one token.
func (r *Rate) Reserve() *Reservation { return r.ReserveN(1) }

// ReserveN reserves n tokens, however long the wait (as x/time/rate).
func (r *Rate) ReserveN(n int) *Reservation {
	d, err := r.bucket().ReserveN(context.Background(), r.key, int64(n), forever)
	return &Reservation{ok: err == nil && d.Allowed, Decision: d}
}

// Wait blocks until one token is available or ctx ends.
func (r *Rate) Wait(ctx context.Context) error { return r.WaitN(ctx, 1) }

// WaitN reserves n tokens if they come before ctx's deadline, then waits
// for them. If ctx ends during the wait the tokens stay spent (the server
// has no cancel).
func (r *Rate) WaitN(ctx context.Context, n int) error {
	maxWait := forever
	if dl, ok := ctx.Deadline(); ok {
		maxWait = time.Until(dl)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if maxWait < time.Millisecond {
		return fmt.Errorf("rlserver: Wait(n=%d) would exceed context deadline", n)
	}
	d, err := r.bucket().ReserveN(ctx, r.key, int64(n), maxWait)
	if err != nil {
		return err
	}
	if !d.Allowed {
		if d.RetryAfter == Never {
			return fmt.Errorf("rlserver: Wait(n=%d) exceeds the capacity %d", n, d.Limit)
		}
		return fmt.Errorf("rlserver: Wait(n=%d) would exceed context deadline", n)
	}
	if d.RetryAfter <= 0 {
		return nil
	}
	t := time.NewTimer(d.RetryAfter)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
