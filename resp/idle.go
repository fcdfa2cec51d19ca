package resp

import "time"

// Idle connections (Config.IdleTimeout, Redis's timeout): each connection
// notes the reaper's clock when it is served, and the reaper, a goroutine
// that runs while a timeout is set, closes those not served for longer
// than the timeout, once a second.

// SetIdleTimeout changes the idle timeout (CONFIG SET timeout); 0 turns it
// off.
func (s *Server) SetIdleTimeout(d time.Duration) {
	s.idle.Store(int64(max(d, 0)))
	if d > 0 {
		s.reaping.Do(func() { go s.reap() })
	}
}

// IdleTimeout returns the idle timeout.
func (s *Server) IdleTimeout() time.Duration { return time.Duration(s.idle.Load()) }

// reap closes idle connections, once a second, until the server closes.
func (s *Server) reap() {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for range t.C {
		now := time.Now().Unix()
		s.tick.Store(now)
		s.mu.Lock()
		if s.closing {
			s.mu.Unlock()
			return
		}
		timeout := s.idle.Load()
		var idle []*Conn
		if timeout > 0 {
			for c := range s.conns {
				if time.Duration(now-c.active.Load())*time.Second > time.Duration(timeout) && !c.parked.Load() {
					idle = append(idle, c)
				}
			}
		}
		s.mu.Unlock()
		for _, c := range idle {
			c.kill()
		}
	}
}

// kill closes c from another goroutine: its reader's next read fails (a
// goroutine's connection), or its loop closes it.
func (c *Conn) kill() {
	if c.loop != nil {
		c.loop.kill(c)
		return
	}
	c.nc.SetReadDeadline(time.Unix(1, 0))
}
