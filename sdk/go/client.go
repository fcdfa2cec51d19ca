package rlserver

import (
	"context"
	"errors"
	"log"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// FailureMode says what a limiter answers while the server is unreachable
// (a network error, a timeout, or a -LOADING/-CLUSTERDOWN/-TRYAGAIN/-MASTERDOWN reply).
// Other server errors (bad arguments, WRONGTYPE, a wrong password) are
// always returned; configuration errors are also logged and passed to OnError.
type FailureMode int

const (
	// FailError returns the error to the caller (the zero value).
	FailError FailureMode = iota
	// FailOpen admits the request (Decision.Fallback is set).
	FailOpen
	// FailClosed denies the request with RetryAfter = Options.ClosedRetryAfter.
	FailClosed
	// FailLocal decides with an in-process limiter of the same limit and
	// window, per key, until the server answers again.
	FailLocal
)

// ErrorEvent describes a call that failed for a reason other than the
// caller's own: the server was unreachable (the failure policy answered) or
// the set-up is wrong (Config: the error is returned whatever the policy).
type ErrorEvent struct {
	Command string      // e.g. "CL.TOKENBUCKET"
	Key     string      // the limited key (the first key for All)
	Err     error       // what went wrong
	Mode    FailureMode // what answered instead (FailError when Config)
	// Config is set for a configuration error: a wrong or missing password
	// (WRONGPASS, NOAUTH), a user without the permission (NOPERM), a key
	// holding another limiter's state (WRONGTYPE), or a server without the
	// command (ERR unknown command). No failure policy hides these.
	Config bool
}

// Options configure a Client and the limiters made from it.
type Options struct {
	// Timeout bounds each call (0: none). It is applied through the context,
	// which go-redis honours on the connection when its ContextTimeoutEnabled
	// option is set; otherwise its ReadTimeout/WriteTimeout apply.
	Timeout time.Duration
	// Failure is the policy while the server is unreachable.
	Failure FailureMode
	// OnError is called (synchronously) each time the failure policy answers
	// and for each configuration error (ErrorEvent.Config): count it, log
	// it, export it as a metric.
	OnError func(ErrorEvent)
	// ClosedRetryAfter is the RetryAfter of a fail-closed decision (default 1s).
	ClosedRetryAfter time.Duration
	// Logf logs configuration errors (see ErrorEvent.Config), which are
	// always logged as well as passed to OnError. Default: log.Printf.
	Logf func(format string, args ...any)
}

// Client makes limiters over a go-redis UniversalClient, so a standalone
// server, a cluster (go-redis ClusterClient) and a failover client all work.
type Client struct {
	rdb   redis.UniversalClient
	opts  Options
	local *localStore
}

// New returns a Client using rdb with the given options.
func New(rdb redis.UniversalClient, opts Options) *Client {
	return &Client{rdb: rdb, opts: withDefaults(opts), local: newLocalStore(time.Now)}
}

func withDefaults(opts Options) Options {
	if opts.ClosedRetryAfter <= 0 {
		opts.ClosedRetryAfter = time.Second
	}
	if opts.Logf == nil {
		opts.Logf = log.Printf
	}
	return opts
}

// Check sends PING under the client's timeout, so that a wrong or missing
// password is found at start: call it once after New. A configuration error
// is logged and passed to OnError; any error is returned.
func (c *Client) Check(ctx context.Context) error {
	_, err := c.do(ctx, []any{"PING"})
	if err != nil && misconfigured(err) {
		c.report(ErrorEvent{Command: "PING", Err: err, Mode: FailError, Config: true})
	}
	return err
}

// WithOptions returns a Client sharing rdb and the local fallback state but
// with other options: a per-limiter timeout or failure policy.
func (c *Client) WithOptions(opts Options) *Client {
	return &Client{rdb: c.rdb, opts: withDefaults(opts), local: c.local}
}

// Redis returns the underlying go-redis client.
func (c *Client) Redis() redis.UniversalClient { return c.rdb }

// do runs one command under the per-call timeout.
func (c *Client) do(ctx context.Context, args []any) (any, error) {
	if c.opts.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.opts.Timeout)
		defer cancel()
	}
	return c.rdb.Do(ctx, args...).Result()
}

// unreachable tells a transport failure (the policy applies) from a server
// error about the request itself (returned as is).
func unreachable(err error) bool {
	if err == nil || errors.Is(err, redis.Nil) {
		return false
	}
	var rerr redis.Error
	if errors.As(err, &rerr) {
		msg := rerr.Error()
		for _, p := range []string{"LOADING", "CLUSTERDOWN", "TRYAGAIN", "MASTERDOWN"} {
			if strings.HasPrefix(msg, p) {
				return true
			}
		}
		// go-redis wraps pool and network errors separately; an error
		// reply from the server is about the request.
		return false
	}
	return true
}

// misconfigured tells the error replies that mean the set-up is wrong, not
// the request: they are reported loudly, never answered by the policy.
func misconfigured(err error) bool {
	var rerr redis.Error
	if !errors.As(err, &rerr) {
		return false
	}
	msg := rerr.Error()
	for _, p := range []string{"WRONGTYPE", "WRONGPASS", "NOAUTH", "NOPERM", "ERR unknown command", "ERR AUTH"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// report passes e to OnError and, for a configuration error, logs it.
func (c *Client) report(e ErrorEvent) {
	if e.Config {
		c.opts.Logf("rlserver: configuration error on %s %q: %v", e.Command, e.Key, e.Err)
	}
	if c.opts.OnError != nil {
		c.opts.OnError(e)
	}
}

// spec is what the local fallback needs to know of a limiter.
type spec struct {
	id     string        // the limiter's parameters, so two limiters never share local state
	limit  int64         // capacity or limit
	window time.Duration // time to go from empty to full
}

// policy returns err when the caller must get it: a server error about the
// request (a configuration error is reported first), the caller's own
// context ending, or FailError. Otherwise it calls OnError and returns nil:
// the failure policy answers.
func (c *Client) policy(ctx context.Context, cmd, key string, err error) error {
	if misconfigured(err) {
		c.report(ErrorEvent{Command: cmd, Key: key, Err: err, Mode: FailError, Config: true})
		return err
	}
	if !unreachable(err) || ctx.Err() != nil || c.opts.Failure == FailError {
		return err
	}
	c.report(ErrorEvent{Command: cmd, Key: key, Err: err, Mode: c.opts.Failure})
	return nil
}

// fail applies the failure policy to err, or returns it.
func (c *Client) fail(ctx context.Context, cmd, key string, err error, s spec, n int64) (Decision, error) {
	if err := c.policy(ctx, cmd, key, err); err != nil {
		return Decision{}, err
	}
	switch c.opts.Failure {
	case FailOpen:
		return Decision{Allowed: true, Limit: s.limit, Remaining: s.limit, Fallback: true}, nil
	case FailClosed:
		r := c.opts.ClosedRetryAfter
		return Decision{Limit: s.limit, RetryAfter: r, ResetAfter: r, Fallback: true}, nil
	default:
		return c.local.take(s, key, n, false), nil
	}
}

// Formatting of parameters, once per limiter rather than per call.

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// dur renders a duration in the contract's syntax, in whole milliseconds.
func dur(d time.Duration) string {
	ms := d.Milliseconds()
	if d > 0 && ms == 0 {
		ms = 1
	}
	return itoa(ms) + "ms"
}

// refillTime is how long rate per period takes to grant limit units: the
// policy window of buckets and GCRA.
func refillTime(limit, rate int64, period time.Duration) time.Duration {
	if rate <= 0 {
		return period
	}
	return time.Duration((float64(limit) / float64(rate)) * float64(period))
}
