package shard

import (
	"fmt"
	"testing"
)

// TestEvictionKeepsProbeRunsShort: under churn at the memory bound (every
// insert evicts), the index's runs of occupied slots stay as short as a
// table that only grew has them: how victims are chosen must not leave
// long clusters, which every lookup and delete would pay for.
func TestEvictionKeepsProbeRunsShort(t *testing.T) {
	s := New(Options{Shards: 1, Seed: 7})
	sh := s.Shard(0)
	for i := range 100000 {
		sh.Insert([]byte(fmt.Sprint("key:", i)), &fake{size: 10}, int64(100+i%1000)*sec)
	}
	before := avgRun(sh)
	s.SetMaxMemory(s.Stats().Memory)
	for i := range 200000 {
		sh.Insert([]byte(fmt.Sprint("new:", i)), &fake{size: 10}, int64(100+i%1000)*sec)
	}
	after := avgRun(sh)
	if st := s.Stats(); st.Evicted < 200000 || after > 2*before+2 {
		t.Fatalf("%d evicted; average distance to a run's end %.1f slots before the churn, %.1f after", st.Evicted, before, after)
	}
}

// avgRun returns the average number of occupied slots from a random slot
// to the end of its run.
func avgRun(sh *Shard) float64 {
	size, total := sh.idx.size, 0
	for range 2000 {
		i := sh.randN(size)
		for sh.idx.tag(i) != 0 {
			total++
			if i++; i == size {
				i = 0
			}
		}
	}
	return float64(total) / 2000
}

// TestIndexDistances: after inserts that grow the table (old and new
// tables side by side) and deletions that shift runs back, every slot's
// distance byte is its entry's distance from its home slot (farDist from
// there on), and every key is still found; a distance forced to farDist is
// read from the key instead.
func TestIndexDistances(t *testing.T) {
	s := New(Options{Shards: 1, Seed: 3})
	sh := s.Shard(0)
	check := func(when string, live map[string]bool) {
		t.Helper()
		x := &sh.idx
		for i := 0; i < x.size; i++ {
			if x.tag(i) < 0x80 {
				continue
			}
			k, _ := recSplit(sh.slabs.get(x.ref(i)))
			want := min(x.distance(home(x.hash.bytes(k), x.size), i), farDist)
			if got := int(x.groups[i>>3].dist[i&7]); got != want {
				t.Fatalf("%s: slot %d (key %q) has distance %d, want %d", when, i, k, got, want)
			}
		}
		for k := range live {
			if f := sh.Find([]byte(k), s.Hash([]byte(k))); !f.OK {
				t.Fatalf("%s: key %q not found", when, k)
			}
		}
	}
	live := map[string]bool{}
	for i := range 20000 {
		k := fmt.Sprint("key:", i)
		sh.Insert([]byte(k), &fake{size: 10}, 1000*sec)
		live[k] = true
		if i%997 == 0 {
			check(fmt.Sprintf("after %d inserts", i+1), live)
		}
	}
	for i := 0; i < 20000; i += 3 {
		k := fmt.Sprint("key:", i)
		if !sh.Delete([]byte(k), 0) {
			t.Fatalf("Delete(%q) found nothing", k)
		}
		delete(live, k)
	}
	check("after deleting a third", live)
	// Distances unknown (as an entry farDist away would have): deleting
	// reads the keys, and sets the exact distances of what it shifts.
	for i := 0; i < sh.idx.size; i++ {
		if sh.idx.tag(i) >= 0x80 {
			sh.idx.groups[i>>3].dist[i&7] = farDist
		}
	}
	for i := 1; i < 20000; i += 3 {
		k := fmt.Sprint("key:", i)
		sh.Delete([]byte(k), 0)
		delete(live, k)
	}
	for k := range live {
		if f := sh.Find([]byte(k), s.Hash([]byte(k))); !f.OK {
			t.Fatalf("after deletes with unknown distances: key %q not found", k)
		}
	}
}
