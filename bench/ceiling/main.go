//go:build linux

// Command ceiling is a do-nothing server for measuring what the load
// generator and the loopback path allow: it answers every request with the
// reply rlserver gave to the first request of the same shape, without doing
// the command. Driven by the same redis-benchmark command line as rlserver,
// its rate is the ceiling for that row on this machine: no server that does
// the work can answer faster than one that only copies bytes. bench/compare.sh
// runs it beside rlserver (workloads with CEIL=1); BENCHMARKS.md reports
// rlserver / ceiling.
//
// It is as lean as a server can be: one thread, one epoll loop, one read per
// ready connection, a RESP splitter that only finds request boundaries, and
// one write of the batch's replies. The first request of each shape (its
// arguments, with every argument containing ':' treated as a key and left
// out) is forwarded to -upstream once; the reply is kept and returned to
// every later request of that shape.
//
// Usage: go run ./bench/ceiling -addr 127.0.0.1:7000 -upstream 127.0.0.1:6380
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"runtime"
	"strconv"
	"syscall"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "address to listen on")
	upstream := flag.String("upstream", "", "server whose replies are copied (host:port)")
	flag.Parse()
	if *upstream == "" {
		fmt.Fprintln(os.Stderr, "ceiling: -upstream is required")
		os.Exit(2)
	}
	runtime.GOMAXPROCS(1)
	runtime.LockOSThread()
	up, err := net.Dial("tcp", *upstream)
	if err != nil {
		log.Fatalf("ceiling: %v", err)
	}
	s := &server{replies: map[string][]byte{}, up: up, upr: bufio.NewReader(up), conns: map[int32]*conn{}}
	if err := s.listen(*addr); err != nil {
		log.Fatalf("ceiling: %v", err)
	}
	log.Fatal(s.run())
}

type conn struct {
	fd  int
	in  []byte // unparsed bytes of a partial request
	out []byte // replies not yet written

	writing bool // watching EPOLLOUT: out did not fit in the socket
}

type server struct {
	lfd, epfd int
	conns     map[int32]*conn
	replies   map[string][]byte // request shape -> reply
	sig       []byte
	up        net.Conn
	upr       *bufio.Reader
	buf       [64 << 10]byte
}

func (s *server) listen(addr string) error {
	ta, err := net.ResolveTCPAddr("tcp4", addr)
	if err != nil {
		return err
	}
	s.lfd, err = syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	syscall.SetsockoptInt(s.lfd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1)
	sa := &syscall.SockaddrInet4{Port: ta.Port}
	copy(sa.Addr[:], ta.IP.To4())
	if err := syscall.Bind(s.lfd, sa); err != nil {
		return err
	}
	if err := syscall.Listen(s.lfd, 511); err != nil {
		return err
	}
	if s.epfd, err = syscall.EpollCreate1(syscall.EPOLL_CLOEXEC); err != nil {
		return err
	}
	return syscall.EpollCtl(s.epfd, syscall.EPOLL_CTL_ADD, s.lfd, &syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(s.lfd)})
}

// addr returns the address the server listens on.
func (s *server) addr() string {
	sa, err := syscall.Getsockname(s.lfd)
	if err != nil {
		return ""
	}
	a := sa.(*syscall.SockaddrInet4)
	return (&net.TCPAddr{IP: a.Addr[:], Port: a.Port}).String()
}

func (s *server) run() error {
	evs := make([]syscall.EpollEvent, 128)
	for {
		n, err := wait(s.epfd, evs)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		for _, ev := range evs[:n] {
			if int(ev.Fd) == s.lfd {
				s.accept()
				continue
			}
			c := s.conns[ev.Fd]
			if c == nil {
				continue
			}
			if c.writing {
				s.write(c)
			} else {
				s.serve(c)
			}
		}
	}
}

// wait polls without blocking a few times before it blocks, as rlserver's
// event loop does.
func wait(epfd int, evs []syscall.EpollEvent) (int, error) {
	for range 20 {
		if n, err := syscall.EpollWait(epfd, evs, 0); n != 0 || err != nil {
			return n, err
		}
	}
	return syscall.EpollWait(epfd, evs, -1)
}

func (s *server) accept() {
	for {
		fd, _, err := syscall.Accept4(s.lfd, syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC)
		if err != nil {
			return
		}
		syscall.SetsockoptInt(fd, syscall.IPPROTO_TCP, syscall.TCP_NODELAY, 1)
		s.conns[int32(fd)] = &conn{fd: fd}
		syscall.EpollCtl(s.epfd, syscall.EPOLL_CTL_ADD, fd, &syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(fd)})
	}
}

func (s *server) close(c *conn) {
	syscall.EpollCtl(s.epfd, syscall.EPOLL_CTL_DEL, c.fd, nil)
	syscall.Close(c.fd)
	delete(s.conns, int32(c.fd))
}

// serve reads once and answers every complete request.
func (s *server) serve(c *conn) {
	n, err := syscall.Read(c.fd, s.buf[:])
	if err == syscall.EAGAIN {
		return
	}
	if n <= 0 {
		s.close(c)
		return
	}
	data := s.buf[:n]
	if len(c.in) > 0 {
		c.in = append(c.in, data...)
		data = c.in
	}
	for len(data) > 0 {
		req, size, err := s.request(data)
		if err != nil {
			s.close(c)
			return
		}
		if size == 0 {
			break // partial
		}
		c.out = append(c.out, s.reply(req, data[:size])...)
		data = data[size:]
	}
	c.in = append(c.in[:0], data...)
	s.write(c)
}

func (s *server) write(c *conn) {
	n, err := syscall.Write(c.fd, c.out)
	if err != nil && err != syscall.EAGAIN {
		s.close(c)
		return
	}
	if n > 0 {
		c.out = c.out[:copy(c.out, c.out[n:])]
	}
	// Watch for room to write only while replies are pending (and stop
	// reading meanwhile); the common case costs no epoll_ctl.
	if pending := len(c.out) > 0; pending != c.writing {
		c.writing = pending
		ev := uint32(syscall.EPOLLIN)
		if pending {
			ev = syscall.EPOLLOUT
		}
		syscall.EpollCtl(s.epfd, syscall.EPOLL_CTL_MOD, c.fd, &syscall.EpollEvent{Events: ev, Fd: int32(c.fd)})
	}
}

// request finds the first complete request in b and returns its shape
// (the arguments that are not keys, joined by NUL) and its size; size 0
// means b holds only part of it.
func (s *server) request(b []byte) (sig []byte, size int, err error) {
	if b[0] != '*' {
		return nil, 0, errors.New("only multibulk requests")
	}
	n, i, ok := header(b, 1)
	if !ok {
		return nil, 0, nil
	}
	s.sig = s.sig[:0]
	for range n {
		if i >= len(b) {
			return nil, 0, nil
		}
		if b[i] != '$' {
			return nil, 0, errors.New("expected a bulk string")
		}
		l, j, ok := header(b, i+1)
		if !ok || j+l+2 > len(b) {
			return nil, 0, nil
		}
		if arg := b[j : j+l]; bytes.IndexByte(arg, ':') < 0 {
			s.sig = append(append(s.sig, arg...), 0)
		}
		i = j + l + 2
	}
	return s.sig, i, nil
}

// header parses the decimal number that starts at b[i] and ends in CRLF.
func header(b []byte, i int) (n, next int, ok bool) {
	for ; i < len(b) && b[i] != '\r'; i++ {
		n = n*10 + int(b[i]-'0')
	}
	if i+1 >= len(b) {
		return 0, 0, false
	}
	return n, i + 2, true
}

// reply returns the reply kept for the request's shape, asking upstream the
// first time.
func (s *server) reply(sig, req []byte) []byte {
	if r, ok := s.replies[string(sig)]; ok {
		return r
	}
	if _, err := s.up.Write(req); err != nil {
		log.Fatalf("ceiling: upstream: %v", err)
	}
	var r bytes.Buffer
	if err := copyReply(&r, s.upr); err != nil {
		log.Fatalf("ceiling: upstream: %v", err)
	}
	s.replies[string(sig)] = r.Bytes()
	return r.Bytes()
}

// copyReply copies one complete RESP2 reply from r to w.
func copyReply(w *bytes.Buffer, r *bufio.Reader) error {
	line, err := r.ReadBytes('\n')
	if err != nil {
		return err
	}
	w.Write(line)
	switch line[0] {
	case '+', '-', ':':
		return nil
	case '$':
		n, err := strconv.Atoi(string(bytes.TrimSpace(line[1:])))
		if err != nil || n < 0 {
			return err
		}
		body := make([]byte, n+2)
		if _, err := io.ReadFull(r, body); err != nil {
			return err
		}
		w.Write(body)
		return nil
	case '*':
		n, err := strconv.Atoi(string(bytes.TrimSpace(line[1:])))
		if err != nil {
			return err
		}
		for range n {
			if err := copyReply(w, r); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("unexpected reply %q", line)
}
