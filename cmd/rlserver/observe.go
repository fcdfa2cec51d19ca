package main

import (
	"flag"
	"fmt"

	"github.com/rlserver/rlserver/command"
	"github.com/rlserver/rlserver/metrics"
)

// obsFlags are the observability flags: the slow log, the latency
// monitor and the Prometheus endpoint.
type obsFlags struct {
	slowerThan       int64
	slowlogMaxLen    int64
	latencyThreshold int64
	metricsAddr      string
}

func (f *obsFlags) register(fs *flag.FlagSet) {
	fs.Int64Var(&f.slowerThan, "slowlog-log-slower-than", 10000, "SLOWLOG keeps commands that took at least this many µs (0: every command, -1: none); CONFIG SET works")
	fs.Int64Var(&f.slowlogMaxLen, "slowlog-max-len", 128, "entries SLOWLOG keeps; CONFIG SET works")
	fs.Int64Var(&f.latencyThreshold, "latency-monitor-threshold", 0, "LATENCY records events of commands that took at least this many ms (0: off); CONFIG SET works")
	fs.StringVar(&f.metricsAddr, "metrics-addr", "", "host:port serving Prometheus metrics at /metrics, and /healthz and /readyz (off by default)")
}

func (f *obsFlags) check() error {
	if f.slowerThan < -1 {
		return fmt.Errorf("--slowlog-log-slower-than must be -1 or more")
	}
	if f.slowlogMaxLen < 0 {
		return fmt.Errorf("--slowlog-max-len must be 0 or more")
	}
	if f.latencyThreshold < 0 {
		return fmt.Errorf("--latency-monitor-threshold must be 0 or more")
	}
	return nil
}

func (f *obsFlags) slowlog() *command.SlowlogConfig {
	return &command.SlowlogConfig{SlowerThan: f.slowerThan, MaxLen: f.slowlogMaxLen, LatencyThreshold: f.latencyThreshold}
}

// startMetrics serves --metrics-addr, if set (nil otherwise): before the
// state is restored, so that /healthz answers and /readyz says why not.
func (f *obsFlags) startMetrics() (*metrics.Server, error) {
	if f.metricsAddr == "" {
		return nil, nil
	}
	m, err := metrics.Listen(f.metricsAddr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr: %v", err)
	}
	return m, nil
}
