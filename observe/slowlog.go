package observe

import (
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
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
	entries []SlowEntry
}

// SlowEntry is one entry of the slow log.
type SlowEntry struct {
	ID, At, Us int64    // id, Unix s when it started, duration µs
	Args       []string // as Redis keeps them: bounded, secrets redacted
	Addr, Name string   // the client's address and name
}

// observe logs cmd (run by b's connection with args) when it took d ns or
// more than the threshold, and feeds the latency monitor. start is the
// monotonic reading it began at.
func (o *Observer) observe(b *Batch, cmd *Cmd, args [][]byte, d, start int64) {
	o.latency.observe(o, cmd, d, start)
	l := &o.slowlog
	th := l.threshold.Load()
	if th < 0 || d/1000 < th || cmd.SkipSlowlog {
		return
	}
	e := SlowEntry{At: o.clock.Wall(start) / 1e9, Us: d / 1000, Args: slowArgs(cmd, args)}
	e.Addr, e.Name = b.client()
	l.mu.Lock()
	defer l.mu.Unlock()
	e.ID = l.nextID
	l.nextID++
	l.entries = append(l.entries, e)
	if n := int(l.maxLen.Load()); len(l.entries) > n {
		l.entries = append(l.entries[:0], l.entries[len(l.entries)-n:]...)
	}
}

// slowArgs copies a command's arguments as Redis's slow log keeps them: at
// most 32 (the last one saying how many more there were), each at most
// 128 bytes (saying how many more), secrets redacted.
func slowArgs(cmd *Cmd, args [][]byte) []string {
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
func redacted(cmd *Cmd, args [][]byte, i int) bool {
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
		return i > 2 && i%2 == 1 && (equalFold(args[i-1], "REQUIREPASS") || equalFold(args[i-1], "MASTERAUTH"))
	}
	return false
}

// equalFold reports whether b, in upper case, is tok (command's
// equalFold).
func equalFold(b []byte, tok string) bool {
	if len(b) != len(tok) {
		return false
	}
	for i := range b {
		ch := b[i]
		if 'a' <= ch && ch <= 'z' {
			ch -= 'a' - 'A'
		}
		if ch != tok[i] {
			return false
		}
	}
	return true
}

// SlowlogEntries returns the newest count entries of the slow log (all
// when count is negative), newest first.
func (o *Observer) SlowlogEntries(count int64) []SlowEntry {
	l := &o.slowlog
	l.mu.Lock()
	entries := l.entries
	if count >= 0 && int64(len(entries)) > count {
		entries = entries[int64(len(entries))-count:]
	}
	out := make([]SlowEntry, len(entries))
	for i, e := range entries {
		out[len(entries)-1-i] = e
	}
	l.mu.Unlock()
	return out
}

// SlowlogLen returns the number of entries in the slow log.
func (o *Observer) SlowlogLen() int {
	o.slowlog.mu.Lock()
	defer o.slowlog.mu.Unlock()
	return len(o.slowlog.entries)
}

// SlowlogReset empties the slow log.
func (o *Observer) SlowlogReset() {
	o.slowlog.mu.Lock()
	o.slowlog.entries = nil
	o.slowlog.mu.Unlock()
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
	samples [latencySamples]LatencySample
	next    int
	max     int64 // ms, since the last reset
}

// LatencySample is one second of an event's history: the Unix second and
// the longest duration (ms) of the event in it.
type LatencySample struct{ At, Ms int64 }

func (m *latencyMonitor) observe(o *Observer, cmd *Cmd, d, start int64) {
	th := m.threshold.Load()
	ms := d / 1e6
	if th <= 0 || ms < th {
		return
	}
	event := "command"
	if cmd.Fast {
		event = "fast-command"
	}
	at := o.clock.Wall(start+d) / 1e9
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
	if prev.At == at {
		prev.Ms = max(prev.Ms, ms)
	} else {
		ev.samples[ev.next] = LatencySample{At: at, Ms: ms}
		ev.next = (ev.next + 1) % latencySamples
	}
	ev.max = max(ev.max, ms)
}

// LatencyLatest is LATENCY LATEST's line of an event: its latest spike
// and the largest since the last reset (ms).
type LatencyLatest struct {
	Event  string
	Latest LatencySample
	Max    int64
}

// LatencyLatest returns each event's latest spike, by event name.
func (o *Observer) LatencyLatest() []LatencyLatest {
	m := &o.latency
	m.mu.Lock()
	defer m.mu.Unlock()
	names := make([]string, 0, len(m.events))
	for n := range m.events {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]LatencyLatest, len(names))
	for i, n := range names {
		ev := m.events[n]
		out[i] = LatencyLatest{Event: n, Latest: ev.samples[(ev.next+latencySamples-1)%latencySamples], Max: ev.max}
	}
	return out
}

// LatencyHistory returns an event's samples (event in lower case), oldest
// first.
func (o *Observer) LatencyHistory(event string) []LatencySample {
	m := &o.latency
	m.mu.Lock()
	defer m.mu.Unlock()
	ev := m.events[event]
	if ev == nil {
		return nil
	}
	var out []LatencySample
	for i := 0; i < latencySamples; i++ {
		if s := ev.samples[(ev.next+i)%latencySamples]; s.At != 0 {
			out = append(out, s)
		}
	}
	return out
}

// LatencyReset forgets the events named (in lower case), or every event
// when none is, and returns how many it forgot.
func (o *Observer) LatencyReset(events []string) int {
	m := &o.latency
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(events) == 0 {
		n := len(m.events)
		m.events = nil
		return n
	}
	n := 0
	for _, name := range events {
		if _, ok := m.events[name]; ok {
			delete(m.events, name)
			n++
		}
	}
	return n
}
