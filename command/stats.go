package command

import (
	"github.com/rlserver/rlserver/observe"
	"github.com/rlserver/rlserver/persist"
	"github.com/rlserver/rlserver/resp"
	"github.com/rlserver/rlserver/shard"
)

// Command statistics, the slow log and the latency monitor are package
// observe's: a connection counts its batch in its own observe.Batch (the
// calls below), the Handler's observe.Observer holds the rest, and INFO,
// SLOWLOG, LATENCY and /metrics read it.

// beginCommand is exec's bookkeeping before a command looked up as cmd
// (nil: unknown) is checked and run. A batch's first
// command reads the clock, for the batch's time and for Ctx.Now.
func (c *connection) beginCommand(cmd *observe.Cmd, args [][]byte) {
	if !c.stats.Begin(cmd, args) {
		c.startBatch()
	}
}

// startBatch begins a batch at its first command; its clock reading is
// Ctx.Now's.
func (c *connection) startBatch() {
	m := c.stats.BeginBatch()
	if c.now == 0 {
		c.now = c.h.clock.At(m)
	}
}

// reject answers an error raised before the command ran (counted as the
// command's rejected call); inside MULTI it also dooms the transaction, as
// Redis does.
func (c *connection) reject(msg string) {
	if c.sess.inMulti {
		c.sess.multiErr = true
	}
	c.err(msg)
	c.stats.Reject(msg)
}

// run runs cmd, counting the call, its time and whether it failed; a
// call held while its slot moves is counted once, when it ends.
func (c *connection) run(cmd *Command, args [][]byte) {
	call := c.stats.Start(&cmd.stat)
	start := len(c.W.Buf)
	cmd.Run(&c.Ctx, args)
	if c.moving {
		c.stats.Held() // counted when it runs again (holdMoving)
		return
	}
	failed := len(c.W.Buf) > start && c.W.Buf[start] == '-'
	c.stats.Done(call, args, failed)
	if failed {
		c.stats.Error(c.W.Buf[start+1:])
	}
}

// decided counts a decision of the running limiter command: by command
// and outcome, and by the prefix of its (first) key.
func (c *Ctx) decided(allowed bool) { c.conn.stats.Decided(allowed) }

// snapshot is Snapshot as a command sees it: its own batch so far
// included; without commands, the error counts only (INFO's default
// sections).
func (c *Ctx) snapshot(commands bool) observe.Snapshot {
	c.conn.stats.Publish()
	return c.h.obs.Snapshot(commands)
}

// resetStats is CONFIG RESETSTAT's part: every connection's INFO
// statistics, the closed connections' and the running batch's.
func (c *Ctx) resetStats() {
	c.conn.stats.Publish()
	c.h.obs.Reset()
}

// Snapshot returns the command statistics of every connection, closed or
// not. Safe to call from any goroutine.
func (h *Handler) Snapshot() observe.Snapshot { return h.obs.Snapshot(true) }

// SlowlogLen returns the number of entries in the slow log.
func (h *Handler) SlowlogLen() int { return h.obs.SlowlogLen() }

// Stats are the server's own statistics: its connections (resp.Server),
// commands and keyspace. INFO's clients, memory, stats and keyspace
// sections render the same typed sources; the metrics render these.
type Stats struct {
	Clients             int // connected
	MaxClients          int64
	ConnectionsReceived int64
	RejectedConnections int64
	CommandsProcessed   int64
	OpsPerSec           int64 // INFO instantaneous_ops_per_sec
	Keys                int64 // DBSIZE's count
	UsedMemory          int64 // the Go heap's live objects (INFO used_memory)
	MaxMemory           int64 // --maxmemory, 0: none
	Keyspace            shard.Stats
}

// Stats returns the server's statistics now. Like INFO, it notes the
// heap's size as a candidate peak and samples the command total for
// OpsPerSec.
func (h *Handler) Stats(srv *resp.Server) Stats {
	ss := srv.Stats()
	used, _ := h.heapBytes()
	h.obs.NotePeak(used)
	total := h.totalCmds.Load()
	return Stats{
		Clients:             srv.NumConns(),
		MaxClients:          srv.MaxClients(),
		ConnectionsReceived: ss.ConnectionsReceived,
		RejectedConnections: ss.RejectedConnections,
		CommandsProcessed:   total,
		OpsPerSec:           h.obs.OpsPerSec(total),
		Keys:                int64(h.store.View().Len()),
		UsedMemory:          used,
		MaxMemory:           h.maxMemory.Load(),
		Keyspace:            h.store.Stats(),
	}
}

// PersistenceStats returns the flusher's statistics, and false when the
// server runs in memory only.
func (h *Handler) PersistenceStats() (persist.Stats, bool) {
	if h.cfg.Persistence == nil {
		return persist.Stats{}, false
	}
	return h.cfg.Persistence.Stats(), true
}

// ScriptBusy reports whether a script has run past busy-reply-threshold.
func (h *Handler) ScriptBusy() bool { return h.scripts.Busy() }

// Ready reports whether the node serves what it should (/readyz), by
// cluster.State.Ready; a node outside a cluster is always ready.
func (h *Handler) Ready() (bool, string) {
	if h.cfg.Cluster == nil {
		return true, ""
	}
	link := "connect"
	if r := h.cfg.Replication; r != nil {
		link = r.Link()
	}
	return h.cfg.Cluster.Ready(link)
}
