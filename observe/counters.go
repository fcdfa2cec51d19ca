package observe

import (
	"bytes"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// histBuckets is the number of latency histogram buckets: [0, 64) ns, then
// 4 per power of two up to 2^40 ns (18 minutes; longer lands in the last).
const histBuckets = 1 + 34*4

// histogram counts durations in log-linear buckets (at most 25% wide). Its
// octaves start at powers of two, so that LATENCY HISTOGRAM's power-of-two
// buckets and Prometheus's are sums of whole buckets.
type histogram [histBuckets]atomic.Uint64

// histIndex returns the bucket of a duration in ns.
func histIndex(ns int64) int {
	if ns < 64 {
		return 0
	}
	k := bits.Len64(uint64(ns)) - 1 // 2^k <= ns < 2^(k+1), k >= 6
	if k >= 40 {
		return histBuckets - 1
	}
	sub := int(ns>>(k-2)) & 3
	return (k-6)*4 + sub + 1
}

// histUpper returns the largest duration (ns) bucket i holds.
func histUpper(i int) int64 {
	if i == 0 {
		return 63
	}
	k, sub := (i-1)/4+6, int64((i-1)%4)
	return (4+sub+1)<<(k-2) - 1
}

// cmdCounters are one command's statistics on one connection (or the sum
// of closed connections'). allowed and denied are the Prometheus decision
// counters, which CONFIG RESETSTAT leaves alone (Prometheus counters only
// grow); the others are INFO's.
type cmdCounters struct {
	calls, failed, rejected, ns atomic.Int64
	allowed, denied             atomic.Int64
	hist                        histogram
}

func (cc *cmdCounters) reset() {
	cc.calls.Store(0)
	cc.failed.Store(0)
	cc.rejected.Store(0)
	cc.ns.Store(0)
	for i := range cc.hist {
		cc.hist[i].Store(0)
	}
}

// maxPrefixes bounds the key prefixes decisions are counted by; decisions
// on keys of further prefixes, keys without ':', prefixes longer than
// maxPrefixLen and prefixes that are not printable UTF-8 are counted as
// "other".
const (
	maxPrefixes  = 64
	maxPrefixLen = 32
	otherPrefix  = maxPrefixes
)

// prefixCounters are decisions by key prefix index: [i][0] allowed, [i][1]
// denied.
type prefixCounters [maxPrefixes + 1][2]atomic.Int64

// Counters are published statistics: an event loop's, written by its
// goroutine for every connection it serves, or a connection's own in
// goroutine mode (atomically, once per batch); read by anyone.
type Counters struct {
	cmds   []atomic.Pointer[cmdCounters] // by Cmd.ID, made on first use
	prefix atomic.Pointer[prefixCounters]

	errMu sync.Mutex
	errs  map[string]*int64 // error replies by code (the first word)

	shared bool        // an event loop's, for all its connections (CountersFor)
	dirty  atomic.Bool // published since the totals last took its counters
}

func newCounters(n int) *Counters { return &Counters{cmds: make([]atomic.Pointer[cmdCounters], n)} }

// counters returns the counters of the command with id, making them on
// first use (the owner: a connection, an event loop; or a fold under the
// totals' lock).
func (s *Counters) counters(id int) *cmdCounters {
	p := &s.cmds[id]
	if cc := p.Load(); cc != nil {
		return cc
	}
	// A blocked command may finish on another goroutine than its loop's:
	// the first to make the counters wins.
	if cc := new(cmdCounters); p.CompareAndSwap(nil, cc) {
		return cc
	}
	return p.Load()
}

func (s *Counters) prefixes() *prefixCounters {
	if p := s.prefix.Load(); p != nil {
		return p
	}
	if p := new(prefixCounters); s.prefix.CompareAndSwap(nil, p) {
		return p
	}
	return s.prefix.Load()
}

// addError counts an error reply by its code; only a code not seen
// before allocates.
func (s *Counters) addError(code []byte, n int64) {
	s.errMu.Lock()
	if p := s.errs[string(code)]; p != nil {
		*p += n
	} else if len(s.errs) < maxErrorCodes {
		if s.errs == nil {
			s.errs = make(map[string]*int64)
		}
		p := new(int64) // not &n: n would live on the heap at every call
		*p = n
		s.errs[string(code)] = p
	}
	s.errMu.Unlock()
	s.dirty.Store(true)
}

// maxErrorCodes bounds the error codes INFO errorstats tracks, as Redis's
// 128.
const maxErrorCodes = 128

// errorCode returns an error reply's code: its first word, as Redis's
// errorstats names it.
func errorCode(msg []byte) []byte {
	if i := bytes.IndexAny(msg, " \r"); i >= 0 {
		msg = msg[:i]
	}
	if len(msg) > 64 {
		msg = msg[:64]
	}
	return msg
}

// fold moves o's counters into s (the totals), leaving o's at zero: o's
// owner may go on adding to them meanwhile, and what it adds after a
// counter was taken stays for the next fold. The caller serialises folds
// into s.
func (s *Counters) fold(o *Counters) {
	for i := range o.cmds {
		oc := o.cmds[i].Load()
		if oc == nil {
			continue
		}
		cc := s.counters(i)
		cc.calls.Add(oc.calls.Swap(0))
		cc.failed.Add(oc.failed.Swap(0))
		cc.rejected.Add(oc.rejected.Swap(0))
		cc.ns.Add(oc.ns.Swap(0))
		cc.allowed.Add(oc.allowed.Swap(0))
		cc.denied.Add(oc.denied.Swap(0))
		for j := range oc.hist {
			if oc.hist[j].Load() != 0 {
				cc.hist[j].Add(oc.hist[j].Swap(0))
			}
		}
	}
	if op := o.prefix.Load(); op != nil {
		p := s.prefixes()
		for i := range op {
			p[i][0].Add(op[i][0].Swap(0))
			p[i][1].Add(op[i][1].Swap(0))
		}
	}
	o.errMu.Lock()
	errs := o.errs
	o.errs = nil
	o.errMu.Unlock()
	for code, n := range errs {
		s.addError([]byte(code), *n)
	}
}

// reset zeroes INFO's statistics (CONFIG RESETSTAT), not the decision
// counters.
func (s *Counters) reset() {
	for i := range s.cmds {
		if cc := s.cmds[i].Load(); cc != nil {
			cc.reset()
		}
	}
	s.errMu.Lock()
	s.errs = nil
	s.errMu.Unlock()
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

// Percentile returns the duration (ns) under which p percent of the calls
// fell: the upper bound of the bucket holding that call.
func (s *CmdStats) Percentile(p float64) int64 {
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

// Samples returns the number of calls the latency histogram holds.
func (s *CmdStats) Samples() uint64 {
	var n uint64
	for _, v := range s.hist {
		n += v
	}
	return n
}

// PowersOfTwoUsec returns LATENCY HISTOGRAM's buckets: for each power of
// two ns from 1024 on, the calls shorter than it, its bound in µs as
// Redis writes it (1024 ns → 1, 2048 → 2, 65536 → 65), only where the
// count grew, up to the bucket holding the longest call.
func (s *CmdStats) PowersOfTwoUsec() (us, counts []int64) {
	total := s.Samples()
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

// Snapshot returns the statistics of every connection, closed or not:
// it moves what live connections published since the last call into the
// totals and reads those. Without commands it has the error counts only
// (INFO's default sections), which costs a small part of the rest. A
// command reading them publishes its own batch first (Batch.Publish).
func (o *Observer) Snapshot(commands bool) Snapshot {
	// Under the lock, a closing goroutine-mode connection's statistics are
	// either its own (in own) or in the totals: never twice, never not.
	o.totalsMu.Lock()
	defer o.totalsMu.Unlock()
	o.eachLive(func(st *Counters) {
		if st.dirty.Swap(false) {
			o.totals.fold(st)
		}
	})
	st := o.totals
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
	for i, cmd := range o.cmds {
		cc := st.cmds[i].Load()
		if cc == nil && !cmd.Decides {
			continue
		}
		snap.Commands = append(snap.Commands, CmdStats{Name: cmd.Name, Decides: cmd.Decides}) // every limiter's decisions, even none
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
	if t := o.prefixes.Load(); t != nil {
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

// prefixTable is the key prefixes decisions are counted by, in the order
// first seen; replaced whole when one is added (at most maxPrefixes times).
type prefixTable struct {
	index map[string]int
	names []string
}

// prefixOf returns p's index, registering it while fewer than maxPrefixes
// are known.
func (o *Observer) prefixOf(p []byte) int {
	if t := o.prefixes.Load(); t != nil {
		if i, ok := t.index[string(p)]; ok {
			return i
		}
	}
	o.prefixMu.Lock()
	defer o.prefixMu.Unlock()
	t := o.prefixes.Load()
	if t == nil {
		t = &prefixTable{index: map[string]int{}}
	}
	if i, ok := t.index[string(p)]; ok {
		return i
	}
	if len(t.names) >= maxPrefixes || !labelSafe(p) {
		return otherPrefix
	}
	nt := &prefixTable{index: make(map[string]int, len(t.index)+1), names: append(t.names[:len(t.names):len(t.names)], string(p))}
	for k, v := range t.index {
		nt.index[k] = v
	}
	i := len(t.names)
	nt.index[string(p)] = i
	o.prefixes.Store(nt)
	return i
}

// labelSafe reports whether a key prefix can be a Prometheus label value
// as it is: printable UTF-8 (keys are binary).
func labelSafe(p []byte) bool {
	if !utf8.Valid(p) {
		return false
	}
	for _, r := range string(p) {
		if r < 0x20 || r == 0x7f || r == utf8.RuneError {
			return false
		}
	}
	return true
}
