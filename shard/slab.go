package shard

import (
	"encoding/binary"
	"math/bits"

	"github.com/rlserver/rlserver/engine"
)

// Records. Every key is one record of bytes kept in a shard's slabs, never a
// Go object of its own: the garbage collector sees a few large pointer-free
// pages instead of a million small objects, and a lookup touches the index
// and one record.
//
//	[0]      header: kind (low 4 bits) | flagBoxed | flagDirty; 0 marks a free slot
//	[1:9]    expiry, absolute server-clock ns, little-endian
//	[9:12]   access stamp, 24 bits little-endian, as Redis's object lru field
//	         (see access.go): the last access's second, or under an LFU
//	         policy the last decrement's minute and a frequency counter
//	uvarint  key length
//	uvarint  payload length
//	key
//	payload  the state's compact encoding (engine.State.AppendCompact) relative to the expiry,
//	         or (flagBoxed) a uvarint index into the shard's boxes
const (
	flagBoxed = 0x10                // payload names a box: the state lives as a Go object
	flagDirty = 0x20                // in the shard's dirty list, not yet drained
	kindMask  = engine.MaxKinds - 1 // engine.MaxKinds is a power of two, at most flagBoxed
	recFixed  = 12                  // header, expiry and access stamp
)

// The kind must fit below flagBoxed (a larger engine.MaxKinds fails here).
const _ = uint8(flagBoxed - engine.MaxKinds)

// recordLen is the size of a record holding key and payload.
func recordLen(key, payload int) int {
	return recFixed + uvarintLen(uint64(key)) + uvarintLen(uint64(payload)) + key + payload
}

// putRecord writes a record into dst, which must be recordLen bytes or more.
func putRecord(dst []byte, hdr byte, exp int64, acc uint32, key, payload []byte) {
	dst[0] = hdr
	binary.LittleEndian.PutUint64(dst[1:9], uint64(exp))
	setRecAccess(dst, acc)
	n := recFixed
	n += binary.PutUvarint(dst[n:], uint64(len(key)))
	n += binary.PutUvarint(dst[n:], uint64(len(payload)))
	n += copy(dst[n:], key)
	copy(dst[n:], payload)
}

func recExp(rec []byte) int64 { return int64(binary.LittleEndian.Uint64(rec[1:9])) }

func setRecExp(rec []byte, exp int64) { binary.LittleEndian.PutUint64(rec[1:9], uint64(exp)) }

// recAccess returns a record's access stamp.
func recAccess(rec []byte) uint32 { return getAcc((*[3]byte)(rec[9:recFixed])) }

// setRecAccess writes a record's access stamp (its low 24 bits).
func setRecAccess(rec []byte, a uint32) { putAcc((*[3]byte)(rec[9:recFixed]), a) }

// getAcc and putAcc read and write an access stamp where it lies in a
// record (Found.acc).
func getAcc(p *[3]byte) uint32 { return uint32(p[0]) | uint32(p[1])<<8 | uint32(p[2])<<16 }

func putAcc(p *[3]byte, a uint32) { p[0], p[1], p[2] = byte(a), byte(a>>8), byte(a>>16) }

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

// classSize is the slot size of each size class (0: class unused). A page
// is pageSlots slots, one Go allocation, and the sizes are chosen so that
// a page fills a size class of Go's allocator exactly (up to 32 KB; a
// larger page is a whole number of 8 KB runtime pages): a 28-byte slot
// would take a 7168-byte page the allocator rounds up to 8192, as costly
// as 32 bytes, where 27 bytes make a 6912-byte page and cost 27. The
// steps are finest where most records are: a small counter or limiter
// key is a 12-byte header and stamp, its key and a few bytes of state.
var classSize = func() (s [bigClass]int) {
	sizes := []int{16, 19, 21, 24, 27, 32, 37, 40, 48, 53, 56, 64, 72, 80, 85, 96, 112, 128,
		160, 192, 224, 256, 288, 320, 384, 448, maxSlab}
	copy(s[1:], sizes)
	return s
}()

// classOf is the size class of every record length up to maxSlab.
var classOf = func() (t [maxSlab + 1]uint8) {
	c := 1
	for n := range t {
		for classSize[c] < n {
			c++
		}
		t[n] = uint8(c)
	}
	return t
}()

// classFor returns the size class of an n-byte record: the smallest whose
// slots hold it, or bigClass.
func classFor(n int) uint32 {
	if uint(n) <= maxSlab {
		return uint32(classOf[n])
	}
	return bigClass
}

// slab holds the records of one size class in pages of pageSlots slots.
// A record goes into the page on top of the stack of pages with a free
// slot, at its lowest free slot. A page left empty goes back to the
// collector, but for one per class, kept as a spare against a record that
// comes and goes at a page's boundary until a trim finds it unused since
// the last; a page's number is reused for the next new page. Keys that
// move through size classes (a LOG window growing until it is boxed) so
// leave no pages behind in the classes they no longer use.
type slab struct {
	pages   [][]byte   // by number, pageSlots slots each; nil: given back
	meta    []pageMeta // by number: what allocation needs to know
	partial []uint32   // pages with a free slot
	gone    []uint32   // numbers of pages given back
	spare   int32      // the empty page kept, plus 1 (0: none)
	idle    bool       // the spare was kept at the last trim already
}

// pageMeta is a page's state for alloc and release, apart from pages so
// that reading records (sampling for eviction) walks the smaller array.
type pageMeta struct {
	free [pageSlots / 64]uint64 // a bit per free slot
	at   int32                  // its place in partial, or -1
	used uint16                 // records held
}

// slabs are a shard's record storage.
type slabs struct {
	class [bigClass]slab
	live  [bigClass]int32 // records held per class, together for eviction's draw
	big   [][]byte        // records over maxSlab bytes
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
	if len(sl.partial) == 0 {
		sl.newPage(c)
	}
	p := sl.partial[len(sl.partial)-1]
	pg := &sl.meta[p]
	w := 0
	for pg.free[w] == 0 {
		w++
	}
	b := w*64 + bits.TrailingZeros64(pg.free[w])
	pg.free[w] &^= 1 << (b % 64)
	if pg.used == 0 && sl.spare == int32(p)+1 {
		sl.spare = 0
	}
	if pg.used++; pg.used == pageSlots {
		sl.unlist(p)
	}
	s.live[c]++
	r := c<<classShift | p*pageSlots + uint32(b)
	rec := s.get(r)
	clear(rec)
	return r, rec
}

// newPage adds an empty page to the class's partial pages.
func (sl *slab) newPage(c uint32) {
	var p uint32
	if k := len(sl.gone); k > 0 {
		p = sl.gone[k-1]
		sl.gone = sl.gone[:k-1]
	} else {
		p = uint32(len(sl.pages))
		if uint64(p+1)*pageSlots > slotMask+1 {
			panic("shard: slab class full")
		}
		sl.pages = append(sl.pages, nil)
		sl.meta = append(sl.meta, pageMeta{})
	}
	sl.pages[p] = make([]byte, pageSlots*classSize[c])
	sl.meta[p] = pageMeta{at: int32(len(sl.partial))}
	for w := range sl.meta[p].free {
		sl.meta[p].free[w] = ^uint64(0)
	}
	sl.partial = append(sl.partial, p)
}

// unlist removes page p from the partial pages.
func (sl *slab) unlist(p uint32) {
	i, last := sl.meta[p].at, sl.partial[len(sl.partial)-1]
	sl.partial[i], sl.meta[last].at = last, i
	sl.partial = sl.partial[:len(sl.partial)-1]
	sl.meta[p].at = -1
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
	sl := &s.class[c]
	p := i / pageSlots
	pg := &sl.meta[p]
	pg.free[i%pageSlots/64] |= 1 << (i % 64)
	if pg.used == pageSlots {
		pg.at = int32(len(sl.partial))
		sl.partial = append(sl.partial, p)
	}
	s.live[c]--
	if pg.used--; pg.used > 0 {
		return
	}
	if sl.spare == 0 {
		sl.spare, sl.idle = int32(p)+1, false
		return
	}
	sl.giveBack(p)
}

// giveBack returns empty page p to the collector.
func (sl *slab) giveBack(p uint32) {
	sl.unlist(p)
	sl.pages[p] = nil
	sl.gone = append(sl.gone, p)
}

// trim gives back each class's spare page if it was unused since the last
// trim.
func (s *slabs) trim() {
	for c := range s.class {
		sl := &s.class[c]
		if sl.spare == 0 {
			continue
		}
		if sl.idle {
			sl.giveBack(uint32(sl.spare - 1))
			sl.spare, sl.idle = 0, false
		} else {
			sl.idle = true
		}
	}
}

// slots returns how many slot numbers class c has, those of pages given
// back included.
func (s *slabs) slots(c uint32) int { return len(s.class[c].pages) * pageSlots }

// lookup returns the bytes of the slot r names, or nil when there is no
// such slot: its page was given back, its big record freed, or r is beyond
// every page (refs in the dirty list may outlive their record). Unlike
// get, r need not name a live record.
func (s *slabs) lookup(r ref) []byte {
	c, i := r>>classShift, r&slotMask
	if c == bigClass {
		if int(i) < len(s.big) {
			return s.big[i]
		}
		return nil
	}
	if c == 0 || int(i/pageSlots) >= len(s.class[c].pages) {
		return nil
	}
	pg := s.class[c].pages[i/pageSlots]
	if pg == nil {
		return nil
	}
	size := classSize[c]
	off := int(i%pageSlots) * size
	return pg[off : off+size : off+size]
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
