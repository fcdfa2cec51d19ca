package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlserver/rlserver/cluster"
)

// startEtcd starts Debian's etcd on free loopback ports and returns its
// client endpoint; it is killed at the end of the test.
func startEtcd(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("etcd"); err != nil {
		t.Fatalf("etcd is not installed (%v): run ./scripts/setup.sh", err)
	}
	ports := freePorts(t, 2)
	client := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	peer := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	args := []string{"--data-dir", filepath.Join(t.TempDir(), "etcd"),
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer, "--initial-cluster", "default=" + peer,
		// A single member elects itself after one election timeout, at
		// every start: a short one restarts it quickly (TestEtcdRestart).
		"--heartbeat-interval", "25", "--election-timeout", "250"}
	endpoint := "127.0.0.1:" + strconv.Itoa(ports[0])
	runEtcd(t, endpoint, args)
	return endpoint
}

// runEtcd starts etcd with args (again, for a restart) and waits until it
// serves.
func runEtcd(t *testing.T, endpoint string, args []string) {
	t.Helper()
	cmd := exec.Command("etcd", args...)
	logs := &logBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("etcd log:\n%s", logs)
		}
	})
	eventually(t, "etcd to serve", func() bool {
		return strings.Contains(logs.String(), "ready to serve client requests")
	})
	etcdMu.Lock()
	etcdProcs[endpoint] = cmd.Process
	etcdArgs[endpoint] = args
	etcdMu.Unlock()
}

// TestEtcdClusterForms: six rlservers given only an etcd endpoint form a
// cluster of three primaries with one replica each, on their own: one of
// them is elected coordinator and writes the topology, every node adopts
// it, replicas synchronise, and go-redis ClusterClient gets exact replies
// on keys over every slot. A seventh node joins while clients run: it
// becomes the primary of a fourth shard and a quarter of the slots move
// to it online; the clients get no error, every key's token bucket counts
// exactly the decisions made, and the moved keys leave their old nodes.
// The coordinator's node killed, another is elected and every slot is
// served again.
func TestEtcdClusterForms(t *testing.T) {
	// Not parallel: a busy machine would starve the 3 s leases.
	etcd := startEtcd(t)
	c := &rlCluster{Ports: freePorts(t, 7)}
	dir := t.TempDir()
	for i := range 7 {
		c.Dirs = append(c.Dirs, filepath.Join(dir, "node"+strconv.Itoa(i)))
	}
	c.Nodes = make([]*server, 7)
	c.args = []string{"--cluster-etcd", etcd, "--cluster-name", "it"}
	start := func(i int) {
		args := append([]string{"--port", strconv.Itoa(c.Ports[i]), "--dir", c.Dirs[i], "--enable-debug-command"}, c.args...)
		s, err := startCmd(t, c.Dirs[i], serverCommand(args...))
		if err != nil {
			t.Fatal(err)
		}
		c.Nodes[i] = s
	}
	for i := range 6 {
		start(i)
	}
	clients := make([]*redis.Client, 7)
	for i := range 6 {
		clients[i] = c.Nodes[i].client(t, 2)
		eventually(t, fmt.Sprintf("node %d to adopt a complete topology", i), func() bool {
			info, err := clients[i].ClusterInfo(ctx).Result()
			return err == nil && strings.Contains(info, "cluster_state:ok")
		})
	}
	coordinators := 0
	primaries := 0
	for i := range 6 {
		if strings.Contains(c.Nodes[i].logs.String(), "this node coordinates") {
			coordinators++
		}
		role, _ := clients[i].Do(ctx, "ROLE").Slice()
		if role[0] == "master" {
			primaries++
		}
	}
	if coordinators != 1 || primaries != 3 {
		t.Fatalf("%d coordinators, %d primaries; want 1 and 3", coordinators, primaries)
	}
	c.Nodes = c.Nodes[:6]
	c.waitSynced(t)
	cc := c.clusterClient(t)
	for _, k := range keysOverSlots(90) {
		got, err := cc.Do(ctx, "CL.THROTTLE", k, "10", "10", "60").Slice()
		if err != nil || fmt.Sprint(got) != "[0 11 10 -1 6]" {
			t.Fatalf("CL.THROTTLE %s = %v, %v", k, got, err)
		}
	}

	// A seventh node joins while clients run: every shard has its
	// replica, so it becomes the primary of a fourth shard, and a quarter
	// of the slots move to it online. The clients see redirects only, and
	// every key's token bucket counts exactly the decisions made.
	// Redis values of every kind, over every slot, read back whole after
	// the moves: a value moves with its slot as a limiter's state does.
	vkeys := keysOverSlots(80)
	readValue := func(k string, i int) string {
		var r any
		var err error
		switch i % 4 {
		case 0:
			r, err = cc.Do(ctx, "GET", "v:"+k).Result()
		case 1:
			r, err = cc.Do(ctx, "HGETALL", "v:"+k).Result()
		case 2:
			r, err = cc.Do(ctx, "ZRANGE", "v:"+k, 0, -1, "WITHSCORES").Result()
		default:
			r, err = cc.Do(ctx, "LRANGE", "v:"+k, 0, -1).Result()
		}
		ttl := cc.TTL(ctx, "v:"+k).Val()
		return fmt.Sprint(r, err, ttl > 0)
	}
	vwant := make([]string, len(vkeys))
	for i, k := range vkeys {
		var err error
		switch i % 4 {
		case 0:
			err = cc.Do(ctx, "SET", "v:"+k, "s"+strconv.Itoa(i), "EX", 3600).Err()
		case 1:
			err = cc.Do(ctx, "HSET", "v:"+k, "tokens", i, "ts", 1700000000).Err()
		case 2:
			err = cc.Do(ctx, "ZADD", "v:"+k, 1, "a", 2, strconv.Itoa(i)).Err()
		default:
			err = cc.Do(ctx, "RPUSH", "v:"+k, "x", i).Err()
		}
		if err != nil {
			t.Fatalf("writing value v:%s: %v", k, err)
		}
		vwant[i] = readValue(k, i)
	}

	load := startLoad(t, c, 4, 200)
	c.Nodes = append(c.Nodes, nil)
	start(6)
	clients[6] = c.Nodes[6].client(t, 2)
	newAddr := c.Nodes[6].Addr
	eventually(t, "the seventh node to serve a quarter of the slots on every node", func() bool {
		var epoch string
		for i := range 7 {
			slots, err := clients[i].ClusterSlots(ctx).Result()
			if err != nil {
				return false
			}
			owned := 0
			for _, s := range slots {
				if s.Nodes[0].Addr == newAddr {
					owned += s.End - s.Start + 1
				}
			}
			info, _ := clients[i].ClusterInfo(ctx).Result()
			e := strings.SplitN(strings.SplitN(info, "cluster_current_epoch:", 2)[1], "\r\n", 2)[0]
			if owned != 4096 || i > 0 && e != epoch {
				return false
			}
			epoch = e
		}
		return true
	})
	load.after(100) // each client's keys, all served after the moves too
	load.check(t, cc)
	// A moved slot's keys are on the new node only.
	moved := -1
	for _, k := range load.keys {
		if c.primaryOf(t, 6, cluster.Slot([]byte(k))) == 6 {
			moved = cluster.Slot([]byte(k))
			break
		}
	}
	if moved < 0 {
		t.Fatal("no load key moved to the seventh node")
	}
	vmoved := 0
	for i, k := range vkeys {
		if got := readValue(k, i); got != vwant[i] {
			t.Fatalf("value v:%s after the moves: %s, want %s", k, got, vwant[i])
		}
		if c.primaryOf(t, 6, cluster.Slot([]byte("v:"+k))) == 6 {
			vmoved++
		}
	}
	if vmoved == 0 {
		t.Fatal("no value moved to the seventh node")
	}
	if n := clients[6].ClusterCountKeysInSlot(ctx, moved).Val(); n < 1 {
		t.Fatalf("the seventh node holds %d keys of slot %d", n, moved)
	}
	for i := range 6 {
		eventually(t, fmt.Sprintf("node %d to hold no key of moved slot %d", i, moved), func() bool {
			return clients[i].ClusterCountKeysInSlot(ctx, moved).Val() == 0
		})
	}

	// The coordinator's node is killed: another node is elected, and the
	// cluster serves every slot again (its shard failed over if it was a
	// primary).
	coord := -1
	for i := range 6 {
		if strings.Contains(c.Nodes[i].logs.String(), "this node coordinates") {
			coord = i
		}
	}
	c.Nodes[coord].kill()
	eventually(t, "another node to coordinate", func() bool {
		for i := range 7 {
			if i != coord && strings.Contains(c.Nodes[i].logs.String(), "this node coordinates") {
				return true
			}
		}
		return false
	})
	survivor := c.Nodes[(coord+1)%7].Addr
	cc2 := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{survivor}})
	defer cc2.Close()
	eventually(t, "every slot to be served without the coordinator's node", func() bool {
		for _, k := range keysOverSlots(30) {
			if cc2.Do(ctx, "CL.THROTTLE", "after:"+k, "10", "10", "60").Err() != nil {
				cc2.ReloadState(ctx)
				return false
			}
		}
		return true
	})
}

// Write makes a logBuffer the log of a process the tests start.
func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// etcdCluster starts n rlservers on etcd (cluster "it", with extra flags) and waits until
// every one serves a complete topology and every replica is synchronised.
func etcdCluster(t *testing.T, etcd string, n int, extra ...string) *rlCluster {
	t.Helper()
	c := &rlCluster{Ports: freePorts(t, n), args: append([]string{"--cluster-etcd", etcd, "--cluster-name", "it"}, extra...)}
	dir := t.TempDir()
	for i := range n {
		c.Dirs = append(c.Dirs, filepath.Join(dir, "node"+strconv.Itoa(i)))
		c.IDs = append(c.IDs, "")
	}
	c.Nodes = make([]*server, n)
	for i := range n {
		c.Nodes[i] = c.startNode(t, i)
	}
	for i := range n {
		cl := c.Nodes[i].client(t, 2)
		eventually(t, fmt.Sprintf("node %d to adopt a complete topology", i), func() bool {
			info, err := cl.ClusterInfo(ctx).Result()
			return err == nil && strings.Contains(info, "cluster_state:ok")
		})
	}
	if r := slices.Index(extra, "--cluster-replicas"); r < 0 || extra[r+1] != "0" {
		c.waitSynced(t)
	}
	return c
}

// primaryOf returns the index of the node a live node's CLUSTER SLOTS
// names as slot's primary, or -1.
func (c *rlCluster) primaryOf(t *testing.T, from, slot int) int {
	t.Helper()
	slots, err := c.Nodes[from].client(t, 2).ClusterSlots(ctx).Result()
	if err != nil {
		return -1
	}
	for _, s := range slots {
		if slot >= s.Start && slot <= s.End {
			for i, p := range c.Ports {
				if s.Nodes[0].Addr == "127.0.0.1:"+strconv.Itoa(p) {
					return i
				}
			}
		}
	}
	return -1
}

// TestEtcdFailover: in a 3+3 cluster run by etcd, a primary killed
// (SIGKILL) is replaced by its replica once its lease expires; the
// promoted replica continues the limiter from the state it received
// (admitting exactly the token left); the old node, restarted, rejoins as
// a replica and synchronises. With etcd unreachable (SIGSTOP), primaries
// fence themselves (CLUSTERDOWN) before their leases could expire, and
// serve again once it is back.
func TestEtcdFailover(t *testing.T) {
	// Not parallel: a busy machine would starve the 3 s leases.
	etcd := startEtcd(t)
	c := etcdCluster(t, etcd, 6)
	const key = "{user1000}.f" // slot 3443
	p := c.primaryOf(t, 0, 3443)
	if p < 0 {
		t.Fatal("no primary for slot 3443")
	}
	pc := c.Nodes[p].client(t, 2)
	for i := range 9 {
		do(t, pc, "CL.THROTTLE", key, "9", "1", "3600").equal(fmt.Sprintf("[0 10 %d -1 %d]", 9-i, 3600*(i+1)))
	}
	do(t, pc, "WAIT", "1", "10000").equal(1)
	c.Nodes[p].kill()
	other := (p + 1) % 6
	np := c.newPrimary(t, p, other)
	npc := c.Nodes[np].client(t, 2)
	eventually(t, "the promoted node to take writes", func() bool {
		return npc.Do(ctx, "ROLE").Val().([]any)[0] == "master"
	})
	if r := do(t, npc, "CL.THROTTLE", key, "9", "1", "3600").ints(); r[0] != 0 || r[2] != 0 {
		t.Fatalf("promoted replica: %v, want the last token admitted", r)
	}
	if r := do(t, npc, "CL.THROTTLE", key, "9", "1", "3600").ints(); r[0] != 1 {
		t.Fatalf("promoted replica admitted beyond the limit: %v", r)
	}
	// The old primary comes back: a replica, synchronised.
	c.Nodes[p] = c.startNode(t, p)
	old := c.Nodes[p].client(t, 2)
	eventually(t, "the old primary to rejoin as a connected replica", func() bool {
		role, err := old.Do(ctx, "ROLE").Slice()
		return err == nil && len(role) == 5 && role[0] == "slave" && role[3] == "connected"
	})

	// etcd unreachable: primaries fence themselves, then serve again.
	etcdProc := findEtcd(t, etcd)
	if err := etcdProc.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := true
	defer func() {
		if stopped {
			etcdProc.Signal(syscall.SIGCONT)
		}
	}()
	eventually(t, "the primary of slot 3443 to fence itself", func() bool {
		err := npc.Do(ctx, "CL.THROTTLE", key, "9", "1", "3600").Err()
		return err != nil && err.Error() == "CLUSTERDOWN The cluster is down"
	})
	etcdProc.Signal(syscall.SIGCONT)
	stopped = false
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{c.Nodes[other].Addr}})
	defer cc.Close()
	eventually(t, "the cluster to serve slot 3443 again", func() bool {
		return cc.Do(ctx, "CL.THROTTLE", key+"x", "9", "1", "3600").Err() == nil
	})
}

// newPrimary waits until live node from names another node than old as
// slot 3443's primary (a failover), and returns its index.
func (c *rlCluster) newPrimary(t *testing.T, old, from int) int {
	t.Helper()
	np := -1
	eventually(t, "another node to serve slot 3443", func() bool {
		np = c.primaryOf(t, from, 3443)
		return np >= 0 && np != old
	})
	return np
}

// findEtcd returns the etcd process serving endpoint (started by startEtcd).
func findEtcd(t *testing.T, endpoint string) *os.Process {
	t.Helper()
	etcdMu.Lock()
	defer etcdMu.Unlock()
	p := etcdProcs[endpoint]
	if p == nil {
		t.Fatalf("no etcd started at %s", endpoint)
	}
	return p
}

var (
	etcdMu    sync.Mutex
	etcdProcs = map[string]*os.Process{}
	etcdArgs  = map[string][]string{}
)

// TestEtcdFailoverWithWaitLosesNothing: decisions each followed by
// WAIT 1 that returned 1 survive a failover exactly, for a GCRA, a token
// bucket and a fixed window: a primary SIGKILLed after 12 admissions of a
// limit of 20 is replaced by its replica, which admits exactly the 8 left
// of each, then denies.
func TestEtcdFailoverWithWaitLosesNothing(t *testing.T) {
	// Not parallel: a busy machine would starve the 3 s leases.
	etcd := startEtcd(t)
	c := etcdCluster(t, etcd, 6)
	limiters := []struct {
		name    string
		cmd     []any
		allowed func(r []int64) bool
	}{
		{"gcra", []any{"CL.THROTTLE", "{user1000}.thr", "19", "1", "3600"}, func(r []int64) bool { return r[0] == 0 }},
		{"tokenbucket", []any{"CL.TOKENBUCKET", "{user1000}.tb", "20", "1", "1h"}, func(r []int64) bool { return r[0] == 1 }},
		{"fixed window", []any{"CL.WINDOW", "{user1000}.win", "20", "1h", "FIXED"}, func(r []int64) bool { return r[0] == 1 }},
	}
	p := c.primaryOf(t, 0, 3443)
	pc := c.Nodes[p].client(t, 2)
	for _, l := range limiters {
		for i := range 12 {
			if r := do(t, pc, l.cmd...).ints(); !l.allowed(r) {
				t.Fatalf("%s: decision %d denied before the failover: %v", l.name, i, r)
			}
			do(t, pc, "WAIT", "1", "5000").equal(1)
		}
	}
	c.Nodes[p].kill()
	np := c.newPrimary(t, p, (p+1)%6)
	npc := c.Nodes[np].client(t, 2)
	eventually(t, "the promoted node to take decisions", func() bool {
		return npc.Do(ctx, "CL.THROTTLE", "{user1000}.probe", "1", "1", "1").Err() == nil
	})
	for _, l := range limiters {
		admitted := 0
		for range 20 {
			if l.allowed(do(t, npc, l.cmd...).ints()) {
				admitted++
			}
		}
		if admitted != 8 {
			t.Errorf("%s: the promoted replica admitted %d, want exactly the 8 the limit had left", l.name, admitted)
		}
	}
}

// TestEtcdFrozenPrimary: a primary frozen (SIGSTOP) until its replica has
// been promoted never serves its old slots when it runs again (SIGCONT):
// requests it had queued and ones sent after are answered CLUSTERDOWN or
// MOVED, never a decision; it then rejoins as a replica.
func TestEtcdFrozenPrimary(t *testing.T) {
	// Not parallel: a busy machine would starve the 3 s leases.
	etcd := startEtcd(t)
	c := etcdCluster(t, etcd, 6)
	p := c.primaryOf(t, 0, 3443)
	frozen := c.Nodes[p].cmd.Process
	if err := frozen.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer frozen.Signal(syscall.SIGCONT)
	np := c.newPrimary(t, p, (p+1)%6)
	npc := c.Nodes[np].client(t, 2)
	eventually(t, "the promoted node to take decisions", func() bool {
		return npc.Do(ctx, "CL.THROTTLE", "{user1000}.fz", "10", "10", "60").Err() == nil
	})
	// Queued while frozen: answered when it runs again.
	queued := dial(t, c.Nodes[p])
	queued.cmd("CL.THROTTLE", "{user1000}.fz", "10", "10", "60")
	if err := frozen.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	refused := func(line string) bool {
		return strings.HasPrefix(line, "-CLUSTERDOWN") || strings.HasPrefix(line, "-MOVED 3443 ")
	}
	if line := queued.line(); !refused(line) {
		t.Fatalf("the old primary answered a queued decision with %q", line)
	}
	old := c.Nodes[p].client(t, 2)
	eventually(t, "the old primary to rejoin as a connected replica", func() bool {
		err := old.Do(ctx, "CL.THROTTLE", "{user1000}.fz", "10", "10", "60").Err()
		if err == nil || !refused("-"+err.Error()) {
			t.Fatalf("the old primary answered a decision on its old slot: %v", err)
		}
		role, err := old.Do(ctx, "ROLE").Slice()
		return err == nil && len(role) == 5 && role[0] == "slave" && role[3] == "connected"
	})
}

// line reads one reply line (without CRLF).
func (r *rawConn) line() string {
	r.t.Helper()
	r.nc.SetReadDeadline(time.Now().Add(20 * time.Second))
	l, err := r.rd.ReadString('\n')
	if err != nil {
		r.t.Fatalf("reading a reply: %v", err)
	}
	return strings.TrimRight(l, "\r\n")
}

// load runs clients on a cluster: each owns keys and makes token-bucket
// decisions on them in turn (capacity 100000, one token a day: nothing
// refills in a test), counting what it sent.
type load struct {
	keys    []string
	stop    chan struct{}
	wg      sync.WaitGroup
	mu      sync.Mutex
	sent    map[string]int64
	errs    []error
	rounds  []int64 // per client: passes over its keys
	workers int
}

// startLoad starts n clients (go-redis ClusterClient) over nkeys keys.
func startLoad(t *testing.T, c *rlCluster, n, nkeys int) *load {
	t.Helper()
	keys := keysOverSlots(nkeys)
	for i := range keys {
		keys[i] = "load:" + keys[i]
	}
	l := &load{keys: keys, stop: make(chan struct{}), sent: map[string]int64{}, rounds: make([]int64, n), workers: n}
	for w := range n {
		hops := &hopLog{}
		cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{c.Nodes[0].Addr}, // default MaxRedirects (3)
			NewClient: func(opt *redis.Options) *redis.Client {
				rdb := redis.NewClient(opt)
				rdb.AddHook(hops.on(opt.Addr))
				return rdb
			}})
		t.Cleanup(func() { cc.Close() })
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for {
				for i := w; i < len(l.keys); i += n {
					select {
					case <-l.stop:
						return
					default:
					}
					k := l.keys[i]
					hops.reset()
					r, err := cc.Do(ctx, "CL.TOKENBUCKET", k, "100000", "1", "24h").Int64Slice()
					l.mu.Lock()
					if err != nil || r[0] != 1 {
						l.errs = append(l.errs, fmt.Errorf("CL.TOKENBUCKET %s: %v %v (the nodes asked: %s)", k, r, err, hops))
					} else {
						l.sent[k]++
					}
					l.mu.Unlock()
				}
				l.mu.Lock()
				l.rounds[w]++
				l.mu.Unlock()
			}
		}()
	}
	t.Cleanup(l.halt)
	return l
}

// hopLog records the nodes one client's command went to and what each
// answered, so that a failure under load shows its redirects.
type hopLog struct {
	mu   sync.Mutex
	hops []string
}

func (h *hopLog) reset() {
	h.mu.Lock()
	h.hops = h.hops[:0]
	h.mu.Unlock()
}

// add records what the node at addr answered to cmds: err for a single
// command (the client sets the command's own error only after its hooks
// return), each command's error for a pipeline.
func (h *hopLog) add(addr string, err error, cmds ...redis.Cmder) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range cmds {
		if n := c.Name(); n != "cl.tokenbucket" && n != "asking" {
			continue // the client's own: HELLO, CLIENT, COMMAND, CLUSTER SLOTS
		}
		e := err
		if len(cmds) > 1 {
			e = c.Err()
		}
		h.hops = append(h.hops, fmt.Sprintf("%s %s: %v", addr, c.Name(), e))
	}
}

func (h *hopLog) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return strings.Join(h.hops, "; ")
}

// on returns the hook for the node at addr.
func (h *hopLog) on(addr string) redis.Hook { return hopHook{h, addr} }

type hopHook struct {
	h    *hopLog
	addr string
}

func (k hopHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (k hopHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		k.h.add(k.addr, err, cmd)
		return err
	}
}

func (k hopHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		k.h.add(k.addr, err, cmds...)
		return err
	}
}

func (l *load) halt() {
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	l.wg.Wait()
}

// after lets every client make n more passes over its keys, then stops
// them.
func (l *load) after(n int64) {
	l.mu.Lock()
	from := slices.Clone(l.rounds)
	l.mu.Unlock()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		l.mu.Lock()
		done := true
		for w := range l.rounds {
			done = done && l.rounds[w] >= from[w]+n
		}
		l.mu.Unlock()
		if done {
			break
		}
		time.Sleep(10 * time.Millisecond) // polling the clients' progress
	}
	l.halt()
}

// check fails on any client error, and unless every key's bucket has
// exactly as many tokens left as the decisions made on it leave.
func (l *load) check(t *testing.T, cc *redis.ClusterClient) {
	t.Helper()
	for _, err := range l.errs[:min(len(l.errs), 10)] {
		t.Errorf("client error under load: %v", err)
	}
	if len(l.errs) > 0 {
		t.Fatalf("%d client errors", len(l.errs))
	}
	total := int64(0)
	for _, k := range l.keys {
		r, err := cc.Do(ctx, "CL.TOKENBUCKET", k, "100000", "1", "24h").Int64Slice()
		if err != nil {
			t.Fatal(err)
		}
		if want := 100000 - l.sent[k] - 1; r[2] != want {
			t.Errorf("key %s: %d tokens left after %d decisions, want %d", k, r[2], l.sent[k], want)
		}
		total += l.sent[k]
	}
	t.Logf("%d decisions on %d keys by %d clients, every one counted once", total, len(l.keys), l.workers)
}
