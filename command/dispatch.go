package command

import "github.com/rlserver/rlserver/observe"

// connection is a connection as the server drives it (resp.Session): the
// Ctx its handlers are given, and what only dispatch uses around them:
// the command lookup's cache, the keys ACL checks, routing and prefetch
// look at, and the batch's statistics until they are published.
type connection struct {
	Ctx
	lower       [32]byte // a command name in lower case (see Table.lookup)
	lastName    *Command // the command last looked up by name
	lastNameBuf [32]byte // the name it was looked up by, as sent
	lastNameLen int
	aclKeys     [8][]byte     // the keys an ACL check or route looks at
	warmKeys    [][]byte      // warm's: a request's keys
	stats       observe.Batch // the batch's statistics until published (stats.go)
}

// Exec runs one request (resp.Session).
func (c *connection) Exec(args [][]byte, raw []byte) (quit bool) {
	c.raw = raw
	c.exec(args)
	c.raw = nil
	return c.sess.quit
}

// EndBatch publishes the batch's statistics for INFO and CLIENT LIST (read
// by other goroutines) once, instead of per command, and forgets its clock
// (resp.Session).
func (c *connection) EndBatch() {
	c.now = 0
	s := c.sess
	if s.batchCmd > 0 {
		m := c.stats.End() // one clock reading: statistics and CLIENT LIST's idle
		c.h.totalCmds.Add(s.batchCmd)
		s.batchCmd = 0
		s.lastCmd.Store(s.last)
		s.lastSeen.Store(c.h.clock.Wall(m))
	}
}

// Prefetch warms the keys of a queued batch (resp.Session; see warm).
func (c *connection) Prefetch(args [][]byte, counts []int) { c.warm(args, counts) }

// Authenticated reports whether the connection has authenticated
// (resp.Session): until then the server bounds what it reads.
func (c *connection) Authenticated() bool { return c.sess.user != nil }

// Close folds the connection's own statistics (goroutine mode) into the
// totals (resp.Session).
func (c *connection) Close() { c.stats.Close() }

// command looks name up in the table. Pipelines repeat one command, so the
// name looked up last is compared first, before the table's map.
func (c *connection) command(name []byte) *Command {
	if c.lastName != nil && string(name) == string(c.lastNameBuf[:c.lastNameLen]) {
		return c.lastName
	}
	cmd := c.h.table.lookup(name, &c.lower)
	if cmd != nil && len(name) <= len(c.lastNameBuf) {
		c.lastName = cmd
		c.lastNameLen = copy(c.lastNameBuf[:], name)
	}
	return cmd
}

// exec dispatches one command through the table: lookup, arity, auth, MULTI
// queueing, then the handler.
func (c *connection) exec(args [][]byte) {
	s := c.sess
	s.batchCmd++
	cmd := c.command(args[0])
	if cmd == nil {
		c.beginCommand(nil, args)
		c.reject(errUnknownCommand(args))
		return
	}
	c.beginCommand(&cmd.stat, args)
	if !cmd.arityOK(len(args)) {
		c.reject(errWrongArgs(cmd.Name))
		return
	}
	if cmd.subIndex != nil && len(args) > 1 {
		sub := cmd.sub(args[1])
		if sub == nil {
			c.stats.SetCommand(nil) // Redis counts no command's statistics
			c.reject(errUnknownSubcommand(cmd.Name, args[1]))
			return
		}
		c.stats.SetCommand(&sub.stat)
		if !sub.arityOK(len(args)) {
			c.reject(errWrongArgs(sub.Name))
			return
		}
		cmd = sub
	}
	if !cmd.noAuth {
		if s.user == nil {
			c.reject(errNoAuth)
			return
		}
		if p := s.user.perm.Load(); !p.allCmds || !p.allKeys {
			if p.deleted {
				s.quit = true // the user was removed: Redis closes its connections
				return
			}
			if msg := p.denied(s.user.name, cmd, args, c.aclKeys[:0]); msg != "" {
				c.reject(msg)
				return
			}
		}
	}
	if c.h.cfg.Cluster != nil && !c.inExec {
		c.slotKey = nil
		if cmd.routed {
			if msg := c.route(cmd, args); msg != "" {
				if cmd.RunsQueue {
					s.inMulti, s.multiErr, s.queue = false, false, nil // Redis discards it
				}
				c.reject(msg)
				return
			}
		}
		if cmd.write && c.h.cfg.Cluster.View().Self.Replica {
			c.reject(errReadOnlyReplica)
			return
		}
	}
	if c.h.scripts.Busy() && !cmd.allowBusy && !c.inExec {
		c.reject(c.h.scripts.BusyError())
		return
	}
	if cmd.denyoom && !c.allowOOM && c.h.outOfMemory() {
		c.reject(errOOM)
		return
	}
	if s.caching && cmd.readonly && cmd.Keys.First > 0 {
		c.reject(errNoCaching)
		return
	}
	if s.inMulti && cmd.noMulti {
		c.reject(errNotInMulti)
		return
	}
	if s.inMulti && !cmd.immediate {
		s.queue = append(s.queue, cloneArgs(args))
		c.W.Status("QUEUED")
		return
	}
	s.last = cmd
	c.run(cmd, args)
	if c.moving {
		c.holdMoving(cmd, args)
	}
	// CLIENT CACHING YES covers the next command, or the transaction it
	// starts, as in Redis.
	if s.caching && !s.inMulti && !c.inExec && cmd.Run != nil && !cmd.SetsCaching {
		s.caching = false
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
