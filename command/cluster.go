package command

import "github.com/rlserver/rlserver/resp"

// clusterContainer is CLUSTER's table row. Cluster mode is not built yet:
// a standalone server answers every subcommand as Redis does without
// cluster support.
func clusterContainer() *Command {
	subs := []struct{ name, summary string }{
		{"slots", "Returns the mapping of cluster slots to nodes."},
		{"shards", "Returns the mapping of cluster slots to shards."},
		{"nodes", "Returns the cluster configuration for a node."},
		{"myid", "Returns the ID of a node."},
		{"myshardid", "Returns the shard ID of a node."},
		{"info", "Returns information about the state of a node."},
		{"keyslot", "Returns the hash slot for a key."},
		{"countkeysinslot", "Returns the number of keys in a hash slot."},
		{"getkeysinslot", "Returns the key names in a hash slot."},
		{"reload", "Adopts a newer version of the static topology file."},
		{"help", "Shows helpful text about the different subcommands."},
	}
	c := container("cluster", "cluster", "A container for Redis Cluster commands.")
	for _, s := range subs {
		sc := sub("cluster|"+s.name, -2, s.summary, cmdClusterDisabled)
		sc.Group, sc.Since = "cluster", "3.0.0"
		c.Subs = append(c.Subs, sc)
	}
	return c
}

// clusterOnly is a connection command that only means something in a
// cluster (READONLY, READWRITE, ASKING).
func clusterOnly(name, summary string) *Command {
	c := conn(name, 1, summary, cmdClusterDisabled)
	c.Group, c.Since = "cluster", "3.0.0"
	return c
}

func cmdClusterDisabled(c *Ctx, args [][]byte) { c.err(resp.ErrClusterDisabled) }
