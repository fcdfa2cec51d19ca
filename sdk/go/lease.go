package rlserver

import (
	"context"
	"time"
)

// Concurrency limits units held at once by leases that expire unless
// renewed (CL.ACQUIRE, CL.RELEASE, CL.RENEW).
type Concurrency struct{ base }

// Concurrency returns a concurrency limiter: at most limit units held,
// each lease expiring after lease unless renewed.
func (c *Client) Concurrency(limit int64, lease time.Duration) *Concurrency {
	return &Concurrency{base: newBase(c, "CL.ACQUIRE", "ACQUIRE", limit, lease, itoa(limit), dur(lease))}
}

// Lease is held units of a Concurrency limiter. A lease answered by the
// failure policy has an empty ID and is released locally.
type Lease struct {
	ID  string
	c   *Client
	s   spec
	key string
	n   int64
	// local: held in the in-process fallback (FailLocal), released there.
	local bool
}

// Acquire takes n units for key; the lease is nil when denied.
func (l *Concurrency) Acquire(ctx context.Context, key string, n int64) (*Lease, Decision, error) {
	v, err := l.c.do(ctx, []any{"CL.ACQUIRE", key, l.params[0], l.params[1], n})
	if err != nil {
		if perr := l.c.policy(ctx, "CL.ACQUIRE", key, err); perr != nil {
			return nil, Decision{}, perr
		}
		mode := l.c.opts.Failure
		local := mode == FailLocal && l.c.local.acquire(l.s, key, n)
		if mode != FailOpen && !local {
			r := l.c.opts.ClosedRetryAfter
			return nil, Decision{Limit: l.s.limit, RetryAfter: r, ResetAfter: r, Fallback: true}, nil
		}
		return &Lease{c: l.c, s: l.s, key: key, n: n, local: local}, Decision{Allowed: true, Limit: l.s.limit, Fallback: true}, nil
	}
	d, err := parseDecision(v)
	if err != nil || !d.Allowed {
		return nil, d, err
	}
	return &Lease{ID: leaseID(v), c: l.c, s: l.s, key: key, n: n}, d, nil
}

// leaseID is the sixth element of an admitted CL.ACQUIRE reply.
func leaseID(v any) string {
	if arr, ok := v.([]any); ok && len(arr) > 5 {
		id, _ := arr[5].(string)
		return id
	}
	return ""
}

// Decide acquires and forgets the lease, which then expires by itself
// (Middleware instead releases it when the handler returns).
func (l *Concurrency) Decide(ctx context.Context, key string, n int64) (Decision, error) {
	_, d, err := l.Acquire(ctx, key, n)
	return d, err
}

// Do acquires n units for key, runs fn, and always releases the lease,
// even when fn panics or ctx is cancelled. It returns ErrLimited when denied.
func (l *Concurrency) Do(ctx context.Context, key string, n int64, fn func(context.Context) error) (Decision, error) {
	lease, d, err := l.Acquire(ctx, key, n)
	if err != nil {
		return d, err
	}
	if lease == nil {
		return d, ErrLimited
	}
	defer lease.Release(context.WithoutCancel(ctx))
	return d, fn(ctx)
}

// Release returns the lease's units: true if it was held, false when it
// was unknown or had expired.
func (le *Lease) Release(ctx context.Context) (bool, error) {
	if le.ID == "" {
		if le.local {
			le.c.local.release(le.s, le.key, le.n)
		}
		return true, nil
	}
	return le.intReply(ctx, "CL.RELEASE", le.key, le.ID)
}

// Renew extends the lease to expire d from now: false if it had expired.
func (le *Lease) Renew(ctx context.Context, d time.Duration) (bool, error) {
	if le.ID == "" {
		return true, nil
	}
	return le.intReply(ctx, "CL.RENEW", le.key, le.ID, dur(d))
}

func (le *Lease) intReply(ctx context.Context, args ...any) (bool, error) {
	v, err := le.c.do(ctx, args)
	if err != nil {
		return false, err
	}
	return v == int64(1), nil
}
