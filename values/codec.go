package values

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/rlserver/rlserver/engine"
)

// The compact encodings the keyspace persists and replicates, as the
// limiter kinds' (engine.State's AppendCompact and DecodeCompact): a
// count, then each element as a uvarint length and its bytes; a sorted
// set's members each after their score's 8 bytes, in order. Decoding
// checks every length against what is left: bad bytes are an error
// wrapping engine.ErrCorrupt, never a panic.

func corrupt(what string) error { return fmt.Errorf("%w: %s", engine.ErrCorrupt, what) }

func appendBytes(b, v []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

// reader reads an encoding, remembering the first error.
type reader struct {
	b   []byte
	err error
}

func (r *reader) uvarint(what string) int {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 || v > uint64(len(r.b)-n) { // each element takes a byte at least
		r.err = corrupt(what)
		return 0
	}
	r.b = r.b[n:]
	return int(v)
}

func (r *reader) bytes(what string) []byte {
	n := r.uvarint(what)
	if r.err != nil {
		return nil
	}
	if n > len(r.b) {
		r.err = corrupt(what)
		return nil
	}
	v := append([]byte(nil), r.b[:n]...)
	r.b = r.b[n:]
	return v
}

func (r *reader) done() error {
	if r.err == nil && len(r.b) > 0 {
		r.err = corrupt("trailing bytes")
	}
	return r.err
}

// AppendCompact appends the list's encoding to b.
func (l *List) AppendCompact(b []byte, _ int64) []byte {
	b = binary.AppendUvarint(b, uint64(l.n))
	for i := 0; i < l.n; i++ {
		b = appendBytes(b, l.buf[l.at(i)])
	}
	return b
}

// DecodeCompact replaces the list with the one encoded in b.
func (l *List) DecodeCompact(b []byte, _ int64) error {
	r := reader{b: b}
	n := r.uvarint("list length")
	l.Reset()
	for i := 0; i < n && r.err == nil; i++ {
		l.PushBack(r.bytes("list element"))
	}
	return r.done()
}

// Size estimates the heap bytes the list holds.
func (l *List) Size() int { return 24*len(l.buf) + l.bytes }

// AppendCompact appends the sorted set's encoding to b, in order.
func (z *ZSet) AppendCompact(b []byte, _ int64) []byte {
	b = binary.AppendUvarint(b, uint64(z.Len()))
	z.each(func(m string, s float64) {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(s))
		b = appendBytes(b, []byte(m))
	})
	return b
}

// DecodeCompact replaces the sorted set with the one encoded in b.
func (z *ZSet) DecodeCompact(b []byte, _ int64) error {
	r := reader{b: b}
	n := r.uvarint("sorted set length")
	z.Reset()
	for i := 0; i < n && r.err == nil; i++ {
		if len(r.b) < 8 {
			r.err = corrupt("sorted set score")
			break
		}
		s := math.Float64frombits(binary.LittleEndian.Uint64(r.b))
		r.b = r.b[8:]
		m := r.bytes("sorted set member")
		if r.err == nil && math.IsNaN(s) {
			r.err = corrupt("sorted set score is NaN")
		}
		if r.err == nil && !z.Add(string(m), s) {
			r.err = corrupt("sorted set member twice")
		}
	}
	return r.done()
}

// Size estimates the heap bytes the sorted set holds: per member of a
// skip list the map entry, the node and its levels, and the member's
// bytes twice; per member of a small set its slot and bytes.
func (z *ZSet) Size() int {
	if z.sk != nil {
		return z.sk.n*120 + 2*z.sk.bytes
	}
	return 40*len(z.small) + z.bytes
}

// AppendCompact appends the hash's encoding to b, fields in their order.
func (h *Hash) AppendCompact(b []byte, _ int64) []byte {
	b = binary.AppendUvarint(b, uint64(len(h.fields)))
	for i, f := range h.fields {
		b = appendBytes(b, []byte(f))
		b = appendBytes(b, h.vals[i])
	}
	return b
}

// DecodeCompact replaces the hash with the one encoded in b.
func (h *Hash) DecodeCompact(b []byte, _ int64) error {
	r := reader{b: b}
	n := r.uvarint("hash length")
	h.Reset()
	for i := 0; i < n && r.err == nil; i++ {
		f := r.bytes("hash field")
		v := r.bytes("hash value")
		if r.err == nil && !h.Set(string(f), v) {
			r.err = corrupt("hash field twice")
		}
	}
	return r.done()
}

// Size estimates the heap bytes the hash holds.
func (h *Hash) Size() int { return 40*len(h.fields) + h.bytes }
