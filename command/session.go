package command

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlserver/rlserver/resp"
)

// Session is a connection's state between commands: authentication, the
// protocol version, the client's name and library, the MULTI queue, and
// what CLIENT LIST and INFO show other connections. Only db 0 exists, so
// SELECT leaves nothing to remember. Its fields are used only by the
// connection's own goroutine or loop, except those under mu and the atomic
// ones, which other connections read (see describe).
type Session struct {
	info     resp.ConnInfo
	user     *aclUser // nil until authenticated
	inMulti  bool
	multiErr bool       // a command failed to queue: EXEC aborts
	queue    [][][]byte // MULTI queue, copied arguments
	quit     bool       // close after the replies are sent
	tracking bool       // CLIENT TRACKING ON (OPTIN): accepted, see cmdClientTracking
	redirect int64      // CLIENT TRACKING ... REDIRECT id
	caching  bool       // CLIENT CACHING YES: for the next command, or the MULTI it starts
	readOnly bool       // READONLY: a replica runs this connection's reads of its slots
	fnParts  []byte     // RLREPL FUNCTIONS: the primary's libraries received so far

	batchCmd int64    // commands run in this batch, published at its end
	last     *Command // the last command run, published at the batch's end

	mu       sync.Mutex // guards the fields below
	userName string
	name     string
	libName  string
	libVer   string

	lastCmd  atomic.Pointer[Command]
	respVer  atomic.Int32 // the protocol version, for CLIENT LIST
	lastSeen atomic.Int64 // Unix ns of the last command
}

// setUser authenticates the session as u (nil: not authenticated).
func (s *Session) setUser(u *aclUser) {
	s.user = u
	name := "default"
	if u != nil {
		name = u.name
	}
	s.mu.Lock()
	s.userName = name
	s.mu.Unlock()
}

// client names the connection in slow log entries: its address and the
// name CLIENT SETNAME gave it.
func (s *Session) client() (addr, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.info.Addr, s.name
}

func (s *Session) setName(name string) {
	s.mu.Lock()
	s.name = name
	s.mu.Unlock()
}

// appendDescription appends the connection's CLIENT LIST line (no
// newline) to b; blocked: a blocking command runs (flags=b, as Redis).
// Any connection may call it.
func (s *Session) appendDescription(b []byte, now time.Time, blocked bool) []byte {
	s.mu.Lock()
	name, lib, ver, user := s.name, s.libName, s.libVer, s.userName
	s.mu.Unlock()
	cmd := "NULL"
	if lc := s.lastCmd.Load(); lc != nil {
		cmd = lc.Name
	}
	idle := now.Sub(time.Unix(0, s.lastSeen.Load())) / time.Second
	b = append(b, "id="...)
	b = strconv.AppendInt(b, s.info.ID, 10)
	b = append(b, " addr="...)
	b = append(b, s.info.Addr...)
	b = append(b, " laddr="...)
	b = append(b, s.info.LocalAddr...)
	b = append(b, " fd="...)
	b = strconv.AppendInt(b, int64(s.info.FD), 10)
	b = append(b, " name="...)
	b = append(b, name...)
	b = append(b, " age="...)
	b = strconv.AppendInt(b, int64(now.Sub(s.info.Created)/time.Second), 10)
	b = append(b, " idle="...)
	b = strconv.AppendInt(b, int64(idle), 10)
	flags := " flags=N"
	if blocked {
		flags = " flags=b"
	}
	b = append(b, flags...)
	b = append(b, " db=0 sub=0 psub=0 ssub=0 multi=-1 watch=0 qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=0 tot-mem=0 events=r cmd="...)
	b = append(b, cmd...)
	b = append(b, " user="...)
	b = append(b, user...)
	b = append(b, " redir=-1 resp="...)
	b = strconv.AppendInt(b, int64(s.respVer.Load()), 10)
	b = append(b, " lib-name="...)
	b = append(b, lib...)
	b = append(b, " lib-ver="...)
	return append(b, ver...)
}

// sessionOf returns the session of a connection the server lists: this
// package's connection is every connection's resp.Session.
func sessionOf(c resp.Client) *Session { return c.Session.(*connection).sess }
