package rls

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// ruleKeys are the keys of serviceConfig's rules for descriptor value v.
func ruleKey(alg, v string) string {
	suffix := map[string]string{"fixed": "fixed_window", "sliding": "sliding_window", "bucket": "token_bucket", "gcra": "gcra"}[alg]
	return "rls:d:" + alg + "=" + v + ":" + suffix + "/60s"
}

// full is a response's every status as CODE/remaining/reset in ms.
func full(r *pb.RateLimitResponse) []string {
	var out []string
	for _, s := range r.Statuses {
		out = append(out, fmt.Sprintf("%s/%d/%d", s.Code, s.LimitRemaining, s.DurationUntilReset.AsDuration().Milliseconds()))
	}
	return out
}

// TestNegativeHitsExact: for each algorithm, a refund of n after a take
// of n (some time apart, only looks between) leaves the limiter as if the
// take had not happened: descriptor a, which took and gave back, answers
// every later request (looks and takes, over a minute and more) as
// descriptor b, which shared a's history but never took the n units, and
// its key expires when b's does. A key made by the take alone is gone
// after the refund.
func TestNegativeHitsExact(t *testing.T) {
	for _, alg := range []string{"fixed", "sliding", "bucket", "gcra"} {
		t.Run(alg, func(t *testing.T) {
			ts := newTestService(t)
			both := func(n int64) *pb.RateLimitResponse {
				t.Helper()
				return ts.ask(t, hits(sdesc(alg, "a"), n), hits(sdesc(alg, "b"), n))
			}
			// A history in this minute and the next (a sliding window's
			// previous minute weighs in; a bucket refills partly between
			// calls), then a take of 4 and, a little later, its refund.
			both(3)
			ts.clk.Advance(60200 * time.Millisecond)
			both(2)
			ts.clk.Advance(350 * time.Millisecond)
			if r := ts.ask(t, hits(sdesc(alg, "a"), 4)); r.OverallCode != pb.RateLimitResponse_OK {
				t.Fatalf("the take: %s", brief(r))
			}
			ts.clk.Advance(1150 * time.Millisecond)
			ts.ask(t, hits(sdesc(alg, "a"), 0))
			r := ts.ask(t, hits(sdesc(alg, "a"), -4), hits(sdesc(alg, "b"), 0))
			if got := full(r); got[0] != got[1] {
				t.Fatalf("the refund answered %s, never taking %s", got[0], got[1])
			}
			for i, step := range []struct {
				advance time.Duration
				n       int64
			}{{0, 0}, {0, 2}, {250 * time.Millisecond, 1}, {time.Second, 0}, {20 * time.Second, 4}, {37 * time.Second, 0}, {0, 3}, {45 * time.Second, 2}, {90 * time.Second, 0}} {
				ts.clk.Advance(step.advance)
				got := full(both(step.n))
				if got[0] != got[1] {
					t.Fatalf("step %d (+%v, %d): after the refund %s, never taking %s", i, step.advance, step.n, got[0], got[1])
				}
				if a, b := ts.do(t, "PTTL", ruleKey(alg, "a")), ts.do(t, "PTTL", ruleKey(alg, "b")); a != b {
					t.Fatalf("step %d: PTTL %q, never taking %q", i, a, b)
				}
			}
			// A take and its refund on a fresh limiter leave no key.
			ts.clk.Advance(time.Second)
			ts.expect(t, "OK OK/5", hits(sdesc(alg, "c"), 5))
			ts.clk.Advance(400 * time.Millisecond)
			ts.ask(t, hits(sdesc(alg, "c"), -5))
			if got := ts.do(t, "EXISTS", ruleKey(alg, "c")); got != ":0\r\n" {
				t.Fatalf("a refund of all that was taken left the key: %q", got)
			}
		})
	}
}

// TestNegativeHitsWrongType: a refund on a key holding something else
// answers FAILED_PRECONDITION and leaves it alone: another type, and a
// window of the other mode.
func TestNegativeHitsWrongType(t *testing.T) {
	ts := newTestService(t)
	refund := func(alg string) error {
		_, err := ts.svc.ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "d", Descriptors: []*rlv3.RateLimitDescriptor{hits(sdesc(alg, "w"), -2)}})
		return err
	}
	ts.do(t, "SET", ruleKey("bucket", "w"), "x")
	if err := refund("bucket"); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("refund on a string: %v", err)
	}
	if got := ts.do(t, "GET", ruleKey("bucket", "w")); got != "$1\r\nx\r\n" {
		t.Fatalf("the string became %q", got)
	}
	key := ruleKey("fixed", "w")
	if got := ts.do(t, "CL.WINDOW", key, "10", "60s", "3", "SLIDING"); !strings.HasPrefix(got, "*5\r\n:1\r\n") {
		t.Fatalf("CL.WINDOW: %q", got)
	}
	if err := refund("fixed"); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("refund of a fixed rule on a SLIDING window: %v", err)
	}
	if got := ts.do(t, "CL.WINDOW", key, "10", "60s", "0", "SLIDING"); !strings.HasPrefix(got, "*5\r\n:1\r\n:10\r\n:7\r\n") {
		t.Fatalf("the window changed: %q", got)
	}
}
