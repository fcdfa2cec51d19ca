// Package coord forms a cluster through etcd: every node registers itself
// under a lease, one node elected through etcd (the coordinator) assigns
// roles and slots and writes the topology document with a compare-and-swap
// on its revision, and every node adopts the newest version it sees. No
// decision ever goes through etcd; it only carries membership and the
// topology.
package coord

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/rlserver/rlserver/cluster"
)

// Config configures a node's part in an etcd-run cluster.
type Config struct {
	Endpoints []string
	Name      string // the cluster's name: its keys live under /rlserver/<name>/
	Replicas  int    // replicas wanted per primary
	Self      cluster.Node
	// TTL is the membership lease's time to live. Default 5 s.
	TTL time.Duration
	// Settle is how long the member set must stay unchanged before the
	// first topology is formed. Default 2 s.
	Settle time.Duration
	Logf   func(format string, args ...any)
}

// Member is what a node registers about itself.
type Member struct {
	ID   string `json:"id"`
	Host string `json:"host"`
	Port int    `json:"port"`
}

// Coord is a running node's membership, campaign and topology watch.
type Coord struct {
	cfg    Config
	st     *cluster.State
	cli    *clientv3.Client
	sess   *concurrency.Session
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func (c *Coord) prefix() string   { return "/rlserver/" + c.cfg.Name + "/" }
func (c *Coord) topoKey() string  { return c.prefix() + "topology" }
func (c *Coord) nodesKey() string { return c.prefix() + "nodes/" }

// Start connects to etcd, registers the node under a lease, follows the
// topology document into st, and campaigns to coordinate.
func Start(cfg Config, st *cluster.State) (*Coord, error) {
	if cfg.TTL <= 0 {
		cfg.TTL = 5 * time.Second
	}
	if cfg.Settle <= 0 {
		cfg.Settle = 2 * time.Second
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: cfg.Endpoints, DialTimeout: 5 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("etcd: %w", err)
	}
	sess, err := concurrency.NewSession(cli, concurrency.WithTTL(max(1, int(cfg.TTL/time.Second))))
	if err != nil {
		cli.Close()
		return nil, fmt.Errorf("etcd: %w", err)
	}
	c := &Coord{cfg: cfg, st: st, cli: cli, sess: sess}
	me, _ := json.Marshal(Member{ID: cfg.Self.ID, Host: cfg.Self.Host, Port: cfg.Self.Port})
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	if _, err := cli.Put(ctx, c.nodesKey()+cfg.Self.ID, string(me), clientv3.WithLease(sess.Lease())); err != nil {
		c.Close()
		return nil, fmt.Errorf("etcd: registering: %w", err)
	}
	c.wg.Add(2)
	go func() { defer c.wg.Done(); c.follow(ctx) }()
	go func() { defer c.wg.Done(); c.campaign(ctx) }()
	return c, nil
}

// Close leaves: the lease is revoked, so the node's registration goes.
func (c *Coord) Close() {
	c.cancel()
	c.sess.Close()
	c.wg.Wait()
	c.cli.Close()
}

// follow adopts every newer topology the document holds.
func (c *Coord) follow(ctx context.Context) {
	adopt := func(b []byte) {
		t, err := cluster.Parse(b)
		if err != nil {
			c.cfg.Logf("cluster: topology in etcd is invalid: %v", err)
			return
		}
		if adopted, err := c.st.Adopt(t); err != nil {
			if _, named := t.Find(c.cfg.Self.Host, c.cfg.Self.Port); named {
				c.cfg.Logf("cluster: topology version %d not adopted: %v", t.Version, err)
			}
		} else if adopted {
			v := c.st.View()
			role := "primary"
			if v.Self.Replica {
				role = "replica"
			}
			c.cfg.Logf("cluster: topology version %d adopted: %s of shard %d", t.Version, role, v.Self.Shard)
		}
	}
	for ctx.Err() == nil {
		resp, err := c.cli.Get(ctx, c.topoKey())
		if err != nil {
			sleep(ctx, time.Second)
			continue
		}
		if len(resp.Kvs) > 0 {
			adopt(resp.Kvs[0].Value)
		}
		for w := range c.cli.Watch(ctx, c.topoKey(), clientv3.WithRev(resp.Header.Revision+1)) {
			for _, ev := range w.Events {
				if ev.Type == clientv3.EventTypePut {
					adopt(ev.Kv.Value)
				}
			}
		}
	}
}

// campaign waits to be elected, then coordinates until the session ends.
func (c *Coord) campaign(ctx context.Context) {
	e := concurrency.NewElection(c.sess, c.prefix()+"coordinator")
	if err := e.Campaign(ctx, c.cfg.Self.ID); err != nil {
		return
	}
	c.cfg.Logf("cluster: this node coordinates cluster %q", c.cfg.Name)
	c.coordinate(ctx)
}

// coordinate keeps the topology in line with the members: the first one
// once the member set has settled, then each newcomer placed.
func (c *Coord) coordinate(ctx context.Context) {
	var last []Member
	changed := time.Now()
	tick := time.NewTicker(c.cfg.Settle / 4)
	defer tick.Stop()
	for ctx.Err() == nil {
		members, err := c.members(ctx)
		if err == nil {
			if !slices.Equal(members, last) {
				last, changed = members, time.Now()
			}
			if err := c.step(ctx, members, time.Since(changed) >= c.cfg.Settle); err != nil {
				c.cfg.Logf("cluster: coordinating: %v", err)
			}
		}
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
	}
}

func (c *Coord) members(ctx context.Context) ([]Member, error) {
	resp, err := c.cli.Get(ctx, c.nodesKey(), clientv3.WithPrefix())
	if err != nil {
		return nil, err
	}
	var out []Member
	for _, kv := range resp.Kvs {
		var m Member
		if json.Unmarshal(kv.Value, &m) == nil && cluster.ValidID(m.ID) {
			out = append(out, m)
		}
	}
	slices.SortFunc(out, func(a, b Member) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// step writes the next topology if the members call for one.
func (c *Coord) step(ctx context.Context, members []Member, settled bool) error {
	resp, err := c.cli.Get(ctx, c.topoKey())
	if err != nil {
		return err
	}
	var cur *cluster.Topology
	var rev int64
	if len(resp.Kvs) > 0 {
		rev = resp.Kvs[0].ModRevision
		if cur, err = cluster.Parse(resp.Kvs[0].Value); err != nil {
			return err
		}
	}
	var next *cluster.Topology
	switch {
	case cur == nil && settled && len(members) > 0:
		next, err = Form(members, c.cfg.Replicas)
	case cur != nil:
		next, err = Place(cur, members)
	}
	if err != nil || next == nil {
		return err
	}
	b, err := json.Marshal(next)
	if err != nil {
		return err
	}
	txn, err := c.cli.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(c.topoKey()), "=", rev)).
		Then(clientv3.OpPut(c.topoKey(), string(b))).Commit()
	if err != nil {
		return err
	}
	if txn.Succeeded {
		c.cfg.Logf("cluster: topology version %d written (%d shards, %d nodes)", next.Version, len(next.Shards), next.Nodes())
	}
	return nil
}

// Form lays out a first topology: members sorted by id, as many primaries
// as there are groups of 1+replicas (at least one), the slots spread
// evenly over them, and the rest as replicas, each given to the primary
// with the fewest, on another host than its primary's when one allows it.
func Form(members []Member, replicas int) (*cluster.Topology, error) {
	if len(members) == 0 {
		return nil, errors.New("no members")
	}
	np := max(1, len(members)/(1+max(replicas, 0)))
	shards := make([]cluster.Shard, np)
	for i := range shards {
		m := members[i]
		lo, hi := i*cluster.Slots/np, (i+1)*cluster.Slots/np-1
		shards[i] = cluster.Shard{Slots: []cluster.Range{{lo, hi}}, Primary: cluster.Node{ID: m.ID, Host: m.Host, Port: m.Port}}
	}
	t := &cluster.Topology{Version: 1, Shards: shards}
	for _, m := range members[np:] {
		addReplica(t, m)
	}
	return cluster.NewTopology(1, t.Shards)
}

// Place returns the next version of cur with each member it does not name
// added as a replica (where fewest are), or nil when there is none.
func Place(cur *cluster.Topology, members []Member) (*cluster.Topology, error) {
	known := map[string]bool{}
	for _, s := range cur.Shards {
		known[s.Primary.ID] = true
		for _, r := range s.Replicas {
			known[r.ID] = true
		}
	}
	shards := make([]cluster.Shard, len(cur.Shards))
	for i, s := range cur.Shards {
		s.Replicas = slices.Clone(s.Replicas)
		shards[i] = s
	}
	t := &cluster.Topology{Shards: shards}
	added := false
	for _, m := range members {
		if !known[m.ID] {
			addReplica(t, m)
			added = true
		}
	}
	if !added {
		return nil, nil
	}
	return cluster.NewTopology(cur.Version+1, t.Shards)
}

// addReplica gives m to the shard with the fewest replicas, preferring one
// whose primary is on another host.
func addReplica(t *cluster.Topology, m Member) {
	best := -1
	for i, s := range t.Shards {
		if best < 0 {
			best = i
			continue
		}
		b := t.Shards[best]
		sameB, same := b.Primary.Host == m.Host, s.Primary.Host == m.Host
		if same != sameB {
			if !same {
				best = i
			}
			continue
		}
		if len(s.Replicas) < len(b.Replicas) {
			best = i
		}
	}
	s := &t.Shards[best]
	s.Replicas = append(s.Replicas, cluster.Node{ID: m.ID, Host: m.Host, Port: m.Port})
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
