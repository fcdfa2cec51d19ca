package command

import (
	mrand "math/rand/v2"

	"github.com/rlserver/rlserver/resp"
	"github.com/rlserver/rlserver/script"
	"github.com/rlserver/rlserver/shard"
	"github.com/rlserver/rlserver/values"
)

// Ctx is what a handler sees of its connection: the reply writer W, the
// batch's clock (Now), the keyspace (keys, Store), the session, and
// scratch space its commands reuse from call to call. Dispatch's own state
// (the lookup cache, ACL and routing scratch, the batch's statistics) is
// the connection's (see connection), which handlers reach only to run
// other commands (EXEC, scripts) and to count decisions.
type Ctx struct {
	W    *resp.Writer // the connection's replies
	sess *Session
	h    *Handler
	srv  *resp.Server // the server's connections and counters (CLIENT, INFO)
	conn *connection  // the connection running this Ctx's commands

	now int64 // the clock, read once per batch of pipelined commands (0: not yet)
	// In cluster mode, the running command's key and its slot, as route
	// found them (slotKey nil: none), for keys.
	slotKey []byte
	slot    int
	inExec  bool       // EXEC holds every shard lock, through txn
	moving  bool       // the command found its key's slot frozen (see notDone)
	txn     shard.View // EXEC's view (see keys)
	// raw is the running request as read, its arguments aliasing it
	// (resp.Reader.Raw), while Exec runs it; nil otherwise (inline
	// requests, EXEC's queued commands).
	raw []byte
	// allowOOM lets the commands of a running function flagged
	// allow-oom past maxmemory, as Redis does.
	allowOOM bool
	// The running script's redis.call (scriptCaller): whether it may not
	// write, and the caller, made once.
	scriptRO bool
	caller   script.Caller
	scratch
}

// scratch is the handlers' per-command scratch space, kept so that the
// commands of the hot path allocate nothing.
type scratch struct {
	ids *mrand.ChaCha8 // lease ids (see newLeaseID)
	ops ops            // reusable limiter ops (see limiters.go)
	vop valueOp        // the reusable op of data commands (values.go)
	zr  zrange         // a ZRANGE family request (zsets.go)
	all allScratch     // CL.ALL's
	// keyList is a command's keys picked out of its arguments (MSET's).
	keyList [][]byte
	// A range read's members (ZRANGE's) or elements (LRANGE's), emptied
	// once answered so that they hold no value alive.
	zmembers []values.Member
	elems    [][]byte
}

// Now returns the server clock, read once per batch: the commands of one
// pipelined batch arrived together and are decided at one instant (as are
// those of one EXEC). DEBUG CLOCK resets it.
func (c *Ctx) Now() int64 {
	if c.now == 0 {
		c.now = c.h.clock.Now()
	}
	return c.now
}

// Store returns the keyspace. A handler reads and changes keys through
// keys(), the view that knows whether EXEC holds every lock.
func (c *Ctx) Store() *shard.Store { return c.h.store }

// keys returns the keyspace as the running command sees it: inside EXEC,
// a view holding every shard lock.
func (c *Ctx) keys() shard.View {
	if c.inExec {
		return c.txn
	}
	if c.slotKey != nil {
		return c.h.store.View().WithSlot(c.slotKey, c.slot)
	}
	return c.h.store.View()
}

// err answers an error (a text of errors.go).
func (c *Ctx) err(msg string) { c.W.Err(msg) }

// setProto switches the connection's replies to RESP2 or RESP3.
func (c *Ctx) setProto(proto int) {
	c.W.Proto = proto
	c.sess.respVer.Store(int32(proto))
}
