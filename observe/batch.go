package observe

import "bytes"

// Cmd is what the statistics know of a command: the command layer fills
// one per table row (subcommands included) and passes it by pointer.
type Cmd struct {
	ID       int    // the row's index in the table: its counters' slot
	Name     string // the full name, "config|get" for a subcommand
	FirstKey int    // the argument decisions are counted by the prefix of (0: none)
	// TimedAlone: in @slow, so timed on its own, not as a share of its
	// batch.
	TimedAlone  bool
	SkipSlowlog bool // EXEC: its commands are logged, not it (Redis's skip_slowlog)
	Fast        bool // the fast flag (the latency monitor's "fast-command")
	Decides     bool // a limiter command answering a decision (counted by outcome)
}

// Batch is one connection's statistics of its running batch: it adds them
// up in plain fields and publishes them to its Counters once per batch
// (End), or earlier when its table of entries is full or a command reads
// the statistics (Publish). One goroutine at a time uses a Batch.
type Batch struct {
	o      *Observer
	st     *Counters
	client func() (addr, name string) // for slow log entries
	b      batch
	pc     prefixCache
}

// batch is the part of a Batch a publication starts afresh.
type batch struct {
	started bool
	start   int64 // the monotonic clock at the batch's first command
	timedNs int64 // time of the commands timed one by one
	shared  int64 // commands sharing the rest of the batch's time
	n       int   // entries used
	ent     [8]batchEntry
	gen     uint32      // publications so far: entries were reset when it changed
	cur     *batchEntry // the running command's entry
	curCmd  *Cmd        // the running command (nil: unknown)
	curArgs [][]byte    // its arguments
	// The last command sharing the batch's time and its arguments, for
	// the slow log.
	lastCmd  *Cmd
	lastArgs [][]byte
	npfx     int
	pfx      [4]pfxEntry
}

type batchEntry struct {
	cmd                     *Cmd
	shared                  int64 // calls sharing the batch's time
	timed, timedNs          int64 // calls timed alone and their time (already in the histogram)
	failed, allowed, denied int64
}

type pfxEntry struct {
	idx             int
	allowed, denied int64
}

// prefixCache is the last key prefix a connection looked up.
type prefixCache struct {
	buf    [maxPrefixLen]byte
	n, idx int
}

// Init makes b a connection's, publishing to st (Observer.CountersFor);
// client names the connection in slow log entries.
func (b *Batch) Init(o *Observer, st *Counters, client func() (addr, name string)) {
	*b = Batch{o: o, st: st, client: client}
}

// Close folds the connection's own statistics (goroutine mode) into the
// totals.
func (b *Batch) Close() { b.o.retire(b.st) }

// entry returns cmd's entry in the batch, or nil when the batch holds as
// many different commands as it can (the caller publishes first).
func (b *batch) entry(cmd *Cmd) *batchEntry {
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
func (b *batch) prefixEntry(idx int) *pfxEntry {
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

// prefixIndex returns the counter index of key's prefix: the key up to its
// first ':'. A connection remembers the last prefix it looked up, so a
// client deciding on one kind of key pays a short compare, not a lookup.
func (b *Batch) prefixIndex(key []byte) int {
	pc := &b.pc
	if n := pc.n; n > 0 && len(key) > n && key[n] == ':' && string(key[:n]) == string(pc.buf[:n]) {
		return pc.idx // the last prefix again (it has no ':' of its own)
	}
	i := bytes.IndexByte(key, ':')
	if i <= 0 || i > maxPrefixLen {
		return otherPrefix
	}
	p := key[:i]
	pc.idx = b.o.prefixOf(p)
	pc.n = copy(pc.buf[:], p)
	return pc.idx
}

// Begin notes the command about to be checked and run with args (nil:
// unknown), and reports whether the batch has begun: at its first command
// it has not, and the caller begins it (BeginBatch).
func (b *Batch) Begin(cmd *Cmd, args [][]byte) (started bool) {
	b.b.curCmd, b.b.curArgs = cmd, args
	return b.b.started
}

// BeginBatch begins a batch at its first command: it reads the clock, for
// the batch's time, and returns the reading.
func (b *Batch) BeginBatch() int64 {
	m := b.o.clock.Mono()
	b.b.started = true
	b.b.start = m
	return m
}

// SetCommand replaces the command Begin noted: the subcommand found, or
// nil when the statistics count none (an unknown subcommand).
func (b *Batch) SetCommand(cmd *Cmd) { b.b.curCmd = cmd }

// Reject counts an error answered before the command ran (msg): the
// command's rejected call and the error's code.
func (b *Batch) Reject(msg string) {
	if cmd := b.b.curCmd; cmd != nil {
		b.st.counters(cmd.ID).rejected.Add(1)
	}
	b.st.addError(errorCode([]byte(msg)), 1)
}

// Call is a running command's bookkeeping, from Start to Done (a command
// may run others meanwhile: EXEC).
type Call struct {
	e     *batchEntry
	cmd   *Cmd
	t0    int64
	gen   uint32
	timed bool
}

// Start starts counting a call of cmd, which runs next.
func (b *Batch) Start(cmd *Cmd) Call {
	e := b.b.entry(cmd)
	if e == nil {
		e = b.full(cmd)
	}
	b.b.cur = e
	c := Call{e: e, cmd: cmd, gen: b.b.gen, timed: cmd.TimedAlone || b.o.slowAll.Load()}
	if c.timed {
		c.t0 = b.o.clock.Mono()
	}
	return c
}

// full publishes a batch holding as many different commands as it can,
// and returns cmd's entry in the new one.
func (b *Batch) full(cmd *Cmd) *batchEntry {
	b.publish(b.o.clock.Mono())
	return b.b.entry(cmd)
}

// Held forgets the call Start began: it was held while its key's slot
// moves, and is counted once, when it runs again.
func (b *Batch) Held() { b.b.cur = nil }

// Done counts the call c, with args, when it ended: its time, and
// whether it failed (answered an error: then Error counts the error).
func (b *Batch) Done(c Call, args [][]byte, failed bool) {
	bb := &b.b
	e, cmd := c.e, c.cmd
	if bb.gen != c.gen || bb.n == 0 {
		e = b.entryAfter(cmd)
	}
	if c.timed {
		d := b.o.clock.Mono() - c.t0
		bb.timedNs += d
		e.timed++
		e.timedNs += d
		b.st.counters(cmd.ID).hist[histIndex(d)].Add(1)
		b.o.observe(b, cmd, args, d, c.t0)
	} else {
		e.shared++
		bb.shared++
		bb.lastCmd, bb.lastArgs = cmd, args
	}
	if failed {
		e.failed++
	}
	bb.cur = nil
}

// Error counts an error reply (after its '-') by its code.
func (b *Batch) Error(reply []byte) { b.st.addError(errorCode(reply), 1) }

// entryAfter returns cmd's batch entry after a call that published the
// batch meanwhile: EXEC's commands and commands reading the statistics
// publish it.
func (b *Batch) entryAfter(cmd *Cmd) *batchEntry {
	e := b.b.entry(cmd)
	if e == nil {
		e = b.full(cmd)
	}
	return e
}

// Decided counts a decision of the running limiter command: by command
// and outcome, and by the prefix of its (first) key.
func (b *Batch) Decided(allowed bool) {
	bb := &b.b
	e, cmd := bb.cur, bb.curCmd
	if e == nil || cmd == nil || cmd.FirstKey <= 0 || cmd.FirstKey >= len(bb.curArgs) {
		return
	}
	idx := b.prefixIndex(bb.curArgs[cmd.FirstKey])
	p := bb.prefixEntry(idx)
	if p == nil {
		b.publishPrefixes()
		p = bb.prefixEntry(idx)
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
func (b *Batch) publishPrefixes() {
	bb := &b.b
	if bb.npfx == 0 {
		return
	}
	pc := b.st.prefixes()
	for i := 0; i < bb.npfx; i++ {
		p := &bb.pfx[i]
		if p.allowed != 0 {
			pc[p.idx][0].Add(p.allowed)
		}
		if p.denied != 0 {
			pc[p.idx][1].Add(p.denied)
		}
	}
	bb.npfx = 0
}

// Publish publishes the batch so far (a command reading the statistics
// sees its own batch), which goes on.
func (b *Batch) Publish() { b.publish(b.o.clock.Mono()) }

// publish adds the batch's statistics, as of the monotonic reading now,
// to the connection's, and starts a new batch at now. The commands that
// were not timed alone share the batch's time equally.
func (b *Batch) publish(now int64) {
	bb := &b.b
	if !bb.started {
		return
	}
	var share int64
	if bb.shared > 0 {
		share = max(now-bb.start-bb.timedNs, 0) / bb.shared
	}
	st := b.st
	dirty := bb.n > 0 || bb.npfx > 0
	for i := 0; i < bb.n; i++ {
		e := &bb.ent[i]
		cc := st.counters(e.cmd.ID)
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
	b.publishPrefixes()
	if dirty {
		st.dirty.Store(true) // after the counters: Snapshot takes them
	}
	if d := share * bb.shared; bb.lastCmd != nil && b.o.observed(d) {
		// A batch of commands sharing its time is one entry of the slow log
		// (its last command) when that time is over the threshold.
		b.o.observe(b, bb.lastCmd, bb.lastArgs, d, bb.start)
	}
	var running *Cmd
	if bb.cur != nil {
		running = bb.cur.cmd
	}
	*bb = batch{started: true, start: now, curCmd: bb.curCmd, curArgs: bb.curArgs, gen: bb.gen + 1}
	if running != nil {
		// Published mid-command (a batch of more different commands than
		// it holds, or a command reading the statistics): the running
		// command continues in a new entry.
		bb.cur = bb.entry(running)
	}
}

// End publishes the batch at its end and returns the monotonic reading
// it took.
func (b *Batch) End() int64 {
	now := b.o.clock.Mono()
	b.publish(now)
	b.b.started = false
	b.b.curCmd, b.b.curArgs = nil, nil
	return now
}
