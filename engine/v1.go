package engine

import (
	"encoding/binary"
	"fmt"
	"time"
)

// This file is the version-1 state format, frozen: the payload of the
// version-1 records of persist (see persist/doc.go). Nothing writes it any
// more; DecodeV1 reads it so that stores written by older releases still
// restore. Never change what it accepts or how it reads it: the golden
// tests (testdata/golden-v1.txt, persist/testdata/golden-v1) guard it. The
// current disk format is the compact encoding (compact.go).
//
// A version-1 payload is the kind's own version byte (1) followed by a
// fixed-width little-endian layout, given below for each kind. DecodeV1
// accepts exactly the states DecodeCompact accepts, so every version-1
// state can be held and written again in the compact form.

// DecodeV1 restores a state of kind k from its version-1 encoding (the
// kind byte is stored beside it by the caller). Unknown kinds and
// unreadable bytes return an error wrapping ErrCorrupt.
func DecodeV1(k Kind, b []byte) (State, error) {
	var (
		st  State
		err error
	)
	switch k {
	case KindThrottle:
		st, err = decodeGCRA(b)
	case KindTokenBucket:
		st, err = decodeTokenBucket(b)
	case KindLeakyBucket:
		st, err = decodeLeakyBucket(b)
	case KindWindow:
		st, err = decodeWindow(b)
	case KindConcurrency:
		st, err = decodeConcurrency(b)
	default:
		return nil, fmt.Errorf("%w: unknown kind %d", ErrCorrupt, k)
	}
	if err != nil {
		return nil, err
	}
	return st, nil
}

// Encoding of a GCRA, TokenBucket or LeakyBucket, version 1: the version
// byte (1), then six 8-byte little-endian words: MaxBurst (GCRA) or
// Capacity, Count or Rate, Period (ns), the last update time (ns) and the
// backlog (high and low word).
const (
	bucketVersion    = 1
	bucketEncodedLen = 1 + 6*8
)

// readBucketWords decodes exactly len(words) words after the version byte.
func readBucketWords(b []byte, version byte, words []int64) error {
	if len(b) != 1+8*len(words) || b[0] != version {
		return ErrCorrupt
	}
	for i := range words {
		words[i] = int64(binary.LittleEndian.Uint64(b[1+8*i:]))
	}
	return nil
}

// decodeGCRA decodes a version-1 state, returning ErrCorrupt for anything
// else.
func decodeGCRA(b []byte) (*GCRA, error) {
	var w [6]int64
	if err := readBucketWords(b, bucketVersion, w[:]); err != nil {
		return nil, err
	}
	s := &GCRA{
		p: GCRAParams{MaxBurst: w[0], Count: w[1], Period: time.Duration(w[2])},
		b: backlog{last: w[3], s: u128{uint64(w[4]), uint64(w[5])}},
	}
	if (s.p != GCRAParams{} || !s.b.s.isZero()) && s.p.Validate() != nil {
		return nil, ErrCorrupt
	}
	return s, nil
}

// decodeTokenBucket decodes a version-1 state, returning ErrCorrupt for anything
// else.
func decodeTokenBucket(b []byte) (*TokenBucket, error) {
	var w [6]int64
	if err := readBucketWords(b, bucketVersion, w[:]); err != nil {
		return nil, err
	}
	s := &TokenBucket{
		p: TokenBucketParams{Capacity: w[0], Rate: w[1], Period: time.Duration(w[2])},
		b: backlog{last: w[3], s: u128{uint64(w[4]), uint64(w[5])}},
	}
	if (s.p != TokenBucketParams{} || !s.b.s.isZero()) && s.p.Validate() != nil {
		return nil, ErrCorrupt
	}
	return s, nil
}

// decodeLeakyBucket decodes a version-1 state, returning ErrCorrupt for anything
// else.
func decodeLeakyBucket(b []byte) (*LeakyBucket, error) {
	var w [6]int64
	if err := readBucketWords(b, bucketVersion, w[:]); err != nil {
		return nil, err
	}
	s := &LeakyBucket{
		p: LeakyBucketParams{Capacity: w[0], Rate: w[1], Period: time.Duration(w[2])},
		b: backlog{last: w[3], s: u128{uint64(w[4]), uint64(w[5])}},
	}
	if (s.p != LeakyBucketParams{} || !s.b.s.isZero()) && s.p.Validate() != nil {
		return nil, ErrCorrupt
	}
	return s, nil
}

// Encoding of a Window, version 1, little-endian:
//
//	[0]      version (1)
//	[1]      mode (0 fresh: nothing follows)
//	[2:10]   limit
//	[10:18]  window, ns
//	[18:26]  last, ns
//	FIXED, SLIDING:
//	[26:34]  start, ns
//	[34:42]  cur
//	[42:50]  prev
//	LOG:
//	[26:34]  base (cumulative units before the first entry)
//	[34:38]  number of entries, uint32
//	[38:]    entries, oldest first: instant ns (8), cumulative units (8)
const (
	windowVersion    = 1
	windowHeaderLen  = 26
	windowCounterLen = windowHeaderLen + 24
	windowLogLen     = windowHeaderLen + 12 // before the entries
	winEntryLen      = 16
)

// decodeWindow restores a version-1 Window. It returns
// ErrCorrupt for input it cannot read or that no Window encodes (negative
// counts, a log out of order or holding more than limit units).
func decodeWindow(b []byte) (*Window, error) {
	if len(b) < 2 || b[0] != windowVersion {
		return nil, ErrCorrupt
	}
	s := &Window{mode: WindowMode(b[1])}
	if s.mode == 0 {
		if len(b) != 2 {
			return nil, ErrCorrupt
		}
		return s, nil
	}
	if s.mode > WindowLog || len(b) < windowHeaderLen {
		return nil, ErrCorrupt
	}
	le := binary.LittleEndian
	word := func(i int) int64 { return int64(le.Uint64(b[i:])) }
	s.limit, s.window, s.last = word(2), word(10), word(18)
	if s.limit <= 0 || s.window <= 0 || s.last < 0 {
		return nil, ErrCorrupt
	}
	if s.mode != WindowLog {
		if len(b) != windowCounterLen {
			return nil, ErrCorrupt
		}
		s.start, s.cur, s.prev = word(26), word(34), word(42)
		if s.start < 0 || s.start > s.last || s.cur < 0 || s.prev < 0 ||
			s.mode == WindowFixed && s.prev != 0 {
			return nil, ErrCorrupt
		}
		return s, nil
	}
	if len(b) < windowLogLen {
		return nil, ErrCorrupt
	}
	base := le.Uint64(b[26:])
	count := uint64(le.Uint32(b[34:]))
	if uint64(len(b)-windowLogLen) != count*winEntryLen {
		return nil, ErrCorrupt
	}
	s.log = new(winLog)
	l := s.log
	l.reset(int(count))
	l.base = base
	prevT, prevCum := int64(-1), base
	for i := 0; i < int(count); i++ {
		o := windowLogLen + i*winEntryLen
		e := winEntry{t: word(o), cum: le.Uint64(b[o+8:])}
		// Instants strictly increase, each entry holds >= 1 unit, and the
		// units held never exceed maxInt64.
		if e.t <= prevT || e.t > s.last || e.cum-base <= prevCum-base || e.cum-base > uint64(maxInt64) {
			return nil, ErrCorrupt
		}
		*l.at(i) = e
		prevT, prevCum = e.t, e.cum
	}
	return s, nil
}

// Encoding of a Concurrency, version 1, little-endian:
//
//	[0]      version (1)
//	[1:9]    limit
//	[9:17]   lease, ns
//	[17:25]  last, ns
//	[25:29]  number of leases, uint32
//	[29:]    leases: expiry ns (8), units (8), id length uint32 (4), id
//
// Leases are stored in expiry order, earliest first (decoding checks it).
// Expired leases are stored until pruned: they are invisible either way. An
// id is at most MaxLeaseIDLen bytes (decoding checks it too); its length
// keeps the four bytes version 1 gave it.
const (
	concurrencyVersion   = 1
	concurrencyHeaderLen = 29
	leaseFixedLen        = 20
)

// decodeConcurrency restores a version-1 Concurrency. It
// returns ErrCorrupt for input it cannot read or that no Concurrency encodes,
// an id longer than MaxLeaseIDLen included.
func decodeConcurrency(b []byte) (*Concurrency, error) {
	if len(b) < concurrencyHeaderLen || b[0] != concurrencyVersion {
		return nil, ErrCorrupt
	}
	le := binary.LittleEndian
	s := &Concurrency{
		limit: int64(le.Uint64(b[1:])),
		lease: int64(le.Uint64(b[9:])),
		last:  int64(le.Uint64(b[17:])),
	}
	count := uint64(le.Uint32(b[25:]))
	b = b[concurrencyHeaderLen:]
	if s.limit < 0 || s.lease < 0 || s.last < 0 || count > uint64(len(b)/leaseFixedLen) {
		return nil, ErrCorrupt
	}
	if count > 0 {
		s.leases = make([]lease, 0, count)
	}
	for range count {
		if len(b) < leaseFixedLen {
			return nil, ErrCorrupt
		}
		expiry, units := int64(le.Uint64(b)), int64(le.Uint64(b[8:]))
		idLen := uint64(le.Uint32(b[16:]))
		b = b[leaseFixedLen:]
		if units <= 0 || expiry < 0 || idLen > MaxLeaseIDLen || idLen > uint64(len(b)) {
			return nil, ErrCorrupt
		}
		l := lease{expiry: expiry, units: units, idLen: uint8(idLen)}
		copy(l.id[:], b[:idLen])
		b = b[idLen:]
		if len(s.leases) > 0 && l.expiry < s.leases[len(s.leases)-1].expiry {
			return nil, ErrCorrupt // leases are stored in expiry order
		}
		if l.units > maxInt64-s.held {
			return nil, ErrCorrupt // more units than any limit admits
		}
		s.leases = append(s.leases, l)
		s.held += l.units
	}
	if len(b) != 0 {
		return nil, ErrCorrupt
	}
	return s, nil
}
