package shard

import (
	"bytes"
	"unsafe"
)

// index maps keys to records: open addressing with linear probing over
// slots holding a tag byte (0: empty; else 0x80 | the hash's top 7 bits),
// the slot's distance from the key's home slot, and the record's ref. Slots
// come in groups of eight, tags, distances then refs, so a probe reads a
// few tags in one cache line and the matching ref beside them: a lookup
// costs about one index line and one record. At most 80% of the slots are
// used and the table grows by half, so it costs 6 bytes a slot and about
// 8-11 bytes a key. Deletion shifts the following run back (no tombstones),
// so a table under constant churn never degrades; the distances tell it
// which entries may move without reading their keys (a cache miss each).
//
// Growing is incremental, as Redis rehashes: the new table is allocated and
// the old one is moved over a few slots per lookup (migrateStep), and a key
// looked up while still in the old table moves at once. So no command waits
// for a whole table to be rehashed, which takes long at a shard of a
// million keys (BenchmarkMemory1M grows one). Positions handed out always
// name the new table.
type index struct {
	groups []group
	size   int // slots: 8 × len(groups)
	n      int // keys, in both tables
	hash   hasher

	old     []group // the table being moved from (nil: none)
	oldSize int
	mig     int // old slots below mig have been moved

	// gen changes whenever a slot is written or the table replaced: a
	// slot found earlier is still right while gen is the same.
	gen uint32
}

type group struct {
	tags [8]uint8
	dist [8]uint8 // slot - home, mod size; farDist: that or more (read the key)
	refs [8]ref
}

// farDist is the distance byte of an entry at least that far from its home:
// its key tells the exact distance.
const farDist = 255

// tomb marks an old-table slot whose key moved ahead of the migration: it is
// skipped, and it keeps the probe runs of the old table intact.
const tomb = 1

// migrateStep is how many old slots each lookup moves while a table grows:
// more than the 2.5 per insert that finish the move before the new table
// (1.5 times larger, at most 53% full when it starts) is 80% full.
const migrateStep = 8

func (x *index) tag(i int) uint8     { return x.groups[i>>3].tags[i&7] }
func (x *index) ref(i int) ref       { return x.groups[i>>3].refs[i&7] }
func (x *index) setRef(i int, r ref) { x.groups[i>>3].refs[i&7] = r }
func (x *index) set(i int, t uint8, d int, r ref) {
	g := &x.groups[i>>3]
	g.tags[i&7], g.dist[i&7], g.refs[i&7] = t, uint8(min(d, farDist)), r
	x.gen++
}

// distance is how far slot i lies past slot from, cyclically.
func (x *index) distance(from, i int) int {
	if d := i - from; d >= 0 {
		return d
	}
	return i - from + x.size
}

func tagOf(h uint64) uint8 { return uint8(h>>57) | 0x80 }

// home is the slot a hash starts probing at: bits 24-55 of the hash scaled
// to the table size (any size works; the low bits pick the shard, the top
// ones make the tag).
func home(h uint64, size int) int { return int((h >> 24 & 0xffffffff) * uint64(size) >> 32) }

// find returns the slot holding key, its ref and its record's payload, or
// the empty slot where key would go and 0. The table must not be empty.
// While a table grows it moves a few old slots, and key itself when it is
// still in the old table.
func (x *index) find(s *slabs, key []byte, h uint64) (int, ref, []byte) {
	if x.old != nil {
		x.migrate(s, migrateStep)
	}
	tag := tagOf(h)
	start := home(h, x.size)
	for i := start; ; {
		g := &x.groups[i>>3]
		t := g.tags[i&7]
		if t == 0 {
			if x.old != nil {
				if r, p := x.takeOld(s, key, h); r != 0 {
					x.set(i, tag, x.distance(start, i), r)
					return i, r, p
				}
			}
			return i, 0, nil
		}
		if t == tag {
			r := g.refs[i&7]
			if k, p := recSplit(s.get(r)); bytes.Equal(k, key) {
				return i, r, p
			}
		}
		if i++; i == x.size {
			i = 0
		}
	}
}

// prefetchHome starts loading the group where the probe for hash h starts:
// its tags, and the ref of h's home slot (a group is 48 bytes, so they may
// lie on two lines).
func (x *index) prefetchHome(h uint64) {
	if x.size == 0 {
		return
	}
	i := home(h, x.size)
	g := &x.groups[i>>3]
	prefetch(unsafe.Pointer(&g.tags[0]))
	prefetch(unsafe.Pointer(&g.refs[i&7]))
}

// guess returns the ref of the first slot on h's probe run whose tag is
// h's, almost always the ref of h's key, or 0 when the run ends first or
// goes on past probeGuess slots. It compares no key and looks in the
// current table only: it serves hints (Shard.prefetchRecord).
func (x *index) guess(h uint64) ref {
	if x.size == 0 {
		return 0
	}
	tag := tagOf(h)
	i := home(h, x.size)
	for range probeGuess {
		switch x.tag(i) {
		case 0:
			return 0
		case tag:
			return x.ref(i)
		}
		if i++; i == x.size {
			i = 0
		}
	}
	return 0
}

// probeGuess bounds guess's probe: runs are short at the index's load
// factor, and a guess is only a hint.
const probeGuess = 16

// takeOld looks key up in the old table and, when found, leaves a tomb
// there and returns its ref (the caller puts it in the new table). Slots
// below mig were moved already and are left as they were, to keep the probe
// runs intact: a key there is the new table's (or was deleted since), so
// they never match.
func (x *index) takeOld(s *slabs, key []byte, h uint64) (ref, []byte) {
	tag := tagOf(h)
	for i := home(h, x.oldSize); ; {
		g := &x.old[i>>3]
		t := g.tags[i&7]
		if t == 0 {
			return 0, nil
		}
		if t == tag && i >= x.mig {
			r := g.refs[i&7]
			if k, p := recSplit(s.get(r)); bytes.Equal(k, key) {
				g.tags[i&7], g.refs[i&7] = tomb, 0
				return r, p
			}
		}
		if i++; i == x.oldSize {
			i = 0
		}
	}
}

// migrate moves up to k old slots into the new table, and drops the old
// table once all are moved.
func (x *index) migrate(s *slabs, k int) {
	for ; k > 0 && x.mig < x.oldSize; k-- {
		g := &x.old[x.mig>>3]
		j := x.mig & 7
		x.mig++
		t := g.tags[j]
		if t < 0x80 {
			continue // empty, or moved ahead
		}
		r := g.refs[j]
		key, _ := recSplit(s.get(r))
		start := home(x.hash.bytes(key), x.size)
		i := start
		for x.tag(i) != 0 {
			if i++; i == x.size {
				i = 0
			}
		}
		x.set(i, t, x.distance(start, i), r)
	}
	if x.mig == x.oldSize {
		x.old, x.oldSize, x.mig = nil, 0, 0
	}
}

// full reports whether one more key would take the table over 80% (or it
// has no slots yet).
func (x *index) full() bool { return (x.n+1)*5 > x.size*4 }

// grow starts moving to a table 1.5 times larger (at least 16 slots); a
// growth still under way is finished first.
func (x *index) grow(s *slabs) {
	if x.old != nil {
		x.migrate(s, x.oldSize)
	}
	size := (max(16, x.size*3/2) + 7) &^ 7
	if x.n > 0 {
		x.old, x.oldSize, x.mig = x.groups, x.size, 0
	}
	x.groups, x.size = make([]group, size/8), size
	x.gen++
}

// reserve sizes an empty table for n keys, so that filling it (a restore)
// never grows it.
func (x *index) reserve(n int) {
	if x.n > 0 || x.old != nil {
		return
	}
	if size := (n*5/4 + 16 + 7) &^ 7; size > x.size {
		x.groups, x.size = make([]group, size/8), size
		x.gen++
	}
}

// put fills the empty slot i (found by find) with key's hash tag and r.
func (x *index) put(i int, h uint64, r ref) {
	x.set(i, tagOf(h), x.distance(home(h, x.size), i), r)
	x.n++
}

// del empties slot i of the new table and shifts back the entries after it
// that probed past it, so every key stays reachable from its home without
// tombstones.
func (x *index) del(s *slabs, i int) {
	size := x.size
	x.n--
	for j := i; ; {
		x.set(i, 0, 0, 0)
		var d int // the entry at j's distance from its home
		for {
			if j++; j == size {
				j = 0
			}
			if x.tag(j) == 0 {
				return
			}
			if d = int(x.groups[j>>3].dist[j&7]); d == farDist {
				k, _ := recSplit(s.get(x.ref(j)))
				d = x.distance(home(x.hash.bytes(k), size), j)
			}
			// The entry at j stays unless its home lies cyclically
			// outside (i, j], i.e. at least as far back as i: then
			// slot i is on its probe path.
			if d >= x.distance(i, j) {
				break
			}
		}
		x.set(i, x.tag(j), d-x.distance(i, j), x.ref(j))
		i = j
	}
}

// each calls fn with the ref of every key, in both tables while growing,
// until fn returns false.
func (x *index) each(fn func(ref) bool) {
	for i := 0; i < x.size; i++ {
		if x.tag(i) >= 0x80 && !fn(x.ref(i)) {
			return
		}
	}
	for i := x.mig; i < x.oldSize; i++ {
		if g := &x.old[i>>3]; g.tags[i&7] >= 0x80 && !fn(g.refs[i&7]) {
			return
		}
	}
}

func (x *index) reset() { *x = index{hash: x.hash, gen: x.gen + 1} }
