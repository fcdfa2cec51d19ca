package resp

import "net"

// ServeConn serves nc (one end of a net.Pipe, say) from its own goroutine,
// as Serve serves an accepted connection.
func (s *Server) ServeConn(nc net.Conn) {
	c := s.newConn(nc, nc, -1, -1)
	s.mu.Lock()
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	go s.serveConn(c)
}

// Wait waits for the connections ServeConn serves to end.
func (s *Server) Wait() { s.wg.Wait() }
