package command

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/resp"
)

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
// (see package repl).
func rlreplContainer() *Command {
	c := container("rlrepl", "server", "Replication stream from a cluster primary to its replica (internal).",
		sub("rlrepl|hello", 6, "Starts a replication link: returns the position the replica resumes from.", cmdReplHello,
			argStr("primary-id"), argStr("replid"), argInt("shards"), argStr("incarnation")),
		sub("rlrepl|full", 4, "Begins a full copy: every key is removed.", cmdReplFull, argStr("replid"), argInt("shards")),
		sub("rlrepl|apply", 5, "Applies change-stream bytes of one primary shard.", cmdReplApply, argInt("shard"), argInt("position"), argStr("entries")),
		sub("rlrepl|synced", 2, "Ends a full copy.", cmdReplSynced),
		sub("rlrepl|continue", -4, "The primary continues the history the replica offered a position in: go on in its own stream.", cmdReplContinue,
			argStr("replid"), many(argInt("position"))),
		sub("rlrepl|import", 4, "Begins importing the slots moving from a shard: their keys are removed.", cmdReplImport, argStr("from-shard"), argStr("incarnation")),
		sub("rlrepl|move", 6, "Applies change-stream bytes of the slots moving from a shard.", cmdReplMove,
			argStr("from-shard"), argInt("shards"), argInt("shard"), argStr("entries")),
		sub("rlrepl|handover", 4, "The source stopped serving the moving slots: serve them to ASKING connections.", cmdReplHandover, argStr("from-shard"), argStr("incarnation")),
	)
	c.Since = "0.1.0"
	for _, s := range c.Subs {
		s.Since, s.Group = "0.1.0", "server"
		s.Flags = []string{"admin", "noscript", "no_multi", "loading", "stale"}
		s.ACL = []string{"admin", "slow", "dangerous"}
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

// clusterContainer is CLUSTER's table row. A standalone server answers
// every subcommand as Redis does without cluster support.
func clusterContainer() *Command {
	// admin: an operator's command, not a client's. etcd: it asks etcd (up
	// to 2 s), so it is refused inside EXEC, which holds every shard lock:
	// every decision would wait for it. since: rlserver's own (else 3.0.0).
	subs := []struct {
		name, summary string
		arity         int
		run           func(c *Ctx, args [][]byte)
		args          []Arg
		admin, etcd   bool
		since         string
	}{
		{"slots", "Returns the mapping of cluster slots to nodes.", 2, cmdClusterSlots, nil, false, false, ""},
		{"shards", "Returns the mapping of cluster slots to shards.", 2, cmdClusterShards, nil, false, false, ""},
		{"nodes", "Returns the cluster configuration for a node.", 2, cmdClusterNodes, nil, false, false, ""},
		{"myid", "Returns the ID of a node.", 2, cmdClusterMyID, nil, false, false, ""},
		{"myshardid", "Returns the shard ID of a node.", 2, cmdClusterMyShardID, nil, false, false, ""},
		{"info", "Returns information about the state of a node.", 2, cmdClusterInfo, nil, false, false, ""},
		{"keyslot", "Returns the hash slot for a key.", 3, cmdClusterKeySlot, []Arg{argStr("key")}, false, false, ""},
		{"countkeysinslot", "Returns the number of keys in a hash slot.", 3, cmdClusterCountKeys, []Arg{argInt("slot")}, false, false, ""},
		{"getkeysinslot", "Returns the key names in a hash slot.", 4, cmdClusterGetKeys, []Arg{argInt("slot"), argInt("count")}, false, false, ""},
		{"reload", "Adopts a newer version of the static topology file (--cluster-config).", 2, cmdClusterReload, nil, true, false, "0.1.0"},
		{"forget", "Removes a node that will not come back from the cluster.", 3, cmdClusterForget, []Arg{argStr("node-id")}, true, true, ""},
		{"failover", "Forces the promotion of a replica whose shard is down (FORCE).", -2, cmdClusterFailover, []Arg{opt(oneof("options", token("FORCE"), token("TAKEOVER")))}, true, true, ""},
	}
	c := container("cluster", "cluster", "A container for Redis Cluster commands.")
	for _, s := range subs {
		run := s.run
		sc := sub("cluster|"+s.name, s.arity, s.summary, func(c *Ctx, args [][]byte) {
			if c.h.cfg.Cluster == nil {
				c.err(errClusterDisabled)
				return
			}
			run(c, args)
		}, s.args...)
		sc.Group, sc.Since = "cluster", "3.0.0"
		if s.since != "" {
			sc.Since = s.since
		}
		if s.admin {
			sc.Flags = append(sc.Flags, "admin")
			if s.etcd {
				sc.Flags = append(sc.Flags, "no_multi")
			}
			sc.ACL = append(sc.ACL, "admin", "dangerous")
		}
		c.Subs = append(c.Subs, sc)
	}
	// HELP lists the subcommands, in cluster mode only.
	help := helpFor(c)
	run := help.Run
	help.Run = func(ctx *Ctx, args [][]byte) {
		if ctx.h.cfg.Cluster == nil {
			ctx.err(errClusterDisabled)
			return
		}
		run(ctx, args)
	}
	help.Group, help.Since = "cluster", "5.0.0"
	c.Subs = append(c.Subs, help)
	return c
}

// clusterOnly is a connection command that only means something in a
// cluster (READONLY, READWRITE, ASKING).
func clusterOnly(name, summary string, run func(c *Ctx, args [][]byte)) *Command {
	c := conn(name, 1, summary, func(c *Ctx, args [][]byte) {
		if c.h.cfg.Cluster == nil {
			c.err(errClusterDisabled)
			return
		}
		run(c, args)
	})
	c.Group, c.Since = "cluster", "3.0.0"
	return c
}

func cmdReadOnly(c *Ctx, args [][]byte)  { c.sess.readOnly = true; c.W.OK() }
func cmdReadWrite(c *Ctx, args [][]byte) { c.sess.readOnly = false; c.W.OK() }
func cmdAsking(c *Ctx, args [][]byte)    { c.W.OK() }

// route decides, in cluster mode, whether this node runs a command with
// keys, as Redis's getNodeByQuery: every key in one slot (CROSSSLOT), the
// slot served (CLUSTERDOWN), every slot served, and the slot this node's
// shard's; a replica runs reads of its shard only for a READONLY
// connection, and redirects the rest to the primary (MOVED). EXEC is
// decided on the keys of the whole transaction. It returns the error to
// answer, or "".
func (c *Ctx) route(cmd *Command, args [][]byte) string {
	v := c.h.cfg.Cluster.View()
	if k := cmd.Keys; k.First == 1 && k.Last == 1 && k.Find == nil {
		// One key, the first argument (every limiter but CL.ALL): no
		// key list to build.
		slot := cluster.Slot(args[1])
		c.slotKey, c.slot = args[1], slot
		return c.routeSlot(v, slot, cmd.write)
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
	return c.routeSlot(v, slot, write)
}

// routeSlot is route's decision for a command on slot.
func (c *Ctx) routeSlot(v *cluster.View, slot int, write bool) string {
	if v.Topo.Owner(slot) < 0 {
		return errSlotUnbound
	}
	owner := v.Topo.Owner(slot)
	if !v.Topo.Complete() || v.Topo.Shards[owner].Down || c.h.cfg.Cluster.Fenced() {
		return errClusterDown
	}
	if g := c.h.cfg.Cluster.Gate(); g != nil && !v.Self.Replica {
		// A slot on the move: the source's primary sends what it handed
		// over to the importing primary, which serves it. It does so
		// without ASKING too: the source no longer serves the slot, and a
		// client redirected here by a node already on the next topology
		// must not be sent back to the source while this node is not yet
		// (an exchange of MOVED that exhausts the client's redirects).
		if owner == v.Self.Shard && g.Handed.Has(slot) {
			return errAsk(slot, g.To.Addr())
		}
		if g.Imported.Has(slot) {
			return ""
		}
	}
	if owner == v.Self.Shard && (!v.Self.Replica || c.sess.readOnly && !write) {
		return ""
	}
	p, _ := v.Primary(slot)
	return errMoved(slot, p.Addr())
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
func (c *Ctx) holdMoving(cmd *Command, args [][]byte) {
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
func (c *Ctx) retryHeld(cmd *Command, args [][]byte, last bool) (held bool) {
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

// online reports whether a replica is listed by CLUSTER SLOTS and shown
// healthy by CLUSTER SHARDS: one of this node's shard when replication says
// it is synchronised (a replica knows that of itself); one of another
// shard always, a static topology telling nothing more.
func (c *Ctx) online(v *cluster.View, shard int, n cluster.Node) bool {
	if shard != v.Self.Shard || c.h.cfg.Replication == nil {
		return true
	}
	return c.h.cfg.Replication.Online(n.ID)
}

func (c *Ctx) replOffset() int64 {
	if r := c.h.cfg.Replication; r != nil {
		return r.Offset()
	}
	return 0
}

// CLUSTER SLOTS: per slot range, its primary then its synchronised
// replicas, each as ip, port, id and a map of further endpoints (none).
func cmdClusterSlots(c *Ctx, args [][]byte) {
	v := c.h.cfg.Cluster.View()
	type entry struct {
		r     cluster.Range
		nodes []cluster.Node
	}
	var out []entry
	for i, s := range v.Topo.Shards {
		nodes := []cluster.Node{s.Primary}
		for _, r := range s.Replicas {
			if c.online(v, i, r) {
				nodes = append(nodes, r)
			}
		}
		for _, r := range v.Topo.Ranges(i) {
			out = append(out, entry{r, nodes})
		}
	}
	// Redis lists the ranges in slot order.
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].r[0] < out[j-1].r[0]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	c.W.Array(len(out))
	for _, e := range out {
		c.W.Array(2 + len(e.nodes))
		c.W.Int(int64(e.r[0]))
		c.W.Int(int64(e.r[1]))
		for _, n := range e.nodes {
			c.W.Array(4)
			c.W.BulkString(n.Host)
			c.W.Int(int64(n.Port))
			c.W.BulkString(n.ID)
			c.W.Map(0)
		}
	}
}

// CLUSTER SHARDS: per shard, its slot ranges (flat) and its nodes.
func cmdClusterShards(c *Ctx, args [][]byte) {
	v := c.h.cfg.Cluster.View()
	off := c.replOffset()
	c.W.Array(len(v.Topo.Shards))
	for i, s := range v.Topo.Shards {
		c.W.Map(2)
		c.W.BulkString("slots")
		rs := v.Topo.Ranges(i)
		c.W.Array(2 * len(rs))
		for _, r := range rs {
			c.W.Int(int64(r[0]))
			c.W.Int(int64(r[1]))
		}
		c.W.BulkString("nodes")
		c.W.Array(1 + len(s.Replicas))
		node := func(n cluster.Node, role string, health string) {
			c.W.Map(7)
			c.W.BulkString("id")
			c.W.BulkString(n.ID)
			c.W.BulkString("port")
			c.W.Int(int64(n.Port))
			c.W.BulkString("ip")
			c.W.BulkString(n.Host)
			c.W.BulkString("endpoint")
			c.W.BulkString(n.Host)
			c.W.BulkString("role")
			c.W.BulkString(role)
			c.W.BulkString("replication-offset")
			o := int64(0)
			if i == v.Self.Shard {
				o = off
			}
			c.W.Int(o)
			c.W.BulkString("health")
			c.W.BulkString(health)
		}
		if s.Down {
			node(s.Primary, "master", "fail")
		} else {
			node(s.Primary, "master", "online")
		}
		for _, r := range s.Replicas {
			health := "online"
			if !c.online(v, i, r) {
				health = "loading"
			}
			node(r, "replica", health)
		}
	}
}

// CLUSTER NODES: one line per node, as Redis writes nodes.conf. rlserver
// has no cluster bus, so the bus port is 0.
func cmdClusterNodes(c *Ctx, args [][]byte) {
	c.W.BulkString(clusterNodes(c.h.cfg.Cluster.View()))
}

func clusterNodes(v *cluster.View) string {
	var b strings.Builder
	epoch := strconv.FormatInt(v.Topo.Version, 10)
	now := strconv.FormatInt(time.Now().UnixMilli(), 10)
	line := func(n cluster.Node, primary string, slots []cluster.Range, down bool) {
		flags, pong, link := "master", now, " connected"
		if primary != "-" {
			flags = "slave"
		} else if down {
			flags, link = "master,fail", " disconnected"
		}
		if n.ID == v.Self.Node.ID {
			flags, pong = "myself,"+flags, "0"
		}
		b.WriteString(n.ID + " " + n.Addr() + "@0 " + flags + " " + primary + " 0 " + pong + " " + epoch + link)
		for _, r := range slots {
			b.WriteString(" " + strconv.Itoa(r[0]))
			if r[1] != r[0] {
				b.WriteString("-" + strconv.Itoa(r[1]))
			}
		}
		b.WriteString("\n")
	}
	for i, s := range v.Topo.Shards {
		line(s.Primary, "-", v.Topo.Ranges(i), s.Down)
		for _, r := range s.Replicas {
			line(r, s.Primary.ID, nil, false)
		}
	}
	return b.String()
}

func cmdClusterMyID(c *Ctx, args [][]byte) {
	c.W.BulkString(c.h.cfg.Cluster.View().Self.Node.ID)
}

func cmdClusterMyShardID(c *Ctx, args [][]byte) {
	c.W.BulkString(c.h.cfg.Cluster.View().MyShard().ID)
}

func cmdClusterInfo(c *Ctx, args [][]byte) {
	var b strings.Builder
	for _, f := range clusterInfo(c.h.cfg.Cluster.View()) {
		b.WriteString(f[0] + ":" + f[1] + "\r\n")
	}
	c.W.Verbatim(b.String())
}

func clusterInfo(v *cluster.View) [][2]string {
	state := "ok"
	size, failed := 0, 0
	for i, s := range v.Topo.Shards {
		if rs := v.Topo.Ranges(i); len(rs) > 0 {
			size++
			if s.Down { // its primary is gone and no replica may replace it
				for _, r := range rs {
					failed += r[1] - r[0] + 1
				}
			}
		}
	}
	if !v.Topo.Complete() || failed > 0 {
		state = "fail"
	}
	itoa := strconv.Itoa
	epoch := strconv.FormatInt(v.Topo.Version, 10)
	return [][2]string{
		{"cluster_state", state},
		{"cluster_slots_assigned", itoa(v.Topo.Assigned())},
		{"cluster_slots_ok", itoa(v.Topo.Assigned() - failed)},
		{"cluster_slots_pfail", "0"},
		{"cluster_slots_fail", itoa(failed)},
		{"cluster_known_nodes", itoa(v.Topo.Nodes())},
		{"cluster_size", itoa(size)},
		{"cluster_current_epoch", epoch},
		{"cluster_my_epoch", epoch},
		{"cluster_stats_messages_sent", "0"},
		{"cluster_stats_messages_received", "0"},
		{"total_cluster_links_buffer_limit_exceeded", "0"},
	}
}

func cmdClusterKeySlot(c *Ctx, args [][]byte) { c.W.Int(int64(cluster.Slot(args[2]))) }

func cmdClusterCountKeys(c *Ctx, args [][]byte) {
	slot, ok := resp.ParseInt(args[2])
	if !ok {
		c.err(errNotInt)
		return
	}
	if slot < 0 || slot >= cluster.Slots {
		c.err(errInvalidSlot)
		return
	}
	c.W.Int(int64(c.keys().CountKeysInSlot(int(slot))))
}

func cmdClusterGetKeys(c *Ctx, args [][]byte) {
	n, ok1 := resp.ParseInt(args[3])
	slot, ok2 := resp.ParseInt(args[2])
	if !ok1 || !ok2 {
		c.err(errNotInt)
		return
	}
	if n < 0 || slot < 0 || slot >= cluster.Slots {
		c.err(errInvalidSlotCount)
		return
	}
	keys := c.keys().KeysInSlot(int(slot), int(min(n, 1<<30)), c.Now())
	c.W.Array(len(keys))
	for _, k := range keys {
		c.W.BulkString(k)
	}
}

// CLUSTER RELOAD adopts the topology file if its version is newer.
func cmdClusterReload(c *Ctx, args [][]byte) {
	st := c.h.cfg.Cluster
	if st.File() == "" {
		c.err("ERR this node's topology is not a static file (--cluster-config)")
		return
	}
	old := st.View().Topo.Version
	adopted, err := st.Reload()
	switch {
	case err != nil:
		c.err(errFailed(err))
	case !adopted:
		c.err("ERR the topology file's version is not newer than the current one (" + strconv.FormatInt(old, 10) + ")")
	default:
		c.W.OK()
	}
}

// CLUSTER FORGET node-id: in an etcd-run cluster, the coordinator removes
// the node (which must not be running): a replica leaves its shard; a
// primary's slots, when no replica is left to promote, go to the other
// shards without their states.
func cmdClusterForget(c *Ctx, args [][]byte) {
	if c.h.cfg.Forget == nil {
		c.err("ERR this node's topology is a static file: remove the node from it (--cluster-config)")
		return
	}
	id := strings.ToLower(string(args[2]))
	if !cluster.ValidID(id) {
		c.err("ERR Unknown node " + string(args[2]))
		return
	}
	c.okOrErr(c.h.cfg.Forget(id))
}

// CLUSTER FAILOVER FORCE, on a replica of a shard the coordinator marked
// down (its primary gone, no replica eligible): asks the coordinator to
// promote this replica all the same, accepting the loss of the decisions
// its copy lacks. Failovers are otherwise the coordinator's alone: a plain
// or TAKEOVER failover is refused.
func cmdClusterFailover(c *Ctx, args [][]byte) {
	if len(args) != 3 || !strings.EqualFold(string(args[2]), "force") {
		c.err("ERR only CLUSTER FAILOVER FORCE is supported: the coordinator fails primaries over by itself")
		return
	}
	if c.h.cfg.Force == nil {
		c.err("ERR this node's topology is a static file: change the roles in it (--cluster-config)")
		return
	}
	c.okOrErr(c.h.cfg.Force())
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
