package observe

import (
	"bytes"
	"math/bits"
	"sync"
	"sync/atomic"
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
