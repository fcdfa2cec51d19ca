package command

import (
	"fmt"
	"strconv"
	"time"

	"github.com/rlserver/rlserver/resp"
)

// Replication commands (RLREPL, ROLE, WAIT, INFO replication) and the
// interfaces package repl serves them through.

// Replication is what cluster mode's replication (package repl) offers the
// commands, in three parts by the commands that use them.
type Replication interface {
	ReplicationState
	ReplicaLink
	SlotImporter
}

// ReplicationState is the node's replication as INFO, ROLE, WAIT and
// CLUSTER SLOTS read it.
type ReplicationState interface {
	// Offset returns the node's replication offset: the bytes of its
	// shard's change stream it produced (a primary) or applied (a replica).
	Offset() int64
	// Stats returns the node's replication statistics (INFO replication,
	// metrics).
	Stats() ReplicationStats
	// Replicas returns, on a primary, each replica's announced host, port
	// and acknowledged offset (ROLE).
	Replicas() []ReplicaInfo
	// Link returns, on a replica, the state of its primary's link as ROLE
	// words it (connect, sync, connected).
	Link() string
	// Online reports whether the replica id of this node's shard holds a
	// synchronised copy (CLUSTER SLOTS lists it only then).
	Online(id string) bool
	// Wait blocks until n replicas acknowledged every change made before
	// the call, or until timeout (0: none; negative: not at all) or gone
	// is closed (the client left; nil: never), and returns how many did
	// (WAIT).
	Wait(n int, timeout time.Duration, gone <-chan struct{}) int
}

// ReplicaLink is a replica's side of the stream its primary sends
// (RLREPL HELLO, FULL, APPLY, SYNCED, CONTINUE): Hello returns the
// position to resume from (nil: none, a full copy follows), Full begins a
// full copy, Apply applies stream bytes of primary shard i ending at pos
// (-1: a piece of a snapshot), Synced ends a full copy, Continue answers
// that the position offered was taken in the history the primary
// continues (the replica goes on in the primary's stream replid from pos).
type ReplicaLink interface {
	Hello(primaryID, replid string, shards int, inc string) ([]string, error)
	Full(replid string, shards int) error
	Apply(i int, pos int64, raw []byte) error
	Synced() error
	Continue(replid string, pos []uint64) error
}

// SlotImporter is an importing primary's side of a slot move (RLREPL
// IMPORT, MOVE, HANDOVER): Import begins the import from shard from (its
// slots' keys are removed), ImportApply applies stream bytes of shard i of
// the source's n, Handover says the source stopped serving the slots: this
// node serves them to ASKING connections until the topology gives them to
// it.
type SlotImporter interface {
	Import(from, inc string) error
	ImportApply(from string, n, i int, raw []byte) error
	Handover(from, inc string) error
}

// rlreplContainer is RLREPL, the commands a primary sends its replicas
// (see package repl), and its function libraries (FUNCTIONS).
func rlreplContainer() *Command {
	c := container("rlrepl", "server", "Replication stream from a cluster primary to its replica (internal).",
		sub("rlrepl|hello", 6, "Starts a replication link: returns the position the replica resumes from.", cmdReplHello,
			argStr("primary-id"), argStr("replid"), argInt("shards"), argStr("incarnation")),
		sub("rlrepl|full", 4, "Begins a full copy: every key is removed.", cmdReplFull, argStr("replid"), argInt("shards")),
		sub("rlrepl|apply", 5, "Applies change-stream bytes of one primary shard.", cmdReplApply, argInt("shard"), argInt("position"), argStr("entries")),
		sub("rlrepl|synced", 2, "Ends a full copy.", cmdReplSynced),
		sub("rlrepl|continue", -4, "The primary continues the history the replica offered a position in: go on in its own stream.", cmdReplContinue,
			argStr("replid"), many(argInt("position"))),
		sub("rlrepl|functions", 4, "Replaces the function libraries with a FUNCTION DUMP payload's, sent in pieces (MORE, then LAST).", cmdReplFunctions,
			oneof("part", token("MORE"), token("LAST")), argStr("piece")),
		sub("rlrepl|import", 4, "Begins importing the slots moving from a shard: their keys are removed.", cmdReplImport, argStr("from-shard"), argStr("incarnation")),
		sub("rlrepl|move", 6, "Applies change-stream bytes of the slots moving from a shard.", cmdReplMove,
			argStr("from-shard"), argInt("shards"), argInt("shard"), argStr("entries")),
		sub("rlrepl|handover", 4, "The source stopped serving the moving slots: serve them to ASKING connections.", cmdReplHandover, argStr("from-shard"), argStr("incarnation")),
	)
	c.Since = "0.1.0"
	for _, s := range c.Subs {
		s.Since, s.Group = "0.1.0", "server"
		s.Flags = []string{"admin", "noscript", "no_multi", "loading", "stale"}
	}
	return c
}

// replicaLink and importer return the replication a RLREPL command talks
// to, or answer why there is none.
func replicaLink(c *Ctx) ReplicaLink {
	if c.h.cfg.Replication == nil {
		c.err(errNoReplication)
		return nil
	}
	return c.h.cfg.Replication
}

func importer(c *Ctx) SlotImporter {
	if c.h.cfg.Replication == nil {
		c.err(errNoReplication)
		return nil
	}
	return c.h.cfg.Replication
}

func cmdReplHello(c *Ctx, args [][]byte) {
	r := replicaLink(c)
	if r == nil {
		return
	}
	n, ok := resp.ParseInt(args[4])
	if !ok {
		c.err(errNotInt)
		return
	}
	pos, err := r.Hello(string(args[2]), string(args[3]), int(n), string(args[5]))
	if err != nil {
		c.err(errFailed(err))
		return
	}
	c.W.Array(len(pos))
	for _, p := range pos {
		c.W.BulkString(p)
	}
}

// cmdReplFunctions takes the primary's function libraries, whole: a
// FUNCTION DUMP payload, in pieces under proto-max-bulk-len, the last one
// applying them all (loaded without FUNCTION LOAD's time bound: the
// primary ran them).
func cmdReplFunctions(c *Ctx, args [][]byte) {
	if replicaLink(c) == nil {
		return
	}
	last := equalFold(args[2], "LAST")
	if !last && !equalFold(args[2], "MORE") {
		c.err(errSyntax)
		return
	}
	c.sess.fnParts = append(c.sess.fnParts, args[3]...)
	if !last {
		c.W.OK()
		return
	}
	payload := c.sess.fnParts
	c.sess.fnParts = nil
	if err := c.h.scripts.ReplaceFunctions(payload); err != nil {
		c.err(err.Error())
		return
	}
	c.W.OK()
}

func cmdReplContinue(c *Ctx, args [][]byte) {
	r := replicaLink(c)
	if r == nil {
		return
	}
	pos := make([]uint64, 0, len(args)-3)
	for _, a := range args[3:] {
		p, ok := resp.ParseInt(a)
		if !ok || p < 0 {
			c.err(errNotInt)
			return
		}
		pos = append(pos, uint64(p))
	}
	c.okOrErr(r.Continue(string(args[2]), pos))
}

func cmdReplFull(c *Ctx, args [][]byte) {
	r := replicaLink(c)
	if r == nil {
		return
	}
	n, ok := resp.ParseInt(args[3])
	if !ok {
		c.err(errNotInt)
		return
	}
	if err := r.Full(string(args[2]), int(n)); err != nil {
		c.err(errFailed(err))
		return
	}
	c.W.OK()
}

func cmdReplApply(c *Ctx, args [][]byte) {
	r := replicaLink(c)
	if r == nil {
		return
	}
	i, ok1 := resp.ParseInt(args[2])
	pos, ok2 := resp.ParseInt(args[3])
	if !ok1 || !ok2 {
		c.err(errNotInt)
		return
	}
	if err := r.Apply(int(i), pos, args[4]); err != nil {
		c.err(errFailed(err))
		return
	}
	c.W.OK()
}

func cmdReplSynced(c *Ctx, args [][]byte) {
	r := replicaLink(c)
	if r == nil {
		return
	}
	if err := r.Synced(); err != nil {
		c.err(errFailed(err))
		return
	}
	c.W.OK()
}

func cmdReplImport(c *Ctx, args [][]byte) {
	if r := importer(c); r != nil {
		c.okOrErr(r.Import(string(args[2]), string(args[3])))
	}
}

func cmdReplMove(c *Ctx, args [][]byte) {
	r := importer(c)
	if r == nil {
		return
	}
	n, ok1 := resp.ParseInt(args[3])
	i, ok2 := resp.ParseInt(args[4])
	if !ok1 || !ok2 {
		c.err(errNotInt)
		return
	}
	c.okOrErr(r.ImportApply(string(args[2]), int(n), int(i), args[5]))
}

func cmdReplHandover(c *Ctx, args [][]byte) {
	if r := importer(c); r != nil {
		c.okOrErr(r.Handover(string(args[2]), string(args[3])))
	}
}

func (c *Ctx) okOrErr(err error) {
	if err != nil {
		c.err(errFailed(err))
		return
	}
	c.W.OK()
}

// ReplicationStats are a node's replication statistics: INFO replication
// (Fields) and the replication metrics render from them.
type ReplicationStats struct {
	Replica bool
	Offset  int64 // the bytes of the shard's change stream produced or applied
	// A replica's view of its primary and link.
	MasterHost string
	MasterPort int
	LinkUp     bool  // linked and synchronised
	Syncing    bool  // linked, synchronising
	LastIOAgo  int64 // seconds since the primary's last message; -1: none yet
	ReplID     string
	// A primary's replicas and change-stream backlog.
	Replicas    []ReplicaStats
	BacklogSize int
}

// ReplicaStats is one replica as its primary sees it.
type ReplicaStats struct {
	Host   string
	Port   int
	Offset int64 // acknowledged
	Lag    int64 // seconds since its last acknowledgement
}

const noReplID = "0000000000000000000000000000000000000000"

// Fields returns INFO replication's fields, in Redis's order.
func (st ReplicationStats) Fields() [][2]string {
	off := strconv.FormatInt(st.Offset, 10)
	if st.Replica {
		status, sync := "down", "0"
		if st.LinkUp {
			status = "up"
		}
		if st.Syncing {
			sync = "1"
		}
		replid := st.ReplID
		if replid == "" {
			replid = noReplID
		}
		return [][2]string{
			{"role", "slave"}, {"master_host", st.MasterHost}, {"master_port", strconv.Itoa(st.MasterPort)},
			{"master_link_status", status}, {"master_last_io_seconds_ago", strconv.FormatInt(st.LastIOAgo, 10)}, {"master_sync_in_progress", sync},
			{"slave_read_repl_offset", off}, {"slave_repl_offset", off}, {"slave_priority", "100"}, {"slave_read_only", "1"},
			{"replica_announced", "1"}, {"connected_slaves", "0"}, {"master_failover_state", "no-failover"},
			{"master_replid", replid}, {"master_replid2", noReplID},
			{"master_repl_offset", off}, {"second_repl_offset", "-1"},
		}
	}
	out := [][2]string{{"role", "master"}, {"connected_slaves", strconv.Itoa(len(st.Replicas))}}
	for i, r := range st.Replicas {
		out = append(out, [2]string{"slave" + strconv.Itoa(i),
			fmt.Sprintf("ip=%s,port=%d,state=online,offset=%d,lag=%d", r.Host, r.Port, r.Offset, r.Lag)})
	}
	return append(out, [][2]string{
		{"master_failover_state", "no-failover"}, {"master_replid", st.ReplID},
		{"master_replid2", noReplID}, {"master_repl_offset", off},
		{"second_repl_offset", "-1"}, {"repl_backlog_active", "1"},
		{"repl_backlog_size", strconv.Itoa(st.BacklogSize)},
	}...)
}

// ReplicaInfo is one replica as its primary sees it.
type ReplicaInfo struct {
	Host   string
	Port   int
	Offset int64
}

// ReplicationStats returns the node's replication statistics. Without
// replication, a standalone server or a cluster primary is a primary
// without replicas, and a cluster replica one whose link is down (its
// LastIOAgo 0, not -1, as the metrics have read it).
func (h *Handler) ReplicationStats() ReplicationStats {
	if r := h.cfg.Replication; r != nil {
		return r.Stats()
	}
	if st := h.cfg.Cluster; st != nil && st.View().Self.Replica {
		p := st.View().MyShard().Primary
		return ReplicationStats{Replica: true, MasterHost: p.Host, MasterPort: p.Port}
	}
	return ReplicationStats{}
}

// replicationInfo returns INFO replication's fields.
func (c *Ctx) replicationInfo() [][2]string {
	if r := c.h.cfg.Replication; r != nil {
		return r.Stats().Fields()
	}
	if st := c.h.cfg.Cluster; st != nil && st.View().Self.Replica {
		p := st.View().MyShard().Primary
		return [][2]string{{"role", "slave"}, {"master_host", p.Host}, {"master_port", strconv.Itoa(p.Port)},
			{"master_link_status", "down"}, {"connected_slaves", "0"}}
	}
	return [][2]string{{"role", "master"}, {"connected_slaves", "0"}}
}

// ROLE: a primary's offset and replicas, or a replica's primary and link.
func cmdRole(c *Ctx, args [][]byte) {
	st := c.h.cfg.Cluster
	if st == nil || !st.View().Self.Replica {
		var reps []ReplicaInfo
		if r := c.h.cfg.Replication; r != nil {
			reps = r.Replicas()
		}
		c.W.Array(3)
		c.W.BulkString("master")
		c.W.Int(c.replOffset())
		c.W.Array(len(reps))
		for _, r := range reps {
			c.W.Array(3)
			c.W.BulkString(r.Host)
			c.W.BulkString(strconv.Itoa(r.Port))
			c.W.BulkString(strconv.FormatInt(r.Offset, 10))
		}
		return
	}
	v := st.View()
	p := v.MyShard().Primary
	link := "connect"
	if r := c.h.cfg.Replication; r != nil {
		link = r.Link()
	}
	c.W.Array(5)
	c.W.BulkString("slave")
	c.W.BulkString(p.Host)
	c.W.Int(int64(p.Port))
	c.W.BulkString(link)
	c.W.Int(c.replOffset())
}

// WAIT numreplicas timeout
func cmdWait(c *Ctx, args [][]byte) {
	n, ok1 := resp.ParseInt(args[1])
	ms, ok2 := resp.ParseInt(args[2])
	if !ok1 || !ok2 {
		c.err(errNotInt)
		return
	}
	if ms < 0 {
		c.err(errTimeoutNegative)
		return
	}
	st, r := c.h.cfg.Cluster, c.h.cfg.Replication
	if st != nil && st.View().Self.Replica {
		c.err(errWaitOnReplica)
		return
	}
	if r == nil || n <= 0 || c.inExec {
		// Nothing to wait for (or, inside EXEC, no waiting, as Redis):
		// the replicas that already acknowledged everything.
		got := 0
		if r != nil {
			got = r.Wait(int(max(n, 0)), -1, nil)
		}
		c.W.Int(int64(got))
		return
	}
	c.W.Block(func(gone <-chan struct{}) {
		c.W.Int(int64(r.Wait(int(n), time.Duration(ms)*time.Millisecond, gone)))
	})
}
