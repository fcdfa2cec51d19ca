package integration

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlserver/rlserver/internal/ports"
	"github.com/rlserver/rlserver/internal/redistest"
)

// freePort returns a loopback port free a moment ago.
func freePort(t *testing.T) string {
	t.Helper()
	p, err := ports.Free()
	if err != nil {
		t.Fatal(err)
	}
	return strconv.Itoa(p)
}

// serves starts cmd, a server told to listen on port, and reports whether
// it comes to accept connections (then it is killed when the test ends)
// or exits first, with what it wrote.
func serves(t *testing.T, cmd *exec.Cmd, port string) (bool, string) {
	t.Helper()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-exited })
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); {
		select {
		case <-exited:
			return false, out.String()
		default:
		}
		if nc, err := net.Dial("tcp", "127.0.0.1:"+port); err == nil {
			nc.Close()
			return true, ""
		}
		time.Sleep(20 * time.Millisecond) // polling for the server's port
	}
	t.Fatalf("%v neither serves nor exits", cmd.Args)
	return false, ""
}

// redisServer is the command that runs redis-server on port with args
// after the ones the tests need (no persistence, files under dir).
func redisServer(port, dir string, args ...string) *exec.Cmd {
	return exec.Command("redis-server", append([]string{"--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir}, args...)...)
}

// TestRedisFlagValues: every combination of the flags rlserver shares
// with Redis, in the value forms Redis 7 reads (units, case, yes/no,
// ranges), is accepted by rlserver exactly when redis-server accepts it.
func TestRedisFlagValues(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatalf("redis-server is not installed (%v): run ./scripts/setup.sh", err)
	}
	cases := [][]string{
		{"--client-query-buffer-limit", "1mb", "--proto-max-bulk-len", "8mb"},
		{"--proto-max-bulk-len", "10gb", "--client-query-buffer-limit", "10gb"},
		{"--proto-max-bulk-len", "1MB"},
		{"--proto-max-bulk-len", "9223372036854775807"},
		{"--proto-max-bulk-len", "9223372036854775808"},
		{"--proto-max-bulk-len", "512kb"},
		{"--proto-max-bulk-len", "1048575"},
		{"--client-query-buffer-limit", "1023kb"},
		{"--client-query-buffer-limit", "1Gb"},
		{"--client-query-buffer-limit", "2tb"},
		{"--maxmemory", "1GB"},
		{"--maxmemory", "100mb"},
		{"--maxmemory", "1k"},
		{"--maxmemory", "1m"},
		{"--maxmemory", "1g"},
		{"--maxmemory", "5B"},
		{"--maxmemory", "010"},
		{"--maxmemory", "mb"},
		{"--maxmemory", ""},
		{"--maxmemory", "18446744073709551615"},
		{"--maxmemory", "1.5gb"},
		{"--maxmemory", "-1"},
		{"--maxmemory", "+1"},
		{"--maxmemory", "1tb"},
		{"--maxmemory", "1 mb"},
		{"--repl-backlog-size", "1"},
		{"--repl-backlog-size", "2gb"},
		{"--repl-backlog-size", "0"},
		{"--protected-mode", "YES"},
		{"--protected-mode", "No"},
		{"--protected-mode", "1"},
		{"--appendfsync", "EVERYSEC"},
		{"--appendfsync", "Always"},
		{"--appendfsync", "no"},
		{"--appendfsync", "sometimes"},
		{"--enable-debug-command", "yes"},
		{"--enable-debug-command", "LOCAL"},
		{"--enable-debug-command", "no"},
		{"--enable-debug-command", "maybe"},
		{"--tls-port", "0"},
		{"--tls-port", "0", "--tls-auth-clients", "no"},
		{"--tls-auth-clients", "OPTIONAL"},
		{"--tls-auth-clients", "sometimes"},
		{"--timeout", "0"},
		{"--timeout", "300"},
		{"--timeout", "-1"},
		{"--tcp-keepalive", "0"},
		{"--tcp-keepalive", "-1"},
		{"--maxclients", "1"},
		{"--maxclients", "0"},
		{"--maxclients", "4294967295"},
		{"--cluster-node-timeout", "0"},
		{"--cluster-node-timeout", "500"},
		{"--cluster-node-timeout", "15000"},
		{"--slowlog-log-slower-than", "-1"},
		{"--slowlog-log-slower-than", "-2"},
		{"--slowlog-max-len", "0"},
		{"--slowlog-max-len", "-1"},
		{"--latency-monitor-threshold", "100"},
		{"--latency-monitor-threshold", "-1"},
		{"--busy-reply-threshold", "100"},
		{"--lua-time-limit", "10"},
		{"--busy-reply-threshold", "-1"},
		{"--requirepass", "secret", "--masteruser", "u", "--masterauth", "p"},
		{"--port", "65536"},
		{"--maxmemory", "1mb", "--maxmemory", "2mb"},
		{"--bind", "127.0.0.1 127.0.0.2"},
		{"--bind", "127.0.0.1", "-::1"},
		{"--bind", "127.0.0.1 -192.0.2.1"},
		{"--bind", "127.0.0.1 192.0.2.1"},
		{"--bind", "* -::*"},
	}
	for _, args := range cases {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			t.Parallel()
			rport, oport := freePort(t), freePort(t)
			theirs, theirOut := serves(t, redisServer(rport, t.TempDir(), args...), rport)
			ours, ourOut := serves(t, serverCommand(append([]string{"--port", oport, "--dir", ""}, args...)...), oport)
			if ours != theirs {
				t.Errorf("rlserver serves: %v, redis-server serves: %v\nrlserver:\n%s\nredis-server:\n%s", ours, theirs, ourOut, theirOut)
			}
		})
	}
}

// TestQueryBufferUnderBulkLen: with --proto-max-bulk-len above
// --client-query-buffer-limit (as Redis accepts), an argument within the
// bulk length but over the buffer limit closes the connection on both
// servers, and one within both is served.
func TestQueryBufferUnderBulkLen(t *testing.T) {
	t.Parallel()
	args := []string{"--client-query-buffer-limit", "1mb", "--proto-max-bulk-len", "8mb"}
	rport := freePort(t)
	if ok, out := serves(t, redisServer(rport, t.TempDir(), args...), rport); !ok {
		t.Fatalf("redis-server does not start with %v:\n%s", args, out)
	}
	ours := startIn(t, "", args...)
	for _, addr := range []string{ours.Addr, "127.0.0.1:" + rport} {
		small := strings.Repeat("s", 500<<10)
		nc := dialRaw(t, &server{Addr: addr})
		if got, _ := rawReply(t, nc, "*2\r\n$6\r\nEXISTS\r\n"+bulkHeader(len(small))+small+"\r\n", false); got != ":0" {
			t.Fatalf("%s: a 500 KB argument = %q, want :0", addr, got)
		}
		big := strings.Repeat("b", 2<<20)
		nc.SetDeadline(time.Now().Add(10 * time.Second))
		nc.Write([]byte("*2\r\n$6\r\nEXISTS\r\n" + bulkHeader(len(big)) + big + "\r\n"))
		if b, err := io.ReadAll(nc); len(b) != 0 || err != nil && !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("%s: a 2 MB argument: read %q, %v; want the connection closed without a reply", addr, b, err)
		}
	}
}

// TestMaxclientsUnderLowFDLimit: under a file-descriptor limit of 256
// (soft and hard) rlserver, persisting to a directory, starts and serves
// with maxclients lowered to what redis-server started the same way
// reports, and logs why.
func TestMaxclientsUnderLowFDLimit(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("prlimit"); err != nil {
		t.Skip("prlimit is not installed")
	}
	for _, args := range [][]string{nil, {"--maxclients", "100"}, {"--maxclients", "300"}} {
		t.Run(fmt.Sprint(args), func(t *testing.T) {
			t.Parallel()
			rport := freePort(t)
			cmd := redisServer(rport, t.TempDir(), args...)
			cmd.Args = append([]string{"prlimit", "--nofile=256:256", "redis-server"}, cmd.Args[1:]...)
			cmd.Path, _ = exec.LookPath("prlimit")
			if ok, out := serves(t, cmd, rport); !ok {
				t.Fatalf("redis-server under prlimit does not start:\n%s", out)
			}
			theirs := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + rport})
			defer theirs.Close()
			want := theirs.ConfigGet(ctx, "maxclients").Val()["maxclients"]

			dir := t.TempDir()
			ocmd := serverCommand(append([]string{"--port", "0", "--dir", dir}, args...)...)
			ocmd.Args = append([]string{"prlimit", "--nofile=256:256", binary}, ocmd.Args[1:]...)
			ocmd.Path, _ = exec.LookPath("prlimit")
			s, err := startCmd(t, dir, ocmd)
			if err != nil {
				t.Fatal(err)
			}
			c := s.client(t, 2)
			if got := c.ConfigGet(ctx, "maxclients").Val()["maxclients"]; got != want || want == "" {
				t.Fatalf("CONFIG GET maxclients = %q, redis-server says %q", got, want)
			}
			if got := c.Set(ctx, "k", "v", 0).Err(); got != nil && !strings.Contains(got.Error(), "unknown command") {
				t.Fatalf("SET: %v", got)
			}
			do(t, c, "CL.THROTTLE", "fd", "5", "10", "60").ints()
			if args == nil && !strings.Contains(s.logs.String(), "maxclients lowered to "+want) {
				t.Fatalf("no line says maxclients was lowered:\n%s", s.logs)
			}
		})
	}
}

// configReply is a CONFIG reply in a form that compares across servers:
// an error's text, or CONFIG GET's pairs as a sorted map.
func configReply(c *redis.Client, args ...any) any {
	v, err := c.Do(ctx, args...).Result()
	if err != nil {
		return "error: " + err.Error()
	}
	pairs := map[string]string{}
	switch v := v.(type) {
	case []any:
		for i := 0; i+1 < len(v); i += 2 {
			pairs[fmt.Sprint(v[i])] = fmt.Sprint(v[i+1])
		}
		return pairs
	case map[any]any:
		for k, x := range v {
			pairs[fmt.Sprint(k)] = fmt.Sprint(x)
		}
		return pairs
	}
	return v
}

// TestConfigRedisParams: CONFIG SET and GET of Redis 7's parameters for
// encodings, persistence, scripting and replicas (the ones Redis's test
// suite sets), and of the byte counts rlserver shares, answer as
// redis-server does in both protocols: values read back in Redis's form,
// bad ones refused with its texts, changing nothing.
func TestConfigRedisParams(t *testing.T) {
	t.Parallel()
	ours := start(t)
	theirs := &server{Addr: redistest.Start(t)}
	requests := [][]any{
		{"CONFIG", "GET", "hash-max-ziplist-entries"},
		{"CONFIG", "GET", "hash-max-*"},
		{"CONFIG", "SET", "hash-max-ziplist-entries", "0"},
		{"CONFIG", "GET", "hash-max-listpack-entries"},
		{"CONFIG", "SET", "hash-max-listpack-entries", "-1"},
		{"CONFIG", "SET", "hash-max-listpack-entries", "007"},
		{"CONFIG", "SET", "hash-max-listpack-entries", "1.5"},
		{"CONFIG", "SET", "hash-max-listpack-entries", "9223372036854775807"},
		{"CONFIG", "GET", "hash-max-ziplist-entries"},
		{"CONFIG", "SET", "hash-max-ziplist-value", "1kb"},
		{"CONFIG", "GET", "hash-max-ziplist-value"},
		{"CONFIG", "SET", "hash-max-listpack-value", "x"},
		{"CONFIG", "SET", "hash-max-listpack-value", "8", "hash-max-ziplist-entries", "512"},
		{"CONFIG", "GET", "hash-max-*"},
		{"CONFIG", "SET", "zset-max-ziplist-entries", "0", "zset-max-ziplist-value", "0"},
		{"CONFIG", "SET", "zset-max-listpack-entries", "5", "zset-max-listpack-value", "nope"},
		{"CONFIG", "GET", "zset-max-*"},
		{"CONFIG", "SET", "zset-max-ziplist-entries", "128", "zset-max-ziplist-value", "64"},
		{"CONFIG", "SET", "list-max-ziplist-size", "-5"},
		{"CONFIG", "GET", "list-max-listpack-size"},
		{"CONFIG", "SET", "list-max-listpack-size", "-2147483649"},
		{"CONFIG", "SET", "list-compress-depth", "2"},
		{"CONFIG", "SET", "list-compress-depth", "-1"},
		{"CONFIG", "GET", "list-*"},
		{"CONFIG", "SET", "set-max-intset-entries", "600"},
		{"CONFIG", "GET", "set-max-intset-entries"},
		{"CONFIG", "SET", "stream-node-max-entries", "10", "stream-node-max-bytes", "4kb"},
		{"CONFIG", "GET", "stream-node-max-*"},
		{"CONFIG", "GET", "save"},
		{"CONFIG", "SET", "save", "100 10 200 0"},
		{"CONFIG", "GET", "save"},
		{"CONFIG", "SET", "save", "0 1"},
		{"CONFIG", "SET", "save", "5"},
		{"CONFIG", "SET", "save", "5 x"},
		{"CONFIG", "SET", "save", "+5 -0"},
		{"CONFIG", "GET", "save"},
		{"CONFIG", "SET", "save", ""},
		{"CONFIG", "GET", "save"},
		{"CONFIG", "SET", "appendonly", "YES"},
		{"CONFIG", "GET", "appendonly"},
		{"CONFIG", "SET", "appendonly", "1"},
		{"CONFIG", "SET", "appendonly", "no"},
		{"CONFIG", "GET", "appendonly"},
		{"CONFIG", "SET", "aof-use-rdb-preamble", "no", "activerehashing", "no"},
		{"CONFIG", "GET", "aof-use-rdb-preamble"},
		{"CONFIG", "GET", "activerehashing"},
		{"CONFIG", "SET", "lazyfree-lazy-user-del", "yes", "lazyfree-lazy-eviction", "yes"},
		{"CONFIG", "GET", "lazyfree-*"},
		{"CONFIG", "SET", "lazyfree-lazy-expire", "maybe"},
		{"CONFIG", "SET", "lua-time-limit", "10"},
		{"CONFIG", "GET", "busy-reply-threshold"},
		{"CONFIG", "GET", "lua-time-limit"},
		{"CONFIG", "SET", "busy-reply-threshold", "5000"},
		{"CONFIG", "SET", "min-replicas-to-write", "1"},
		{"CONFIG", "GET", "min-slaves-to-write"},
		{"CONFIG", "SET", "min-replicas-to-write", "0"},
		{"CONFIG", "SET", "replica-serve-stale-data", "no", "replica-read-only", "no"},
		{"CONFIG", "GET", "replica-serve-stale-data"},
		{"CONFIG", "GET", "slave-read-only"},
		{"CONFIG", "SET", "replica-serve-stale-data", "yes", "replica-read-only", "yes"},
		{"CONFIG", "SET", "repl-ping-replica-period", "3600"},
		{"CONFIG", "GET", "repl-ping-*"},
		{"CONFIG", "SET", "repl-ping-slave-period", "0"},
		{"CONFIG", "SET", "repl-ping-replica-period", "10", "repl-timeout", "61", "repl-diskless-sync", "no"},
		{"CONFIG", "GET", "repl-timeout", "repl-diskless-sync", "repl-ping-*"},
		{"CONFIG", "SET", "repl-timeout", "60", "repl-diskless-sync", "yes"},
		{"CONFIG", "SET", "sanitize-dump-payload", "CLIENTS"},
		{"CONFIG", "GET", "sanitize-dump-payload"},
		{"CONFIG", "SET", "sanitize-dump-payload", "x"},
		{"CONFIG", "SET", "sanitize-dump-payload", "no"},
		{"CONFIG", "SET", "hz", "1000"},
		{"CONFIG", "GET", "hz"},
		{"CONFIG", "SET", "hz", "0"},
		{"CONFIG", "GET", "hz"},
		{"CONFIG", "SET", "hz", "10"},
		{"CONFIG", "SET", "active-expire-effort", "11"},
		{"CONFIG", "SET", "maxmemory-samples", "0"},
		{"CONFIG", "SET", "maxmemory-samples", "-1"},
		{"CONFIG", "SET", "maxmemory-samples", "x"},
		{"CONFIG", "SET", "maxmemory-samples", "010"},
		{"CONFIG", "SET", "maxmemory-samples", "2147483648"},
		{"CONFIG", "GET", "maxmemory-samples"},
		{"CONFIG", "SET", "maxmemory-samples", "2147483647"},
		{"CONFIG", "GET", "maxmemory-samples"},
		{"CONFIG", "SET", "maxmemory-samples", "10"},
		{"CONFIG", "GET", "maxmemory-samples"},
		{"CONFIG", "SET", "maxmemory-samples", "5"},
		{"CONFIG", "SET", "rdb-key-save-delay", "100"},
		{"CONFIG", "GET", "rdb-key-save-delay"},
		{"CONFIG", "GET", "rdb-key-*"},
		{"CONFIG", "SET", "rdb-key-save-delay", "0"},
		{"CONFIG", "SET", "proto-max-bulk-len", "10000000000", "client-query-buffer-limit", "10000000000"},
		{"CONFIG", "GET", "proto-max-bulk-len"},
		{"CONFIG", "GET", "client-query-buffer-limit"},
		{"CONFIG", "SET", "proto-max-bulk-len", "1kb"},
		{"CONFIG", "SET", "proto-max-bulk-len", "9223372036854775808"},
		{"CONFIG", "SET", "client-query-buffer-limit", "lots"},
		{"CONFIG", "SET", "proto-max-bulk-len", "1mb", "client-query-buffer-limit", "1gb"},
		{"CONFIG", "SET", "client-query-buffer-limit", "1mb", "proto-max-bulk-len", "8mb"},
		{"CONFIG", "GET", "proto-max-bulk-len"},
		{"CONFIG", "SET", "proto-max-bulk-len", "1mb", "client-query-buffer-limit", "1gb"},
		{"CONFIG", "SET", "maxmemory", "1Gb"},
		{"CONFIG", "GET", "maxmemory"},
		{"CONFIG", "SET", "maxmemory", "kb"},
		{"CONFIG", "GET", "maxmemory"},
		{"CONFIG", "SET", "maxmemory", "1.5gb"},
		{"CONFIG", "SET", "maxmemory", "-1"},
		{"CONFIG", "SET", "maxmemory", "0"},
		{"CONFIG", "SET", "nosuch-parameter", "1"},
		{"CONFIG", "SET", "MAXMEMORY", "1mb", "maxmemory", "2mb"},
		{"CONFIG", "GET", "MAXMEMORY"},
		{"CONFIG", "GET", "Hash-Max-Ziplist-Entries", "hash-max-ziplist-entries"},
		{"CONFIG", "SET", "timeout", "10", "maxclients", "0"},
		{"CONFIG", "GET", "timeout"},
		{"CONFIG", "SET", "timeout", "-1"},
		{"CONFIG", "SET", "timeout", "2147483648"},
		{"CONFIG", "SET", "timeout", "007"},
		{"CONFIG", "SET", "maxclients", "4294967296"},
		{"CONFIG", "SET", "slowlog-log-slower-than", "007"},
		{"CONFIG", "SET", "slowlog-max-len", "-1"},
		{"CONFIG", "SET", "latency-monitor-threshold", "+5"},
		{"CONFIG", "SET", "protected-mode", "YES"},
		{"CONFIG", "SET", "protected-mode", "1"},
		{"CONFIG", "SET", "lua-time-limit", "-1"},
		{"CONFIG", "SET", "lua-time-limit", "9223372036854775807"},
		{"CONFIG", "GET", "busy-reply-threshold"},
		{"CONFIG", "SET", "lua-time-limit", "5000"},
		{"CONFIG", "SET", "hash-max-ziplist-entries"},
	}
	for _, proto := range []int{2, 3} {
		a, b := ours.client(t, proto), theirs.client(t, proto)
		for _, req := range requests {
			got, want := configReply(a, req...), configReply(b, req...)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("RESP%d %q:\n got %v\nwant %v", proto, req, got, want)
			}
		}
	}
	// Every parameter kept reads back, with both its names where it has
	// two, as Redis's own names (a pattern lists them in any order).
	names := configReply(ours.client(t, 2), "CONFIG", "GET", "*").(map[string]string)
	theirNames := configReply(theirs.client(t, 2), "CONFIG", "GET", "*").(map[string]string)
	var missing []string
	for n := range names {
		if _, ok := theirNames[n]; !ok && !rlserverOnlyConfig[n] {
			missing = append(missing, n)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("CONFIG GET * has parameters redis-server does not: %v", missing)
	}
}

// rlserverOnlyConfig are the CONFIG GET parameters of rlserver's own.
var rlserverOnlyConfig = map[string]bool{
	"save-interval": true, "shards": true, "io": true, "threads": true, "backup-dir": true,
	"log-max-limit": true, "cluster-config": true, "cluster-etcd": true, "cluster-name": true,
	"cluster-replicas": true,
}

// TestBindList: --bind takes Redis's list of addresses; the server serves
// on each, with the port picked on the first, and CONFIG GET bind reads
// the list back as redis-server does.
func TestBindList(t *testing.T) {
	t.Parallel()
	bind := "127.0.0.1 127.0.0.2 -192.0.2.1"
	s := startIn(t, "", "--bind", bind, "--protected-mode", "no")
	for _, host := range []string{"127.0.0.1", "127.0.0.2"} {
		nc, err := net.Dial("tcp", net.JoinHostPort(host, s.Port))
		if err != nil {
			t.Fatalf("%s: %v", host, err)
		}
		if got, err := roundTrip(nc, "PING"); got != "+PONG" {
			t.Fatalf("PING on %s: %q, %v", host, got, err)
		}
		nc.Close()
	}
	rport := freePort(t)
	if ok, out := serves(t, redisServer(rport, t.TempDir(), "--bind", bind), rport); !ok {
		t.Fatalf("redis-server does not start with --bind %q:\n%s", bind, out)
	}
	theirs := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + rport})
	defer theirs.Close()
	if got, want := s.client(t, 2).ConfigGet(ctx, "bind").Val(), theirs.ConfigGet(ctx, "bind").Val(); !reflect.DeepEqual(got, want) {
		t.Fatalf("CONFIG GET bind = %v, redis-server says %v", got, want)
	}
}

// TestACLFileWithRequirepass: --aclfile and --requirepass together start,
// as Redis does. A file naming the default user wins over the password, as
// in redis-server started the same way; a file that does not leaves the
// default user the password (where Redis would leave it none).
func TestACLFileWithRequirepass(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	named := filepath.Join(dir, "named.acl")
	unnamed := filepath.Join(dir, "unnamed.acl")
	os.WriteFile(named, []byte("user default on >filepw ~* +@all\nuser alice on >alicepw ~* +@all\n"), 0o600)
	os.WriteFile(unnamed, []byte("user alice on >alicepw ~* +@all\n"), 0o600)

	auth := func(addr, user, pass string) string {
		c := redis.NewClient(&redis.Options{Addr: addr, Username: user, Password: pass, DisableIdentity: true})
		defer c.Close()
		if err := c.Ping(ctx).Err(); err != nil {
			return err.Error()
		}
		return "PONG"
	}
	rport := freePort(t)
	if ok, out := serves(t, redisServer(rport, t.TempDir(), "--aclfile", named, "--requirepass", "p"), rport); !ok {
		t.Fatalf("redis-server does not start:\n%s", out)
	}
	ours := startIn(t, "", "--aclfile", named, "--requirepass", "p")
	for _, cred := range [][2]string{{"", "filepw"}, {"", "p"}, {"alice", "alicepw"}, {"", ""}} {
		if got, want := auth(ours.Addr, cred[0], cred[1]), auth("127.0.0.1:"+rport, cred[0], cred[1]); got != want {
			t.Errorf("file naming default, AUTH %q %q: %q, redis-server %q", cred[0], cred[1], got, want)
		}
	}

	s := startIn(t, "", "--aclfile", unnamed, "--requirepass", "p")
	if got := auth(s.Addr, "", "p"); got != "PONG" {
		t.Errorf("file not naming default, AUTH p: %q", got)
	}
	if got := auth(s.Addr, "", ""); !strings.HasPrefix(got, "NOAUTH") {
		t.Errorf("file not naming default, no AUTH: %q, want NOAUTH", got)
	}
	if got := auth(s.Addr, "alice", "alicepw"); got != "PONG" {
		t.Errorf("alice: %q", got)
	}
}
