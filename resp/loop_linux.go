//go:build linux

package resp

import (
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The event loops serve connections the way Redis's ae loop does: one
// goroutine per loop asks epoll which of its connections are readable, does
// one read on each, runs every complete request it received and writes the
// replies. A goroutine per connection (the other I/O mode) costs a wake-up
// through the Go scheduler for every batch; at pipeline 1 that wake-up, and
// the order in which 50 goroutines that are ready together get to run, put
// rlserver's p99 latency well above Redis's (bench/compare.sh). A loop handles the ready
// connections in the order epoll reports them.
//
// A loop waits in epoll_wait itself, a blocking system call, like Redis
// (after a few non-blocking polls: see spinPolls). The Go runtime hands the
// loop's P to its other goroutines (the acceptor, the sweeper, persistence)
// while the call blocks. Parking the loop in the
// runtime's poller instead (which can watch an epoll descriptor) cost an
// extra epoll_wait and a scheduler round trip at every idle moment: same
// throughput, but a longer p99 (bench/compare.sh: PING and CL.THROTTLE at
// P16 and P1, alternating runs).

// fdReader reads a non-blocking socket for a Reader, at most budget times.
type fdReader struct {
	fd     int
	budget int
}

func (r *fdReader) Read(p []byte) (int, error) {
	if r.budget <= 0 {
		return 0, errWouldBlock
	}
	r.budget--
	for {
		n, err := syscall.Read(r.fd, p)
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			return 0, errWouldBlock
		case err != nil:
			return 0, err
		case n == 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

type eventLoop struct {
	srv     *Server
	index   int // its place in Server.loops (ConnInfo.Loop)
	epfd    int
	wakeR   int             // a pipe whose read end is in the epoll set:
	wakeW   int             // writing to it wakes the loop
	conns   map[int32]*Conn // by fd; the loop's goroutine only
	evs     []syscall.EpollEvent
	passes  uint
	yielded time.Time // when yield last gave up the P while a flush ran
	dirty   []*Conn   // replies to send at the end of the pass (flushLater)
	lend    lending

	mu      sync.Mutex
	pending []*Conn // handed over by the acceptor, not yet in conns
	resumed []*Conn // whose blocking command returned (see block)
	killed  []*Conn // to close (Conn.kill), from other goroutines
	closed  bool    // release has run: add closes what it is handed
	npend   atomic.Int32
	stop    atomic.Bool
	done    chan struct{}
}

// startLoops starts n event loops; Serve then hands them its connections.
func (s *Server) startLoops(n int) error {
	for i := 0; i < n; i++ {
		l, err := newEventLoop(s)
		if err != nil {
			return err
		}
		l.index = i
		s.loops = append(s.loops, l)
		go l.run()
	}
	return nil
}

func newEventLoop(s *Server) (*eventLoop, error) {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_NONBLOCK|syscall.O_CLOEXEC); err != nil {
		syscall.Close(epfd)
		return nil, os.NewSyscallError("pipe2", err)
	}
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(p[0])}
	if err := syscall.EpollCtl(epfd, syscall.EPOLL_CTL_ADD, p[0], &ev); err != nil {
		syscall.Close(epfd)
		syscall.Close(p[0])
		syscall.Close(p[1])
		return nil, os.NewSyscallError("epoll_ctl", err)
	}
	return &eventLoop{
		srv: s, epfd: epfd, wakeR: p[0], wakeW: p[1],
		conns: make(map[int32]*Conn),
		evs:   make([]syscall.EpollEvent, 128),
		done:  make(chan struct{}),
	}, nil
}

// adopt takes over the accepted connection nc for loop l: the socket is
// duplicated and nc closed, so the runtime's poller forgets it and only l's
// epoll set watches it.
func (l *eventLoop) adopt(nc net.Conn) (*Conn, error) {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nil, errors.New("resp: connection has no file descriptor")
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil, err
	}
	fd := -1
	var dupErr error
	if err := rc.Control(func(f uintptr) {
		fd, dupErr = syscall.Dup(int(f))
	}); err != nil {
		return nil, err
	}
	if dupErr != nil {
		return nil, os.NewSyscallError("dup", dupErr)
	}
	syscall.CloseOnExec(fd)
	if err := syscall.SetNonblock(fd, true); err != nil {
		syscall.Close(fd)
		return nil, os.NewSyscallError("setnonblock", err)
	}
	fdr := &fdReader{fd: fd}
	c := l.srv.newConn(nc, fdr, fd, l.index) // reads nc's addresses: before closing it
	nc.Close()
	c.nc, c.fd, c.fdr, c.loop = nil, fd, fdr, l
	return c, nil
}

// add hands c (adopted, and counted in the server's connections) to the
// loop.
func (l *eventLoop) add(c *Conn) {
	l.mu.Lock()
	if l.closed { // accepted as the server was closing
		l.mu.Unlock()
		c.closeNow()
		l.srv.forget(c)
		return
	}
	l.pending = append(l.pending, c)
	l.npend.Add(1)
	l.mu.Unlock()
	l.wake()
}

func closeFD(fd int) { syscall.Close(fd) }

func (l *eventLoop) wake() {
	syscall.Write(l.wakeW, []byte{0}) // EAGAIN: a wake-up is pending anyway
}

// shutdown asks the loop to close its connections and exit, and waits.
func (l *eventLoop) shutdown() {
	l.stop.Store(true)
	l.wake()
	<-l.done
}

func (l *eventLoop) run() {
	defer close(l.done)
	defer l.release()
	for !l.stop.Load() {
		n, err := l.wait()
		if err == syscall.EINTR {
			continue // the runtime's preemption signal (SIGURG), or a profiler's
		}
		if err != nil {
			l.srv.logf("event loop: epoll_wait: %v", err)
			return
		}
		for _, ev := range l.evs[:n] {
			l.handle(ev)
		}
		l.flush()
		if l.npend.Load() > 0 {
			l.takePending()
		}
		l.yield()
	}
}

// handle serves the connection an event of the loop's epoll set is for.
func (l *eventLoop) handle(ev syscall.EpollEvent) {
	if ev.Fd == int32(l.wakeR) {
		var b [64]byte
		for {
			if m, _ := syscall.Read(l.wakeR, b[:]); m < len(b) {
				break
			}
		}
		return
	}
	c := l.conns[ev.Fd]
	if c == nil {
		l.takePending()
		if c = l.conns[ev.Fd]; c == nil {
			return // closed earlier in this batch
		}
	}
	if c == l.lend.skip {
		return // the lent loop's own goroutine is serving it
	}
	if c.parked.Load() {
		// Its blocking command runs (see block); the client hung up.
		if c.gone != nil && ev.Events&(syscall.EPOLLRDHUP|syscall.EPOLLHUP|syscall.EPOLLERR) != 0 {
			close(c.gone)
			c.gone = nil
		}
		return
	}
	switch {
	case c.writing && ev.Events&(syscall.EPOLLOUT|syscall.EPOLLERR|syscall.EPOLLHUP) != 0:
		l.drain(c)
	case !c.writing:
		l.serve(c, 1)
	}
}

// yield gives up the loop's P now and then: a busy loop never blocks, so
// it never gives it up otherwise, and other goroutines (the sweeper,
// another loop moved off its thread) would wait for the runtime's 10 ms
// preemption. Every 32 passes does for them. While a flush of persistence
// runs (Config.Background) the loop yields at the interval that returns
// instead: with --threads 1 the flush runs in the turns it gives, a piece
// of well under a millisecond at a time, and that share of the CPU keeps
// it up with the changes (at every 32 passes, a loop creating keys as fast
// as it could left flushes ever further behind). Looking at the clock
// every pass, and yielding that often, costs CPU per request in memory
// (bench/ab.sh, with and without PERSIST=1), so only then.
func (l *eventLoop) yield() {
	if l.passes++; l.passes%32 == 0 {
		runtime.Gosched()
		return
	}
	if bg := l.srv.cfg.Background; bg != nil {
		if every := bg(); every > 0 {
			if now := time.Now(); now.Sub(l.yielded) > every {
				runtime.Gosched()
				l.yielded = now
			}
		}
	}
}

// spinPolls is how many times a loop that finds nothing ready asks again,
// without blocking, before it blocks in epoll_wait. Under load the next
// request is usually microseconds away; blocking for it costs a wake-up, and
// the runtime, finding the loop's P in a system call, wakes another thread
// to poll the network in its place. A few polls paid for themselves at P16
// on random keys and at P1 (bench/compare.sh, alternating runs against
// none).
const spinPolls = 20

// wait returns the ready events: at once if any are ready within
// spinPolls non-blocking polls, else when epoll_wait wakes.
func (l *eventLoop) wait() (int, error) {
	for range spinPolls {
		if n, err := syscall.EpollWait(l.epfd, l.evs, 0); n != 0 || err != nil {
			return n, err
		}
	}
	return syscall.EpollWait(l.epfd, l.evs, -1)
}

// kill has the loop close c (from another goroutine).
func (l *eventLoop) kill(c *Conn) {
	l.mu.Lock()
	l.killed = append(l.killed, c)
	l.npend.Add(1)
	l.mu.Unlock()
	l.wake()
}

// takePending registers the connections the acceptor handed over, and
// closes those kill was given. A connection's bytes may already be
// waiting: level-triggered epoll reports them on the next poll.
func (l *eventLoop) takePending() {
	l.mu.Lock()
	pend, killed, resumed := l.pending, l.killed, l.resumed
	l.pending, l.killed, l.resumed = nil, nil, nil
	l.npend.Store(0)
	l.mu.Unlock()
	defer func() {
		for _, c := range killed {
			if c == l.lend.skip { // its command runs on the loop's goroutine: closed after
				l.kill(c)
				continue
			}
			if c.fd >= 0 && l.conns[int32(c.fd)] == c { // not closed meanwhile
				l.close(c)
			}
		}
	}()
	for _, c := range resumed {
		c.park(false)
		c.gone = nil
		if c.fd < 0 {
			continue // closed meanwhile
		}
		events := uint32(syscall.EPOLLIN)
		if c.writing {
			events = syscall.EPOLLOUT
		}
		ev := syscall.EpollEvent{Events: events, Fd: int32(c.fd)}
		if err := syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_MOD, c.fd, &ev); err != nil {
			l.srv.logf("event loop: epoll_ctl mod: %v", err)
			l.close(c)
			continue
		}
		c.active.Store(l.srv.tick.Load())
		if !c.writing {
			l.serve(c, 1) // its blocking command's reply, and what came meanwhile
		}
	}
	if len(resumed) > 0 {
		l.flush()
	}
	for _, c := range pend {
		ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(c.fd)}
		if err := syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_ADD, c.fd, &ev); err != nil {
			l.srv.logf("event loop: epoll_ctl add: %v", err)
			l.close(c)
			continue
		}
		l.conns[int32(c.fd)] = c
	}
}

// serve reads from c at most reads times and runs every complete request
// received (see Conn.serve).
func (l *eventLoop) serve(c *Conn, reads int) {
	c.fdr.budget = reads
	if l.lend.skip != nil { // a stand-in serves: its loop's goroutine holds the lending state
		c.serve(l)
		return
	}
	l.lend.conn = c
	l.lend.state.Store(serving)
	c.serve((*servingLoop)(l))
}

// sendNow, batchDone and close make the loop the replySender of its
// connections: a batch's replies wait for the end of the pass
// (flushLater), and a connection whose socket is full is not served until
// it drains.
func (l *eventLoop) sendNow(c *Conn) bool { return l.send(c) && !c.writing }

// block parks c while fn runs on a goroutine; c comes back through
// takePending. Meanwhile its socket is watched only for the client hanging
// up, once: then gone is closed (see run), so that fn returns.
func (l *eventLoop) block(c *Conn, fn func(gone <-chan struct{})) bool {
	if !l.send(c) {
		return false
	}
	gone := make(chan struct{})
	c.gone = gone
	ev := syscall.EpollEvent{Events: syscall.EPOLLRDHUP | syscall.EPOLLONESHOT, Fd: int32(c.fd)}
	if err := syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_MOD, c.fd, &ev); err != nil {
		l.srv.logf("event loop: epoll_ctl mod: %v", err)
	}
	c.park(true)
	go func() {
		fn(gone)
		l.mu.Lock()
		l.resumed = append(l.resumed, c)
		l.npend.Add(1)
		l.mu.Unlock()
		l.wake()
	}()
	return false
}

func (l *eventLoop) batchDone(c *Conn) bool {
	l.flushLater(c)
	return false
}

// flushLater queues c's replies for the end of the loop's pass, when flush
// writes the replies of every connection the pass served, one after the
// other, as Redis does (beforeSleep): the client then finds several replies
// ready at once, instead of being woken for each.
func (l *eventLoop) flushLater(c *Conn) {
	if !c.queued && len(c.w.Buf) > 0 {
		c.queued = true
		l.dirty = append(l.dirty, c)
	}
}

// flush sends the replies flushLater queued.
func (l *eventLoop) flush() {
	kept := 0
	for i, c := range l.dirty {
		l.dirty[i] = nil
		if c == l.lend.skip {
			l.dirty[kept] = c // the loop's goroutine sends it once the stand-in is done
			kept++
			continue
		}
		c.queued = false
		if c.fd >= 0 && !c.writing && !c.parked.Load() {
			l.send(c)
		}
	}
	l.dirty = l.dirty[:kept]
}

// send writes c's buffered replies without blocking. What the socket does
// not take waits in c.w.Buf while epoll watches for writability instead of
// input, so a client that does not read its replies stops being served, as
// in Redis. send reports false when it closed the connection.
func (l *eventLoop) send(c *Conn) bool {
	out := c.w.Buf
	for len(out) > 0 {
		n, err := syscall.Write(c.fd, out)
		if err == syscall.EINTR {
			continue
		}
		if err == syscall.EAGAIN {
			break
		}
		if err != nil {
			l.close(c)
			return false
		}
		out = out[n:]
	}
	if len(out) > 0 {
		c.w.Buf = c.w.Buf[:copy(c.w.Buf, out)]
		if !c.writing {
			c.writing = true
			l.watch(c, syscall.EPOLLOUT)
		}
		return true
	}
	c.resetBuf()
	if c.writing {
		c.writing = false
		l.watch(c, syscall.EPOLLIN)
	}
	if c.quit {
		l.close(c)
		return false
	}
	return true
}

// drain continues sending c's replies once the socket takes more, then runs
// the requests that arrived meanwhile.
func (l *eventLoop) drain(c *Conn) {
	if !l.send(c) || c.writing {
		return
	}
	l.serve(c, 1)
}

func (l *eventLoop) watch(c *Conn, events uint32) {
	ev := syscall.EpollEvent{Events: events, Fd: int32(c.fd)}
	syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_MOD, c.fd, &ev)
}

// close closes c and forgets it, as serveConn's end does in goroutine mode.
func (l *eventLoop) close(c *Conn) {
	if c.fd < 0 {
		return
	}
	syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_DEL, c.fd, nil)
	delete(l.conns, int32(c.fd))
	syscall.Close(c.fd)
	c.fd = -1
	l.srv.forget(c)
}

// release closes every connection (a last attempt to send what each has
// buffered) and the loop's own descriptors.
func (l *eventLoop) release() {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.takePending()
	for _, c := range l.conns {
		c.quit = true
		if len(c.w.Buf) > 0 && !c.parked.Load() {
			l.send(c)
		}
		l.close(c)
	}
	syscall.Close(l.epfd)
	syscall.Close(l.wakeR)
	syscall.Close(l.wakeW)
}
