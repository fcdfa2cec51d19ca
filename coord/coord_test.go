package coord

import (
	"fmt"
	"testing"
)

func member(i int, host string) Member {
	return Member{ID: fmt.Sprintf("%040x", i+1), Host: host, Port: 7000 + i}
}

// TestForm: six members with one replica wanted make three primaries over
// even slot ranges covering every slot, each with one replica; on two
// hosts, no replica shares its primary's host.
func TestForm(t *testing.T) {
	var ms []Member
	for i := range 6 {
		ms = append(ms, member(i, []string{"h1", "h2"}[i/3]))
	}
	topo, err := Form(ms, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(topo.Shards) != 3 || !topo.Complete() || topo.Version != 1 || topo.Nodes() != 6 {
		t.Fatalf("shards %d complete %v version %d nodes %d", len(topo.Shards), topo.Complete(), topo.Version, topo.Nodes())
	}
	for i, s := range topo.Shards {
		if len(s.Replicas) != 1 {
			t.Fatalf("shard %d has %d replicas", i, len(s.Replicas))
		}
		if n := s.Slots[0][1] - s.Slots[0][0] + 1; n < 5461 || n > 5462 {
			t.Fatalf("shard %d serves %d slots", i, n)
		}
	}
	// Primaries are the first three (h1, h1, h2): the h2 primary's
	// replica must come from h1 and the h1 primaries' from h2.
	for i, s := range topo.Shards {
		if s.Replicas[0].Host == s.Primary.Host {
			t.Fatalf("shard %d: replica %s on its primary's host %s", i, s.Replicas[0].ID, s.Primary.Host)
		}
	}
	// One member, no replicas possible: a primary of every slot.
	one, err := Form(ms[:1], 1)
	if err != nil || len(one.Shards) != 1 || !one.Complete() || len(one.Shards[0].Replicas) != 0 {
		t.Fatalf("one member: %+v %v", one, err)
	}
}

// TestPlace: a member the topology does not name becomes a replica of the
// shard with the fewest, in the next version; nothing new, no new version.
func TestReconcile(t *testing.T) {
	var ms []Member
	for i := range 5 {
		ms = append(ms, member(i, "h"))
	}
	topo, err := Form(ms, 1) // 2 primaries, 3 replicas: 2 + 1
	if err != nil {
		t.Fatal(err)
	}
	if next, err := Reconcile(topo, ms); next != nil || err != nil {
		t.Fatalf("no newcomer: %v %v", next, err)
	}
	next, err := Reconcile(topo, append(ms, member(9, "h")))
	if err != nil || next == nil || next.Version != 2 || next.Nodes() != 6 {
		t.Fatalf("newcomer: %+v %v", next, err)
	}
	for i, s := range next.Shards {
		if len(s.Replicas) != 2 {
			t.Fatalf("shard %d has %d replicas after the newcomer, want 2 each", i, len(s.Replicas))
		}
		if s.Slots[0] != topo.Shards[i].Slots[0] || s.Primary != topo.Shards[i].Primary {
			t.Fatalf("shard %d changed more than its replicas", i)
		}
	}
	if len(topo.Shards[0].Replicas)+len(topo.Shards[1].Replicas) != 3 {
		t.Fatal("Place changed the current topology")
	}
}

// TestReconcileFailover: a shard whose primary left gets its replica with
// the highest offset as primary (ties: the lower id), its other live
// replicas kept and a gone one dropped; other shards keep their nodes;
// the old primary, back, becomes a replica.
func TestReconcileFailover(t *testing.T) {
	var ms []Member
	for i := range 8 {
		ms = append(ms, member(i, "h"))
	}
	topo, err := Form(ms, 3) // 2 primaries (0, 1), 3 replicas each
	if err != nil {
		t.Fatal(err)
	}
	s0 := topo.Shards[0]
	if len(s0.Replicas) != 3 {
		t.Fatalf("shard 0 replicas: %v", s0.Replicas)
	}
	offsets := map[string]int64{s0.Replicas[0].ID: 100, s0.Replicas[1].ID: 300, s0.Replicas[2].ID: 300}
	var alive []Member
	for _, m := range ms {
		if m.ID == s0.Primary.ID {
			continue // the primary is gone
		}
		m.Offset = offsets[m.ID]
		alive = append(alive, m)
	}
	next, err := Reconcile(topo, alive)
	if err != nil || next == nil || next.Version != 2 {
		t.Fatalf("failover: %+v %v", next, err)
	}
	want := s0.Replicas[1].ID // offset 300, lower id than Replicas[2]
	if s0.Replicas[2].ID < want {
		want = s0.Replicas[2].ID
	}
	if got := next.Shards[0].Primary.ID; got != want {
		t.Fatalf("promoted %s, want %s", got, want)
	}
	if len(next.Shards[0].Replicas) != 2 || next.Shards[0].Slots[0] != s0.Slots[0] {
		t.Fatalf("shard 0 after failover: %+v", next.Shards[0])
	}
	if next.Shards[1].Primary != topo.Shards[1].Primary || len(next.Shards[1].Replicas) != 3 {
		t.Fatalf("shard 1 changed: %+v", next.Shards[1])
	}
	// A replica of shard 1 goes too: dropped.
	gone := next.Shards[1].Replicas[0].ID
	var fewer []Member
	for _, m := range alive {
		if m.ID != gone {
			fewer = append(fewer, m)
		}
	}
	v3, err := Reconcile(next, fewer)
	if err != nil || v3 == nil || len(v3.Shards[1].Replicas) != 2 || v3.Version != 3 {
		t.Fatalf("dropping a replica: %+v %v", v3, err)
	}
	// The old primary comes back: a replica, where fewest are.
	v4, err := Reconcile(v3, append(fewer, member(0, "h")))
	if err != nil || v4 == nil || v4.Nodes() != v3.Nodes()+1 {
		t.Fatalf("rejoin: %+v %v", v4, err)
	}
	if r, ok := v4.Find("h", 7000); !ok || !r.Replica {
		t.Fatalf("the old primary rejoined as %+v (found %v), want a replica", r, ok)
	}
}
