package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"

	"github.com/rlserver/rlserver/cluster"
)

// rlCluster is a cluster of rlserver processes with the reference layout
// (refShardSlots): Nodes[0..2] the primaries of shards 0-2, Nodes[3..5]
// their replicas, from a static topology file.
type rlCluster struct {
	Nodes []*server
	IDs   []string
	Ports []int
	Topo  string // the --cluster-config file
	Dirs  []string
	args  []string
}

// topology writes the reference layout's topology at version, with the
// roles of shard 0's two nodes swapped when swap0 is set.
func (c *rlCluster) writeTopology(t *testing.T, version int, swap0 bool) {
	t.Helper()
	node := func(i int) cluster.Node { return cluster.Node{ID: c.IDs[i], Host: "127.0.0.1", Port: c.Ports[i]} }
	topo := cluster.Topology{Version: int64(version)}
	for i, r := range refShardSlots {
		p, rep := i, i+3
		if i == 0 && swap0 {
			p, rep = rep, p
		}
		topo.Shards = append(topo.Shards, cluster.Shard{Slots: []cluster.Range{{r[0], r[1]}}, Primary: node(p), Replicas: []cluster.Node{node(rep)}})
	}
	b, err := json.MarshalIndent(topo, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c.Topo, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// startRLCluster starts six rlservers (debug command on, persisting to
// their own directories) and waits until every replica is synchronised.
func startRLCluster(t *testing.T, args ...string) *rlCluster {
	t.Helper()
	dir := t.TempDir()
	c := &rlCluster{Topo: filepath.Join(dir, "topology.json"), Ports: freePorts(t, 6), args: args}
	for i := range 6 {
		c.IDs = append(c.IDs, fmt.Sprintf("%040x", 0xa0+i))
		c.Dirs = append(c.Dirs, filepath.Join(dir, "node"+strconv.Itoa(i)))
	}
	c.writeTopology(t, 1, false)
	c.Nodes = make([]*server, 6)
	for i := range 6 {
		c.Nodes[i] = c.startNode(t, i)
	}
	c.waitSynced(t)
	return c
}

func (c *rlCluster) startNode(t *testing.T, i int) *server {
	t.Helper()
	args := []string{"--port", strconv.Itoa(c.Ports[i]), "--dir", c.Dirs[i], "--enable-debug-command"}
	if c.Topo != "" {
		args = append(args, "--cluster-config", c.Topo)
	}
	args = append(args, c.args...)
	s, err := startCmd(t, c.Dirs[i], serverCommand(args...))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// waitSynced waits until every primary's ROLE lists its replica.
func (c *rlCluster) waitSynced(t *testing.T) {
	t.Helper()
	for i := range 6 {
		cl := c.Nodes[i].client(t, 2)
		eventually(t, fmt.Sprintf("node %d to be a primary with a synchronised replica, or a connected replica", i), func() bool {
			role, err := cl.Do(ctx, "ROLE").Slice()
			if err != nil || len(role) < 3 {
				return false
			}
			if role[0] == "master" {
				reps, _ := role[2].([]any)
				return len(reps) == 1
			}
			return role[3] == "connected"
		})
	}
}

func (c *rlCluster) clusterClient(t *testing.T) *redis.ClusterClient {
	t.Helper()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{c.Nodes[0].Addr}})
	t.Cleanup(func() { cc.Close() })
	return cc
}

// keysOverSlots returns n keys whose slots spread over all three shards.
func keysOverSlots(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = "user:" + strconv.Itoa(i)
	}
	return keys
}

// TestClusterRouting: a 3 primary + 3 replica rlserver cluster from a
// static topology. go-redis ClusterClient and rueidis, from one seed, get
// exact replies on keys spread over every slot range, each key stored on
// its slot's primary only; MOVED, CROSSSLOT (CL.ALL, DEL, EXEC) and the
// hash-tag way around it; replicas refuse writes (MOVED, READONLY) and
// serve reads after READONLY; the topology commands agree with the file.
func TestClusterRouting(t *testing.T) {
	t.Parallel()
	c := startRLCluster(t, "--repl-backlog-size", "2mb", "--shards", "4")
	cc := c.clusterClient(t)
	keys := keysOverSlots(150)
	perShard := [3]int{}
	for _, k := range keys {
		got, err := cc.Do(ctx, "CL.THROTTLE", k, "10", "10", "60").Slice()
		if err != nil {
			t.Fatalf("CL.THROTTLE %s: %v", k, err)
		}
		if fmt.Sprint(got) != "[0 11 10 -1 6]" {
			t.Fatalf("CL.THROTTLE %s = %v, want [0 11 10 -1 6]", k, got)
		}
		slot := cluster.Slot([]byte(k))
		for i, r := range refShardSlots {
			if slot >= r[0] && slot <= r[1] {
				perShard[i]++
			}
		}
	}
	for i := range 3 {
		if perShard[i] == 0 {
			t.Fatalf("no key in shard %d: %v", i, perShard)
		}
		n := do(t, c.Nodes[i].client(t, 2), "DBSIZE")
		n.equal(perShard[i])
	}
	// A second call per key: one token less, on the same node.
	for _, k := range keys[:20] {
		got, _ := cc.Do(ctx, "CL.THROTTLE", k, "10", "10", "60").Slice()
		if fmt.Sprint(got) != "[0 11 9 -1 12]" {
			t.Fatalf("second CL.THROTTLE %s = %v", k, got)
		}
	}

	// rueidis, from the same seed.
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{c.Nodes[0].Addr}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	for i, k := range keysOverSlots(60) {
		key := "rueidis:" + k
		got, err := rc.Do(ctx, rc.B().Arbitrary("CL.THROTTLE").Keys(key).Args("5", "5", "60").Build()).AsIntSlice()
		if err != nil || fmt.Sprint(got) != "[0 6 5 -1 12]" {
			t.Fatalf("rueidis CL.THROTTLE %s (#%d) = %v, %v", key, i, got, err)
		}
	}

	// Redirections and errors, to a plain client of node 0 (shard 0).
	n0 := c.Nodes[0].client(t, 2)
	far := "foo" // slot 12182: shard 2
	do(t, n0, "CL.THROTTLE", far, "1", "1", "1").errIs(fmt.Sprintf("MOVED 12182 127.0.0.1:%d", c.Ports[2]))
	do(t, n0, "CLUSTER", "KEYSLOT", far).equal(12182)
	do(t, n0, "DEL", "a", "b").errIs("CROSSSLOT Keys in request don't hash to the same slot")
	do(t, n0, "CL.ALL", "2", "THROTTLE", "a", "1", "1", "1", "FIXED", "b", "5", "1m").errIs("CROSSSLOT Keys in request don't hash to the same slot")
	// {user1000} is slot 3443: shard 0's.
	setClock(t, n0, t0)
	do(t, n0, "CL.ALL", "2", "THROTTLE", "{user1000}.a", "1", "1", "1", "FIXED", "{user1000}.b", "5", "1m").equal("[1 [1 2 1 0 1000] [1 5 4 0 60000]]")
	tx := n0.TxPipeline()
	tx.Do(ctx, "CL.THROTTLE", "{user1000}.a", "1", "1", "1")
	tx.Do(ctx, "CL.THROTTLE", "{user1000}.c", "1", "1", "1")
	if _, err := tx.Exec(ctx); err != nil {
		t.Fatalf("MULTI/EXEC in one slot: %v", err)
	}
	raw := dial(t, c.Nodes[0])
	raw.cmd("MULTI").expect("+OK")
	raw.cmd("CL.THROTTLE", "{user1000}.a", "1", "1", "1").expect("+QUEUED")
	raw.cmd("CL.THROTTLE", "bar", "1", "1", "1").expect("+QUEUED") // slot 5061: shard 0 too
	raw.cmd("EXEC").expect("-CROSSSLOT Keys in request don't hash to the same slot")
	raw.cmd("EXEC").expect("-ERR EXEC without MULTI") // discarded
	raw.cmd("MULTI").expect("+OK")
	raw.cmd("CL.THROTTLE", far, "1", "1", "1").expect(fmt.Sprintf("-MOVED 12182 127.0.0.1:%d", c.Ports[2]))
	raw.cmd("EXEC").expect("-EXECABORT Transaction discarded because of previous errors.")

	// Replica of shard 0: writes go to the primary, reads after READONLY.
	r0 := dial(t, c.Nodes[3])
	moved := fmt.Sprintf("-MOVED 3443 127.0.0.1:%d", c.Ports[0])
	r0.cmd("CL.THROTTLE", "{user1000}.a", "1", "1", "1").expect(moved)
	r0.cmd("EXISTS", "{user1000}.a").expect(moved)
	r0.cmd("FLUSHALL").expect("-READONLY You can't write against a read only replica.")
	// A key written at the real clock (the replica expires keys by its
	// own clock, which DEBUG CLOCK did not set).
	do(t, n0, "DEBUG", "CLOCK", "REAL").equal("OK")
	do(t, n0, "CL.THROTTLE", "{user1000}.r", "1", "1", "60").equal("[0 2 1 -1 60]")
	do(t, n0, "WAIT", "1", "5000").equal(1)
	// WAIT for more replicas than there are: it times out with the count,
	// the request pipelined after it answered after it, and another
	// connection served meanwhile.
	w := dial(t, c.Nodes[0])
	w.send("*3\r\n$4\r\nWAIT\r\n$1\r\n2\r\n$3\r\n300\r\n*1\r\n$4\r\nPING\r\n")
	do(t, n0, "PING").equal("PONG")
	w.expect(":1")
	w.expect("+PONG")
	r0.cmd("READONLY").expect("+OK")
	r0.cmd("EXISTS", "{user1000}.r").expect(":1")
	r0.cmd("CL.THROTTLE", "{user1000}.a", "1", "1", "1").expect(moved)
	r0.cmd("TTL", far).expect(fmt.Sprintf("-MOVED 12182 127.0.0.1:%d", c.Ports[2]))
	r0.cmd("READWRITE").expect("+OK")
	r0.cmd("EXISTS", "{user1000}.r").expect(moved)
	do(t, c.Nodes[3].client(t, 2), "WAIT", "1", "10").errIs("ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated.")

	// ROLE and INFO replication, primary and replica.
	role := do(t, n0, "ROLE").val.([]any)
	if role[0] != "master" || fmt.Sprint(role[2]) != fmt.Sprintf("[[127.0.0.1 %d %v]]", c.Ports[3], role[2].([]any)[0].([]any)[2]) {
		t.Fatalf("ROLE on a primary: %v", role)
	}
	do(t, c.Nodes[3].client(t, 2), "ROLE").equal(fmt.Sprintf("[slave 127.0.0.1 %d connected %v]", c.Ports[0], role[1]))
	for i, want := range map[int][]string{
		0: {"role:master", "connected_slaves:1", fmt.Sprintf("slave0:ip=127.0.0.1,port=%d,state=online,offset=", c.Ports[3]),
			"repl_backlog_size:8388608\r\n"}, // --repl-backlog-size 2mb per keyspace shard, 4 shards
		3: {"role:slave", fmt.Sprintf("master_port:%d", c.Ports[0]), "master_link_status:up", "master_sync_in_progress:0"},
	} {
		info := fmt.Sprint(do(t, c.Nodes[i].client(t, 2), "INFO", "replication").val)
		for _, w := range want {
			if !strings.Contains(info, w) {
				t.Fatalf("INFO replication on node %d lacks %q:\n%s", i, w, info)
			}
		}
	}

	// Topology commands agree with the file.
	do(t, n0, "CLUSTER", "MYID").equal(c.IDs[0])
	info := do(t, n0, "CLUSTER", "INFO")
	for _, want := range []string{"cluster_state:ok", "cluster_slots_assigned:16384", "cluster_known_nodes:6", "cluster_size:3"} {
		if !strings.Contains(fmt.Sprint(info.val), want+"\r\n") {
			t.Fatalf("CLUSTER INFO lacks %s:\n%v", want, info.val)
		}
	}
	nodes := fmt.Sprint(do(t, c.Nodes[4].client(t, 2), "CLUSTER", "NODES").val)
	wantLine := fmt.Sprintf("%s 127.0.0.1:%d@0 myself,slave %s 0 0 1 connected\n", c.IDs[4], c.Ports[4], c.IDs[1])
	if !strings.Contains(nodes, wantLine) || strings.Count(nodes, "\n") != 6 {
		t.Fatalf("CLUSTER NODES on node 4 lacks %q:\n%s", wantLine, nodes)
	}
	slot := cluster.Slot([]byte(keys[0]))
	owner := 0
	for i, r := range refShardSlots {
		if slot >= r[0] && slot <= r[1] {
			owner = i
		}
	}
	oc := c.Nodes[owner].client(t, 2)
	do(t, oc, "CLUSTER", "COUNTKEYSINSLOT", slot).equal(1)
	do(t, oc, "CLUSTER", "GETKEYSINSLOT", slot, 10).equal([]any{keys[0]})
	do(t, oc, "CLUSTER", "COUNTKEYSINSLOT", 16384).errIs("ERR Invalid slot")
	do(t, oc, "CLUSTER", "GETKEYSINSLOT", slot, -1).errIs("ERR Invalid slot or number of keys")
	do(t, oc, "INFO", "cluster").equal("# Cluster\r\ncluster_enabled:1\r\n")
	if got, err := oc.ConfigGet(ctx, "cluster-*").Result(); err != nil || got["cluster-enabled"] != "yes" ||
		got["cluster-config"] != c.Topo || got["cluster-etcd"] != "" || got["cluster-node-timeout"] != "3000" {
		t.Fatalf("CONFIG GET cluster-* = %v, %v", got, err)
	}
}

// cmd sends one request as a RESP array and returns r, for expect.
func (r *rawConn) cmd(args ...string) *rawConn {
	r.t.Helper()
	var b strings.Builder
	b.WriteString("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b.WriteString("$" + strconv.Itoa(len(a)) + "\r\n" + a + "\r\n")
	}
	r.send(b.String())
	return r
}

// TestClusterReplication: replicas hold their primary's resulting states.
// A replica killed mid-stream (SIGKILL) and restarted resumes from the
// position it kept (partial resynchronisation, the primary logs it); one
// whose directory was wiped takes a full copy; both end with the
// primary's keys. A newer topology that swaps shard 0's primary and
// replica (CLUSTER RELOAD on one, SIGHUP on the other) makes the replica the primary: it continues
// the limiter from the state it received, admitting exactly what the old
// primary had left.
func TestClusterReplication(t *testing.T) {
	t.Parallel()
	c := startRLCluster(t, "--save-interval", "100ms")
	p0 := c.Nodes[0].client(t, 2)
	const n = 300
	write := func(prefix string) {
		t.Helper()
		for i := range n {
			// {r} is slot 8858... use keys of shard 0: tagged {user1000}.
			do(t, p0, "CL.THROTTLE", fmt.Sprintf("{user1000}.%s%d", prefix, i), "10", "10", "3600").equal("[0 11 10 -1 360]") // outlives a slow run
		}
		do(t, p0, "WAIT", "1", "10000").equal(1)
	}
	dbsize := func(i int) int64 {
		t.Helper()
		v, err := c.Nodes[i].client(t, 2).DBSize(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	write("a")
	if got := dbsize(3); got != n {
		t.Fatalf("replica holds %d keys, want %d", got, n)
	}
	// The replication commands inside a transaction, on the primary and
	// on the replica: EXEC holds every shard lock, and they once took them
	// again (WAIT, INFO's master_repl_offset), which hung the node.
	r3 := c.Nodes[3].client(t, 2)
	do(t, r3, "READONLY").equal("OK")
	for i, cl := range []*redis.Client{p0, r3} {
		tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		cmds, err := cl.TxPipelined(tctx, func(p redis.Pipeliner) error {
			p.Do(tctx, "ROLE")
			p.Info(tctx, "replication")
			p.Do(tctx, "CLUSTER", "SLOTS")
			p.Do(tctx, "CLUSTER", "SHARDS")
			if i == 0 {
				p.Do(tctx, "WAIT", "1", "0")
			}
			p.Do(tctx, "DBSIZE")
			return nil
		})
		cancel()
		if err != nil {
			t.Fatalf("node %d: MULTI, ROLE, INFO, CLUSTER SLOTS, CLUSTER SHARDS, WAIT, DBSIZE, EXEC: %v", []int{0, 3}[i], err)
		}
		if got := cmds[len(cmds)-1].(*redis.Cmd).Val(); got != int64(n) {
			t.Fatalf("node %d: DBSIZE inside EXEC = %v, want %d", []int{0, 3}[i], got, n)
		}
	}
	// WAIT for more replicas than there are, without a timeout, by
	// clients that then hang up: the primary frees them, as Redis does
	// (it used to keep each connection, and its slot under maxclients,
	// for good).
	for range 3 {
		nc, err := net.Dial("tcp", c.Nodes[0].Addr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := nc.Write([]byte("WAIT 2 0\r\n")); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the WAIT to block", func() bool {
			return strings.Contains(p0.ClientList(ctx).Val(), " cmd=wait ")
		})
		nc.Close()
		eventually(t, "the primary to free the WAIT whose client hung up", func() bool {
			return !strings.Contains(p0.ClientList(ctx).Val(), " cmd=wait ")
		})
	}
	// Kill the replica once its position is on disk, write more, restart.
	offsets := filepath.Join(c.Dirs[3], "replication-offsets")
	eventually(t, "the replica to keep a position", func() bool {
		b, err := os.ReadFile(offsets)
		return err == nil && strings.Contains(string(b), `"offsets"`) && !strings.Contains(string(b), `"offsets":[0,0,0,0,0,0,0,0]`)
	})
	c.Nodes[3].kill()
	write2 := func(prefix string) {
		for i := range n {
			do(t, p0, "CL.THROTTLE", fmt.Sprintf("{user1000}.%s%d", prefix, i), "10", "10", "3600").equal("[0 11 10 -1 360]") // outlives a slow run
		}
	}
	write2("b")
	c.Nodes[3] = c.startNode(t, 3)
	do(t, p0, "WAIT", "1", "10000").equal(1)
	eventually(t, "the primary to log the partial resynchronisation", func() bool {
		return strings.Contains(c.Nodes[0].logs.String(), "replica "+c.IDs[3]+" (127.0.0.1:"+strconv.Itoa(c.Ports[3])+") resumes from offset")
	})
	if got := dbsize(3); got != 2*n {
		t.Fatalf("restarted replica holds %d keys, want %d", got, 2*n)
	}
	if full := strings.Count(c.Nodes[0].logs.String(), "full copy of"); full != 1 {
		t.Fatalf("the primary sent %d full copies, want 1 (the first):\n%s", full, c.Nodes[0].logs)
	}

	// Wiped: a full copy.
	c.Nodes[3].kill()
	if err := os.RemoveAll(c.Dirs[3]); err != nil {
		t.Fatal(err)
	}
	c.Nodes[3] = c.startNode(t, 3)
	do(t, p0, "WAIT", "1", "10000").equal(1)
	if got := dbsize(3); got != 2*n {
		t.Fatalf("wiped replica holds %d keys after resynchronising, want %d", got, 2*n)
	}
	if full := strings.Count(c.Nodes[0].logs.String(), "full copy of "+strconv.Itoa(2*n)+" keys"); full != 1 {
		t.Fatalf("the primary did not send the wiped replica a full copy of %d keys:\n%s", 2*n, c.Nodes[0].logs)
	}

	// Spend a limiter down to its last token on the primary, then promote
	// the replica: it admits exactly one more.
	key := "{user1000}.spent"
	for i := range 9 {
		do(t, p0, "CL.THROTTLE", key, "9", "1", "3600").equal(fmt.Sprintf("[0 10 %d -1 %d]", 9-i, 3600*(i+1)))
	}
	do(t, p0, "WAIT", "1", "10000").equal(1)
	c.writeTopology(t, 2, true)
	do(t, c.Nodes[3].client(t, 2), "CLUSTER", "RELOAD").equal("OK")
	// Node 0 adopts it on SIGHUP.
	if err := c.Nodes[0].cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	eventually(t, "node 0 to follow topology version 2 as a replica", func() bool {
		role, err := p0.Do(ctx, "ROLE").Slice()
		return err == nil && len(role) > 0 && role[0] == "slave"
	})
	do(t, p0, "CLUSTER", "RELOAD").errIs("ERR the topology file's version is not newer than the current one (2)")
	newP := c.Nodes[3].client(t, 2)
	got := do(t, newP, "CL.THROTTLE", key, "9", "1", "3600")
	if r := got.ints(); r[0] != 0 || r[2] != 0 {
		t.Fatalf("promoted replica: %v, want the last token admitted (remaining 0)", r)
	}
	if r := do(t, newP, "CL.THROTTLE", key, "9", "1", "3600").ints(); r[0] != 1 {
		t.Fatalf("promoted replica admitted beyond the limit: %v", r)
	}
	do(t, p0, "CL.THROTTLE", key, "9", "1", "3600").errIs(fmt.Sprintf("MOVED 3443 127.0.0.1:%d", c.Ports[3]))
	// The old primary, now a replica, gets the new primary's states.
	do(t, newP, "WAIT", "1", "10000").equal(1)
	if a, b := dbsize(0), dbsize(3); a != b || a != 2*n+1 {
		t.Fatalf("after the swap: old primary %d keys, new primary %d, want %d both", a, b, 2*n+1)
	}
}

// TestClusterClientsOfOtherLanguages: redis-py RedisCluster, phpredis
// RedisCluster and ioredis Cluster, each connected from one seed of a
// 3+3 rlserver cluster, get exact replies from limiters on every shard,
// CL.ALL over hash-tagged keys, and CROSSSLOT across slots.
func TestClusterClientsOfOtherLanguages(t *testing.T) {
	t.Parallel()
	c := startRLCluster(t)
	var tags [3]string
	for s := range tags {
		tags[s] = tagInShard(t, s)
	}
	for _, lang := range []string{"python", "php", "node"} {
		t.Run(lang, func(t *testing.T) {
			key := func(name string, s int) string { return lang + ":" + name + "{" + tags[s] + "}" }
			type step struct {
				cmd  []string
				want any
			}
			var steps []step
			add := func(want any, cmd ...string) { steps = append(steps, step{cmd, want}) }
			ints := func(v ...int64) []any {
				out := make([]any, len(v))
				for i, x := range v {
					out[i] = x
				}
				return out
			}
			for s := range 3 {
				add(ints(0, 11, 10, -1, 6), "CL.THROTTLE", key("t", s), "10", "10", "60")
				add(ints(0, 11, 9, -1, 12), "CL.THROTTLE", key("t", s), "10", "10", "60")
				add(int64(1), "EXISTS", key("t", s))
				add(int64(0), "EXISTS", key("none", s))
			}
			add([]any{int64(1), ints(1, 3, 2, 0, 60000), ints(1, 11, 10, 0, 6000)},
				"CL.ALL", "2", "THROTTLE", key("a", 1), "2", "1", "60", "THROTTLE", key("b", 1), "10", "10", "60")
			crossSlot := replyErr("CROSSSLOT Keys in request don't hash to the same slot")
			switch lang {
			case "python":
				crossSlot = replyErr("DEL - all keys must map to the same key slot") // refused by the client itself
			}
			add(crossSlot, "DEL", key("t", 0), key("t", 2))
			cmds := make([][]string, len(steps))
			for i, s := range steps {
				cmds[i] = s.cmd
			}
			got := runClusterClient(t, lang, c.Nodes[0].Addr, cmds)
			for i, s := range steps {
				if fmt.Sprintf("%#v", got[i]) != fmt.Sprintf("%#v", s.want) {
					t.Errorf("%v = %#v, want %#v", s.cmd, got[i], s.want)
				}
			}
			// Each limiter lives on its shard's primary.
			for s := range 3 {
				do(t, c.Nodes[s].client(t, 2), "EXISTS", key("t", s)).equal(1)
			}
		})
	}
}

// TestClusterRepliesMatchRedis: CLUSTER SLOTS, SHARDS and NODES of a
// 3+3 rlserver cluster and of a real Redis Cluster (Debian's
// redis-server) with the same layout, compared field by field (RESP2 and
// RESP3) once each node's id and port is replaced by its place in the
// layout. Values Redis makes up as it runs (ping times, epochs, offsets,
// the bus port) are compared by their type only.
func TestClusterRepliesMatchRedis(t *testing.T) {
	t.Parallel()
	rl := startRLCluster(t)
	rc := startRedisCluster(t)
	var rlNames, rcNames = map[string]string{}, map[string]string{}
	for i := range 6 {
		name := "node" + strconv.Itoa(i)
		rlNames[rl.IDs[i]], rlNames[strconv.Itoa(rl.Ports[i])] = name, name
		rcNames[rc.Nodes[i].ID], rcNames[strconv.Itoa(rc.Nodes[i].Port)] = name, name
	}
	for _, proto := range []int{2, 3} {
		for i := range 6 {
			rlc := redis.NewClient(&redis.Options{Addr: rl.Nodes[i].Addr, Protocol: proto})
			rcc := redis.NewClient(&redis.Options{Addr: rc.Nodes[i].Addr, Protocol: proto})
			for _, cmd := range []string{"SLOTS", "SHARDS", "NODES"} {
				a, err1 := rlc.Do(ctx, "CLUSTER", cmd).Result()
				b, err2 := rcc.Do(ctx, "CLUSTER", cmd).Result()
				if err1 != nil || err2 != nil {
					t.Fatalf("CLUSTER %s on node %d: rlserver %v, redis %v", cmd, i, err1, err2)
				}
				if cmd == "NODES" {
					a, b = nodesLines(a.(string)), nodesLines(b.(string))
				}
				na, nb := normalise(a, rlNames, ""), normalise(b, rcNames, "")
				if cmd != "SLOTS" {
					// Redis lists shards and nodes in its dictionary's order.
					na, nb = sortedByText(na.([]any)), sortedByText(nb.([]any))
				}
				if fmt.Sprintf("%#v", na) != fmt.Sprintf("%#v", nb) {
					t.Errorf("RESP%d CLUSTER %s on node %d:\nrlserver %#v\nredis    %#v", proto, cmd, i, na, nb)
				}
			}
			rlc.Close()
			rcc.Close()
		}
	}
}

func sortedByText(v []any) []any {
	slices.SortFunc(v, func(a, b any) int { return strings.Compare(fmt.Sprintf("%#v", a), fmt.Sprintf("%#v", b)) })
	return v
}

// nodesLines splits CLUSTER NODES into its lines' fields.
func nodesLines(s string) []any {
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		lines = append(lines, l)
	}
	out := make([]any, 0, len(lines))
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) > 1 {
			f[1], _, _ = strings.Cut(f[1], "@") // the bus port: Redis's, or 0
		}
		row := make([]any, len(f))
		for i, x := range f {
			switch i {
			case 4, 5, 6: // ping sent, pong received, config epoch
				row[i] = "<int>"
			default:
				row[i] = x
			}
		}
		out = append(out, row)
	}
	return out
}

// normalise replaces node ids and ports by the names of their places in
// the layout, and run-time values by their type; field names the value's
// map key.
func normalise(v any, names map[string]string, field string) any {
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalise(e, names, "")
		}
		if field == "" && len(out) > 0 {
			// A flat map in RESP2 (SHARDS): key, value, key, value.
			if k, ok := out[0].(string); ok && (k == "slots" || k == "id") {
				for i := 1; i < len(out); i += 2 {
					out[i] = normalise(x[i], names, out[i-1].(string))
				}
			}
		}
		return out
	case map[any]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, fmt.Sprint(k))
		}
		slices.Sort(keys)
		out := make([]any, 0, 2*len(keys))
		for _, k := range keys {
			out = append(out, k, normalise(x[k], names, k))
		}
		return out
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		out := make([]any, 0, 2*len(keys))
		for _, k := range keys {
			out = append(out, k, normalise(x[k], names, k))
		}
		return out
	case string:
		if n, ok := names[x]; ok {
			return n
		}
		if host, port, ok := strings.Cut(x, ":"); ok {
			if n, ok := names[port]; ok {
				return host + ":" + n
			}
		}
		return x
	case int64:
		if field == "replication-offset" {
			return "<int>"
		}
		if n, ok := names[strconv.FormatInt(x, 10)]; ok {
			return n
		}
		return x
	}
	return v
}
