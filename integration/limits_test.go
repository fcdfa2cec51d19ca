package integration

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sys/unix"
)

// dialRaw opens a plain TCP connection to s.
func dialRaw(t *testing.T, s *server) net.Conn {
	t.Helper()
	nc, err := net.Dial("tcp", s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return nc
}

// roundTrip sends one inline command on nc and returns the reply's first
// line (an error: the connection's error, io.EOF when the server closed
// it).
func roundTrip(nc net.Conn, cmd string) (string, error) {
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := nc.Write([]byte(cmd + "\r\n")); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(nc).ReadString('\n')
	return strings.TrimRight(line, "\r\n"), err
}

// TestMaxClients: over --maxclients a connection is answered Redis's
// error and closed, counted in INFO; once a client leaves, a new one is
// served; CONFIG SET maxclients moves the bound.
func TestMaxClients(t *testing.T) {
	t.Parallel()
	for _, io := range []string{"epoll", "goroutines"} {
		t.Run(io, func(t *testing.T) {
			s := startIn(t, "", "--maxclients", "3", "--io", io)
			var open []net.Conn
			for range 3 {
				nc := dialRaw(t, s)
				if got, err := roundTrip(nc, "PING"); got != "+PONG" {
					t.Fatalf("PING = %q, %v", got, err)
				}
				open = append(open, nc)
			}
			extra := dialRaw(t, s)
			got, _ := bufio.NewReader(extra).ReadString('\n')
			if got != "-ERR max number of clients reached\r\n" {
				t.Fatalf("connection over maxclients got %q", got)
			}
			if _, err := bufio.NewReader(extra).ReadString('\n'); err == nil {
				t.Fatal("connection over maxclients not closed")
			}
			// Once a client leaves, a new one is served (a dial racing the
			// server's noticing it left is refused, and counted).
			open[1].Close()
			refused := 1
			for served := false; !served; {
				nc := dialRaw(t, s)
				switch got, _ := roundTrip(nc, "PING"); got {
				case "+PONG":
					served = true
					if got, err := roundTrip(nc, "CONFIG SET maxclients 10"); got != "+OK" {
						t.Fatalf("CONFIG SET maxclients 10 = %q, %v", got, err)
					}
				case "-ERR max number of clients reached":
					refused++
					nc.Close()
				default:
					t.Fatalf("PING = %q", got)
				}
			}
			c := s.client(t, 2)
			info := c.Info(ctx, "stats", "clients").Val()
			if want := fmt.Sprintf("rejected_connections:%d\r\n", refused); !strings.Contains(info, want) || !strings.Contains(info, "maxclients:10\r\n") {
				t.Fatalf("INFO stats, clients: want %q and maxclients:10:\n%s", want, info)
			}
			if got := c.ConfigGet(ctx, "maxclients").Val()["maxclients"]; got != "10" {
				t.Fatalf("CONFIG GET maxclients = %q", got)
			}
			for range 5 {
				if got, err := roundTrip(dialRaw(t, s), "PING"); got != "+PONG" {
					t.Fatalf("PING after CONFIG SET maxclients 10 = %q, %v", got, err)
				}
			}
			if err := c.ConfigSet(ctx, "maxclients", "0").Err(); err == nil || !strings.Contains(err.Error(), "maxclients") {
				t.Fatalf("CONFIG SET maxclients 0 = %v, want an error naming it", err)
			}
		})
	}
}

// startLimited starts a server whose file-descriptor limit is nofile.
func startLimited(t *testing.T, nofile int, dir string, args ...string) (*server, error) {
	t.Helper()
	inner := serverCommand(append([]string{"--port", "0", "--dir", dir}, args...)...)
	cmd := exec.Command("sh", append([]string{"-c", `ulimit -n ` + strconv.Itoa(nofile) + ` && exec "$0" "$@"`, inner.Path}, inner.Args[1:]...)...)
	cmd.Env = inner.Env
	return startCmd(t, dir, cmd)
}

// TestLowFileLimit: under a low ulimit -n the server lowers maxclients to
// what the limit holds (logging it), and the connections beyond are
// refused with the error while the others are served; with a store too,
// as Redis would; under a limit of 32 or less it refuses to start.
func TestLowFileLimit(t *testing.T) {
	t.Parallel()
	s, err := startLimited(t, 64, "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(s.logs.String(), "maxclients lowered to 32") {
		t.Fatalf("want a line saying maxclients was lowered to 32:\n%s", s.logs)
	}
	served, refused := 0, 0
	var conns []net.Conn
	for range 50 {
		nc := dialRaw(t, s)
		conns = append(conns, nc)
		switch got, _ := roundTrip(nc, "PING"); got {
		case "+PONG":
			served++
		case "-ERR max number of clients reached":
			refused++
		default:
			t.Fatalf("connection %d: got %q", len(conns), got)
		}
	}
	if served != 32 || refused != 18 {
		t.Fatalf("%d served, %d refused; want 32 and 18", served, refused)
	}
	if got, err := roundTrip(conns[0], "PING"); got != "+PONG" {
		t.Fatalf("first client after the refusals: %q, %v", got, err)
	}

	// With a store, as without: maxclients is the limit minus 32, as
	// Redis's, and the store shares what is left.
	dir := t.TempDir()
	s, err = startLimited(t, 200, dir)
	if err != nil {
		t.Fatalf("start with a store under ulimit -n 200: %v", err)
	}
	if got := s.client(t, 2).ConfigGet(ctx, "maxclients").Val()["maxclients"]; got != "168" {
		t.Fatalf("maxclients under ulimit -n 200 with a store = %q, want 168", got)
	}
	if _, err = startLimited(t, 32, ""); err == nil || !strings.Contains(err.Error(), "too low") {
		t.Fatalf("start under ulimit -n 32: %v, want a refusal saying the limit is too low", err)
	}
}

// TestAcceptErrorsNeverStop: with its file descriptors exhausted (the
// limit lowered under the running server), accept fails; the server logs
// it, goes on serving its clients, and accepts again once descriptors are
// free.
func TestAcceptErrorsNeverStop(t *testing.T) {
	t.Parallel()
	for _, io := range []string{"epoll", "goroutines"} {
		t.Run(io, func(t *testing.T) {
			s := startIn(t, "", "--io", io)
			c := s.client(t, 2)
			if err := c.Ping(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			var old unix.Rlimit
			if err := unix.Prlimit(s.cmd.Process.Pid, unix.RLIMIT_NOFILE, nil, &old); err != nil {
				t.Fatal(err)
			}
			lim := unix.Rlimit{Cur: 40, Max: old.Max}
			if err := unix.Prlimit(s.cmd.Process.Pid, unix.RLIMIT_NOFILE, &lim, nil); err != nil {
				t.Fatal(err)
			}
			var extra []net.Conn
			for range 60 {
				extra = append(extra, dialRaw(t, s))
			}
			eventually(t, "an accept error logged", func() bool { return strings.Contains(s.logs.String(), "too many open files") })
			if err := c.Ping(ctx).Err(); err != nil {
				t.Fatalf("a client connected before the limit: %v", err)
			}
			for _, nc := range extra {
				nc.Close()
			}
			if err := unix.Prlimit(s.cmd.Process.Pid, unix.RLIMIT_NOFILE, &old, nil); err != nil {
				t.Fatal(err)
			}
			eventually(t, "accepting again", func() bool {
				nc, err := net.Dial("tcp", s.Addr)
				if err != nil {
					return false
				}
				defer nc.Close()
				got, _ := roundTrip(nc, "PING")
				return got == "+PONG"
			})
			eventually(t, "a line saying accept works again", func() bool { return strings.Contains(s.logs.String(), "accept works again") })
		})
	}
}

// TestIdleTimeout: --timeout closes a connection idle for that long and
// leaves a busy one open; CONFIG GET shows it, CONFIG SET timeout 0 turns
// it off.
func TestIdleTimeout(t *testing.T) {
	t.Parallel()
	for _, io := range []string{"epoll", "goroutines"} {
		t.Run(io, func(t *testing.T) {
			s := startIn(t, "", "--timeout", "1", "--io", io)
			idle := dialRaw(t, s)
			busy := dialRaw(t, s)
			if got, err := roundTrip(idle, "PING"); got != "+PONG" {
				t.Fatalf("PING = %q, %v", got, err)
			}
			closed := make(chan error, 1)
			go func() {
				idle.SetReadDeadline(time.Now().Add(20 * time.Second))
				_, err := bufio.NewReader(idle).ReadString('\n')
				closed <- err
			}()
			// The busy connection pings until the idle one is closed.
			for done := false; !done; {
				select {
				case err := <-closed:
					if ne, ok := err.(net.Error); ok && ne.Timeout() {
						t.Fatal("the idle connection was not closed within 20 s")
					}
					done = true
				default:
					if got, err := roundTrip(busy, "PING"); got != "+PONG" {
						t.Fatalf("the busy connection: PING = %q, %v", got, err)
					}
				}
			}
			if got, err := roundTrip(busy, "CONFIG GET timeout"); err != nil || got != "*2" {
				t.Fatalf("CONFIG GET timeout = %q, %v", got, err)
			}
			c := s.client(t, 2)
			if got := c.ConfigGet(ctx, "timeout").Val()["timeout"]; got != "1" {
				t.Fatalf("CONFIG GET timeout = %q, want 1", got)
			}
			if got := c.ConfigGet(ctx, "tcp-keepalive").Val()["tcp-keepalive"]; got != "300" {
				t.Fatalf("CONFIG GET tcp-keepalive = %q, want 300", got)
			}
			if err := c.ConfigSet(ctx, "timeout", "-1").Err(); err == nil {
				t.Fatal("CONFIG SET timeout -1 accepted")
			}
		})
	}
}

// TestLimitFlagsRefused: bad values for the connection limits are refused
// at start, exit 2, with a line naming the flag.
func TestLimitFlagsRefused(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--maxclients", "0"}, {"--timeout", "-1"}, {"--tcp-keepalive", "-5"}, {"--maxclients", "x"},
		{"--client-query-buffer-limit", "10kb"}, {"--proto-max-bulk-len", "512kb"},
		{"--aclfile", "/nonexistent/users.acl"}, {"--aclfile", "x.acl", "--requirepass", "p"},
		{"--cluster-node-timeout", "-1"}} {
		out, err := serverCommand(append([]string{"--port", "0", "--dir", ""}, args...)...).CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(out), strings.TrimPrefix(args[0], "--")) {
			t.Errorf("%v: %v, want exit 2 naming the flag:\n%s", args, err, out)
		}
	}
}

// dialFrom opens a TCP connection to s from the local address ip.
func dialFrom(t *testing.T, s *server, ip string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	nc, err := d.Dial("tcp", s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return nc
}

// TestProtectedMode: with no password, a connection from 127.0.0.2 (not
// the loopback address, for Redis and rlserver) is answered -DENIED and
// closed, one from 127.0.0.1 is served; a password, --protected-mode no or
// CONFIG SET protected-mode no lets it in.
func TestProtectedMode(t *testing.T) {
	t.Parallel()
	s := startIn(t, "")
	nc := dialFrom(t, s, "127.0.0.2")
	got, _ := bufio.NewReader(nc).ReadString('\n')
	if !strings.HasPrefix(got, "-DENIED rlserver is running in protected mode") || !strings.Contains(got, "--requirepass") || !strings.Contains(got, "--protected-mode no") {
		t.Fatalf("from 127.0.0.2: %q, want -DENIED explaining what to do", got)
	}
	if _, err := bufio.NewReader(nc).ReadString('\n'); err == nil {
		t.Fatal("a denied connection was not closed")
	}
	if got, err := roundTrip(dialFrom(t, s, "127.0.0.1"), "PING"); got != "+PONG" {
		t.Fatalf("from 127.0.0.1: %q, %v", got, err)
	}
	c := s.client(t, 2)
	if got := c.ConfigGet(ctx, "protected-mode").Val()["protected-mode"]; got != "yes" {
		t.Fatalf("CONFIG GET protected-mode = %q", got)
	}
	if err := c.ConfigSet(ctx, "protected-mode", "maybe").Err(); err == nil || err.Error() != "ERR CONFIG SET failed (possibly related to argument 'protected-mode') - argument must be 'yes' or 'no'" {
		t.Fatalf("CONFIG SET protected-mode maybe: %v", err)
	}
	if err := c.ConfigSet(ctx, "protected-mode", "no").Err(); err != nil {
		t.Fatal(err)
	}
	if got, err := roundTrip(dialFrom(t, s, "127.0.0.2"), "PING"); got != "+PONG" {
		t.Fatalf("from 127.0.0.2 after CONFIG SET protected-mode no: %q, %v", got, err)
	}

	p := startIn(t, "", "--requirepass", "s3cret")
	if got, err := roundTrip(dialFrom(t, p, "127.0.0.2"), "PING"); got != "-NOAUTH Authentication required." {
		t.Fatalf("from 127.0.0.2 with a password set: %q, %v", got, err)
	}
	off := startIn(t, "", "--protected-mode", "no")
	if got, err := roundTrip(dialFrom(t, off, "127.0.0.2"), "PING"); got != "+PONG" {
		t.Fatalf("from 127.0.0.2 with --protected-mode no: %q, %v", got, err)
	}
	out, err := serverCommand("--port", "0", "--dir", "", "--protected-mode", "maybe").CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(out), "protected-mode") {
		t.Fatalf("--protected-mode maybe: %v, want exit 2:\n%s", err, out)
	}
}

// TestAuthFailures: failed AUTHs (and HELLO ... AUTH) are counted in INFO
// stats acl_access_denied_auth and logged at a bounded rate: one line for
// a burst of them.
func TestAuthFailures(t *testing.T) {
	t.Parallel()
	s := startIn(t, "", "--requirepass", "s3cret")
	nc := dialRaw(t, s)
	for range 5 {
		if got, err := roundTrip(nc, "AUTH wrong"); got != "-WRONGPASS invalid username-password pair or user is disabled." {
			t.Fatalf("AUTH wrong = %q, %v", got, err)
		}
	}
	if got, err := roundTrip(nc, "HELLO 2 AUTH default wrong"); got != "-WRONGPASS invalid username-password pair or user is disabled." {
		t.Fatalf("HELLO AUTH wrong = %q, %v", got, err)
	}
	if got, err := roundTrip(nc, "AUTH s3cret"); got != "+OK" {
		t.Fatalf("AUTH s3cret = %q, %v", got, err)
	}
	c := redis.NewClient(&redis.Options{Addr: s.Addr, Password: "s3cret"})
	defer c.Close()
	if info := c.Info(ctx, "stats").Val(); !strings.Contains(info, "acl_access_denied_auth:6\r\n") {
		t.Fatalf("INFO stats: want acl_access_denied_auth:6:\n%s", info)
	}
	eventually(t, "a log line about the failed AUTHs", func() bool { return strings.Contains(s.logs.String(), "AUTH failed from 127.0.0.1:") })
	if err := c.Ping(ctx).Err(); err != nil { // the server's later lines are read too
		t.Fatal(err)
	}
	if n := strings.Count(s.logs.String(), "AUTH failed from"); n != 1 {
		t.Fatalf("%d log lines about failed AUTHs, want 1 for a burst:\n%s", n, s.logs)
	}
}
