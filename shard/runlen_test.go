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
		i := sh.randSlot(size)
		for sh.idx.tag(i) != 0 {
			total++
			if i++; i == size {
				i = 0
			}
		}
	}
	return float64(total) / 2000
}
