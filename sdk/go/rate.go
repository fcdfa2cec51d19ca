package rlserver

import (
	"context"
	"fmt"
	"time"
)

// Rate is a token bucket bound to one key, shaped like x/time/rate's
// Limiter: Allow, AllowN, Reserve, Wait. The clock is the server's, so the
// methods take no time argument. Errors that the failure policy does not
// answer count as denials in Allow/Reserve and are returned by Wait.
type Rate struct {
	l   *TokenBucket
	key string
}

// For returns key's bucket with an x/time/rate-shaped API.
func (l *TokenBucket) For(key string) *Rate { return &Rate{l: l, key: key} }

// Allow reports whether one token could be taken now.
func (r *Rate) Allow() bool { return r.AllowN(1) }

// AllowN reports whether n tokens could be taken now.
func (r *Rate) AllowN(n int) bool {
	d, err := r.l.AllowN(context.Background(), r.key, int64(n))
	return err == nil && d.Allowed
}

// Tokens is the number of whole tokens key's bucket holds now (a peek:
// nothing is taken); 0 while it is in reservation debt, and on an error.
// The server counts whole tokens, so there is no fraction.
func (r *Rate) Tokens() float64 {
	d, err := r.l.AllowN(context.Background(), r.key, 0)
	if err != nil {
		return 0
	}
	return float64(d.Remaining)
}

// Burst is the bucket's capacity (x/time/rate's burst).
func (r *Rate) Burst() int { return int(r.l.s.limit) }

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
	d, err := r.l.ReserveN(context.Background(), r.key, int64(n), forever)
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
	d, err := r.l.ReserveN(ctx, r.key, int64(n), maxWait)
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
