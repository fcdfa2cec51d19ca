package command

import (
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/rlserver/rlserver/resp"
)

// Redis's bounds on what a slow log entry keeps of a command.
const (
	slowlogMaxArgc = 32
	slowlogMaxArg  = 128
)

// slowLog is SLOWLOG's: commands that took at least threshold µs
// (negative: none), newest last, at most maxLen.
type slowLog struct {
	threshold atomic.Int64 // slowlog-log-slower-than, µs
	maxLen    atomic.Int64 // slowlog-max-len

	mu      sync.Mutex
	nextID  int64
	entries []slowEntry
}

type slowEntry struct {
	id, at, us int64 // id, Unix s when it started, duration µs
	args       []string
	addr, name string
}

// observe logs cmd when it took d ns or more than the threshold, and
// feeds the latency monitor. start is the monotonic reading it began at.
func (l *slowLog) observe(c *Ctx, cmd *Command, args [][]byte, d, start int64) {
	c.h.obs.latency.observe(c, cmd, d, start)
	th := l.threshold.Load()
	if th < 0 || d/1000 < th || cmd.skipSlowlog {
		return
	}
	e := slowEntry{at: c.h.clock.Wall(start) / 1e9, us: d / 1000, args: slowArgs(cmd, args), addr: c.sess.info.Addr}
	c.sess.mu.Lock()
	e.name = c.sess.name
	c.sess.mu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	e.id = l.nextID
	l.nextID++
	l.entries = append(l.entries, e)
	if n := int(l.maxLen.Load()); len(l.entries) > n {
		l.entries = append(l.entries[:0], l.entries[len(l.entries)-n:]...)
	}
}

// slowArgs copies a command's arguments as Redis's slow log keeps them: at
// most 32 (the last one saying how many more there were), each at most
// 128 bytes (saying how many more), secrets redacted.
func slowArgs(cmd *Command, args [][]byte) []string {
	n := min(len(args), slowlogMaxArgc)
	out := make([]string, n)
	for i := 0; i < n; i++ {
		if i == slowlogMaxArgc-1 && len(args) > slowlogMaxArgc {
			out[i] = "... (" + strconv.Itoa(len(args)-slowlogMaxArgc+1) + " more arguments)"
			break
		}
		a := args[i]
		switch {
		case redacted(cmd, args, i):
			out[i] = "(redacted)"
		case len(a) > slowlogMaxArg:
			out[i] = string(a[:slowlogMaxArg]) + "... (" + strconv.Itoa(len(a)-slowlogMaxArg) + " more bytes)"
		default:
			out[i] = string(a)
		}
	}
	return out
}

// redacted reports whether argument i is a secret Redis keeps out of the
// slow log: AUTH's arguments, HELLO's after AUTH, the rules of ACL
// SETUSER, the value of CONFIG SET requirepass / masterauth.
func redacted(cmd *Command, args [][]byte, i int) bool {
	switch cmd.Name {
	case "auth":
		return i > 0
	case "hello":
		for j := 1; j < i; j++ {
			if equalFold(args[j], "AUTH") {
				return i <= j+2
			}
		}
	case "acl|setuser":
		return i > 2
	case "config|set":
		return i > 2 && i%2 == 1 && (equalFold(args[i-1], "requirepass") || equalFold(args[i-1], "masterauth"))
	}
	return false
}

func (l *slowLog) reset() {
	l.mu.Lock()
	l.entries = nil
	l.mu.Unlock()
}

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
	l := &c.h.obs.slowlog
	l.mu.Lock()
	entries := l.entries
	if count >= 0 && int64(len(entries)) > count {
		entries = entries[int64(len(entries))-count:]
	}
	entries = append([]slowEntry(nil), entries...)
	l.mu.Unlock()
	c.W.Array(len(entries))
	for i := len(entries) - 1; i >= 0; i-- {
		e := entries[i]
		c.W.Array(6)
		c.W.Int(e.id)
		c.W.Int(e.at)
		c.W.Int(e.us)
		c.W.Array(len(e.args))
		for _, a := range e.args {
			c.W.BulkString(a)
		}
		c.W.BulkString(e.addr)
		c.W.BulkString(e.name)
	}
}

func cmdSlowlogLen(c *Ctx, args [][]byte) {
	l := &c.h.obs.slowlog
	l.mu.Lock()
	n := len(l.entries)
	l.mu.Unlock()
	c.W.Int(int64(n))
}

func cmdSlowlogReset(c *Ctx, args [][]byte) {
	c.h.obs.slowlog.reset()
	c.W.OK()
}

// latencyMonitor is LATENCY LATEST/HISTORY's: for each event ("command",
// "fast-command", as Redis names them), the last 160 seconds in which it
// took threshold ms or more (0: the monitor is off).
type latencyMonitor struct {
	threshold atomic.Int64 // latency-monitor-threshold, ms

	mu     sync.Mutex
	events map[string]*latencyEvent
}

const latencySamples = 160

type latencyEvent struct {
	samples [latencySamples]latencySample
	next    int
	max     int64 // ms, since the last reset
}

type latencySample struct{ at, ms int64 }

func (m *latencyMonitor) observe(c *Ctx, cmd *Command, d, start int64) {
	th := m.threshold.Load()
	ms := d / 1e6
	if th <= 0 || ms < th {
		return
	}
	event := "command"
	if cmd.fast {
		event = "fast-command"
	}
	at := c.h.clock.Wall(start+d) / 1e9
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.events == nil {
		m.events = map[string]*latencyEvent{}
	}
	ev := m.events[event]
	if ev == nil {
		ev = &latencyEvent{}
		m.events[event] = ev
	}
	// As Redis: samples in the same second keep the largest.
	prev := &ev.samples[(ev.next+latencySamples-1)%latencySamples]
	if prev.at == at {
		prev.ms = max(prev.ms, ms)
	} else {
		ev.samples[ev.next] = latencySample{at: at, ms: ms}
		ev.next = (ev.next + 1) % latencySamples
	}
	ev.max = max(ev.max, ms)
}

func (m *latencyMonitor) names() []string {
	names := make([]string, 0, len(m.events))
	for n := range m.events {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// LATENCY LATEST: [event, Unix s of the latest spike, its ms, the largest
// ms] per event.
func cmdLatencyLatest(c *Ctx, args [][]byte) {
	m := &c.h.obs.latency
	m.mu.Lock()
	defer m.mu.Unlock()
	names := m.names()
	c.W.Array(len(names))
	for _, n := range names {
		ev := m.events[n]
		last := ev.samples[(ev.next+latencySamples-1)%latencySamples]
		c.W.Array(4)
		c.W.BulkString(n)
		c.W.Int(last.at)
		c.W.Int(last.ms)
		c.W.Int(ev.max)
	}
}

// LATENCY HISTORY event: [Unix s, ms] for each sample, oldest first.
func cmdLatencyHistory(c *Ctx, args [][]byte) {
	m := &c.h.obs.latency
	m.mu.Lock()
	defer m.mu.Unlock()
	ev := m.events[strings.ToLower(string(args[2]))]
	if ev == nil {
		c.W.Array(0)
		return
	}
	var out []latencySample
	for i := 0; i < latencySamples; i++ {
		if s := ev.samples[(ev.next+i)%latencySamples]; s.at != 0 {
			out = append(out, s)
		}
	}
	c.W.Array(len(out))
	for _, s := range out {
		c.W.Array(2)
		c.W.Int(s.at)
		c.W.Int(s.ms)
	}
}

// LATENCY RESET [event ...]: the number of events reset.
func cmdLatencyReset(c *Ctx, args [][]byte) {
	m := &c.h.obs.latency
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	if len(args) == 2 {
		n = len(m.events)
		m.events = nil
	} else {
		for _, a := range args[2:] {
			name := strings.ToLower(string(a))
			if _, ok := m.events[name]; ok {
				delete(m.events, name)
				n++
			}
		}
	}
	c.W.Int(int64(n))
}

// LATENCY HISTOGRAM [command ...]: Redis 7's cumulative distribution per
// command, in power-of-two µs buckets: {name: {calls: n, histogram_usec:
// {bucket: calls at most that long}}}, for the commands named (all when
// none) that ran.
func cmdLatencyHistogram(c *Ctx, args [][]byte) {
	snap := c.snapshot()
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
	var sel []*CmdStats
	for i := range snap.Commands {
		s := &snap.Commands[i]
		if s.samples() > 0 && (len(want) == 0 || want[s.Name]) {
			sel = append(sel, s)
		}
	}
	c.W.Map(len(sel))
	for _, s := range sel {
		c.W.BulkString(s.Name)
		c.W.Map(2)
		c.W.BulkString("calls")
		c.W.Int(int64(s.samples()))
		c.W.BulkString("histogram_usec")
		us, counts := s.powersOfTwoUsec()
		c.W.Map(len(us))
		for i := range us {
			c.W.Int(us[i])
			c.W.Int(counts[i])
		}
	}
}

// powersOfTwoUsec returns LATENCY HISTOGRAM's buckets: for each power of
// two ns from 1024 on, the calls shorter than it, its bound in µs as
// Redis writes it (1024 ns → 1, 2048 → 2, 65536 → 65), only where the
// count grew, up to the bucket holding the longest call.
func (s *CmdStats) powersOfTwoUsec() (us, counts []int64) {
	total := s.samples()
	var n, prev uint64
	j := 0
	for k := 10; k <= 40 && prev < total; k++ {
		limit := 1 + (k-6)*4
		if k == 40 {
			limit = histBuckets
		}
		for ; j < limit; j++ {
			n += s.hist[j]
		}
		if n > prev {
			us = append(us, (int64(1)<<k)/1000)
			counts = append(counts, int64(n))
		}
		prev = n
	}
	return us, counts
}
