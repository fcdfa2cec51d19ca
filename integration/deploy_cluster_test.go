package integration

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// etcdImage builds an image of Debian's etcd and etcdctl (scripts/setup.sh
// installs etcd-server and etcd-client) with the C library they link, to
// stand in for the etcd image the compose file names: no registry of
// images is reachable here. The compose file's etcd command and health
// check run unchanged in it.
func etcdImage(t *testing.T, tag string) {
	t.Helper()
	ctxDir := t.TempDir()
	files := map[string]string{}
	for _, bin := range []string{"etcd", "etcdctl"} {
		path, err := exec.LookPath(bin)
		if err != nil {
			t.Fatalf("no %s: run scripts/setup.sh as root (it installs Debian's etcd-server and etcd-client)", bin)
		}
		files[path] = "/usr/local/bin/" + bin
		out, err := exec.Command("ldd", path).Output()
		if err != nil && !strings.Contains(string(out), "not a dynamic executable") {
			t.Fatalf("ldd %s: %v", path, err)
		}
		for _, line := range strings.Split(string(out), "\n") {
			for _, f := range strings.Fields(line) {
				if strings.HasPrefix(f, "/") {
					files[f] = f
				}
			}
		}
	}
	for from, to := range files {
		b, err := os.ReadFile(from) // follows links: the library itself
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(ctxDir, "root", to)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(ctxDir, "Dockerfile"), []byte("FROM scratch\nCOPY root/ /\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	docker(t, "build", "-q", "-t", tag, ctxDir)
	t.Cleanup(func() { dockerErr("rmi", "-f", tag) })
}

// TestDeployComposeCluster runs deploy/compose/docker-compose.yml as
// written, with the images built here (the rlserver image from
// deploy/docker/build-scratch.sh, etcd from Debian's binaries): the six
// nodes form a cluster through etcd by themselves, a cluster client that
// resolves the announced service names gets its decisions, every node
// becomes healthy; a primary stopped is replaced by its replica, which
// holds every decision, and rejoins as a replica when started again; and
// docker compose stop stops each node with exit code 0.
func TestDeployComposeCluster(t *testing.T) {
	requireDocker(t)
	composeCommand(t)
	began := time.Now()
	id := fmt.Sprintf("%d-%d", os.Getpid(), time.Now().UnixNano()%1e6)
	rlImage, etcdTag := "rlserver-it:compose-"+id, "rlserver-it-etcd:"+id
	if out, err := exec.Command("../deploy/docker/build-scratch.sh", rlImage).CombinedOutput(); err != nil {
		t.Fatalf("deploy/docker/build-scratch.sh: %v\n%s", err, out)
	}
	t.Cleanup(func() { dockerErr("rmi", "-f", rlImage) })
	etcdImage(t, etcdTag)

	// Only the images change, and health checks run every second so that
	// the test need not wait the image's 10 s.
	override := "services:\n  etcd:\n    image: " + etcdTag + "\n"
	for i := 1; i <= 6; i++ {
		override += fmt.Sprintf("  rlserver-%d:\n    image: %s\n    healthcheck:\n      interval: 1s\n", i, rlImage)
	}
	overrideFile := filepath.Join(t.TempDir(), "override.yml")
	if err := os.WriteFile(overrideFile, []byte(override), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"RLSERVER_REQUIREPASS=s3cret"}
	project := "rlserver-it-" + strings.ReplaceAll(id, "-", "")
	base := []string{"-p", project, "-f", composeFile, "-f", overrideFile}
	run := func(args ...string) string {
		t.Helper()
		out, err := compose(t, env, append(base, args...)...)
		if err != nil {
			t.Fatalf("compose %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(out)
	}
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := compose(t, env, append(base, "logs", "--no-color", "--tail", "40")...)
			t.Logf("compose logs:\n%s", out)
		}
		compose(t, env, append(base, "down", "-v", "--remove-orphans", "-t", "5")...)
	})
	t.Logf("%v: images built", time.Since(began).Round(time.Millisecond))
	run("up", "-d", "--no-build")
	t.Logf("%v: up", time.Since(began).Round(time.Millisecond))

	// The host reaches the containers at their addresses on the compose
	// network; the announced names resolve to them as they do there.
	// (One docker ps: each docker-compose run takes a second or more.)
	containers := map[string]string{} // announced address -> container id
	addrs := map[string]string{}      // announced address -> reachable address
	ps := docker(t, "ps", "--filter", "label=com.docker.compose.project="+project, "--format", `{{.ID}} {{.Label "com.docker.compose.service"}}`)
	for _, line := range strings.Split(ps, "\n") {
		cid, service, _ := strings.Cut(line, " ")
		if !strings.HasPrefix(service, "rlserver-") {
			continue
		}
		ip := docker(t, "inspect", "--format", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}", cid)
		containers[service+":6379"] = cid
		addrs[service+":6379"] = net.JoinHostPort(ip, "6379")
	}
	if len(addrs) != 6 {
		t.Fatalf("docker ps lists %d rlserver containers, want 6:\n%s", len(addrs), ps)
	}
	var addrsMu sync.Mutex // addrs changes when a container starts again
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		addrsMu.Lock()
		if a, ok := addrs[addr]; ok {
			addr = a
		}
		addrsMu.Unlock()
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}

	// Formed by itself: three primaries, each with its replica in sync.
	node := redis.NewClient(&redis.Options{Addr: "rlserver-1:6379", Password: "s3cret", Dialer: dial, MaxRetries: -1})
	t.Cleanup(func() { node.Close() })
	formed := func() error {
		info, err := node.ClusterInfo(ctx).Result()
		if err != nil || !strings.Contains(info, "cluster_state:ok") {
			return fmt.Errorf("CLUSTER INFO: %q %v", info, err)
		}
		// (A node that registered late may have been given slots moved
		// from others: a primary can serve several ranges.)
		slots, err := node.ClusterSlots(ctx).Result()
		if err != nil {
			return fmt.Errorf("CLUSTER SLOTS: %v", err)
		}
		primaries, covered := map[string]bool{}, 0
		for _, s := range slots {
			if len(s.Nodes) != 2 {
				return fmt.Errorf("CLUSTER SLOTS: %v", slots)
			}
			for _, n := range s.Nodes {
				if _, ok := containers[n.Addr]; !ok {
					return fmt.Errorf("CLUSTER SLOTS %v: %s is not an announced service name", slots, n.Addr)
				}
			}
			primaries[s.Nodes[0].Addr] = true
			covered += int(s.End-s.Start) + 1
		}
		if len(primaries) != 3 || covered != 16384 {
			return fmt.Errorf("CLUSTER SLOTS: %d primaries, %d slots: %v", len(primaries), covered, slots)
		}
		return nil
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		err := formed()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cluster did not form in 60 s: %v", err)
		}
	}
	t.Logf("%v: formed", time.Since(began).Round(time.Millisecond))

	// A cluster client routes decisions by slot across the primaries (one
	// token a day: what is taken stays taken for the rest of the test).
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"rlserver-1:6379"}, Password: "s3cret", Dialer: dial})
	t.Cleanup(func() { cc.Close() })
	for i := 0; i < 30; i++ {
		key := fmt.Sprintf("user:%d", i)
		got, err := cc.Do(ctx, "CL.THROTTLE", key, 9, 1, "1d").Slice()
		if err != nil || fmt.Sprint(got) != "[0 10 9 -1 86400]" {
			t.Fatalf("CL.THROTTLE %s = %v %v, want [0 10 9 -1 86400]", key, got, err)
		}
	}

	// Every node healthy by the image's own check (rlserver --healthcheck).
	for addr, cid := range containers {
		eventually(t, addr+" to become healthy", func() bool {
			return docker(t, "inspect", "--format", "{{.State.Health.Status}}", cid) == "healthy"
		})
	}

	t.Logf("%v: decisions made, every node healthy", time.Since(began).Round(time.Millisecond))

	// docker compose stop of a primary (deploy/README.md): it exits 0 and
	// its replica, which WAIT says holds every decision, takes over.
	slots, err := node.ClusterSlots(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	primary, replica := slots[0].Nodes[0].Addr, slots[0].Nodes[1].Addr
	pc := redis.NewClient(&redis.Options{Addr: primary, Password: "s3cret", Dialer: dial})
	if n, err := pc.Do(ctx, "WAIT", 1, 5000).Int(); n != 1 || err != nil {
		t.Fatalf("WAIT 1 5000 on %s = %d %v, want 1", primary, n, err)
	}
	pc.Close()
	docker(t, "stop", "--time", "30", containers[primary]) // as compose stop does, without its start-up time
	if code := docker(t, "inspect", "--format", "{{.State.ExitCode}}", containers[primary]); code != "0" {
		t.Fatalf("%s exited %s after docker compose stop, want 0", primary, code)
	}
	rc := redis.NewClient(&redis.Options{Addr: replica, Password: "s3cret", Dialer: dial, MaxRetries: -1})
	t.Cleanup(func() { rc.Close() })
	// roles returns the nodes serving slot 0 as rc sees them, primary first.
	roles := func() string {
		slots, err := rc.ClusterSlots(ctx).Result()
		if err != nil {
			return err.Error()
		}
		for _, s := range slots {
			if s.Start == 0 {
				var nodes []string
				for _, n := range s.Nodes {
					nodes = append(nodes, n.Addr)
				}
				return strings.Join(nodes, " ")
			}
		}
		return fmt.Sprint(slots)
	}
	eventually(t, replica+" to be promoted", func() bool { return roles() == replica })
	t.Logf("%v: %s stopped, %s promoted", time.Since(began).Round(time.Millisecond), primary, replica)
	// Every decision made before is there: the second one leaves 8.
	cc2 := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{replica}, Password: "s3cret", Dialer: dial})
	t.Cleanup(func() { cc2.Close() })
	for i := 0; i < 30; i++ {
		key := fmt.Sprintf("user:%d", i)
		got, err := cc2.Do(ctx, "CL.THROTTLE", key, 9, 1, "1d").Slice()
		if err != nil || len(got) != 5 || fmt.Sprint(got[:4]) != "[0 10 8 -1]" {
			t.Fatalf("CL.THROTTLE %s after the failover = %v %v, want [0 10 8 -1 ...]", key, got, err)
		}
	}
	// Started again, the old primary rejoins as the replica.
	docker(t, "start", containers[primary])
	ip := docker(t, "inspect", "--format", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}", containers[primary])
	addrsMu.Lock()
	addrs[primary] = net.JoinHostPort(ip, "6379")
	addrsMu.Unlock()
	eventually(t, primary+" to rejoin as a replica", func() bool { return roles() == replica+" "+primary })
	t.Logf("%v: %s rejoined as a replica", time.Since(began).Round(time.Millisecond), primary)

	// SIGTERM to every node: each leaves etcd, flushes and exits 0.
	run("stop", "-t", "30")
	for addr, cid := range containers {
		if code := docker(t, "inspect", "--format", "{{.State.ExitCode}}", cid); code != "0" {
			t.Fatalf("%s exited %s after docker compose stop, want 0", addr, code)
		}
	}
}
