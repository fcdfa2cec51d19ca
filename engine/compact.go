package engine

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"
	"time"
)

// This file holds the compact codec, the one codec of every state (see
// State). The keyspace keeps a state inline in it, as bytes in
// pointer-free slabs, and decodes it into a reusable scratch state for each
// command; persistence writes the same bytes to disk as the payload of a
// version-2 record, with ref the record's expiry (see persist/doc.go). It
// is tuned for size: a typical key costs 6 to 12 bytes, plus its lease ids
// for a Concurrency.
//
// Because it is on disk it is a versioned format: an encoding written by
// one release must decode to the same state in every later one. It has no
// version byte of its own (the record's carries it), so any change to what
// it writes or accepts needs a new record version in persist, with this
// decoder kept for the old one, as v1.go keeps the version-1 format.
// TestGoldenCompact (testdata/golden-v2.txt) guards it.
//
// Three tricks make it small, all exact:
//
//   - Numbers are varints (encoding/binary), signed ones zigzag-coded.
//   - Parameters and the bucket backlog are "scaled": a value v is stored as
//     the varint m with v = m·1000^c, where c ∈ 0..3 sits in two bits of the
//     header byte and is the largest that divides v exactly. Limits and
//     periods are round numbers (1s = 1·1000³ ns, 60s = 60·1000³ ns, 10 000
//     = 10·1000), so each costs one byte instead of up to six.
//   - Instants are stored as the difference from where the key's expiry ref
//     says they usually are: a bucket was last updated ⌈backlog/rate⌉ before
//     it is full again, a FIXED window started one window before it resets,
//     a SLIDING one two windows before, a LOG's last admission is one
//     window before it empties, and the last lease a Concurrency took
//     expires at ref. For a key whose ref is its expiry the
//     difference is 0, one byte. Differences wrap around uint64, so any ref
//     round-trips any instant; a far ref only costs bytes.
//
// Every encoding is canonical: varints are minimal, each scale is the
// largest possible, and the fresh state of every kind is the empty encoding,
// so for a given ref DecodeCompact accepts exactly one encoding of each
// state and re-encoding what it accepted gives back the same bytes. It
// accepts exactly the states DecodeV1 accepts, so every state of a
// version-1 record can be held and written again compactly.
//
// Encodings are not self-delimiting (trailing bytes are an error, and the
// fresh state is no bytes): the caller stores the length. Because instants
// are relative to ref, a record must be decoded with the ref it was encoded
// with: a keyspace that changes a key's expiry (EXPIRE, PERSIST) without
// running a command must decode the record with the old expiry and encode it
// again with the new one.

var (
	_ State = (*GCRA)(nil)
	_ State = (*TokenBucket)(nil)
	_ State = (*LeakyBucket)(nil)
	_ State = (*Window)(nil)
	_ State = (*Concurrency)(nil)
)

// The errors of DecodeCompact, all wrapping ErrCorrupt. They are built once
// so that failing to decode allocates nothing either.
var (
	errCompactVarint   = fmt.Errorf("%w: compact: truncated, overlong or out-of-range number", ErrCorrupt)
	errCompactTrailing = fmt.Errorf("%w: compact: trailing bytes", ErrCorrupt)
	errCompactHeader   = fmt.Errorf("%w: compact: bad header byte", ErrCorrupt)
	errCompactFresh    = fmt.Errorf("%w: compact: a fresh state must be encoded as no bytes", ErrCorrupt)
	errCompactParams   = fmt.Errorf("%w: compact: invalid parameters", ErrCorrupt)
	errCompactState    = fmt.Errorf("%w: compact: state out of range", ErrCorrupt)
	errCompactLog      = fmt.Errorf("%w: compact: bad window log", ErrCorrupt)
	errCompactLeases   = fmt.Errorf("%w: compact: bad lease set", ErrCorrupt)
)

// pow1000 holds the scales a two-bit scale class selects, and maxScaled
// the largest mantissa of each that keeps the value within an int64.
var (
	pow1000   = [4]uint64{1, 1e3, 1e6, 1e9}
	maxScaled = [4]uint64{uint64(maxInt64), uint64(maxInt64) / 1e3, uint64(maxInt64) / 1e6, uint64(maxInt64) / 1e9}
)

// scaleDown returns m and the class c with v = m·1000^c, c as large as
// possible (0 for v = 0), so that every value has one encoding.
func scaleDown(v uint64) (m uint64, c byte) {
	switch {
	case v == 0 || v&7 != 0: // 1000 = 8·125: no multiple of 8, no multiple of 1000
		return v, 0
	case v%1e9 == 0:
		return v / 1e9, 3
	case v%1e6 == 0:
		return v / 1e6, 2
	case v%1e3 == 0:
		return v / 1e3, 1
	}
	return v, 0
}

// scaleDown128 is scaleDown for a 128-bit value.
func scaleDown128(x u128) (m u128, c byte) {
	if x.hi == 0 { // the usual case, without 128-bit divisions
		m, c := scaleDown(x.lo)
		return u128{0, m}, c
	}
	for c < 3 && !x.isZero() {
		q, r := x.divmod(1000)
		if r != 0 {
			break
		}
		x, c = q, c+1
	}
	return x, c
}

// appendU128 appends x as a varint of up to 19 bytes: the same bytes as
// binary.AppendUvarint when x fits 64 bits, as the backlog almost always does.
func appendU128(b []byte, x u128) []byte {
	for x.hi != 0 {
		b = append(b, byte(x.lo)|0x80)
		x = u128{x.hi >> 7, x.lo>>7 | x.hi<<57}
	}
	return binary.AppendUvarint(b, x.lo)
}

// appendDelta appends t − from as a zigzag varint. The difference wraps
// around uint64 so that it is exact for any two int64s, however far apart.
func appendDelta(b []byte, t, from int64) []byte {
	return binary.AppendVarint(b, int64(uint64(t)-uint64(from)))
}

// compactReader reads the numbers of a compact encoding. The first bad read
// records its error and makes every later read fail too, so decoders check
// once, at the end.
type compactReader struct {
	b   []byte
	err error
}

func (r *compactReader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
	r.b = nil
}

// uvarint reads a minimal unsigned varint (a longer encoding of the same
// value would make two encodings of one state).
func (r *compactReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 || n > 1 && r.b[n-1] == 0 {
		r.fail(errCompactVarint)
		return 0
	}
	r.b = r.b[n:]
	return v
}

// delta reads what appendDelta wrote and adds it back to from.
func (r *compactReader) delta(from int64) int64 {
	u := r.uvarint()
	return int64(uint64(from) + (u>>1 ^ -(u & 1)))
}

// int64 reads a uvarint that must fit an int64.
func (r *compactReader) int64() int64 {
	v := r.uvarint()
	if v > uint64(maxInt64) {
		r.fail(errCompactVarint)
		return 0
	}
	return int64(v)
}

// bytes reads the next n raw bytes.
func (r *compactReader) bytes(n uint64) []byte {
	if n > uint64(len(r.b)) {
		r.fail(errCompactVarint)
		return nil
	}
	b := r.b[:n]
	r.b = r.b[n:]
	return b
}

// scaled reads a value written as m·1000^c, checking that c was the largest
// scale and that the value fits an int64.
func (r *compactReader) scaled(c byte) int64 {
	m := r.uvarint()
	if m == 0 && c != 0 || m != 0 && c < 3 && m%1000 == 0 || m > maxScaled[c] {
		r.fail(errCompactVarint)
		return 0
	}
	return int64(m * pow1000[c])
}

// u128 reads a minimal varint written by appendU128.
func (r *compactReader) u128() u128 {
	var x u128
	for i, c := range r.b {
		if i == 18 && c > 3 { // bits beyond 128
			break
		}
		v, sh := uint64(c&0x7f), uint(7*i)
		if sh < 64 {
			x.lo |= v << sh
			if sh > 57 {
				x.hi |= v >> (64 - sh)
			}
		} else {
			x.hi |= v << (sh - 64)
		}
		if c < 0x80 {
			if i > 0 && c == 0 {
				break // not minimal
			}
			r.b = r.b[i+1:]
			return x
		}
	}
	r.fail(errCompactVarint)
	return u128{}
}

// scaled128 is scaled for the 128-bit backlog.
func (r *compactReader) scaled128(c byte) u128 {
	m := r.u128()
	if r.err != nil || m.isZero() && c == 0 {
		return m
	}
	if c < 3 {
		rem := m.lo % 1000
		if m.hi != 0 {
			_, rem = m.divmod(1000)
		}
		if rem == 0 { // includes m = 0
			r.fail(errCompactVarint)
			return u128{}
		}
		if c == 0 {
			return m
		}
	}
	h1, l1 := bits.Mul64(m.hi, pow1000[c])
	h2, lo := bits.Mul64(m.lo, pow1000[c])
	hi, carry := bits.Add64(l1, h2, 0)
	if m.isZero() || h1 != 0 || carry != 0 {
		r.fail(errCompactVarint)
		return u128{}
	}
	return u128{hi, lo}
}

// end returns the first error met, or errCompactTrailing if bytes are left.
func (r *compactReader) end() error {
	if r.err == nil && len(r.b) != 0 {
		return errCompactTrailing
	}
	return r.err
}

// Compact encoding of the bucket-shaped states (GCRA, TokenBucket,
// LeakyBucket). The fresh state (the zero value) is no bytes at all; any
// other is
//
//	header  one byte: bits 0-1, 2-3, 4-5 and 6-7 are the scale classes of
//	        the four scaled numbers that follow, in order
//	a       scaled: MaxBurst (GCRA) or Capacity
//	rate    scaled: Count (GCRA) or Rate
//	period  scaled: Period, ns
//	backlog scaled, a 128-bit varint: the backlog, token·ns
//	last    zigzag varint: last − (ref − ⌈backlog/rate⌉), wrapping
//
// A key's expiry is its last update plus ⌈backlog/rate⌉ (the ResetAfter of
// the call that stored it), so last costs one byte. While the parameters
// stay the same the backlog grows by n·period and drains by rate per ns,
// so it is a multiple of gcd(rate, period): for round rates and periods, a
// multiple of a power of 1000. TokenBucket's MaxWait is per request and is
// never stored.

// bucketLastRef is where a bucket's last update is expected to be, given
// its expiry ref: ⌈backlog/rate⌉ earlier.
func bucketLastRef(ref int64, s u128, rate int64) int64 {
	if rate <= 0 { // only the parameterless (fresh) state
		return ref
	}
	var d uint64
	if s.hi == 0 { // durCeil with one division instead of two
		d = s.lo / uint64(rate)
		if s.lo%uint64(rate) != 0 {
			d++
		}
		d = min(d, uint64(maxInt64))
	} else {
		d = uint64(durCeil(s, rate))
	}
	return int64(uint64(ref) - d)
}

func appendBucketCompact(b []byte, ref, a, rate, period int64, bk backlog) []byte {
	if a == 0 && rate == 0 && period == 0 && bk == (backlog{}) {
		return b
	}
	ma, ca := scaleDown(uint64(a))
	mr, cr := scaleDown(uint64(rate))
	mp, cp := scaleDown(uint64(period))
	ms, cs := scaleDown128(bk.s)
	b = append(b, ca|cr<<2|cp<<4|cs<<6)
	b = binary.AppendUvarint(b, ma)
	b = binary.AppendUvarint(b, mr)
	b = binary.AppendUvarint(b, mp)
	b = appendU128(b, ms)
	return appendDelta(b, bk.last, bucketLastRef(ref, bk.s, rate))
}

// decodeBucketCompact reads what appendBucketCompact wrote. The caller
// validates the parameters, like decodeGCRA and friends do.
func decodeBucketCompact(b []byte, ref int64) (a, rate, period int64, bk backlog, err error) {
	if len(b) == 0 {
		return 0, 0, 0, backlog{}, nil
	}
	h := b[0]
	r := compactReader{b: b[1:]}
	a = r.scaled(h & 3)
	rate = r.scaled(h >> 2 & 3)
	period = r.scaled(h >> 4 & 3)
	bk.s = r.scaled128(h >> 6)
	bk.last = r.delta(bucketLastRef(ref, bk.s, rate))
	if err := r.end(); err != nil {
		return 0, 0, 0, backlog{}, err
	}
	if a == 0 && rate == 0 && period == 0 && bk == (backlog{}) {
		return 0, 0, 0, backlog{}, errCompactFresh
	}
	return a, rate, period, bk, nil
}

// AppendCompact appends the compact encoding of s (see State and the
// bucket layout above) to b.
func (s *GCRA) AppendCompact(b []byte, ref int64) []byte {
	return appendBucketCompact(b, ref, s.p.MaxBurst, s.p.Count, int64(s.p.Period), s.b)
}

// DecodeCompact replaces s with the state AppendCompact encoded in b with
// the same ref. It accepts the states decodeGCRA does and allocates nothing;
// on error s is left unchanged.
func (s *GCRA) DecodeCompact(b []byte, ref int64) error {
	a, rate, period, bk, err := decodeBucketCompact(b, ref)
	if err != nil {
		return err
	}
	p := GCRAParams{MaxBurst: a, Count: rate, Period: time.Duration(period)}
	if (p != GCRAParams{} || !bk.s.isZero()) && p.Validate() != nil {
		return errCompactParams
	}
	s.p, s.b = p, bk
	return nil
}

// AppendCompact appends the compact encoding of s (see State and the
// bucket layout above) to b.
func (s *TokenBucket) AppendCompact(b []byte, ref int64) []byte {
	return appendBucketCompact(b, ref, s.p.Capacity, s.p.Rate, int64(s.p.Period), s.b)
}

// DecodeCompact replaces s with the state AppendCompact encoded in b with
// the same ref. It accepts the states decodeTokenBucket does and allocates
// nothing; on error s is left unchanged.
func (s *TokenBucket) DecodeCompact(b []byte, ref int64) error {
	a, rate, period, bk, err := decodeBucketCompact(b, ref)
	if err != nil {
		return err
	}
	p := TokenBucketParams{Capacity: a, Rate: rate, Period: time.Duration(period)}
	if (p != TokenBucketParams{} || !bk.s.isZero()) && p.Validate() != nil {
		return errCompactParams
	}
	s.p, s.b = p, bk
	return nil
}

// AppendCompact appends the compact encoding of s (see State and the
// bucket layout above) to b.
func (s *LeakyBucket) AppendCompact(b []byte, ref int64) []byte {
	return appendBucketCompact(b, ref, s.p.Capacity, s.p.Rate, int64(s.p.Period), s.b)
}

// DecodeCompact replaces s with the state AppendCompact encoded in b with
// the same ref. It accepts the states decodeLeakyBucket does and allocates
// nothing; on error s is left unchanged.
func (s *LeakyBucket) DecodeCompact(b []byte, ref int64) error {
	a, rate, period, bk, err := decodeBucketCompact(b, ref)
	if err != nil {
		return err
	}
	p := LeakyBucketParams{Capacity: a, Rate: rate, Period: time.Duration(period)}
	if (p != LeakyBucketParams{} || !bk.s.isZero()) && p.Validate() != nil {
		return errCompactParams
	}
	s.p, s.b = p, bk
	return nil
}

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

// Compact encoding of a Concurrency. The fresh state (the zero value: no
// parameters, no last change, no lease) is no bytes at all; any other is
//
//	header  one byte: bits 0-1 and 2-3 the scale classes of limit and
//	        lease, bit 4 set when some id is not MaxLeaseIDLen bytes long
//	        (each lease then stores its id's length), bits 5-7 zero
//	limit   scaled
//	lease   scaled, ns
//	last    zigzag varint: last − (ref − lease), wrapping: a key expires
//	        when its last lease does, and the lease taken last is usually
//	        that one (leases of one key tend to be of one length)
//	count   varint: the number of leases
//	leases  latest expiry first (the reverse of the slice), each
//	        dt      the latest: zigzag varint expiry − ref, wrapping; the
//	                others: varint t' − expiry, t' that of the lease after
//	                it (expiries never decrease)
//	        du      varint: units − 1 (a lease holds at least one)
//	        idLen   varint, only with header bit 4: the id's length
//	        id      the id's bytes
//
// For a key whose ref is its expiry, the lease that expires last costs one
// byte of expiry, and leases of one length taken in a burst cost little
// more. The ids, random and server-made, cannot be shortened: a key with
// one lease of one unit costs 7 bytes plus its id.

// concIDLens is bit 4 of the header: ids are not all MaxLeaseIDLen long.
const concIDLens = 1 << 4

// AppendCompact appends the compact encoding of s (see State and the
// concurrency layout above) to b.
func (s *Concurrency) AppendCompact(b []byte, ref int64) []byte {
	if s.limit == 0 && s.lease == 0 && s.last == 0 && len(s.leases) == 0 {
		return b
	}
	ml, cl := scaleDown(uint64(s.limit))
	md, cd := scaleDown(uint64(s.lease))
	h := cl | cd<<2
	for i := range s.leases {
		if s.leases[i].idLen != MaxLeaseIDLen {
			h |= concIDLens
			break
		}
	}
	b = append(b, h)
	b = binary.AppendUvarint(b, ml)
	b = binary.AppendUvarint(b, md)
	b = appendDelta(b, s.last, int64(uint64(ref)-uint64(s.lease)))
	b = binary.AppendUvarint(b, uint64(len(s.leases)))
	for i := len(s.leases) - 1; i >= 0; i-- {
		l := &s.leases[i]
		if i == len(s.leases)-1 {
			b = appendDelta(b, l.expiry, ref)
		} else {
			b = binary.AppendUvarint(b, uint64(s.leases[i+1].expiry)-uint64(l.expiry))
		}
		b = binary.AppendUvarint(b, uint64(l.units)-1)
		if h&concIDLens != 0 {
			b = append(b, l.idLen) // a varint: at most 16
		}
		b = append(b, l.idBytes()...)
	}
	return b
}

// DecodeCompact replaces s with the state AppendCompact encoded in b with
// the same ref. It accepts the states decodeConcurrency does. It reuses s's
// lease slice whenever its capacity holds the leases, so it allocates only
// when the slice must grow (then leaving room for one more lease, as the
// Acquire that usually follows takes). On error s is left fresh, its lease
// slice kept.
func (s *Concurrency) DecodeCompact(b []byte, ref int64) error {
	if err := s.decodeCompact(b, ref); err != nil {
		s.Reset()
		return err
	}
	return nil
}

func (s *Concurrency) decodeCompact(b []byte, ref int64) error {
	leases := s.leases[:0]
	*s = Concurrency{leases: leases}
	if len(b) == 0 {
		return nil
	}
	h := b[0]
	if h>>5 != 0 {
		return errCompactHeader
	}
	r := compactReader{b: b[1:]}
	s.limit = r.scaled(h & 3)
	s.lease = r.scaled(h >> 2 & 3)
	s.last = r.delta(int64(uint64(ref) - uint64(s.lease)))
	count := r.uvarint()
	if r.err != nil {
		return r.err
	}
	if s.last < 0 {
		return errCompactState
	}
	if count == 0 {
		if h&concIDLens != 0 {
			return errCompactHeader // no id, so none of another length
		}
		if err := r.end(); err != nil {
			return err
		}
		if s.limit == 0 && s.lease == 0 && s.last == 0 {
			return errCompactFresh
		}
		return nil
	}
	// Each lease takes at least three bytes (dt, du, idLen), or
	// MaxLeaseIDLen+2 when the ids are all that long: this bounds what a
	// bad count allocates.
	least := uint64(MaxLeaseIDLen + 2)
	if h&concIDLens != 0 {
		least = 3
	}
	if count > uint64(len(r.b))/least {
		return errCompactLeases
	}
	n := int(count)
	if cap(leases) >= n {
		leases = leases[:n]
	} else {
		leases = make([]lease, n, n+1)
	}
	// Leases come latest first: fill the slice backwards.
	next, held, short := int64(0), int64(0), false
	for i := n - 1; i >= 0; i-- {
		var expiry int64
		if i == n-1 {
			expiry = r.delta(ref)
		} else if dt := r.uvarint(); dt <= uint64(next) {
			expiry = next - int64(dt)
		} else {
			r.fail(errCompactLeases) // an expiry before 0
		}
		du := r.uvarint()
		idLen := uint64(MaxLeaseIDLen)
		if h&concIDLens != 0 {
			idLen = r.uvarint()
		}
		if idLen > MaxLeaseIDLen {
			r.fail(errCompactLeases)
		}
		id := r.bytes(idLen)
		if r.err != nil {
			return r.err
		}
		// Expiries stay >= 0 and the units within maxInt64, as
		// decodeConcurrency requires.
		if expiry < 0 || du >= uint64(maxInt64-held) {
			return errCompactLeases
		}
		l := lease{expiry: expiry, units: int64(du) + 1, idLen: uint8(idLen)}
		copy(l.id[:], id)
		leases[i] = l
		held += l.units
		short = short || idLen != MaxLeaseIDLen
		next = expiry
	}
	s.leases, s.held = leases, held
	if h&concIDLens != 0 && !short {
		return errCompactHeader // the lengths were all MaxLeaseIDLen
	}
	return r.end()
}
