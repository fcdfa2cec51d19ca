package rlserver

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// A process whose server is down from the start (no call ever answered)
// gets its failure policy from the first request.
func TestServerDownBeforeFirstRequest(t *testing.T) {
	srv := startServer(t)
	addr := srv.addr
	srv.stop()
	rdb := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true, MaxRetries: -1, DialerRetries: 1})
	defer rdb.Close()
	var events []ErrorEvent
	c := New(rdb, Options{Timeout: 50 * time.Millisecond, Failure: FailOpen, OnError: func(e ErrorEvent) { events = append(events, e) }})
	h := Middleware(MiddlewareOptions{Limiter: c.TokenBucket(2, 1, time.Second)})(
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	for i := range 3 {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
		if rec.Code != 200 || rec.Header().Get("RateLimit") != `"default";r=2;t=0` {
			t.Errorf("request %d: status %d, RateLimit %q", i, rec.Code, rec.Header().Get("RateLimit"))
		}
	}
	if len(events) != 3 || events[0].Mode != FailOpen || events[0].Config || events[0].Key != "rl:default:tokenbucket:192.0.2.1" {
		t.Errorf("hook got %+v", events)
	}
}

// Two limiters of different kinds behind the default key (the client
// address) on one server: each has its own key, so neither sees the
// other's state (without the prefix the window answered WRONGTYPE).
func TestDefaultKeysDoNotCollide(t *testing.T) {
	srv := startServer(t)
	rdb := srv.client(t)
	setClock(t, rdb, epochMs)
	var events []ErrorEvent
	c := New(rdb, Options{Failure: FailOpen, OnError: func(e ErrorEvent) { events = append(events, e) }, Logf: t.Logf})
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })
	bucket := Middleware(MiddlewareOptions{Limiter: c.TokenBucket(2, 1, time.Second)})(ok)
	window := Middleware(MiddlewareOptions{Limiter: c.Window(Sliding, 3, time.Minute)})(ok)
	var got []string
	for _, h := range []http.Handler{bucket, window, bucket, window, bucket, window, window} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil)) // RemoteAddr 192.0.2.1:1234
		got = append(got, fmt.Sprintf("%d %s", rec.Code, rec.Header().Get("RateLimit")))
	}
	want := []string{
		`200 "default";r=1;t=1`, `200 "default";r=2;t=120`,
		`200 "default";r=0;t=2`, `200 "default";r=1;t=120`,
		`429 "default";r=0;t=2`, `200 "default";r=0;t=120`,
		`429 "default";r=0;t=120`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	keys, err := rdb.Keys(context.Background(), "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(keys, " ") != "rl:default:sliding:192.0.2.1 rl:default:tokenbucket:192.0.2.1" &&
		strings.Join(keys, " ") != "rl:default:tokenbucket:192.0.2.1 rl:default:sliding:192.0.2.1" {
		t.Errorf("keys %q", keys)
	}
	if len(events) != 0 {
		t.Errorf("hook got %+v", events)
	}
	// KeyPrefix replaces the default; RawKeys sends the key as it is.
	for _, tc := range []struct {
		o    MiddlewareOptions
		want string
	}{
		{MiddlewareOptions{KeyPrefix: "shop:"}, "shop:192.0.2.1"},
		{MiddlewareOptions{RawKeys: true}, "192.0.2.1"},
		{MiddlewareOptions{Policy: "api"}, "rl:api:fixed:192.0.2.1"},
	} {
		tc.o.Limiter = c.Window(Fixed, 3, time.Minute)
		Middleware(tc.o)(ok).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
		if n, err := rdb.Exists(context.Background(), tc.want).Result(); n != 1 || err != nil {
			t.Errorf("%+v: key %q not written (%v)", tc.o, tc.want, err)
		}
	}
}

// A wrong or missing password is a configuration error: Check finds it at
// start, and every call returns it (even with FailOpen), logged and passed
// to the hook.
func TestWrongPasswordReported(t *testing.T) {
	s, err := tryStartServer("--port", "0", "--requirepass", "s3cret")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.stop)
	for _, tc := range []struct {
		password, code string
	}{{"wrong", "WRONGPASS"}, {"", "NOAUTH"}} {
		rdb := redis.NewClient(&redis.Options{Addr: s.addr, Password: tc.password, ContextTimeoutEnabled: true, MaxRetries: -1, DialerRetries: 1})
		var events []ErrorEvent
		var logged []string
		c := New(rdb, Options{Timeout: time.Second, Failure: FailOpen, OnError: func(e ErrorEvent) { events = append(events, e) },
			Logf: func(f string, a ...any) { logged = append(logged, fmt.Sprintf(f, a...)) }})
		err := c.Check(context.Background())
		if err == nil || !strings.Contains(err.Error(), tc.code) {
			t.Errorf("%s: Check: %v", tc.code, err)
		}
		rec := httptest.NewRecorder()
		Middleware(MiddlewareOptions{Limiter: c.TokenBucket(2, 1, time.Second)})(http.NotFoundHandler()).
			ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
		if rec.Code != http.StatusServiceUnavailable {
			t.Errorf("%s: status %d, want 503", tc.code, rec.Code)
		}
		if len(events) != 2 || !events[0].Config || events[0].Command != "PING" || !events[1].Config || events[1].Command != "CL.TOKENBUCKET" ||
			!strings.Contains(events[1].Err.Error(), tc.code) {
			t.Errorf("%s: hook got %+v", tc.code, events)
		}
		if len(logged) != 2 || !strings.Contains(logged[0], tc.code) || !strings.Contains(logged[1], tc.code) {
			t.Errorf("%s: logged %q", tc.code, logged)
		}
		rdb.Close()
	}
	// The right password: Check passes.
	rdb := redis.NewClient(&redis.Options{Addr: s.addr, Password: "s3cret"})
	defer rdb.Close()
	if err := New(rdb, Options{}).Check(context.Background()); err != nil {
		t.Errorf("right password: %v", err)
	}
}

// Policy names are RFC 8941 strings: " and \ escaped, anything but
// printable ASCII refused.
func TestPolicyNameIsAnSFString(t *testing.T) {
	h := http.Header{}
	SetHeaders(h, `a "q" \ b`, time.Second, Decision{Allowed: true, Limit: 1, Remaining: 1}, false)
	if got := h.Get("RateLimit"); got != `"a \"q\" \\ b";r=1;t=0` {
		t.Errorf("RateLimit %s", got)
	}
	for _, name := range []string{"tab\there", "é", "nl\n", "del\x7f"} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "RFC 8941") {
					t.Errorf("%q: Middleware did not refuse it (%v)", name, r)
				}
			}()
			Middleware(MiddlewareOptions{Policy: name, Limiter: New(nil, Options{}).TokenBucket(1, 1, time.Second)})
		}()
	}
}

// The README's endpoint example is example/main.go's code, which go vet
// compiles: the test holds them equal.
func TestReadmeExampleIsCompiled(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	main, err := os.ReadFile("example/main.go")
	if err != nil {
		t.Fatal(err)
	}
	block := codeBlock(t, string(readme), "## Protect an HTTP endpoint", "```go\n")
	var indented []string
	for _, l := range strings.Split(strings.TrimSuffix(block, "\n"), "\n") {
		if l != "" {
			l = "\t" + l
		}
		indented = append(indented, l)
	}
	if !strings.Contains(string(main), strings.Join(indented, "\n")+"\n") {
		t.Errorf("README.md's endpoint example is not in example/main.go:\n%s", block)
	}
}

// codeBlock returns the first fenced block opening with fence after heading.
func codeBlock(t *testing.T, doc, heading, fence string) string {
	t.Helper()
	i := strings.Index(doc, heading)
	if i < 0 {
		t.Fatalf("no %q", heading)
	}
	j := strings.Index(doc[i:], fence)
	if j < 0 {
		t.Fatalf("no %q after %q", fence, heading)
	}
	rest := doc[i+j+len(fence):]
	k := strings.Index(rest, "```")
	if k < 0 {
		t.Fatalf("unclosed block after %q", heading)
	}
	return rest[:k]
}
