// Package observe is the server's command statistics, slow log and
// latency monitor: what INFO commandstats, latencystats and errorstats,
// SLOWLOG, LATENCY and the Prometheus decision counters read.
//
// Counting costs the hot path a few plain increments per command: a
// connection adds up its batch of pipelined commands in a Batch and
// publishes them with a few atomic adds once per batch, into Counters that
// only its event loop's goroutine writes (shared by the loop's
// connections), or in goroutine mode only its own, so nothing is
// contended. A reader (Observer.Snapshot) moves what was published since
// the last read into the totals (the writer flags it), so that a read
// costs what changed, not what every connection ever counted.
//
// The clock is read twice per batch, not per command (BenchmarkBatch in
// package command shows what a reading costs a pipelined decision): at
// the batch's first command (Batch.Begin) and at its end (Batch.End).
// Commands in the @slow category (KEYS, SCAN, INFO, CONFIG, SAVE, ...) are
// timed one by one; the others, O(1) by design, share the rest of the
// batch's time equally. While slowlog-log-slower-than is 0 every command
// is timed alone, as Redis tests expect of a slow log that logs
// everything.
package observe

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlserver/rlserver/clock"
)

// Config is the slow log's and latency monitor's configuration, as
// Redis's parameters of the same names (CONFIG SET changes them).
type Config struct {
	// SlowerThan logs commands that took at least this many µs; 0 logs
	// every command, negative none. Default 10000.
	SlowerThan int64
	// MaxLen is how many entries the slow log keeps. Default 128.
	MaxLen int64
	// LatencyThreshold (ms) records LATENCY events of commands that took
	// at least this long; 0 (the default) records none.
	LatencyThreshold int64
}

// Observer is a server's statistics: the live and total command
// statistics, the key prefixes decisions are counted by, the slow log and
// the latency monitor. Its methods are safe to call from any goroutine.
type Observer struct {
	clock *clock.Clock
	cmds  []*Cmd // by ID

	totalsMu sync.Mutex
	totals   *Counters              // closed connections', and what live ones published up to the last Snapshot
	loops    []*Counters            // each event loop's connections' statistics (CountersFor)
	own      map[*Counters]struct{} // goroutine-mode connections' own, until they close

	prefixMu sync.Mutex
	prefixes atomic.Pointer[prefixTable]

	slowlog slowLog
	latency latencyMonitor
	// slowAll: slowlog-log-slower-than is 0, so every command is timed
	// alone.
	slowAll atomic.Bool
	// percentiles are latency-tracking-info-percentiles.
	percentiles atomic.Pointer[[]float64]
	tracking    atomic.Bool // latency-tracking

	peakMem atomic.Int64 // used_memory_peak, as seen by INFO and /metrics

	opsMu      sync.Mutex
	opsSamples [16]opsSample // instantaneous_ops_per_sec's (see OpsPerSec)
	opsNext    int
}

type opsSample struct {
	at    time.Time
	total int64
}

// New returns the statistics of the commands cmds (cmds[i].ID is i),
// timed by clock. A nil cfg means Redis's defaults.
func New(cfg *Config, cmds []*Cmd, clock *clock.Clock) *Observer {
	if cfg == nil {
		cfg = &Config{SlowerThan: 10000, MaxLen: 128}
	}
	o := &Observer{clock: clock, cmds: cmds, totals: newCounters(len(cmds))}
	o.slowlog.threshold.Store(cfg.SlowerThan)
	o.slowAll.Store(cfg.SlowerThan == 0)
	o.slowlog.maxLen.Store(cfg.MaxLen)
	o.latency.threshold.Store(cfg.LatencyThreshold)
	p := []float64{50, 99, 99.9}
	o.percentiles.Store(&p)
	o.tracking.Store(true)
	return o
}

// observed reports whether a duration (ns) goes to the slow log or the
// latency monitor.
func (o *Observer) observed(d int64) bool {
	th := o.slowlog.threshold.Load()
	lat := o.latency.threshold.Load()
	return th >= 0 && d/1000 >= th || lat > 0 && d/1e6 >= lat
}

// CountersFor returns the statistics a new connection adds to: those of
// event loop loop, shared by the connections it serves (one goroutine
// publishes them, and a read costs the same however many connections
// there are), or, in goroutine mode (loop < 0), its own.
func (o *Observer) CountersFor(loop int) *Counters {
	o.totalsMu.Lock()
	defer o.totalsMu.Unlock()
	if loop < 0 {
		st := newCounters(len(o.cmds))
		if o.own == nil {
			o.own = make(map[*Counters]struct{})
		}
		o.own[st] = struct{}{}
		return st
	}
	for len(o.loops) <= loop {
		st := newCounters(len(o.cmds))
		st.shared = true
		o.loops = append(o.loops, st)
	}
	return o.loops[loop]
}

// eachLive calls fn with every live connection's statistics: the event
// loops' and the goroutine-mode connections'. The caller holds totalsMu.
func (o *Observer) eachLive(fn func(*Counters)) {
	for _, st := range o.loops {
		fn(st)
	}
	for st := range o.own {
		fn(st)
	}
}

// retire folds a closing connection's statistics into the totals, unless
// it shares its loop's.
func (o *Observer) retire(st *Counters) {
	if st.shared {
		return
	}
	o.totalsMu.Lock()
	o.totals.fold(st)
	delete(o.own, st)
	o.totalsMu.Unlock()
}

// Reset is CONFIG RESETSTAT's part: every connection's INFO statistics
// and the closed connections' (the caller publishes its running batch
// first), and the samples of OpsPerSec.
func (o *Observer) Reset() {
	o.totalsMu.Lock()
	o.eachLive((*Counters).reset)
	o.totals.reset()
	o.totalsMu.Unlock()
	o.opsMu.Lock()
	o.opsSamples, o.opsNext = [16]opsSample{}, 0
	o.opsMu.Unlock()
}

// OpsPerSec is INFO's instantaneous_ops_per_sec for the command total
// now: the commands per second since the oldest of the last 16 samples
// (taken when INFO or /metrics read the total, at least 100 ms apart), as
// Redis's average of its last 16 samples.
func (o *Observer) OpsPerSec(total int64) int64 {
	now := time.Now()
	o.opsMu.Lock()
	defer o.opsMu.Unlock()
	last := o.opsSamples[(o.opsNext+len(o.opsSamples)-1)%len(o.opsSamples)]
	if last.at.IsZero() || now.Sub(last.at) >= 100*time.Millisecond {
		o.opsSamples[o.opsNext] = opsSample{at: now, total: total}
		o.opsNext = (o.opsNext + 1) % len(o.opsSamples)
	}
	oldest := o.opsSamples[o.opsNext]
	if oldest.at.IsZero() {
		oldest = o.opsSamples[0]
	}
	dt := now.Sub(oldest.at).Seconds()
	if oldest.at.IsZero() || dt <= 0 || total < oldest.total {
		return 0
	}
	return int64(float64(total-oldest.total) / dt)
}

// NotePeak records used (bytes) as a candidate peak of the memory in use
// and returns the peak.
func (o *Observer) NotePeak(used int64) int64 {
	for {
		p := o.peakMem.Load()
		if used <= p {
			return p
		}
		if o.peakMem.CompareAndSwap(p, used) {
			return used
		}
	}
}

// The CONFIG parameters of the statistics, with Redis's names in the
// comments.

// SlowlogThreshold is slowlog-log-slower-than (µs).
func (o *Observer) SlowlogThreshold() int64 { return o.slowlog.threshold.Load() }

// SetSlowlogThreshold sets slowlog-log-slower-than (µs).
func (o *Observer) SetSlowlogThreshold(n int64) {
	o.slowlog.threshold.Store(n)
	o.slowAll.Store(n == 0)
}

// SlowlogMaxLen is slowlog-max-len.
func (o *Observer) SlowlogMaxLen() int64 { return o.slowlog.maxLen.Load() }

// SetSlowlogMaxLen sets slowlog-max-len.
func (o *Observer) SetSlowlogMaxLen(n int64) { o.slowlog.maxLen.Store(n) }

// LatencyThreshold is latency-monitor-threshold (ms).
func (o *Observer) LatencyThreshold() int64 { return o.latency.threshold.Load() }

// SetLatencyThreshold sets latency-monitor-threshold (ms).
func (o *Observer) SetLatencyThreshold(n int64) { o.latency.threshold.Store(n) }

// Tracking is latency-tracking: whether INFO latencystats shows anything.
func (o *Observer) Tracking() bool { return o.tracking.Load() }

// SetTracking sets latency-tracking.
func (o *Observer) SetTracking(on bool) { o.tracking.Store(on) }

// Percentiles are latency-tracking-info-percentiles.
func (o *Observer) Percentiles() []float64 { return *o.percentiles.Load() }

// SetPercentiles sets latency-tracking-info-percentiles.
func (o *Observer) SetPercentiles(ps []float64) { o.percentiles.Store(&ps) }
