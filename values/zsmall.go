package values

import (
	"slices"
	"sort"
)

// ZSet is a Redis sorted set. A small one is a slice of members in order
// (score, then member bytes), as Redis keeps small sets in a listpack:
// one array, no node per member (each member's string is still a pointer
// the collector follows). Past
// zsetSmall members it becomes a skip list (skipList) for good, as Redis
// converts a listpack, so large sets keep O(log n) operations.
type ZSet struct {
	small []Member
	bytes int // the small set's member bytes, for Size
	sk    *skipList
}

// zsetSmall is the most members a small set holds (a variable for tests).
var zsetSmall = 64

// NewZSet returns an empty sorted set.
func NewZSet() *ZSet { return &ZSet{} }

// Reset empties the set, as a small one.
func (z *ZSet) Reset() {
	clear(z.small)
	z.small, z.bytes, z.sk = z.small[:0], 0, nil
}

// Len returns how many members the set has.
func (z *ZSet) Len() int {
	if z.sk != nil {
		return z.sk.n
	}
	return len(z.small)
}

// each calls fn with every member in order.
func (z *ZSet) each(fn func(m string, s float64)) {
	if z.sk != nil {
		for x := z.sk.head.levels[0].next; x != nil; x = x.levels[0].next {
			fn(x.member, x.score)
		}
		return
	}
	for _, m := range z.small {
		fn(m.Member, m.Score)
	}
}

func (z *ZSet) find(member string) int {
	for i := range z.small {
		if z.small[i].Member == member {
			return i
		}
	}
	return -1
}

// Score returns member's score.
func (z *ZSet) Score(member string) (float64, bool) {
	if z.sk != nil {
		return z.sk.Score(member)
	}
	if i := z.find(member); i >= 0 {
		return z.small[i].Score, true
	}
	return 0, false
}

// Add sets member's score, adding the member if it is new; it reports
// whether it was added.
func (z *ZSet) Add(member string, score float64) (added bool) {
	if z.sk != nil {
		return z.sk.Add(member, score)
	}
	if i := z.find(member); i >= 0 {
		if z.small[i].Score == score {
			return false
		}
		z.small = slices.Delete(z.small, i, i+1)
		z.insertSmall(member, score)
		return false
	}
	if len(z.small) >= zsetSmall {
		z.sk = newSkipList()
		for _, m := range z.small {
			z.sk.Add(m.Member, m.Score)
		}
		z.small, z.bytes = nil, 0
		return z.sk.Add(member, score)
	}
	z.insertSmall(member, score)
	z.bytes += len(member)
	return true
}

func (z *ZSet) insertSmall(member string, score float64) {
	j := sort.Search(len(z.small), func(k int) bool {
		m := z.small[k]
		return !(m.Score < score || m.Score == score && m.Member < member)
	})
	z.small = slices.Insert(z.small, j, Member{member, score})
}

// Remove removes member; it reports whether it was there.
func (z *ZSet) Remove(member string) bool {
	if z.sk != nil {
		return z.sk.Remove(member)
	}
	i := z.find(member)
	if i < 0 {
		return false
	}
	z.bytes -= len(member)
	z.small = slices.Delete(z.small, i, i+1)
	return true
}

// Rank returns member's 0-based rank, from the highest score with reverse.
func (z *ZSet) Rank(member string, reverse bool) (int, bool) {
	if z.sk != nil {
		return z.sk.Rank(member, reverse)
	}
	i := z.find(member)
	if i < 0 {
		return 0, false
	}
	if reverse {
		return len(z.small) - 1 - i, true
	}
	return i, true
}

// Range returns the members of ranks start to stop, both included, from
// the highest score with reverse. The caller normalises the ranks as
// Redis does (Normalize).
func (z *ZSet) Range(dst []Member, start, stop int, reverse bool) []Member {
	if z.sk != nil {
		return z.sk.Range(dst, start, stop, reverse)
	}
	n := len(z.small)
	if start > stop || start >= n {
		return dst
	}
	stop = min(stop, n-1)
	out := slices.Grow(dst, stop-start+1)
	for i := start; i <= stop; i++ {
		if reverse {
			out = append(out, z.small[n-1-i])
		} else {
			out = append(out, z.small[i])
		}
	}
	return out
}

// smallWalk appends to dst the members from index i on (backwards with
// reverse) while in says they are in the range, skipping offset and
// keeping at most count (count < 0: all), as walk does on a skip list.
func (z *ZSet) smallWalk(dst []Member, i int, reverse bool, offset, count int, in func(Member) bool) []Member {
	out := dst
	for ; i >= 0 && i < len(z.small) && count != 0 && in(z.small[i]); count-- {
		if offset > 0 {
			offset--
			count++
		} else {
			out = append(out, z.small[i])
		}
		if reverse {
			i--
		} else {
			i++
		}
	}
	return out
}

// firstSmall returns the index of the first member in r, or -1.
func (z *ZSet) firstSmall(r ScoreRange) int {
	if r.empty() {
		return -1
	}
	for i, m := range z.small {
		if r.aboveMin(m.Score) {
			if r.belowMax(m.Score) {
				return i
			}
			return -1
		}
	}
	return -1
}

// lastSmall returns the index of the last member in r, or -1.
func (z *ZSet) lastSmall(r ScoreRange) int {
	if r.empty() {
		return -1
	}
	for i := len(z.small) - 1; i >= 0; i-- {
		if m := z.small[i]; r.belowMax(m.Score) {
			if r.aboveMin(m.Score) {
				return i
			}
			return -1
		}
	}
	return -1
}

// Count returns how many members have a score in r.
func (z *ZSet) Count(r ScoreRange) int {
	if z.sk != nil {
		return z.sk.Count(r)
	}
	first := z.firstSmall(r)
	if first < 0 {
		return 0
	}
	return z.lastSmall(r) - first + 1
}

// RangeByScore returns the members with a score in r, in order (from the
// highest with reverse), skipping offset of them and returning at most
// count (count < 0: all).
func (z *ZSet) RangeByScore(dst []Member, r ScoreRange, reverse bool, offset, count int) []Member {
	if z.sk != nil {
		return z.sk.RangeByScore(dst, r, reverse, offset, count)
	}
	i := z.firstSmall(r)
	if reverse {
		i = z.lastSmall(r)
	}
	if i < 0 {
		return dst
	}
	return z.smallWalk(dst, i, reverse, offset, count, func(m Member) bool {
		return reverse && r.aboveMin(m.Score) || !reverse && r.belowMax(m.Score)
	})
}

// RemoveRangeByScore removes the members with a score in r and returns
// how many.
func (z *ZSet) RemoveRangeByScore(r ScoreRange) int {
	if z.sk != nil {
		return z.sk.RemoveRangeByScore(r)
	}
	first := z.firstSmall(r)
	if first < 0 {
		return 0
	}
	return z.removeSmall(first, z.lastSmall(r))
}

// removeSmall removes the small set's members from index a to b, both
// included, and returns how many.
func (z *ZSet) removeSmall(a, b int) int {
	for _, m := range z.small[a : b+1] {
		z.bytes -= len(m.Member)
	}
	z.small = slices.Delete(z.small, a, b+1)
	return b - a + 1
}

// RemoveRangeByRank removes the members of ranks start to stop (both
// included, normalised) and returns how many.
func (z *ZSet) RemoveRangeByRank(start, stop int) int {
	if z.sk != nil {
		return z.sk.RemoveRangeByRank(start, stop)
	}
	if start > stop || start >= len(z.small) {
		return 0
	}
	return z.removeSmall(start, min(stop, len(z.small)-1))
}

// RangeByLex returns the members in r, in order (reversed with reverse),
// skipping offset and returning at most count (count < 0: all), walking
// as skipList.RangeByLex (and Redis) does.
func (z *ZSet) RangeByLex(dst []Member, r LexRange, reverse bool, offset, count int) []Member {
	if z.sk != nil {
		return z.sk.RangeByLex(dst, r, reverse, offset, count)
	}
	n := len(z.small)
	if n == 0 || !r.mayHold(z.small[0].Member, z.small[n-1].Member) {
		return dst
	}
	i, dir := -1, 1
	if reverse {
		dir = -1
		for j := n - 1; j >= 0; j-- {
			if r.belowMax(z.small[j].Member) {
				i = j
				break
			}
		}
		if i < 0 || !r.aboveMin(z.small[i].Member) {
			return dst
		}
	} else {
		for j := range z.small {
			if r.aboveMin(z.small[j].Member) {
				i = j
				break
			}
		}
		if i < 0 || !r.belowMax(z.small[i].Member) {
			return dst
		}
	}
	if offset >= n {
		return dst
	}
	out := dst
	for i += max(offset, 0) * dir; i >= 0 && i < n && count != 0; count-- {
		m := z.small[i]
		if reverse && !r.aboveMin(m.Member) || !reverse && !r.belowMax(m.Member) {
			break
		}
		out = append(out, m)
		i += dir
	}
	return out
}

// PopMin removes and returns the count members with the lowest scores.
func (z *ZSet) PopMin(count int) []Member {
	if z.sk != nil {
		return z.sk.PopMin(count)
	}
	count = min(count, len(z.small))
	if count <= 0 {
		return nil
	}
	out := slices.Clone(z.small[:count])
	z.removeSmall(0, count-1)
	return out
}
