package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/rlserver/rlserver/cluster"
)

// TestEtcdRestart: etcd killed and started again (down for a quarter of a
// second plus its start-up, about 1.5 s) is a blip shorter than the lease: every decision
// made meanwhile is answered, no node fences itself, no failover happens
// (same topology version, same primaries), and every node renews its
// membership with the restarted etcd.
func TestEtcdRestart(t *testing.T) {
	// Not parallel: a busy machine would starve the 3 s leases.
	etcd := startEtcd(t)
	c := etcdCluster(t, etcd, 6)
	cc := c.clusterClient(t)
	var keys []string
	for _, k := range keysOverSlots(30) {
		keys = append(keys, "rs:"+k)
	}
	decide := func(what string) {
		for _, k := range keys {
			if err := cc.Do(ctx, "CL.THROTTLE", k, "1000000", "1000000", "60").Err(); err != nil {
				t.Fatalf("%s: CL.THROTTLE %s: %v", what, k, err)
			}
		}
	}
	decide("before")
	state := func() string {
		var b strings.Builder
		for _, n := range c.Nodes {
			cl := n.client(t, 2)
			info, err := cl.ClusterInfo(ctx).Result()
			if err != nil {
				t.Fatal(err)
			}
			role, err := cl.Do(ctx, "ROLE").Slice()
			if err != nil {
				t.Fatal(err)
			}
			epoch := strings.SplitN(strings.SplitN(info, "cluster_current_epoch:", 2)[1], "\r\n", 2)[0]
			fmt.Fprintf(&b, "%s:%s:%v ", n.Addr, epoch, role[0])
		}
		return b.String()
	}
	before := state()

	etcdMu.Lock()
	proc, args := etcdProcs[etcd], etcdArgs[etcd]
	etcdMu.Unlock()
	if err := proc.Kill(); err != nil {
		t.Fatal(err)
	}
	proc.Wait()
	killed := time.Now()
	for time.Since(killed) < 250*time.Millisecond {
		decide(fmt.Sprintf("%v after etcd was killed", time.Since(killed).Round(time.Millisecond)))
	}
	runEtcd(t, etcd, args)
	t.Logf("etcd serves again %v after it was killed", time.Since(killed).Round(time.Millisecond))
	decide("etcd restarted")

	// Every node publishes its registration again (once a second).
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{etcd}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	var since int64
	eventually(t, "etcd to answer", func() bool {
		r, err := cli.Get(ctx, "/rlserver/it/topology")
		if err == nil {
			since = r.Header.Revision
		}
		return err == nil
	})
	eventually(t, "every node to renew its membership with the restarted etcd", func() bool {
		decide("while the nodes renew")
		r, err := cli.Get(ctx, "/rlserver/it/nodes/", clientv3.WithPrefix())
		if err != nil || len(r.Kvs) != 6 {
			return false
		}
		for _, kv := range r.Kvs {
			if kv.ModRevision <= since {
				return false
			}
		}
		return true
	})
	if after := state(); after != before {
		t.Fatalf("the cluster changed over an etcd restart:\nbefore %s\nafter  %s", before, after)
	}
	for i, n := range c.Nodes {
		if strings.Contains(n.logs.String(), "fenced") {
			t.Fatalf("node %d fenced itself over an etcd blip shorter than its lease", i)
		}
	}
}

// TestEtcdFailoverUnderLoad: a primary SIGKILLed while clients make
// token-bucket decisions over every shard. Each client confirms its
// decisions every few with WAIT 1 on the primary it talks to. After the
// failover, every key's bucket reflects at least the decisions confirmed
// (what the promoted replica lost is at most what was admitted after the
// last acknowledgement) and never more than were sent (nothing doubled);
// keys of the other shards lose nothing.
func TestEtcdFailoverUnderLoad(t *testing.T) {
	// Not parallel: a busy machine would starve the 3 s leases.
	etcd := startEtcd(t)
	c := etcdCluster(t, etcd, 6)
	const clients = 6
	victim := c.primaryOf(t, 0, 3443)
	victimAddr := c.Nodes[victim].Addr

	type acct struct {
		sent, uncertain, unconfirmed int64 // admitted, errors, admitted since the last WAIT that covered them
	}
	var mu sync.Mutex
	books := map[string]*acct{}
	onVictim := map[string]bool{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range clients {
		// go-redis notices a dead primary only when it reloads the slot
		// map, every ClusterStateReloadInterval (60 s by default).
		cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{c.Nodes[(victim+1)%6].Addr}, MaxRedirects: 8,
			ClusterStateReloadInterval: time.Second})
		defer cc.Close()
		keys := make([]string, 20)
		for i := range keys {
			// Client 0's keys are on the victim (slot 3443), the others'
			// wherever their tag puts them.
			tag := fmt.Sprintf("c%d", w)
			if w == 0 {
				tag = "user1000"
			}
			keys[i] = fmt.Sprintf("{%s}.ul%d", tag, i)
			mu.Lock() // the clients started before use the map
			books[keys[i]] = &acct{}
			mu.Unlock()
		}
		home, err := cc.MasterForKey(ctx, keys[0])
		if err != nil {
			t.Fatal(err)
		}
		homeAddr := home.Options().Addr
		if homeAddr == victimAddr {
			for _, k := range keys {
				onVictim[k] = true
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				for _, k := range keys {
					select {
					case <-stop:
						return
					default:
					}
					rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
					r, err := cc.Do(rctx, "CL.TOKENBUCKET", k, "1000000", "1", "24h").Int64Slice()
					cancel()
					mu.Lock()
					a := books[k]
					switch {
					case err != nil:
						a.uncertain++
					case r[0] != 1:
						t.Errorf("%s denied: %v", k, r)
					default:
						a.sent++
						a.unconfirmed++
					}
					mu.Unlock()
				}
				// Confirm on the primary of the keys' slot, if it is still
				// the one they were first made on (a WAIT on a promoted
				// node says nothing of what its predecessor lost).
				m, err := cc.MasterForKey(ctx, keys[0])
				if err != nil || n%3 != 0 {
					continue
				}
				if m.Options().Addr == homeAddr {
					mu.Lock()
					pending := make([]int64, len(keys))
					for i, k := range keys {
						pending[i] = books[k].unconfirmed
					}
					mu.Unlock()
					if got, err := m.Do(ctx, "WAIT", "1", "200").Int64(); err == nil && got == 1 {
						mu.Lock()
						for i, k := range keys {
							books[k].unconfirmed -= pending[i]
						}
						mu.Unlock()
					}
				}
			}
		}()
	}
	progress := func() int64 { // decisions admitted on the victim's slot
		mu.Lock()
		defer mu.Unlock()
		n := int64(0)
		for k, a := range books {
			if strings.HasPrefix(k, "{user1000}") {
				n += a.sent
			}
		}
		return n
	}
	eventually(t, "the clients to make decisions on the victim", func() bool { return progress() >= 50 })
	c.Nodes[victim].kill()
	np := c.newPrimary(t, victim, (victim+1)%6)
	before := progress()
	eventually(t, "the clients to make decisions on the promoted node", func() bool { return progress() >= before+50 })
	close(stop)
	wg.Wait()

	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{c.Nodes[np].Addr}})
	defer cc.Close()
	var lost, bound, total int64
	for k, a := range books {
		r, err := cc.Do(ctx, "CL.TOKENBUCKET", k, "1000000", "1", "24h", "0").Int64Slice()
		if err != nil {
			t.Fatal(err)
		}
		known := 1000000 - r[2]
		floor := a.sent - a.unconfirmed
		if !onVictim[k] {
			floor = a.sent
		}
		if known < floor || known > a.sent+a.uncertain {
			t.Errorf("%s: the bucket counts %d decisions; %d were admitted (%d of them unconfirmed, %d more unanswered)", k, known, a.sent, a.unconfirmed, a.uncertain)
		}
		if onVictim[k] {
			lost += max(a.sent-known, 0)
			bound += a.unconfirmed
		}
		total += a.sent
	}
	t.Logf("%d decisions admitted; on the killed primary's keys %d lost in the failover, bound %d (admitted after the last WAIT)", total, lost, bound)
}

// TestEtcdForget: in a cluster of three primaries without replicas, a
// primary is killed. CLUSTER FORGET refuses a running node, an unknown
// one, and the dead one while its lease lasts; then its slots are spread
// over the two others, which serve every slot: their own keys with their
// states, the dead node's fresh. (That a dead primary keeps its slots
// until forgotten is TestReconcileForget's.)
func TestEtcdForget(t *testing.T) {
	// Not parallel: a busy machine would starve the 3 s leases.
	etcd := startEtcd(t)
	c := etcdCluster(t, etcd, 3, "--cluster-replicas", "0")
	cc := c.clusterClient(t)
	keys := keysOverSlots(30)
	throttle := func(cc *redis.ClusterClient, k string) []int64 {
		r, err := cc.Do(ctx, "CL.THROTTLE", "fg:"+k, "9", "1", "3600").Int64Slice()
		if err != nil {
			t.Fatalf("CL.THROTTLE fg:%s: %v", k, err)
		}
		return r
	}
	for _, k := range keys {
		if r := throttle(cc, k); r[2] != 9 {
			t.Fatalf("fg:%s: %v", k, r)
		}
	}
	victim := c.primaryOf(t, 0, 3443)
	onVictim := map[string]bool{}
	for _, k := range keys {
		onVictim[k] = c.primaryOf(t, 0, cluster.Slot([]byte("fg:"+k))) == victim
	}
	survivor := c.Nodes[(victim+1)%3].client(t, 2)
	victimID := c.Nodes[victim].client(t, 2).Do(ctx, "CLUSTER", "MYID").Val().(string)
	runningID := survivor.Do(ctx, "CLUSTER", "MYID").Val().(string)
	c.Nodes[victim].kill()
	if err := survivor.Do(ctx, "CLUSTER", "FORGET", runningID).Err(); err == nil || !strings.Contains(err.Error(), "is running") {
		t.Fatalf("CLUSTER FORGET of a running node: %v", err)
	}
	if err := survivor.Do(ctx, "CLUSTER", "FORGET", strings.Repeat("a", 40)).Err(); err == nil || !strings.Contains(err.Error(), "Unknown node") {
		t.Fatalf("CLUSTER FORGET of an unknown node: %v", err)
	}
	// Not inside a transaction: it waits on etcd, and EXEC holds every
	// shard lock meanwhile.
	tx := survivor.Conn()
	if v, err := tx.Do(ctx, "MULTI").Result(); err != nil || v != "OK" {
		t.Fatalf("MULTI = %v %v", v, err)
	}
	if err := tx.Do(ctx, "CLUSTER", "FORGET", victimID).Err(); err == nil || err.Error() != "ERR Command not allowed inside a transaction" {
		t.Fatalf("CLUSTER FORGET in MULTI: %v", err)
	}
	if err := tx.Do(ctx, "EXEC").Err(); err == nil || !strings.HasPrefix(err.Error(), "EXECABORT") {
		t.Fatalf("EXEC after CLUSTER FORGET: %v", err)
	}
	tx.Close()
	// Refused while its lease lasts (it is registered until then).
	eventually(t, "CLUSTER FORGET of the dead primary to be accepted", func() bool {
		err := survivor.Do(ctx, "CLUSTER", "FORGET", victimID).Err()
		if err != nil && !strings.Contains(err.Error(), "is running") {
			t.Fatalf("CLUSTER FORGET of the dead primary: %v", err)
		}
		return err == nil
	})
	others := []*redis.Client{c.Nodes[(victim+1)%3].client(t, 2), c.Nodes[(victim+2)%3].client(t, 2)}
	for i, o := range others {
		eventually(t, fmt.Sprintf("survivor %d to serve every slot with two nodes", i), func() bool {
			info, err := o.ClusterInfo(ctx).Result()
			return err == nil && strings.Contains(info, "cluster_state:ok") && strings.Contains(info, "cluster_known_nodes:2\r\n") &&
				strings.Contains(info, "cluster_slots_assigned:16384\r\n")
		})
	}
	cc2 := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{c.Nodes[(victim+1)%3].Addr}})
	defer cc2.Close()
	// Keys of the surviving shards kept their states; the forgotten
	// node's are fresh.
	lost := 0
	for _, k := range keys {
		want := int64(8)
		if onVictim[k] {
			want, lost = 9, lost+1
		}
		if r := throttle(cc2, k); r[2] != want {
			t.Fatalf("fg:%s after the forget: %v, want %d left", k, r, want)
		}
	}
	if lost == 0 || lost == len(keys) {
		t.Fatalf("%d of %d keys were on the forgotten node", lost, len(keys))
	}
}

// TestEtcdAbandonedMove: a node that registers and then dies before any
// slot reached it (here a registration the test writes itself, for an
// address that accepts connections and never answers) first gets a new
// shard importing a share of the slots; once its lease expires, the shard
// and its moves are dropped, the three primaries keep every slot, and the
// clients that ran throughout saw no error and lost no decision.
func TestEtcdAbandonedMove(t *testing.T) {
	// Not parallel: a busy machine would starve the 3 s leases.
	etcd := startEtcd(t)
	c := etcdCluster(t, etcd, 3, "--cluster-replicas", "0")
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{etcd}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	type topo struct {
		Version int64 `json:"version"`
		Shards  []struct {
			Importing []json.RawMessage `json:"importing"`
		} `json:"shards"`
	}
	topology := func() topo {
		r, err := cli.Get(ctx, "/rlserver/it/topology")
		if err != nil || len(r.Kvs) != 1 {
			t.Fatalf("reading the topology: %v", err)
		}
		var tp topo
		if err := json.Unmarshal(r.Kvs[0].Value, &tp); err != nil {
			t.Fatal(err)
		}
		return tp
	}
	before := topology()
	load := startLoad(t, c, 3, 100)

	// A listener that never answers, registered as a member under a
	// short lease that nobody renews.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var held []net.Conn
	var hmu sync.Mutex
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			hmu.Lock()
			held = append(held, nc)
			hmu.Unlock()
		}
	}()
	defer func() {
		hmu.Lock()
		for _, nc := range held {
			nc.Close()
		}
		hmu.Unlock()
	}()
	lease, err := cli.Grant(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	id := strings.Repeat("f", 40)
	member := fmt.Sprintf(`{"id":%q,"host":"127.0.0.1","port":%d,"offset":0}`, id, ln.Addr().(*net.TCPAddr).Port)
	if _, err := cli.Put(ctx, "/rlserver/it/nodes/"+id, member, clientv3.WithLease(lease.ID)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a fourth shard importing slots", func() bool {
		tp := topology()
		return len(tp.Shards) == 4 && len(tp.Shards[3].Importing) == 3
	})
	eventually(t, "the fourth shard to be dropped once its lease expired", func() bool {
		tp := topology()
		if len(tp.Shards) != 3 {
			return false
		}
		for _, s := range tp.Shards {
			if len(s.Importing) > 0 {
				t.Fatalf("an import is left: %+v", tp)
			}
		}
		return tp.Version >= before.Version+2
	})
	for i, n := range c.Nodes {
		cl := n.client(t, 2)
		eventually(t, fmt.Sprintf("node %d to serve every slot with three nodes", i), func() bool {
			info, err := cl.ClusterInfo(ctx).Result()
			return err == nil && strings.Contains(info, "cluster_state:ok") && strings.Contains(info, "cluster_known_nodes:3\r\n") &&
				strings.Contains(info, fmt.Sprintf("cluster_current_epoch:%d\r\n", topology().Version))
		})
	}
	load.after(20)
	load.check(t, c.clusterClient(t))
}

// TestEtcdGracefulStop: a primary stopped with SIGTERM serves no key once
// it begins to leave, waits until its replica acknowledged every change,
// and only then gives its lease up: the replica, promoted at once, admits
// exactly what the limits had left. The replica is frozen (SIGSTOP) while
// the decisions are made and resumed once the primary is leaving, so it
// holds none of them unless the primary waits for it.
func TestEtcdGracefulStop(t *testing.T) {
	// Not parallel: a busy machine would starve the leases. The replica
	// stays frozen while 60,000 decisions are made: under -race on a busy
	// machine that took longer than the default 3 s, its lease expired and
	// the primary, with no replica left, rightly left without waiting.
	etcd := startEtcd(t)
	c := etcdCluster(t, etcd, 6, "--cluster-node-timeout", "15000")
	p := c.primaryOf(t, 0, 3443)
	pc := c.Nodes[p].client(t, 2)
	role, err := pc.Do(ctx, "ROLE").Slice()
	if err != nil {
		t.Fatal(err)
	}
	rport := role[2].([]any)[0].([]any)[1].(string)
	r := -1
	for i, n := range c.Nodes {
		if strings.HasSuffix(n.Addr, ":"+rport) {
			r = i
		}
	}
	replica := c.Nodes[r].cmd.Process
	if err := replica.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer replica.Signal(syscall.SIGCONT)
	limiters := []struct {
		cmd     []any
		allowed func(r []int64) bool
	}{
		{[]any{"CL.THROTTLE", "{user1000}.gs.thr", "19", "1", "3600"}, func(r []int64) bool { return r[0] == 0 }},
		{[]any{"CL.TOKENBUCKET", "{user1000}.gs.tb", "20", "1", "1h"}, func(r []int64) bool { return r[0] == 1 }},
		{[]any{"CL.WINDOW", "{user1000}.gs.win", "20", "1h", "SLIDING"}, func(r []int64) bool { return r[0] == 1 }},
	}
	for _, l := range limiters {
		for range 12 {
			if r := do(t, pc, l.cmd...).ints(); !l.allowed(r) {
				t.Fatalf("%v denied before the stop: %v", l.cmd, r)
			}
		}
	}
	// More changes than the socket buffers and the change stream's ring
	// hold while the replica is frozen: unless the primary waits for it,
	// they are lost with the primary.
	const many = 60000
	for i := 0; i < many; i += 1000 {
		pipe := pc.Pipeline()
		for j := i; j < i+1000; j++ {
			pipe.Do(ctx, "CL.TOKENBUCKET", fmt.Sprintf("{user1000}.gs.k%d", j), "5", "1", "1h")
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Nodes[p].cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the primary to begin leaving", func() bool {
		return strings.Contains(c.Nodes[p].logs.String(), "shutting down")
	})
	if err := pc.Do(ctx, limiters[0].cmd...).Err(); err == nil {
		t.Fatal("a leaving primary made a decision")
	}
	replica.Signal(syscall.SIGCONT)
	if code := c.Nodes[p].wait(t); code != 0 {
		t.Fatalf("the primary exited with %d", code)
	}
	rc := c.Nodes[r].client(t, 2)
	eventually(t, "the replica to be promoted", func() bool {
		role, err := rc.Do(ctx, "ROLE").Slice()
		return err == nil && role[0] == "master"
	})
	eventually(t, "the promoted node to take decisions", func() bool {
		return rc.Do(ctx, "CL.THROTTLE", "{user1000}.gs.probe", "1", "1", "1").Err() == nil
	})
	for _, l := range limiters {
		admitted := 0
		for range 20 {
			if l.allowed(do(t, rc, l.cmd...).ints()) {
				admitted++
			}
		}
		if admitted != 8 {
			t.Errorf("%v: the promoted replica admitted %d, want exactly the 8 the limit had left", l.cmd[0], admitted)
		}
	}
	// The 3 limiters, the probe, and the many keys.
	if n := rc.ClusterCountKeysInSlot(ctx, 3443).Val(); n != many+4 {
		t.Errorf("the promoted replica holds %d keys of slot 3443, want %d", n, many+4)
	}
}
