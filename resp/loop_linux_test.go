//go:build linux

package resp_test

import (
	"bufio"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/rlserver/rlserver/resp"
)

// TestEventLoopsServeAndClose drives a server with two event loops in
// process (so that the race detector sees the loops themselves): 40
// connections spread over both loops each run a pipelined batch and get
// exact replies; Close then closes every one of them (the clients see EOF)
// and leaves the server counting none.
func TestEventLoopsServeAndClose(t *testing.T) {
	s := newServer(resp.Config{EventLoops: 2})
	if err := s.Listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve() }()

	const n = 40
	conns := make([]net.Conn, n)
	readers := make([]*bufio.Reader, n)
	for i := range conns {
		nc, err := net.Dial("tcp", s.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		conns[i], readers[i] = nc, bufio.NewReader(nc)
		if _, err := nc.Write([]byte(strings.Repeat("CL.THROTTLE k 9 1 60\r\n", 12) + "PING\r\n")); err != nil {
			t.Fatal(err)
		}
	}
	denied := 0
	for i, rd := range readers {
		conns[i].SetReadDeadline(time.Now().Add(10 * time.Second))
		for j := 0; j < 12; j++ {
			var lines [6]string
			for k := range lines {
				line, err := rd.ReadString('\n')
				if err != nil {
					t.Fatalf("conn %d reply %d: %v", i, j, err)
				}
				lines[k] = strings.TrimRight(line, "\r\n")
			}
			if lines[0] != "*5" || lines[2] != ":10" {
				t.Fatalf("conn %d reply %d: %q", i, j, lines)
			}
			if lines[1] == ":1" {
				denied++
			}
		}
		if line, _ := rd.ReadString('\n'); line != "+PONG\r\n" {
			t.Fatalf("conn %d: %q after the batch, want +PONG", i, line)
		}
	}
	// Limit 10 per 60 s: of 480 calls within one minute, 470 are denied
	// (the test would need a minute to pass for another to be admitted).
	if denied != n*12-10 {
		t.Fatalf("%d of %d calls denied, want %d", denied, n*12, n*12-10)
	}
	if got := s.NumConns(); got != n {
		t.Fatalf("server counts %d connections, want %d", got, n)
	}

	s.Close(10 * time.Second)
	if got := s.NumConns(); got != 0 {
		t.Fatalf("after Close the server counts %d connections, want 0", got)
	}
	for i, rd := range readers {
		conns[i].SetReadDeadline(time.Now().Add(10 * time.Second))
		if line, err := rd.ReadString('\n'); err != io.EOF {
			t.Fatalf("conn %d after Close: %q, %v; want EOF", i, line, err)
		}
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve returned %v after Close, want nil", err)
	}
}
