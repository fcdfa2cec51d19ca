package rlserver

import (
	"context"
	"strings"
	"time"
)

// Limiter is what the HTTP middleware and the generic helpers need: a
// decision for n units of key, and the policy window for RateLimit-Policy.
type Limiter interface {
	Decide(ctx context.Context, key string, n int64) (Decision, error)
	// Window is the policy's time window: the time to go from empty to
	// the full limit (a bucket's refill time, a window's length).
	Window() time.Duration
}

// base is the part every limiter shares: the command, its fixed
// parameters (formatted once) and the fallback spec.
type base struct {
	c      *Client
	cmd    string
	params []any // the positional parameters after the key
	rule   string
	s      spec
}

func newBase(c *Client, cmd, rule string, limit int64, window time.Duration, params ...string) base {
	b := base{c: c, cmd: cmd, rule: rule, s: spec{limit: limit, window: window}}
	b.s.id = rule
	for _, p := range params {
		b.params = append(b.params, p)
		b.s.id += " " + p
	}
	return b
}

// Window is the policy window (see Limiter).
func (b *base) Window() time.Duration { return b.s.window }

// Kind names the algorithm: tokenbucket, throttle, leakybucket, fixed,
// sliding, log or concurrency. Middleware puts it in its default key prefix,
// so that limiters of different kinds never share a key.
func (b *base) Kind() string {
	if b.rule == "ACQUIRE" {
		return "concurrency"
	}
	return strings.ToLower(b.rule)
}

// decide sends cmd key params... extra... and parses the decision.
func (b *base) decide(ctx context.Context, key string, n int64, extra ...any) (Decision, error) {
	args := make([]any, 0, 3+len(b.params)+len(extra))
	args = append(args, b.cmd, key)
	args = append(args, b.params...)
	args = append(args, n)
	args = append(args, extra...)
	v, err := b.c.do(ctx, args)
	if err != nil {
		return b.c.fail(ctx, b.cmd, key, err, b.s, n)
	}
	return parseDecision(v)
}

// Rule returns this limiter, for key, as a rule of All.
func (b *base) Rule(key string) Rule { return Rule{b: b, key: key} }

// TokenBucket: capacity tokens, refilled at rate per period (CL.TOKENBUCKET).
type TokenBucket struct {
	base
	capacity, rate int64
	period         time.Duration
}

// TokenBucket returns a token bucket limiter.
func (c *Client) TokenBucket(capacity, rate int64, period time.Duration) *TokenBucket {
	return &TokenBucket{newBase(c, "CL.TOKENBUCKET", "TOKENBUCKET", capacity, refillTime(capacity, rate, period),
		itoa(capacity), itoa(rate), dur(period)), capacity, rate, period}
}

// AllowN takes n tokens from key's bucket if it holds them.
func (l *TokenBucket) AllowN(ctx context.Context, key string, n int64) (Decision, error) {
	return l.decide(ctx, key, n)
}

// Decide is AllowN (see Limiter).
func (l *TokenBucket) Decide(ctx context.Context, key string, n int64) (Decision, error) {
	return l.decide(ctx, key, n)
}

// ReserveN takes n tokens now if they exist within maxWait: the decision
// is admitted and RetryAfter is how long to wait before acting.
func (l *TokenBucket) ReserveN(ctx context.Context, key string, n int64, maxWait time.Duration) (Decision, error) {
	return l.decide(ctx, key, n, "RESERVE", dur(maxWait))
}

// Throttle is redis-cell's GCRA: max_burst+1 at once, count per period.
// It is sent as a CL.ALL THROTTLE rule, whose reply is the decision in ms
// (CL.THROTTLE's own reply rounds to whole seconds).
type Throttle struct{ base }

// Throttle returns a GCRA limiter (CL.THROTTLE's parameters).
func (c *Client) Throttle(maxBurst, count int64, period time.Duration) *Throttle {
	return &Throttle{newBase(c, "CL.THROTTLE", "THROTTLE", maxBurst+1, refillTime(maxBurst+1, count, period),
		itoa(maxBurst), itoa(count), dur(period))}
}

// AllowN admits n units for key if the GCRA allows them.
func (l *Throttle) AllowN(ctx context.Context, key string, n int64) (Decision, error) {
	ad, err := l.c.All(ctx, n, l.Rule(key))
	if err != nil {
		return Decision{}, err
	}
	return ad.Decisions[0], nil
}

// Decide is AllowN (see Limiter).
func (l *Throttle) Decide(ctx context.Context, key string, n int64) (Decision, error) {
	return l.AllowN(ctx, key, n)
}

// LeakyBucket is a queue of capacity units draining at rate per period
// (CL.LEAKYBUCKET); an admitted decision's RetryAfter is the delay before
// acting so that work leaves at the constant rate.
type LeakyBucket struct{ base }

// LeakyBucket returns a leaky bucket limiter.
func (c *Client) LeakyBucket(capacity, rate int64, period time.Duration) *LeakyBucket {
	return &LeakyBucket{newBase(c, "CL.LEAKYBUCKET", "LEAKYBUCKET", capacity, refillTime(capacity, rate, period),
		itoa(capacity), itoa(rate), dur(period))}
}

// AllowN adds n units to key's bucket if they fit.
func (l *LeakyBucket) AllowN(ctx context.Context, key string, n int64) (Decision, error) {
	return l.decide(ctx, key, n)
}

// Decide is AllowN (see Limiter).
func (l *LeakyBucket) Decide(ctx context.Context, key string, n int64) (Decision, error) {
	return l.decide(ctx, key, n)
}

// WindowMode selects CL.WINDOW's algorithm.
type WindowMode string

const (
	Fixed   WindowMode = "FIXED"   // epoch-aligned fixed windows
	Sliding WindowMode = "SLIDING" // sliding-window counter, O(1)
	Log     WindowMode = "LOG"     // exact sliding log, O(limit)
)

// WindowLimiter admits at most limit units per window (CL.WINDOW).
type WindowLimiter struct {
	base
	mode any
}

// Window returns a window limiter of the given mode.
func (c *Client) Window(mode WindowMode, limit int64, window time.Duration) *WindowLimiter {
	return &WindowLimiter{base: newBase(c, "CL.WINDOW", string(mode), limit, window, itoa(limit), dur(window)), mode: string(mode)}
}

// AllowN admits n units for key if the window has room.
func (l *WindowLimiter) AllowN(ctx context.Context, key string, n int64) (Decision, error) {
	return l.decide(ctx, key, n, l.mode)
}

// Decide is AllowN (see Limiter).
func (l *WindowLimiter) Decide(ctx context.Context, key string, n int64) (Decision, error) {
	return l.decide(ctx, key, n, l.mode)
}
