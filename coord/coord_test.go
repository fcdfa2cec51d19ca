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
func TestPlace(t *testing.T) {
	var ms []Member
	for i := range 5 {
		ms = append(ms, member(i, "h"))
	}
	topo, err := Form(ms, 1) // 2 primaries, 3 replicas: 2 + 1
	if err != nil {
		t.Fatal(err)
	}
	if next, err := Place(topo, ms); next != nil || err != nil {
		t.Fatalf("no newcomer: %v %v", next, err)
	}
	next, err := Place(topo, append(ms, member(9, "h")))
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
