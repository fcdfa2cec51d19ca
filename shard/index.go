package shard

import (
	"bytes"
	"hash/maphash"
)

// index maps keys to records: open addressing with linear probing over two
// parallel arrays, a tag byte (0: empty; else 0x80 | the hash's top 7 bits)
// and the record's ref. A probe reads tags, which sit densely in a few cache
// lines, and touches a record only when its tag matches, so a lookup costs
// about one record access. At most 80% of the slots are used and the table
// grows by half, so it costs 5 bytes per slot and about 7-9 bytes per key.
// Deletion shifts the following run back (no tombstones), so a table under
// constant churn never degrades.
type index struct {
	tags []uint8
	refs []ref
	n    int // used slots
}

func tagOf(h uint64) uint8 { return uint8(h>>57) | 0x80 }

// home is the slot a hash starts probing at: bits 24-55 of the hash scaled
// to the table size (any size works; the low bits pick the shard, the top
// ones make the tag).
func home(h uint64, size int) int { return int((h >> 24 & 0xffffffff) * uint64(size) >> 32) }

// find returns the slot holding key, its ref and its record's payload, or
// the empty slot where key would go and 0. The table must not be empty.
func (x *index) find(s *slabs, key []byte, h uint64) (int, ref, []byte) {
	size := len(x.tags)
	tag := tagOf(h)
	for i := home(h, size); ; {
		t := x.tags[i]
		if t == 0 {
			return i, 0, nil
		}
		if t == tag {
			r := x.refs[i]
			if k, p := recSplit(s.get(r)); bytes.Equal(k, key) {
				return i, r, p
			}
		}
		if i++; i == size {
			i = 0
		}
	}
}

// full reports whether one more key would take the table over 80% (or it
// has no slots yet).
func (x *index) full() bool { return (x.n+1)*5 > len(x.tags)*4 }

// grow rebuilds the table 1.5 times larger (at least 16 slots).
func (x *index) grow(s *slabs, seed maphash.Seed) {
	old := *x
	size := max(16, len(old.tags)*3/2)
	*x = index{tags: make([]uint8, size), refs: make([]ref, size), n: old.n}
	for i, t := range old.tags {
		if t == 0 {
			continue
		}
		r := old.refs[i]
		k, _ := recSplit(s.get(r))
		h := maphash.Bytes(seed, k)
		j := home(h, size)
		for x.tags[j] != 0 {
			if j++; j == size {
				j = 0
			}
		}
		x.tags[j], x.refs[j] = t, r
	}
}

// put fills the empty slot i (found by find) with key's hash tag and r.
func (x *index) put(i int, h uint64, r ref) {
	x.tags[i], x.refs[i] = tagOf(h), r
	x.n++
}

// del empties slot i and shifts back the entries after it that probed past
// it, so every key stays reachable from its home without tombstones.
func (x *index) del(s *slabs, seed maphash.Seed, i int) {
	size := len(x.tags)
	x.n--
	for j := i; ; {
		x.tags[i], x.refs[i] = 0, 0
		for {
			if j++; j == size {
				j = 0
			}
			if x.tags[j] == 0 {
				return
			}
			k, _ := recSplit(s.get(x.refs[j]))
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
		x.tags[i], x.refs[i] = x.tags[j], x.refs[j]
		i = j
	}
}

func (x *index) reset() { *x = index{} }
