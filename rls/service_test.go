package rls

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rlserver/rlserver/clock"
	"github.com/rlserver/rlserver/command"
	"github.com/rlserver/rlserver/resp"
	"github.com/rlserver/rlserver/shard"
)

const serviceConfig = `domain: d
descriptors:
  - key: fixed
    rate_limit: {unit: minute, requests_per_unit: 10}
  - key: sliding
    rate_limit: {algorithm: sliding_window, unit: minute, requests_per_unit: 10}
  - key: bucket
    rate_limit: {algorithm: token_bucket, unit: minute, requests_per_unit: 60, burst: 10}
  - key: gcra
    rate_limit: {algorithm: gcra, unit: minute, requests_per_unit: 60, burst: 10}
  - key: zero
    rate_limit: {unit: minute, requests_per_unit: 0}
  - key: free
    rate_limit: {unlimited: true}
  - key: shadow
    shadow_mode: true
    rate_limit: {unit: minute, requests_per_unit: 1}
  - key: quota_a
    quota_mode: true
    rate_limit: {unit: minute, requests_per_unit: 1}
  - key: quota_b
    quota_mode: true
    rate_limit: {unit: minute, requests_per_unit: 2}
`

// t0 is a Unix time in ms at the start of a minute (and of a day).
const t0 = 1_700_006_400_000

// testService is a service over a real in-process keyspace (the command
// table, its scripts and limiters) with its clock frozen at t0 + 500 ms.
type testService struct {
	svc   *Service
	clk   *clock.Clock
	h     *command.Handler
	stats *Stats
}

func newTestService(t *testing.T) *testService {
	t.Helper()
	return newServiceWith(t, serviceConfig, ServiceOptions{})
}

// newServiceWith is a test service over the configuration config with
// the settings o.
func newServiceWith(t *testing.T, config string, o ServiceOptions) *testService {
	t.Helper()
	cfg, err := ParseConfig("c.yaml", []byte(config))
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.New()
	clk.Set((t0 + 500) * 1e6)
	h := command.New(command.Config{}, shard.New(shard.Options{Seed: hashSeed(t)}), clk)
	ks := NewCommands(h, clk.Now, "", 4)
	t.Cleanup(ks.Close)
	stats := NewStats()
	return &testService{svc: NewService(ks, cfg, stats, o), clk: clk, h: h, stats: stats}
}

func sdesc(kv ...string) *rlv3.RateLimitDescriptor {
	d := &rlv3.RateLimitDescriptor{}
	for i := 0; i < len(kv); i += 2 {
		d.Entries = append(d.Entries, &rlv3.RateLimitDescriptor_Entry{Key: kv[i], Value: kv[i+1]})
	}
	return d
}

// hits is a descriptor of cost n, given back when negative.
func hits(d *rlv3.RateLimitDescriptor, n int64) *rlv3.RateLimitDescriptor {
	d.IsNegativeHits = n < 0
	if n < 0 {
		n = -n
	}
	d.HitsAddend = wrapperspb.UInt64(uint64(n))
	return d
}

func (ts *testService) ask(t *testing.T, ds ...*rlv3.RateLimitDescriptor) *pb.RateLimitResponse {
	t.Helper()
	r, err := ts.svc.ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "d", Descriptors: ds})
	if err != nil {
		t.Fatalf("ShouldRateLimit: %v", err)
	}
	return r
}

// brief is the overall code, then each status as CODE/remaining.
func brief(r *pb.RateLimitResponse) string {
	var b strings.Builder
	b.WriteString(r.OverallCode.String())
	for _, s := range r.Statuses {
		fmt.Fprintf(&b, " %s/%d", s.Code, s.LimitRemaining)
	}
	return b.String()
}

func (ts *testService) expect(t *testing.T, want string, ds ...*rlv3.RateLimitDescriptor) *pb.RateLimitResponse {
	t.Helper()
	r := ts.ask(t, ds...)
	if got := brief(r); got != want {
		t.Fatalf("response %q, want %q", got, want)
	}
	return r
}

// do runs one command on the keyspace and returns its reply as RESP.
func (ts *testService) do(t *testing.T, args ...string) string {
	t.Helper()
	w := &resp.Writer{Proto: 2}
	s := ts.h.NewSession(nil, resp.ConnInfo{ID: -1, Addr: "test", FD: -1, Loop: -1, Created: time.Now()}, w)
	defer s.Close()
	a := make([][]byte, len(args))
	for i, x := range args {
		a[i] = []byte(x)
	}
	s.Exec(a, nil)
	s.EndBatch()
	return string(w.Buf)
}

const fixedKey = "rls:d:fixed=a:fixed_window/60s"

// TestNegativeHitsFixedWindow: is_negative_hits gives units back to a
// fixed window, floored at 0, as envoyproxy/ratelimit's decrement: OK,
// the remaining after the refund, the window's reset.
func TestNegativeHitsFixedWindow(t *testing.T) {
	ts := newTestService(t)
	// Nothing taken yet: nothing to give back, and no key made.
	ts.expect(t, "OK OK/10", hits(sdesc("fixed", "a"), -3))
	if got := ts.do(t, "EXISTS", fixedKey); got != ":0\r\n" {
		t.Fatalf("a refund on a fresh limiter made its key: %q", got)
	}
	ts.expect(t, "OK OK/5", hits(sdesc("fixed", "a"), 5))
	r := ts.expect(t, "OK OK/8", hits(sdesc("fixed", "a"), -3))
	st := r.Statuses[0]
	if st.CurrentLimit.GetRequestsPerUnit() != 10 || st.CurrentLimit.GetUnit() != pb.RateLimitResponse_RateLimit_MINUTE ||
		st.DurationUntilReset.AsDuration() != 60*time.Second {
		t.Fatalf("refund status %v", st)
	}
	ts.expect(t, "OK OK/7", sdesc("fixed", "a"))
	// Exhaust, be refused, then a refund lets exactly its units through.
	ts.expect(t, "OK OK/0", hits(sdesc("fixed", "a"), 7))
	ts.expect(t, "OVER_LIMIT OVER_LIMIT/0", sdesc("fixed", "a"))
	ts.expect(t, "OK OK/2", hits(sdesc("fixed", "a"), -2))
	ts.expect(t, "OK OK/0", hits(sdesc("fixed", "a"), 2))
	ts.expect(t, "OVER_LIMIT OVER_LIMIT/0", sdesc("fixed", "a"))
	// Floored at 0: giving back more than was taken frees the whole window
	// and leaves no key; a 0 refund only looks.
	ts.expect(t, "OK OK/10", hits(sdesc("fixed", "a"), -1000))
	if got := ts.do(t, "EXISTS", fixedKey); got != ":0\r\n" {
		t.Fatalf("a full refund left the key: %q", got)
	}
	ts.expect(t, "OK OK/6", hits(sdesc("fixed", "a"), 4))
	zero := sdesc("fixed", "a")
	zero.IsNegativeHits, zero.HitsAddend = true, wrapperspb.UInt64(0)
	ts.expect(t, "OK OK/6 OK/6", hits(sdesc("fixed", "a"), 0), zero)
	// The key still expires at the window's end, and the window stays the
	// window: 20 s later a refund, then the next minute starts afresh.
	ts.clk.Advance(20 * time.Second)
	r = ts.expect(t, "OK OK/7", hits(sdesc("fixed", "a"), -1))
	if d := r.Statuses[0].DurationUntilReset.AsDuration(); d != 40*time.Second {
		t.Fatalf("duration_until_reset %v", d)
	}
	if got := ts.do(t, "PTTL", fixedKey); got != ":39500\r\n" {
		t.Fatalf("PTTL after a refund %q", got)
	}
	ts.clk.Advance(40 * time.Second)
	ts.expect(t, "OK OK/10", hits(sdesc("fixed", "a"), -1))
	ts.expect(t, "OK OK/9", sdesc("fixed", "a"))
	// The request-level hits_addend is the refund when the descriptor has
	// none (0 meaning 1, as for a cost).
	d := sdesc("fixed", "a")
	d.IsNegativeHits = true
	r2, err := ts.svc.ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "d", HitsAddend: 0, Descriptors: []*rlv3.RateLimitDescriptor{d}})
	if err != nil || brief(r2) != "OK OK/10" {
		t.Fatalf("request-level refund: %v %v", brief(r2), err)
	}
	ts.expect(t, "OK OK/7", hits(sdesc("fixed", "a"), 3))
	r2, err = ts.svc.ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "d", HitsAddend: 2, Descriptors: []*rlv3.RateLimitDescriptor{d}})
	if err != nil || brief(r2) != "OK OK/9" {
		t.Fatalf("request-level refund of 2: %v %v", brief(r2), err)
	}
}

// TestNegativeHitsOtherAlgorithms: a refund returns its units to a
// sliding window, a token bucket and GCRA, never more than was taken and
// never past the limiter's capacity.
func TestNegativeHitsOtherAlgorithms(t *testing.T) {
	for _, alg := range []string{"sliding", "bucket", "gcra"} {
		t.Run(alg, func(t *testing.T) {
			ts := newTestService(t)
			ts.expect(t, "OK OK/10", hits(sdesc(alg, "a"), -4))
			if got := ts.do(t, "KEYS", "rls:*"); got != "*0\r\n" {
				t.Fatalf("a refund on a fresh limiter made a key: %q", got)
			}
			ts.expect(t, "OK OK/0", hits(sdesc(alg, "a"), 10))
			ts.expect(t, "OVER_LIMIT OVER_LIMIT/0", sdesc(alg, "a"))
			ts.expect(t, "OK OK/4", hits(sdesc(alg, "a"), -4))
			ts.expect(t, "OK OK/0", hits(sdesc(alg, "a"), 4))
			ts.expect(t, "OVER_LIMIT OVER_LIMIT/0", sdesc(alg, "a"))
			ts.expect(t, "OK OK/10", hits(sdesc(alg, "a"), -1_000_000))
			ts.expect(t, "OK OK/0", hits(sdesc(alg, "a"), 10))
		})
	}
	// Partway through a refill, the part of a unit already refilled is
	// kept: one a second, 1.5 s after the bucket emptied it holds 1.5
	// tokens; giving 2 back leaves 3.5, and the next token comes half a
	// second later.
	for _, alg := range []string{"bucket", "gcra"} {
		t.Run(alg+"/partial", func(t *testing.T) {
			ts := newTestService(t)
			ts.expect(t, "OK OK/0", hits(sdesc(alg, "a"), 10))
			ts.clk.Advance(1500 * time.Millisecond)
			ts.expect(t, "OK OK/1", hits(sdesc(alg, "a"), 0))
			ts.expect(t, "OK OK/3", hits(sdesc(alg, "a"), -2))
			ts.clk.Advance(499 * time.Millisecond)
			ts.expect(t, "OK OK/3", hits(sdesc(alg, "a"), 0))
			ts.clk.Advance(time.Millisecond)
			ts.expect(t, "OK OK/4", hits(sdesc(alg, "a"), 0))
		})
	}
}

// TestNegativeHitsReply: a refund is never over the limit and counts only
// as total_negative_hits; unmatched, unlimited and zero limits answer as
// for a cost; a request may take from one descriptor and refund another.
func TestNegativeHitsReply(t *testing.T) {
	ts := newTestService(t)
	ts.expect(t, "OK OK/0", hits(sdesc("shadow", "s"), 1))
	ts.expect(t, "OK OK/0", hits(sdesc("shadow", "s"), 1)) // over, shadow_mode
	ts.expect(t, "OK OK/0 OK/4294967295 OK/0", hits(sdesc("zero", "z"), -1), hits(sdesc("free", "f"), -1), hits(sdesc("none", "n"), -1))
	ts.expect(t, "OK OK/1", hits(sdesc("shadow", "s"), -5))
	ts.expect(t, "OK OK/0 OK/10", sdesc("shadow", "s"), hits(sdesc("fixed", "b"), -1))
	if got, want := ts.stats.Snapshot("d.shadow"), [5]uint64{3, 1, 2, 2, 1}; got != want {
		t.Fatalf("shadow stats %v, want %v", got, want)
	}
	if got := ts.stats.NegativeHits("d.shadow"); got != 5 {
		t.Fatalf("total_negative_hits %d, want 5", got)
	}
	if got := ts.stats.NegativeHits("d.fixed"); got != 1 {
		t.Fatalf("total_negative_hits of fixed %d, want 1", got)
	}
	if got := ts.stats.Snapshot("d.fixed"); got != [5]uint64{} {
		t.Fatalf("a refund counted as hits: %v", got)
	}
	reg := prometheus.NewRegistry()
	if err := reg.Register(ts.stats); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var series []string
	for _, mf := range mfs {
		if mf.GetName() == "rlserver_rls_total_negative_hits" {
			for _, m := range mf.Metric {
				series = append(series, fmt.Sprintf("%s=%g", m.Label[0].GetValue(), m.Counter.GetValue()))
			}
		}
	}
	sort.Strings(series)
	if got := strings.Join(series, " "); got != "d.fixed=1 d.shadow=5 d.zero=1" {
		t.Fatalf("rlserver_rls_total_negative_hits: %s", got)
	}
	// An override limit: its own window, refunded as any fixed window.
	o := sdesc("fixed", "o")
	o.Limit = &rlv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 3, Unit: 2}
	ts.expect(t, "OK OK/0", hits(o, 3))
	ts.expect(t, "OVER_LIMIT OVER_LIMIT/0", hits(o, 1))
	ts.expect(t, "OK OK/2", hits(o, -2))
	// The response quota is left unset, as envoyproxy/ratelimit leaves it.
	r := ts.expect(t, "OK OK/1", hits(o, 1))
	if r.Quota != nil || r.Statuses[0].Quota != nil {
		t.Fatalf("quota set: %v", r)
	}
}

// TestNegativeHitsBadRequests: a refund with an absurd hits_addend or a
// bad override is INVALID_ARGUMENT and changes nothing.
func TestNegativeHitsBadRequests(t *testing.T) {
	ts := newTestService(t)
	ts.expect(t, "OK OK/5", hits(sdesc("fixed", "a"), 5))
	big := sdesc("fixed", "a")
	big.IsNegativeHits, big.HitsAddend = true, wrapperspb.UInt64(math.MaxUint64)
	bad := sdesc("fixed", "a")
	bad.IsNegativeHits = true
	bad.Limit = &rlv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 3, Unit: 99}
	for _, d := range []*rlv3.RateLimitDescriptor{big, bad} {
		_, err := ts.svc.ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "d", Descriptors: []*rlv3.RateLimitDescriptor{hits(sdesc("fixed", "a"), -1), d}})
		if status.Code(err) != codes.InvalidArgument {
			t.Fatalf("%v: %v, want INVALID_ARGUMENT", d, err)
		}
	}
	ts.expect(t, "OK OK/5", hits(sdesc("fixed", "a"), 0))
}

// TestQuotaMode: quota_mode descriptors make the request OVER_LIMIT only
// when every one of them is over (each status still says which), as
// envoyproxy/ratelimit; a refund counts as within.
func TestQuotaMode(t *testing.T) {
	ts := newTestService(t)
	a, b := sdesc("quota_a", "x"), sdesc("quota_b", "x")
	ts.expect(t, "OK OK/0 OK/1", a, b)
	ts.expect(t, "OK OVER_LIMIT/0 OK/0", a, b)
	ts.expect(t, "OVER_LIMIT OVER_LIMIT/0 OVER_LIMIT/0", a, b)
	ts.expect(t, "OK OVER_LIMIT/0 OK/1", a, hits(sdesc("quota_b", "x"), -1))
	// A rate limit over the limit beside them still decides.
	ts.expect(t, "OK OK/0", hits(sdesc("fixed", "q"), 10))
	ts.expect(t, "OVER_LIMIT OVER_LIMIT/0 OK/0", sdesc("fixed", "q"), b)
}

// hashSeed returns the key hash seed of a test's store, which decides the
// keys' shards: RLS_SEED's, to replay a failure, else one drawn and
// logged.
func hashSeed(t *testing.T) uint64 {
	t.Helper()
	if v := os.Getenv("RLS_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil || n == 0 {
			t.Fatalf("RLS_SEED=%q: want a positive integer", v)
		}
		return n
	}
	n := rand.Uint64() | 1
	t.Logf("hash seed %d (replay with RLS_SEED=%d)", n, n)
	return n
}
