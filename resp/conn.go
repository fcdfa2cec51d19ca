package resp

import (
	"io"
	"net"
	"sync/atomic"
	"time"
)

// Conn is one client connection: its socket, its reader, its reply buffer,
// and the session that runs its commands. Only the goroutine or event loop
// serving it uses it.
type Conn struct {
	srv  *Server
	nc   net.Conn // nil when an event loop serves the connection
	rd   *Reader
	w    Writer
	sess Session
	info ConnInfo
	quit bool // close after sending the replies

	// Event loop mode (see loop_linux.go): the socket and its reader;
	// writing means replies wait for the socket to take them; queued,
	// that they wait for the end of the loop's pass (see flushLater).
	fd      int
	fdr     *fdReader
	loop    *eventLoop
	writing bool
	queued  bool

	active atomic.Int64  // the server's tick when a batch of requests last ended (idle.go)
	parked atomic.Bool   // a blocking command runs (Writer.Block): not idle, not served
	gone   chan struct{} // while parked on an event loop: closed when the client hangs up (its loop's alone)
}

// newConn returns the state of the accepted connection nc, whose requests
// are read from src (nc itself, or an event loop's reader of its socket fd;
// -1 in goroutine mode), served by event loop number loop (-1: none).
func (s *Server) newConn(nc net.Conn, src io.Reader, fd, loop int) *Conn {
	c := &Conn{
		srv: s,
		nc:  nc,
		rd:  NewReader(src, int(s.maxBulk.Load())),
		w:   Writer{Buf: make([]byte, 0, 4096), Proto: 2},
		fd:  -1,
		info: ConnInfo{
			ID:        s.nextID.Add(1),
			Addr:      nc.RemoteAddr().String(),
			LocalAddr: nc.LocalAddr().String(),
			FD:        fd,
			Loop:      loop,
			Created:   time.Now(),
		},
	}
	c.rd.EnableBatch()
	c.active.Store(s.tick.Load())
	c.sess = s.handler.NewSession(s, c.info, &c.w)
	c.refreshLimits()
	return c
}

// park marks c as running a blocking command (on) or done with it, and
// keeps the server's count of such connections.
func (c *Conn) park(on bool) {
	c.parked.Store(on)
	if on {
		c.srv.blocked.Add(1)
	} else {
		c.srv.blocked.Add(-1)
	}
}

// refreshLimits gives the reader the server's current request limits and
// the session's authentication state.
func (c *Conn) refreshLimits() {
	c.rd.SetLimits(int(c.srv.maxBulk.Load()), int(c.srv.maxQuery.Load()))
	c.rd.SetGuard(!c.sess.Authenticated())
}

// closeNow closes a connection no goroutine or loop serves yet.
func (c *Conn) closeNow() {
	if c.nc != nil {
		c.nc.Close()
	}
	if c.fd >= 0 {
		closeFD(c.fd)
		c.fd = -1
	}
}

// flush writes the buffered replies; false means the connection is gone.
func (c *Conn) flush() bool {
	if len(c.w.Buf) == 0 {
		return true
	}
	_, err := c.nc.Write(c.w.Buf)
	c.resetBuf()
	return err == nil
}

// resetBuf empties the reply buffer once it is sent.
func (c *Conn) resetBuf() {
	if cap(c.w.Buf) > 1<<20 {
		c.w.Buf = make([]byte, 0, 4096) // don't keep a huge buffer per idle client
	} else {
		c.w.Buf = c.w.Buf[:0]
	}
}
