package integration

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// rlsStatus is a descriptor status as envoyproxy/ratelimit answers it.
func rlsStatus(code pb.RateLimitResponse_Code, perUnit uint32, unit pb.RateLimitResponse_RateLimit_Unit, remaining uint32, reset int64) *pb.RateLimitResponse_DescriptorStatus {
	return &pb.RateLimitResponse_DescriptorStatus{
		Code:               code,
		CurrentLimit:       &pb.RateLimitResponse_RateLimit{RequestsPerUnit: perUnit, Unit: unit},
		LimitRemaining:     remaining,
		DurationUntilReset: durationpb.New(time.Duration(reset) * time.Second),
	}
}

func expectResponse(t *testing.T, got, want *pb.RateLimitResponse) {
	t.Helper()
	if !proto.Equal(got, want) {
		t.Fatalf("response\n%v\nwant\n%v", prototext.Format(got), prototext.Format(want))
	}
}

// postJSON posts a request to /json and returns the status code and the
// response decoded.
func (r *rlsServer) postJSON(t *testing.T, body string) (int, *pb.RateLimitResponse) {
	t.Helper()
	hr, err := http.Post("http://"+r.http+"/json", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(hr.Body)
	hr.Body.Close()
	var resp pb.RateLimitResponse
	if err := protojson.Unmarshal(b, &resp); err != nil {
		t.Fatalf("POST /json: %d %s: %v", hr.StatusCode, b, err)
	}
	return hr.StatusCode, &resp
}

// TestRLSGlobalShadowMode: with --rls-shadow-mode yes (SHADOW_MODE) a
// request over the limit is answered overall OK, its statuses and headers
// unchanged, over gRPC and /json (200); the rule's metrics count as
// without it, and rlserver_rls_global_shadow_mode counts the requests.
func TestRLSGlobalShadowMode(t *testing.T) {
	r := startRLS(t, rlsConfig, "--rls-shadow-mode", "yes", "--rls-response-headers", "yes", "--metrics-addr", "127.0.0.1:0")
	maddr := r.metricsAddr(t)
	ip := desc("remote_address", "10.0.0.1")
	minute := pb.RateLimitResponse_RateLimit_MINUTE
	headers := func(remaining string) []*core.HeaderValue {
		return []*core.HeaderValue{{Key: "RateLimit-Limit", Value: "3"}, {Key: "RateLimit-Remaining", Value: remaining}, {Key: "RateLimit-Reset", Value: "60"}}
	}
	for i, left := range []uint32{2, 1, 0} {
		expectResponse(t, r.ask(t, ip), &pb.RateLimitResponse{OverallCode: pb.RateLimitResponse_OK,
			Statuses:             []*pb.RateLimitResponse_DescriptorStatus{rlsStatus(pb.RateLimitResponse_OK, 3, minute, left, 60)},
			ResponseHeadersToAdd: headers([]string{"2", "1", "0"}[i])})
	}
	over := &pb.RateLimitResponse{OverallCode: pb.RateLimitResponse_OK,
		Statuses: []*pb.RateLimitResponse_DescriptorStatus{
			rlsStatus(pb.RateLimitResponse_OVER_LIMIT, 3, minute, 0, 60),
			{Code: pb.RateLimitResponse_OK},
		},
		ResponseHeadersToAdd: headers("0")}
	expectResponse(t, r.ask(t, ip, desc("nothing", "x")), over)
	if got := sample(t, scrape(t, maddr), "rlserver_rls_global_shadow_mode"); got != 1 {
		t.Fatalf("rlserver_rls_global_shadow_mode %v, want 1", got)
	}
	// POST /json: 200, not 429.
	code, resp := r.postJSON(t, `{"domain":"test","descriptors":[{"entries":[{"key":"remote_address","value":"10.0.0.1"}]},{"entries":[{"key":"nothing","value":"x"}]}]}`)
	if code != 200 {
		t.Fatalf("POST /json over the limit: %d", code)
	}
	expectResponse(t, resp, over)
	// A shadow_mode rule over its limit is OK already: not counted again.
	r.ask(t, desc("shadow", "s"))
	expectResponse(t, r.ask(t, desc("shadow", "s")), &pb.RateLimitResponse{OverallCode: pb.RateLimitResponse_OK,
		Statuses:             []*pb.RateLimitResponse_DescriptorStatus{rlsStatus(pb.RateLimitResponse_OK, 1, minute, 0, 60)},
		ResponseHeadersToAdd: []*core.HeaderValue{{Key: "RateLimit-Limit", Value: "1"}, {Key: "RateLimit-Remaining", Value: "0"}, {Key: "RateLimit-Reset", Value: "60"}}})
	fams := scrape(t, maddr)
	for _, c := range []struct {
		name, key string
		want      float64
	}{
		{"rlserver_rls_global_shadow_mode", "", 2},
		{"rlserver_rls_total_hits", "test.remote_address", 5},
		{"rlserver_rls_over_limit", "test.remote_address", 2},
		{"rlserver_rls_within_limit", "test.remote_address", 3},
		{"rlserver_rls_shadow_mode", "test.remote_address", 0},
		{"rlserver_rls_shadow_mode", "test.shadow", 1},
	} {
		var labels []string
		if c.key != "" {
			labels = []string{"key", c.key}
		}
		if got := sample(t, fams, c.name, labels...); got != c.want {
			t.Fatalf("%s{%s} = %v, want %v", c.name, c.key, got, c.want)
		}
	}
	// The state is counted as without the setting: still over.
	if resp := r.ask(t, ip); resp.Statuses[0].Code != pb.RateLimitResponse_OVER_LIMIT || resp.DynamicMetadata != nil {
		t.Fatalf("after: %v", resp)
	}
}

// TestRLSGlobalQuotaMode: with --rls-quota-mode yes (QUOTA_MODE) every
// descriptor is a quota descriptor: the request is over the limit only
// when all of them are (unmatched ones count, never over; unlimited ones
// do not count).
func TestRLSGlobalQuotaMode(t *testing.T) {
	r := startRLS(t, rlsConfig, "--rls-quota-mode", "yes")
	login := desc("path", "/login")
	expectSummary(t, r.ask(t, login), "OK OK/1/1")
	expectSummary(t, r.ask(t, login), "OK OK/0/1")
	expectSummary(t, r.ask(t, login), "OVER_LIMIT OVER_LIMIT/0/1")
	expectSummary(t, r.ask(t, login, desc("remote_address", "q")), "OK OVER_LIMIT/0/1 OK/2/60")
	expectSummary(t, r.ask(t, login, desc("nothing", "x")), "OK OVER_LIMIT/0/1 OK/0/0")
	expectSummary(t, r.ask(t, login, desc("internal", "x")), "OVER_LIMIT OVER_LIMIT/0/1 OK/4294967295/0")
	expectSummary(t, r.ask(t, login, desc("shadow", "s")), "OK OVER_LIMIT/0/1 OK/0/60")
	expectSummary(t, r.ask(t, login, desc("shadow", "s")), "OK OVER_LIMIT/0/1 OK/0/60")
	code, resp := r.postJSON(t, `{"domain":"test","descriptors":[{"entries":[{"key":"path","value":"/login"}]}]}`)
	if code != 429 || summary(resp) != "OVER_LIMIT OVER_LIMIT/0/1" {
		t.Fatalf("POST /json: %d %s", code, summary(resp))
	}
	code, resp = r.postJSON(t, `{"domain":"test","descriptors":[{"entries":[{"key":"path","value":"/login"}]},{"entries":[{"key":"remote_address","value":"q"}]}]}`)
	if code != 200 || summary(resp) != "OK OVER_LIMIT/0/1 OK/1/60" {
		t.Fatalf("POST /json: %d %s", code, summary(resp))
	}
}

// rlsMetaConfig adds rules with metadata to rlsConfig.
const rlsMetaConfig = rlsConfig + `  - key: team
    value: payments
    metadata:
      owner: payments
      limits: {tier: gold, burst: 10}
    rate_limit:
      unit: minute
      requests_per_unit: 1
  - key: region
    metadata:
      owner: edge
      limits: {region: any}
      tags: [a, 1, true]
    rate_limit:
      unit: minute
      requests_per_unit: 10
`

// TestRLSDynamicMetadata: with --rls-response-dynamic-metadata yes
// (RESPONSE_DYNAMIC_METADATA) each response carries dynamic_metadata as
// envoyproxy/ratelimit builds it, over gRPC and /json; without the flag,
// none.
func TestRLSDynamicMetadata(t *testing.T) {
	r := startRLS(t, rlsMetaConfig, "--rls-response-dynamic-metadata", "yes")
	st := func(m map[string]any) *structpb.Struct {
		s, err := structpb.NewStruct(m)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	minute := pb.RateLimitResponse_RateLimit_MINUTE
	team := desc("team", "payments")
	region := desc("region", "eu")
	region.HitsAddend = wrapperspb.UInt64(2)
	resp, err := r.client.ShouldRateLimit(ctx, &pb.RateLimitRequest{Domain: "test", HitsAddend: 1,
		Descriptors: []*rlv3.RateLimitDescriptor{team, region, desc("internal", "x"), desc("nothing", "y")}})
	if err != nil {
		t.Fatal(err)
	}
	first := &pb.RateLimitResponse{OverallCode: pb.RateLimitResponse_OK,
		Statuses: []*pb.RateLimitResponse_DescriptorStatus{
			rlsStatus(pb.RateLimitResponse_OK, 1, minute, 0, 60),
			rlsStatus(pb.RateLimitResponse_OK, 10, minute, 8, 60),
			{Code: pb.RateLimitResponse_OK, LimitRemaining: 4294967295},
			{Code: pb.RateLimitResponse_OK},
		},
		DynamicMetadata: st(map[string]any{
			"domain":     "test",
			"hitsAddend": 1.0,
			"descriptors": []any{
				map[string]any{"entries": []any{"team=payments"}},
				map[string]any{"entries": []any{"region=eu"}, "hitsAddend": 2.0},
				map[string]any{"entries": []any{"internal=x"}},
				map[string]any{"entries": []any{"nothing=y"}},
			},
			"metadata": map[string]any{
				"owner":  "payments",
				"limits": map[string]any{"tier": "gold", "burst": 10.0, "region": "any"},
				"tags":   []any{"a", 1.0, true},
			},
		})}
	expectResponse(t, resp, first)
	// team is over its limit now: only region's metadata (the override
	// has none); an override appears as its protobuf text.
	over := desc("team", "payments")
	over.Limit = &rlv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 5, Unit: 2}
	resp = r.ask(t, desc("team", "payments"), desc("region", "eu"), over)
	limit := resp.GetDynamicMetadata().GetFields()["descriptors"].GetListValue().GetValues()[2].GetStructValue().GetFields()["limit"].GetStringValue()
	var back rlv3.RateLimitDescriptor_RateLimitOverride
	if err := prototext.Unmarshal([]byte(limit), &back); err != nil || !proto.Equal(&back, over.Limit) {
		t.Fatalf("limit %q: %v", limit, err)
	}
	second := &pb.RateLimitResponse{OverallCode: pb.RateLimitResponse_OVER_LIMIT,
		Statuses: []*pb.RateLimitResponse_DescriptorStatus{
			rlsStatus(pb.RateLimitResponse_OVER_LIMIT, 1, minute, 0, 60),
			rlsStatus(pb.RateLimitResponse_OK, 10, minute, 7, 60),
			rlsStatus(pb.RateLimitResponse_OK, 5, minute, 3, 60), // the same counter as the rule's
		},
		DynamicMetadata: st(map[string]any{
			"domain": "test",
			"descriptors": []any{
				map[string]any{"entries": []any{"team=payments"}},
				map[string]any{"entries": []any{"region=eu"}},
				map[string]any{"entries": []any{"team=payments"}, "limit": limit},
			},
			"metadata": map[string]any{"owner": "edge", "limits": map[string]any{"region": "any"}, "tags": []any{"a", 1.0, true}},
		})}
	expectResponse(t, resp, second)
	// POST /json: the same, as protobuf JSON.
	code, jr := r.postJSON(t, `{"domain":"test","descriptors":[{"entries":[{"key":"region","value":"eu"}]}]}`)
	if code != 200 {
		t.Fatalf("POST /json: %d", code)
	}
	expectResponse(t, jr, &pb.RateLimitResponse{OverallCode: pb.RateLimitResponse_OK,
		Statuses: []*pb.RateLimitResponse_DescriptorStatus{rlsStatus(pb.RateLimitResponse_OK, 10, minute, 6, 60)},
		DynamicMetadata: st(map[string]any{
			"domain":      "test",
			"descriptors": []any{map[string]any{"entries": []any{"region=eu"}}},
			"metadata":    map[string]any{"owner": "edge", "limits": map[string]any{"region": "any"}, "tags": []any{"a", 1.0, true}},
		})})

	// Without the flag: no dynamic metadata.
	plain := startRLS(t, rlsMetaConfig)
	if resp := plain.ask(t, desc("region", "eu")); resp.DynamicMetadata != nil {
		t.Fatalf("dynamic metadata without the flag: %v", resp.DynamicMetadata)
	}
}

// TestRLSGlobalFlagsBad: a value other than yes or no stops the start,
// exit 2, naming the flag.
func TestRLSGlobalFlagsBad(t *testing.T) {
	for _, flag := range []string{"--rls-shadow-mode", "--rls-quota-mode", "--rls-response-dynamic-metadata"} {
		var out bytes.Buffer
		cmd := serverCommand("--port", "0", "--dir", "", "--rls-addr", "127.0.0.1:0", flag, "true")
		cmd.Stderr = &out
		err := cmd.Run()
		if cmd.ProcessState.ExitCode() != 2 || !strings.Contains(out.String(), flag+" must be yes or no") {
			t.Fatalf("%s true: exit %v:\n%s", flag, err, out.String())
		}
	}
}
