package rlserver

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// rlserverBin is the server the tests start: $RLSERVER_BIN, or built from
// the repository by TestMain.
var rlserverBin string

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	rlserverBin = os.Getenv("RLSERVER_BIN")
	if rlserverBin == "" {
		dir, err := os.MkdirTemp("", "rlserver-sdk-go")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		rlserverBin = filepath.Join(dir, "rlserver")
		build := exec.Command("go", "build", "-o", rlserverBin, "./cmd/rlserver")
		build.Dir = "../.."
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "building rlserver:", err)
			return 1
		}
	}
	return m.Run()
}

// server is one rlserver process on a free 127.0.0.1 port, in memory,
// with DEBUG CLOCK enabled.
type server struct {
	cmd  *exec.Cmd
	addr string
	done chan struct{}
}

var listening = regexp.MustCompile(`listening on (127\.0\.0\.1:\d+)`)

func startServer(t testing.TB) *server {
	t.Helper()
	s, err := tryStartServer("--port", "0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.stop)
	return s
}

// tryStartServer starts rlserver with args (after the test defaults) and
// waits for its "listening on" line.
func tryStartServer(args ...string) (*server, error) {
	cmd := exec.Command(rlserverBin, append([]string{"--dir", "", "--enable-debug-command", "--bind", "127.0.0.1"}, args...)...)
	out, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout = cmd.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{cmd: cmd, done: make(chan struct{})}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
				break
			}
		}
		io.Copy(io.Discard, out)
		cmd.Wait()
		close(s.done)
	}()
	select {
	case s.addr = <-addr:
		return s, nil
	case <-s.done:
		return nil, fmt.Errorf("rlserver %v exited before listening", args)
	case <-time.After(30 * time.Second):
		s.stop()
		return nil, fmt.Errorf("rlserver %v did not log its address within 30s", args)
	}
}

// stop kills the server and waits for it to exit, so that its port refuses.
func (s *server) stop() {
	s.cmd.Process.Kill()
	<-s.done
}

// client returns a go-redis client for s, closed at the end of the test.
func (s *server) client(t testing.TB) *redis.Client {
	// One dial attempt: a stopped server fails the call at once.
	rdb := redis.NewClient(&redis.Options{Addr: s.addr, ContextTimeoutEnabled: true, MaxRetries: -1, DialerRetries: 1})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// epochMs is where the tests set the server's clock: a multiple of every
// window they use, so fixed windows start there.
const epochMs = 1_800_000_000_000

func setClock(t testing.TB, rdb redis.UniversalClient, ms int64) {
	t.Helper()
	if err := rdb.Do(context.Background(), "DEBUG", "CLOCK", "SET", ms).Err(); err != nil {
		t.Fatal(err)
	}
}

func advance(t testing.TB, rdb redis.UniversalClient, ms int64) {
	t.Helper()
	if err := rdb.Do(context.Background(), "DEBUG", "CLOCK", "ADVANCE", ms).Err(); err != nil {
		t.Fatal(err)
	}
}
