package integration

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// refund is a descriptor giving n units back (is_negative_hits).
func refund(d *rlv3.RateLimitDescriptor, n uint64) *rlv3.RateLimitDescriptor {
	d.IsNegativeHits, d.HitsAddend = true, wrapperspb.UInt64(n)
	return d
}

// TestRLSNegativeHits: over gRPC, a descriptor with is_negative_hits gives
// its hits back (envoyproxy/ratelimit's refund): always OK with what
// remains after it, floored at an empty limiter, a fixed window's key
// keeping its window; for each algorithm; beside a descriptor that takes;
// over POST /json; and a bad one changes nothing.
func TestRLSNegativeHits(t *testing.T) {
	r := startRLS(t, rlsConfig)
	ip := desc("remote_address", "10.0.0.1")
	key := "rls:test:remote_address=10.0.0.1:fixed_window/60s"
	// Nothing taken: nothing to give back, no key.
	expectSummary(t, r.ask(t, refund(desc("remote_address", "10.0.0.1"), 2)), "OK OK/3/60")
	do(t, r.rdb, "EXISTS", key).equal(0)
	for range 3 {
		r.ask(t, ip)
	}
	expectSummary(t, r.ask(t, ip), "OVER_LIMIT OVER_LIMIT/0/60")
	advance(t, r.rdb, 10_000)
	resp := r.ask(t, refund(desc("remote_address", "10.0.0.1"), 2))
	expectSummary(t, resp, "OK OK/2/50")
	if l := resp.Statuses[0].CurrentLimit; l.GetRequestsPerUnit() != 3 {
		t.Fatalf("current_limit %v", l)
	}
	do(t, r.rdb, "TYPE", key).equal("window")
	do(t, r.rdb, "PTTL", key).equal(49_500)
	expectSummary(t, r.ask(t, ip), "OK OK/1/50")
	expectSummary(t, r.ask(t, ip), "OK OK/0/50")
	expectSummary(t, r.ask(t, ip), "OVER_LIMIT OVER_LIMIT/0/50")
	// More than was taken: the window is empty again, and its key gone.
	expectSummary(t, r.ask(t, refund(desc("remote_address", "10.0.0.1"), 100)), "OK OK/3/50")
	do(t, r.rdb, "EXISTS", key).equal(0)

	// One request takes from one descriptor and refunds another.
	expectSummary(t, r.ask(t, desc("remote_address", "10.0.0.2"), desc("remote_address", "10.0.0.2")), "OK OK/2/50 OK/1/50")
	expectSummary(t, r.ask(t, desc("remote_address", "10.0.0.3"), refund(desc("remote_address", "10.0.0.2"), 1)), "OK OK/2/50 OK/2/50")

	// Each algorithm: take all, be refused, give two back, take two.
	for _, c := range []struct{ key, take, after string }{
		{"sliding", "OK OK/0/110", "OK OK/2/110"},
		{"bucket", "OK OK/0/3", "OK OK/2/1"},
		{"gcra", "OK OK/0/2", "OK OK/2/0"},
	} {
		d := func() *rlv3.RateLimitDescriptor { return desc(c.key, "n") }
		all := d()
		all.HitsAddend = wrapperspb.UInt64(map[string]uint64{"sliding": 4, "bucket": 3, "gcra": 2}[c.key])
		expectSummary(t, r.ask(t, all), c.take)
		if resp := r.ask(t, d()); resp.OverallCode != pb.RateLimitResponse_OVER_LIMIT {
			t.Fatalf("%s: %s", c.key, summary(resp))
		}
		expectSummary(t, r.ask(t, refund(d(), 2)), c.after)
		two := d()
		two.HitsAddend = wrapperspb.UInt64(2)
		if resp := r.ask(t, two); summary(resp)[:3] != "OK " || resp.Statuses[0].LimitRemaining != 0 {
			t.Fatalf("%s after a refund of 2: %s", c.key, summary(resp))
		}
		if resp := r.ask(t, d()); resp.OverallCode != pb.RateLimitResponse_OVER_LIMIT {
			t.Fatalf("%s: %s", c.key, summary(resp))
		}
	}

	// POST /json: isNegativeHits as protobuf JSON; never 429.
	for range 3 {
		r.ask(t, desc("remote_address", "10.0.0.9"))
	}
	body := `{"domain":"test","descriptors":[{"entries":[{"key":"remote_address","value":"10.0.0.9"}],"hitsAddend":"1","isNegativeHits":true}]}`
	hr, err := http.Post("http://"+r.http+"/json", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(hr.Body)
	hr.Body.Close()
	if hr.StatusCode != 200 || !strings.Contains(string(b), `"limitRemaining":1`) {
		t.Fatalf("POST /json refund: %d %s", hr.StatusCode, b)
	}

	// A bad descriptor beside a refund: INVALID_ARGUMENT, nothing given back.
	bad := refund(desc("remote_address", "10.0.0.9"), 1)
	bad.Limit = &rlv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 1, Unit: 42}
	_, err = r.client.ShouldRateLimit(ctx, &pb.RateLimitRequest{Domain: "test",
		Descriptors: []*rlv3.RateLimitDescriptor{refund(desc("remote_address", "10.0.0.9"), 1), bad}})
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("bad override: %v", err)
	}
	expectSummary(t, r.ask(t, desc("remote_address", "10.0.0.9")), "OK OK/0/50")
}

// refundRules are rlsConfig's rules of each algorithm, by their
// descriptor key and key suffix, with the hits each refund test takes.
var refundRules = []struct {
	key, suffix string
	take        uint64
}{
	{"remote_address", "fixed_window/60s", 1},
	{"sliding", "sliding_window/60s", 2},
	{"bucket", "token_bucket/1s", 2},
	{"gcra", "gcra/60s", 1},
}

// TestRLSNegativeHitsExact: over gRPC, for each algorithm, a refund of n
// after a take of n leaves the limiter as if the take had not happened:
// descriptor a, which took and gave back, answers every later request
// (looks and takes, over more than a minute) exactly as descriptor b,
// which shared a's history (in this minute and the next, so a sliding
// window's previous minute weighs in and a bucket is partly refilled) but
// never took; its key expires when b's does; and a take refunded on a
// fresh limiter leaves no key.
func TestRLSNegativeHitsExact(t *testing.T) {
	r := startRLS(t, rlsConfig)
	for _, c := range refundRules {
		setClock(t, r.rdb, t0+500)
		cost := func(v string, n uint64) *rlv3.RateLimitDescriptor {
			d := desc(c.key, c.key+"-"+v)
			d.HitsAddend = wrapperspb.UInt64(n)
			return d
		}
		both := func(n uint64) *pb.RateLimitResponse {
			t.Helper()
			return r.ask(t, cost("a", n), cost("b", n))
		}
		same := func(what string, resp *pb.RateLimitResponse) {
			t.Helper()
			if a, b := resp.Statuses[0], resp.Statuses[1]; a.Code != b.Code || a.LimitRemaining != b.LimitRemaining ||
				a.DurationUntilReset.AsDuration() != b.DurationUntilReset.AsDuration() {
				t.Fatalf("%s: %s: after the refund %v, never taking %v", c.key, what, a, b)
			}
			keyOf := func(v string) string { return "rls:test:" + c.key + "=" + c.key + "-" + v + ":" + c.suffix }
			pa, _ := r.rdb.PTTL(ctx, keyOf("a")).Result()
			pbb, _ := r.rdb.PTTL(ctx, keyOf("b")).Result()
			if pa != pbb {
				t.Fatalf("%s: %s: PTTL %v, never taking %v", c.key, what, pa, pbb)
			}
		}
		both(1)
		advance(t, r.rdb, 60_200)
		both(1)
		advance(t, r.rdb, 350)
		if resp := r.ask(t, cost("a", c.take)); resp.OverallCode != pb.RateLimitResponse_OK {
			t.Fatalf("%s: the take: %s", c.key, summary(resp))
		}
		advance(t, r.rdb, 500)
		same("the refund", r.ask(t, refund(desc(c.key, c.key+"-a"), c.take), cost("b", 0)))
		for i, step := range []struct {
			advance int64
			n       uint64
		}{{0, 0}, {0, 1}, {250, 1}, {1000, 0}, {20_000, 1}, {37_000, 0}, {0, 1}, {45_000, 1}, {90_000, 0}} {
			advance(t, r.rdb, step.advance)
			same(fmt.Sprintf("step %d (+%d ms, %d)", i, step.advance, step.n), both(step.n))
		}
		// A take and its refund on a fresh limiter leave no key.
		r.ask(t, cost("c", c.take))
		advance(t, r.rdb, 100)
		r.ask(t, refund(desc(c.key, c.key+"-c"), c.take))
		do(t, r.rdb, "EXISTS", "rls:test:"+c.key+"="+c.key+"-c:"+c.suffix).equal(0)
	}
}
