package rls

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/status"
)

// maxStatKeys bounds the metric series per counter: the configuration's
// rules are few, but detailed_metric and value_to_metric name request
// values; past the bound they are counted under key="_other".
const maxStatKeys = 10000

// counters are one metric key's counts, as envoyproxy/ratelimit's stats.
type counters struct {
	total, over, near, within, shadow atomic.Uint64
	negative                          atomic.Uint64 // refunded hits (is_negative_hits)
}

// Stats are the service's metrics, a prometheus.Collector.
type Stats struct {
	mu   sync.RWMutex
	keys map[string]*counters

	globalShadow atomic.Uint64 // requests the global shadow mode answered OK

	latency  prometheus.Histogram
	requests *prometheus.CounterVec // by gRPC code
	loads    *prometheus.CounterVec // configuration loads by result
}

// NewStats returns empty metrics.
func NewStats() *Stats {
	return &Stats{
		keys: map[string]*counters{},
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "rlserver_rls_decision_seconds",
			Help:    "Time to answer a ShouldRateLimit request (all its descriptors).",
			Buckets: []float64{25e-6, 50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 100e-3},
		}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rlserver_rls_requests_total",
			Help: "ShouldRateLimit requests answered, by gRPC status code.",
		}, []string{"code"}),
		loads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rlserver_rls_config_loads_total",
			Help: "Configuration loads (start, SIGHUP, file change), by result.",
		}, []string{"result"}),
	}
}

func (s *Stats) observe(d time.Duration, err error) {
	s.latency.Observe(d.Seconds())
	s.requests.WithLabelValues(status.Code(err).String()).Inc()
}

// ConfigLoaded counts a configuration load.
func (s *Stats) ConfigLoaded(ok bool) {
	if ok {
		s.loads.WithLabelValues("success").Inc()
	} else {
		s.loads.WithLabelValues("error").Inc()
	}
}

func (s *Stats) counters(key string) *counters {
	s.mu.RLock()
	c := s.keys[key]
	s.mu.RUnlock()
	if c != nil {
		return c
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c = s.keys[key]; c != nil {
		return c
	}
	if len(s.keys) >= maxStatKeys {
		key = "_other"
		if c = s.keys[key]; c != nil {
			return c
		}
	}
	c = &counters{}
	s.keys[key] = c
	return c
}

// count adds a decision of hits to key's counters as envoyproxy/ratelimit
// counts them: hits past the limit are over_limit (or shadow_mode), those
// past 80% of it near_limit, and admitted ones within_limit.
func (s *Stats) count(key string, r *Rule, d Decision, hits int64) {
	c := s.counters(key)
	h := uint64(hits)
	c.total.Add(h)
	limit := uint64(r.Capacity())
	near := uint64(float64(limit) * nearLimitRatio)
	used := limit - min(limit, uint64(max(0, d.Remaining)))
	if d.Allowed {
		after, before := used, used-min(used, h)
		if after > near {
			if before >= near {
				c.near.Add(h)
			} else {
				c.near.Add(after - near)
			}
		}
		c.within.Add(h)
		return
	}
	before, after := used, used+h
	over := h
	if before < limit {
		over = after - limit
		c.near.Add(limit - max(near, before))
	}
	c.over.Add(over)
	if r.ShadowMode {
		c.shadow.Add(over)
	}
}

// countGlobalShadow counts a request the global shadow mode answered OK
// (envoyproxy/ratelimit's service-level global_shadow_mode counter).
func (s *Stats) countGlobalShadow() { s.globalShadow.Add(1) }

// GlobalShadowMode returns the requests the global shadow mode answered
// OK, for tests.
func (s *Stats) GlobalShadowMode() uint64 { return s.globalShadow.Load() }

// countRefund adds a refund of hits (is_negative_hits) to key's counters:
// total_negative_hits only, as envoyproxy/ratelimit counts it.
func (s *Stats) countRefund(key string, hits int64) {
	s.counters(key).negative.Add(uint64(hits))
}

var (
	dNegative = prometheus.NewDesc("rlserver_rls_total_negative_hits", "Hits given back to a rule (hits_addend of descriptors with is_negative_hits).", []string{"key"}, nil)
	dTotal    = prometheus.NewDesc("rlserver_rls_total_hits", "Hits asked of a rule (the sum of hits_addend).", []string{"key"}, nil)
	dOver     = prometheus.NewDesc("rlserver_rls_over_limit", "Hits over the rule's limit.", []string{"key"}, nil)
	dNear     = prometheus.NewDesc("rlserver_rls_near_limit", "Hits past 80% of the rule's limit.", []string{"key"}, nil)
	dWithin   = prometheus.NewDesc("rlserver_rls_within_limit", "Hits within the rule's limit.", []string{"key"}, nil)
	dShadow   = prometheus.NewDesc("rlserver_rls_shadow_mode", "Hits over the limit of a shadow_mode rule (answered OK).", []string{"key"}, nil)
	dGlobal   = prometheus.NewDesc("rlserver_rls_global_shadow_mode", "Requests over the limit answered OK by the global shadow mode (--rls-shadow-mode).", nil, nil)
)

// Describe implements prometheus.Collector.
func (s *Stats) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{dTotal, dOver, dNear, dWithin, dShadow, dNegative, dGlobal} {
		ch <- d
	}
	s.latency.Describe(ch)
	s.requests.Describe(ch)
	s.loads.Describe(ch)
}

// Collect implements prometheus.Collector.
func (s *Stats) Collect(ch chan<- prometheus.Metric) {
	s.mu.RLock()
	for k, c := range s.keys {
		for _, m := range []struct {
			d *prometheus.Desc
			v *atomic.Uint64
		}{{dTotal, &c.total}, {dOver, &c.over}, {dNear, &c.near}, {dWithin, &c.within}, {dShadow, &c.shadow}, {dNegative, &c.negative}} {
			ch <- prometheus.MustNewConstMetric(m.d, prometheus.CounterValue, float64(m.v.Load()), k)
		}
	}
	s.mu.RUnlock()
	ch <- prometheus.MustNewConstMetric(dGlobal, prometheus.CounterValue, float64(s.globalShadow.Load()))
	s.latency.Collect(ch)
	s.requests.Collect(ch)
	s.loads.Collect(ch)
}

// Snapshot returns key's counts (total, over, near, within, shadow), for
// tests.
func (s *Stats) Snapshot(key string) [5]uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	c := s.keys[key]
	if c == nil {
		return [5]uint64{}
	}
	return [5]uint64{c.total.Load(), c.over.Load(), c.near.Load(), c.within.Load(), c.shadow.Load()}
}

// NegativeHits returns key's total_negative_hits, for tests.
func (s *Stats) NegativeHits(key string) uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if c := s.keys[key]; c != nil {
		return c.negative.Load()
	}
	return 0
}
