package shard

import (
	"cmp"
	"slices"
)

// scanBits is how many bits of a SCAN cursor give the position inside a
// shard; the shard index sits above them (MaxShards fits in the remaining 12).
const scanBits = 52

// Scan returns up to about count live keys that pass match, starting at
// cursor, and the cursor to continue from (0 when the iteration is complete).
//
// The cursor is stable across writes: within a shard keys are visited in the
// order of their hash (the same hash that picks the shard), and the cursor
// records the next hash to visit. So a key present for the whole iteration is
// returned exactly once, as SCAN promises, however the maps change. A call
// costs a pass over one shard's map. Scan locks each shard it visits unless
// the view holds every lock (EXEC).
func (v View) Scan(cursor uint64, count int, now int64, match func(Item) bool) (uint64, []string) {
	s, locked := v.s, v.held
	if count <= 0 {
		count = 10
	}
	type item struct {
		pos uint64
		key string
	}
	var out []string
	var found []item
	for si := cursor >> scanBits; si < uint64(len(s.shards)); si++ {
		pos := cursor & (1<<scanBits - 1)
		if si != cursor>>scanBits {
			pos = 0
		}
		sh := &s.shards[si]
		found = found[:0]
		if !locked {
			sh.Lock()
		}
		sh.each(now, func(it Item) bool {
			p := s.hash.bytes(it.Key) >> (64 - scanBits)
			if p >= pos && match(it) {
				found = append(found, item{p, string(it.Key)})
			}
			return true
		})
		if !locked {
			sh.Unlock()
		}
		slices.SortFunc(found, func(a, b item) int { return cmp.Compare(a.pos, b.pos) })
		want := count - len(out)
		if len(found) > want {
			// Stop between two distinct positions so that no key sharing a
			// position is skipped by the next call.
			cut := want
			for cut < len(found) && found[cut].pos == found[cut-1].pos {
				cut++
			}
			if cut < len(found) {
				for _, it := range found[:cut] {
					out = append(out, it.key)
				}
				return si<<scanBits | found[cut].pos, out
			}
		}
		for _, it := range found {
			out = append(out, it.key)
		}
		if len(out) >= count {
			if si+1 == uint64(len(s.shards)) {
				return 0, out
			}
			return (si + 1) << scanBits, out
		}
		cursor = (si + 1) << scanBits
	}
	return 0, out
}
