// Package integration starts the real rlserver binary and drives it with
// real clients: go-redis (RESP2 and RESP3), rueidis and redis-cli.
package integration

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "rlserver-it-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "rlserver")
	// The server is built with the race detector exactly when these tests
	// run with it (go test -race), so that a run without -race is quick.
	args := []string{"build", "-o", binary, "../cmd/rlserver"}
	kind := "without the race detector"
	if raceEnabled {
		args = []string{"build", "-race", "-o", binary, "../cmd/rlserver"}
		kind = "with the race detector (-race)"
	}
	began := time.Now()
	build := exec.Command("go", args...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building rlserver:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "integration: built rlserver %s in %v\n", kind, time.Since(began).Round(time.Millisecond))
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// serverCommand returns the command that runs the built server with args.
// A race-instrumented server would sleep a second before exiting, to let
// other goroutines report races (GORACE's atexit_sleep_ms); a server exits
// only once it has stopped serving, so the sleep is cut, and the tests
// that restart or stop servers do not wait a second each time.
func serverCommand(args ...string) *exec.Cmd {
	cmd := exec.Command(binary, args...)
	if gorace := os.Getenv("GORACE"); raceEnabled && !strings.Contains(gorace, "atexit_sleep_ms") {
		cmd.Env = append(os.Environ(), "GORACE="+strings.TrimSpace(gorace+" atexit_sleep_ms=0"))
	}
	return cmd
}

// server is one running rlserver process.
type server struct {
	t    *testing.T
	cmd  *exec.Cmd
	Addr string
	Dir  string
	Port string
	logs *logBuffer
	done chan struct{}
	err  error
}

type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

var readyRE = regexp.MustCompile(`ready: listening on 127\.0\.0\.1:(\d+), (\d+) keys restored`)

// start runs rlserver on 127.0.0.1:0 with the debug command on, persisting
// to a fresh temporary directory, and waits for its ready line.
func start(t *testing.T, args ...string) *server {
	t.Helper()
	return startIn(t, t.TempDir(), args...)
}

// startIn starts a server persisting to dir ("" means in memory).
func startIn(t *testing.T, dir string, args ...string) *server {
	t.Helper()
	s, err := tryStart(t, dir, args...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func tryStart(t *testing.T, dir string, args ...string) (*server, error) {
	t.Helper()
	return tryStartOpts(t, dir, true, args...)
}

func tryStartOpts(t *testing.T, dir string, debug bool, args ...string) (*server, error) {
	t.Helper()
	full := []string{"--port", "0", "--dir", dir}
	if debug {
		full = append(full, "--enable-debug-command")
	}
	full = append(full, args...)
	return startCmd(t, dir, serverCommand(full...))
}

// startCmd starts cmd, a server command (serverCommand, maybe wrapped),
// and waits for its ready line.
func startCmd(t *testing.T, dir string, cmd *exec.Cmd) (*server, error) {
	t.Helper()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{t: t, cmd: cmd, Dir: dir, logs: &logBuffer{}, done: make(chan struct{})}
	ready := make(chan string, 1)
	logged := make(chan struct{}) // closed when stderr reaches EOF
	go func() {
		defer close(logged)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			s.logs.mu.Lock()
			s.logs.b.WriteString(line + "\n")
			s.logs.mu.Unlock()
			if m := readyRE.FindStringSubmatch(line); m != nil {
				select {
				case ready <- m[1]:
				default:
				}
			}
		}
	}()
	// Wait only after stderr is read to its end: Wait closes the pipe, and
	// the last lines (an error before exit) would be lost.
	go func() { <-logged; s.err = cmd.Wait(); close(s.done) }()
	select {
	case port := <-ready:
		s.Port = port
		s.Addr = "127.0.0.1:" + port
	case <-s.done:
		return nil, fmt.Errorf("rlserver exited before ready: %v\n%s", s.err, s.logs)
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		return nil, fmt.Errorf("rlserver not ready in 60s:\n%s", s.logs)
	}
	t.Cleanup(func() {
		s.kill()
		// A race-instrumented server reports a race on its stderr and goes
		// on; it would exit 66 at the end, but most servers are killed.
		if strings.Contains(s.logs.String(), "WARNING: DATA RACE") {
			t.Errorf("rlserver reported a data race")
		}
		if t.Failed() {
			t.Logf("rlserver log:\n%s", s.logs)
		}
	})
	return s, nil
}

// kill stops the process at once (SIGKILL), if it still runs.
func (s *server) kill() {
	select {
	case <-s.done:
	default:
		s.cmd.Process.Kill()
		<-s.done
	}
}

// wait waits for the process to exit and returns its exit code.
func (s *server) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("rlserver did not exit:\n%s", s.logs)
	}
	return s.cmd.ProcessState.ExitCode()
}

// client returns a go-redis client speaking protocol proto (2 or 3).
func (s *server) client(t *testing.T, proto int) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: s.Addr, Protocol: proto, DisableIdentity: false})
	t.Cleanup(func() { c.Close() })
	return c
}

var ctx = context.Background()

// do runs a command and returns its result for compact expectations.
type result struct {
	t   *testing.T
	val any
	err error
	cmd []any
}

func do(t *testing.T, c *redis.Client, args ...any) result {
	t.Helper()
	v, err := c.Do(ctx, args...).Result()
	return result{t: t, val: v, err: err, cmd: args}
}

// equal asserts the reply, compared after formatting with %v.
func (r result) equal(want any) {
	r.t.Helper()
	if r.err != nil {
		r.t.Fatalf("%v: error %v, want %v", r.cmd, r.err, want)
	}
	if fmt.Sprint(r.val) != fmt.Sprint(want) {
		r.t.Fatalf("%v = %v, want %v", r.cmd, r.val, want)
	}
}

// errIs asserts an error reply with exactly this text.
func (r result) errIs(want string) {
	r.t.Helper()
	if r.err == nil {
		r.t.Fatalf("%v = %v, want error %q", r.cmd, r.val, want)
	}
	if r.err.Error() != want {
		r.t.Fatalf("%v: error %q, want %q", r.cmd, r.err.Error(), want)
	}
}

// ints converts an array reply of integers.
func (r result) ints() []int64 {
	r.t.Helper()
	if r.err != nil {
		r.t.Fatalf("%v: %v", r.cmd, r.err)
	}
	arr, ok := r.val.([]any)
	if !ok {
		r.t.Fatalf("%v = %T %v, want an array", r.cmd, r.val, r.val)
	}
	out := make([]int64, len(arr))
	for i, v := range arr {
		n, ok := v.(int64)
		if !ok {
			r.t.Fatalf("%v[%d] = %T %v, want an integer", r.cmd, i, v, v)
		}
		out[i] = n
	}
	return out
}

// setClock freezes the server clock at unixMs.
func setClock(t *testing.T, c *redis.Client, unixMs int64) {
	t.Helper()
	do(t, c, "DEBUG", "CLOCK", "SET", unixMs).equal("OK")
}

func advance(t *testing.T, c *redis.Client, ms int64) {
	t.Helper()
	do(t, c, "DEBUG", "CLOCK", "ADVANCE", ms).equal("OK")
}

// t0 is a fixed instant: 2026-01-01T00:00:00Z, a multiple of every window
// used in the tests.
const t0 = int64(1767225600000)

// eventually polls cond every few ms until it holds, failing after 20 s.
// It is for observable conditions (INFO fields), never a plain delay.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// protocols runs f under RESP2 and RESP3, one after the other: callers
// share one server between them (and often empty it with FLUSHALL).
func protocols(t *testing.T, f func(t *testing.T, proto int)) {
	for _, p := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", p), func(t *testing.T) { f(t, p) })
	}
}
