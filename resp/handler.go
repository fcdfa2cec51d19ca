package resp

import "time"

// Handler executes the requests a Server reads: the server knows the wire,
// the handler the commands (cmd/rlserver wires the command package's in).
type Handler interface {
	// NewSession returns the command state of a connection just
	// accepted: info describes the connection, w is its reply buffer,
	// and srv the server, for commands about its connections.
	NewSession(srv *Server, info ConnInfo, w *Writer) Session
}

// Session is one connection's command state. Only the goroutine or event
// loop serving the connection calls its methods, one at a time; other
// connections see it through Server.Clients (CLIENT LIST, INFO).
type Session interface {
	// Prefetch is shown a batch of two or more requests the reader has
	// queued, before the first of them runs: their arguments back to
	// back, and each one's count. It must not keep them.
	Prefetch(args [][]byte, counts []int)
	// Exec runs one request and appends its reply to the connection's
	// Writer; quit means close the connection once the replies are sent.
	// raw is the request as read (Reader.Raw): the arguments alias it, or
	// it is nil. Neither may be kept.
	Exec(args [][]byte, raw []byte) (quit bool)
	// EndBatch says that the requests read together have run: their
	// replies are sent next, and the connection may wait for input.
	EndBatch()
	// Authenticated reports whether the connection may send requests of
	// any size: false applies Redis's unauthenticated limits (10
	// arguments, 16 KB each) to what it reads next.
	Authenticated() bool
	// Close says that the connection is gone.
	Close()
}

// ConnInfo is what the server knows of a connection, fixed when it is
// accepted.
type ConnInfo struct {
	ID        int64
	Addr      string // the client's address
	LocalAddr string
	FD        int // the socket as an event loop holds it; -1 in goroutine mode
	Loop      int // the event loop serving it, from 0; -1 in goroutine mode
	Created   time.Time
}

// Client is a connection the server serves, as Clients lists it.
type Client struct {
	ConnInfo
	Session Session
	Blocked bool // a blocking command runs (Writer.Block)
}
