package main

import (
	"fmt"
	"log"
	"net"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/command"
	"github.com/rlserver/rlserver/repl"
	"github.com/rlserver/rlserver/resp"
	"github.com/rlserver/rlserver/shard"
)

// startCluster puts a listening server in cluster mode with the static
// topology of --cluster-config: it finds the node by its announced address,
// checks the node id kept in --dir against the topology's, and hands the
// state to the commands before they serve.
func startCluster(o *options, srv *resp.Server, commands *command.Handler, store *shard.Store, clock *shard.Clock) (*repl.Node, error) {
	port := o.announcePort
	if port == 0 {
		port = srv.Addr().(*net.TCPAddr).Port
	}
	st, err := cluster.NewStatic(o.clusterConfig, o.announceHost, port)
	if err != nil {
		return nil, fmt.Errorf("--cluster-config: %v", err)
	}
	v := st.View()
	if o.dir != "" {
		if _, err := cluster.LoadNodeID(o.dir, v.Self.Node.ID); err != nil {
			return nil, err
		}
	}
	role := "primary"
	if v.Self.Replica {
		role = "replica"
	}
	log.Printf("cluster: node %s (%s:%d), %s of shard %d, topology version %d", v.Self.Node.ID, o.announceHost, port, role, v.Self.Shard, v.Topo.Version)
	r := repl.New(repl.Config{Store: store, Clock: clock, Cluster: st, User: o.masterUser, Password: o.masterAuth, Dir: o.dir, Logf: log.Printf})
	o.replication.Store(r)
	commands.SetCluster(st, r)
	return r, nil
}

// reloadTopology adopts a newer topology file (SIGHUP).
func reloadTopology(st *cluster.State) {
	old := st.View().Topo.Version
	switch adopted, err := st.Reload(); {
	case err != nil:
		log.Printf("error: SIGHUP: reloading the topology: %v (version %d stays)", err, old)
	case !adopted:
		log.Printf("SIGHUP: the topology file's version is not newer than %d: nothing to adopt", old)
	default:
		log.Printf("SIGHUP: topology version %d adopted", st.View().Topo.Version)
	}
}
