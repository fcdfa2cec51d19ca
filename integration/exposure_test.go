package integration

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// rawReply writes req on nc and returns the first reply line, and with
// close, whether the server then closed the connection.
func rawReply(t *testing.T, nc net.Conn, req string, close bool) (line string, closed bool) {
	t.Helper()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := nc.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(nc)
	line, err := br.ReadString('\n')
	if err != nil {
		t.Fatalf("reading the reply to %q: %v", req, err)
	}
	if close {
		_, err = br.ReadByte()
		closed = errors.Is(err, io.EOF)
	}
	return strings.TrimRight(line, "\r\n"), closed
}

func bulkHeader(n int) string { return "$" + strconv.Itoa(n) + "\r\n" }

// TestUnauthenticatedLimits: before AUTH, a request of more than 10
// arguments or with an argument over 16 KB is answered Redis's protocol
// error and the connection closed; at the bounds it is only refused
// NOAUTH; after AUTH (even pipelined with it) and without a password
// there is no such bound.
func TestUnauthenticatedLimits(t *testing.T) {
	t.Parallel()
	s := startIn(t, "", "--requirepass", "s3cret")
	if got, closed := rawReply(t, dialRaw(t, s), "*11\r\n", true); got != "-ERR Protocol error: unauthenticated multibulk length" || !closed {
		t.Fatalf("*11 before AUTH = %q (closed %v)", got, closed)
	}
	if got, closed := rawReply(t, dialRaw(t, s), "*2\r\n$4\r\nECHO\r\n"+bulkHeader(16385), true); got != "-ERR Protocol error: unauthenticated bulk length" || !closed {
		t.Fatalf("a 16385-byte argument before AUTH = %q (closed %v)", got, closed)
	}
	atBound := "*10\r\n$6\r\nEXISTS\r\n" + bulkHeader(16384) + strings.Repeat("x", 16384) + "\r\n" + strings.Repeat("$1\r\nx\r\n", 8)
	nc := dialRaw(t, s)
	if got, _ := rawReply(t, nc, atBound, false); got != "-NOAUTH Authentication required." {
		t.Fatalf("10 arguments, one of 16 KB, before AUTH = %q", got)
	}
	big := "*2\r\n$4\r\nECHO\r\n" + bulkHeader(100000) + strings.Repeat("y", 100000) + "\r\n"
	nc.Write([]byte("*2\r\n$4\r\nAUTH\r\n$6\r\ns3cret\r\n" + big))
	br := bufio.NewReader(nc)
	ok, _ := br.ReadString('\n')
	echo, _ := br.ReadString('\n')
	if ok != "+OK\r\n" || echo != "$100000\r\n" {
		t.Fatalf("AUTH pipelined with a 100 KB ECHO = %q, %q", ok, echo)
	}
	open := startIn(t, "")
	eleven := "*11\r\n$4\r\nECHO\r\n" + strings.Repeat("$1\r\nx\r\n", 10)
	if got, _ := rawReply(t, dialRaw(t, open), eleven, false); got != "-ERR wrong number of arguments for 'echo' command" {
		t.Fatalf("*11 without a password = %q", got)
	}
}

// peakRSS returns the peak resident set size of process pid, in bytes.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmHWM")
	return 0
}

// TestPreAuthMemory: 100 clients at once each sending a 1 MB request
// before AUTH raise the server's peak RSS by little: the argument is
// refused at its header. The largest request allowed before AUTH (10
// arguments of 16 KB) is answered; one that would need more buffer than
// that (64 KB header lines are allowed) is closed.
func TestPreAuthMemory(t *testing.T) {
	t.Parallel()
	s := startIn(t, "", "--requirepass", "s3cret")
	c := redis.NewClient(&redis.Options{Addr: s.Addr, Password: "s3cret"})
	defer c.Close()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	before := peakRSS(t, s.cmd.Process.Pid)
	send := func(req, want string) {
		var wg sync.WaitGroup
		for range 100 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				nc, err := net.Dial("tcp", s.Addr)
				if err != nil {
					t.Error(err)
					return
				}
				defer nc.Close()
				nc.SetDeadline(time.Now().Add(30 * time.Second))
				nc.Write([]byte(req)) // the server may close early: the write may fail
				if line, _ := bufio.NewReader(nc).ReadString('\n'); line != want+"\r\n" {
					t.Errorf("got %q, want %q", line, want)
				}
			}()
		}
		wg.Wait()
	}
	send("*2\r\n$4\r\nECHO\r\n"+bulkHeader(1<<20)+strings.Repeat("z", 1<<20)+"\r\n", "-ERR Protocol error: unauthenticated bulk length")
	after := peakRSS(t, s.cmd.Process.Pid)
	t.Logf("peak RSS %d MB before, %d MB after 100 x 1 MB requests before AUTH", before>>20, after>>20)
	if grew := after - before; grew > 16<<20 {
		t.Fatalf("peak RSS grew by %d MB (from %d MB to %d MB), want at most 16 MB", grew>>20, before>>20, after>>20)
	}
	send("*10\r\n$6\r\nEXISTS\r\n"+strings.Repeat(bulkHeader(16384)+strings.Repeat("w", 16384)+"\r\n", 9), "-NOAUTH Authentication required.")
	// A header line may take 64 KB before its end shows: after nine 16 KB
	// arguments that would pass the bound, and the connection is closed.
	nc := dialRaw(t, s)
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	nc.Write([]byte("*10\r\n" + strings.Repeat(bulkHeader(16384)+strings.Repeat("w", 16384)+"\r\n", 9) + "$" + strings.Repeat("1", 30000)))
	if b, err := io.ReadAll(nc); len(b) != 0 || err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("a 177 KB unfinished request before AUTH: read %q, %v; want the connection closed without a reply", b, err)
	}
}

// TestQueryBufferLimit: a request needing more buffer than
// --client-query-buffer-limit closes the connection without a reply (as
// Redis); one within it is served; CONFIG GET and SET show and move it.
func TestQueryBufferLimit(t *testing.T) {
	t.Parallel()
	s := startIn(t, "", "--client-query-buffer-limit", "1mb", "--proto-max-bulk-len", "512kb")
	arg := bulkHeader(400000) + strings.Repeat("q", 400000) + "\r\n"
	nc := dialRaw(t, s)
	if got, _ := rawReply(t, nc, "*3\r\n$6\r\nEXISTS\r\n"+arg+arg, false); got != ":0" {
		t.Fatalf("an 800 KB request = %q, want :0", got)
	}
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	nc.Write([]byte("*4\r\n$6\r\nEXISTS\r\n" + arg + arg + arg))
	if b, err := io.ReadAll(nc); len(b) != 0 || err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("a 1.2 MB request: read %q, %v; want the connection closed without a reply", b, err)
	}
	c := s.client(t, 2)
	do(t, c, "CONFIG", "GET", "client-query-buffer-limit").equal([]any{"client-query-buffer-limit", "1048576"})
	do(t, c, "CONFIG", "SET", "client-query-buffer-limit", "2mb").equal("OK")
	do(t, c, "CONFIG", "SET", "client-query-buffer-limit", "1kb").errIs("ERR CONFIG SET failed (possibly related to argument 'client-query-buffer-limit') - argument must be between 1048576 and 1099511627776 inclusive")
	nc = dialRaw(t, s)
	if got, _ := rawReply(t, nc, "*4\r\n$6\r\nEXISTS\r\n"+arg+arg+arg, false); got != ":0" {
		t.Fatalf("a 1.2 MB request under a 2 MB limit = %q, want :0", got)
	}
}
