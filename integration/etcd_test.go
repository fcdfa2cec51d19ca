package integration

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
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
	cmd := exec.Command("etcd", "--data-dir", filepath.Join(t.TempDir(), "etcd"),
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer, "--initial-cluster", "default="+peer)
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
	return "127.0.0.1:" + strconv.Itoa(ports[0])
}

// TestEtcdClusterForms: six rlservers given only an etcd endpoint form a
// cluster of three primaries with one replica each, on their own: one of
// them is elected coordinator and writes the topology, every node adopts
// it, replicas synchronise, and go-redis ClusterClient gets exact replies
// on keys over every slot. A seventh node that joins becomes a replica
// in version 2, which every node adopts.
func TestEtcdClusterForms(t *testing.T) {
	t.Parallel()
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

	// A seventh node joins: a replica, in version 2 everywhere.
	c.Nodes = append(c.Nodes, nil)
	start(6)
	clients[6] = c.Nodes[6].client(t, 2)
	for i := range 7 {
		eventually(t, fmt.Sprintf("node %d to adopt version 2", i), func() bool {
			info, err := clients[i].ClusterInfo(ctx).Result()
			return err == nil && strings.Contains(info, "cluster_current_epoch:2\r\n") && strings.Contains(info, "cluster_known_nodes:7\r\n")
		})
	}
	eventually(t, "the new node to be a connected replica", func() bool {
		role, err := clients[6].Do(ctx, "ROLE").Slice()
		return err == nil && len(role) == 5 && role[0] == "slave" && role[3] == "connected"
	})
}

// Write makes a logBuffer the log of a process the tests start.
func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
