package rlserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// withStoppedServer returns a client whose server answered once and is now gone.
func withStoppedServer(t *testing.T) *redis.Client {
	srv := startServer(t)
	rdb := srv.client(t)
	if err := rdb.Ping(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	srv.stop()
	return rdb
}

func TestFailureModesWhenServerStopped(t *testing.T) {
	rdb := withStoppedServer(t)
	ctx := context.Background()
	for _, tc := range []struct {
		mode    FailureMode
		allowed bool
	}{{FailOpen, true}, {FailClosed, false}} {
		var events []ErrorEvent
		c := New(rdb, Options{Failure: tc.mode, ClosedRetryAfter: 2 * time.Second, OnError: func(e ErrorEvent) { events = append(events, e) }})
		d, err := c.TokenBucket(5, 1, time.Second).AllowN(ctx, "k", 1)
		if err != nil {
			t.Fatalf("mode %d: %v", tc.mode, err)
		}
		want := Decision{Allowed: tc.allowed, Limit: 5, Fallback: true}
		if tc.allowed {
			want.Remaining = 5
		} else {
			want.RetryAfter, want.ResetAfter = 2*time.Second, 2*time.Second
		}
		if d != want {
			t.Errorf("mode %d: got %+v, want %+v", tc.mode, d, want)
		}
		if len(events) != 1 || events[0].Command != "CL.TOKENBUCKET" || events[0].Key != "k" || events[0].Err == nil || events[0].Mode != tc.mode {
			t.Errorf("mode %d: OnError got %+v", tc.mode, events)
		}
	}
	// FailError (the default) returns the error and calls no hook.
	called := false
	c := New(rdb, Options{OnError: func(ErrorEvent) { called = true }})
	if _, err := c.Window(Fixed, 3, time.Minute).AllowN(ctx, "k", 1); err == nil || called {
		t.Errorf("FailError: err %v, hook called %v", err, called)
	}
}

func TestFailLocalFallback(t *testing.T) {
	rdb := withStoppedServer(t)
	ctx := context.Background()
	var calls atomic.Int64
	c := New(rdb, Options{Failure: FailLocal, OnError: func(ErrorEvent) { calls.Add(1) }})
	now := time.Unix(1_800_000_000, 0)
	c.local.now = func() time.Time { return now }
	tb := c.TokenBucket(2, 1, time.Second)
	var got []Decision
	for range 3 {
		d, err := tb.AllowN(ctx, "user", 1)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, d)
	}
	want := []Decision{
		{Allowed: true, Limit: 2, Remaining: 1, ResetAfter: time.Second, Fallback: true},
		{Allowed: true, Limit: 2, Remaining: 0, ResetAfter: 2 * time.Second, Fallback: true},
		{Allowed: false, Limit: 2, Remaining: 0, RetryAfter: time.Second, ResetAfter: 2 * time.Second, Fallback: true},
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("call %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	// Another key has its own local bucket; time refills it.
	if d, _ := tb.AllowN(ctx, "other", 2); !d.Allowed {
		t.Errorf("other key denied: %+v", d)
	}
	now = now.Add(time.Second)
	if d, _ := tb.AllowN(ctx, "user", 1); !d.Allowed || d.Remaining != 0 {
		t.Errorf("after 1s: %+v", d)
	}
	// Leases fall back to a local semaphore, released by the lease.
	cc := c.Concurrency(1, time.Minute)
	le, d, err := cc.Acquire(ctx, "job", 1)
	if err != nil || le == nil || !d.Allowed {
		t.Fatalf("local acquire: %v %+v %v", le, d, err)
	}
	if le2, d, _ := cc.Acquire(ctx, "job", 1); le2 != nil || d.Allowed {
		t.Errorf("second local acquire admitted: %+v", d)
	}
	if ok, err := le.Release(ctx); !ok || err != nil {
		t.Errorf("local release: %v %v", ok, err)
	}
	if le3, _, _ := cc.Acquire(ctx, "job", 1); le3 == nil {
		t.Error("acquire after local release denied")
	}
	// All checks every rule before consuming any.
	ad, err := c.All(ctx, 1, c.Window(Fixed, 1, time.Minute).Rule("a"), c.Window(Fixed, 5, time.Minute).Rule("b"))
	if err != nil || !ad.Allowed {
		t.Fatalf("local All: %+v %v", ad, err)
	}
	ad, _ = c.All(ctx, 1, c.Window(Fixed, 1, time.Minute).Rule("a"), c.Window(Fixed, 5, time.Minute).Rule("b"))
	if ad.Allowed || ad.Decisions[1].Remaining != 4 {
		t.Errorf("local All second call: %+v", ad)
	}
	if calls.Load() != 10 {
		t.Errorf("OnError called %d times, want 10", calls.Load())
	}
}

func TestServerErrorsAreNotFailures(t *testing.T) {
	srv := startServer(t)
	rdb := srv.client(t)
	ctx := context.Background()
	var events []ErrorEvent
	var logged []string
	c := New(rdb, Options{Failure: FailOpen, OnError: func(e ErrorEvent) { events = append(events, e) },
		Logf: func(f string, a ...any) { logged = append(logged, fmt.Sprintf(f, a...)) }})
	if _, err := c.TokenBucket(5, 1, time.Second).AllowN(ctx, "k", 1); err != nil {
		t.Fatal(err)
	}
	// WRONGTYPE is returned whatever the policy, and reported loudly: the
	// hook (as a configuration error) and a log line.
	_, err := c.Window(Fixed, 5, time.Second).AllowN(ctx, "k", 1)
	var rerr redis.Error
	if !errors.As(err, &rerr) || !strings.HasPrefix(err.Error(), "WRONGTYPE") {
		t.Fatalf("WRONGTYPE: err %v", err)
	}
	if len(events) != 1 || !events[0].Config || events[0].Mode != FailError || events[0].Command != "CL.WINDOW" || events[0].Key != "k" || events[0].Err != err {
		t.Errorf("hook got %+v", events)
	}
	if len(logged) != 1 || !strings.Contains(logged[0], "WRONGTYPE") || !strings.Contains(logged[0], `"k"`) {
		t.Errorf("logged %q", logged)
	}
	// A bad argument is the caller's error: returned, not reported.
	if _, err := c.TokenBucket(5, 1, time.Second).AllowN(ctx, "k", -1); err == nil || len(events) != 1 || len(logged) != 1 {
		t.Errorf("bad argument: err %v, events %d, logged %d", err, len(events), len(logged))
	}
}

func TestTimeoutFailsOpen(t *testing.T) {
	// A listener that accepts and never answers.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			defer conn.Close()
		}
	}()
	rdb := redis.NewClient(&redis.Options{Addr: ln.Addr().String(), ContextTimeoutEnabled: true, MaxRetries: -1, Protocol: 2, DisableIdentity: true})
	defer rdb.Close()
	var got error
	c := New(rdb, Options{Timeout: 50 * time.Millisecond, Failure: FailOpen, OnError: func(e ErrorEvent) { got = e.Err }})
	start := time.Now()
	d, err := c.LeakyBucket(3, 1, time.Second).AllowN(context.Background(), "k", 1)
	if err != nil || !d.Allowed || !d.Fallback || got == nil {
		t.Fatalf("got %+v, %v; hook saw %v", d, err, got)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("took %v with a 50ms timeout", el)
	}
	// The caller's own cancelled context is returned, not answered by the policy.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	got = nil
	if _, err := c.LeakyBucket(3, 1, time.Second).AllowN(ctx, "k", 1); err == nil || got != nil {
		t.Errorf("cancelled context: err %v, hook saw %v", err, got)
	}
}
