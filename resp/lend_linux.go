//go:build linux

package resp

import (
	"sync"
	"sync/atomic"
	"syscall"
)

// A loop whose goroutine is held inside one connection's command (a
// script past busy-reply-threshold, or a command waiting for the keys such
// a script holds) can be lent: a stand-in goroutine serves its other
// connections meanwhile, as Redis's processEventsWhileBlocked does, so
// they are answered -BUSY and can send SCRIPT KILL or SHUTDOWN NOSAVE. The
// loop's goroutine takes the loop back before it next touches it.
//
// The loop publishes, without a lock, when it is inside a connection's
// commands (state serving); Server.LendLoops moves such a loop to lent
// and starts the stand-in, and the loop's goroutine, leaving the
// commands, either finds it still serving (one compare-and-swap) or waits
// for the stand-in to stop.
type lending struct {
	state atomic.Int32 // loopOwn, serving or lent
	conn  *Conn        // while serving: the connection whose commands run (the loop's goroutine's)

	mu   sync.Mutex    // the move to lent and the stand-in's channels
	stop chan struct{} // closed by the loop's goroutine: the stand-in is to stop
	done chan struct{} // closed by the stand-in once it stopped

	skip *Conn // the stand-in's: the connection it leaves alone (nil: no stand-in runs)
}

const (
	loopOwn int32 = iota // the loop's goroutine runs its own code
	serving              // it runs lend.conn's commands: the loop may be lent
	lent                 // a stand-in serves the loop's other connections
)

// servingLoop is the replySender of a connection whose commands the
// loop's goroutine runs: each method is the loop's own code, so it takes
// the loop back first.
type servingLoop eventLoop

func (s *servingLoop) sendNow(c *Conn) bool {
	l := s.take()
	return l.goOn(l.sendNow(c))
}

func (s *servingLoop) batchDone(c *Conn) bool {
	l := s.take()
	return l.goOn(l.batchDone(c))
}

func (s *servingLoop) close(c *Conn) { s.take().close(c) }

func (s *servingLoop) block(c *Conn, fn func(gone <-chan struct{})) bool {
	l := s.take()
	return l.goOn(l.block(c, fn))
}

// take takes the loop back (own) and returns it.
func (s *servingLoop) take() *eventLoop {
	l := (*eventLoop)(s)
	l.own()
	return l
}

// goOn marks the loop lendable again when serving the connection goes on
// (more), and returns more.
func (l *eventLoop) goOn(more bool) bool {
	if more {
		l.lend.state.Store(serving)
	}
	return more
}

// own takes the loop back for its goroutine: at once if it was not lent,
// else once the stand-in has stopped.
func (l *eventLoop) own() {
	if l.lend.state.CompareAndSwap(serving, loopOwn) || l.lend.state.Load() != lent {
		return
	}
	l.lend.mu.Lock()
	stop, done := l.lend.stop, l.lend.done
	l.lend.mu.Unlock()
	close(stop)
	l.wake()
	<-done
	l.lend.state.Store(loopOwn)
}

// lendOut lends the loop if its goroutine is inside a connection's
// commands; any goroutine may call it.
func (l *eventLoop) lendOut() {
	l.lend.mu.Lock()
	defer l.lend.mu.Unlock()
	if !l.lend.state.CompareAndSwap(serving, lent) {
		return
	}
	l.lend.stop, l.lend.done = make(chan struct{}), make(chan struct{})
	go l.standIn(l.lend.conn, l.lend.stop, l.lend.done)
}

// standIn serves the loop's connections but busy until stop is closed.
func (l *eventLoop) standIn(busy *Conn, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	l.lend.skip = busy
	// Level-triggered, busy's waiting input would wake the stand-in again
	// and again: its socket leaves the set meanwhile.
	syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_DEL, busy.fd, nil)
	evs := make([]syscall.EpollEvent, 64)
	for {
		l.flush() // replies the loop's pass had queued, before the first wait
		if l.npend.Load() > 0 {
			l.takePending()
		}
		select {
		case <-stop:
			ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(busy.fd)}
			if err := syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_ADD, busy.fd, &ev); err != nil {
				l.srv.logf("event loop: epoll_ctl add: %v", err)
			}
			l.lend.skip = nil
			return
		default:
		}
		n, err := syscall.EpollWait(l.epfd, evs, -1) // the loop's wake-up ends it
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			l.srv.logf("event loop stand-in: epoll_wait: %v", err)
			<-stop
			continue
		}
		for _, ev := range evs[:n] {
			l.handle(ev)
		}
	}
}
