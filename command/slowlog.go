package command

import (
	"sort"
	"strconv"
	"strings"

	"github.com/rlserver/rlserver/observe"
	"github.com/rlserver/rlserver/resp"
)

// SLOWLOG and LATENCY: handlers over package observe's slow log, latency
// monitor and command statistics.

// SLOWLOG GET [count]: the newest entries first (count 10 by default, -1
// all).
func cmdSlowlogGet(c *Ctx, args [][]byte) {
	count := int64(10)
	if len(args) == 3 {
		n, ok := resp.ParseInt(args[2])
		if !ok || n < -1 {
			c.err(errSlowlogCount)
			return
		}
		count = n
	}
	entries := c.h.obs.SlowlogEntries(count)
	c.W.Array(len(entries))
	for _, e := range entries {
		c.W.Array(6)
		c.W.Int(e.ID)
		c.W.Int(e.At)
		c.W.Int(e.Us)
		c.W.Array(len(e.Args))
		for _, a := range e.Args {
			c.W.BulkString(a)
		}
		c.W.BulkString(e.Addr)
		c.W.BulkString(e.Name)
	}
}

func cmdSlowlogLen(c *Ctx, args [][]byte) { c.W.Int(int64(c.h.obs.SlowlogLen())) }

func cmdSlowlogReset(c *Ctx, args [][]byte) {
	c.h.obs.SlowlogReset()
	c.W.OK()
}

// LATENCY LATEST: [event, Unix s of the latest spike, its ms, the largest
// ms] per event.
func cmdLatencyLatest(c *Ctx, args [][]byte) {
	events := c.h.obs.LatencyLatest()
	c.W.Array(len(events))
	for _, ev := range events {
		c.W.Array(4)
		c.W.BulkString(ev.Event)
		c.W.Int(ev.Latest.At)
		c.W.Int(ev.Latest.Ms)
		c.W.Int(ev.Max)
	}
}

// LATENCY HISTORY event: [Unix s, ms] for each sample, oldest first.
func cmdLatencyHistory(c *Ctx, args [][]byte) {
	samples := c.h.obs.LatencyHistory(strings.ToLower(string(args[2])))
	c.W.Array(len(samples))
	for _, s := range samples {
		c.W.Array(2)
		c.W.Int(s.At)
		c.W.Int(s.Ms)
	}
}

// LATENCY RESET [event ...]: the number of events reset.
func cmdLatencyReset(c *Ctx, args [][]byte) {
	var events []string
	for _, a := range args[2:] {
		events = append(events, strings.ToLower(string(a)))
	}
	c.W.Int(int64(c.h.obs.LatencyReset(events)))
}

// LATENCY HISTOGRAM [command ...]: Redis 7's cumulative distribution per
// command, in power-of-two µs buckets: {name: {calls: n, histogram_usec:
// {bucket: calls at most that long}}}, for the commands named (all when
// none) that ran.
func cmdLatencyHistogram(c *Ctx, args [][]byte) {
	snap := c.snapshot(true)
	want := map[string]bool{}
	for _, a := range args[2:] {
		name := strings.ToLower(string(a))
		if cmd := c.h.table.byName[name]; cmd != nil && cmd.subIndex != nil {
			for _, s := range cmd.Subs {
				want[s.Name] = true // a container stands for its subcommands, as in Redis
			}
		}
		want[name] = true
	}
	var sel []*observe.CmdStats
	for i := range snap.Commands {
		s := &snap.Commands[i]
		if s.Samples() > 0 && (len(want) == 0 || want[s.Name]) {
			sel = append(sel, s)
		}
	}
	c.W.Map(len(sel))
	for _, s := range sel {
		c.W.BulkString(s.Name)
		c.W.Map(2)
		c.W.BulkString("calls")
		c.W.Int(int64(s.Samples()))
		c.W.BulkString("histogram_usec")
		us, counts := s.PowersOfTwoUsec()
		c.W.Map(len(us))
		for i := range us {
			c.W.Int(us[i])
			c.W.Int(counts[i])
		}
	}
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
	configParams["slowlog-log-slower-than"] = rangedParam(func(c *Ctx) int64 { return c.h.obs.SlowlogThreshold() },
		redisInt, -1, 1<<63-1, func(c *Ctx, n int64) { c.h.obs.SetSlowlogThreshold(n) })
	configParams["slowlog-max-len"] = rangedParam(func(c *Ctx) int64 { return c.h.obs.SlowlogMaxLen() },
		redisInt, 0, 1<<63-1, func(c *Ctx, n int64) { c.h.obs.SetSlowlogMaxLen(n) })
	configParams["latency-monitor-threshold"] = rangedParam(func(c *Ctx) int64 { return c.h.obs.LatencyThreshold() },
		redisInt, 0, 1<<63-1, func(c *Ctx, n int64) { c.h.obs.SetLatencyThreshold(n) })
	configParams["latency-tracking"] = configParam{
		get:   func(c *Ctx) string { return yesNo(c.h.obs.Tracking()) },
		parse: parseYesNo,
		set:   func(c *Ctx, n int64, _ []byte) { c.h.obs.SetTracking(n == 1) },
		bad:   errConfigYesNo,
	}
	configParams["latency-tracking-info-percentiles"] = configParam{
		get: func(c *Ctx) string {
			var s []string
			for _, p := range c.h.obs.Percentiles() {
				s = append(s, strconv.FormatFloat(p, 'f', -1, 64))
			}
			return strings.Join(s, " ")
		},
		parse: func(v []byte) (int64, bool) { _, ok := parsePercentiles(v); return 0, ok },
		set: func(c *Ctx, _ int64, v []byte) {
			ps, _ := parsePercentiles(v)
			c.h.obs.SetPercentiles(ps)
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
