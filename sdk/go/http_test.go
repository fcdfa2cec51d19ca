package rlserver

import (
	"context"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"
)

func TestMiddlewareHeaders(t *testing.T) {
	srv := startServer(t)
	rdb := srv.client(t)
	setClock(t, rdb, epochMs)
	c := New(rdb, Options{})
	h := Middleware(MiddlewareOptions{
		Limiter:    c.TokenBucket(2, 1, time.Second),
		Policy:     "api",
		Key:        func(r *http.Request) string { return r.Header.Get("X-API-Key") },
		XRateLimit: true,
	})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	get := func(key string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("GET", "/", nil)
		if key != "" {
			req.Header.Set("X-API-Key", key)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	check := func(rec *httptest.ResponseRecorder, status int, want map[string]string) {
		t.Helper()
		if rec.Code != status {
			t.Errorf("status %d, want %d", rec.Code, status)
		}
		got := map[string]string{}
		for _, n := range headerNames {
			if v := rec.Header().Get(n); v != "" {
				got[n] = v
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("headers %v, want %v", got, want)
		}
	}
	fields := func(r, t string) map[string]string {
		return map[string]string{
			"RateLimit-Policy": `"api";q=2;w=2`, "RateLimit": `"api";r=` + r + ";t=" + t,
			"X-RateLimit-Limit": "2", "X-RateLimit-Remaining": r, "X-RateLimit-Reset": t,
		}
	}
	check(get("k1"), 200, fields("1", "1"))
	check(get("k1"), 200, fields("0", "2"))
	denied := fields("0", "2")
	denied["Retry-After"] = "1"
	rec := get("k1")
	check(rec, 429, denied)
	if rec.Body.String() != "rate limit exceeded\n" {
		t.Errorf("429 body %q", rec.Body.String())
	}
	check(get("k2"), 200, fields("1", "1"))  // another key, another bucket
	check(get(""), 200, map[string]string{}) // no key: not limited, no fields
	advance(t, rdb, 1000)
	check(get("k1"), 200, fields("0", "2"))

	// With the server gone and FailError, the middleware answers 503.
	srv.stop()
	rec = get("k1")
	if rec.Code != http.StatusServiceUnavailable {
		t.Errorf("server stopped: status %d, want 503", rec.Code)
	}
}

func TestKeyByIP(t *testing.T) {
	req := httptest.NewRequest("GET", "/", nil)
	req.RemoteAddr = "192.0.2.7:5555"
	if k := KeyByIP(req); k != "192.0.2.7" {
		t.Errorf("KeyByIP = %q", k)
	}
}

func TestSetHeadersNever(t *testing.T) {
	h := http.Header{}
	SetHeaders(h, "p", 1500*time.Millisecond, Decision{Limit: 3, RetryAfter: Never, ResetAfter: 2001 * time.Millisecond}, false)
	want := http.Header{"Ratelimit-Policy": {`"p";q=3;w=2`}, "Ratelimit": {`"p";r=0;t=3`}}
	if !reflect.DeepEqual(h, want) {
		t.Errorf("got %v, want %v", h, want)
	}
}

func TestLeaseScopedRelease(t *testing.T) {
	srv := startServer(t)
	rdb := srv.client(t)
	setClock(t, rdb, epochMs)
	ctx := context.Background()
	cc := New(rdb, Options{}).Concurrency(1, 10*time.Second)
	held := func() int64 {
		d, err := cc.Decide(ctx, "job", 0) // n = 0 peeks
		if err != nil {
			t.Fatal(err)
		}
		return d.Limit - d.Remaining
	}
	ran := false
	d, err := cc.Do(ctx, "job", 1, func(ctx context.Context) error {
		ran = true
		if n := held(); n != 1 {
			t.Errorf("inside Do: %d held, want 1", n)
		}
		// A second caller is denied while the lease is held.
		if _, err := cc.Do(ctx, "job", 1, func(context.Context) error { t.Error("ran while held"); return nil }); err != ErrLimited {
			t.Errorf("nested Do: %v, want ErrLimited", err)
		}
		return nil
	})
	if err != nil || !ran || !d.Allowed {
		t.Fatalf("Do: %+v %v ran=%v", d, err, ran)
	}
	if n := held(); n != 0 {
		t.Errorf("after Do: %d held", n)
	}
	// An error from fn is returned, and the lease still released.
	boom := context.Canceled
	if _, err := cc.Do(ctx, "job", 1, func(context.Context) error { return boom }); err != boom {
		t.Errorf("Do error: %v", err)
	}
	if n := held(); n != 0 {
		t.Errorf("after failing fn: %d held", n)
	}
	// A panic in fn releases too.
	func() {
		defer func() { recover() }()
		cc.Do(ctx, "job", 1, func(context.Context) error { panic("x") })
	}()
	if n := held(); n != 0 {
		t.Errorf("after panic: %d held", n)
	}
	// A cancelled ctx inside fn does not stop the release.
	cctx, cancel := context.WithCancel(ctx)
	cc.Do(cctx, "job", 1, func(context.Context) error { cancel(); return nil })
	if n := held(); n != 0 {
		t.Errorf("after cancel: %d held", n)
	}
	// Renew and Release of a lease, and the expiry of one not renewed.
	le, _, err := cc.Acquire(ctx, "job", 1)
	if err != nil || le == nil || le.ID == "" {
		t.Fatalf("Acquire: %v %v", le, err)
	}
	if ok, err := le.Renew(ctx, 20*time.Second); !ok || err != nil {
		t.Errorf("Renew: %v %v", ok, err)
	}
	advance(t, rdb, 15_000)
	if n := held(); n != 1 {
		t.Errorf("renewed lease after 15s: %d held", n)
	}
	advance(t, rdb, 5_000)
	if ok, err := le.Release(ctx); ok || err != nil {
		t.Errorf("Release of an expired lease: %v %v", ok, err)
	}
}

func TestMiddlewareConcurrencyReleases(t *testing.T) {
	srv := startServer(t)
	rdb := srv.client(t)
	setClock(t, rdb, epochMs)
	cc := New(rdb, Options{}).Concurrency(1, time.Minute)
	var inner *httptest.ResponseRecorder
	var h http.Handler
	h = Middleware(MiddlewareOptions{Limiter: cc, Key: func(*http.Request) string { return "one" }})(
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if inner == nil { // while this request holds the lease, another is denied
				inner = httptest.NewRecorder()
				h.ServeHTTP(inner, httptest.NewRequest("GET", "/", nil))
			}
		}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if rec.Code != 200 || inner.Code != 429 || inner.Header().Get("Retry-After") != "60" {
		t.Errorf("outer %d, inner %d (Retry-After %q)", rec.Code, inner.Code, inner.Header().Get("Retry-After"))
	}
	if d, _ := cc.Decide(context.Background(), "one", 0); d.Remaining != 1 {
		t.Errorf("lease not released after the request: %+v", d)
	}
}

func TestThrottleTyped(t *testing.T) {
	srv := startServer(t)
	rdb := srv.client(t)
	setClock(t, rdb, epochMs)
	th := New(rdb, Options{}).Throttle(4, 1, time.Second)
	ctx := context.Background()
	var got []Decision
	for _, n := range []int64{2, 3, 1, 6} {
		d, err := th.AllowN(ctx, "th", n)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, d)
	}
	want := []Decision{
		{Allowed: true, Limit: 5, Remaining: 3, ResetAfter: 2 * time.Second},
		{Allowed: true, Limit: 5, Remaining: 0, ResetAfter: 5 * time.Second},
		{Allowed: false, Limit: 5, Remaining: 0, RetryAfter: time.Second, ResetAfter: 5 * time.Second},
		{Allowed: false, Limit: 5, Remaining: 0, RetryAfter: Never, ResetAfter: 5 * time.Second},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	if th.Window() != 5*time.Second {
		t.Errorf("Window %v, want 5s", th.Window())
	}
}
