package command

import (
	"log"
	"strconv"
	"time"

	"github.com/rlserver/rlserver/resp"
)

func cmdPing(c *Ctx, args [][]byte) {
	switch len(args) {
	case 1:
		c.W.Status("PONG")
	case 2:
		c.W.Bulk(args[1])
	default:
		c.err(errWrongArgs("ping"))
	}
}

func cmdEcho(c *Ctx, args [][]byte) { c.W.Buf = resp.AppendBulk(c.W.Buf, args[1]) }

// authenticate authenticates the connection as user (nil: the default
// user) if pass is its password, and counts a failure.
func (c *Ctx) authenticate(user, pass []byte) bool {
	u := c.h.acl.def
	if user != nil {
		u = c.h.acl.user(string(user))
	}
	if u != nil && u.perm.Load().accepts(pass) {
		c.sess.setUser(u)
		return true
	}
	c.h.authFailed(c.sess.info.Addr)
	return false
}

// authFailLogEvery bounds the log lines about failed AUTHs: at most one
// per interval, with the count since the last.
const authFailLogEvery = 10 * time.Second

// authFailed counts a failed AUTH (INFO stats acl_access_denied_auth) and
// logs it, at a bounded rate: a client guessing passwords must not flood
// the log.
func (h *Handler) authFailed(addr string) {
	n := h.authFailures.Add(1)
	now := time.Now().UnixNano()
	last := h.authLogged.Load()
	if now-last < int64(authFailLogEvery) || !h.authLogged.CompareAndSwap(last, now) {
		return
	}
	since := n - h.authLoggedAt.Swap(n)
	log.Printf("AUTH failed from %s (%d failed since the last such line, %d in all)", addr, since, n)
}

// AUTH [username] password
func cmdAuth(c *Ctx, args [][]byte) {
	if len(args) > 3 {
		c.err(errSyntax)
		return
	}
	var user []byte
	pass := args[1]
	if len(args) == 3 {
		user, pass = args[1], args[2]
	}
	if user == nil && c.h.acl.open() {
		c.err(errNoPassSet)
		return
	}
	if !c.authenticate(user, pass) {
		c.err(errWrongPass)
		return
	}
	c.W.OK()
}

// HELLO [protover [AUTH username password] [SETNAME clientname]]
func cmdHello(c *Ctx, args [][]byte) {
	proto := c.W.Proto
	if len(args) > 1 {
		v, ok := resp.ParseInt(args[1])
		if !ok {
			c.err(errHelloProto)
			return
		}
		if v != 2 && v != 3 {
			c.err(errNoProto)
			return
		}
		proto = int(v)
	}
	var name []byte
	setName := false
	for i := 2; i < len(args); i++ {
		switch {
		case equalFold(args[i], "AUTH") && i+2 < len(args):
			if !c.authenticate(args[i+1], args[i+2]) {
				c.err(errWrongPass)
				return
			}
			i += 2
		case equalFold(args[i], "SETNAME") && i+1 < len(args):
			if !validClientName(args[i+1]) {
				c.err(errClientName)
				return
			}
			name, setName = args[i+1], true
			i++
		default:
			c.err(errHelloOption(args[i]))
			return
		}
	}
	if c.sess.user == nil {
		c.err(errHelloNoAuth)
		return
	}
	if setName {
		c.sess.setName(string(name))
	}
	c.setProto(proto)
	c.W.Map(7)
	c.W.BulkString("server")
	c.W.BulkString("redis")
	c.W.BulkString("version")
	c.W.BulkString(redisVersion)
	c.W.BulkString("proto")
	c.W.Int(int64(proto))
	c.W.BulkString("id")
	c.W.Int(c.sess.info.ID)
	mode, role := "standalone", "master"
	if st := c.h.cfg.Cluster; st != nil {
		mode = "cluster"
		if st.View().Self.Replica {
			role = "replica"
		}
	}
	c.W.BulkString("mode")
	c.W.BulkString(mode)
	c.W.BulkString("role")
	c.W.BulkString(role)
	c.W.BulkString("modules")
	c.W.Array(0)
}

func cmdSelect(c *Ctx, args [][]byte) {
	n, ok := resp.ParseInt(args[1])
	if !ok {
		c.err(errNotInt)
		return
	}
	if n != 0 {
		c.err(errDBIndex)
		return
	}
	c.W.OK()
}

func cmdQuit(c *Ctx, args [][]byte) {
	c.W.OK()
	c.sess.quit = true
}

// RESET: back to a fresh connection's state.
func cmdReset(c *Ctx, args [][]byte) {
	c.sess.inMulti, c.sess.multiErr, c.sess.queue = false, false, nil
	c.sess.tracking, c.sess.redirect, c.sess.caching = false, 0, false
	c.setProto(2)
	c.sess.setUser(c.h.acl.startUser())
	c.sess.setName("")
	c.W.Status("RESET")
}

func cmdMulti(c *Ctx, args [][]byte) {
	if c.sess.inMulti {
		c.err(errNestedMulti)
		return
	}
	c.sess.inMulti, c.sess.multiErr, c.sess.queue = true, false, c.sess.queue[:0]
	c.W.OK()
}

func cmdDiscard(c *Ctx, args [][]byte) {
	if !c.sess.inMulti {
		c.err(errDiscardNoMulti)
		return
	}
	c.sess.inMulti, c.sess.multiErr, c.sess.queue = false, false, nil
	c.W.OK()
}

// EXEC runs the queued commands atomically: it holds every shard's lock
// (taken in index order) for the whole transaction.
func cmdExec(c *Ctx, args [][]byte) {
	if !c.sess.inMulti {
		c.err(errExecNoMulti)
		return
	}
	queue, failed := c.sess.queue, c.sess.multiErr
	c.sess.inMulti, c.sess.multiErr, c.sess.queue = false, false, nil
	if failed {
		c.err(errExecAbort)
		return
	}
	c.txn, c.inExec = c.Store().LockAll(), true
	c.raw = nil // the queued commands are copies, not EXEC's bytes
	c.W.Array(len(queue))
	for _, q := range queue {
		c.conn.exec(q)
	}
	c.inExec = false
	c.txn.UnlockAll()
}

func cmdTime(c *Ctx, args [][]byte) {
	now := c.Now()
	c.W.Array(2)
	c.W.BulkString(strconv.FormatInt(now/1e9, 10))
	c.W.BulkString(strconv.FormatInt(now%1e9/1e3, 10))
}
