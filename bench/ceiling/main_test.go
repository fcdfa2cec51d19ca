//go:build linux

package main

import (
	"bufio"
	"bytes"
	"net"
	"strconv"
	"strings"
	"testing"
)

func TestRequestSplitsAndKeepsShape(t *testing.T) {
	s := &server{}
	req := []byte("*5\r\n$11\r\nCL.THROTTLE\r\n$14\r\ngc:00000004217\r\n$7\r\n1000000\r\n$7\r\n1000000\r\n$1\r\n1\r\n")
	in := append(append([]byte{}, req...), "*1\r\n$4\r\nPING\r\n"...)
	sig, size, err := s.request(in)
	if err != nil || size != len(req) {
		t.Fatalf("request: size %d err %v, want %d", size, err, len(req))
	}
	if want := "CL.THROTTLE\x001000000\x001000000\x001\x00"; string(sig) != want {
		t.Fatalf("shape %q, want %q (the key, which has a ':', left out)", sig, want)
	}
	sig, size, err = s.request(in[len(req):])
	if err != nil || size != 14 || string(sig) != "PING\x00" {
		t.Fatalf("second request: %q %d %v", sig, size, err)
	}
	// Every proper prefix is a partial request: size 0, no error.
	for n := 1; n < len(req); n++ {
		if _, size, err := s.request(req[:n]); size != 0 || err != nil {
			t.Fatalf("prefix of %d bytes: size %d err %v", n, size, err)
		}
	}
	if _, _, err := s.request([]byte("PING\r\n")); err == nil {
		t.Fatal("an inline request was accepted")
	}
}

func TestCopyReply(t *testing.T) {
	const replies = "*5\r\n:0\r\n:1000001\r\n:1000000\r\n:-1\r\n:0\r\n" +
		"*2\r\n$3\r\nabc\r\n*1\r\n+OK\r\n" +
		"$-1\r\n" +
		"-ERR no\r\n"
	r := bufio.NewReader(strings.NewReader(replies))
	var got []string
	for range 4 {
		var b bytes.Buffer
		if err := copyReply(&b, r); err != nil {
			t.Fatal(err)
		}
		got = append(got, b.String())
	}
	if strings.Join(got, "") != replies || got[2] != "$-1\r\n" || got[3] != "-ERR no\r\n" {
		t.Fatalf("replies split as %q", got)
	}
}

// TestServeCopiesUpstreamOnce drives the server over loopback: each shape
// is asked upstream once, and every request gets the reply.
func TestServeCopiesUpstreamOnce(t *testing.T) {
	up, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	asked := make(chan string, 10)
	go func() {
		c, err := up.Accept()
		if err != nil {
			return
		}
		r := bufio.NewReader(c)
		for {
			line, err := r.ReadString('\n') // *N
			if err != nil {
				return
			}
			var parts []string
			for range int(line[1] - '0') {
				r.ReadString('\n') // $len
				arg, _ := r.ReadString('\n')
				parts = append(parts, strings.TrimSpace(arg))
			}
			asked <- strings.Join(parts, " ")
			c.Write([]byte(":" + parts[len(parts)-1] + "\r\n"))
		}
	}()
	upc, err := net.Dial("tcp", up.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s := &server{replies: map[string][]byte{}, up: upc, upr: bufio.NewReader(upc), conns: map[int32]*conn{}}
	if err := s.listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	go s.run()
	c, err := net.Dial("tcp", s.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cmd := func(args ...string) string {
		var b strings.Builder
		b.WriteString("*" + strconv.Itoa(len(args)) + "\r\n")
		for _, a := range args {
			b.WriteString("$" + strconv.Itoa(len(a)) + "\r\n" + a + "\r\n")
		}
		return b.String()
	}
	// Sent in one write, split mid-request in a second.
	batch := cmd("INCRBY", "k:1", "7") + cmd("INCRBY", "k:2", "7") + cmd("INCRBY", "k:3", "8")
	c.Write([]byte(batch[:len(batch)-5]))
	c.Write([]byte(batch[len(batch)-5:]))
	r := bufio.NewReader(c)
	for _, want := range []string{":7\r\n", ":7\r\n", ":8\r\n"} {
		got, err := r.ReadString('\n')
		if err != nil || got != want {
			t.Fatalf("reply %q %v, want %q", got, err, want)
		}
	}
	for _, want := range []string{"INCRBY k:1 7", "INCRBY k:3 8"} {
		if got := <-asked; got != want {
			t.Fatalf("upstream was asked %q, want %q", got, want)
		}
	}
	select {
	case extra := <-asked:
		t.Fatalf("upstream asked again: %q", extra)
	default:
	}
}
