package integration

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// ioModes runs f against a server in each --io mode: event loops (the
// default on Linux, which every other test uses) and a goroutine per
// connection. Two threads, so that the loops are two and connections are
// spread over them.
func ioModes(t *testing.T, f func(t *testing.T, s *server)) {
	for _, mode := range []string{"epoll", "goroutines"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel() // a server of its own
			f(t, startIn(t, "", "--io", mode, "--threads", "2"))
		})
	}
}

// TestIOSlowReaderDoesNotStallOthers: a client that pipelines requests
// whose replies outgrow every socket buffer, and reads nothing until it has
// sent them all, gets every reply in order once it reads; meanwhile the
// server goes on serving other clients (an event loop must park the slow
// connection until it is writable, not wait for it).
func TestIOSlowReaderDoesNotStallOthers(t *testing.T) {
	t.Parallel()
	ioModes(t, func(t *testing.T, s *server) {
		slow := dialSmallReceiveBuffer(t, s)
		slow.send("COMMAND\r\n")
		first := readReply(t, slow.rd)
		const n = 2000
		if n*len(first) < 16<<20 { // more than the 4 KB receive buffer and tcp_wmem's 4 MB
			t.Fatalf("COMMAND's reply is %d bytes: %d of them do not outgrow socket buffers", len(first), n)
		}
		slow.send(strings.Repeat("COMMAND\r\n", n) + "PING\r\n")

		// Every connection of the server, whichever loop it is on.
		for i := 0; i < 4; i++ {
			other := dial(t, s)
			other.send("CL.THROTTLE other" + strconv.Itoa(i) + " 0 1 60\r\n")
			other.expect("*5")
			other.expect(":0")
			other.expect(":1")
			other.expect(":0")
			other.expect(":-1")
			other.expect(":60")
		}

		slow.nc.SetReadDeadline(time.Now().Add(60 * time.Second))
		for i := 0; i < n; i++ {
			if got := readReply(t, slow.rd); got != first {
				t.Fatalf("reply %d of %d differs from the first COMMAND reply (%d vs %d bytes)", i+1, n, len(got), len(first))
			}
		}
		slow.expect("+PONG")
	})
}

// TestIOPipelinesAndConcurrency: 8 clients each pipeline 2,000 CL.THROTTLE
// calls on one key in chunks of every size from 1 up; with a frozen clock
// exactly limit of them are admitted, and each client gets exactly one
// reply per request, in order.
func TestIOPipelinesAndConcurrency(t *testing.T) {
	t.Parallel()
	ioModes(t, func(t *testing.T, s *server) {
		c := s.client(t, 2)
		setClock(t, c, t0)
		const clients, calls, burst = 8, 2000, 4999 // limit 5000 of 16000 calls
		var admitted atomic.Int64
		var wg sync.WaitGroup
		for g := 0; g < clients; g++ {
			rc := dial(t, s)
			wg.Add(1)
			go func() {
				defer wg.Done()
				rd := bufio.NewReader(rc.nc)
				sent := 0
				for chunk := 1; sent < calls; chunk++ {
					k := min(chunk, calls-sent)
					req := strings.Repeat("*5\r\n$11\r\nCL.THROTTLE\r\n$3\r\nhot\r\n$4\r\n"+strconv.Itoa(burst)+"\r\n$1\r\n1\r\n$2\r\n1h\r\n", k)
					if _, err := rc.nc.Write([]byte(req)); err != nil {
						t.Error(err)
						return
					}
					rc.nc.SetReadDeadline(time.Now().Add(30 * time.Second))
					for i := 0; i < k; i++ {
						r := readReply(t, rd)
						switch {
						case strings.HasPrefix(r, "*5\r\n:0\r\n"):
							admitted.Add(1)
						case strings.HasPrefix(r, "*5\r\n:1\r\n"):
						default:
							t.Errorf("reply %q", r)
							return
						}
					}
					sent += k
				}
			}()
		}
		wg.Wait()
		if got := admitted.Load(); got != burst+1 {
			t.Fatalf("%d clients x %d pipelined calls admitted %d, want exactly %d", clients, calls, got, burst+1)
		}
	})
}

// TestIOCloseAfterReply: QUIT and a protocol error are answered, then the
// connection is closed; CLIENT LIST names a descriptor for each connection
// an event loop serves.
func TestIOCloseAfterReply(t *testing.T) {
	t.Parallel()
	ioModes(t, func(t *testing.T, s *server) {
		q := dial(t, s)
		q.send("PING\r\nQUIT\r\nPING\r\n")
		q.expect("+PONG")
		q.expect("+OK")
		q.expectClosed()

		bad := dial(t, s)
		bad.send("PING\r\n*1\r\nx\r\n")
		bad.expect("+PONG")
		bad.expect("-ERR Protocol error: expected '$', got 'x'")
		bad.expectClosed()

		c := s.client(t, 2)
		list, err := c.ClientList(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		epoll := strings.HasSuffix(t.Name(), "epoll")
		if strings.Contains(list, " fd=-1 ") == epoll {
			t.Fatalf("CLIENT LIST in %s mode: %q", t.Name(), list)
		}
		if got, _ := c.ConfigGet(ctx, "io").Result(); (got["io"] == "epoll") != epoll {
			t.Fatalf("CONFIG GET io = %v", got)
		}
		if got, _ := c.ConfigGet(ctx, "cluster-enabled").Result(); got["cluster-enabled"] != "no" {
			t.Fatalf("CONFIG GET cluster-enabled = %v on a standalone server", got)
		}
	})
}

// TestIOManyConnections: connections beyond what one loop iteration polls
// (128 events) are all served, and closing them leaves the server's count
// right.
func TestIOManyConnections(t *testing.T) {
	t.Parallel()
	ioModes(t, func(t *testing.T, s *server) {
		const n = 300
		conns := make([]*rawConn, n)
		for i := range conns {
			conns[i] = dial(t, s)
		}
		for i, rc := range conns {
			rc.send(fmt.Sprintf("ECHO c%d\r\n", i))
		}
		for i, rc := range conns {
			rc.expect("$" + strconv.Itoa(len(fmt.Sprintf("c%d", i))))
			rc.expect(fmt.Sprintf("c%d", i))
		}
		c := s.client(t, 2)
		if got := connectedClients(t, c); got != n+1 {
			t.Fatalf("connected_clients %d, want %d", got, n+1)
		}
		for _, rc := range conns {
			rc.nc.Close()
		}
		eventually(t, fmt.Sprintf("connected_clients to fall to 1 after closing %d", n), func() bool {
			return connectedClients(t, c) == 1
		})
	})
}

// dialSmallReceiveBuffer connects with a 4 KB receive buffer (which also
// turns off its autotuning), so that what a client leaves unread fills the
// server's send buffer.
func dialSmallReceiveBuffer(t *testing.T, s *server) *rawConn {
	t.Helper()
	d := net.Dialer{Control: func(network, address string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		})
		if err != nil {
			return err
		}
		return serr
	}}
	nc, err := d.Dial("tcp", s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawConn{t: t, nc: nc, rd: bufio.NewReader(nc)}
}

func connectedClients(t *testing.T, c *redis.Client) int {
	t.Helper()
	info, err := c.Info(ctx, "clients").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "connected_clients:"); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	t.Fatalf("no connected_clients in %q", info)
	return 0
}

// readReply reads one whole RESP2 reply and returns its bytes.
func readReply(t *testing.T, rd *bufio.Reader) string {
	t.Helper()
	var b strings.Builder
	if err := copyReply(&b, rd); err != nil {
		t.Fatalf("reading a reply: %v", err)
	}
	return b.String()
}

func copyReply(b *strings.Builder, rd *bufio.Reader) error {
	line, err := rd.ReadString('\n')
	if err != nil {
		return err
	}
	b.WriteString(line)
	if len(line) < 3 {
		return fmt.Errorf("short line %q", line)
	}
	switch line[0] {
	case '+', '-', ':':
		return nil
	case '$':
		n, err := strconv.Atoi(strings.TrimRight(line[1:], "\r\n"))
		if err != nil || n < 0 {
			return err
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(rd, buf); err != nil {
			return err
		}
		b.Write(buf)
		return nil
	case '*':
		n, err := strconv.Atoi(strings.TrimRight(line[1:], "\r\n"))
		if err != nil {
			return err
		}
		for i := 0; i < n; i++ {
			if err := copyReply(b, rd); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("unexpected reply line %q", line)
}

// TestIOLargeRequests: requests larger than many reads (a 900 KB argument,
// then 2,000 pipelined requests written byte by byte in odd-sized chunks)
// are reassembled exactly, whatever the read boundaries.
func TestIOLargeRequests(t *testing.T) {
	t.Parallel()
	ioModes(t, func(t *testing.T, s *server) {
		c := dial(t, s)
		big := strings.Repeat("0123456789abcdef", 900<<10/16)
		c.send(fmt.Sprintf("*2\r\n$4\r\nECHO\r\n$%d\r\n%s\r\nPING\r\n", len(big), big))
		c.nc.SetReadDeadline(time.Now().Add(30 * time.Second))
		if got := readReply(t, c.rd); got != fmt.Sprintf("$%d\r\n%s\r\n", len(big), big) {
			t.Fatalf("ECHO of %d bytes came back as %d bytes", len(big), len(got))
		}
		c.expect("+PONG")

		var req strings.Builder
		for i := 0; i < 2000; i++ {
			arg := strconv.Itoa(i)
			fmt.Fprintf(&req, "*2\r\n$4\r\nECHO\r\n$%d\r\n%s\r\n", len(arg), arg)
		}
		b := req.String()
		go func() {
			for chunk := 1; len(b) > 0; chunk = chunk%97 + 13 {
				n := min(chunk, len(b))
				if _, err := c.nc.Write([]byte(b[:n])); err != nil {
					return
				}
				b = b[n:]
			}
		}()
		for i := 0; i < 2000; i++ {
			arg := strconv.Itoa(i)
			if got := readReply(t, c.rd); got != fmt.Sprintf("$%d\r\n%s\r\n", len(arg), arg) {
				t.Fatalf("reply %d: %q", i, got)
			}
		}
	})
}
