package rls

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// Call is one decision asked of the keyspace: take N units of Rule's
// limiter at Key (N = 0 only looks), or with Refund give N units back.
type Call struct {
	Key    []byte
	Rule   *Rule
	N      int64
	Refund bool // is_negative_hits: N units return to the limiter
}

// Decision is a limiter command's decision reply.
type Decision struct {
	Allowed      bool
	Limit        int64
	Remaining    int64
	RetryAfterMs int64 // -1: never
	ResetAfterMs int64
}

// Keyspace decides calls with rlserver's limiter commands.
type Keyspace interface {
	// Decide fills out[i] with calls[i]'s decision, all at one instant of
	// the server clock. An error is a gRPC status error.
	Decide(ctx context.Context, calls []Call, out []Decision) error
	// NowMs returns the server clock (Unix ms).
	NowMs() int64
}

// nearLimitRatio is envoyproxy/ratelimit's NEAR_LIMIT_RATIO default.
const nearLimitRatio = 0.8

// ServiceOptions are a service's global settings, envoyproxy/ratelimit's
// environment variables of the same meaning. The zero value is its
// defaults: all off.
type ServiceOptions struct {
	// ResponseHeaders adds RateLimit-Limit, RateLimit-Remaining and
	// RateLimit-Reset from the descriptor closest to its limit
	// (LIMIT_RESPONSE_HEADERS_ENABLED; --rls-response-headers).
	ResponseHeaders bool
	// ShadowMode answers overall_code OK where the descriptors decide
	// OVER_LIMIT, leaving each status, the headers, the state and the
	// per-rule metrics as they are, and counts each such request in
	// rlserver_rls_global_shadow_mode (SHADOW_MODE; --rls-shadow-mode).
	ShadowMode bool
	// QuotaMode treats every descriptor as quota_mode: the request is
	// OVER_LIMIT only when all of them (unmatched ones included, unlimited
	// ones not) are over (QUOTA_MODE; --rls-quota-mode).
	QuotaMode bool
	// DynamicMetadata sets the response's dynamic_metadata: the domain,
	// the request's descriptors and hits_addend, and the merged metadata
	// of the rules that passed (RESPONSE_DYNAMIC_METADATA;
	// --rls-response-dynamic-metadata).
	DynamicMetadata bool
}

// Service answers ShouldRateLimit from the configuration it holds. It is
// safe for concurrent use.
type Service struct {
	pb.UnimplementedRateLimitServiceServer
	ks    Keyspace
	cfg   atomic.Pointer[Config]
	opts  ServiceOptions
	stats *Stats
}

// NewService returns a service deciding over ks with the settings o.
func NewService(ks Keyspace, cfg *Config, stats *Stats, o ServiceOptions) *Service {
	s := &Service{ks: ks, opts: o, stats: stats}
	s.cfg.Store(cfg)
	return s
}

// SetConfig replaces the configuration for the requests that follow.
func (s *Service) SetConfig(c *Config) { s.cfg.Store(c) }

// Config returns the configuration in force.
func (s *Service) Config() *Config { return s.cfg.Load() }

func invalid(format string, args ...any) error {
	return status.Errorf(codes.InvalidArgument, format, args...)
}

// ShouldRateLimit decides a request (envoy.service.ratelimit.v3). A bad
// request answers INVALID_ARGUMENT; nothing in a request can crash the
// server.
func (s *Service) ShouldRateLimit(ctx context.Context, req *pb.RateLimitRequest) (resp *pb.RateLimitResponse, err error) {
	began := time.Now()
	defer func() {
		if r := recover(); r != nil {
			resp, err = nil, status.Errorf(codes.Internal, "rate limit service: %v", r)
		}
		s.stats.observe(time.Since(began), err)
	}()
	return s.decide(ctx, req)
}

// item is one descriptor of a request on its way to a decision.
type item struct {
	rule      *Rule
	entries   []Entry
	values    []string
	stat      string
	hits      int64
	refund    bool // is_negative_hits
	unlimited bool
	call      int // index in calls, -1 none
}

func (s *Service) decide(ctx context.Context, req *pb.RateLimitRequest) (*pb.RateLimitResponse, error) {
	if req.GetDomain() == "" {
		return nil, invalid("rate limit domain must not be empty")
	}
	if len(req.GetDescriptors()) == 0 {
		return nil, invalid("rate limit descriptor list must not be empty")
	}
	cfg := s.cfg.Load()
	if cfg == nil {
		return nil, status.Error(codes.Unavailable, "no rate limit configuration loaded")
	}
	items := make([]item, len(req.Descriptors))
	replacing := map[string]bool{}
	for i, d := range req.Descriptors {
		it := &items[i]
		it.call = -1
		if d == nil {
			return nil, invalid("descriptor %d is null", i)
		}
		hits, err := hitsAddend(req, d)
		if err != nil {
			return nil, err
		}
		it.hits, it.refund = hits, d.IsNegativeHits
		it.entries = make([]Entry, len(d.Entries))
		for j, e := range d.Entries {
			if e == nil {
				return nil, invalid("descriptor %d: entry %d is null", i, j)
			}
			it.entries[j] = Entry{e.Key, e.Value}
		}
		if d.Limit != nil {
			r, err := overrideRule(req.Domain, d)
			if err != nil {
				return nil, err
			}
			if cfg.HasDomain(req.Domain) {
				it.rule, it.stat = r, r.Stat
				it.values = make([]string, len(it.entries))
				for j, e := range it.entries {
					it.values[j] = e.Value
				}
			}
		} else if m, ok := cfg.Lookup(req.Domain, it.entries); ok {
			it.rule, it.values, it.stat = m.Rule, m.Values, m.Stat
		}
		if it.rule != nil {
			for _, r := range it.rule.Replaces {
				replacing[r] = true
			}
			if it.rule.Unlimited {
				it.unlimited, it.rule = true, nil
			}
		}
	}
	var calls []Call
	for i := range items {
		it := &items[i]
		if it.rule == nil {
			continue
		}
		if it.rule.Name != "" && replacing[it.rule.Name] {
			it.rule = nil
			continue
		}
		if it.rule.RequestsPerUnit == 0 {
			continue // a limit of 0: decided here, no state
		}
		it.call = len(calls)
		calls = append(calls, Call{Key: appendKey(nil, req.Domain, it.entries, it.values, it.rule), Rule: it.rule, N: it.hits, Refund: it.refund})
	}
	decisions := make([]Decision, len(calls))
	if len(calls) > 0 {
		if err := s.ks.Decide(ctx, calls, decisions); err != nil {
			return nil, err
		}
	}
	nowMs := s.ks.NowMs()
	resp := &pb.RateLimitResponse{Statuses: make([]*pb.RateLimitResponse_DescriptorStatus, len(items))}
	var closest *pb.RateLimitResponse_DescriptorStatus
	minRemaining := uint32(math.MaxUint32)
	failed, quotaFailed, quotaTotal := 0, 0, 0
	// passed are the descriptors not over the limit, whose rules' metadata
	// the dynamic metadata reports (unlimited ones are not among them, as
	// envoyproxy/ratelimit's shouldRateLimitWorker).
	var passed []int
	for i := range items {
		it := &items[i]
		if it.unlimited {
			resp.Statuses[i] = &pb.RateLimitResponse_DescriptorStatus{Code: pb.RateLimitResponse_OK, LimitRemaining: math.MaxUint32}
			continue
		}
		quota := s.opts.QuotaMode || (it.rule != nil && it.rule.QuotaMode)
		if quota {
			quotaTotal++
		}
		if it.rule == nil {
			resp.Statuses[i] = &pb.RateLimitResponse_DescriptorStatus{Code: pb.RateLimitResponse_OK}
			passed = append(passed, i)
			continue
		}
		var d Decision
		switch {
		case it.call >= 0:
			d = decisions[it.call]
		case it.refund:
			d = Decision{Allowed: true}
		default:
			d = Decision{Allowed: it.hits == 0, RetryAfterMs: -1}
		}
		if it.refund {
			// A refund is never over the limit (envoyproxy/ratelimit's
			// is_negative_hits): OK with what remains after it, counted
			// as total_negative_hits and nothing else.
			d.Allowed = true
			s.stats.countRefund(it.stat, it.hits)
		}
		st := &pb.RateLimitResponse_DescriptorStatus{
			Code:               pb.RateLimitResponse_OK,
			CurrentLimit:       it.rule.currentLimit(),
			LimitRemaining:     clampU32(d.Remaining),
			DurationUntilReset: durationpb.New(resetAfter(it.rule, d, nowMs)),
		}
		if !d.Allowed {
			st.Code = pb.RateLimitResponse_OVER_LIMIT
			st.LimitRemaining = 0
		}
		if !it.refund {
			s.stats.count(it.stat, it.rule, d, it.hits)
		}
		if s.opts.ResponseHeaders && st.LimitRemaining < minRemaining {
			closest, minRemaining = st, st.LimitRemaining
		}
		if st.Code == pb.RateLimitResponse_OVER_LIMIT {
			if it.rule.ShadowMode {
				st.Code = pb.RateLimitResponse_OK
			} else if quota {
				quotaFailed++
			} else {
				failed++
				closest, minRemaining = st, 0
			}
		}
		if st.Code == pb.RateLimitResponse_OK {
			passed = append(passed, i)
		}
		resp.Statuses[i] = st
	}
	resp.OverallCode = pb.RateLimitResponse_OK
	if failed > 0 || (quotaTotal > 0 && quotaTotal == quotaFailed) {
		resp.OverallCode = pb.RateLimitResponse_OVER_LIMIT
	}
	if s.opts.ResponseHeaders && closest != nil {
		resp.ResponseHeadersToAdd = []*core.HeaderValue{
			{Key: "RateLimit-Limit", Value: strconv.FormatUint(uint64(closest.CurrentLimit.RequestsPerUnit), 10)},
			{Key: "RateLimit-Remaining", Value: strconv.FormatUint(uint64(closest.LimitRemaining), 10)},
			{Key: "RateLimit-Reset", Value: strconv.FormatInt(closest.DurationUntilReset.GetSeconds(), 10)},
		}
	}
	// The global shadow mode overrides the overall code only, after the
	// headers were chosen (envoyproxy/ratelimit's shouldRateLimitWorker).
	if resp.OverallCode == pb.RateLimitResponse_OVER_LIMIT && s.opts.ShadowMode {
		resp.OverallCode = pb.RateLimitResponse_OK
		s.stats.countGlobalShadow()
	}
	if s.opts.DynamicMetadata {
		resp.DynamicMetadata = dynamicMetadata(req, items, passed)
	}
	return resp, nil
}

// dynamicMetadata is the response's dynamic_metadata as
// envoyproxy/ratelimit's ratelimitToMetadata builds it: "domain";
// "descriptors", each with "entries" ("key=value" strings), "limit" (the
// override in protobuf text) and "hitsAddend" when set; the request's
// "hitsAddend" when not 0; and "metadata", the metadata of the rules that
// passed merged in request order (the first value of a key wins, mappings
// merge key by key), when there is any. The rules' metadata is copied, not
// shared: merging never changes the configuration.
func dynamicMetadata(req *pb.RateLimitRequest, items []item, passed []int) *structpb.Struct {
	fields := map[string]*structpb.Value{"domain": structpb.NewStringValue(req.Domain)}
	descs := make([]*structpb.Value, 0, len(req.Descriptors))
	for _, d := range req.Descriptors {
		entries := make([]*structpb.Value, len(d.Entries))
		for i, e := range d.Entries {
			entries[i] = structpb.NewStringValue(e.GetKey() + "=" + e.GetValue())
		}
		f := map[string]*structpb.Value{"entries": structpb.NewListValue(&structpb.ListValue{Values: entries})}
		if d.Limit != nil {
			f["limit"] = structpb.NewStringValue(d.Limit.String())
		}
		if d.HitsAddend != nil {
			f["hitsAddend"] = structpb.NewNumberValue(float64(d.HitsAddend.Value))
		}
		descs = append(descs, structpb.NewStructValue(&structpb.Struct{Fields: f}))
	}
	fields["descriptors"] = structpb.NewListValue(&structpb.ListValue{Values: descs})
	if req.HitsAddend != 0 {
		fields["hitsAddend"] = structpb.NewNumberValue(float64(req.HitsAddend))
	}
	merged := &structpb.Struct{Fields: map[string]*structpb.Value{}}
	for _, i := range passed {
		if r := items[i].rule; r != nil && r.Metadata != nil {
			mergeMetadata(merged, r.Metadata)
		}
	}
	if len(merged.Fields) > 0 {
		fields["metadata"] = structpb.NewStructValue(merged)
	}
	return &structpb.Struct{Fields: fields}
}

// mergeMetadata adds src's fields to dest as envoyproxy/ratelimit's
// mergeMetadata: a key dest lacks is added (a copy), a mapping under a key
// both hold is merged into, anything else under a key dest holds stays.
func mergeMetadata(dest, src *structpb.Struct) {
	for k, v := range src.Fields {
		have, ok := dest.Fields[k]
		if !ok {
			dest.Fields[k] = proto.Clone(v).(*structpb.Value)
			continue
		}
		if ds, ss := have.GetStructValue(), v.GetStructValue(); ds != nil && ss != nil {
			mergeMetadata(ds, ss)
		}
	}
}

// hitsAddend is a descriptor's cost as envoyproxy/ratelimit reads it: its
// own hits_addend when set (0 looks without counting), else the request's,
// where 0 means 1. With is_negative_hits it is what the descriptor gives
// back.
func hitsAddend(req *pb.RateLimitRequest, d *rlv3.RateLimitDescriptor) (int64, error) {
	if d.HitsAddend != nil {
		if d.HitsAddend.Value > math.MaxInt64/2 {
			return 0, invalid("hits_addend %d is too large", d.HitsAddend.Value)
		}
		return int64(d.HitsAddend.Value), nil
	}
	return max(1, int64(req.HitsAddend)), nil
}

// overrideRule is the rule of a descriptor's own limit: a fixed window of
// its unit, counted with the configuration's rules of that unit.
func overrideRule(domain string, d *rlv3.RateLimitDescriptor) (*Rule, error) {
	u := d.Limit.Unit
	if u <= 0 || int(u) > len(overrideUnits) {
		return nil, invalid("descriptor limit override has unknown unit %d", int32(u))
	}
	r := &Rule{RequestsPerUnit: d.Limit.RequestsPerUnit, Unit: overrideUnits[u-1], Multiplier: 1, Algorithm: FixedWindow}
	if m := d.Limit.UnitMultiplier; m != nil {
		if m.Value == 0 || r.WindowSeconds()*int64(m.Value) > maxWindowSeconds {
			return nil, invalid("descriptor limit override has unit_multiplier %d", m.Value)
		}
		r.Multiplier = m.Value
	}
	keys := make([]string, len(d.Entries))
	for i, e := range d.Entries {
		keys[i] = e.GetKey()
	}
	// The metric key names the descriptor's keys, not its values: overrides
	// come from requests, and values would make series without bound.
	r.Stat = domain + ".override." + strings.Join(keys, ".")
	r.limit = &pb.RateLimitResponse_RateLimit{RequestsPerUnit: r.RequestsPerUnit, Unit: r.Unit}
	if r.Multiplier > 1 {
		r.limit.UnitMultiplier = wrapU32(r.Multiplier)
	}
	return r, nil
}

// overrideUnits maps envoy.type.v3.RateLimitUnit (SECOND = 1 ... YEAR = 6)
// to the reply's units.
var overrideUnits = []pb.RateLimitResponse_RateLimit_Unit{
	pb.RateLimitResponse_RateLimit_SECOND, pb.RateLimitResponse_RateLimit_MINUTE,
	pb.RateLimitResponse_RateLimit_HOUR, pb.RateLimitResponse_RateLimit_DAY,
	pb.RateLimitResponse_RateLimit_MONTH, pb.RateLimitResponse_RateLimit_YEAR,
}

// resetAfter is duration_until_reset: for a fixed window, the time to the
// window's end in whole seconds as envoyproxy/ratelimit computes it; for
// the other algorithms, when admitted the time until the limiter is fresh
// again, and when denied the time until the request would be admitted.
func resetAfter(r *Rule, d Decision, nowMs int64) time.Duration {
	w := r.WindowSeconds()
	if r.Algorithm == FixedWindow || r.RequestsPerUnit == 0 {
		return time.Duration(w-(nowMs/1000)%w) * time.Second
	}
	ms := d.ResetAfterMs
	if !d.Allowed {
		ms = d.RetryAfterMs
		if ms < 0 {
			return time.Duration(w) * time.Second
		}
	}
	return time.Duration((ms+999)/1000) * time.Second
}

func clampU32(n int64) uint32 {
	if n < 0 {
		return 0
	}
	if n > math.MaxUint32 {
		return math.MaxUint32
	}
	return uint32(n)
}

func wrapU32(n uint32) *wrapperspb.UInt32Value { return wrapperspb.UInt32(n) }

// errorf is a status error for what the keyspace answered.
func errorf(c codes.Code, format string, args ...any) error {
	return status.Error(c, fmt.Sprintf(format, args...))
}
