package command

import (
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlserver/rlserver/persist"
	"github.com/rlserver/rlserver/resp"
	"github.com/rlserver/rlserver/shard"
)

// observability is the handler's side of the statistics (see stats.go):
// the live and total command statistics, the key prefixes decisions are
// counted by, the slow log and the latency monitor.
type observability struct {
	totalsMu sync.Mutex
	totals   *connStats              // closed connections', and what live ones published up to the last Snapshot
	loops    []*connStats            // each event loop's connections' statistics (statsFor)
	own      map[*connStats]struct{} // goroutine-mode connections' own, until they close

	prefixMu sync.Mutex
	prefixes atomic.Pointer[prefixTable]

	slowlog slowLog
	latency latencyMonitor
	// slowAll: slowlog-log-slower-than is 0, so every command is timed
	// alone (see stats.go).
	slowAll atomic.Bool
	// percentiles are latency-tracking-info-percentiles.
	percentiles atomic.Pointer[[]float64]
	tracking    atomic.Bool // latency-tracking

	peakMem atomic.Int64 // used_memory_peak, as seen by INFO and /metrics

	opsMu      sync.Mutex
	opsSamples [16]opsSample // instantaneous_ops_per_sec's (see opsPerSec)
	opsNext    int
}

type opsSample struct {
	at    time.Time
	total int64
}

func (o *observability) init(cfg *SlowlogConfig, ncmds int) {
	o.totals = newConnStats(ncmds)
	o.slowlog.threshold.Store(cfg.SlowerThan)
	o.slowAll.Store(cfg.SlowerThan == 0)
	o.slowlog.maxLen.Store(cfg.MaxLen)
	o.latency.threshold.Store(cfg.LatencyThreshold)
	p := []float64{50, 99, 99.9}
	o.percentiles.Store(&p)
	o.tracking.Store(true)
}

// observed reports whether a duration (ns) goes to the slow log or the
// latency monitor.
func (o *observability) observed(d int64) bool {
	th := o.slowlog.threshold.Load()
	lat := o.latency.threshold.Load()
	return th >= 0 && d/1000 >= th || lat > 0 && d/1e6 >= lat
}

// statsFor returns the statistics a new connection adds to: those of
// event loop loop, shared by the connections it serves (one goroutine
// publishes them, and a read costs the same however many connections
// there are), or, in goroutine mode (loop < 0), its own.
func (o *observability) statsFor(loop, ncmds int) *connStats {
	o.totalsMu.Lock()
	defer o.totalsMu.Unlock()
	if loop < 0 {
		st := newConnStats(ncmds)
		if o.own == nil {
			o.own = make(map[*connStats]struct{})
		}
		o.own[st] = struct{}{}
		return st
	}
	for len(o.loops) <= loop {
		st := newConnStats(ncmds)
		st.shared = true
		o.loops = append(o.loops, st)
	}
	return o.loops[loop]
}

// eachLive calls fn with every live connection's statistics: the event
// loops' and the goroutine-mode connections'. The caller holds totalsMu.
func (o *observability) eachLive(fn func(*connStats)) {
	for _, st := range o.loops {
		fn(st)
	}
	for st := range o.own {
		fn(st)
	}
}

// retire folds a closing connection's statistics into the totals, unless
// it shares its loop's.
func (o *observability) retire(st *connStats) {
	if st.shared {
		return
	}
	o.totalsMu.Lock()
	o.totals.fold(st)
	delete(o.own, st)
	o.totalsMu.Unlock()
}

// CmdStats are one command's statistics, summed over every connection.
type CmdStats struct {
	Name                    string // the full name, "config|get" for a subcommand
	Decides                 bool   // a limiter command: Allowed and Denied count its decisions
	Calls, Failed, Rejected int64
	Duration                time.Duration // total time of the calls
	Allowed, Denied         int64         // decisions (limiter commands)
	hist                    [histBuckets]uint64
}

// Snapshot is the statistics of every connection, open or closed, merged.
type Snapshot struct {
	Commands []CmdStats       // commands that ran or were rejected, by table order
	Prefixes []PrefixStats    // decisions by key prefix, "other" last
	Errors   map[string]int64 // error replies by code
}

// PrefixStats are the decisions on keys of one prefix.
type PrefixStats struct {
	Prefix          string
	Allowed, Denied int64
}

// LatencyBuckets returns the command's latency histogram as cumulative
// counts of calls that took at most each upper bound (each a power of two
// ns, from 256 ns to 2^30 ns), the last one +Inf (all calls).
func (s *CmdStats) LatencyBuckets() (upper []time.Duration, cumulative []uint64) {
	var n uint64
	j := 0
	for k := 8; k <= 30; k++ {
		// Buckets below 2^k ns: index 0 ([0,64)) and every whole octave below k.
		limit := 1 + (k-6)*4
		for ; j < limit && j < histBuckets; j++ {
			n += s.hist[j]
		}
		upper = append(upper, time.Duration(1)<<k)
		cumulative = append(cumulative, n)
	}
	for ; j < histBuckets; j++ {
		n += s.hist[j]
	}
	return upper, append(cumulative, n)
}

// percentile returns the duration (ns) under which p percent of the calls
// fell: the upper bound of the bucket holding that call.
func (s *CmdStats) percentile(p float64) int64 {
	var total uint64
	for _, v := range s.hist {
		total += v
	}
	if total == 0 {
		return 0
	}
	target := uint64(p / 100 * float64(total))
	if float64(target) < p/100*float64(total) || target == 0 {
		target++
	}
	var n uint64
	for i, v := range s.hist {
		n += v
		if n >= target {
			return histUpper(i)
		}
	}
	return histUpper(histBuckets - 1)
}

func (s *CmdStats) samples() uint64 {
	var n uint64
	for _, v := range s.hist {
		n += v
	}
	return n
}

// Snapshot returns the statistics of every connection, closed or not:
// it moves what live connections published since the last call into the
// totals and reads those. Safe to call from any goroutine.
func (h *Handler) Snapshot() Snapshot { return h.snapshotOf(true) }

// snapshotOf is Snapshot; without commands it has the error counts only
// (INFO's default sections), which costs a small part of the rest.
func (h *Handler) snapshotOf(commands bool) Snapshot {
	// Under the lock, a closing goroutine-mode connection's statistics are
	// either its own (in own) or in the totals: never twice, never not.
	h.obs.totalsMu.Lock()
	defer h.obs.totalsMu.Unlock()
	h.obs.eachLive(func(st *connStats) {
		if st.dirty.Swap(false) {
			h.obs.totals.fold(st)
		}
	})
	st := h.obs.totals
	errs := map[string]int64{}
	st.errMu.Lock()
	for code, n := range st.errs {
		errs[code] = *n
	}
	st.errMu.Unlock()
	snap := Snapshot{Errors: errs}
	if !commands {
		return snap
	}
	// In place: a CmdStats carries its latency histogram.
	snap.Commands = make([]CmdStats, 0, 64)
	for i, cmd := range h.table.all {
		cc := st.cmds[i].Load()
		if cc == nil && !cmd.decides {
			continue
		}
		snap.Commands = append(snap.Commands, CmdStats{Name: cmd.Name, Decides: cmd.decides}) // every limiter's decisions, even none
		if cc == nil {
			continue
		}
		cs := &snap.Commands[len(snap.Commands)-1]
		cs.Calls = cc.calls.Load()
		cs.Failed = cc.failed.Load()
		cs.Rejected = cc.rejected.Load()
		cs.Duration = time.Duration(cc.ns.Load())
		cs.Allowed = cc.allowed.Load()
		cs.Denied = cc.denied.Load()
		for j := range cc.hist {
			cs.hist[j] = cc.hist[j].Load()
		}
	}
	var names []string
	if t := h.obs.prefixes.Load(); t != nil {
		names = t.names
	}
	p := st.prefix.Load()
	for i, name := range names {
		ps := PrefixStats{Prefix: name}
		if p != nil {
			ps.Allowed, ps.Denied = p[i][0].Load(), p[i][1].Load()
		}
		snap.Prefixes = append(snap.Prefixes, ps)
	}
	other := PrefixStats{Prefix: "other"}
	if p != nil {
		other.Allowed, other.Denied = p[otherPrefix][0].Load(), p[otherPrefix][1].Load()
	}
	snap.Prefixes = append(snap.Prefixes, other)
	return snap
}

// snapshot is Snapshot as a command sees it: its own batch so far
// included.
func (c *Ctx) snapshot() Snapshot { return c.snapshotOf(true) }

// snapshotOf is snapshot, with the commands' statistics or without (see
// Handler.snapshotOf).
func (c *Ctx) snapshotOf(commands bool) Snapshot {
	c.publish(c.h.clock.Mono())
	return c.h.snapshotOf(commands)
}

// resetStats is CONFIG RESETSTAT's part: every connection's INFO
// statistics, the closed connections' and the running batch's.
func (c *Ctx) resetStats() {
	c.publish(c.h.clock.Mono())
	o := &c.h.obs
	o.totalsMu.Lock()
	o.eachLive((*connStats).reset)
	o.totals.reset()
	o.totalsMu.Unlock()
	c.h.obs.opsMu.Lock()
	c.h.obs.opsSamples, c.h.obs.opsNext = [16]opsSample{}, 0
	c.h.obs.opsMu.Unlock()
}

// opsPerSec is INFO's instantaneous_ops_per_sec: the commands per second
// since the oldest of the last 16 samples (taken when INFO or /metrics
// read the total, at least 100 ms apart), as Redis's average of its last
// 16 samples.
func (o *observability) opsPerSec(total int64) int64 {
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

// sortedErrors returns the error codes in order, for INFO errorstats.
func sortedErrors(m map[string]int64) []string {
	codes := make([]string, 0, len(m))
	for k := range m {
		codes = append(codes, k)
	}
	sort.Strings(codes)
	return codes
}

// The slow log's and latency tracking's CONFIG parameters, with Redis's
// names and ranges.
func init() {
	o := func(c *Ctx) *observability { return &c.h.obs }
	configParams["slowlog-log-slower-than"] = rangedParam(func(c *Ctx) int64 { return o(c).slowlog.threshold.Load() },
		resp.ParseInt, -1, 1<<63-1, func(c *Ctx, n int64) {
			o(c).slowlog.threshold.Store(n)
			o(c).slowAll.Store(n == 0)
		})
	configParams["slowlog-max-len"] = rangedParam(func(c *Ctx) int64 { return o(c).slowlog.maxLen.Load() },
		resp.ParseInt, 0, 1<<63-1, func(c *Ctx, n int64) { o(c).slowlog.maxLen.Store(n) })
	configParams["latency-monitor-threshold"] = rangedParam(func(c *Ctx) int64 { return o(c).latency.threshold.Load() },
		resp.ParseInt, 0, 1<<63-1, func(c *Ctx, n int64) { o(c).latency.threshold.Store(n) })
	configParams["latency-tracking"] = configParam{
		get:   func(c *Ctx) string { return yesNo(o(c).tracking.Load()) },
		parse: parseYesNo,
		set:   func(c *Ctx, n int64, _ []byte) { o(c).tracking.Store(n == 1) },
		bad:   errConfigYesNo,
	}
	configParams["latency-tracking-info-percentiles"] = configParam{
		get: func(c *Ctx) string {
			var s []string
			for _, p := range *o(c).percentiles.Load() {
				s = append(s, strconv.FormatFloat(p, 'f', -1, 64))
			}
			return strings.Join(s, " ")
		},
		parse: func(v []byte) (int64, bool) { _, ok := parsePercentiles(v); return 0, ok },
		set: func(c *Ctx, _ int64, v []byte) {
			ps, _ := parsePercentiles(v)
			o(c).percentiles.Store(&ps)
		},
	}
}

// parsePercentiles parses latency-tracking-info-percentiles: numbers from
// 0 to 100 separated by spaces (none is allowed).
func parsePercentiles(v []byte) ([]float64, bool) {
	ps := []float64{}
	for _, f := range strings.Fields(string(v)) {
		p, err := strconv.ParseFloat(f, 64)
		if err != nil || p < 0 || p > 100 {
			return nil, false
		}
		ps = append(ps, p)
	}
	return ps, true
}

// Stats are the server's own statistics: its connections (resp.Server),
// commands and keyspace. INFO's clients, memory, stats and keyspace
// sections render the same typed sources; the metrics render these.
type Stats struct {
	Clients             int // connected
	MaxClients          int64
	ConnectionsReceived int64
	RejectedConnections int64
	CommandsProcessed   int64
	OpsPerSec           int64 // INFO instantaneous_ops_per_sec
	Keys                int64 // DBSIZE's count
	UsedMemory          int64 // the Go heap's live objects (INFO used_memory)
	MaxMemory           int64 // --maxmemory, 0: none
	Keyspace            shard.Stats
}

// Stats returns the server's statistics now. Like INFO, it notes the
// heap's size as a candidate peak and samples the command total for
// OpsPerSec.
func (h *Handler) Stats(srv *resp.Server) Stats {
	ss := srv.Stats()
	used, _ := h.heapBytes()
	h.obs.notePeak(used)
	total := h.totalCmds.Load()
	return Stats{
		Clients:             srv.NumConns(),
		MaxClients:          srv.MaxClients(),
		ConnectionsReceived: ss.ConnectionsReceived,
		RejectedConnections: ss.RejectedConnections,
		CommandsProcessed:   total,
		OpsPerSec:           h.obs.opsPerSec(total),
		Keys:                int64(h.store.View().Len()),
		UsedMemory:          used,
		MaxMemory:           h.maxMemory.Load(),
		Keyspace:            h.store.Stats(),
	}
}

// PersistenceStats returns the flusher's statistics, and false when the
// server runs in memory only.
func (h *Handler) PersistenceStats() (persist.Stats, bool) {
	if h.cfg.Persistence == nil {
		return persist.Stats{}, false
	}
	return h.cfg.Persistence.Stats(), true
}

// SlowlogLen returns the number of entries in the slow log.
func (h *Handler) SlowlogLen() int {
	h.obs.slowlog.mu.Lock()
	defer h.obs.slowlog.mu.Unlock()
	return len(h.obs.slowlog.entries)
}

// Ready reports whether the node serves what it should (/readyz): in
// cluster mode once it knows a topology, and on a replica once its link
// to the primary is up and synchronised; why not when it does not.
func (h *Handler) Ready() (bool, string) {
	st := h.cfg.Cluster
	if st == nil {
		return true, ""
	}
	v := st.View()
	if v == nil || v.Topo == nil || v.Topo.Version == 0 {
		return false, "no cluster topology yet"
	}
	if st.Fenced() {
		return false, "fenced: its etcd lease is not renewed, or the topology does not name this incarnation yet"
	}
	if v.Self.Replica {
		link := "connect"
		if r := h.cfg.Replication; r != nil {
			link = r.Link()
		}
		if link != "connected" {
			return false, "replica not caught up with its primary (link: " + link + ")"
		}
	}
	return true, ""
}
