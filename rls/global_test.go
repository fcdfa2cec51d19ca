package rls

import (
	"context"
	"testing"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// globalConfig is serviceConfig with metadata on some rules, for the
// global settings' tests.
const globalConfig = serviceConfig + `  - key: meta_a
    metadata:
      team: a
      shared: {x: 1, list: [1, two, true, null]}
    rate_limit: {unit: minute, requests_per_unit: 1}
  - key: meta_b
    metadata:
      team: b
      shared: {x: 2, y: 2}
      only_b: 2.5
    rate_limit: {unit: minute, requests_per_unit: 5}
  - key: meta_free
    metadata: {free: yes}
    rate_limit: {unlimited: true}
  - key: meta_shadow
    shadow_mode: true
    metadata: {shadowed: true}
    rate_limit: {unit: minute, requests_per_unit: 1}
  - key: meta_quota
    quota_mode: true
    metadata: {quota: true}
    rate_limit: {unit: minute, requests_per_unit: 1}
  - key: meta_detailed
    detailed_metric: true
    metadata: {detailed: true}
    rate_limit: {unit: minute, requests_per_unit: 5}
  - key: meta_v2m
    value_to_metric: true
    metadata: {v2m: true}
    rate_limit: {unit: minute, requests_per_unit: 5}
  - key: meta_empty
    metadata: {}
    rate_limit: {unit: minute, requests_per_unit: 5}
`

// newGlobalService is a test service over globalConfig with settings o.
func newGlobalService(t *testing.T, o ServiceOptions) *testService {
	t.Helper()
	return newServiceWith(t, globalConfig, o)
}

// TestGlobalShadowMode: SHADOW_MODE answers overall_code OK where the
// descriptors decide OVER_LIMIT; the statuses, the headers, the state and
// the rules' metrics stay as without it, and each request it overrides
// counts once in global_shadow_mode.
func TestGlobalShadowMode(t *testing.T) {
	ts := newGlobalService(t, ServiceOptions{ShadowMode: true, ResponseHeaders: true})
	plain := newGlobalService(t, ServiceOptions{ResponseHeaders: true})
	steps := []struct {
		ds         func() []*rlv3.RateLimitDescriptor
		want, bare string // with the shadow mode, and without
		overridden uint64 // global_shadow_mode after the step
	}{
		{func() []*rlv3.RateLimitDescriptor { return []*rlv3.RateLimitDescriptor{hits(sdesc("fixed", "a"), 9)} }, "OK OK/1", "OK OK/1", 0},
		{func() []*rlv3.RateLimitDescriptor { return []*rlv3.RateLimitDescriptor{hits(sdesc("fixed", "a"), 2)} }, "OK OVER_LIMIT/0", "OVER_LIMIT OVER_LIMIT/0", 1},
		{func() []*rlv3.RateLimitDescriptor { return []*rlv3.RateLimitDescriptor{sdesc("fixed", "a")} }, "OK OK/0", "OK OK/0", 1},
		{func() []*rlv3.RateLimitDescriptor {
			return []*rlv3.RateLimitDescriptor{sdesc("fixed", "a"), sdesc("free", "f"), sdesc("none", "n")}
		}, "OK OVER_LIMIT/0 OK/4294967295 OK/0", "OVER_LIMIT OVER_LIMIT/0 OK/4294967295 OK/0", 2},
		// Quota descriptors all over: overridden too.
		{func() []*rlv3.RateLimitDescriptor { return []*rlv3.RateLimitDescriptor{sdesc("quota_a", "q")} }, "OK OK/0", "OK OK/0", 2},
		{func() []*rlv3.RateLimitDescriptor { return []*rlv3.RateLimitDescriptor{sdesc("quota_a", "q")} }, "OK OVER_LIMIT/0", "OVER_LIMIT OVER_LIMIT/0", 3},
		// A shadow_mode rule over its limit was OK already: not counted.
		{func() []*rlv3.RateLimitDescriptor {
			return []*rlv3.RateLimitDescriptor{sdesc("shadow", "s"), sdesc("shadow", "s")}
		}, "OK OK/0 OK/0", "OK OK/0 OK/0", 3},
	}
	for i, st := range steps {
		got := ts.ask(t, st.ds()...)
		bare := plain.ask(t, st.ds()...)
		if brief(got) != st.want || brief(bare) != st.bare {
			t.Fatalf("step %d: %q (without the shadow mode %q), want %q (%q)", i, brief(got), brief(bare), st.want, st.bare)
		}
		// Everything but the overall code is the reply without it.
		bare.OverallCode = got.OverallCode
		if !proto.Equal(got, bare) {
			t.Fatalf("step %d: %v\nwithout the shadow mode %v", i, got, bare)
		}
		if n := ts.stats.GlobalShadowMode(); n != st.overridden {
			t.Fatalf("step %d: global_shadow_mode %d, want %d", i, n, st.overridden)
		}
	}
	for _, key := range []string{"d.fixed", "d.quota_a", "d.shadow"} {
		if got, want := ts.stats.Snapshot(key), plain.stats.Snapshot(key); got != want {
			t.Fatalf("%s: stats %v, without the shadow mode %v", key, got, want)
		}
	}
	if got, want := ts.stats.Snapshot("d.fixed"), [5]uint64{13, 2, 3, 10, 0}; got != want {
		t.Fatalf("d.fixed stats %v, want %v", got, want)
	}
	if plain.stats.GlobalShadowMode() != 0 {
		t.Fatal("global_shadow_mode counted without the setting")
	}
	// The headers are the over-limit descriptor's, as without the setting.
	r := ts.ask(t, sdesc("fixed", "a"))
	if r.OverallCode != pb.RateLimitResponse_OK || !proto.Equal(r.ResponseHeadersToAdd[1], &core.HeaderValue{Key: "RateLimit-Remaining", Value: "0"}) {
		t.Fatalf("headers %v", r)
	}
}

// TestGlobalQuotaMode: QUOTA_MODE makes every descriptor a quota
// descriptor: a request is OVER_LIMIT only when all its descriptors are,
// unmatched ones counting (never over), unlimited ones not.
func TestGlobalQuotaMode(t *testing.T) {
	ts := newGlobalService(t, ServiceOptions{QuotaMode: true})
	ts.expect(t, "OK OK/0", hits(sdesc("fixed", "a"), 10))
	ts.expect(t, "OVER_LIMIT OVER_LIMIT/0", sdesc("fixed", "a"))
	ts.expect(t, "OK OVER_LIMIT/0 OK/9", sdesc("fixed", "a"), sdesc("fixed", "b"))
	ts.expect(t, "OK OVER_LIMIT/0 OK/0", sdesc("fixed", "a"), sdesc("none", "n"))
	ts.expect(t, "OVER_LIMIT OVER_LIMIT/0 OK/4294967295", sdesc("fixed", "a"), sdesc("free", "f"))
	ts.expect(t, "OK OK/0", hits(sdesc("fixed", "b"), 9))
	ts.expect(t, "OVER_LIMIT OVER_LIMIT/0 OVER_LIMIT/0", sdesc("fixed", "a"), sdesc("fixed", "b"))
	// A shadow_mode rule over its limit is OK, so never all over.
	ts.expect(t, "OK OK/0", sdesc("shadow", "s"))
	ts.expect(t, "OK OVER_LIMIT/0 OK/0", sdesc("fixed", "a"), sdesc("shadow", "s"))
	// A domain not configured: every descriptor unmatched, OK.
	r, err := ts.svc.ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "other", Descriptors: []*rlv3.RateLimitDescriptor{sdesc("fixed", "a")}})
	if err != nil || brief(r) != "OK OK/0" {
		t.Fatalf("unknown domain: %v %v", brief(r), err)
	}
	// Without it, the same state decides as usual.
	plain := newGlobalService(t, ServiceOptions{})
	plain.expect(t, "OK OK/0", hits(sdesc("fixed", "a"), 10))
	plain.expect(t, "OVER_LIMIT OVER_LIMIT/0 OK/0", sdesc("fixed", "a"), sdesc("none", "n"))
}

// mustStruct builds a Struct from Go values, for expectations.
func mustStruct(t *testing.T, m map[string]any) *structpb.Struct {
	t.Helper()
	s, err := structpb.NewStruct(m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestDynamicMetadata: RESPONSE_DYNAMIC_METADATA sets dynamic_metadata as
// envoyproxy/ratelimit's ratelimitToMetadata: the domain, each descriptor
// (entries, override, hits_addend), the request's hits_addend, and the
// metadata of the rules that passed, merged in request order.
func TestDynamicMetadata(t *testing.T) {
	ts := newGlobalService(t, ServiceOptions{DynamicMetadata: true})
	r := ts.expect(t, "OK OK/0 OK/4", sdesc("meta_a", "x"), sdesc("meta_b", "x"))
	want := mustStruct(t, map[string]any{
		"domain": "d",
		"descriptors": []any{
			map[string]any{"entries": []any{"meta_a=x"}},
			map[string]any{"entries": []any{"meta_b=x"}},
		},
		"metadata": map[string]any{
			"team":   "a",
			"shared": map[string]any{"x": 1.0, "y": 2.0, "list": []any{1.0, "two", true, nil}},
			"only_b": 2.5,
		},
	})
	if !proto.Equal(r.DynamicMetadata, want) {
		t.Fatalf("dynamic metadata %v, want %v", r.DynamicMetadata, want)
	}
	// b first, a over its limit: b's alone.
	r = ts.expect(t, "OVER_LIMIT OK/3 OVER_LIMIT/0", sdesc("meta_b", "x"), sdesc("meta_a", "x"))
	want = mustStruct(t, map[string]any{
		"domain": "d",
		"descriptors": []any{
			map[string]any{"entries": []any{"meta_b=x"}},
			map[string]any{"entries": []any{"meta_a=x"}},
		},
		"metadata": map[string]any{"team": "b", "shared": map[string]any{"x": 2.0, "y": 2.0}, "only_b": 2.5},
	})
	if !proto.Equal(r.DynamicMetadata, want) {
		t.Fatalf("dynamic metadata %v, want %v", r.DynamicMetadata, want)
	}
	// Merging copied a's, so a's configuration did not take b's y
	// (envoyproxy/ratelimit merges into the configuration's own Struct).
	r = ts.expect(t, "OK OK/0", sdesc("meta_a", "z"))
	if got := r.DynamicMetadata.Fields["metadata"]; !proto.Equal(got, structpb.NewStructValue(mustStruct(t, map[string]any{
		"team": "a", "shared": map[string]any{"x": 1.0, "list": []any{1.0, "two", true, nil}},
	}))) {
		t.Fatalf("a's metadata changed by a merge: %v", got)
	}

	// Unlimited, over the limit, quota over: no metadata; a shadow_mode
	// rule over its limit passes; no metadata at all: no "metadata" key.
	ts.expect(t, "OK OK/0", sdesc("meta_shadow", "s"))
	ts.expect(t, "OK OK/0", sdesc("meta_quota", "q"))
	r = ts.expect(t, "OVER_LIMIT OK/4294967295 OVER_LIMIT/0 OVER_LIMIT/0 OK/0 OK/0 OK/4",
		sdesc("meta_free", "f"), sdesc("meta_a", "x"), sdesc("meta_quota", "q"), sdesc("meta_shadow", "s"), sdesc("none", "n"), sdesc("meta_empty", "e"))
	if got := r.DynamicMetadata.Fields["metadata"]; !proto.Equal(got, structpb.NewStructValue(mustStruct(t, map[string]any{"shadowed": true}))) {
		t.Fatalf("metadata of the passing rules %v", got)
	}
	r = ts.expect(t, "OK OK/0 OK/3", sdesc("none", "n"), sdesc("meta_empty", "e"))
	if _, ok := r.DynamicMetadata.Fields["metadata"]; ok {
		t.Fatalf("metadata without any: %v", r.DynamicMetadata)
	}

	// detailed_metric and value_to_metric keep the metadata
	// (envoyproxy/ratelimit rebuilds the rule for its metric key and
	// drops it).
	r = ts.expect(t, "OK OK/4 OK/4", sdesc("meta_detailed", "x"), sdesc("meta_v2m", "x"))
	if got := r.DynamicMetadata.Fields["metadata"]; !proto.Equal(got, structpb.NewStructValue(mustStruct(t, map[string]any{"detailed": true, "v2m": true}))) {
		t.Fatalf("detailed_metric's and value_to_metric's metadata %v", got)
	}

	// hits_addend (request-level when not 0, a descriptor's when set, 0
	// included), several entries, and an override in protobuf text.
	o := sdesc("fixed", "o", "sub", "s")
	o.Limit = &rlv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 7, Unit: 2}
	d0 := hits(sdesc("fixed", "h"), 0)
	r, err := ts.svc.ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "d", HitsAddend: 3,
		Descriptors: []*rlv3.RateLimitDescriptor{o, d0, hits(sdesc("meta_b", "h"), 2)}})
	if err != nil {
		t.Fatal(err)
	}
	if brief(r) != "OK OK/4 OK/10 OK/3" {
		t.Fatalf("response %s", brief(r))
	}
	descs := r.DynamicMetadata.Fields["descriptors"].GetListValue().GetValues()
	if len(descs) != 3 {
		t.Fatalf("descriptors %v", r.DynamicMetadata)
	}
	limit := descs[0].GetStructValue().Fields["limit"].GetStringValue()
	var back rlv3.RateLimitDescriptor_RateLimitOverride
	if err := prototext.Unmarshal([]byte(limit), &back); err != nil || !proto.Equal(&back, o.Limit) {
		t.Fatalf("limit %q: %v", limit, err)
	}
	delete(descs[0].GetStructValue().Fields, "limit")
	want = mustStruct(t, map[string]any{
		"domain":     "d",
		"hitsAddend": 3.0,
		"descriptors": []any{
			map[string]any{"entries": []any{"fixed=o", "sub=s"}},
			map[string]any{"entries": []any{"fixed=h"}, "hitsAddend": 0.0},
			map[string]any{"entries": []any{"meta_b=h"}, "hitsAddend": 2.0},
		},
		"metadata": map[string]any{"team": "b", "shared": map[string]any{"x": 2.0, "y": 2.0}, "only_b": 2.5},
	})
	if !proto.Equal(r.DynamicMetadata, want) {
		t.Fatalf("dynamic metadata %v, want %v", r.DynamicMetadata, want)
	}

	// Off (the default): no dynamic metadata.
	plain := newGlobalService(t, ServiceOptions{})
	if r := plain.ask(t, sdesc("meta_a", "x")); r.DynamicMetadata != nil {
		t.Fatalf("dynamic metadata without the setting: %v", r.DynamicMetadata)
	}
}

// TestMetadataConfig: metadata is read as envoyproxy/ratelimit reads it
// (numbers, booleans, null, nested lists and mappings, keys as text), and
// anything but a mapping is refused with its line.
func TestMetadataConfig(t *testing.T) {
	cfg, err := ParseConfig("m.yaml", []byte(`domain: m
descriptors:
  - key: k
    metadata:
      int: 3
      hex: 0x10
      float: 1.5
      bool: true
      "null": null
      str: text
      when: 2001-12-14
      1: one
      anchor: &a {deep: [x, {y: z}]}
      alias: *a
    rate_limit: {unit: second, requests_per_unit: 1}
  - key: none
    metadata:
    rate_limit: {unit: second, requests_per_unit: 1}
`))
	if err != nil {
		t.Fatal(err)
	}
	m, _ := cfg.Lookup("m", []Entry{{"k", "v"}})
	deep := map[string]any{"deep": []any{"x", map[string]any{"y": "z"}}}
	want := mustStruct(t, map[string]any{"int": 3.0, "hex": 16.0, "float": 1.5, "bool": true, "null": nil, "str": "text",
		"when": "2001-12-14", "1": "one", "anchor": deep, "alias": deep})
	if !proto.Equal(m.Rule.Metadata, want) {
		t.Fatalf("metadata %v, want %v", m.Rule.Metadata, want)
	}
	if m, _ := cfg.Lookup("m", []Entry{{"none", "v"}}); m.Rule.Metadata != nil {
		t.Fatalf("null metadata %v", m.Rule.Metadata)
	}
	for _, c := range []struct{ yaml, want string }{
		{"domain: m\ndescriptors:\n  - key: k\n    metadata: [1]\n", "m.yaml:4: error parsing metadata: metadata must be a mapping"},
		{"domain: m\ndescriptors:\n  - key: k\n    metadata: text\n", "m.yaml:4: error parsing metadata: metadata must be a mapping"},
		{"domain: m\ndescriptors:\n  - key: k\n    metadata:\n      [a]: b\n", "m.yaml:5: error parsing metadata: a key must be a scalar"},
	} {
		if _, err := ParseConfig("m.yaml", []byte(c.yaml)); err == nil || err.Error() != c.want {
			t.Fatalf("%q: %v, want %s", c.yaml, err, c.want)
		}
	}
}
