package resp

import (
	"errors"
)

// maxPendingReplies is how many bytes of replies a batch may buffer before
// they are sent, the batch going on afterwards.
const maxPendingReplies = 64 << 10

// errWouldBlock is what an event loop's socket reader returns when the
// socket has nothing more to read now, or its reads for this event are
// spent.
var errWouldBlock = errors.New("resp: would block")

// replySender is how an I/O mode sends a connection's replies: a blocking
// write from the connection's goroutine, or an event loop's non-blocking
// one.
type replySender interface {
	// sendNow sends c's replies now; false means stop serving c for now
	// (it is closed, or its socket takes no more until the client reads).
	sendNow(c *Conn) bool
	// batchDone sends the replies of a batch after which the reader holds
	// no complete request; false means stop serving c until it has more
	// input.
	batchDone(c *Conn) bool
	// close closes c after a read error or the end of its input.
	close(c *Conn)
	// block sends c's replies, then has fn append a blocking command's
	// reply (Writer.Block); false means stop serving c for now (the
	// event loop serves it again once fn returned).
	block(c *Conn, fn func(gone <-chan struct{})) bool
}

// serve is the one serve loop of both I/O modes: it takes the requests c's
// reader parses (reading when none is buffered), shows each batch the
// reader queues to the session's Prefetch, has the session execute the
// requests and tells it when a batch ends, and has out send the replies:
// when the reader holds no further complete request (so a pipelined batch
// gets one write), when more than maxPendingReplies are buffered, on QUIT,
// and after a protocol error's reply, as Redis does.
func (c *Conn) serve(out replySender) {
	for {
		args, err := c.rd.Next()
		if err != nil {
			c.sess.EndBatch()
			var pe *ProtocolError
			switch {
			case err == errWouldBlock:
				out.batchDone(c)
			case errors.As(err, &pe):
				c.w.Err(ErrProtocol(pe))
				c.srv.rejected.Add(1)
				c.quit = true
				out.sendNow(c)
			default:
				out.close(c) // EOF or a read error
			}
			return
		}
		if queue, counts := c.rd.Batch(); len(counts) > 1 {
			c.sess.Prefetch(queue, counts) // one request runs at once: nothing to overlap
		}
		quit := c.sess.Exec(args, c.rd.Raw())
		c.rd.SetGuard(!c.sess.Authenticated())
		if fn := c.w.block; fn != nil {
			c.w.block = nil
			c.sess.EndBatch()
			if !out.block(c, fn) {
				return
			}
		}
		if quit {
			c.quit = true
			c.sess.EndBatch()
			out.sendNow(c)
			return
		}
		if len(c.w.Buf) > maxPendingReplies {
			c.sess.EndBatch()
			if !out.sendNow(c) {
				return
			}
		}
		if !c.rd.Ready() {
			c.active.Store(c.srv.tick.Load()) // once a batch: for the idle timeout
			c.refreshLimits()                 // CONFIG SET proto-max-bulk-len etc. reach open connections
			c.sess.EndBatch()
			if !out.batchDone(c) {
				return
			}
		}
	}
}

// goroutineSender sends replies with blocking writes, for a connection
// its own goroutine serves (see Server.serveConn).
type goroutineSender struct{}

func (goroutineSender) sendNow(c *Conn) bool   { return c.flush() }
func (goroutineSender) batchDone(c *Conn) bool { return c.flush() }
func (goroutineSender) close(*Conn)            {} // serveConn closes it

func (goroutineSender) block(c *Conn, fn func(gone <-chan struct{})) bool {
	if !c.flush() {
		return false
	}
	c.park(true)
	gone, stop := watchHangup(c.nc)
	fn(gone)
	stop()
	c.park(false)
	return true
}
