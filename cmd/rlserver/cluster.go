package main

import (
	"errors"
	"fmt"
	"log"
	"net"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rlserver/rlserver/clock"
	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/command"
	"github.com/rlserver/rlserver/coord"
	"github.com/rlserver/rlserver/repl"
	"github.com/rlserver/rlserver/resp"
	"github.com/rlserver/rlserver/script"
	"github.com/rlserver/rlserver/shard"
)

// startCluster puts a listening server in cluster mode: with the static
// topology of --cluster-config (the node found by its announced address,
// its id checked against the one kept in --dir), or through etcd
// (--cluster-etcd: the node registers with the id kept in --dir and
// follows the topology the elected coordinator writes). The commands get
// the state before they serve; stop leaves etcd.
func startCluster(o *options, srv *resp.Server, commands *command.Handler, store *shard.Store, clock *clock.Clock, scripts *script.Engine) (*repl.Node, func(), error) {
	port := o.announcePort
	if port == 0 {
		port = srv.Addr().(*net.TCPAddr).Port
	}
	var st *cluster.State
	var err error
	if o.clusterConfig != "" {
		if st, err = cluster.NewStatic(o.clusterConfig, o.announceHost, port); err != nil {
			return nil, nil, fmt.Errorf("--cluster-config: %v", err)
		}
		if o.dir != "" {
			if _, err := cluster.LoadNodeID(o.dir, st.View().Self.Node.ID); err != nil {
				return nil, nil, err
			}
		}
	} else {
		id := cluster.NewID()
		if o.dir != "" {
			if id, err = cluster.LoadNodeID(o.dir, ""); err != nil {
				return nil, nil, err
			}
		}
		// A boot id of its own per process: the coordinator tells a restart
		// (whose memory holds only what it restored) from a lapsed lease.
		if st, err = cluster.NewDynamic(cluster.Node{ID: id, Host: o.announceHost, Port: port, Boot: cluster.NewID()[:16]}); err != nil {
			return nil, nil, err
		}
	}
	v := st.View()
	// Slot moves report to the coordinator through etcd, which starts
	// after replication does.
	var co atomic.Pointer[coord.Coord]
	moved := func(to, from string) error {
		if c := co.Load(); c != nil {
			return c.ReportMoved(to, from)
		}
		return errors.New("not connected to etcd yet")
	}
	publish := func() {
		if c := co.Load(); c != nil {
			c.Publish()
		}
	}
	r := repl.New(repl.Config{Store: store, Clock: clock, Cluster: st, User: o.masterUser, Password: o.masterAuth, Dir: o.dir, Logf: log.Printf, Moved: moved, CopyChanged: publish, Functions: scripts})
	o.replication.Store(r)
	commands.SetCluster(st, r)
	if o.clusterEtcd == "" {
		role := "primary"
		if v.Self.Replica {
			role = "replica"
		}
		log.Printf("cluster: node %s (%s:%d), %s of shard %d, topology version %d", v.Self.Node.ID, o.announceHost, port, role, v.Self.Shard, v.Topo.Version)
		return r, nil, nil
	}
	c, err := coord.Start(coord.Config{Endpoints: strings.Split(o.clusterEtcd, ","), Name: o.clusterName,
		Replicas: o.clusterReplicas, TTL: time.Duration(o.nodeTimeoutMs) * time.Millisecond,
		Self: v.Self.Node, Offset: r.Offset, Copy: r.Copy, Logf: log.Printf}, st)
	if err != nil {
		r.Close()
		return nil, nil, fmt.Errorf("--cluster-etcd: %v", err)
	}
	co.Store(c)
	commands.SetForget(c.Forget)
	commands.SetForce(c.Force)
	log.Printf("cluster: node %s (%s:%d) registered in etcd cluster %q", v.Self.Node.ID, o.announceHost, port, o.clusterName)
	return r, c.Close, nil
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
