package command

import (
	"time"

	"github.com/rlserver/rlserver/cluster"
)

// Slot routing in cluster mode: which node runs a command with keys, and
// holding a command whose slot is being handed to another node.

// route decides, in cluster mode, whether this node runs a command with
// keys, as Redis's getNodeByQuery: every key in one slot (CROSSSLOT), the
// slot served (CLUSTERDOWN), every slot served, and the slot this node's
// shard's; a replica runs reads of its shard only for a READONLY
// connection, and redirects the rest to the primary (MOVED). EXEC is
// decided on the keys of the whole transaction. It returns the error to
// answer, or "".
func (c *connection) route(cmd *Command, args [][]byte) string {
	v := c.h.cfg.Cluster.View()
	if k := cmd.Keys; k.First == 1 && k.Last == 1 && k.Find == nil {
		// One key, the first argument (every limiter but CL.ALL): no
		// key list to build.
		slot := cluster.Slot(args[1])
		c.slotKey, c.slot = args[1], slot
		return c.routeSlot(slot, cmd.write)
	}
	slot, write := -1, cmd.write
	check := func(cmd *Command, args [][]byte) string {
		for _, k := range cmd.keysOf(args, c.aclKeys[:0]) {
			s := cluster.Slot(k)
			switch {
			case slot < 0:
				slot = s
				if v.Topo.Owner(s) < 0 {
					return errSlotUnbound
				}
			case s != slot:
				return errCrossSlot
			}
		}
		return ""
	}
	if cmd.RunsQueue {
		if !c.sess.inMulti {
			return ""
		}
		for _, q := range c.sess.queue {
			qc := c.h.table.lookup(q[0], &c.lower)
			if qc.subIndex != nil && len(q) > 1 {
				qc = qc.sub(q[1])
			}
			write = write || qc.write
			if msg := check(qc, q); msg != "" {
				return msg
			}
		}
	} else if msg := check(cmd, args); msg != "" {
		return msg
	}
	if slot < 0 {
		return ""
	}
	return c.routeSlot(slot, write)
}

// routeSlot answers, for a command on slot, what cluster.State.Route
// decides: "" to run it here, else the error that sends it elsewhere.
func (c *connection) routeSlot(slot int, write bool) string {
	switch r, addr := c.h.cfg.Cluster.Route(slot, write, c.sess.readOnly); r {
	case cluster.Unbound:
		return errSlotUnbound
	case cluster.Down:
		return errClusterDown
	case cluster.Ask:
		return errAsk(slot, addr)
	case cluster.Moved:
		return errMoved(slot, addr)
	}
	return ""
}

// holdMoving holds a command that found its key's slot frozen: the slot
// is being handed to another node, for the few milliseconds the last
// changes, the report to etcd and the handover take. Instead of
// TRYAGAIN, which a client retries a bounded number of times with
// backoff (go-redis: three redirects in all), the connection blocks until
// the move ends, and the command runs again, routed anew: the decision
// here if the move was abandoned, ASK once the slot is handed over, MOVED
// once the topology gives it away. Only after cfg.MoveHold does it answer
// TRYAGAIN. The connection's later requests wait behind it, in order.
func (c *connection) holdMoving(cmd *Command, args [][]byte) {
	c.moving = false
	st := c.h.cfg.Cluster
	c.W.Block(func(gone <-chan struct{}) {
		timeout := time.NewTimer(c.h.cfg.MoveHold)
		defer timeout.Stop()
		for last := false; ; {
			changed := st.Changed() // before the retry: no change is missed
			if !c.retryHeld(cmd, args, last) {
				return
			}
			select {
			case <-changed:
			case <-timeout.C:
				last = true
			case <-gone:
				return
			}
		}
	})
}

// retryHeld runs a held command again, routed anew, as a batch of its own
// decided at its own instant. It reports whether the slot is still
// frozen, with nothing answered; on the last try it answers TRYAGAIN then.
func (c *connection) retryHeld(cmd *Command, args [][]byte, last bool) (held bool) {
	c.now = 0
	c.beginCommand(&cmd.stat, args)
	if msg := c.route(cmd, args); msg != "" {
		c.reject(msg)
	} else if c.run(cmd, args); c.moving {
		c.moving = false
		if held = !last; !held {
			c.reject(errTryAgain)
		}
	}
	c.stats.End()
	c.now = 0 // the connection's next batch reads the clock again
	return held
}
