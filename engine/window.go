package engine

import (
	"encoding/binary"
	"errors"
	"math/bits"
	"slices"
	"sync"
	"time"
	"unsafe"
)

// WindowMode selects the window algorithm of CL.WINDOW. Its numeric value is
// persisted, so existing values must never change.
type WindowMode uint8

// The window modes. The zero WindowMode is "unset" (a fresh key).
const (
	WindowFixed   WindowMode = 1 // counter per epoch-aligned window
	WindowSliding WindowMode = 2 // previous window's counter weighted by its overlap, plus the current one
	WindowLog     WindowMode = 3 // exact log of admitted units and their times
)

// String returns the mode's CL.WINDOW keyword ("FIXED", "SLIDING", "LOG"), or
// "" for the unset mode.
func (m WindowMode) String() string {
	switch m {
	case WindowFixed:
		return "FIXED"
	case WindowSliding:
		return "SLIDING"
	case WindowLog:
		return "LOG"
	}
	return ""
}

// DefaultMaxLogLimit is the default largest Limit accepted for WindowLog.
// The engine does not enforce it (a LOG window holds at most one entry per
// admitted unit, merged per instant, so its memory is O(Limit)); the protocol
// layer rejects larger limits against its configured maximum.
const DefaultMaxLogLimit = 10000

// WindowParams are the parameters of one CL.WINDOW call.
type WindowParams struct {
	Limit  int64         // units admitted per Window; > 0
	Window time.Duration // window length, ns; > 0
	Mode   WindowMode    // WindowFixed, WindowSliding or WindowLog
}

// Errors returned by WindowParams.Validate.
var (
	ErrWindowLimit  = errors.New("engine: window limit must be positive")
	ErrWindowLength = errors.New("engine: window length must be positive")
	ErrWindowMode   = errors.New("engine: unknown window mode")
)

// Validate reports whether p can be used. The maximum LOG limit is the
// caller's to enforce (see DefaultMaxLogLimit).
func (p WindowParams) Validate() error {
	switch {
	case p.Limit <= 0:
		return ErrWindowLimit
	case p.Window <= 0:
		return ErrWindowLength
	case p.Mode < WindowFixed || p.Mode > WindowLog:
		return ErrWindowMode
	}
	return nil
}

// Window is the state of a CL.WINDOW key in any mode. Its zero value is a
// fresh key (Mode 0). Times are ns on the server's clock, counts are units.
//
// FIXED and SLIDING keep two counters for epoch-aligned windows of length
// window: cur for [start, start+window) and prev for the window before it
// (SLIDING only). LOG keeps the admitted units with their instants in a ring
// (see winLog).
//
// A Window remembers the parameters it was last admitted with. A call with
// other parameters carries the state over, clamped to the new limit: FIXED
// and SLIDING counters move to the new window length as of the last
// admission (see counters); a LOG keeps its instants, and drops its oldest
// units if it holds more than the new limit. A call whose mode differs from
// a non-fresh state's is the caller's to refuse (WRONGTYPE); the engine
// treats that state as fresh.
//
// Time going backwards is clamped on purpose: a call at now earlier than the
// last admitted instant is answered as if made at that instant, so no time
// elapses and no expired unit comes back. Instants before the Unix epoch are
// taken as the epoch. Arithmetic is exact and saturating: huge windows or
// limits never wrap or panic.
type Window struct {
	mode   WindowMode
	limit  int64   // Limit of the last admission
	window int64   // Window of the last admission, ns
	last   int64   // instant of the last admission (or FIXED/SLIDING give-back), ns
	start  int64   // FIXED, SLIDING: start of the current aligned window, ns
	cur    int64   // FIXED, SLIDING: units admitted in [start, start+window)
	prev   int64   // SLIDING: units admitted in [start-window, start)
	log    *winLog // LOG only (nil otherwise: FIXED and SLIDING keys stay small)
}

var _ State = (*Window)(nil)

// Kind returns KindWindow.
func (s *Window) Kind() Kind { return KindWindow }

// KindWindow is the kind of FIXED, SLIDING and LOG windows. Its value is persisted: never change it.
const KindWindow Kind = 4

func init() { register(KindWindow, "window", func() State { return new(Window) }) }

// CopyTo copies s into dst, when both are FIXED or SLIDING windows
// (Copier): a LOG window's entries are memory of its own, and so is the
// ring a scratch state kept from one.
func (s *Window) CopyTo(dst State) bool {
	d, ok := dst.(*Window)
	if !ok || s.log != nil || d.log != nil {
		return false
	}
	*d = *s
	return true
}

// Reset makes s a fresh key's state. Unlike assigning Window{}, it keeps
// the LOG log's first block (emptied) for the next LOG admission, so a
// scratch state reused for many keys does not allocate one for each.
func (s *Window) Reset() {
	l := s.log
	*s = Window{}
	if l != nil {
		l.truncate(min(len(l.blocks), 1))
		l.head, l.n, l.base = 0, 0, 0
		s.log = l
	}
}

// Recycle gives the LOG log's blocks back for reuse (see blockPool) and
// leaves s fresh. The keyspace calls it for a state it drops (a key
// deleted, expired or evicted) that nothing else refers to.
func (s *Window) Recycle() {
	if s.log != nil {
		s.log.truncate(0)
	}
	*s = Window{}
}

// Mode returns the mode of the window's admissions, or 0 for a Window that
// never admitted anything. A window whose decision said ResetAfter 0 is
// fresh too, whatever its Mode: the caller drops the key then.
func (s *Window) Mode() WindowMode { return s.mode }

// Take admits n units at now (ns) if the window has room for them and
// returns the decision. n == 0 peeks: the reply is computed and nothing
// changes. A denied call changes nothing. Params that fail Validate, or a
// negative n, are denied with RetryAfter Never.
func (s *Window) Take(now int64, p WindowParams, n int64) Decision {
	return s.decide(now, p, n, true)
}

// Check returns the decision Take(now, p, n) would return, without changing
// anything (CL.ALL asks every rule before it takes from any).
func (s *Window) Check(now int64, p WindowParams, n int64) Decision {
	return s.decide(now, p, n, false)
}

// decide is the one core of Take and Check; it mutates s only when commit is
// set and n > 0 units are admitted, after the decision is made.
func (s *Window) decide(now int64, p WindowParams, n int64, commit bool) Decision {
	if p.Validate() != nil || n < 0 {
		return Decision{Limit: p.Limit, RetryAfter: Never}
	}
	if now < 0 {
		now = 0
	}
	if s.mode == p.Mode && now < s.last {
		now = s.last // time went backwards: no time elapses
	}
	if p.Mode == WindowLog {
		return s.decideLog(now, p, n, commit)
	}
	return s.decideCounter(now, p, n, commit)
}

// GiveBack returns n units to a FIXED or SLIDING window at now (a refund
// of units taken before) and answers what a peek then would. Units come
// back from the current window first, then (SLIDING) from the previous
// one: the most recent first. Counts never go below zero. A window of
// another mode than p's that is not fresh, or n == 0, changes nothing and
// is answered as a peek under p. Invalid parameters, a LOG window's, or a
// negative n are answered with RetryAfter Never, changing nothing.
//
// A Take of n at t followed by GiveBack of n at t2 >= t, with no other
// admission in between and the same parameters, leaves a state that
// answers every later call (at t2 or after) as if neither had happened:
// in t's window the n units are in the current count and come back from
// it; in the next one they are the previous count and come back from it
// (SLIDING), and later they have left both. Where the algorithm cannot
// tell which window a refund's units were taken in, it is not exact:
//   - SLIDING: units taken in the previous window, given back after other
//     units were taken in the current one, come back from the current
//     count, so the estimate falls by n where never taking them would
//     leave it lower by only n × the previous window's remaining weight;
//   - FIXED: units taken in a window that has ended have expired with it,
//     and a give-back then frees units of the current window instead (as
//     envoyproxy/ratelimit's refund, which decrements the current
//     window's counter).
//
// Both give back at most n units, and only ever units that were taken.
func (s *Window) GiveBack(now int64, p WindowParams, n int64) Decision {
	if p.Validate() != nil || n < 0 || p.Mode == WindowLog {
		return Decision{Limit: p.Limit, RetryAfter: Never}
	}
	if now < 0 {
		now = 0
	}
	if s.mode == p.Mode && now < s.last {
		now = s.last // time went backwards: no time elapses
	}
	start, cur, prev := s.counters(now, p)
	if n > 0 && (cur > 0 || prev > 0) {
		back := min(n, cur)
		cur -= back
		if p.Mode == WindowSliding {
			prev -= min(n-back, prev)
		}
		s.log = nil
		s.mode, s.limit, s.window, s.last = p.Mode, p.Limit, int64(p.Window), now
		s.start, s.cur, s.prev = start, cur, prev
	}
	return s.decideCounter(now, p, 0, false)
}

// winAlign returns the start of the epoch-aligned window of length w (> 0)
// holding now (>= 0).
func winAlign(now, w int64) int64 { return now - now%w }

// winAdd returns a+b for non-negative b, saturating at maxInt64.
func winAdd(a, b int64) int64 {
	if a > maxInt64-b {
		return maxInt64
	}
	return a + b
}

// winSince returns t-now as a Duration for t >= now (t may be saturated).
func winSince(t, now int64) time.Duration {
	if t <= now {
		return 0
	}
	return time.Duration(t - now)
}

// counters returns the FIXED/SLIDING counters as they stand at now under
// params p: the aligned start of the current window and the units admitted in
// it (cur) and in the one before (prev, always 0 for FIXED), clamped to
// p.Limit.
//
// After a change of window length the stored counters are first moved to
// the new length as they stood at the last admission: cur into the new
// window holding that instant (no admission was later, so none is counted
// too early), prev into the one before. The result depends on the stored
// state alone, not on when the change is first seen.
func (s *Window) counters(now int64, p WindowParams) (start, cur, prev int64) {
	w := int64(p.Window)
	start = winAlign(now, w)
	if s.mode != p.Mode || s.window <= 0 {
		return start, 0, 0
	}
	from := s.start
	if s.window != w {
		from = winAlign(s.last, w)
	}
	switch start {
	case from:
		cur, prev = s.cur, s.prev
	case winAdd(from, w):
		cur, prev = 0, s.cur
	}
	if p.Mode == WindowFixed {
		prev = 0
	}
	return start, min(cur, p.Limit), min(prev, p.Limit)
}

func (s *Window) decideCounter(now int64, p WindowParams, n int64, commit bool) Decision {
	w, limit := int64(p.Window), p.Limit
	start, cur, prev := s.counters(now, p)
	sliding := p.Mode == WindowSliding
	// Durations are computed from left, the ns until the current window
	// ends, so that they stay exact where instants would saturate.
	left := w - (now - start) // in (0, w]; also the ns of the previous window inside (now-w, now]
	var ok bool
	switch {
	case n > limit:
	case sliding:
		ok = winSlidingFits(prev, left, cur, n, limit, w)
	default:
		ok = n <= limit-cur
	}
	d := Decision{Allowed: ok, Limit: limit}
	if ok {
		if commit && n > 0 {
			s.log = nil
			s.mode, s.limit, s.window, s.last = p.Mode, limit, w, now
			s.start, s.cur, s.prev = start, cur+n, prev
		}
		cur += n
	} else {
		d.RetryAfter = Never
		if n <= limit {
			if sliding {
				d.RetryAfter = winSlidingRetry(left, w, cur, prev, limit, n)
			} else {
				d.RetryAfter = time.Duration(left)
			}
		}
	}
	d.Remaining = limit - cur
	if sliding {
		d.Remaining -= winMulDivCeil(prev, left, w)
	}
	d.Remaining = max(d.Remaining, 0)
	switch {
	case cur > 0 && sliding:
		// Fresh once cur has left as prev too: at the end of the next window.
		d.ResetAfter = time.Duration(winAdd(left, w))
	case cur > 0 || prev > 0:
		d.ResetAfter = time.Duration(left)
	}
	return d
}

// winSlidingFits reports whether prev×rem + (cur+n)×w <= limit×w, that is
// whether n more units fit on an estimate of prev×rem/w + cur, exactly in
// 128 bits. All arguments are non-negative.
func winSlidingFits(prev, rem, cur, n, limit, w int64) bool {
	h1, l1 := bits.Mul64(uint64(prev), uint64(rem))
	h2, l2 := bits.Mul64(uint64(cur)+uint64(n), uint64(w))
	lo, c := bits.Add64(l1, l2, 0)
	hi, c2 := bits.Add64(h1, h2, c)
	if c2 != 0 {
		return false
	}
	hl, ll := bits.Mul64(uint64(limit), uint64(w))
	return hi < hl || hi == hl && lo <= ll
}

// winSlidingRetry returns the exact ns until a request of n <= limit units,
// denied now, would be admitted if nothing else is admitted meanwhile; left
// is the ns until the current window ends. The estimate only decreases with
// time: within the current window the previous count slides out linearly; at
// the next boundary the current count becomes the previous one. So the
// answer is the first instant in the current window at which the request
// fits, else the first in the next one (where it fits by the end, both
// counts having left).
func winSlidingRetry(left, w, cur, prev, limit, n int64) time.Duration {
	if free := limit - cur - n; free >= 0 && prev > 0 {
		// Fits once prev×left' <= free×w, i.e. left' <= ⌊free×w/prev⌋ = k,
		// with left' the ns left in the window then.
		if k := mulDivFloor(free, w, prev); k >= 1 {
			return time.Duration(max(left-k, 0))
		}
	}
	if cur == 0 {
		return time.Duration(left)
	}
	k := mulDivFloor(limit-n, w, cur) // in the next window cur is the previous count
	return time.Duration(winAdd(left, w-min(k, w)))
}

// winMulDivCeil returns ⌈a×b/c⌉ for non-negative a, b and positive c,
// saturating at maxInt64.
func winMulDivCeil(a, b, c int64) int64 {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi >= uint64(c) {
		return maxInt64
	}
	q, r := bits.Div64(hi, lo, uint64(c))
	if r != 0 {
		q++
	}
	if q > uint64(maxInt64) {
		return maxInt64
	}
	return int64(q)
}

// winLog is the LOG mode's log: a FIFO of (instant, cumulative units)
// entries, oldest first, instants non-decreasing and never equal (units
// admitted at one instant are merged into one entry). Cumulative counts wrap
// around uint64; only differences are used, and those are exact since the
// units alive at once never exceed the limit. An entry at t holds
// cum - (previous entry's cum, or base) units and leaves the window at t+w.
//
// Entries sit in blocks of logBlock, all of one size, taken from and given
// back to a shared pool as the log grows at its end and drains at its
// start: logs that grow, drain and get evicted reuse each other's blocks,
// so they make little garbage and leave no holes of other sizes in the heap.
type winLog struct {
	blocks []*winBlock // blocks[0] holds the oldest entry, at head
	// first and last are blocks[0] and the last block (nil: none): a call
	// reads the oldest and the newest entry, and through them it does not
	// wait for the blocks array to come from memory too.
	first, last *winBlock
	head        int    // index in blocks[0] of the oldest entry
	n           int    // number of entries
	base        uint64 // cumulative units before the oldest entry
}

const (
	logBlockShift = 6
	logBlock      = 1 << logBlockShift // entries per block (1 KB)
)

type winBlock [logBlock]winEntry

type winEntry struct {
	t   int64  // instant of admission, ns
	cum uint64 // cumulative units admitted up to and including this entry
}

// blockPool holds blocks no log uses. It is an allocator cache shared by
// every log (it holds no key's state); the runtime empties it over two
// collections, so it never keeps memory that is not reused.
var blockPool = sync.Pool{New: func() any { return new(winBlock) }}

func (l *winLog) at(i int) *winEntry {
	j := l.head + i
	b := l.first
	if k := j >> logBlockShift; k != 0 {
		b = l.last
		if k != len(l.blocks)-1 {
			b = l.blocks[k]
		}
	}
	return &b[j&(logBlock-1)]
}

// ends sets first and last after the blocks changed.
func (l *winLog) ends() {
	l.first, l.last = nil, nil
	if k := len(l.blocks); k > 0 {
		l.first, l.last = l.blocks[0], l.blocks[k-1]
	}
}

// truncate keeps the first k blocks and gives the others to the pool.
func (l *winLog) truncate(k int) {
	for i := k; i < len(l.blocks); i++ {
		blockPool.Put(l.blocks[i])
		l.blocks[i] = nil
	}
	l.blocks = l.blocks[:k]
	if k == 0 {
		l.blocks = nil
	}
	l.ends()
}

// dropBlocks gives the first k blocks to the pool and moves the others to
// the front; a block list left much longer than it needs is shrunk.
func (l *winLog) dropBlocks(k int) {
	for i := range k {
		blockPool.Put(l.blocks[i])
	}
	m := copy(l.blocks, l.blocks[k:])
	clear(l.blocks[m:])
	l.blocks = l.blocks[:m]
	if c := cap(l.blocks); c > 8 && m*4 <= c {
		l.blocks = append([]*winBlock(nil), l.blocks...)
	}
	l.ends()
}

// cumBefore returns the cumulative count before entry i.
func (l *winLog) cumBefore(i int) uint64 {
	if i == 0 {
		return l.base
	}
	return l.at(i - 1).cum
}

// search returns the smallest i in [lo, l.n) with f(entry i), or l.n; f must
// be monotonic (false then true). It looks at lo, lo+1, lo+3, lo+7... before
// bisecting the last step, since the entry sought is most often at or near
// lo (the oldest entries leave first): one or two probes in the first
// block instead of a probe in a block of each half.
func (l *winLog) search(lo int, f func(e *winEntry) bool) int {
	hi := lo
	for step := 1; hi < l.n && !f(l.at(hi)); step *= 2 {
		lo = hi + 1
		hi += step
	}
	hi = min(hi, l.n)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if f(l.at(m)) {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return lo
}

// view returns the log as it stands at now for window w and limit: the first
// live entry (instant > now-w), the cumulative count before it (base) and the
// units alive. If more than limit are alive (the limit was lowered), the
// oldest are dropped down to limit.
func (l *winLog) view(now, w, limit int64) (first int, base uint64, total int64) {
	cutoff := now - w // cannot overflow: now >= 0, w > 0
	first = l.search(0, func(e *winEntry) bool { return e.t > cutoff })
	base = l.cumBefore(first)
	if first == l.n {
		return first, base, 0
	}
	last := l.at(l.n - 1).cum
	if last-base > uint64(limit) {
		base = last - uint64(limit)
		off := base - l.base
		first = l.search(first, func(e *winEntry) bool { return e.cum-l.base > off })
	}
	return first, base, int64(last - base)
}

// commit drops the entries before first and sets the count before the oldest
// remaining one to base, as computed by view. Blocks left empty go back to
// the pool; an empty log keeps its first block.
func (l *winLog) commit(first int, base uint64) {
	l.base = base
	if l.n -= first; l.n == 0 {
		l.head = 0
		l.truncate(min(len(l.blocks), 1))
		return
	}
	l.head += first
	if k := l.head >> logBlockShift; k > 0 {
		l.dropBlocks(k)
		l.head &= logBlock - 1
	}
}

// push appends units admitted at t (>= the newest entry's instant).
func (l *winLog) push(t int64, units int64) {
	cum := l.base
	if l.n > 0 {
		newest := l.at(l.n - 1)
		if newest.t == t {
			newest.cum += uint64(units)
			return
		}
		cum = newest.cum
	}
	if (l.head+l.n)>>logBlockShift == len(l.blocks) {
		l.blocks = append(l.blocks, blockPool.Get().(*winBlock))
		l.ends()
	}
	l.n++
	*l.at(l.n - 1) = winEntry{t: t, cum: cum + uint64(units)}
}

func (s *Window) decideLog(now int64, p WindowParams, n int64, commit bool) Decision {
	w, limit := int64(p.Window), p.Limit
	var fresh winLog
	l := s.log
	if s.mode != WindowLog || l == nil {
		l = &fresh
	}
	first, base, total := l.view(now, w, limit)
	newest := int64(0)
	if total > 0 {
		newest = l.at(l.n - 1).t
	}
	ok := n <= limit && n <= limit-total
	d := Decision{Allowed: ok, Limit: limit}
	if ok {
		if commit && n > 0 {
			if s.mode != WindowLog {
				s.Reset()
			}
			if s.log == nil {
				s.log = new(winLog)
			}
			l = s.log
			l.commit(first, base)
			l.push(now, n)
			s.mode, s.limit, s.window, s.last = WindowLog, limit, w, now
		}
		if n > 0 {
			total += n
			newest = now
		}
	} else {
		d.RetryAfter = Never
		if n <= limit {
			// Wait until the oldest entries holding need units have left.
			need := uint64(n - (limit - total))
			j := l.search(first, func(e *winEntry) bool { return e.cum-base >= need })
			d.RetryAfter = time.Duration(w - (now - l.at(j).t)) // live: now-t < w
		}
	}
	d.Remaining = limit - total
	if total > 0 {
		d.ResetAfter = time.Duration(w - (now - newest))
	}
	return d
}

// Size returns an estimate of the heap bytes the window holds.
func (s *Window) Size() int {
	n := int(unsafe.Sizeof(*s))
	if l := s.log; l != nil {
		n += int(unsafe.Sizeof(*l)) + cap(l.blocks)*int(unsafe.Sizeof(l)) + len(l.blocks)*int(unsafe.Sizeof(winBlock{}))
	}
	return n
}

// The compact codec of a Window (see compact.go for the shared format).

var _ State = (*Window)(nil)

// Compact encoding of a Window. The fresh window (mode 0, whatever else it
// holds: the engine ignores the rest) is no bytes at all; any other is
//
//	header  one byte: bits 0-1 the mode (1-3), bits 2-3 and 4-5 the scale
//	        classes of limit and window, bits 6-7 zero
//	limit   scaled
//	window  scaled, ns
//	FIXED, SLIDING:
//	start   zigzag varint, wrapping: start − (ref − window) for FIXED,
//	        start − (ref − 2·window) for SLIDING: a stored window holds
//	        units (cur > 0), so it resets one window after its start, or
//	        two for SLIDING (once cur has left as prev too)
//	last    varint: last − start (never negative)
//	cur     varint
//	prev    varint, SLIDING only (FIXED's is always 0)
//	LOG:
//	last    zigzag varint: last − (ref − window), wrapping: a log empties
//	        one window after its newest entry, which is at last
//	base    varint: the cumulative count before the oldest entry
//	count   varint: the number of entries, each at least two bytes
//	entries newest first, each a varint pair:
//	        dt: last − t for the newest, then t' − t − 1 where t' is the
//	            instant of the entry after it (instants strictly increase)
//	        du: the entry's units − 1 (an entry holds at least one)
//
// In FIXED and SLIDING, last falls anywhere within the window, so last −
// start is the one field that costs several bytes (five or six for windows
// of seconds to minutes): the engine needs it exactly, to clamp time going
// backwards and to move the counters when the window length changes. In LOG,
// newest first puts the entry at last first, so a 1-entry log costs three
// bytes; older entries cost the gaps between them.

// AppendCompact appends the compact encoding of s (see State and the
// window layout above) to b.
func (s *Window) AppendCompact(b []byte, ref int64) []byte {
	if s.mode == 0 {
		return b
	}
	ml, cl := scaleDown(uint64(s.limit))
	mw, cw := scaleDown(uint64(s.window))
	b = append(b, byte(s.mode)&3|cl<<2|cw<<4)
	b = binary.AppendUvarint(b, ml)
	b = binary.AppendUvarint(b, mw)
	if s.mode != WindowLog {
		b = appendDelta(b, s.start, winStartRef(ref, s.window, s.mode))
		b = binary.AppendUvarint(b, uint64(s.last)-uint64(s.start))
		b = binary.AppendUvarint(b, uint64(s.cur))
		if s.mode == WindowSliding {
			b = binary.AppendUvarint(b, uint64(s.prev))
		}
		return b
	}
	b = appendDelta(b, s.last, int64(uint64(ref)-uint64(s.window)))
	l := s.log
	if l == nil {
		return append(b, 0, 0) // base 0, no entries
	}
	b = binary.AppendUvarint(b, l.base)
	b = binary.AppendUvarint(b, uint64(l.n))
	next := s.last
	for i := l.n - 1; i >= 0; i-- {
		e := l.at(i)
		b = binary.AppendUvarint(b, uint64(next)-uint64(e.t))
		b = binary.AppendUvarint(b, e.cum-l.cumBefore(i)-1)
		next = e.t - 1
	}
	return b
}

// winStartRef is where a FIXED or SLIDING window's start is expected to be,
// given its expiry ref.
func winStartRef(ref, window int64, mode WindowMode) int64 {
	w := uint64(window)
	if mode == WindowSliding {
		w *= 2
	}
	return int64(uint64(ref) - w)
}

// DecodeCompact replaces s with the window AppendCompact encoded in b with
// the same ref. It accepts the states decodeWindow does. FIXED and SLIDING
// windows allocate nothing and drop any log s held, as Take does. A LOG
// window reuses s's log and its ring whenever the ring's capacity holds the
// entries, resliced when the capacity allows to leave room for the next
// Take's entry (so that Take neither grows nor shrinks it); it allocates
// only when the ring must grow. On error s is left fresh.
func (s *Window) DecodeCompact(b []byte, ref int64) error {
	l := s.log
	if err := s.decodeCompact(b, ref, l); err != nil {
		*s = Window{}
		return err
	}
	return nil
}

func (s *Window) decodeCompact(b []byte, ref int64, l *winLog) error {
	if len(b) == 0 {
		*s = Window{}
		return nil
	}
	h := b[0]
	mode := WindowMode(h & 3)
	if mode == 0 || h>>6 != 0 {
		return errCompactHeader
	}
	r := compactReader{b: b[1:]}
	w := Window{mode: mode, limit: r.scaled(h >> 2 & 3), window: r.scaled(h >> 4 & 3)}
	if r.err == nil && (w.limit <= 0 || w.window <= 0) {
		return errCompactParams
	}
	if mode != WindowLog {
		w.start = r.delta(winStartRef(ref, w.window, mode))
		dl := r.uvarint()
		w.cur = r.int64()
		if mode == WindowSliding {
			w.prev = r.int64()
		}
		if err := r.end(); err != nil {
			return err
		}
		if w.start < 0 || dl > uint64(maxInt64-w.start) {
			return errCompactState
		}
		w.last = w.start + int64(dl)
		*s = w
		return nil
	}
	w.last = r.delta(int64(uint64(ref) - uint64(w.window)))
	base := r.uvarint()
	count := r.uvarint()
	if r.err != nil {
		return r.err
	}
	if w.last < 0 {
		return errCompactState
	}
	if count > uint64(len(r.b)/2) {
		return errCompactLog
	}
	n := int(count)
	switch {
	case n == 0 && l == nil && base == 0:
		// An empty log with base 0 encodes like none at all.
	case l == nil:
		l = new(winLog)
		fallthrough
	default:
		l.reset(n)
		l.base = base
	}
	// Entries come newest first: fill the ring backwards, with each entry's
	// units in cum, then turn the units into cumulative counts.
	next, total := w.last, uint64(0)
	for i := n - 1; i >= 0; i-- {
		dt, du := r.uvarint(), r.uvarint()
		if r.err != nil {
			return r.err
		}
		// Instants stay >= 0 and the units alive within maxInt64, as
		// decodeWindow requires.
		if next < 0 || dt > uint64(next) || du >= uint64(maxInt64)-total {
			return errCompactLog
		}
		t := next - int64(dt)
		total += du + 1
		*l.at(i) = winEntry{t: t, cum: du + 1}
		next = t - 1
	}
	if err := r.end(); err != nil {
		return err
	}
	cum := base
	for i := range n {
		e := l.at(i)
		cum += e.cum
		e.cum = cum
	}
	w.log = l
	*s = w
	return nil
}

// reset empties l and readies it for n entries written at indices 0 to
// n−1, with room to push one more without taking a block (so the Take that
// follows a decode takes none): it keeps as many of its blocks as that
// needs, takes the others from the pool and gives back those beyond. An
// empty log keeps its first block.
func (l *winLog) reset(n int) {
	l.head, l.n, l.base = 0, 0, 0
	need := min(len(l.blocks), 1)
	if n > 0 {
		need = n>>logBlockShift + 1
	}
	if len(l.blocks) >= need {
		l.truncate(need)
	}
	l.blocks = slices.Grow(l.blocks, need-len(l.blocks))
	for len(l.blocks) < need {
		l.blocks = append(l.blocks, blockPool.Get().(*winBlock))
	}
	l.ends()
	l.n = n
}
