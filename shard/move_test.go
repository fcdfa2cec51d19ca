package shard

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/engine"
)

// TestMoveSlots: the states of some slots, copied as a move does (a
// snapshot of those slots, then the changes recorded meanwhile, filtered
// to them) into another store, equal the source's; a frozen slot's keys
// answer Moving and change nothing, others go on; DropSlots removes the
// slots' keys, as deletions the change stream records; Thaw serves them
// again.
func TestMoveSlots(t *testing.T) {
	src := New(Options{Shards: 4, Seed: 3, Cluster: true})
	dst := New(Options{Shards: 8, Seed: 5, Cluster: true})
	p := engine.TokenBucketParams{Capacity: 100, Rate: 1, Period: time.Hour}
	now := int64(1e18)
	take := func(s *Store, key string) (int64, Status) {
		op := newTakeOp(func(b *engine.TokenBucket) engine.Decision { return b.Take(now, p, 1) })
		d, st := s.View().Update([]byte(key), now, op)
		return d.Remaining, st
	}
	var keys []string
	for i := range 200 {
		keys = append(keys, "k"+strconv.Itoa(i))
	}
	var moving cluster.SlotSet
	for _, k := range keys[:50] {
		moving.Add([]cluster.Range{{cluster.Slot([]byte(k)), cluster.Slot([]byte(k))}})
	}
	inMove := func(k string) bool { return moving.Has(cluster.Slot([]byte(k))) }
	for _, k := range keys {
		take(src, k)
	}
	apply := func(raw []byte) {
		t.Helper()
		entries, err := ParseEntries(nil, raw)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if !moving.Has(cluster.Slot(e.Key)) {
				t.Fatalf("key %q of a slot not moving was sent", e.Key)
			}
			sh := dst.ShardFor(e.Key)
			sh.Lock()
			if err := sh.Apply(e); err != nil {
				t.Fatal(err)
			}
			sh.Unlock()
		}
	}
	f := src.Subscribe()
	defer f.Close()
	for i := range src.NumShards() {
		raw, _ := f.SnapshotSlotsRaw(i, now, &moving, nil)
		apply(raw)
	}
	for _, k := range keys { // changes while the slots are still served
		take(src, k)
	}
	src.Freeze(&moving)
	for _, k := range keys {
		_, st := take(src, k)
		if want := map[bool]Status{true: Moving, false: Done}[inMove(k)]; st != want {
			t.Fatalf("%s frozen %v: status %d, want %d", k, inMove(k), st, want)
		}
	}
	for i := range src.NumShards() {
		raw, _, err := f.ReadRaw(i, nil)
		if err != nil {
			t.Fatal(err)
		}
		apply(FilterRaw(nil, raw, &moving))
	}
	for _, k := range keys {
		sst, sexp, sok := src.ShardFor([]byte(k)).Get([]byte(k), now)
		dst_, dexp, dok := dst.ShardFor([]byte(k)).Get([]byte(k), now)
		if !inMove(k) {
			if dok {
				t.Fatalf("%s is not moving but was copied", k)
			}
			continue
		}
		if !sok || !dok || sexp != dexp || sst.(*engine.TokenBucket).Take(now, p, 0).Remaining != 98 || dst_.(*engine.TokenBucket).Take(now, p, 0).Remaining != 98 {
			t.Fatalf("%s: source %v %v, copy %v %v", k, sst, sexp, dst_, dexp)
		}
	}
	before := 0
	for i := range src.NumShards() {
		before += src.Shard(i).Len()
	}
	if n := src.DropSlots(&moving); n != 50 {
		t.Fatalf("DropSlots removed %d keys, want 50", n)
	}
	var deleted int
	for i := range src.NumShards() {
		var es []Entry
		es, _, err := f.Read(i, es, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			if e.Event != EventDelete || !moving.Has(cluster.Slot(e.Key)) {
				t.Fatalf("unexpected change %v %q", e.Event, e.Key)
			}
			deleted++
		}
	}
	if deleted != 50 {
		t.Fatalf("%d deletions recorded, want 50", deleted)
	}
	src.Thaw(&moving)
	if r, st := take(src, keys[0]); st != Done || r != 99 {
		t.Fatalf("after Thaw: %d %d (a fresh key)", r, st)
	}
}

// The per-slot key counts (kept per shard, for its slots only) match the
// keys: after inserts over every slot, deletions and a clear of one shard.
func TestCountKeysInSlot(t *testing.T) {
	for _, shards := range []int{1, 8, 1024} {
		s := New(Options{Shards: shards, Cluster: true, Seed: 3})
		want := make([]int, cluster.Slots)
		for i := range 40000 {
			k := []byte(fmt.Sprint("key:", i))
			s.ShardFor(k).Insert(k, &fake{size: 1}, 10*sec)
			want[cluster.Slot(k)]++
		}
		for i := 0; i < 40000; i += 3 {
			k := []byte(fmt.Sprint("key:", i))
			s.ShardFor(k).Delete(k, 0)
			want[cluster.Slot(k)]--
		}
		check := func(when string) {
			t.Helper()
			for slot, n := range want {
				if got := s.View().CountKeysInSlot(slot); got != n {
					t.Fatalf("%d shards, %s: slot %d counts %d keys, want %d", shards, when, slot, got, n)
				}
			}
		}
		check("after inserts and deletes")
		s.Shard(0).clear()
		for slot := range want {
			if s.SlotShard(slot) == s.Shard(0) {
				want[slot] = 0
			}
		}
		check("after clearing shard 0")
		for slot, n := range want {
			if n > 0 {
				if keys := s.View().KeysInSlot(slot, 1<<20, 0); len(keys) != n {
					t.Fatalf("%d shards: KeysInSlot(%d) gave %d keys, want %d", shards, slot, len(keys), n)
				}
				break
			}
		}
	}
}
