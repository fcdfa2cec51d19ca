package shard

import (
	"encoding/binary"
	"math/bits"
)

// Records. Every key is one record of bytes kept in a shard's slabs, never a
// Go object of its own: the garbage collector sees a few large pointer-free
// pages instead of a million small objects, and a lookup touches the index
// and one record.
//
//	[0]      header: kind (low 4 bits) | flagBoxed | flagDirty; 0 marks a free slot
//	[1:9]    expiry, absolute server-clock ns, little-endian
//	uvarint  key length
//	uvarint  payload length
//	key
//	payload  the state's compact encoding (engine.State.AppendCompact) relative to the expiry,
//	         or (flagBoxed) a uvarint index into the shard's boxes
const (
	flagBoxed = 0x10 // payload names a box: the state lives as a Go object
	flagDirty = 0x20 // in the shard's dirty list, not yet drained
	kindMask  = 0x0f
	recFixed  = 9 // header and expiry
)

// recordLen is the size of a record holding key and payload.
func recordLen(key, payload int) int {
	return recFixed + uvarintLen(uint64(key)) + uvarintLen(uint64(payload)) + key + payload
}

// putRecord writes a record into dst, which must be recordLen bytes or more.
func putRecord(dst []byte, hdr byte, exp int64, key, payload []byte) {
	dst[0] = hdr
	binary.LittleEndian.PutUint64(dst[1:9], uint64(exp))
	n := recFixed
	n += binary.PutUvarint(dst[n:], uint64(len(key)))
	n += binary.PutUvarint(dst[n:], uint64(len(payload)))
	n += copy(dst[n:], key)
	copy(dst[n:], payload)
}

func recExp(rec []byte) int64 { return int64(binary.LittleEndian.Uint64(rec[1:9])) }

func setRecExp(rec []byte, exp int64) { binary.LittleEndian.PutUint64(rec[1:9], uint64(exp)) }

// recSplit returns a record's key and payload (aliasing the record).
func recSplit(rec []byte) (key, payload []byte) {
	n := recFixed
	var kl, pl uint64
	if rec[n] < 0x80 && rec[n+1] < 0x80 { // both lengths below 128: the common case
		kl, pl = uint64(rec[n]), uint64(rec[n+1])
		n += 2
	} else {
		var w int
		kl, w = binary.Uvarint(rec[n:])
		n += w
		pl, w = binary.Uvarint(rec[n:])
		n += w
	}
	key = rec[n : n+int(kl)]
	return key, rec[n+int(kl) : n+int(kl)+int(pl)]
}

func uvarintLen(v uint64) int { return (bits.Len64(v|1) + 6) / 7 }

// A ref names a record: its size class in the top bits, its slot below. 0 is
// no record (class 0 does not exist).
type ref = uint32

const (
	classShift = 27
	slotMask   = 1<<classShift - 1
	bigClass   = 31 // records over maxSlab bytes: one Go allocation each
	maxSlab    = 512
	pageSlots  = 256 // slots per slab page
)

// classFor returns the size class of an n-byte record: 8-byte steps to 128,
// 16-byte steps to 256, 64-byte steps to 512, so a record wastes little of
// its slot (the memory target is bytes per key).
func classFor(n int) uint32 {
	switch {
	case n <= 128:
		return uint32(max((n+7)>>3-1, 1))
	case n <= 256:
		return uint32(15 + (n-128+15)>>4)
	case n <= maxSlab:
		return uint32(23 + (n-256+63)>>6)
	}
	return bigClass
}

// classSize is the slot size of each slab class.
var classSize = func() (s [bigClass]int) {
	for c := 1; c < bigClass; c++ {
		switch {
		case c <= 15:
			s[c] = (c + 1) * 8
		case c <= 23:
			s[c] = 128 + (c-15)*16
		case c <= 27:
			s[c] = 256 + (c-23)*64
		}
	}
	return s
}()

// slab holds the records of one size class in pages of pageSlots slots;
// freed slots are reused first. Pages are returned only by reset (FLUSHDB).
type slab struct {
	pages [][]byte
	free  []uint32
	next  uint32 // slots handed out so far
}

// slabs are a shard's record storage.
type slabs struct {
	class [bigClass]slab
	big   [][]byte // records over maxSlab bytes
	bfree []uint32
}

// alloc returns a ref for an n-byte record and its bytes (zeroed, at least
// n long).
func (s *slabs) alloc(n int) (ref, []byte) {
	c := classFor(n)
	if c == bigClass {
		b := make([]byte, n)
		if k := len(s.bfree); k > 0 {
			i := s.bfree[k-1]
			s.bfree = s.bfree[:k-1]
			s.big[i] = b
			return bigClass<<classShift | i, b
		}
		s.big = append(s.big, b)
		return bigClass<<classShift | uint32(len(s.big)-1), b
	}
	sl := &s.class[c]
	var i uint32
	if k := len(sl.free); k > 0 {
		i = sl.free[k-1]
		sl.free = sl.free[:k-1]
	} else {
		i = sl.next
		if i > slotMask {
			panic("shard: slab class full")
		}
		if int(i/pageSlots) == len(sl.pages) {
			sl.pages = append(sl.pages, make([]byte, pageSlots*classSize[c]))
		}
		sl.next++
	}
	r := c<<classShift | i
	b := s.get(r)
	clear(b)
	return r, b
}

// get returns the bytes of record r: its whole slot.
func (s *slabs) get(r ref) []byte {
	c, i := r>>classShift, r&slotMask
	if c == bigClass {
		return s.big[i]
	}
	size := classSize[c]
	off := int(i%pageSlots) * size
	return s.class[c].pages[i/pageSlots][off : off+size : off+size]
}

// release frees record r's slot.
func (s *slabs) release(r ref) {
	c, i := r>>classShift, r&slotMask
	if c == bigClass {
		s.big[i] = nil
		s.bfree = append(s.bfree, i)
		return
	}
	s.get(r)[0] = 0 // a freed slot reads as no record (see DrainChanges)
	s.class[c].free = append(s.class[c].free, i)
}

// slotBytes is the memory record r occupies.
func (s *slabs) slotBytes(r ref) int {
	c := r >> classShift
	if c == bigClass {
		return cap(s.big[r&slotMask])
	}
	return classSize[c]
}

func (s *slabs) reset() { *s = slabs{} }

// valid reports whether r names a slot that exists (freed or not): refs in
// the dirty list may outlive their record.
func (s *slabs) valid(r ref) bool {
	c, i := r>>classShift, r&slotMask
	if c == bigClass {
		return int(i) < len(s.big) && s.big[i] != nil
	}
	return c > 0 && i < s.class[c].next
}
