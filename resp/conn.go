package resp

import (
	"io"
	mrand "math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/shard"
)

// Conn is one client connection and its state. Its fields are used only by
// the connection's own goroutine, except those under mu (read by CLIENT LIST
// from other connections) and the atomic counters.
type Conn struct {
	srv *Server
	nc  net.Conn // nil when an event loop serves the connection
	rd  *Reader
	out []byte
	id  int64

	// Event loop mode (see loop_linux.go): the socket and its reader;
	// writing means replies wait for the socket to take them; queued,
	// that they wait for the end of the loop's pass (see flushLater).
	fd      int
	fdr     *fdReader
	writing bool
	queued  bool
	fdNum   int // fd as CLIENT LIST shows it (-1 in goroutine mode)

	proto    int // 2 or 3
	authed   bool
	inMulti  bool
	multiErr bool       // a command failed to queue: EXEC aborts
	queue    [][][]byte // MULTI queue, copied arguments
	inExec   bool       // EXEC holds every shard lock
	quit     bool       // close after flushing

	scratch     [32]byte
	warmKeys    [][]byte // warm's scratch: a request's keys
	created     time.Time
	batchNow    int64          // the clock, read once per batch of pipelined commands (0: not yet)
	batchCmd    int64          // commands run in this batch, published at its end
	last        *Command       // the last command run, published at the batch's end
	ids         *mrand.ChaCha8 // lease ids (see newLeaseID)
	lastName    *Command       // the command last looked up by name
	lastNameBuf [32]byte       // the name it was looked up by, as sent
	lastNameLen int
	allRules    []allRule      // CL.ALL scratch
	allIdx      []int          // CL.ALL scratch
	allStates   []engine.State // CL.ALL scratch states: rule i, kind k at i*8+k
	st          states         // scratch states (see update)

	mu      sync.Mutex // guards the fields below
	name    string
	libName string
	libVer  string
	laddr   string
	raddr   string

	cmds     atomic.Int64
	lastCmd  atomic.Pointer[Command]
	respVer  atomic.Int32 // proto, for CLIENT LIST from other connections
	lastSeen atomic.Int64 // Unix ns of the last command
}

// newConn returns the state of the accepted connection nc, whose requests
// are read from src (nc itself, or an event loop's reader of its socket).
func (s *Server) newConn(nc net.Conn, src io.Reader) *Conn {
	c := &Conn{
		srv:     s,
		nc:      nc,
		rd:      NewReader(src, int(s.maxBulk.Load())),
		out:     make([]byte, 0, 4096),
		id:      s.nextID.Add(1),
		fd:      -1,
		fdNum:   -1,
		proto:   2,
		authed:  *s.requirePass.Load() == "",
		created: time.Now(),
		laddr:   nc.LocalAddr().String(),
		raddr:   nc.RemoteAddr().String(),
	}
	c.lastSeen.Store(time.Now().UnixNano())
	c.respVer.Store(2)
	c.rd.EnableBatch()
	return c
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
	if len(c.out) == 0 {
		return true
	}
	_, err := c.nc.Write(c.out)
	if cap(c.out) > 1<<20 {
		c.out = make([]byte, 0, 4096) // don't keep a huge buffer per idle client
	} else {
		c.out = c.out[:0]
	}
	return err == nil
}

// now returns the server clock, read once per batch: the commands of one
// pipelined batch arrived together and are decided at one instant (as are
// those of one EXEC). DEBUG CLOCK resets it.
func (c *Conn) now() int64 {
	if c.batchNow == 0 {
		c.batchNow = c.srv.clock.Now()
	}
	return c.batchNow
}

// endBatch publishes the batch's statistics for INFO and CLIENT LIST (read
// by other goroutines) once, instead of per command, and forgets its clock.
func (c *Conn) endBatch() {
	c.batchNow = 0
	if c.batchCmd > 0 {
		c.cmds.Add(c.batchCmd)
		c.batchCmd = 0
		c.lastCmd.Store(c.last)
		c.lastSeen.Store(time.Now().UnixNano())
	}
}

// command looks name up in the table. Pipelines repeat one command, so the
// name looked up last is compared first, before the table's map.
func (c *Conn) command(name []byte) *Command {
	if c.lastName != nil && string(name) == string(c.lastNameBuf[:c.lastNameLen]) {
		return c.lastName
	}
	cmd := c.srv.table.lookup(name, &c.scratch)
	if cmd != nil && len(name) <= len(c.lastNameBuf) {
		c.lastName = cmd
		c.lastNameLen = copy(c.lastNameBuf[:], name)
	}
	return cmd
}

// exec dispatches one command through the table: lookup, arity, auth, MULTI
// queueing, then the handler.
func (c *Conn) exec(args [][]byte) {
	c.batchCmd++
	cmd := c.command(args[0])
	if cmd == nil {
		c.reject(ErrUnknownCommand(args))
		return
	}
	if !cmd.arityOK(len(args)) {
		c.reject(ErrWrongArgs(cmd.Name))
		return
	}
	if cmd.subIndex != nil && len(args) > 1 {
		sub := cmd.sub(args[1])
		if sub == nil {
			c.reject(ErrUnknownSubcommand(cmd.Name, args[1]))
			return
		}
		if !sub.arityOK(len(args)) {
			c.reject(ErrWrongArgs(sub.Name))
			return
		}
		cmd = sub
	}
	if !c.authed && !cmd.noAuth {
		c.reject(ErrNoAuth)
		return
	}
	if c.inMulti && cmd.noMulti {
		c.reject(ErrNotInMulti)
		return
	}
	if c.inMulti && !cmd.immediate {
		c.queue = append(c.queue, cloneArgs(args))
		c.out = appendStatus(c.out, "QUEUED")
		return
	}
	c.last = cmd
	cmd.Run(c, args)
}

// reject answers an error raised before the command ran; inside MULTI it
// also dooms the transaction, as Redis does.
func (c *Conn) reject(msg string) {
	if c.inMulti {
		c.multiErr = true
	}
	c.out = appendErr(c.out, msg)
}

func (c *Conn) err(msg string) { c.out = appendErr(c.out, msg) }

// lock and unlock take a shard's lock unless EXEC already holds them all.
func (c *Conn) lock(sh *shard.Shard) {
	if !c.inExec {
		sh.Lock()
	}
}

func (c *Conn) unlock(sh *shard.Shard) {
	if !c.inExec {
		sh.Unlock()
	}
}

func cloneArgs(args [][]byte) [][]byte {
	n := 0
	for _, a := range args {
		n += len(a)
	}
	buf := make([]byte, 0, n)
	out := make([][]byte, len(args))
	for i, a := range args {
		buf = append(buf, a...)
		out[i] = buf[len(buf)-len(a) : len(buf) : len(buf)]
	}
	return out
}
