package integration

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// rlsConfig is the configuration of the rate limit service tests: the
// shapes of envoyproxy/ratelimit's README, and each algorithm.
const rlsConfig = `domain: test
descriptors:
  - key: remote_address
    rate_limit:
      unit: minute
      requests_per_unit: 3
  - key: path
    value: /login
    rate_limit:
      unit: second
      requests_per_unit: 2
  - key: path
    value: /v1/*
    rate_limit:
      unit: hour
      requests_per_unit: 1
  - key: tier
    value: free
    descriptors:
      - key: user
        rate_limit:
          unit: minute
          requests_per_unit: 2
  - key: internal
    rate_limit:
      unlimited: true
  - key: shadow
    shadow_mode: true
    rate_limit:
      unit: minute
      requests_per_unit: 1
  - key: loose
    rate_limit:
      name: loose
      unit: minute
      requests_per_unit: 1
  - key: strict
    rate_limit:
      unit: minute
      requests_per_unit: 5
      replaces:
        - name: loose
  - key: sliding
    rate_limit:
      algorithm: sliding_window
      unit: minute
      requests_per_unit: 4
  - key: bucket
    rate_limit:
      algorithm: token_bucket
      unit: second
      requests_per_unit: 1
      burst: 3
  - key: gcra
    rate_limit:
      algorithm: gcra
      unit: minute
      requests_per_unit: 60
      burst: 2
  - key: half
    rate_limit:
      unit: second
      unit_multiplier: 30
      requests_per_unit: 2
  - key: hot
    rate_limit:
      unit: minute
      requests_per_unit: 100
`

var (
	rlsGRPCRE = regexp.MustCompile(`rls: serving gRPC envoy\.service\.ratelimit\.v3 on (\S+)`)
	rlsHTTPRE = regexp.MustCompile(`rls: serving HTTP /json and /healthcheck on (\S+)`)
)

// rlsServer is a server with the rate limit service on, its clock frozen
// at t0 + 500 ms (inside the first second of a minute).
type rlsServer struct {
	*server
	rdb    *redis.Client
	client pb.RateLimitServiceClient
	conn   *grpc.ClientConn
	http   string
	config string
}

func startRLS(t *testing.T, config string, args ...string) *rlsServer {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(path, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	full := append([]string{"--rls-addr", "127.0.0.1:0", "--rls-http-addr", "127.0.0.1:0", "--rls-config", path}, args...)
	s := start(t, full...)
	r := &rlsServer{server: s, rdb: s.client(t, 2), config: path}
	logs := s.logs.String()
	m := rlsGRPCRE.FindStringSubmatch(logs)
	h := rlsHTTPRE.FindStringSubmatch(logs)
	if m == nil || h == nil {
		t.Fatalf("no rls addresses in the log:\n%s", logs)
	}
	r.http = h[1]
	conn, err := grpc.NewClient(m[1], grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	r.conn, r.client = conn, pb.NewRateLimitServiceClient(conn)
	setClock(t, r.rdb, t0+500)
	return r
}

func desc(kv ...string) *rlv3.RateLimitDescriptor {
	d := &rlv3.RateLimitDescriptor{}
	for i := 0; i < len(kv); i += 2 {
		d.Entries = append(d.Entries, &rlv3.RateLimitDescriptor_Entry{Key: kv[i], Value: kv[i+1]})
	}
	return d
}

func (r *rlsServer) ask(t *testing.T, ds ...*rlv3.RateLimitDescriptor) *pb.RateLimitResponse {
	t.Helper()
	resp, err := r.client.ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "test", Descriptors: ds})
	if err != nil {
		t.Fatalf("ShouldRateLimit: %v", err)
	}
	return resp
}

// codes summarises a response: the overall code, then each status as
// CODE/remaining/reset seconds.
func summary(resp *pb.RateLimitResponse) string {
	var b strings.Builder
	b.WriteString(resp.OverallCode.String())
	for _, s := range resp.Statuses {
		fmt.Fprintf(&b, " %s/%d/%d", s.Code, s.LimitRemaining, s.DurationUntilReset.GetSeconds())
	}
	return b.String()
}

func expectSummary(t *testing.T, resp *pb.RateLimitResponse, want string) {
	t.Helper()
	if got := summary(resp); got != want {
		t.Fatalf("response %q, want %q", got, want)
	}
}

func TestRLSWithinAndOverLimit(t *testing.T) {
	r := startRLS(t, rlsConfig)
	ip := desc("remote_address", "10.0.0.1")
	expectSummary(t, r.ask(t, ip), "OK OK/2/60")
	expectSummary(t, r.ask(t, ip), "OK OK/1/60")
	expectSummary(t, r.ask(t, ip), "OK OK/0/60")
	resp := r.ask(t, ip)
	expectSummary(t, resp, "OVER_LIMIT OVER_LIMIT/0/60")
	if l := resp.Statuses[0].CurrentLimit; l.RequestsPerUnit != 3 || l.Unit != pb.RateLimitResponse_RateLimit_MINUTE {
		t.Fatalf("current_limit %v", l)
	}
	// Another address has its own counter; the next minute starts afresh.
	expectSummary(t, r.ask(t, desc("remote_address", "10.0.0.2")), "OK OK/2/60")
	// The counter is an ordinary key, named after the domain and descriptor.
	keys, err := r.rdb.Keys(ctx, "rls:test:*").Result()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"rls:test:remote_address=10.0.0.1:fixed_window/60s": true, "rls:test:remote_address=10.0.0.2:fixed_window/60s": true}
	if len(keys) != 2 || !want[keys[0]] || !want[keys[1]] {
		t.Fatalf("keys %q", keys)
	}
	advance(t, r.rdb, 20_000)
	expectSummary(t, r.ask(t, ip), "OVER_LIMIT OVER_LIMIT/0/40")
	advance(t, r.rdb, 40_000)
	expectSummary(t, r.ask(t, ip), "OK OK/2/60")
	do(t, r.rdb, "TYPE", "rls:test:remote_address=10.0.0.1:fixed_window/60s").equal("window")
}

func TestRLSNestedWildcardUnmatchedUnlimited(t *testing.T) {
	r := startRLS(t, rlsConfig)
	nested := desc("tier", "free", "user", "alice")
	expectSummary(t, r.ask(t, nested), "OK OK/1/60")
	expectSummary(t, r.ask(t, nested), "OK OK/0/60")
	expectSummary(t, r.ask(t, nested), "OVER_LIMIT OVER_LIMIT/0/60")
	expectSummary(t, r.ask(t, desc("tier", "free", "user", "bob")), "OK OK/1/60")
	// The parent alone, another tier, a deeper descriptor: no limit.
	for _, d := range []*rlv3.RateLimitDescriptor{desc("tier", "free"), desc("tier", "paid", "user", "alice"),
		desc("tier", "free", "user", "alice", "x", "y"), desc("nothing", "here")} {
		resp := r.ask(t, d)
		expectSummary(t, resp, "OK OK/0/0")
		if resp.Statuses[0].CurrentLimit != nil {
			t.Fatalf("unmatched descriptor has a limit: %v", resp.Statuses[0])
		}
	}
	// A wildcard value: each path its own counter.
	expectSummary(t, r.ask(t, desc("path", "/v1/users")), "OK OK/0/3600")
	expectSummary(t, r.ask(t, desc("path", "/v1/users")), "OVER_LIMIT OVER_LIMIT/0/3600")
	expectSummary(t, r.ask(t, desc("path", "/v1/orders")), "OK OK/0/3600")
	expectSummary(t, r.ask(t, desc("path", "/v2/orders")), "OK OK/0/0")
	// Unlimited: OK with the largest remaining, no key.
	resp := r.ask(t, desc("internal", "x"))
	expectSummary(t, resp, "OK OK/4294967295/0")
	if n, _ := r.rdb.Keys(ctx, "rls:test:internal*").Result(); len(n) != 0 {
		t.Fatalf("unlimited made keys %q", n)
	}
	// An unknown domain: OK.
	resp, err := r.client.ShouldRateLimit(ctx, &pb.RateLimitRequest{Domain: "other", Descriptors: []*rlv3.RateLimitDescriptor{desc("remote_address", "1")}})
	if err != nil || summary(resp) != "OK OK/0/0" {
		t.Fatalf("unknown domain: %v %v", resp, err)
	}
}

func TestRLSShadowReplacesHitsAddendSeveral(t *testing.T) {
	r := startRLS(t, rlsConfig)
	sh := desc("shadow", "s")
	expectSummary(t, r.ask(t, sh), "OK OK/0/60")
	expectSummary(t, r.ask(t, sh), "OK OK/0/60") // over the limit, answered OK
	// replaces: strict (5/min) replaces loose (1/min) in one request.
	for i := 4; i >= 0; i-- {
		expectSummary(t, r.ask(t, desc("loose", "a"), desc("strict", "a")), fmt.Sprintf("OK OK/0/0 OK/%d/60", i))
	}
	expectSummary(t, r.ask(t, desc("loose", "a"), desc("strict", "a")), "OVER_LIMIT OK/0/0 OVER_LIMIT/0/60")
	expectSummary(t, r.ask(t, desc("loose", "a")), "OK OK/0/60") // alone, loose counts
	// hits_addend: request-level, then per descriptor (0 looks).
	resp, err := r.client.ShouldRateLimit(ctx, &pb.RateLimitRequest{Domain: "test", HitsAddend: 2,
		Descriptors: []*rlv3.RateLimitDescriptor{desc("remote_address", "h")}})
	if err != nil {
		t.Fatal(err)
	}
	expectSummary(t, resp, "OK OK/1/60")
	d := desc("remote_address", "h")
	d.HitsAddend = wrapperspb.UInt64(0)
	expectSummary(t, r.ask(t, d), "OK OK/1/60")
	d.HitsAddend = wrapperspb.UInt64(2)
	expectSummary(t, r.ask(t, d), "OVER_LIMIT OVER_LIMIT/0/60")
	d.HitsAddend = wrapperspb.UInt64(1)
	expectSummary(t, r.ask(t, d), "OK OK/0/60")
	// Several descriptors: each decided; one over makes the whole over.
	expectSummary(t, r.ask(t, desc("remote_address", "m"), desc("path", "/login"), desc("nothing", "x")), "OK OK/2/60 OK/1/1 OK/0/0")
	expectSummary(t, r.ask(t, desc("remote_address", "m"), desc("path", "/login")), "OK OK/1/60 OK/0/1")
	expectSummary(t, r.ask(t, desc("remote_address", "m"), desc("path", "/login")), "OVER_LIMIT OK/0/60 OVER_LIMIT/0/1")
	advance(t, r.rdb, 1000)
	expectSummary(t, r.ask(t, desc("path", "/login")), "OK OK/1/1")
}

func TestRLSAlgorithms(t *testing.T) {
	r := startRLS(t, rlsConfig)
	// sliding_window: 4 a minute, the previous minute weighing in.
	s := desc("sliding", "a")
	for i := 3; i >= 0; i-- {
		expectSummary(t, r.ask(t, s), fmt.Sprintf("OK OK/%d/120", i))
	}
	resp := r.ask(t, s)
	if resp.OverallCode != pb.RateLimitResponse_OVER_LIMIT {
		t.Fatalf("sliding: %s", summary(resp))
	}
	advance(t, r.rdb, 60_000+29_500) // half of the last minute still counts: 2
	expectSummary(t, r.ask(t, s), "OK OK/1/90")
	do(t, r.rdb, "TYPE", "rls:test:sliding=a:sliding_window/60s").equal("window")
	// token_bucket: a burst of 3, then one a second.
	b := desc("bucket", "a")
	expectSummary(t, r.ask(t, b), "OK OK/2/1")
	expectSummary(t, r.ask(t, b), "OK OK/1/2")
	expectSummary(t, r.ask(t, b), "OK OK/0/3")
	expectSummary(t, r.ask(t, b), "OVER_LIMIT OVER_LIMIT/0/1")
	advance(t, r.rdb, 1000)
	expectSummary(t, r.ask(t, b), "OK OK/0/3")
	do(t, r.rdb, "TYPE", "rls:test:bucket=a:token_bucket/1s").equal("tokenbucket")
	// gcra: one a second, a burst of 2.
	g := desc("gcra", "a")
	expectSummary(t, r.ask(t, g), "OK OK/1/1")
	expectSummary(t, r.ask(t, g), "OK OK/0/2")
	do(t, r.rdb, "TYPE", "rls:test:gcra=a:gcra/60s").equal("throttle")
	expectSummary(t, r.ask(t, g), "OVER_LIMIT OVER_LIMIT/0/1")
	advance(t, r.rdb, 1000)
	expectSummary(t, r.ask(t, g), "OK OK/0/2")
	// unit_multiplier: 2 per 30 s windows, aligned to the epoch.
	setClock(t, r.rdb, t0+120_500)
	h := desc("half", "a")
	expectSummary(t, r.ask(t, h), "OK OK/1/30")
	expectSummary(t, r.ask(t, h), "OK OK/0/30")
	advance(t, r.rdb, 1000)
	expectSummary(t, r.ask(t, h), "OVER_LIMIT OVER_LIMIT/0/29")
	advance(t, r.rdb, 28_500)
	expectSummary(t, r.ask(t, h), "OK OK/1/30")
	if l := resp.Statuses[0].CurrentLimit; l.RequestsPerUnit != 4 {
		t.Fatalf("current_limit %v", l)
	}
	do(t, r.rdb, "TYPE", "rls:test:half=a:fixed_window/30s").equal("window")
}

func TestRLSBadRequests(t *testing.T) {
	r := startRLS(t, rlsConfig)
	bad := []*pb.RateLimitRequest{
		{Domain: "", Descriptors: []*rlv3.RateLimitDescriptor{desc("a", "b")}},
		{Domain: "test"},
		{Domain: "test", Descriptors: []*rlv3.RateLimitDescriptor{{Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: "remote_address", Value: "x"}},
			Limit: &rlv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 5, Unit: typev3.RateLimitUnit(42)}}}},
		{Domain: "test", Descriptors: []*rlv3.RateLimitDescriptor{{Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: "remote_address", Value: "x"}},
			HitsAddend: wrapperspb.UInt64(1 << 63)}}},
	}
	for i, req := range bad {
		_, err := r.client.ShouldRateLimit(ctx, req)
		if status.Code(err) != codes.InvalidArgument {
			t.Fatalf("request %d: %v, want InvalidArgument", i, err)
		}
	}
	// An override with a known unit applies, keyed as the unit's rules.
	over := &rlv3.RateLimitDescriptor{Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: "remote_address", Value: "o"}},
		Limit: &rlv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 1, Unit: typev3.RateLimitUnit_MINUTE}}
	expectSummary(t, r.ask(t, over), "OK OK/0/60")
	expectSummary(t, r.ask(t, over), "OVER_LIMIT OVER_LIMIT/0/60")
	// A denied request takes nothing: the configured 3 a minute sees 1 taken.
	expectSummary(t, r.ask(t, desc("remote_address", "o")), "OK OK/1/60")
	do(t, r.rdb, "PING").equal("PONG") // the server lives on
}

func TestRLSConcurrentExact(t *testing.T) {
	r := startRLS(t, rlsConfig)
	const clients, each = 200, 3
	var admitted, denied atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < each; j++ {
				resp, err := r.client.ShouldRateLimit(ctx, &pb.RateLimitRequest{Domain: "test", Descriptors: []*rlv3.RateLimitDescriptor{desc("hot", "x")}})
				if err != nil {
					errs <- err
					return
				}
				if resp.OverallCode == pb.RateLimitResponse_OK {
					admitted.Add(1)
				} else {
					denied.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if admitted.Load() != 100 || denied.Load() != clients*each-100 {
		t.Fatalf("admitted %d, denied %d; want 100 and %d", admitted.Load(), denied.Load(), clients*each-100)
	}
}

func TestRLSHTTPAndHealth(t *testing.T) {
	r := startRLS(t, rlsConfig)
	post := func(body string) (int, string) {
		resp, err := http.Post("http://"+r.http+"/json", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	req := `{"domain":"test","descriptors":[{"entries":[{"key":"path","value":"/login"}]}]}`
	for i, want := range []int{200, 200, 429} {
		code, body := post(req)
		if code != want || !strings.Contains(body, `"overallCode"`) {
			t.Fatalf("POST /json #%d: %d %s", i, code, body)
		}
	}
	if code, _ := post(`{"domain":`); code != 400 {
		t.Fatalf("bad JSON: %d", code)
	}
	if code, _ := post(`{"domain":"test"}`); code != 400 {
		t.Fatalf("no descriptors: %d", code)
	}
	resp, err := http.Get("http://" + r.http + "/healthcheck")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != "OK" {
		t.Fatalf("/healthcheck: %d %q", resp.StatusCode, b)
	}
	hc, err := healthpb.NewHealthClient(r.conn).Check(ctx, &healthpb.HealthCheckRequest{Service: "envoy.service.ratelimit.v3.RateLimitService"})
	if err != nil || hc.Status != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("gRPC health: %v %v", hc, err)
	}
}

func TestRLSReload(t *testing.T) {
	r := startRLS(t, rlsConfig)
	reloads := func() int { return strings.Count(r.logs.String(), "configuration reloaded") }
	errorsLogged := func() int { return strings.Count(r.logs.String(), "the previous configuration stays") }
	// A bad file: logged with its line, the configuration in force kept.
	if err := os.WriteFile(r.config, []byte("domain: test\ndescriptors:\n  - key: a\n    rate_limit:\n      unit: fortnight\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.cmd.Process.Signal(syscall.SIGHUP)
	eventually(t, "the bad configuration logged", func() bool { return errorsLogged() >= 1 })
	if !strings.Contains(r.logs.String(), r.config+":5: invalid rate limit unit 'fortnight'") {
		t.Fatalf("the error names no file and line:\n%s", r.logs)
	}
	expectSummary(t, r.ask(t, desc("remote_address", "r")), "OK OK/2/60")
	// A good file, noticed without a signal.
	good := "domain: test\ndescriptors:\n  - key: remote_address\n    rate_limit:\n      unit: minute\n      requests_per_unit: 10\n"
	if err := os.WriteFile(r.config, []byte(good), 0o644); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the file change reloaded", func() bool { return reloads() >= 1 })
	// The counter carries over: same descriptor, unit and algorithm.
	expectSummary(t, r.ask(t, desc("remote_address", "r")), "OK OK/8/60")
	expectSummary(t, r.ask(t, desc("path", "/login")), "OK OK/0/0")
	// And SIGHUP reloads too.
	good2 := strings.Replace(good, "10", "4", 1)
	if err := os.WriteFile(r.config, []byte(good2), 0o644); err != nil {
		t.Fatal(err)
	}
	r.cmd.Process.Signal(syscall.SIGHUP)
	eventually(t, "SIGHUP reloaded", func() bool { return reloads() >= 2 })
	expectSummary(t, r.ask(t, desc("remote_address", "r")), "OK OK/1/60")
}

func TestRLSBadConfigAtStart(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "bad.yaml")
	os.WriteFile(path, []byte("domain: test\ndescriptors:\n  - key: a\n    rate_limit:\n      unit: minute\n      requests_per_unit: 1\n      colour: blue\n"), 0o644)
	var out bytes.Buffer
	cmd := serverCommand("--port", "0", "--dir", "", "--rls-addr", "127.0.0.1:0", "--rls-config", path)
	cmd.Stderr = &out
	err := cmd.Run()
	if cmd.ProcessState.ExitCode() != 2 || !strings.Contains(out.String(), path+":7: config error, unknown key 'colour'") {
		t.Fatalf("exit %v:\n%s", err, out.String())
	}
}
