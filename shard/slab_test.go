package shard

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/rlserver/rlserver/engine"
)

// heldPages returns how many pages class c holds (not given back).
func heldPages(s *slabs, c uint32) int {
	n := 0
	for _, pg := range s.class[c].pages {
		if pg != nil {
			n++
		}
	}
	return n
}

// TestSlabPagesGivenBack: a page left empty goes back, but for one per
// class; its number serves the next page; a record coming and going at a
// page's boundary allocates nothing.
func TestSlabPagesGivenBack(t *testing.T) {
	var s slabs
	c := classFor(40)
	refs := make([]ref, 3*pageSlots)
	for i := range refs {
		refs[i], _ = s.alloc(40)
		s.get(refs[i])[0] = 1
	}
	if h := heldPages(&s, c); h != 3 {
		t.Fatalf("%d records: %d pages, want 3", len(refs), h)
	}
	for _, r := range refs {
		s.release(r)
	}
	if h, l := heldPages(&s, c), s.live[c]; h != 1 || l != 0 {
		t.Fatalf("all released: %d pages held, %d live; want 1, 0", h, l)
	}
	given := 0
	for _, r := range refs {
		if s.lookup(r) == nil {
			given++
		}
	}
	if given != 2*pageSlots {
		t.Fatalf("%d refs of pages given back are invalid, want %d", given, 2*pageSlots)
	}
	seen := map[ref]bool{}
	for range 3 * pageSlots {
		r, rec := s.alloc(40)
		if seen[r] || rec[0] != 0 {
			t.Fatalf("slot %#x handed out twice, or not zeroed", r)
		}
		seen[r] = true
	}
	if n := len(s.class[c].pages); n != 3 {
		t.Fatalf("refilled: %d page numbers, want the 3 reused", n)
	}
	// One record more than the pages hold, freed and allocated again: the
	// page it needs stays as the class's spare.
	if a := testing.AllocsPerRun(100, func() {
		r, _ := s.alloc(40)
		s.release(r)
	}); a != 0 {
		t.Fatalf("a record at a page's boundary: %.1f allocations", a)
	}
	// The spare goes back at the second trim that finds it unused.
	s.trim()
	if h := heldPages(&s, c); h != 4 {
		t.Fatalf("first trim: %d pages held, want 4", h)
	}
	s.trim()
	if h := heldPages(&s, c); h != 3 {
		t.Fatalf("second trim: %d pages held, want 3", h)
	}
	r, _ := s.alloc(40)
	s.release(r)
	s.trim()
	s.trim()
	if h := heldPages(&s, c); h != 3 {
		t.Fatalf("after a record came and went, two trims: %d pages held, want 3", h)
	}
}

// TestSlabModel checks the slabs against a map under random allocations
// and releases in several classes: every live record keeps its bytes,
// slots are never shared, counts match, and no class holds more than one
// empty page.
func TestSlabModel(t *testing.T) {
	seed := rand.Uint64()
	if v, err := strconv.ParseUint(os.Getenv("SLAB_SEED"), 10, 64); err == nil {
		seed = v // replay a failure
	}
	t.Logf("SLAB_SEED=%d", seed)
	r := rand.New(rand.NewPCG(seed, 7))
	var s slabs
	live := map[ref]byte{}
	var order []ref
	sizes := []int{16, 40, 100, 200, 500, 600}
	for step := range 200000 {
		if len(order) > 0 && (r.IntN(2) == 0 || len(order) > 3000) {
			k := r.IntN(len(order))
			x := order[k]
			order[k] = order[len(order)-1]
			order = order[:len(order)-1]
			if got := s.get(x)[1]; got != live[x] {
				t.Fatalf("step %d: record %#x holds %d, want %d", step, x, got, live[x])
			}
			delete(live, x)
			s.release(x)
			continue
		}
		n := sizes[r.IntN(len(sizes))]
		x, rec := s.alloc(n)
		if _, dup := live[x]; dup {
			t.Fatalf("step %d: slot %#x handed out twice", step, x)
		}
		rec[0], rec[1] = 1, byte(step)
		live[x], order = byte(step), append(order, x)
	}
	for c := uint32(1); c < bigClass; c++ {
		sl := &s.class[c]
		n, empty := 0, 0
		for p, pg := range sl.pages {
			if pg == nil {
				continue
			}
			if sl.meta[p].used == 0 {
				empty++
			}
			n += int(sl.meta[p].used)
		}
		want := 0
		for x := range live {
			if x>>classShift == c {
				want++
			}
		}
		if n != want || int(s.live[c]) != want || empty > 1 {
			t.Fatalf("class %d: pages count %d records, live %d, want %d; %d empty pages", c, n, s.live[c], want, empty)
		}
	}
}

// TestGrowingKeysLeaveNoPages: LOG windows growing from inline records
// through size classes until boxed leave no pages behind in the classes
// they passed, once trimmed.
func TestGrowingKeysLeaveNoPages(t *testing.T) {
	s := New(Options{Seed: testSeed(t), Shards: 1})
	sh := s.Shard(0)
	p := engine.WindowParams{Limit: 1000, Window: time.Hour, Mode: engine.WindowLog}
	const keys = 2000
	states := make([]engine.Window, keys)
	for step := range int64(80) {
		for k := range states {
			now := (step + 1) * sec
			d := states[k].Take(now, p, 1)
			exp := now + int64(d.ResetAfter)
			w := new(engine.Window) // a copy: Insert may keep it as the key's box
			if err := w.DecodeCompact(states[k].AppendCompact(nil, exp), exp); err != nil {
				t.Fatal(err)
			}
			sh.Insert([]byte(fmt.Sprint("w", k)), w, exp)
		}
	}
	sh.TrimSlabs()
	sh.TrimSlabs()
	for c := uint32(1); c < bigClass; c++ {
		h, l := heldPages(&sh.slabs, c), int(sh.slabs.live[c])
		if h > (l+pageSlots-1)/pageSlots {
			t.Errorf("class %d (%d B): %d pages held for %d records", c, classSize[c], h, l)
		}
	}
	if sh.Len() != keys {
		t.Fatalf("%d keys, want %d", sh.Len(), keys)
	}
}

// TestSlabPagesFitAllocator: every class's page is a size Go's allocator
// hands out exactly, so a slot costs its size and no more (append rounds
// a slice's capacity up to the allocator's size).
func TestSlabPagesFitAllocator(t *testing.T) {
	for c := uint32(1); c < bigClass; c++ {
		size := classSize[c]
		if size == 0 {
			continue
		}
		if c > 1 && size <= classSize[c-1] {
			t.Errorf("class %d: %d bytes, not above class %d's %d", c, size, c-1, classSize[c-1])
		}
		page := pageSlots * size
		if got := cap(append([]byte(nil), make([]byte, page)...)); got != page {
			t.Errorf("class %d (%d B): a %d-byte page takes %d", c, size, page, got)
		}
	}
	for n := 1; n <= maxSlab; n++ {
		c := classFor(n)
		if classSize[c] < n || c > 1 && classSize[c-1] >= n {
			t.Errorf("classFor(%d) = %d (%d B), not the smallest that holds it", n, c, classSize[c])
		}
	}
	if classFor(maxSlab+1) != bigClass {
		t.Errorf("classFor(%d) = %d, want bigClass", maxSlab+1, classFor(maxSlab+1))
	}
}
