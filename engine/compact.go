package engine

import (
	"encoding/binary"
	"fmt"
	"math/bits"
)

// This file holds what the compact codec, the one codec of every state (see
// State), shares across kinds: its numbers, its reader and the bucket
// layout of the three bucket kinds. Each kind's AppendCompact and
// DecodeCompact sit in its algorithm's file, after the algorithm.
//
// The keyspace keeps a state inline in this codec, as bytes in pointer-free
// slabs, and decodes it into a reusable scratch state for each command;
// persistence writes the same bytes to disk as the payload of a version-2
// record, with ref the record's expiry (see persist/doc.go). It is tuned
// for size: a typical key costs 6 to 12 bytes, plus its lease ids for a
// Concurrency.
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
