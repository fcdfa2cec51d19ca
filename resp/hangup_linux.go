//go:build linux

package resp

import (
	"crypto/tls"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// watchHangup watches the client of nc (served by its own goroutine,
// parked in a blocking command) for hanging up: gone is closed when it
// does; stop ends the watch once the command returned. The socket is
// polled for POLLRDHUP every 100 ms, so that a request sent before the
// hang-up does not hide it, and nothing is read.
func watchHangup(nc net.Conn) (gone <-chan struct{}, stop func()) {
	g, done := make(chan struct{}), make(chan struct{})
	if tc, ok := nc.(*tls.Conn); ok {
		nc = tc.NetConn()
	}
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return g, func() {}
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return g, func() {}
	}
	go func() {
		for {
			hup := false
			err := raw.Control(func(fd uintptr) {
				fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLRDHUP}}
				if n, _ := unix.Poll(fds, 100); n > 0 && fds[0].Revents&(unix.POLLRDHUP|unix.POLLHUP|unix.POLLERR) != 0 {
					hup = true
				}
			})
			if err != nil {
				return // closed
			}
			if hup {
				close(g)
				return
			}
			select {
			case <-done:
				return
			default:
			}
		}
	}()
	return g, func() { close(done) }
}
