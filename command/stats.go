package command

import (
	"bytes"
	"math/bits"
	"sync"
	"sync/atomic"
	"unicode/utf8"
)

// Command statistics (INFO commandstats, latencystats, errorstats, SLOWLOG,
// LATENCY, the Prometheus decision counters) cost the hot path a few plain
// increments per command: a connection adds up its batch of pipelined
// commands in plain fields (batchStats) and publishes them with a few
// atomic adds once per batch, into counters (connStats) that only its
// event loop's goroutine writes (shared by the loop's connections), or in
// goroutine mode only its own, so nothing is contended. A reader moves
// what was published since the last read into the totals (the writer
// flags it), so that a read costs what changed, not what every connection
// ever counted.
//
// The clock is read twice per batch, not per command (a read is a
// noticeable share of a pipelined decision; BenchmarkBatch shows it): at
// the batch's first command (the reading Ctx.Now reuses) and at its end
// (the reading CLIENT LIST's idle time reuses). Commands in the @slow
// category (KEYS, SCAN, INFO, CONFIG, SAVE, ...) are timed one by one; the
// others, O(1) by design, share the rest of the batch's time equally. While
// slowlog-log-slower-than is 0 every command is timed alone, as Redis
// tests expect of a slow log that logs everything.

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

// connStats are published statistics: an event loop's, written by its
// goroutine for every connection it serves, or a connection's own in
// goroutine mode (atomically, once per batch); read by anyone.
type connStats struct {
	cmds   []atomic.Pointer[cmdCounters] // by Command.id, made on first use
	prefix atomic.Pointer[prefixCounters]

	errMu sync.Mutex
	errs  map[string]*int64 // error replies by code (the first word)

	shared bool        // an event loop's, for all its connections (statsFor)
	dirty  atomic.Bool // published since the totals last took its counters
}

func newConnStats(n int) *connStats { return &connStats{cmds: make([]atomic.Pointer[cmdCounters], n)} }

// counters returns the counters of the command with id, making them on
// first use (the owner: a connection, an event loop; or a fold under the
// totals' lock).
func (s *connStats) counters(id int) *cmdCounters {
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

func (s *connStats) prefixes() *prefixCounters {
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
func (s *connStats) addError(code []byte, n int64) {
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
func (s *connStats) fold(o *connStats) {
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
func (s *connStats) reset() {
	for i := range s.cmds {
		if cc := s.cmds[i].Load(); cc != nil {
			cc.reset()
		}
	}
	s.errMu.Lock()
	s.errs = nil
	s.errMu.Unlock()
}

// batchStats is what a connection adds up during a batch, in plain
// fields, until publish.
type batchStats struct {
	started bool
	start   int64 // the monotonic clock at the batch's first command
	timedNs int64 // time of the commands timed one by one
	shared  int64 // commands sharing the rest of the batch's time
	n       int   // entries used
	ent     [8]batchEntry
	gen     uint32      // publications so far: entries were reset when it changed
	cur     *batchEntry // the running command's entry
	curCmd  *Command    // the running command (nil: unknown)
	curArgs [][]byte    // its arguments
	// The arguments of the last command sharing the batch's time, for the
	// slow log.
	lastArgs [][]byte
	npfx     int
	pfx      [4]pfxEntry
}

type batchEntry struct {
	cmd                     *Command
	shared                  int64 // calls sharing the batch's time
	timed, timedNs          int64 // calls timed alone and their time (already in the histogram)
	failed, allowed, denied int64
}

type pfxEntry struct {
	idx             int
	allowed, denied int64
}

// entry returns cmd's entry in the batch, or nil when the batch holds as
// many different commands as it can (the caller publishes first).
func (b *batchStats) entry(cmd *Command) *batchEntry {
	if b.n > 0 && b.ent[b.n-1].cmd == cmd {
		return &b.ent[b.n-1]
	}
	for i := 0; i < b.n; i++ {
		if b.ent[i].cmd == cmd {
			return &b.ent[i]
		}
	}
	if b.n == len(b.ent) {
		return nil
	}
	e := &b.ent[b.n]
	b.n++
	*e = batchEntry{cmd: cmd}
	return e
}

// prefixEntry returns the batch's entry of prefix idx, or nil when full.
func (b *batchStats) prefixEntry(idx int) *pfxEntry {
	if b.npfx > 0 && b.pfx[b.npfx-1].idx == idx {
		return &b.pfx[b.npfx-1]
	}
	for i := 0; i < b.npfx; i++ {
		if b.pfx[i].idx == idx {
			return &b.pfx[i]
		}
	}
	if b.npfx == len(b.pfx) {
		return nil
	}
	e := &b.pfx[b.npfx]
	b.npfx++
	*e = pfxEntry{idx: idx}
	return e
}

// prefixTable is the key prefixes decisions are counted by, in the order
// first seen; replaced whole when one is added (at most maxPrefixes times).
type prefixTable struct {
	index map[string]int
	names []string
}

// prefixIndex returns the counter index of key's prefix: the key up to its
// first ':'. A connection remembers the last prefix it looked up, so a
// client deciding on one kind of key pays a short compare, not a lookup.
func (c *Ctx) prefixIndex(key []byte) int {
	pc := &c.pfx
	if n := pc.n; n > 0 && len(key) > n && key[n] == ':' && string(key[:n]) == string(pc.buf[:n]) {
		return pc.idx // the last prefix again (it has no ':' of its own)
	}
	i := bytes.IndexByte(key, ':')
	if i <= 0 || i > maxPrefixLen {
		return otherPrefix
	}
	p := key[:i]
	pc.idx = c.h.obs.prefixOf(p)
	pc.n = copy(pc.buf[:], p)
	return pc.idx
}

// prefixCache is the last key prefix a connection looked up.
type prefixCache struct {
	buf    [maxPrefixLen]byte
	n, idx int
}

// prefixOf returns p's index, registering it while fewer than maxPrefixes
// are known.
func (h *observability) prefixOf(p []byte) int {
	if t := h.prefixes.Load(); t != nil {
		if i, ok := t.index[string(p)]; ok {
			return i
		}
	}
	h.prefixMu.Lock()
	defer h.prefixMu.Unlock()
	t := h.prefixes.Load()
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
	h.prefixes.Store(nt)
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

// beginCommand is exec's bookkeeping before a command looked up as cmd
// (nil: unknown) is checked and run.
func (c *Ctx) beginCommand(cmd *Command, args [][]byte) {
	b := &c.batch
	if !b.started {
		c.startBatch()
	}
	b.curCmd, b.curArgs = cmd, args
}

// startBatch reads the clock at a batch's first command, for its time and
// for Ctx.Now.
func (c *Ctx) startBatch() {
	b := &c.batch
	b.started = true
	m := c.h.clock.Mono()
	b.start = m
	if c.now == 0 {
		c.now = c.h.clock.At(m)
	}
}

// reject answers an error raised before the command ran (counted as the
// command's rejected call); inside MULTI it also dooms the transaction, as
// Redis does.
func (c *Ctx) reject(msg string) {
	if c.sess.inMulti {
		c.sess.multiErr = true
	}
	c.err(msg)
	st := c.sess.stats
	if cmd := c.batch.curCmd; cmd != nil {
		st.counters(cmd.id).rejected.Add(1)
	}
	st.addError(errorCode([]byte(msg)), 1)
}

// run runs cmd, counting the call, its time and whether it failed; a
// call held while its slot moves is counted once, when it ends.
func (c *Ctx) run(cmd *Command, args [][]byte) {
	b := &c.batch
	e := b.entry(cmd)
	if e == nil {
		c.publish(c.h.clock.Mono())
		e = b.entry(cmd)
	}
	b.cur = e
	gen := b.gen
	start := len(c.W.Buf)
	timed := cmd.timedAlone || c.h.obs.slowAll.Load()
	var t0 int64
	if timed {
		t0 = c.h.clock.Mono()
	}
	cmd.Run(c, args)
	if c.moving {
		b.cur = nil // counted when it runs again (holdMoving)
		return
	}
	e = c.entryAfter(cmd, e, gen)
	if timed {
		d := c.h.clock.Mono() - t0
		b.timedNs += d
		e.timed++
		e.timedNs += d
		c.sess.stats.counters(cmd.id).hist[histIndex(d)].Add(1)
		c.h.obs.slowlog.observe(c, cmd, args, d, t0)
	} else {
		e.shared++
		b.shared++
		b.lastArgs = args
	}
	if len(c.W.Buf) > start && c.W.Buf[start] == '-' {
		e.failed++
		c.sess.stats.addError(errorCode(c.W.Buf[start+1:]), 1)
	}
	b.cur = nil
}

// entryAfter returns cmd's batch entry after it ran, e when the batch was
// not published meanwhile (it was at generation gen): EXEC's commands and
// commands reading the statistics publish it.
func (c *Ctx) entryAfter(cmd *Command, e *batchEntry, gen uint32) *batchEntry {
	b := &c.batch
	if b.gen == gen && b.n > 0 {
		return e
	}
	if e = b.entry(cmd); e == nil {
		c.publish(c.h.clock.Mono())
		e = b.entry(cmd)
	}
	return e
}

// decided counts a decision of the running limiter command: by command
// and outcome, and by the prefix of its (first) key.
func (c *Ctx) decided(allowed bool) {
	b := &c.batch
	e, cmd := b.cur, b.curCmd
	if e == nil || cmd == nil || cmd.Keys.First <= 0 || cmd.Keys.First >= len(b.curArgs) {
		return
	}
	idx := c.prefixIndex(b.curArgs[cmd.Keys.First])
	p := b.prefixEntry(idx)
	if p == nil {
		c.publishPrefixes()
		p = b.prefixEntry(idx)
	}
	if allowed {
		e.allowed++
		p.allowed++
	} else {
		e.denied++
		p.denied++
	}
}

// publishPrefixes publishes the batch's decisions by prefix.
func (c *Ctx) publishPrefixes() {
	b := &c.batch
	if b.npfx == 0 {
		return
	}
	pc := c.sess.stats.prefixes()
	for i := 0; i < b.npfx; i++ {
		p := &b.pfx[i]
		if p.allowed != 0 {
			pc[p.idx][0].Add(p.allowed)
		}
		if p.denied != 0 {
			pc[p.idx][1].Add(p.denied)
		}
	}
	b.npfx = 0
}

// publish adds the batch's statistics, as of the monotonic reading now,
// to the connection's, and starts a new batch at now. The commands that
// were not timed alone share the batch's time equally.
func (c *Ctx) publish(now int64) {
	b := &c.batch
	if !b.started {
		return
	}
	var share int64
	if b.shared > 0 {
		share = max(now-b.start-b.timedNs, 0) / b.shared
	}
	st := c.sess.stats
	dirty := b.n > 0 || b.npfx > 0
	for i := 0; i < b.n; i++ {
		e := &b.ent[i]
		cc := st.counters(e.cmd.id)
		if calls := e.shared + e.timed; calls != 0 {
			cc.calls.Add(calls)
			cc.ns.Add(share*e.shared + e.timedNs)
		}
		if e.shared != 0 {
			cc.hist[histIndex(share)].Add(uint64(e.shared))
		}
		if e.failed != 0 {
			cc.failed.Add(e.failed)
		}
		if e.allowed != 0 {
			cc.allowed.Add(e.allowed)
		}
		if e.denied != 0 {
			cc.denied.Add(e.denied)
		}
	}
	c.publishPrefixes()
	if dirty {
		st.dirty.Store(true) // after the counters: Snapshot takes them
	}
	if d := share * b.shared; b.lastArgs != nil && c.h.obs.observed(d) {
		// A batch of commands sharing its time is one entry of the slow log
		// (its last command) when that time is over the threshold.
		if last := c.h.table.lookup(b.lastArgs[0], &c.lower); last != nil {
			if last.subIndex != nil && len(b.lastArgs) > 1 && last.sub(b.lastArgs[1]) != nil {
				last = last.sub(b.lastArgs[1])
			}
			c.h.obs.slowlog.observe(c, last, b.lastArgs, d, b.start)
		}
	}
	var running *Command
	if b.cur != nil {
		running = b.cur.cmd
	}
	*b = batchStats{started: true, start: now, curCmd: b.curCmd, curArgs: b.curArgs, gen: b.gen + 1}
	if running != nil {
		// Published mid-command (a batch of more different commands than
		// it holds, or a command reading the statistics): the running
		// command continues in a new entry.
		b.cur = b.entry(running)
	}
}

// endBatch publishes the batch at its end and returns the monotonic
// reading it took.
func (c *Ctx) endBatch() int64 {
	now := c.h.clock.Mono()
	c.publish(now)
	c.batch.started = false
	c.batch.curCmd, c.batch.curArgs = nil, nil
	return now
}
