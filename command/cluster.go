package command

import (
	"strconv"
	"strings"
	"time"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/resp"
)

// CLUSTER's subcommands and the connection commands that only mean
// something in a cluster (READONLY, READWRITE, ASKING).

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
