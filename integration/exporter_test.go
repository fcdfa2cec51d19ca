package integration

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"
)

// redisExporter returns the redis_exporter scripts/setup.sh builds (or
// $RLSERVER_REDIS_EXPORTER).
func redisExporter(t *testing.T) string {
	t.Helper()
	path := os.Getenv("RLSERVER_REDIS_EXPORTER")
	if path == "" {
		abs, err := filepath.Abs(filepath.Join("..", ".cache", "redis_exporter", "redis_exporter-v1.62.0"))
		if err != nil {
			t.Fatal(err)
		}
		path = abs
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("redis_exporter is not built (%v): run ./scripts/setup.sh (or scripts/redis-exporter.sh)", err)
	}
	return path
}

// TestRedisExporter: Prometheus's redis_exporter (v1.62.0, unchanged)
// scrapes rlserver as it would Redis: redis_up is 1 and
// redis_commands_total{cmd="cl.throttle"} is exactly the calls made, with
// the errors, latency histogram and keyspace it reads from INFO.
func TestRedisExporter(t *testing.T) {
	t.Parallel()
	bin := redisExporter(t)
	s := start(t)
	c := redis.NewClient(&redis.Options{Addr: s.Addr, Protocol: 2, DisableIdentity: true})
	t.Cleanup(func() { c.Close() })
	const calls = 37
	for i := range calls {
		do(t, c, "CL.THROTTLE", "user:"+strconv.Itoa(i%5), 3, 1, 60).ints()
	}
	do(t, c, "CL.TOKENBUCKET", "user:0", 1, 1, 1).errIs("WRONGTYPE Operation against a key holding the wrong kind of value")

	port := freePorts(t, 1)[0]
	addr := "127.0.0.1:" + strconv.Itoa(port)
	cmd := exec.Command(bin, "--redis.addr", "redis://"+s.Addr, "--web.listen-address", addr)
	logs := &logBuffer{}
	cmd.Stdout, cmd.Stderr = &logWriter{logs}, &logWriter{logs}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("redis_exporter log:\n%s", logs)
		}
	})
	eventually(t, "redis_exporter to serve", func() bool {
		code, _ := httpGetErr("http://" + addr + "/health")
		return code == 200
	})
	fams := scrape(t, addr)
	if up := sample(t, fams, "redis_up"); up != 1 {
		t.Fatalf("redis_up = %v", up)
	}
	if n := sample(t, fams, "redis_commands_total", "cmd", "cl.throttle"); n != calls {
		t.Fatalf("redis_commands_total{cmd=\"cl.throttle\"} = %v, want %d", n, calls)
	}
	if n := sample(t, fams, "redis_commands_failed_calls_total", "cmd", "cl.tokenbucket"); n != 1 {
		t.Errorf("redis_commands_failed_calls_total{cmd=\"cl.tokenbucket\"} = %v, want 1", n)
	}
	if n := sample(t, fams, "redis_errors_total", "err", "WRONGTYPE"); n != 1 {
		t.Errorf("redis_errors_total{err=\"WRONGTYPE\"} = %v, want 1", n)
	}
	if n := sample(t, fams, "redis_db_keys", "db", "db0"); n != 5 {
		t.Errorf("redis_db_keys{db=\"db0\"} = %v, want 5", n)
	}
	for _, name := range []string{"redis_connected_clients", "redis_memory_used_bytes", "redis_commands_latencies_usec",
		"redis_uptime_in_seconds", "redis_slowlog_length", "redis_cpu_user_seconds_total", "redis_instance_info"} {
		if fams[name] == nil {
			t.Errorf("redis_exporter exports no %s", name)
		}
	}
}

// httpGetErr is httpGet for a server that may not answer yet (0: no
// answer).
func httpGetErr(url string) (int, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}
