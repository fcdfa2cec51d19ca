package coord

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/rlserver/rlserver/cluster"
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

// TestReconcile: a member the topology does not name becomes a replica of
// the shard with the fewest, in the next version, while one lacks a
// replica; nothing new, no new version.
func TestReconcile(t *testing.T) {
	var ms []Member
	for i := range 5 {
		ms = append(ms, member(i, "h"))
	}
	topo, err := Form(ms, 1) // 2 primaries, 3 replicas: 2 + 1
	if err != nil {
		t.Fatal(err)
	}
	if next, err := Reconcile(topo, ms, 2, Change{}); next != nil || err != nil {
		t.Fatalf("no newcomer: %v %v", next, err)
	}
	next, err := Reconcile(topo, append(ms, member(9, "h")), 2, Change{})
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
		m.Follows = s0.Primary.ID + "/" // a complete copy of its primary's stream
		alive = append(alive, m)
	}
	next, err := Reconcile(topo, alive, 3, Change{})
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
	v3, err := Reconcile(next, fewer, 3, Change{})
	if err != nil || v3 == nil || len(v3.Shards[1].Replicas) != 2 || v3.Version != 3 {
		t.Fatalf("dropping a replica: %+v %v", v3, err)
	}
	// The old primary comes back: a replica, where fewest are.
	v4, err := Reconcile(v3, append(fewer, member(0, "h")), 3, Change{})
	if err != nil || v4 == nil || v4.Nodes() != v3.Nodes()+1 {
		t.Fatalf("rejoin: %+v %v", v4, err)
	}
	if r, ok := v4.Find("h", 7000); !ok || !r.Replica {
		t.Fatalf("the old primary rejoined as %+v (found %v), want a replica", r, ok)
	}
}

// TestReconcileNewShard: with every shard holding its replicas, a newcomer
// becomes the primary of a new shard importing the highest slots beyond
// an even share from each; a second newcomer becomes its replica; the
// moves reported done give it the slots, one source at a time.
func TestReconcileNewShard(t *testing.T) {
	var ms []Member
	for i := range 6 {
		ms = append(ms, member(i, "h"))
	}
	topo, err := Form(ms, 1) // 3 primaries with one replica each
	if err != nil {
		t.Fatal(err)
	}
	seventh := member(6, "h")
	v2, err := Reconcile(topo, append(ms, seventh), 1, Change{})
	if err != nil || v2 == nil || len(v2.Shards) != 4 {
		t.Fatalf("seventh: %+v %v", v2, err)
	}
	ns := v2.Shards[3]
	if ns.Primary.ID != seventh.ID || len(ns.Slots) != 0 || len(ns.Importing) != 3 {
		t.Fatalf("new shard: %+v", ns)
	}
	total := 0
	for i, im := range ns.Importing {
		src := v2.Shards[i]
		if im.From != src.ID {
			t.Fatalf("import %d from %s, want shard %d's %s", i, im.From, i, src.ID)
		}
		// The top of the source's range, down to the even share.
		if got, want := im.Slots, []cluster.Range{{src.Slots[0][1] - (count(src.Slots) - 4096) + 1, src.Slots[0][1]}}; !reflect.DeepEqual(got, want) {
			t.Fatalf("import %d: %v, want %v", i, got, want)
		}
		total += count(im.Slots)
	}
	if total != cluster.Slots-3*4096 || !v2.Complete() {
		t.Fatalf("the new shard imports %d slots (complete %v)", total, v2.Complete())
	}
	// An eighth node while the moves run: the new shard lacks a replica.
	eighth := member(7, "h")
	all := append(append(slices.Clone(ms), seventh), eighth)
	v3, err := Reconcile(v2, all, 1, Change{})
	if err != nil || v3 == nil || len(v3.Shards) != 4 || len(v3.Shards[3].Replicas) != 1 || v3.Shards[3].Replicas[0].ID != eighth.ID {
		t.Fatalf("eighth: %+v %v", v3, err)
	}
	// A ninth waits: every shard has its replica and slots are moving.
	ninth := member(8, "h")
	if v, err := Reconcile(v3, append(slices.Clone(all), ninth), 1, Change{}); v != nil || err != nil {
		t.Fatalf("ninth during moves: %+v %v", v, err)
	}
	// Shard 1's move is done.
	done := Change{Moved: map[[2]string]bool{{ns.ID, v3.Shards[1].ID}: true}}
	v4, err := Reconcile(v3, all, 1, done)
	if err != nil || v4 == nil || !v4.Complete() {
		t.Fatalf("move done: %+v %v", v4, err)
	}
	if got := count(v4.Shards[3].Slots); got != count(ns.Importing[1].Slots) || len(v4.Shards[3].Importing) != 2 {
		t.Fatalf("after one move the new shard serves %d slots, imports %v", got, v4.Shards[3].Importing)
	}
	if got := count(v4.Shards[1].Slots); got != 4096 {
		t.Fatalf("shard 1 serves %d slots after giving its share, want 4096", got)
	}
	if v4.Owner(ns.Importing[1].Slots[0][0]) != 3 {
		t.Fatal("a moved slot is not the new shard's")
	}
}

// TestReconcileAbandonedMove: the importing shard's primary dies with no
// replica before any move is done: the shard and its moves go, the
// sources keep every slot.
func TestReconcileAbandonedMove(t *testing.T) {
	ms := []Member{member(0, "h"), member(1, "h")}
	topo, err := Form(ms, 0) // 2 primaries
	if err != nil {
		t.Fatal(err)
	}
	v2, err := Reconcile(topo, append(slices.Clone(ms), member(2, "h")), 0, Change{})
	if err != nil || v2 == nil || len(v2.Shards) != 3 {
		t.Fatalf("third: %+v %v", v2, err)
	}
	v3, err := Reconcile(v2, ms, 0, Change{})
	if err != nil || v3 == nil || len(v3.Shards) != 2 || !v3.Complete() || moving(v3) {
		t.Fatalf("abandoned: %+v %v", v3, err)
	}
	for i := range v3.Shards {
		if !reflect.DeepEqual(v3.Shards[i].Slots, topo.Shards[i].Slots) {
			t.Fatalf("shard %d serves %v, had %v", i, v3.Shards[i].Slots, topo.Shards[i].Slots)
		}
	}
}

// TestReconcileForget: a dead primary without a replica keeps its slots,
// marked down (CLUSTERDOWN for them), until it is forgotten; then its
// shard goes and its slots are spread over the others.
func TestReconcileForget(t *testing.T) {
	ms := []Member{member(0, "h"), member(1, "h"), member(2, "h")}
	topo, err := Form(ms, 0)
	if err != nil {
		t.Fatal(err)
	}
	alive := ms[1:]
	down, err := Reconcile(topo, alive, 0, Change{})
	if err != nil || down == nil || !down.Shards[0].Down || down.Shards[0].Primary.ID != ms[0].ID || down.Shards[1].Down {
		t.Fatalf("dead primary, not forgotten: %+v %v", down, err)
	}
	if v, err := Reconcile(down, alive, 0, Change{}); v != nil || err != nil {
		t.Fatalf("dead primary, down already: %+v %v", v, err)
	}
	v2, err := Reconcile(topo, alive, 0, Change{Forget: map[string]bool{ms[0].ID: true}})
	if err != nil || v2 == nil || len(v2.Shards) != 2 || !v2.Complete() {
		t.Fatalf("forgotten: %+v %v", v2, err)
	}
	a, b := count(v2.Shards[0].Slots), count(v2.Shards[1].Slots)
	if a+b != cluster.Slots || a < 8191 || b < 8191 {
		t.Fatalf("slots spread %d + %d", a, b)
	}
	if _, ok := v2.Find("h", 7000); ok {
		t.Fatal("the forgotten node is still named")
	}
}

// TestReconcileMigratesReplicas: a shard left without its replica (here a
// new shard, after a failover took its only one) gets one from a shard
// that has more than wanted, on another host than its primary when one
// allows; nothing moves when no shard has a surplus.
func TestReconcileMigratesReplicas(t *testing.T) {
	ms := []Member{member(0, "h1"), member(1, "h2"), member(2, "h1"), member(3, "h2")}
	topo, err := Form(ms[:3], 1) // one primary (h1) with two replicas (h2, h1)
	if err != nil || len(topo.Shards) != 1 || len(topo.Shards[0].Replicas) != 2 {
		t.Fatalf("form: %+v %v", topo, err)
	}
	// The fourth node: no shard lacks a replica, so it is a new shard's
	// primary (h2), and takes a replica from the first, the one on h1.
	v2, err := Reconcile(topo, ms, 1, Change{})
	if err != nil || v2 == nil || len(v2.Shards) != 2 {
		t.Fatalf("fourth: %+v %v", v2, err)
	}
	if len(v2.Shards[0].Replicas) != 1 || len(v2.Shards[1].Replicas) != 1 {
		t.Fatalf("replicas %v and %v, want one each", v2.Shards[0].Replicas, v2.Shards[1].Replicas)
	}
	if r := v2.Shards[1].Replicas[0]; r.Host == v2.Shards[1].Primary.Host {
		t.Fatalf("the migrated replica %v is on its new primary's host %s", r, v2.Shards[1].Primary.Host)
	}
	if v, err := Reconcile(v2, ms, 1, Change{}); v != nil || err != nil {
		t.Fatalf("nothing to migrate: %+v %v", v, err)
	}
}

// incarnate gives members boot ids and leases, as etcd and the nodes would.
func incarnate(ms []Member) []Member {
	out := slices.Clone(ms)
	for i := range out {
		out[i].Boot, out[i].Lease = fmt.Sprintf("boot%d", i), int64(100+i)
	}
	return out
}

// TestReconcileIncarnations: a primary back under a new lease with its boot
// id (its lease lapsed, its memory did not) is confirmed in place; one
// restarted (a new boot id) is replaced by its eligible replica and becomes
// its replica; with no eligible replica it keeps its slots in its new
// incarnation.
func TestReconcileIncarnations(t *testing.T) {
	ms := incarnate([]Member{member(0, "h"), member(1, "h")})
	topo, err := Form(ms, 1) // one primary (0), one replica (1)
	if err != nil {
		t.Fatal(err)
	}
	p, r := topo.Shards[0].Primary, topo.Shards[0].Replicas[0]
	if p.Boot != "boot0" || p.Lease != 100 || r.Boot != "boot1" {
		t.Fatalf("formed without incarnations: %+v %+v", p, r)
	}
	synced := ms[1]
	synced.Follows = p.ID + "/boot0"
	if v, err := Reconcile(topo, []Member{ms[0], synced}, 1, Change{}); v != nil || err != nil {
		t.Fatalf("nothing changed: %+v %v", v, err)
	}

	lapsed := ms[0]
	lapsed.Lease = 200
	v, err := Reconcile(topo, []Member{lapsed, synced}, 1, Change{})
	if err != nil || v == nil || v.Shards[0].Primary != lapsed.node() || v.Shards[0].Replicas[0] != r {
		t.Fatalf("lease lapsed: %+v %v", v, err)
	}

	restarted := ms[0]
	restarted.Boot, restarted.Lease = "boot9", 300
	v, err = Reconcile(topo, []Member{restarted, synced}, 1, Change{})
	if err != nil || v == nil || v.Shards[0].Primary.ID != r.ID || len(v.Shards[0].Replicas) != 1 ||
		v.Shards[0].Replicas[0] != restarted.node() {
		t.Fatalf("restarted with an eligible replica: %+v %v", v, err)
	}

	// Not eligible: no complete copy, a copy of another incarnation of
	// the primary, or one too old.
	stale := []Member{ms[1], synced, synced}
	stale[1].Follows = p.ID + "/boot7"
	stale[2].DownMs = 31000
	for i, rm := range stale {
		v, err := Reconcile(topo, []Member{restarted, rm}, 1, Change{MaxDown: 30 * time.Second})
		if err != nil || v == nil || v.Shards[0].Primary != restarted.node() || v.Shards[0].Down {
			t.Fatalf("case %d: restarted with no eligible replica: %+v %v", i, v, err)
		}
	}
}

// TestReconcileNoEligibleReplica: a primary gone with no eligible replica
// leaves its shard down, its replica in place; an operator's force
// promotes that replica; absent nodes keep their places under grace.
func TestReconcileNoEligibleReplica(t *testing.T) {
	ms := incarnate([]Member{member(0, "h"), member(1, "h"), member(2, "h"), member(3, "h")})
	topo, err := Form(ms, 1) // primaries 0 and 1, replicas 2 and 3
	if err != nil {
		t.Fatal(err)
	}
	s0 := topo.Shards[0]
	rep := slices.IndexFunc(ms, func(m Member) bool { return m.ID == s0.Replicas[0].ID })
	var alive []Member
	for _, m := range ms {
		if m.ID != s0.Primary.ID {
			alive = append(alive, m) // the replica has no complete copy (Follows "")
		}
	}
	if v, err := Reconcile(topo, alive, 1, Change{Grace: true}); v != nil || err != nil {
		t.Fatalf("under grace: %+v %v", v, err)
	}
	v, err := Reconcile(topo, alive, 1, Change{})
	if err != nil || v == nil || !v.Shards[0].Down || v.Shards[0].Primary != s0.Primary || v.Shards[0].Replicas[0] != s0.Replicas[0] {
		t.Fatalf("no eligible replica: %+v %v", v, err)
	}
	forced, err := Reconcile(v, alive, 1, Change{Force: map[string]string{s0.ID: ms[rep].ID}})
	if err != nil || forced == nil || forced.Shards[0].Down || forced.Shards[0].Primary != ms[rep].node() {
		t.Fatalf("forced: %+v %v", forced, err)
	}
	// The primary returns (restarted) to a down shard: it serves again.
	back := ms[0]
	back.Boot, back.Lease = "boot9", 900
	up, err := Reconcile(v, append(slices.Clone(alive), back), 1, Change{})
	if err != nil || up == nil || up.Shards[0].Down || up.Shards[0].Primary != back.node() {
		t.Fatalf("the primary back: %+v %v", up, err)
	}
}
