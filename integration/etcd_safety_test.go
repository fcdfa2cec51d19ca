package integration

import (
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The faults of issue 39, each asserting that no decision confirmed by
// WAIT is lost: a primary killed and restarted at once on its directory,
// a replica restarted empty with its primary killed during its copy, a
// primary paused across its lease, etcd paused for two leases.

// replicaOf returns the index of primary p's replica (its ROLE).
func (c *rlCluster) replicaOf(t *testing.T, p int) int {
	t.Helper()
	r := -1
	eventually(t, fmt.Sprintf("node %d to list its replica", p), func() bool {
		role, err := c.Nodes[p].client(t, 2).Do(ctx, "ROLE").Slice()
		if err != nil || role[0] != "master" || len(role[2].([]any)) != 1 {
			return false
		}
		port := role[2].([]any)[0].([]any)[1].(string)
		for i, n := range c.Nodes {
			if n != nil && strings.HasSuffix(n.Addr, ":"+port) {
				r = i
			}
		}
		return r >= 0
	})
	return r
}

// exhaust takes the one token of n token buckets on slot 3443 on client
// cl, each admitted, then confirms them with WAIT 1 (one replica or more).
func exhaust(t *testing.T, cl *redis.Client, prefix string, n int) {
	t.Helper()
	for i := 0; i < n; i += 1000 {
		pipe := cl.Pipeline()
		cmds := make([]*redis.Cmd, 0, 1000)
		for j := i; j < min(n, i+1000); j++ {
			cmds = append(cmds, pipe.Do(ctx, "CL.TOKENBUCKET", fmt.Sprintf("{user1000}.%s%d", prefix, j), "1", "1", "1h"))
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
		for j, cmd := range cmds {
			if r, _ := cmd.Slice(); len(r) == 0 || r[0] != int64(1) {
				t.Fatalf("key %s%d: %v, want admitted", prefix, i+j, r)
			}
		}
	}
	if n, err := cl.Do(ctx, "WAIT", "1", "10000").Int(); err != nil || n < 1 {
		t.Fatalf("WAIT 1 = %d, %v: the decisions are on no replica", n, err)
	}
}

// denied asserts that every one of n keys exhausted by exhaust is denied
// on client cl: the decisions confirmed were kept.
func denied(t *testing.T, cl *redis.Client, prefix string, n, step int) {
	t.Helper()
	lost := 0
	for i := 0; i < n; i += step {
		r := do(t, cl, "CL.TOKENBUCKET", fmt.Sprintf("{user1000}.%s%d", prefix, i), "1", "1", "1h").ints()
		if r[0] != 0 {
			lost++
		}
	}
	if lost > 0 {
		t.Fatalf("%d of %d keys admitted again: confirmed decisions were lost", lost, (n+step-1)/step)
	}
}

// refusesDecisions asserts that node answers a decision on slot 3443 with
// CLUSTERDOWN or a redirect, never a decision.
func refusesDecisions(t *testing.T, s *server, what string) {
	t.Helper()
	err := s.client(t, 2).Do(ctx, "CL.TOKENBUCKET", "{user1000}.probe", "1", "1", "1h").Err()
	if err == nil || !strings.HasPrefix(err.Error(), "CLUSTERDOWN") && !strings.HasPrefix(err.Error(), "MOVED") {
		t.Fatalf("%s answered a decision (%v)", what, err)
	}
}

// TestEtcdPrimaryRestartedAtOnce: a primary killed and restarted at once
// on its directory, with nothing flushed, comes back as a new incarnation:
// it serves nothing on its own say; the coordinator promotes its replica,
// which holds every confirmed decision, and the restarted node becomes
// that replica's replica without wiping it.
func TestEtcdPrimaryRestartedAtOnce(t *testing.T) {
	// Not parallel: a busy machine would starve the 3 s leases.
	etcd := startEtcd(t)
	c := etcdCluster(t, etcd, 6, "--save-interval", "1h")
	p := c.primaryOf(t, 0, 3443)
	r := c.replicaOf(t, p)
	const n = 200
	exhaust(t, c.Nodes[p].client(t, 2), "rs", n)
	c.Nodes[p].kill()
	killed := time.Now()
	c.Nodes[p] = c.startNode(t, p)
	if !strings.Contains(c.Nodes[p].logs.String(), " 0 keys restored") {
		t.Fatalf("the restarted primary restored keys (nothing was flushed):\n%s", c.Nodes[p].logs)
	}
	rc := c.Nodes[r].client(t, 2)
	eventually(t, "the replica to be promoted", func() bool {
		refusesDecisions(t, c.Nodes[p], "the restarted primary")
		role, err := rc.Do(ctx, "ROLE").Slice()
		return err == nil && role[0] == "master"
	})
	t.Logf("replica promoted %v after the kill", time.Since(killed).Round(time.Millisecond))
	denied(t, rc, "rs", n, 1)
	old := c.Nodes[p].client(t, 2)
	eventually(t, "the restarted node to be a connected replica", func() bool {
		role, err := old.Do(ctx, "ROLE").Slice()
		return err == nil && len(role) == 5 && role[0] == "slave" && role[3] == "connected"
	})
	if logs := c.Nodes[r].logs.String(); strings.Contains(logs, "full copy complete") && strings.Count(logs, "full copy complete") > 1 {
		t.Fatalf("the promoted replica took another full copy:\n%s", logs)
	}
	denied(t, rc, "rs", n, 1)
}

// TestEtcdEmptyReplicaNotPromoted: a replica restarted on an empty
// directory takes a full copy; its primary is killed during it. The
// replica, with no complete copy, is never promoted: the shard's slots
// answer CLUSTERDOWN until the primary returns on its directory, which
// then serves every confirmed decision it flushed. A copy cut short wipes
// nothing on the replica either.
func TestEtcdEmptyReplicaNotPromoted(t *testing.T) {
	// Not parallel: a busy machine would starve the 3 s leases.
	etcd := startEtcd(t)
	c := etcdCluster(t, etcd, 6)
	p := c.primaryOf(t, 0, 3443)
	r := c.replicaOf(t, p)
	const n = 50000
	pc := c.Nodes[p].client(t, 2)
	exhaust(t, pc, "er", n)
	do(t, pc, "SAVE").equal("OK")
	c.Nodes[r].kill()
	c.Dirs[r] = filepath.Join(t.TempDir(), "empty")
	c.Nodes[r] = c.startNode(t, r)
	eventually(t, "the new replica's full copy to begin", func() bool {
		return strings.Contains(c.Nodes[r].logs.String(), "full copy from primary")
	})
	c.Nodes[p].kill()
	killed := time.Now()
	rc := c.Nodes[r].client(t, 2)
	promoted := func() bool {
		role, err := rc.Do(ctx, "ROLE").Slice()
		if err != nil || role[0] != "master" {
			return false
		}
		if !strings.Contains(c.Nodes[r].logs.String(), "full copy complete") {
			t.Fatal("the replica without a complete copy was promoted")
		}
		return true
	}
	// Down (the coordinator marks the shard so, past the lease), unless
	// the whole copy had arrived: then the replica holds every decision
	// and is promoted.
	down := false
	eventually(t, "the shard to answer CLUSTERDOWN on the replica, or a complete copy promoted", func() bool {
		err := rc.Do(ctx, "CL.TOKENBUCKET", "{user1000}.probe", "1", "1", "1h").Err()
		down = err != nil && err.Error() == "CLUSTERDOWN The cluster is down"
		return down || promoted()
	})
	if !down {
		t.Log("the copy was complete when the primary was killed")
		denied(t, rc, "er", n, 50)
		return
	}
	for time.Since(killed) < 6*time.Second { // two leases: no promotion comes
		if promoted() {
			t.Log("the copy completed after the primary was killed")
			denied(t, rc, "er", n, 50)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.Nodes[p] = c.startNode(t, p)
	pc = c.Nodes[p].client(t, 2)
	eventually(t, "the old primary to serve again", func() bool {
		return pc.Do(ctx, "CL.TOKENBUCKET", "{user1000}.probe", "1", "1", "1h").Err() == nil
	})
	denied(t, pc, "er", n, 50)
}

// TestEtcdPausedPrimary: a primary paused (SIGSTOP) for TTL-900 ms up to
// TTL+600 ms, with a client writing to it the moment it resumes: every
// decision it confirmed (admitted, then WAIT 1 answered 1), before or
// after the pause, is known to whichever node serves the slot afterwards.
func TestEtcdPausedPrimary(t *testing.T) {
	// Not parallel: a busy machine would starve the 3 s leases.
	etcd := startEtcd(t)
	c := etcdCluster(t, etcd, 6)
	const ttl = 3 * time.Second
	for step, pause := range []time.Duration{ttl - 900*time.Millisecond, ttl - 300*time.Millisecond, ttl, ttl + 300*time.Millisecond, ttl + 600*time.Millisecond} {
		key := "{user1000}.pause" + strconv.Itoa(step)
		p := c.primaryOf(t, 0, 3443)
		if p < 0 {
			t.Fatalf("step %d: no primary for slot 3443", step)
		}
		pcl := c.Nodes[p].client(t, 2)
		confirmed := 0
		for range 3 {
			do(t, pcl, "CL.TOKENBUCKET", key, "1000000", "1", "1h")
			do(t, pcl, "WAIT", "1", "10000").equal(1)
			confirmed++
		}
		raw := dial(t, c.Nodes[p])
		proc := c.Nodes[p].cmd.Process
		if err := proc.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		time.Sleep(pause) // the fault itself: how long the primary is frozen
		if err := proc.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		// From the moment it resumes, for a second and a half: the window
		// in which a node back from a lapsed lease could serve on its old
		// topology while the coordinator fails it over.
		resumed := time.Now()
		answers := map[string]int{}
		// down, then admitted, then moved: it served on its old topology
		// after its lease lapsed, while being failed over.
		fenced, servedAfter := false, false
		for time.Since(resumed) < 1500*time.Millisecond {
			raw.cmd("CL.TOKENBUCKET", key, "1000000", "1", "1h")
			raw.cmd("WAIT", "1", "100")
			decided, waited := raw.reply(), raw.reply()
			if strings.HasPrefix(decided, "*5 :0 ") {
				decided = "denial"
			} else if strings.HasPrefix(decided, "*5 :1 ") {
				decided = "admission"
				if waited != ":0" {
					confirmed++
					decided = "confirmed admission"
				}
			}
			answers[decided]++
			switch {
			case strings.HasPrefix(decided, "-CLUSTERDOWN"):
				fenced = true
			case fenced && strings.HasSuffix(decided, "admission"):
				servedAfter = true
			case servedAfter && strings.HasPrefix(decided, "-MOVED"):
				t.Fatalf("step %d: back from a lapsed lease, it made decisions on its old topology while being failed over: %v", step, answers)
			}
		}
		t.Logf("step %d: paused %v; answers after it resumed: %v", step, pause, answers)
		c.waitServing(t, key)
		cc := c.clusterClient(t)
		var left int64
		eventually(t, "the slot to be served", func() bool {
			res, err := cc.Do(ctx, "CL.TOKENBUCKET", key, "1000000", "1", "1h").Slice()
			if err != nil {
				cc.ReloadState(ctx)
				return false
			}
			left = res[2].(int64)
			return true
		})
		// Every confirmed decision, and the one just made, are known.
		if max := int64(1000000 - confirmed - 1); left > max {
			t.Fatalf("step %d: %d tokens left, want at most %d: a confirmed decision was lost", step, left, max)
		}
		c.waitSynced(t)
	}
}

// waitServing waits until every node agrees on key's slot's primary and
// that primary takes decisions.
func (c *rlCluster) waitServing(t *testing.T, key string) {
	t.Helper()
	eventually(t, "every node to agree on slot 3443's primary, serving", func() bool {
		p := c.primaryOf(t, 0, 3443)
		for i := range c.Nodes {
			if c.primaryOf(t, i, 3443) != p {
				return false
			}
		}
		return p >= 0 && c.Nodes[p].client(t, 2).Do(ctx, "CL.TOKENBUCKET", "{user1000}.probe", "1", "1", "1h").Err() == nil
	})
}

// reply reads one whole reply (an array's elements too) as its lines.
// reply reads one whole reply as text: its lines, a bulk string's bytes
// after its length, and an aggregate's elements after its count.
func (r *rawConn) reply() string {
	r.t.Helper()
	line := r.line()
	if line == "" {
		return line
	}
	n, err := strconv.Atoi(line[1:])
	switch line[0] {
	case '$', '=':
		if err == nil && n >= 0 {
			b := make([]byte, n+2)
			if _, err := io.ReadFull(r.rd, b); err != nil {
				r.t.Fatal(err)
			}
			line += " " + string(b[:n])
		}
	case '*', '~', '%', '>':
		if line[0] == '%' {
			n *= 2
		}
		for range n {
			line += " " + r.reply()
		}
	}
	return line
}

// TestEtcdStall: etcd paused (SIGSTOP) for two leases. Every lease
// expires; when etcd resumes, the nodes register again as new
// incarnations, exactly one of them coordinates, it fails no live node
// over (every primary keeps its shard, no node is removed), and every
// decision confirmed before the stall is kept.
func TestEtcdStall(t *testing.T) {
	// Not parallel: a busy machine would starve the 3 s leases.
	etcd := startEtcd(t)
	c := etcdCluster(t, etcd, 6)
	cc := c.clusterClient(t)
	keys := keysOverSlots(30)
	for _, k := range keys {
		if err := cc.Do(ctx, "CL.TOKENBUCKET", "st:"+k, "1", "1", "1h").Err(); err != nil {
			t.Fatal(err)
		}
	}
	for i := range c.Nodes {
		if role, _ := c.Nodes[i].client(t, 2).Do(ctx, "ROLE").Slice(); role[0] == "master" {
			do(t, c.Nodes[i].client(t, 2), "WAIT", "1", "10000").equal(1)
		}
	}
	roles := func() string {
		var b strings.Builder
		for i := range c.Nodes {
			role, err := c.Nodes[i].client(t, 2).Do(ctx, "ROLE").Slice()
			if err != nil {
				return err.Error()
			}
			fmt.Fprintf(&b, "%d:%v ", i, role[0])
		}
		return b.String()
	}
	before := roles()
	coordinated := make([]int, 6)
	for i := range c.Nodes {
		coordinated[i] = strings.Count(c.Nodes[i].logs.String(), "this node coordinates")
	}
	proc := findEtcd(t, etcd)
	if err := proc.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(6 * time.Second) // the fault itself: two leases without etcd
	if err := proc.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	eventually(t, "every key to be served again", func() bool {
		for _, k := range keys {
			if err := cc.Do(ctx, "CL.TOKENBUCKET", "st2:"+k, "1", "1", "1h").Err(); err != nil {
				cc.ReloadState(ctx)
				return false
			}
		}
		return true
	})
	c.waitSynced(t)
	if after := roles(); after != before {
		t.Fatalf("roles changed over the stall:\nbefore %s\nafter  %s", before, after)
	}
	elected := 0
	for i := range c.Nodes {
		logs := c.Nodes[i].logs.String()
		elected += strings.Count(logs, "this node coordinates") - coordinated[i]
		if strings.Contains(logs, "promoted") || strings.Contains(logs, "no replica is eligible") {
			t.Fatalf("node %d failed a live node over:\n%s", i, logs)
		}
	}
	if elected != 1 {
		t.Fatalf("%d nodes began to coordinate after the stall, want exactly 1", elected)
	}
	for _, k := range keys {
		r, err := cc.Do(ctx, "CL.TOKENBUCKET", "st:"+k, "1", "1", "1h").Slice()
		if err != nil || r[0] != int64(0) {
			t.Fatalf("%s after the stall: %v %v, want denied", k, r, err)
		}
	}
}

// TestEtcdFailoverContinuesHistory: in a shard of a primary and two
// replicas, the replica promoted after the primary's kill continues its
// primary's history: the sibling replica, and the old primary restarted on
// its directory (flushed by SAVE before more decisions it never flushed),
// catch up from the stream instead of a full copy, and end with exactly
// the promoted node's keys.
func TestEtcdFailoverContinuesHistory(t *testing.T) {
	// Not parallel: a busy machine would starve the 3 s leases.
	etcd := startEtcd(t)
	c, p := oneShard(t, etcd, 3, "--save-interval", "1h")
	pc := c.Nodes[p].client(t, 2)
	exhaust(t, pc, "hi", 500)
	do(t, pc, "WAIT", "2", "10000").equal(2)
	do(t, pc, "SAVE").equal("OK")
	exhaust(t, pc, "hj", 200) // flushed by no one but the replicas' memory
	do(t, pc, "WAIT", "2", "10000").equal(2)
	fulls := func(i int) int { return strings.Count(c.Nodes[i].logs.String(), "full copy from primary") }
	var before [3]int
	for i := range 3 {
		before[i] = fulls(i)
	}
	c.Nodes[p].kill()
	np := -1
	eventually(t, "a replica to be promoted", func() bool {
		for i := range 3 {
			if i == p {
				continue
			}
			if role, err := c.Nodes[i].client(t, 2).Do(ctx, "ROLE").Slice(); err == nil && role[0] == "master" {
				np = i
				return true
			}
		}
		return false
	})
	sib := 3 - p - np
	npc := c.Nodes[np].client(t, 2)
	connected := func(i int) bool {
		role, err := c.Nodes[i].client(t, 2).Do(ctx, "ROLE").Slice()
		return err == nil && len(role) == 5 && role[0] == "slave" && role[3] == "connected"
	}
	eventually(t, "the sibling replica to follow the promoted node", func() bool { return connected(sib) })
	c.Nodes[p] = c.startNode(t, p)
	eventually(t, "the old primary to follow the promoted node", func() bool { return connected(p) })
	// (ROLE says connected once the replica offered its position; the
	// primary logs when it took it.)
	eventually(t, "the promoted node to let both replicas continue its history", func() bool {
		return strings.Count(c.Nodes[np].logs.String(), "continues history") == 2
	})
	for _, i := range []int{sib, p} {
		if n := fulls(i) - before[i]; n != 0 {
			t.Fatalf("node %d took %d full copies after the failover, want it to continue the stream:\n%s", i, n, c.Nodes[i].logs)
		}
	}
	denied(t, npc, "hi", 500, 1)
	denied(t, npc, "hj", 200, 1)
	want := npc.ClusterCountKeysInSlot(ctx, 3443).Val()
	for _, i := range []int{sib, p} {
		cl := c.Nodes[i].client(t, 2)
		eventually(t, fmt.Sprintf("node %d to hold the promoted node's %d keys of slot 3443", i, want), func() bool {
			return cl.ClusterCountKeysInSlot(ctx, 3443).Val() == want
		})
	}
}

// TestEtcdFailoverForce: a shard whose primary is gone and whose only
// replica never completed a copy is down (CLUSTERDOWN, CLUSTER INFO
// cluster_state:fail, the primary flagged fail); CLUSTER FAILOVER without
// FORCE is refused; CLUSTER FAILOVER FORCE on the replica has the
// coordinator promote it, and the shard serves again.
func TestEtcdFailoverForce(t *testing.T) {
	// Not parallel: a busy machine would starve the 3 s leases.
	etcd := startEtcd(t)
	c, p := oneShard(t, etcd, 2)
	r := 1 - p
	// The replica comes back empty (a new node) while the primary is
	// frozen: it is placed as the replica of a primary that never
	// streams to it, and the primary's lease expires.
	c.Nodes[r].kill()
	frozen := c.Nodes[p].cmd.Process
	if err := frozen.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer frozen.Kill()
	c.Dirs[r] = filepath.Join(t.TempDir(), "empty")
	c.Nodes[r] = c.startNode(t, r)
	rc := c.Nodes[r].client(t, 2)
	eventually(t, "the new node to be the replica of a shard that is down", func() bool {
		err := rc.Do(ctx, "CL.TOKENBUCKET", "{user1000}.probe", "1", "1", "1h").Err()
		return err != nil && err.Error() == "CLUSTERDOWN The cluster is down"
	})
	info, err := rc.ClusterInfo(ctx).Result()
	if err != nil || !strings.Contains(info, "cluster_state:fail") || !strings.Contains(info, "cluster_slots_fail:16384") {
		t.Fatalf("CLUSTER INFO of a down shard: %q %v", info, err)
	}
	if nodes := rc.ClusterNodes(ctx).Val(); !strings.Contains(nodes, " master,fail - ") {
		t.Fatalf("CLUSTER NODES does not flag the gone primary: %q", nodes)
	}
	do(t, rc, "CLUSTER", "FAILOVER").errIs("ERR only CLUSTER FAILOVER FORCE is supported: the coordinator fails primaries over by itself")
	do(t, rc, "CLUSTER", "FAILOVER", "FORCE").equal("OK")
	eventually(t, "the forced replica to serve", func() bool {
		return rc.Do(ctx, "CL.TOKENBUCKET", "{user1000}.probe", "1", "1", "1h").Err() == nil
	})
	do(t, rc, "CLUSTER", "FAILOVER", "FORCE").errIs("ERR this node is not a replica")
	coordinated := false
	for _, n := range c.Nodes {
		coordinated = coordinated || strings.Contains(n.logs.String(), "promoted by an operator's CLUSTER FAILOVER FORCE")
	}
	if !coordinated {
		t.Fatal("no coordinator logged the forced failover")
	}
}

// oneShard starts n rlservers on etcd forming one shard (a primary and
// n-1 replicas, with extra flags) and returns them with the index of the
// primary, once it lists every replica.
func oneShard(t *testing.T, etcd string, n int, extra ...string) (*rlCluster, int) {
	t.Helper()
	c := &rlCluster{Ports: freePorts(t, n), args: append([]string{"--cluster-etcd", etcd, "--cluster-name", "it",
		"--cluster-replicas", strconv.Itoa(n - 1)}, extra...)}
	dir := t.TempDir()
	c.Nodes = make([]*server, n)
	for i := range n {
		c.Dirs = append(c.Dirs, filepath.Join(dir, "node"+strconv.Itoa(i)))
		c.Nodes[i] = c.startNode(t, i)
	}
	p := -1
	eventually(t, fmt.Sprintf("a primary with %d connected replicas", n-1), func() bool {
		for i := range n {
			role, err := c.Nodes[i].client(t, 2).Do(ctx, "ROLE").Slice()
			if err == nil && role[0] == "master" && len(role[2].([]any)) == n-1 {
				p = i
				return true
			}
		}
		return false
	})
	return c, p
}
