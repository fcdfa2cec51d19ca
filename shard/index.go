package shard

import (
	"bytes"
	"hash/maphash"
)

// index maps keys to records: open addressing with linear probing over
// slots holding a tag byte (0: empty; else 0x80 | the hash's top 7 bits)
// and the record's ref. Slots come in groups of eight, tags then refs, so a
// probe reads a few tags in one cache line and the matching ref beside them:
// a lookup costs about one index line and one record. At most 80% of the
// slots are used and the table grows by half, so it costs 5 bytes a slot and
// about 7-9 bytes a key. Deletion shifts the following run back (no
// tombstones), so a table under constant churn never degrades.
type index struct {
	groups []group
	size   int // slots: 8 × len(groups)
	n      int // used slots
}

type group struct {
	tags [8]uint8
	refs [8]ref
}

func (x *index) tag(i int) uint8     { return x.groups[i>>3].tags[i&7] }
func (x *index) ref(i int) ref       { return x.groups[i>>3].refs[i&7] }
func (x *index) setRef(i int, r ref) { x.groups[i>>3].refs[i&7] = r }
func (x *index) set(i int, t uint8, r ref) {
	g := &x.groups[i>>3]
	g.tags[i&7], g.refs[i&7] = t, r
}

func tagOf(h uint64) uint8 { return uint8(h>>57) | 0x80 }

// home is the slot a hash starts probing at: bits 24-55 of the hash scaled
// to the table size (any size works; the low bits pick the shard, the top
// ones make the tag).
func home(h uint64, size int) int { return int((h >> 24 & 0xffffffff) * uint64(size) >> 32) }

// find returns the slot holding key, its ref and its record's payload, or
// the empty slot where key would go and 0. The table must not be empty.
func (x *index) find(s *slabs, key []byte, h uint64) (int, ref, []byte) {
	tag := tagOf(h)
	for i := home(h, x.size); ; {
		g := &x.groups[i>>3]
		t := g.tags[i&7]
		if t == 0 {
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

// full reports whether one more key would take the table over 80% (or it
// has no slots yet).
func (x *index) full() bool { return (x.n+1)*5 > x.size*4 }

// grow rebuilds the table 1.5 times larger (at least 16 slots).
func (x *index) grow(s *slabs, seed maphash.Seed) {
	old := *x
	size := (max(16, old.size*3/2) + 7) &^ 7
	*x = index{groups: make([]group, size/8), size: size, n: old.n}
	for i := 0; i < old.size; i++ {
		t := old.tag(i)
		if t == 0 {
			continue
		}
		r := old.ref(i)
		k, _ := recSplit(s.get(r))
		j := home(maphash.Bytes(seed, k), size)
		for x.tag(j) != 0 {
			if j++; j == size {
				j = 0
			}
		}
		x.set(j, t, r)
	}
}

// put fills the empty slot i (found by find) with key's hash tag and r.
func (x *index) put(i int, h uint64, r ref) {
	x.set(i, tagOf(h), r)
	x.n++
}

// del empties slot i and shifts back the entries after it that probed past
// it, so every key stays reachable from its home without tombstones.
func (x *index) del(s *slabs, seed maphash.Seed, i int) {
	size := x.size
	x.n--
	for j := i; ; {
		x.set(i, 0, 0)
		for {
			if j++; j == size {
				j = 0
			}
			if x.tag(j) == 0 {
				return
			}
			k, _ := recSplit(s.get(x.ref(j)))
			h := home(maphash.Bytes(seed, k), size)
			// The entry at j stays unless its home lies cyclically
			// outside (i, j]: then slot i is on its probe path.
			if i <= j {
				if i < h && h <= j {
					continue
				}
			} else if i < h || h <= j {
				continue
			}
			break
		}
		x.set(i, x.tag(j), x.ref(j))
		i = j
	}
}

func (x *index) reset() { *x = index{} }
