// Package resp is rlserver's protocol layer: the RESP2/RESP3 server, the
// per-connection state, the command table and the command handlers.
package resp

import (
	"errors"
	"log"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlserver/rlserver/shard"
)

// Version is rlserver's version, reported in INFO as rlserver_version.
const Version = "0.1.0"

// redisVersion is the Redis version whose behaviour rlserver follows; HELLO
// and INFO report it so that clients gating features on it work unchanged.
const redisVersion = "7.4.0"

// Config is the server's configuration. The zero value of each field means
// its default.
type Config struct {
	// RequirePass is the password AUTH and HELLO ... AUTH require ("" none).
	RequirePass string
	// ProtoMaxBulkLen bounds one request argument in bytes. Default 1 MB.
	ProtoMaxBulkLen int
	// EnableDebug enables the DEBUG command (tests only).
	EnableDebug bool
	// LogMaxLimit is the largest limit CL.WINDOW ... LOG accepts. Default 10000.
	LogMaxLimit int64
	// Persistence backs SAVE, BGSAVE, LASTSAVE and INFO persistence; nil
	// means in memory only.
	Persistence Persistence
	// Logger receives the server's log lines. Default: the standard logger.
	Logger *log.Logger
	// Settings are reported read-only by CONFIG GET (bind, port, dir, ...).
	Settings map[string]string
	// EventLoops is how many event loops serve the connections (see
	// loop_linux.go); 0 means a goroutine per connection, the only mode
	// outside Linux.
	EventLoops int
	// OnShutdown is called by SHUTDOWN after replying is no longer needed;
	// save tells whether to flush first. Default: nothing.
	OnShutdown func(save bool)
}

// Persistence is what the protocol layer needs from the persistence layer.
type Persistence interface {
	// Save flushes every change to disk and syncs it.
	Save() error
	// BGSave starts a flush in the background; it fails if one is running.
	BGSave() error
	// LastSave returns the Unix time (s) of the last successful save.
	LastSave() int64
	// Info returns the fields of INFO's persistence section, in order.
	Info() [][2]string
	// Checkpoint flushes, then writes a consistent copy of the store to
	// dir (which must not exist yet).
	Checkpoint(dir string) error
}

// Server serves the Redis protocol over a shard.Store.
type Server struct {
	store *shard.Store
	clock *shard.Clock
	table *Table
	cfg   Config

	requirePass atomic.Pointer[string]
	maxBulk     atomic.Int64
	logMax      atomic.Int64
	maxMemory   atomic.Int64

	ln       net.Listener
	loops    []*eventLoop
	nextLoop int
	started  time.Time
	nextID   atomic.Int64
	mu       sync.Mutex
	conns    map[*Conn]struct{}
	closing  bool
	wg       sync.WaitGroup
	doneCmds atomic.Int64 // commands of closed connections
	totConns atomic.Int64
	rejected atomic.Int64 // connections dropped for protocol errors
}

// New returns a server over store, reading time from clock.
func New(cfg Config, store *shard.Store, clock *shard.Clock) *Server {
	if cfg.ProtoMaxBulkLen <= 0 {
		cfg.ProtoMaxBulkLen = 1 << 20
	}
	if cfg.LogMaxLimit <= 0 {
		cfg.LogMaxLimit = 10000
	}
	if cfg.Logger == nil {
		cfg.Logger = log.Default()
	}
	s := &Server{store: store, clock: clock, cfg: cfg, conns: make(map[*Conn]struct{}), started: time.Now()}
	pass := cfg.RequirePass
	s.requirePass.Store(&pass)
	s.maxBulk.Store(int64(cfg.ProtoMaxBulkLen))
	s.logMax.Store(cfg.LogMaxLimit)
	s.table = newTable(commandTable())
	return s
}

// Listen binds the listening socket on addr ("127.0.0.1:0" picks a port)
// and starts the event loops, if any, that Serve will hand connections to.
func (s *Server) Listen(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
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

// Addr returns the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Serve accepts connections until Close. It returns nil after Close.
func (s *Server) Serve() error {
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			s.mu.Lock()
			closing := s.closing
			s.mu.Unlock()
			if closing {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(5 * time.Millisecond)
				continue
			}
			return err
		}
		var c *Conn
		var l *eventLoop
		if len(s.loops) > 0 {
			l = s.loops[s.nextLoop%len(s.loops)]
			s.nextLoop++
			if c, err = l.adopt(nc); err != nil {
				s.logf("accept: %v", err)
				nc.Close()
				continue
			}
		} else {
			c = s.newConn(nc, nc)
		}
		s.mu.Lock()
		if s.closing {
			s.mu.Unlock()
			c.closeNow()
			continue
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		s.totConns.Add(1)
		if l != nil {
			l.add(c)
		} else {
			go s.serveConn(c)
		}
	}
}

// forget drops a closed connection from the server's books.
func (s *Server) forget(c *Conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.doneCmds.Add(c.cmds.Load())
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

// serveConn serves c from its own goroutine until it closes.
func (s *Server) serveConn(c *Conn) {
	defer func() {
		c.nc.Close()
		s.forget(c)
	}()
	c.serve(goroutineSender{})
}

// totalCommands is the INFO stats total_commands_processed.
func (s *Server) totalCommands() int64 {
	n := s.doneCmds.Load()
	s.mu.Lock()
	for c := range s.conns {
		n += c.cmds.Load()
	}
	s.mu.Unlock()
	return n
}

func (s *Server) numConns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

func (s *Server) logf(format string, args ...any) { s.cfg.Logger.Printf(format, args...) }

// SetMaxMemory applies a memory bound (bytes, 0 none) as CONFIG SET
// maxmemory would.
func (s *Server) SetMaxMemory(n int64) {
	s.maxMemory.Store(n)
	s.store.SetMaxMemory(n)
}
