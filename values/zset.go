// Package values holds the Redis value types rlserver keeps beside its
// limiter kinds: their data structures and operations as pure functions of
// the value and the arguments (no clock, lock or I/O), with Redis 7's
// complexity. The keyspace stores them and the commands drive them.
package values

import (
	"bytes"
	"math/rand/v2"
	"slices"
)

// skipList is a large sorted set: members ordered by score, then by
// member bytes, with each member's score looked up in O(1) and every
// ordered operation O(log n) plus what it returns or removes (a skip list
// whose links count the members they skip, as Redis's zskiplist, beside a
// map).
type skipList struct {
	scores map[string]float64
	head   *znode
	tail   *znode
	level  int
	n      int
	bytes  int // the members' bytes, for Size
	rng    *rand.Rand
}

type zlevel struct {
	next *znode
	span int // members passed by following next
}

type znode struct {
	member string
	score  float64
	prev   *znode
	levels []zlevel
}

const (
	zMaxLevel = 32
	zP        = 4 // a node has a level above its last with probability 1/zP
)

// newSkipList returns an empty skip list.
func newSkipList() *skipList {
	return &skipList{scores: map[string]float64{}, head: &znode{levels: make([]zlevel, zMaxLevel)}, level: 1,
		rng: rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))}
}

// Score returns member's score.
func (z *skipList) Score(member string) (float64, bool) {
	s, ok := z.scores[member]
	return s, ok
}

// before reports whether node x sorts before (s, m).
func before(x *znode, s float64, m string) bool {
	return x.score < s || x.score == s && x.member < m
}

func (z *skipList) randomLevel() int {
	l := 1
	for l < zMaxLevel && z.rng.IntN(zP) == 0 {
		l++
	}
	return l
}

// Add sets member's score, adding the member if it is new; it reports
// whether it was added.
func (z *skipList) Add(member string, score float64) (added bool) {
	if old, ok := z.scores[member]; ok {
		if old == score {
			return false
		}
		z.unlink(member, old)
		z.insert(member, score)
		z.scores[member] = score
		return false
	}
	z.insert(member, score)
	z.scores[member] = score
	return true
}

func (z *skipList) insert(member string, score float64) {
	var update [zMaxLevel]*znode
	var rank [zMaxLevel]int
	x := z.head
	for i := z.level - 1; i >= 0; i-- {
		if i < z.level-1 {
			rank[i] = rank[i+1]
		}
		for y := x.levels[i].next; y != nil && before(y, score, member); y = x.levels[i].next {
			rank[i] += x.levels[i].span
			x = y
		}
		update[i] = x
	}
	lvl := z.randomLevel()
	if lvl > z.level {
		for i := z.level; i < lvl; i++ {
			rank[i] = 0
			update[i] = z.head
			update[i].levels[i].span = z.n
		}
		z.level = lvl
	}
	x = &znode{member: member, score: score, levels: make([]zlevel, lvl)}
	for i := 0; i < lvl; i++ {
		x.levels[i].next = update[i].levels[i].next
		update[i].levels[i].next = x
		x.levels[i].span = update[i].levels[i].span - (rank[0] - rank[i])
		update[i].levels[i].span = rank[0] - rank[i] + 1
	}
	for i := lvl; i < z.level; i++ {
		update[i].levels[i].span++
	}
	if update[0] != z.head {
		x.prev = update[0]
	}
	if x.levels[0].next != nil {
		x.levels[0].next.prev = x
	} else {
		z.tail = x
	}
	z.n++
	z.bytes += len(member)
}

// path fills update with the last node before (score, member) on each
// level and returns the node at (score, member) or after it.
func (z *skipList) path(score float64, member string, update *[zMaxLevel]*znode) *znode {
	x := z.head
	for i := z.level - 1; i >= 0; i-- {
		for y := x.levels[i].next; y != nil && before(y, score, member); y = x.levels[i].next {
			x = y
		}
		update[i] = x
	}
	return x.levels[0].next
}

func (z *skipList) unlink(member string, score float64) {
	var update [zMaxLevel]*znode
	if x := z.path(score, member, &update); x != nil && x.member == member {
		z.remove(x, &update)
	}
}

func (z *skipList) remove(x *znode, update *[zMaxLevel]*znode) {
	for i := 0; i < z.level; i++ {
		if update[i].levels[i].next == x {
			update[i].levels[i].span += x.levels[i].span - 1
			update[i].levels[i].next = x.levels[i].next
		} else {
			update[i].levels[i].span--
		}
	}
	if x.levels[0].next != nil {
		x.levels[0].next.prev = x.prev
	} else {
		z.tail = x.prev
	}
	for z.level > 1 && z.head.levels[z.level-1].next == nil {
		z.level--
	}
	z.n--
	z.bytes -= len(x.member)
}

// Remove removes member; it reports whether it was there.
func (z *skipList) Remove(member string) bool {
	s, ok := z.scores[member]
	if !ok {
		return false
	}
	z.unlink(member, s)
	delete(z.scores, member)
	return true
}

// Rank returns member's 0-based rank, from the highest score with reverse.
func (z *skipList) Rank(member string, reverse bool) (int, bool) {
	s, ok := z.scores[member]
	if !ok {
		return 0, false
	}
	rank := 0
	x := z.head
	for i := z.level - 1; i >= 0; i-- {
		for y := x.levels[i].next; y != nil && (y.score < s || y.score == s && y.member <= member); y = x.levels[i].next {
			rank += x.levels[i].span
			x = y
		}
		if x.member == member && x != z.head {
			break
		}
	}
	if reverse {
		return z.n - rank, true
	}
	return rank - 1, true
}

// byRank returns the node at 0-based rank r (0 <= r < n).
func (z *skipList) byRank(r int) *znode {
	traversed := 0
	x := z.head
	for i := z.level - 1; i >= 0; i-- {
		for x.levels[i].next != nil && traversed+x.levels[i].span <= r+1 {
			traversed += x.levels[i].span
			x = x.levels[i].next
		}
		if traversed == r+1 {
			return x
		}
	}
	return nil
}

// Member is a member with its score.
type Member struct {
	Member string
	Score  float64
}

// Range returns the members of ranks start to stop, both included, from
// the highest score with reverse. The caller normalises the ranks as
// Redis does (Normalize).
func (z *skipList) Range(dst []Member, start, stop int, reverse bool) []Member {
	if start > stop || start >= z.n {
		return dst
	}
	stop = min(stop, z.n-1)
	out := slices.Grow(dst, stop-start+1)
	var x *znode
	if reverse {
		x = z.byRank(z.n - 1 - start)
	} else {
		x = z.byRank(start)
	}
	for i := start; i <= stop && x != nil; i++ {
		out = append(out, Member{x.member, x.score})
		if reverse {
			x = x.prev
		} else {
			x = x.levels[0].next
		}
	}
	return out
}

// ScoreRange is a range of scores, each end included unless exclusive.
type ScoreRange struct {
	Min, Max     float64
	MinEx, MaxEx bool
}

func (r ScoreRange) aboveMin(s float64) bool {
	if r.MinEx {
		return s > r.Min
	}
	return s >= r.Min
}

func (r ScoreRange) belowMax(s float64) bool {
	if r.MaxEx {
		return s < r.Max
	}
	return s <= r.Max
}

// empty reports whether no score can be in r.
func (r ScoreRange) empty() bool {
	return r.Min > r.Max || r.Min == r.Max && (r.MinEx || r.MaxEx)
}

// firstIn returns the first node whose score is in r.
func (z *skipList) firstIn(r ScoreRange) *znode {
	if r.empty() {
		return nil
	}
	x := z.head
	for i := z.level - 1; i >= 0; i-- {
		for y := x.levels[i].next; y != nil && !r.aboveMin(y.score); y = x.levels[i].next {
			x = y
		}
	}
	x = x.levels[0].next
	if x == nil || !r.belowMax(x.score) {
		return nil
	}
	return x
}

// lastIn returns the last node whose score is in r.
func (z *skipList) lastIn(r ScoreRange) *znode {
	if r.empty() {
		return nil
	}
	x := z.head
	for i := z.level - 1; i >= 0; i-- {
		for y := x.levels[i].next; y != nil && r.belowMax(y.score); y = x.levels[i].next {
			x = y
		}
	}
	if x == z.head || !r.aboveMin(x.score) {
		return nil
	}
	return x
}

// Count returns how many members have a score in r, in O(log n).
func (z *skipList) Count(r ScoreRange) int {
	first := z.firstIn(r)
	if first == nil {
		return 0
	}
	a, _ := z.Rank(first.member, false)
	b, _ := z.Rank(z.lastIn(r).member, false)
	return b - a + 1
}

// RangeByScore returns the members with a score in r, in order (from the
// highest with reverse), skipping offset of them and returning at most
// count (count < 0: all).
func (z *skipList) RangeByScore(dst []Member, r ScoreRange, reverse bool, offset, count int) []Member {
	var x *znode
	if reverse {
		x = z.lastIn(r)
	} else {
		x = z.firstIn(r)
	}
	return walk(dst, x, reverse, offset, count, func(x *znode) bool {
		return reverse && r.aboveMin(x.score) || !reverse && r.belowMax(x.score)
	})
}

// walk appends to dst the members from x on (backwards with reverse)
// while in says they are in the range, skipping offset and keeping at
// most count (count < 0: all).
func walk(dst []Member, x *znode, reverse bool, offset, count int, in func(*znode) bool) []Member {
	out := dst
	for ; x != nil && count != 0 && in(x); count-- {
		if offset > 0 {
			offset--
			count++
		} else {
			out = append(out, Member{x.member, x.score})
		}
		if reverse {
			x = x.prev
		} else {
			x = x.levels[0].next
		}
	}
	return out
}

// RemoveRangeByScore removes the members with a score in r and returns
// how many, in O(log n + removed).
func (z *skipList) RemoveRangeByScore(r ScoreRange) int {
	removed := 0
	for x := z.firstIn(r); x != nil && r.belowMax(x.score); {
		next := x.levels[0].next
		z.Remove(x.member)
		removed++
		x = next
	}
	return removed
}

// RemoveRangeByRank removes the members of ranks start to stop (both
// included, normalised) and returns how many.
func (z *skipList) RemoveRangeByRank(start, stop int) int {
	if start > stop || start >= z.n {
		return 0
	}
	stop = min(stop, z.n-1)
	x := z.byRank(start)
	removed := 0
	for i := start; i <= stop && x != nil; i++ {
		next := x.levels[0].next
		z.Remove(x.member)
		removed++
		x = next
	}
	return removed
}

// LexRange is a range of members for sets whose members share one score:
// each end is a member, included unless exclusive, or an infinity.
type LexRange struct {
	Min, Max       []byte
	MinEx, MaxEx   bool
	MinInf, MaxInf bool // "-" and "+"
	Empty          bool // "+" as min or "-" as max: nothing is in it
}

func (r LexRange) aboveMin(m string) bool {
	if r.MinInf {
		return true
	}
	c := bytes.Compare([]byte(m), r.Min)
	return c > 0 || c == 0 && !r.MinEx
}

func (r LexRange) belowMax(m string) bool {
	if r.MaxInf {
		return true
	}
	c := bytes.Compare([]byte(m), r.Max)
	return c < 0 || c == 0 && !r.MaxEx
}

// mayHold reports whether a walk for r may find anything in a set whose
// first and last members (in order) are first and last: Redis's
// zslIsInLexRange and zzlIsInLexRange, which decide so before walking.
func (r LexRange) mayHold(first, last string) bool {
	if r.Empty {
		return false
	}
	if !r.MinInf && !r.MaxInf {
		if c := bytes.Compare(r.Min, r.Max); c > 0 || c == 0 && (r.MinEx || r.MaxEx) {
			return false
		}
	}
	return r.aboveMin(last) && r.belowMax(first)
}

// RangeByLex returns the members in r, in order (reversed with reverse),
// skipping offset and returning at most count (count < 0: all). As Redis,
// it assumes every member has the same score, and walks as Redis does, so
// that members of other scores give Redis's answer too: from the first
// member at or above min (the last at or below max with reverse), which
// must be in r, it skips offset members, then takes them while they stay
// below max (above min with reverse).
func (z *skipList) RangeByLex(dst []Member, r LexRange, reverse bool, offset, count int) []Member {
	if z.n == 0 || !r.mayHold(z.head.levels[0].next.member, z.tail.member) {
		return dst
	}
	x := z.head
	if reverse {
		for i := z.level - 1; i >= 0; i-- {
			for y := x.levels[i].next; y != nil && r.belowMax(y.member); y = x.levels[i].next {
				x = y
			}
		}
		if x == z.head || !r.aboveMin(x.member) {
			return dst
		}
	} else {
		for i := z.level - 1; i >= 0; i-- {
			for y := x.levels[i].next; y != nil && !r.aboveMin(y.member); y = x.levels[i].next {
				x = y
			}
		}
		x = x.levels[0].next
		if x == nil || !r.belowMax(x.member) {
			return dst
		}
	}
	step := func(x *znode) *znode {
		if reverse {
			return x.prev
		}
		return x.levels[0].next
	}
	for ; x != nil && offset > 0; offset-- {
		x = step(x)
	}
	out := dst
	for ; x != nil && count != 0; count-- {
		if reverse && !r.aboveMin(x.member) || !reverse && !r.belowMax(x.member) {
			break
		}
		out = append(out, Member{x.member, x.score})
		x = step(x)
	}
	return out
}

// PopMin removes and returns the count members with the lowest scores.
func (z *skipList) PopMin(count int) []Member {
	var out []Member
	for x := z.head.levels[0].next; x != nil && count > 0; count-- {
		next := x.levels[0].next
		out = append(out, Member{x.member, x.score})
		z.Remove(x.member)
		x = next
	}
	return out
}

// Normalize turns Redis's start and stop indexes (negative from the end)
// over n elements into 0-based ones, as ZRANGE and LRANGE do; ok is false
// when the range is empty.
func Normalize(start, stop, n int) (int, int, bool) {
	if start < 0 {
		start += n
	}
	if stop < 0 {
		stop += n
	}
	start = max(start, 0)
	if start > stop || start >= n {
		return 0, 0, false
	}
	return start, min(stop, n-1), true
}
