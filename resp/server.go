// Package resp is rlserver's protocol layer: the RESP2/RESP3 request
// reader, the reply writer, the connections (a goroutine each, or event
// loops) and the server that accepts and tracks them. What a request does
// is up to the Handler the server is given.
package resp

import (
	"cmp"
	"context"
	"crypto/tls"
	"log"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Config is the server's configuration. The zero value of each field means
// its default.
type Config struct {
	// ProtoMaxBulkLen bounds one request argument in bytes. Default 1 MB.
	ProtoMaxBulkLen int
	// QueryBufferLimit bounds the bytes one connection may buffer of an
	// unfinished request (client-query-buffer-limit). Default 1 GB.
	QueryBufferLimit int
	// Logger receives the server's log lines. Default: the standard logger.
	Logger *log.Logger
	// EventLoops is how many event loops serve the connections (see
	// loop_linux.go); 0 means a goroutine per connection, the only mode
	// outside Linux.
	EventLoops int
	// Background, if set, reports how long a busy loop may keep its P
	// while background work that must keep up with the loops (a flush of
	// persistence, replication) is under way, 0 when none is: a busy loop
	// then yields its P at that interval instead of every 32 passes.
	Background func() time.Duration
	// MaxClients bounds the connections served at once: one more is
	// answered ErrMaxClients and closed. Default 10000.
	MaxClients int
	// IdleTimeout closes a connection that sent nothing for that long
	// (Redis's timeout); 0 never does.
	IdleTimeout time.Duration
	// TCPKeepAlive is the keep-alive period of accepted connections;
	// negative turns keep-alives off. 0 means 300 s, as Redis.
	TCPKeepAlive time.Duration
	// Admit, if set, is asked about each connection accepted: a non-empty
	// answer is sent to it as an error, and it is closed.
	Admit func(remote net.Addr) string
}

// Server serves the Redis protocol, running requests through its Handler.
type Server struct {
	handler  Handler
	cfg      Config
	maxBulk  atomic.Int64
	maxQuery atomic.Int64

	ln       net.Listener
	tlsLn    net.Listener   // ListenTLS's, served in goroutine mode
	more     []net.Listener // further Listen and ListenTLS sockets (one address each of Redis's bind list)
	moreTLS  []bool         // which of more speak TLS
	loops    []*eventLoop
	nextLoop atomic.Int64 // several listeners may accept at once
	nextID   atomic.Int64
	mu       sync.Mutex
	conns    map[*Conn]struct{}
	closing  bool
	wg       sync.WaitGroup
	totConns atomic.Int64
	rejected atomic.Int64 // connections dropped for protocol errors
	refused  atomic.Int64 // connections refused over MaxClients
	blocked  atomic.Int64 // connections whose blocking command runs (Writer.Block)
	maxConns atomic.Int64
	idle     atomic.Int64 // IdleTimeout in ns
	tick     atomic.Int64 // Unix s, kept by the reaper (idle.go) while a timeout is set
	reaping  sync.Once
}

// New returns a server whose connections run their requests through h.
func New(cfg Config, h Handler) *Server {
	if cfg.ProtoMaxBulkLen <= 0 {
		cfg.ProtoMaxBulkLen = 1 << 20
	}
	if cfg.Logger == nil {
		cfg.Logger = log.Default()
	}
	if cfg.MaxClients <= 0 {
		cfg.MaxClients = 10000
	}
	if cfg.TCPKeepAlive == 0 {
		cfg.TCPKeepAlive = 300 * time.Second
	}
	s := &Server{handler: h, cfg: cfg, conns: make(map[*Conn]struct{})}
	if cfg.QueryBufferLimit <= 0 {
		cfg.QueryBufferLimit = MaxQueryBufferLen
	}
	s.maxBulk.Store(int64(cfg.ProtoMaxBulkLen))
	s.maxQuery.Store(int64(cfg.QueryBufferLimit))
	s.maxConns.Store(int64(cfg.MaxClients))
	s.tick.Store(time.Now().Unix())
	s.SetIdleTimeout(cfg.IdleTimeout)
	return s
}

// Listen binds the listening socket on addr ("127.0.0.1:0" picks a port)
// and starts the event loops, if any, that Serve will hand connections to.
// Called again, it binds one more socket, served the same way.
func (s *Server) Listen(addr string) error {
	lc := net.ListenConfig{KeepAlive: s.cfg.TCPKeepAlive}
	ln, err := lc.Listen(context.Background(), "tcp", addr)
	if err != nil {
		return err
	}
	if s.ln != nil {
		s.more, s.moreTLS = append(s.more, ln), append(s.moreTLS, false)
		return nil
	}
	if s.cfg.EventLoops > 0 {
		if err := s.startLoops(s.cfg.EventLoops); err != nil {
			ln.Close()
			return err
		}
	}
	s.ln = ln
	return nil
}

// ListenTLS binds a second listening socket on addr whose connections
// speak TLS with cfg. Serve serves them too, each from its own goroutine
// (the event loops read plain sockets).
func (s *Server) ListenTLS(addr string, cfg *tls.Config) error {
	lc := net.ListenConfig{KeepAlive: s.cfg.TCPKeepAlive}
	ln, err := lc.Listen(context.Background(), "tcp", addr)
	if err != nil {
		return err
	}
	if s.tlsLn != nil {
		s.more, s.moreTLS = append(s.more, tls.NewListener(ln, cfg)), append(s.moreTLS, true)
		return nil
	}
	s.tlsLn = tls.NewListener(ln, cfg)
	return nil
}

// TLSAddr returns the address of ListenTLS's socket (nil without one).
func (s *Server) TLSAddr() net.Addr {
	if s.tlsLn == nil {
		return nil
	}
	return s.tlsLn.Addr()
}

// Addr returns the address the server listens on (nil before Listen).
func (s *Server) Addr() net.Addr {
	if s.ln == nil {
		return nil
	}
	return s.ln.Addr()
}

// Serve accepts connections until Close, and returns nil then. An accept
// error (file descriptors exhausted, a connection reset in the backlog)
// never stops it: the connections it has go on being served, and it
// accepts again after a back-off.
func (s *Server) Serve() error {
	if s.tlsLn != nil {
		go s.accept(s.tlsLn, false)
	}
	for i, ln := range s.more {
		go s.accept(ln, !s.moreTLS[i] && len(s.loops) > 0)
	}
	s.accept(s.ln, len(s.loops) > 0)
	return nil
}

// accept serves the connections ln accepts, handing them to the event
// loops if loops is set, until Close.
func (s *Server) accept(ln net.Listener, loops bool) {
	var backoff time.Duration
	var failing string // the accept error logged last
	failed := func(err error) {
		if err.Error() != failing {
			failing = err.Error()
			s.logf("accept: %v; serving the %d connections open and accepting again after a back-off", err, s.NumConns())
		}
		backoff = min(max(5*time.Millisecond, 2*backoff), time.Second)
		time.Sleep(backoff)
	}
	for {
		nc, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			closing := s.closing
			s.mu.Unlock()
			if closing {
				return
			}
			failed(err)
			continue
		}
		if int64(s.NumConns()) >= s.maxConns.Load() {
			s.refused.Add(1)
			refuse(nc, ErrMaxClients)
			continue
		}
		if s.cfg.Admit != nil {
			if msg := s.cfg.Admit(nc.RemoteAddr()); msg != "" {
				refuse(nc, msg)
				continue
			}
		}
		var c *Conn
		var l *eventLoop
		if loops {
			l = s.loops[(s.nextLoop.Add(1)-1)%int64(len(s.loops))]
			if c, err = l.adopt(nc); err != nil {
				nc.Close()
				failed(err)
				continue
			}
		} else {
			c = s.newConn(nc, nc, -1, -1)
		}
		s.mu.Lock()
		if s.closing {
			s.mu.Unlock()
			c.closeNow()
			c.sess.Close()
			continue
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		s.totConns.Add(1)
		if failing != "" {
			s.logf("accept works again")
			failing, backoff = "", 0
		}
		if l != nil {
			l.add(c)
		} else {
			go s.serveConn(c)
		}
	}
}

// refuse answers a connection it does not serve with an error and closes
// it, as Redis does.
func refuse(nc net.Conn, msg string) {
	nc.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
	nc.Write([]byte("-" + msg + "\r\n"))
	nc.Close()
}

// MaxClients returns the most connections served at once.
func (s *Server) MaxClients() int64 { return s.maxConns.Load() }

// SetMaxClients changes it; connections over it stay open.
func (s *Server) SetMaxClients(n int64) { s.maxConns.Store(n) }

// forget drops a closed connection from the server's books.
func (s *Server) forget(c *Conn) {
	// The session closes while the connection is still listed, so that
	// its statistics move to the closed connections' totals before it
	// leaves the list (Clients): readers never miss them.
	c.sess.Close()
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.wg.Done()
}

// Close stops accepting, lets every connection finish the command it is
// running, closes them and waits (at most timeout) for them to go.
func (s *Server) Close(timeout time.Duration) {
	s.mu.Lock()
	s.closing = true
	if s.ln != nil {
		s.ln.Close()
	}
	if s.tlsLn != nil {
		s.tlsLn.Close()
	}
	for _, ln := range s.more {
		ln.Close()
	}
	loops := s.loops
	for c := range s.conns {
		if c.nc == nil {
			continue // an event loop's: closed by its loop below
		}
		// Interrupts a connection blocked in Read; one executing a command
		// finishes it, flushes, and then sees the deadline.
		c.nc.SetReadDeadline(time.Unix(1, 0))
		c.nc.SetWriteDeadline(time.Now().Add(timeout))
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() {
		for _, l := range loops {
			l.shutdown() // after the command it runs, like a connection's goroutine
		}
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(timeout):
	}
}

// LendLoops has a stand-in serve the other connections of every event loop
// whose goroutine is inside a connection's commands (see lending), for as
// long as it is. The script engine calls it while a script runs past
// busy-reply-threshold, so that every client gets its -BUSY reply.
func (s *Server) LendLoops() {
	for _, l := range s.loops {
		l.lendOut()
	}
}

// serveConn serves c from its own goroutine until it closes.
func (s *Server) serveConn(c *Conn) {
	defer func() {
		c.nc.Close()
		s.forget(c)
	}()
	c.serve(goroutineSender{})
}

// Clients lists the connections the server serves, by ID.
func (s *Server) Clients() []Client {
	s.mu.Lock()
	cs := make([]Client, 0, len(s.conns))
	for c := range s.conns {
		cs = append(cs, Client{ConnInfo: c.info, Session: c.sess, Blocked: c.parked.Load()})
	}
	s.mu.Unlock()
	// Sorted through small keys: moving the Clients themselves costs
	// several times more with thousands of connections.
	order := make([]idAt, len(cs))
	for i := range cs {
		order[i] = idAt{cs[i].ID, i}
	}
	slices.SortFunc(order, func(a, b idAt) int { return cmp.Compare(a.id, b.id) })
	out := make([]Client, len(cs))
	for i, o := range order {
		out[i] = cs[o.at]
	}
	return out
}

type idAt struct {
	id int64
	at int
}

// NumConns returns how many connections the server serves.
func (s *Server) NumConns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// Blocked returns how many connections run a blocking command now
// (INFO's blocked_clients).
func (s *Server) Blocked() int64 { return s.blocked.Load() }

// Stats are the server's counters, for INFO stats.
type Stats struct {
	ConnectionsReceived int64
	ProtocolErrors      int64 // connections closed for a malformed request
	RejectedConnections int64 // refused over MaxClients
}

func (s *Server) Stats() Stats {
	return Stats{ConnectionsReceived: s.totConns.Load(), ProtocolErrors: s.rejected.Load(), RejectedConnections: s.refused.Load()}
}

// ResetStats zeroes the counters (CONFIG RESETSTAT).
func (s *Server) ResetStats() {
	s.totConns.Store(0)
	s.rejected.Store(0)
	s.refused.Store(0)
}

// MaxBulkLen is proto-max-bulk-len, the largest request argument the
// readers accept.
func (s *Server) MaxBulkLen() int64 { return s.maxBulk.Load() }

// SetMaxBulkLen changes it; each connection takes it up after its current
// batch of requests.
func (s *Server) SetMaxBulkLen(n int64) { s.maxBulk.Store(n) }

// QueryBufferLimit is client-query-buffer-limit: the most a connection may
// buffer of an unfinished request.
func (s *Server) QueryBufferLimit() int64 { return s.maxQuery.Load() }

// SetQueryBufferLimit changes it, taken up as SetMaxBulkLen's value is.
func (s *Server) SetQueryBufferLimit(n int64) { s.maxQuery.Store(n) }

func (s *Server) logf(format string, args ...any) { s.cfg.Logger.Printf(format, args...) }
