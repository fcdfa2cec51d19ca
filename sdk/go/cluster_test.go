package rlserver

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// startCluster starts two primaries splitting the slots (a static
// --cluster-config) and returns a go-redis ClusterClient over them.
func startCluster(t *testing.T) *redis.ClusterClient {
	// Ports are picked free and then bound by the servers; if one was
	// taken meanwhile the server exits and the pick is retried.
	for attempt := 0; attempt < 5; attempt++ {
		var ports [2]int
		for i := range ports {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			ports[i] = ln.Addr().(*net.TCPAddr).Port
			ln.Close()
		}
		cfg := filepath.Join(t.TempDir(), "cluster.json")
		topo := fmt.Sprintf(`{"version": 1, "shards": [
 {"slots": [[0, 8191]], "primary": {"id": "%040d", "host": "127.0.0.1", "port": %d}, "replicas": []},
 {"slots": [[8192, 16383]], "primary": {"id": "%040d", "host": "127.0.0.1", "port": %d}, "replicas": []}]}`, 1, ports[0], 2, ports[1])
		if err := os.WriteFile(cfg, []byte(topo), 0o644); err != nil {
			t.Fatal(err)
		}
		var nodes []*server
		for _, p := range ports {
			s, err := tryStartServer("--port", fmt.Sprint(p), "--cluster-config", cfg)
			if err != nil {
				t.Log(err)
				break
			}
			nodes = append(nodes, s)
		}
		for _, s := range nodes {
			t.Cleanup(s.stop)
		}
		if len(nodes) < 2 {
			continue
		}
		cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{nodes[0].addr}, ContextTimeoutEnabled: true})
		t.Cleanup(func() { cc.Close() })
		return cc
	}
	t.Fatal("could not start a two-node cluster")
	return nil
}

// The same limiters over a ClusterClient: keys routed to both primaries,
// CL.ALL with a hash tag, leases released on the right node.
func TestCluster(t *testing.T) {
	cc := startCluster(t)
	ctx := context.Background()
	err := cc.ForEachShard(ctx, func(ctx context.Context, n *redis.Client) error {
		return n.Do(ctx, "DEBUG", "CLOCK", "SET", epochMs).Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	c := New(cc, Options{})
	tb := c.TokenBucket(5, 1, time.Second)
	for _, key := range []string{"foo", "bar"} { // slots 12182 and 5061: one per node
		for i, want := range []int64{4, 3} {
			d, err := tb.AllowN(ctx, key, 1)
			if err != nil || !d.Allowed || d.Remaining != want {
				t.Errorf("%s call %d: %+v %v", key, i, d, err)
			}
		}
	}
	// The two keys live on different nodes.
	fooSlot, err1 := cc.ClusterKeySlot(ctx, "foo").Result()
	barSlot, err2 := cc.ClusterKeySlot(ctx, "bar").Result()
	if err1 != nil || err2 != nil || fooSlot < 8192 || barSlot >= 8192 {
		t.Errorf("slots: foo %d (%v), bar %d (%v)", fooSlot, err1, barSlot, err2)
	}
	rules := []Rule{c.TokenBucket(2, 1, time.Second).Rule("{u}:user"), c.Window(Fixed, 10, time.Minute).Rule("{u}:global"), c.Concurrency(1, time.Minute).Rule("{u}:conc")}
	ad, err := c.All(ctx, 1, rules...)
	if err != nil || !ad.Allowed || ad.Leases[2] == nil {
		t.Fatalf("All: %+v %v", ad, err)
	}
	if ad, _ := c.All(ctx, 1, rules...); ad.Allowed || ad.Decisions[2].Allowed {
		t.Errorf("All while the lease is held: %+v", ad)
	}
	if ok, err := ad.Leases[2].Release(ctx); !ok || err != nil {
		t.Errorf("Release: %v %v", ok, err)
	}
	if ad, _ := c.All(ctx, 1, rules...); !ad.Allowed {
		t.Errorf("All after release: %+v", ad)
	}
	if _, err := c.All(ctx, 1, tb.Rule("foo"), tb.Rule("bar")); err == nil {
		t.Error("All across slots succeeded; want CROSSSLOT")
	}
}
