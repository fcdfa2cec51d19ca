package resp

import (
	"crypto/subtle"
	"strconv"
)

func cmdPing(c *Conn, args [][]byte) {
	switch len(args) {
	case 1:
		c.out = appendStatus(c.out, "PONG")
	case 2:
		c.out = appendBulk(c.out, args[1])
	default:
		c.err(ErrWrongArgs("ping"))
	}
}

func cmdEcho(c *Conn, args [][]byte) { c.out = appendBulk(c.out, args[1]) }

func (c *Conn) checkPassword(user, pass []byte) bool {
	want := *c.srv.requirePass.Load()
	if user != nil && string(user) != "default" {
		return false
	}
	return subtle.ConstantTimeCompare(pass, []byte(want)) == 1
}

// AUTH [username] password
func cmdAuth(c *Conn, args [][]byte) {
	if len(args) > 3 {
		c.err(ErrSyntax)
		return
	}
	var user []byte
	pass := args[1]
	if len(args) == 3 {
		user, pass = args[1], args[2]
	}
	if *c.srv.requirePass.Load() == "" && user == nil {
		c.err(ErrNoPassSet)
		return
	}
	if !c.checkPassword(user, pass) {
		c.err(ErrWrongPass)
		return
	}
	c.authed = true
	c.out = appendOK(c.out)
}

// HELLO [protover [AUTH username password] [SETNAME clientname]]
func cmdHello(c *Conn, args [][]byte) {
	proto := c.proto
	if len(args) > 1 {
		v, ok := ParseInt(args[1])
		if !ok {
			c.err(ErrHelloProto)
			return
		}
		if v != 2 && v != 3 {
			c.err(ErrNoProto)
			return
		}
		proto = int(v)
	}
	var name []byte
	setName := false
	for i := 2; i < len(args); i++ {
		switch {
		case equalFold(args[i], "AUTH") && i+2 < len(args):
			if !c.checkPassword(args[i+1], args[i+2]) {
				c.err(ErrWrongPass)
				return
			}
			c.authed = true
			i += 2
		case equalFold(args[i], "SETNAME") && i+1 < len(args):
			if !validClientName(args[i+1]) {
				c.err(ErrClientName)
				return
			}
			name, setName = args[i+1], true
			i++
		default:
			c.err(ErrHelloOption(args[i]))
			return
		}
	}
	if !c.authed {
		c.err(ErrHelloNoAuth)
		return
	}
	if setName {
		c.mu.Lock()
		c.name = string(name)
		c.mu.Unlock()
	}
	c.proto = proto
	c.respVer.Store(int32(proto))
	c.out = appendMap(c.out, proto, 7)
	c.out = appendBulkStr(c.out, "server")
	c.out = appendBulkStr(c.out, "redis")
	c.out = appendBulkStr(c.out, "version")
	c.out = appendBulkStr(c.out, redisVersion)
	c.out = appendBulkStr(c.out, "proto")
	c.out = appendInt(c.out, int64(proto))
	c.out = appendBulkStr(c.out, "id")
	c.out = appendInt(c.out, c.id)
	c.out = appendBulkStr(c.out, "mode")
	c.out = appendBulkStr(c.out, "standalone")
	c.out = appendBulkStr(c.out, "role")
	c.out = appendBulkStr(c.out, "master")
	c.out = appendBulkStr(c.out, "modules")
	c.out = appendArray(c.out, 0)
}

func cmdSelect(c *Conn, args [][]byte) {
	n, ok := ParseInt(args[1])
	if !ok {
		c.err(ErrNotInt)
		return
	}
	if n != 0 {
		c.err(ErrDBIndex)
		return
	}
	c.out = appendOK(c.out)
}

func cmdQuit(c *Conn, args [][]byte) {
	c.out = appendOK(c.out)
	c.quit = true
}

// RESET: back to a fresh connection's state.
func cmdReset(c *Conn, args [][]byte) {
	c.inMulti, c.multiErr, c.queue = false, false, nil
	c.proto = 2
	c.respVer.Store(2)
	c.authed = *c.srv.requirePass.Load() == ""
	c.mu.Lock()
	c.name = ""
	c.mu.Unlock()
	c.out = appendStatus(c.out, "RESET")
}

func cmdMulti(c *Conn, args [][]byte) {
	if c.inMulti {
		c.err(ErrNestedMulti)
		return
	}
	c.inMulti, c.multiErr, c.queue = true, false, c.queue[:0]
	c.out = appendOK(c.out)
}

func cmdDiscard(c *Conn, args [][]byte) {
	if !c.inMulti {
		c.err(ErrDiscardNoMulti)
		return
	}
	c.inMulti, c.multiErr, c.queue = false, false, nil
	c.out = appendOK(c.out)
}

// EXEC runs the queued commands atomically: it holds every shard's lock
// (taken in index order) for the whole transaction.
func cmdExec(c *Conn, args [][]byte) {
	if !c.inMulti {
		c.err(ErrExecNoMulti)
		return
	}
	queue, failed := c.queue, c.multiErr
	c.inMulti, c.multiErr, c.queue = false, false, nil
	if failed {
		c.err(ErrExecAbort)
		return
	}
	store := c.srv.store
	for i := 0; i < store.NumShards(); i++ {
		store.Shard(i).Lock()
	}
	c.inExec = true
	c.out = appendArray(c.out, len(queue))
	for _, q := range queue {
		c.exec(q)
	}
	c.inExec = false
	for i := store.NumShards() - 1; i >= 0; i-- {
		store.Shard(i).Unlock()
	}
}

func cmdTime(c *Conn, args [][]byte) {
	now := c.now()
	c.out = appendArray(c.out, 2)
	c.out = appendBulkStr(c.out, strconv.FormatInt(now/1e9, 10))
	c.out = appendBulkStr(c.out, strconv.FormatInt(now%1e9/1e3, 10))
}
