package integration

// A reference Redis Cluster of Debian's redis-server, and the cluster
// clients of other languages (integration/clients/) run against it: what
// they report against real Redis is what rlserver's cluster mode is held
// to with the same scripts.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/internal/ports"
)

// The reference layout: shard i's primary is node i, its replica node i+3.
var refShardSlots = [3][2]int{{0, 5460}, {5461, 10922}, {10923, 16383}}

// redisNode is one redis-server process of a reference cluster.
type redisNode struct {
	Addr    string // 127.0.0.1:Port
	Port    int
	BusPort int    // its cluster bus port (--cluster-port)
	ID      string // its cluster node ID (CLUSTER MYID)
	cmd     *exec.Cmd
	logs    *logBuffer
	done    chan struct{}
	client  *redis.Client
}

// redisCluster is a running reference cluster: Nodes[0..2] are the
// primaries of shards 0, 1 and 2 (slots 0-5460, 5461-10922, 10923-16383),
// Nodes[3..5] their replicas, in that order.
type redisCluster struct {
	Nodes []*redisNode
	Dir   string
}

// Seed is the address of the first primary, a seed for cluster clients.
func (c *redisCluster) Seed() string { return c.Nodes[0].Addr }

// Stop kills every node (SIGKILL; nothing is persisted) and waits for it
// to exit. It is registered with t.Cleanup, and may be called before.
func (c *redisCluster) Stop() {
	for _, n := range c.Nodes {
		n.stop()
	}
}

func (n *redisNode) stop() {
	if n.client != nil {
		n.client.Close()
		n.client = nil
	}
	select {
	case <-n.done:
	default:
		n.cmd.Process.Kill()
		<-n.done
	}
}

// freePorts returns n distinct TCP ports on 127.0.0.1 that were free a
// moment ago: each is listened on, all at once so that none repeats, then
// closed. Another process may take one before the caller binds it; callers
// that start servers on them retry with new ports when a bind fails.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	free := make([]int, n)
	for i := range free {
		p, err := ports.Free()
		if err != nil {
			t.Fatalf("finding a free port: %v", err)
		}
		free[i] = p
	}
	return free
}

// startRedisCluster starts six redis-server processes in cluster mode on
// free loopback ports and forms the reference layout: three shards, each a
// primary with one replica. It returns once every node reports
// cluster_state:ok and every node's CLUSTER SLOTS shows that layout, with
// each replica in place. The cluster is stopped at the end of the test.
func startRedisCluster(t *testing.T) *redisCluster {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatalf("redis-server is not installed (%v): run ./scripts/setup.sh", err)
	}
	c := &redisCluster{Dir: t.TempDir()}
	t.Cleanup(func() {
		c.Stop()
		if t.Failed() {
			for i, n := range c.Nodes {
				t.Logf("redis-server node %d (%s) log:\n%s", i, n.Addr, n.logs)
			}
		}
	})
	for range 6 {
		c.Nodes = append(c.Nodes, startRedisNode(t, c.Dir))
	}

	for i, n := range c.Nodes {
		id, err := n.client.ClusterMyID(ctx).Result()
		if err != nil {
			t.Fatalf("CLUSTER MYID on node %d: %v", i, err)
		}
		n.ID = id
	}
	for i, r := range refShardSlots {
		if err := c.Nodes[i].client.ClusterAddSlotsRange(ctx, r[0], r[1]).Err(); err != nil {
			t.Fatalf("CLUSTER ADDSLOTSRANGE %d %d on node %d: %v", r[0], r[1], i, err)
		}
	}
	// Each pair meets directly, rather than through gossip, which is slower.
	for i, n := range c.Nodes {
		for _, m := range c.Nodes[i+1:] {
			err := n.client.Do(ctx, "CLUSTER", "MEET", "127.0.0.1", m.Port, m.BusPort).Err()
			if err != nil {
				t.Fatalf("CLUSTER MEET %s on %s: %v", m.Addr, n.Addr, err)
			}
		}
	}
	// A replica can follow its primary only once it knows it.
	c.waitFor(t, "every node to know the other five", func() error {
		for i, n := range c.Nodes {
			nodes, err := n.client.ClusterNodes(ctx).Result()
			if err != nil {
				return fmt.Errorf("node %d: %v", i, err)
			}
			for _, m := range c.Nodes {
				if !strings.Contains(nodes, m.ID+" ") {
					return fmt.Errorf("node %d does not list %s yet:\n%s", i, m.ID, nodes)
				}
			}
			if strings.Contains(nodes, "handshake") {
				return fmt.Errorf("node %d is still in a handshake:\n%s", i, nodes)
			}
		}
		return nil
	})
	for i := range 3 {
		if err := c.Nodes[i+3].client.ClusterReplicate(ctx, c.Nodes[i].ID).Err(); err != nil {
			t.Fatalf("CLUSTER REPLICATE on node %d: %v", i+3, err)
		}
	}
	c.waitFor(t, "cluster_state:ok and the full layout on every node", c.layoutReady)
	return c
}

// layoutReady tells why the cluster is not yet as laid out, or nil.
func (c *redisCluster) layoutReady() error {
	for i, n := range c.Nodes {
		info, err := n.client.ClusterInfo(ctx).Result()
		if err != nil {
			return fmt.Errorf("node %d: CLUSTER INFO: %v", i, err)
		}
		if !strings.Contains(info, "cluster_state:ok\r\n") {
			return fmt.Errorf("node %d: CLUSTER INFO:\n%s", i, info)
		}
		slots, err := n.client.ClusterSlots(ctx).Result()
		if err != nil {
			return fmt.Errorf("node %d: CLUSTER SLOTS: %v", i, err)
		}
		var got, want []string
		for _, s := range slots {
			line := fmt.Sprintf("%d-%d", s.Start, s.End)
			for _, m := range s.Nodes {
				line += " " + m.Addr + "/" + m.ID
			}
			got = append(got, line)
		}
		for s, r := range refShardSlots {
			p, rep := c.Nodes[s], c.Nodes[s+3]
			want = append(want, fmt.Sprintf("%d-%d %s/%s %s/%s", r[0], r[1], p.Addr, p.ID, rep.Addr, rep.ID))
		}
		if !reflect.DeepEqual(got, want) {
			return fmt.Errorf("node %d: CLUSTER SLOTS\n%s\nwant\n%s", i, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	return nil
}

// waitFor polls check until it returns nil, failing the test with its last
// error after 60 s.
func (c *redisCluster) waitFor(t *testing.T, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s: %v", what, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startRedisNode starts one redis-server in cluster mode, with its files in
// dir, and waits until it answers PING. It tries again on new ports when
// one it was given was taken meanwhile.
func startRedisNode(t *testing.T, dir string) *redisNode {
	t.Helper()
	var last error
	for range 5 {
		ports := freePorts(t, 2)
		n, err := tryRedisNode(t, dir, ports[0], ports[1])
		if err == nil {
			return n
		}
		last = err
		if !strings.Contains(err.Error(), "in use") {
			break
		}
	}
	t.Fatal(last)
	return nil
}

func tryRedisNode(t *testing.T, dir string, port, busPort int) (*redisNode, error) {
	t.Helper()
	n := &redisNode{
		Addr:    "127.0.0.1:" + strconv.Itoa(port),
		Port:    port,
		BusPort: busPort,
		logs:    &logBuffer{},
		done:    make(chan struct{}),
	}
	n.cmd = exec.Command("redis-server",
		"--bind", "127.0.0.1",
		"--port", strconv.Itoa(port),
		"--cluster-port", strconv.Itoa(busPort),
		"--cluster-enabled", "yes",
		"--cluster-config-file", filepath.Join(dir, fmt.Sprintf("nodes-%d.conf", port)),
		"--save", "",
		"--appendonly", "no",
		// A primary would wait 5 s for more replicas before it sends its
		// first one the data set; CLUSTER SLOTS lists a replica only once
		// it has synced.
		"--repl-diskless-sync-delay", "0",
		// Nor does it list one whose replication offset is 0: a primary
		// that has no writes moves its offset only with the PING it sends
		// its replicas every repl-ping-replica-period seconds (10).
		"--repl-ping-replica-period", "1",
		// Nodes learn each other's offsets from their pings, sent to each
		// node at least every half node timeout (15 s by default).
		"--cluster-node-timeout", "5000",
		"--dir", dir,
		"--logfile", "",
		"--daemonize", "no",
	)
	w := &logWriter{n.logs}
	n.cmd.Stdout, n.cmd.Stderr = w, w
	if err := n.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting redis-server: %v", err)
	}
	go func() { n.cmd.Wait(); close(n.done) }()
	n.client = redis.NewClient(&redis.Options{Addr: n.Addr, Protocol: 2, DisableIdentity: true, MaxRetries: -1})
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-n.done:
			n.stop()
			return nil, fmt.Errorf("redis-server on %s exited before it was ready: %v\n%s", n.Addr, n.cmd.ProcessState, n.logs)
		default:
		}
		if n.client.Ping(ctx).Err() == nil {
			return n, nil
		}
		if time.Now().After(deadline) {
			n.stop()
			return nil, fmt.Errorf("redis-server on %s not ready in 30s:\n%s", n.Addr, n.logs)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// logWriter appends a process's output to a logBuffer.
type logWriter struct{ l *logBuffer }

func (w *logWriter) Write(p []byte) (int, error) {
	w.l.mu.Lock()
	defer w.l.mu.Unlock()
	return w.l.b.Write(p)
}

// clusterClientScripts are the commands that run each language's cluster
// client script (paths from this package's directory); each reads a JSON
// array of commands on stdin and writes a JSON array of replies.
var clusterClientScripts = map[string][]string{
	"python": {"/usr/bin/python3", "clients/cluster.py"},
	"php":    {"php", "clients/cluster.php"},
	"node":   {"node", "clients/node/cluster.js"},
}

// runClusterClient runs lang's cluster client script ("python", "php" or
// "node") against the cluster at seed (host:port) with cmds, and returns
// its replies, one per command: integers as int64, strings, nil, []any for
// arrays, map[string]any for an error ({"error": text}) and for a reply the
// library merged from several nodes, bool where the library made one. It
// fails the test, with the script's stderr, when the script fails.
func runClusterClient(t *testing.T, lang, seed string, cmds [][]string) []any {
	t.Helper()
	argv, ok := clusterClientScripts[lang]
	if !ok {
		t.Fatalf("runClusterClient: no cluster client for %q", lang)
	}
	if lang == "node" {
		if _, err := os.Stat("clients/node/node_modules/ioredis"); err != nil {
			t.Fatalf("ioredis is not installed in integration/clients/node (%v): run ./scripts/setup.sh", err)
		}
	}
	in, err := json.Marshal(cmds)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(runCtx, argv[0], append(argv[1:], seed)...)
	cmd.Stdin = bytes.NewReader(in)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		hint := " (is its library installed? ./scripts/setup.sh installs it)"
		if errors.Is(err, exec.ErrNotFound) {
			hint = " (not installed: run ./scripts/setup.sh)"
		}
		t.Fatalf("%s cluster client %v%s: %v\nstderr:\n%s\nstdout:\n%s", lang, cmd.Args, hint, err, stderr.String(), stdout.String())
	}
	dec := json.NewDecoder(&stdout)
	dec.UseNumber()
	var out []any
	if err := dec.Decode(&out); err != nil {
		t.Fatalf("%s cluster client: decoding its output: %v\nstdout:\n%s\nstderr:\n%s", lang, err, stdout.String(), stderr.String())
	}
	if len(out) != len(cmds) {
		t.Fatalf("%s cluster client: %d replies to %d commands: %v\nstderr:\n%s", lang, len(out), len(cmds), out, stderr.String())
	}
	for i := range out {
		out[i] = jsonNumbers(out[i])
	}
	return out
}

// jsonNumbers turns the json.Numbers in v into int64 (or float64).
func jsonNumbers(v any) any {
	switch v := v.(type) {
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return i
		}
		f, _ := v.Float64()
		return f
	case []any:
		for i := range v {
			v[i] = jsonNumbers(v[i])
		}
	case map[string]any:
		for k := range v {
			v[k] = jsonNumbers(v[k])
		}
	}
	return v
}

// replyErr is the {"error": text} a client script prints for an error.
func replyErr(text string) map[string]any { return map[string]any{"error": text} }

// tagInShard returns the smallest number n such that a key with hash tag
// {n} is served by reference shard s.
func tagInShard(t *testing.T, s int) string {
	t.Helper()
	for n := 0; n < 1000; n++ {
		tag := strconv.Itoa(n)
		if slot := cluster.Slot([]byte(tag)); slot >= refShardSlots[s][0] && slot <= refShardSlots[s][1] {
			return tag
		}
	}
	t.Fatalf("no hash tag below 1000 in shard %d", s)
	return ""
}

// TestReferenceClusterClients runs the Python (redis-py), PHP (phpredis)
// and Node.js (ioredis) cluster clients against a real Redis Cluster, with
// commands on all three shards, and checks each library's exact replies:
// what the scripts report against Redis itself.
func TestReferenceClusterClients(t *testing.T) {
	t.Parallel()
	rc := startRedisCluster(t)

	var tags [3]string // a hash tag on each shard
	for s := range tags {
		tags[s] = tagInShard(t, s)
	}
	// OBJECT ENCODING's first argument is not its key; phpredis routes
	// rawCommand by it, and its slot is on another shard than the key's.
	encodingShard := 0
	for s, r := range refShardSlots {
		if slot := cluster.Slot([]byte("ENCODING")); slot >= r[0] && slot <= r[1] {
			encodingShard = s
		}
	}
	objShard := (encodingShard + 1) % 3

	for _, lang := range []string{"python", "php", "node"} {
		t.Run(lang, func(t *testing.T) {
			// Each language has its own keys, on the same slots.
			key := func(name string, s int) string { return lang + ":" + name + "{" + tags[s] + "}" }
			type step struct {
				cmd  []string
				want any
			}
			var steps []step
			add := func(want any, cmd ...string) { steps = append(steps, step{cmd, want}) }
			for s := range 3 {
				add("OK", "SET", key("k", s), "v"+strconv.Itoa(s))
			}
			for s := range 3 {
				add("v"+strconv.Itoa(s), "GET", key("k", s))
				add(int64(1), "INCR", key("n", s))
				add(int64(2), "INCR", key("n", s))
				add(nil, "GET", key("none", s))
			}
			add(int64(3), "RPUSH", key("l", 2), "a", "b", "c")
			add([]any{"a", "b", "c"}, "LRANGE", key("l", 2), "0", "-1")
			add([]any{}, "LRANGE", key("none", 1), "0", "-1")
			add([]any{"v0", nil}, "MGET", key("k", 0), key("none", 0))
			add(int64(1), "DEL", key("k", 1))
			add(nil, "GET", key("k", 1))

			notInt := "ERR value is not an integer or out of range"
			crossSlot := replyErr("CROSSSLOT Keys in request don't hash to the same slot")
			unknown := replyErr("ERR unknown command 'CL.THROTTLE', with args beginning with: '" + key("u", 1) + "' '10' '20' '60' ")
			var encoding any = "int"
			switch lang {
			case "python":
				// redis-py drops the ERR prefix, refuses keys in two slots
				// itself, and finds keys from the server's COMMAND reply:
				// a command Redis does not list never leaves the client.
				notInt = "value is not an integer or out of range"
				crossSlot = replyErr("MSET - all keys must map to the same key slot")
				unknown = replyErr("CL.THROTTLE command doesn't exist in Redis commands")
			case "php":
				// rawCommand goes to the node of its routing argument
				// ("ENCODING" here) and does not follow -MOVED.
				encoding = replyErr("Unable to send command to the specified node")
			}
			add(replyErr(notInt), "INCR", key("k", 0))
			add(crossSlot, "MSET", key("k", 0), "x", key("k", 2), "y")
			// An unknown command reaches the node of its key (Redis refuses
			// it there), but for redis-py.
			add(unknown, "CL.THROTTLE", key("u", 1), "10", "20", "60")
			add(encoding, "OBJECT", "ENCODING", key("n", objShard))

			cmds := make([][]string, len(steps))
			for i, s := range steps {
				cmds[i] = s.cmd
			}
			got := runClusterClient(t, lang, rc.Seed(), cmds)
			for i, s := range steps {
				if !reflect.DeepEqual(got[i], s.want) {
					t.Errorf("%v = %#v, want %#v", s.cmd, got[i], s.want)
				}
			}

			// The writes are on the primaries of their shards.
			for s := range 3 {
				v, err := rc.Nodes[s].client.Get(ctx, key("n", s)).Result()
				if err != nil || v != "2" {
					t.Errorf("GET %s on shard %d's primary = %q, %v; want \"2\"", key("n", s), s, v, err)
				}
			}
		})
	}
}
