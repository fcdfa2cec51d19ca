package values

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/rlserver/rlserver/engine"
)

// -seed replays a randomized run (0: a new seed, logged).
var seed = flag.Uint64("seed", 0, "seed of the randomized tests (0: a new one)")

func rng(t *testing.T) *rand.Rand {
	t.Helper()
	s := *seed
	if s == 0 {
		s = rand.Uint64()
	}
	t.Logf("seed %d (replay with -seed %d)", s, s)
	return rand.New(rand.NewPCG(s, s))
}

// model is a sorted set as a plain sorted slice.
type model []Member

func (m model) sorted() model {
	out := slices.Clone(m)
	slices.SortFunc(out, func(a, b Member) int {
		if c := cmp.Compare(a.Score, b.Score); c != 0 {
			return c
		}
		return cmp.Compare(a.Member, b.Member)
	})
	return out
}

func (m model) index(member string) int {
	return slices.IndexFunc(m, func(x Member) bool { return x.Member == member })
}

// TestZSetAgainstModel: random adds, updates, removals and range removals
// leave the skip list equal to a sorted slice, and every query (rank,
// range, count, range by score both ways with offsets) answers as the
// slice does.
func TestZSetAgainstModel(t *testing.T) {
	// 300 members: small sets that become skip lists; 40: sets that stay
	// small (zsetSmall 64); 40 with zsetSmall 0: skip lists from the start.
	for _, tc := range []struct{ members, small int }{{300, 64}, {40, 64}, {40, 0}} {
		t.Run(fmt.Sprintf("members=%d,small=%d", tc.members, tc.small), func(t *testing.T) {
			defer func(n int) { zsetSmall = n }(zsetSmall)
			zsetSmall = tc.small
			zsetAgainstModel(t, tc.members)
		})
	}
}

func zsetAgainstModel(t *testing.T, members int) {
	r := rng(t)
	z := NewZSet()
	var m model
	score := func() float64 { return float64(r.IntN(40)) / 2 }
	for step := range 20000 {
		member := fmt.Sprintf("m%d", r.IntN(members))
		switch op := r.IntN(10); {
		case op < 5:
			s := score()
			i := m.index(member)
			added := z.Add(member, s)
			if added != (i < 0) {
				t.Fatalf("step %d: Add(%s) added=%v, model has it at %d", step, member, added, i)
			}
			if i < 0 {
				m = append(m, Member{member, s})
			} else {
				m[i].Score = s
			}
		case op < 7:
			i := m.index(member)
			if z.Remove(member) != (i >= 0) {
				t.Fatalf("step %d: Remove(%s) disagrees", step, member)
			}
			if i >= 0 {
				m = slices.Delete(m, i, i+1)
			}
		case op == 7:
			lo := score()
			sr := ScoreRange{Min: lo, Max: lo + 1, MinEx: r.IntN(2) == 0}
			want := 0
			m = slices.DeleteFunc(m, func(x Member) bool {
				in := sr.aboveMin(x.Score) && sr.belowMax(x.Score)
				if in {
					want++
				}
				return in
			})
			if got := z.RemoveRangeByScore(sr); got != want {
				t.Fatalf("step %d: RemoveRangeByScore(%+v) = %d, want %d", step, sr, got, want)
			}
		case op == 8 && len(m) > 0:
			s := m.sorted()
			a := r.IntN(len(s))
			b := a + r.IntN(3)
			want := min(b, len(s)-1) - a + 1
			for _, x := range s[a:min(b+1, len(s))] {
				m = slices.Delete(m, m.index(x.Member), m.index(x.Member)+1)
			}
			if got := z.RemoveRangeByRank(a, b); got != want {
				t.Fatalf("step %d: RemoveRangeByRank(%d, %d) = %d, want %d", step, a, b, got, want)
			}
		}
		if z.Len() != len(m) {
			t.Fatalf("step %d: Len %d, model %d", step, z.Len(), len(m))
		}
		if step%97 == 0 {
			check(t, step, z, m.sorted(), r)
		}
	}
	check(t, -1, z, m.sorted(), r)
}

func check(t *testing.T, step int, z *ZSet, s model, r *rand.Rand) {
	t.Helper()
	if got := z.Range(nil, 0, len(s)-1, false); len(s) > 0 && !slices.Equal(got, s) {
		t.Fatalf("step %d: Range = %v\nwant %v", step, got, s)
	}
	for i, x := range s {
		if rank, ok := z.Rank(x.Member, false); !ok || rank != i {
			t.Fatalf("step %d: Rank(%s) = %d %v, want %d", step, x.Member, rank, ok, i)
		}
		if rank, _ := z.Rank(x.Member, true); rank != len(s)-1-i {
			t.Fatalf("step %d: reverse Rank(%s) = %d, want %d", step, x.Member, rank, len(s)-1-i)
		}
	}
	lo := float64(r.IntN(40)) / 2
	sr := ScoreRange{Min: lo, Max: lo + float64(r.IntN(8)), MinEx: r.IntN(2) == 0, MaxEx: r.IntN(2) == 0}
	var in model
	for _, x := range s {
		if sr.aboveMin(x.Score) && sr.belowMax(x.Score) {
			in = append(in, x)
		}
	}
	if got := z.Count(sr); got != len(in) {
		t.Fatalf("step %d: Count(%+v) = %d, want %d", step, sr, got, len(in))
	}
	off, cnt := r.IntN(3), r.IntN(5)-1
	want := in[min(off, len(in)):]
	if cnt >= 0 {
		want = want[:min(cnt, len(want))]
	}
	if got := z.RangeByScore(nil, sr, false, off, cnt); !slices.Equal(got, want) && len(got)+len(want) > 0 {
		t.Fatalf("step %d: RangeByScore(%+v, %d, %d) = %v, want %v", step, sr, off, cnt, got, want)
	}
	rev := slices.Clone(in)
	slices.Reverse(rev)
	want = rev[min(off, len(rev)):]
	if cnt >= 0 {
		want = want[:min(cnt, len(want))]
	}
	if got := z.RangeByScore(nil, sr, true, off, cnt); !slices.Equal(got, want) && len(got)+len(want) > 0 {
		t.Fatalf("step %d: reverse RangeByScore(%+v, %d, %d) = %v, want %v", step, sr, off, cnt, got, want)
	}
}

// TestZSetLexAndPop: members of one score ordered by bytes; lex ranges
// with inclusive, exclusive and infinite ends; ZPOPMIN order.
func TestZSetLexAndPop(t *testing.T) {
	z := NewZSet()
	for _, m := range []string{"d", "a", "c", "b", "e"} {
		z.Add(m, 0)
	}
	names := func(ms []Member) string {
		s := ""
		for _, m := range ms {
			s += m.Member
		}
		return s
	}
	cases := []struct {
		r       LexRange
		reverse bool
		want    string
	}{
		{LexRange{MinInf: true, MaxInf: true}, false, "abcde"},
		{LexRange{Min: []byte("b"), Max: []byte("d")}, false, "bcd"},
		{LexRange{Min: []byte("b"), Max: []byte("d"), MinEx: true, MaxEx: true}, false, "c"},
		{LexRange{Min: []byte("b"), MaxInf: true}, true, "edcb"},
		{LexRange{MinInf: true, Max: []byte("c"), MaxEx: true}, true, "ba"},
		{LexRange{Min: []byte("x"), MaxInf: true}, false, ""},
	}
	for _, c := range cases {
		if got := names(z.RangeByLex(nil, c.r, c.reverse, 0, -1)); got != c.want {
			t.Errorf("RangeByLex(%+v, reverse %v) = %q, want %q", c.r, c.reverse, got, c.want)
		}
	}
	if got := names(z.RangeByLex(nil, LexRange{MinInf: true, MaxInf: true}, false, 1, 2)); got != "bc" {
		t.Errorf("RangeByLex with LIMIT 1 2 = %q, want bc", got)
	}
	z.Add("a", 5)
	if got := names(z.PopMin(2)); got != "bc" || z.Len() != 3 {
		t.Errorf("PopMin(2) = %q (len %d), want bc (3)", got, z.Len())
	}
}

// TestListAgainstModel: random pushes, pops, trims and removals leave the
// ring equal to a slice, and indexes and ranges answer as the slice does.
func TestListAgainstModel(t *testing.T) {
	r := rng(t)
	var l List
	var m [][]byte
	val := func() []byte { return []byte{byte('a' + r.IntN(4))} }
	for step := range 20000 {
		switch op := r.IntN(12); {
		case op < 4:
			v := val()
			l.PushFront(v)
			m = append([][]byte{v}, m...)
		case op < 8:
			v := val()
			l.PushBack(v)
			m = append(m, v)
		case op == 8:
			v, ok := l.PopFront()
			if ok != (len(m) > 0) || ok && string(v) != string(m[0]) {
				t.Fatalf("step %d: PopFront = %q %v", step, v, ok)
			}
			if ok {
				m = m[1:]
			}
		case op == 9:
			v, ok := l.PopBack()
			if ok != (len(m) > 0) || ok && string(v) != string(m[len(m)-1]) {
				t.Fatalf("step %d: PopBack = %q %v", step, v, ok)
			}
			if ok {
				m = m[:len(m)-1]
			}
		case op == 10 && r.IntN(20) == 0:
			a, b := r.IntN(len(m)+3)-2, r.IntN(len(m)+3)-2
			if s, e, ok := Normalize(a, b, len(m)); ok {
				m = m[s : e+1]
			} else {
				m = nil
			}
			l.Trim(a, b)
		case op == 11 && r.IntN(10) == 0:
			v, count := val(), r.IntN(5)-2
			var kept [][]byte
			removed := 0
			idx := make([]int, len(m))
			for i := range m {
				idx[i] = i
			}
			if count < 0 {
				slices.Reverse(idx)
			}
			drop := map[int]bool{}
			for _, i := range idx {
				if string(m[i]) == string(v) && (count == 0 || removed < max(count, -count)) {
					drop[i] = true
					removed++
				}
			}
			for i, e := range m {
				if !drop[i] {
					kept = append(kept, e)
				}
			}
			if got := l.Remove(count, v); got != removed {
				t.Fatalf("step %d: Remove(%d, %q) = %d, want %d", step, count, v, got, removed)
			}
			m = kept
		}
		if l.Len() != len(m) {
			t.Fatalf("step %d: Len %d, model %d", step, l.Len(), len(m))
		}
		if step%89 == 0 {
			got := l.Range(nil, 0, -1)
			if len(got) != len(m) {
				t.Fatalf("step %d: Range(0, -1) has %d, want %d", step, len(got), len(m))
			}
			for i := range m {
				if string(got[i]) != string(m[i]) {
					t.Fatalf("step %d: element %d = %q, want %q", step, i, got[i], m[i])
				}
				if v, _ := l.Index(i - len(m)); string(v) != string(m[i]) {
					t.Fatalf("step %d: Index(%d) = %q, want %q", step, i-len(m), v, m[i])
				}
			}
		}
	}
}

// TestListTrimFreesMemory: a list of 100,000 trimmed to 10 gives back its
// ring.
func TestListTrimFreesMemory(t *testing.T) {
	var l List
	for i := range 100000 {
		l.PushBack([]byte{byte(i)})
	}
	l.Trim(-10, -1)
	if l.Len() != 10 || len(l.buf) > 64 {
		t.Fatalf("after trimming: %d elements in a ring of %d", l.Len(), len(l.buf))
	}
}

// TestCodecs: each type's encoding decodes to an equal value; the golden
// bytes of small values stay what the stores hold; every truncation and
// every corrupt length of an encoding is an error wrapping
// engine.ErrCorrupt, never a panic.
func TestCodecs(t *testing.T) {
	var l List
	l.PushBack([]byte("a"))
	l.PushBack([]byte(""))
	l.PushFront([]byte("bc"))
	z := NewZSet()
	z.Add("x", 1.5)
	z.Add("y", -2)
	var h Hash
	h.Set("f", []byte("v"))
	golden := []struct {
		name string
		enc  []byte
		want string
	}{
		{"list", l.AppendCompact(nil, 0), "03026263016100"},
		{"zset", z.AppendCompact(nil, 0), "02" + "00000000000000c0" + "0179" + "000000000000f83f" + "0178"},
		{"hash", h.AppendCompact(nil, 0), "0101660176"},
	}
	for _, g := range golden {
		if got := fmt.Sprintf("%x", g.enc); got != g.want {
			t.Errorf("%s encodes as %s, want %s", g.name, got, g.want)
		}
	}
	var l2 List
	if err := l2.DecodeCompact(golden[0].enc, 0); err != nil || fmt.Sprint(l2.Range(nil, 0, -1)) != fmt.Sprint(l.Range(nil, 0, -1)) {
		t.Errorf("list round trip: %q %v", l2.Range(nil, 0, -1), err)
	}
	z2 := NewZSet()
	if err := z2.DecodeCompact(golden[1].enc, 0); err != nil || !slices.Equal(z2.Range(nil, 0, -1, false), z.Range(nil, 0, -1, false)) {
		t.Errorf("zset round trip: %v %v", z2.Range(nil, 0, -1, false), err)
	}
	var h2 Hash
	if err := h2.DecodeCompact(golden[2].enc, 0); err != nil || h2.Len() != 1 || string(first(h2.Get("f"))) != "v" {
		t.Errorf("hash round trip: %v %v", h2, err)
	}
	decoders := []func([]byte) error{
		func(b []byte) error { var l List; return l.DecodeCompact(b, 0) },
		func(b []byte) error { return NewZSet().DecodeCompact(b, 0) },
		func(b []byte) error { var h Hash; return h.DecodeCompact(b, 0) },
	}
	for i, g := range golden {
		for n := 0; n < len(g.enc); n++ {
			if n == 0 && i != 1 {
				continue // an empty list or hash is one zero byte; none is an error
			}
			if err := decoders[i](g.enc[:n]); !errors.Is(err, engine.ErrCorrupt) {
				t.Errorf("%s cut to %d bytes: %v, want ErrCorrupt", g.name, n, err)
			}
		}
		bad := append(slices.Clone(g.enc), 0)
		if err := decoders[i](bad); !errors.Is(err, engine.ErrCorrupt) {
			t.Errorf("%s with a trailing byte: %v", g.name, err)
		}
		huge := append([]byte{0xff, 0xff, 0xff, 0xff, 0x0f}, g.enc[1:]...)
		if err := decoders[i](huge); !errors.Is(err, engine.ErrCorrupt) {
			t.Errorf("%s with a huge count: %v", g.name, err)
		}
	}
}

func first[T any](v T, _ bool) T { return v }

// TestHashOrder: fields keep the order they were added in while the hash
// is small, across deletes, as Redis's listpack hashes reply; a large
// hash finds every field through its index after deletes.
func TestHashOrder(t *testing.T) {
	var h Hash
	for _, f := range []string{"c", "a", "b", "d"} {
		h.Set(f, []byte(f+"v"))
	}
	h.Del("a")
	h.Set("c", []byte("new"))
	var got []string
	for i := range h.Len() {
		f, v := h.Field(i)
		got = append(got, f+"="+string(v))
	}
	if want := "[c=new b=bv d=dv]"; fmt.Sprint(got) != want {
		t.Fatalf("order %v, want %s", got, want)
	}
	for i := range 100 {
		h.Set(fmt.Sprint("f", i), []byte{byte(i)})
	}
	for i := 0; i < 100; i += 3 {
		h.Del(fmt.Sprint("f", i))
	}
	for i := range 100 {
		v, ok := h.Get(fmt.Sprint("f", i))
		if ok != (i%3 != 0) || ok && v[0] != byte(i) {
			t.Fatalf("f%d: %v %v", i, v, ok)
		}
	}
	if h.Len() != 3+66 {
		t.Fatalf("len %d", h.Len())
	}
}

// TestParseFloatAllocatesNothing: the score forms rate limiters send (a
// timestamp in microseconds, a range's -inf and +inf) are read without a
// copy.
func TestParseFloatAllocatesNothing(t *testing.T) {
	for _, s := range []string{"1764345600123456", "-inf", "+inf", "1.5", "17643456001234567.25"} {
		b := []byte(s)
		if allocs := testing.AllocsPerRun(100, func() { ParseFloat(b) }); allocs != 0 {
			t.Errorf("ParseFloat(%q): %.0f allocations", s, allocs)
		}
	}
}
