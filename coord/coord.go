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
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
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
	// TTL is the membership lease's time to live: how long a dead node
	// keeps its slots, and about how long a failover takes. Default 3 s.
	TTL time.Duration
	// Settle is how long the member set must stay unchanged before the
	// first topology is formed. Default 2 s.
	Settle time.Duration
	// Offset returns the node's replication offset, published with its
	// registration once a second: failover promotes the eligible replica
	// with the highest.
	Offset func() int64
	// Copy returns, on a replica, the primary incarnation ("id/boot")
	// whose stream it holds a complete copy of, taken in this process
	// ("" none), and how long ago it last heard from that primary: what
	// makes it eligible for promotion. Published with the offset.
	Copy func() (follows string, down time.Duration)
	Logf func(format string, args ...any)
}

// Member is what a node registers about itself.
type Member struct {
	ID     string `json:"id"`
	Host   string `json:"host"`
	Port   int    `json:"port"`
	Offset int64  `json:"offset"`
	// Boot is the process's random boot id: a new one is a restart.
	Boot string `json:"boot,omitempty"`
	// Follows and DownMs are the replica's copy (Config.Copy).
	Follows string `json:"follows,omitempty"`
	DownMs  int64  `json:"down_ms,omitempty"`

	Lease int64 `json:"-"` // the lease it registered under, read from etcd
}

// node is the member as the topology names it, in its incarnation.
func (m Member) node() cluster.Node {
	return cluster.Node{ID: m.ID, Host: m.Host, Port: m.Port, Boot: m.Boot, Lease: m.Lease}
}

// validityFactor bounds how long a replica may have been without its
// primary's stream and still be promoted, in TTLs (Redis's
// cluster-replica-validity-factor, whose default is also 10).
const validityFactor = 10

// Coord is a running node's membership, campaign and topology watch.
type Coord struct {
	cfg    Config
	st     *cluster.State
	cli    *clientv3.Client
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	lease   clientv3.LeaseID
	sess    *concurrency.Session
	sessCtx context.Context // cancelled when the session is replaced
	sessEnd context.CancelFunc
	joined  chan struct{} // closed and replaced at each join

	topoRev atomic.Int64 // the etcd revision of the topology the view follows
}

func (c *Coord) prefix() string   { return "/rlserver/" + c.cfg.Name + "/" }
func (c *Coord) topoKey() string  { return c.prefix() + "topology" }
func (c *Coord) nodesKey() string { return c.prefix() + "nodes/" }

// movedKey is where a move's source reports it done: moves/<to>/<from>.
func (c *Coord) movedKey() string { return c.prefix() + "moves/" }

// forgetKey holds the nodes an operator forgot: forget/<id>.
func (c *Coord) forgetKey() string { return c.prefix() + "forget/" }

// forceKey holds the failovers an operator forced: force/<shard id> = the
// replica's id.
func (c *Coord) forceKey() string { return c.prefix() + "force/" }

// Start connects to etcd, registers the node under a lease, follows the
// topology document into st, keeps the lease (fencing the node when it
// cannot), and campaigns to coordinate.
func Start(cfg Config, st *cluster.State) (*Coord, error) {
	if cfg.TTL <= 0 {
		cfg.TTL = 3 * time.Second
	}
	if cfg.Settle <= 0 {
		cfg.Settle = 2 * time.Second
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	if cfg.Offset == nil {
		cfg.Offset = func() int64 { return 0 }
	}
	if cfg.Copy == nil {
		cfg.Copy = func() (string, time.Duration) { return "", 0 }
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: cfg.Endpoints, DialTimeout: 5 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("etcd: %w", err)
	}
	c := &Coord{cfg: cfg, st: st, cli: cli, joined: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	if err := c.join(ctx); err != nil {
		cancel()
		cli.Close()
		return nil, err
	}
	c.wg.Add(4)
	go func() { defer c.wg.Done(); c.follow(ctx) }()
	go func() { defer c.wg.Done(); c.keep(ctx) }()
	go func() { defer c.wg.Done(); c.fence(ctx) }()
	go func() { defer c.wg.Done(); c.campaign(ctx) }()
	return c, nil
}

// join takes a new lease, a session on it and registers the node.
func (c *Coord) join(ctx context.Context) error {
	sent := time.Now()
	g, err := c.cli.Grant(ctx, max(1, int64(c.cfg.TTL/time.Second)))
	if err != nil {
		return fmt.Errorf("etcd: %w", err)
	}
	// A new incarnation: until a topology names it, the node serves as
	// no primary (the coordinator decides whether its memory still is
	// the shard's).
	c.st.SetIncarnation(int64(g.ID))
	sess, err := concurrency.NewSession(c.cli, concurrency.WithLease(g.ID))
	if err != nil {
		return fmt.Errorf("etcd: %w", err)
	}
	if err := c.register(ctx, g.ID); err != nil {
		sess.Close()
		return fmt.Errorf("etcd: registering: %w", err)
	}
	// The topology as it is now, before serving again: a node back from
	// a freeze must not serve slots given to another meanwhile.
	if resp, err := c.cli.Get(ctx, c.topoKey()); err == nil && len(resp.Kvs) > 0 {
		c.adopt(resp.Kvs[0].Value, resp.Kvs[0].ModRevision)
	} else if err != nil {
		sess.Close()
		return fmt.Errorf("etcd: reading the topology: %w", err)
	}
	c.st.FenceAfter(sent.Add(c.cfg.TTL - c.cfg.TTL/6))
	sctx, end := context.WithCancel(ctx)
	c.mu.Lock()
	if c.sessEnd != nil {
		c.sessEnd()
		c.sess.Orphan()
	}
	c.lease, c.sess, c.sessCtx, c.sessEnd = g.ID, sess, sctx, end
	close(c.joined)
	c.joined = make(chan struct{})
	c.mu.Unlock()
	return nil
}

func (c *Coord) register(ctx context.Context, lease clientv3.LeaseID) error {
	follows, down := c.cfg.Copy()
	me, _ := json.Marshal(Member{ID: c.cfg.Self.ID, Host: c.cfg.Self.Host, Port: c.cfg.Self.Port, Offset: c.cfg.Offset(),
		Boot: c.cfg.Self.Boot, Follows: follows, DownMs: down.Milliseconds()})
	_, err := c.cli.Put(ctx, c.nodesKey()+c.cfg.Self.ID, string(me), clientv3.WithLease(lease))
	return err
}

// Publish registers the node's state again at once (within a second; a
// failure is left to the next periodic registration).
func (c *Coord) Publish() {
	c.mu.Lock()
	lease := c.lease
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := c.register(ctx, lease); err != nil {
		c.cfg.Logf("cluster: publishing this replica's copy: %v", err)
	}
}

// pollEvery is how often a node renews its lease (so that its fencing
// deadline trails real time by no more than this) and the coordinator
// looks at the members.
const pollEvery = 250 * time.Millisecond

// keep renews the lease every pollEvery (noting when a renewal that worked
// was sent), publishes the node's offset once a second, and joins again
// when the lease is gone.
func (c *Coord) keep(ctx context.Context) {
	var published time.Time
	for ctx.Err() == nil {
		c.mu.Lock()
		lease := c.lease
		c.mu.Unlock()
		sent := time.Now()
		rctx, cancel := context.WithTimeout(ctx, c.cfg.TTL/3)
		_, err := c.cli.KeepAliveOnce(rctx, lease)
		if err == nil {
			c.st.FenceAfter(sent.Add(c.cfg.TTL - c.cfg.TTL/6))
			if time.Since(published) >= time.Second {
				if err = c.register(rctx, lease); err == nil {
					published = time.Now()
				}
			}
		}
		cancel()
		if errors.Is(err, rpctypes.ErrLeaseNotFound) {
			c.cfg.Logf("cluster: membership lease expired: joining again")
			if err := c.join(ctx); err != nil {
				c.cfg.Logf("cluster: joining again: %v", err)
			}
		}
		sleep(ctx, max(pollEvery-time.Since(sent), 0))
	}
}

// fence logs when the node stops serving keys: once its lease's TTL less a sixth
// passed since the last renewal that worked was sent: the lease, renewed
// by etcd after that, cannot have expired there yet (the sixth covers
// the two clocks' rates), so no other node has been given its slots. An
// etcd blip shorter than that (2.5 s of a 3 s TTL) fences nothing.
func (c *Coord) fence(ctx context.Context) {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	fenced := false
	for ctx.Err() == nil {
		if late := c.st.LeaseLate(); late != fenced {
			if late {
				c.cfg.Logf("cluster: membership lease not renewed: fenced (keyed commands answer CLUSTERDOWN)")
			} else {
				c.cfg.Logf("cluster: membership lease renewed: serving again")
			}
			fenced = late
		}
		select {
		case <-ctx.Done():
		case <-t.C:
		}
	}
}

// Close leaves: the lease is revoked (within a second: etcd may be gone),
// so the node's registration goes. The client closes before the
// goroutines are awaited: an election campaign cancelled resigns with the
// client's own context, which only closing it ends.
func (c *Coord) Close() {
	c.cancel()
	c.mu.Lock()
	sess, lease := c.sess, c.lease
	c.mu.Unlock()
	sess.Orphan()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	c.cli.Revoke(ctx, lease)
	cancel()
	c.cli.Close()
	c.wg.Wait()
}

// follow adopts every newer topology the document holds.
func (c *Coord) follow(ctx context.Context) {
	for ctx.Err() == nil {
		resp, err := c.cli.Get(ctx, c.topoKey())
		if err != nil {
			sleep(ctx, time.Second)
			continue
		}
		if len(resp.Kvs) > 0 {
			c.adopt(resp.Kvs[0].Value, resp.Kvs[0].ModRevision)
		}
		for w := range c.cli.Watch(ctx, c.topoKey(), clientv3.WithRev(resp.Header.Revision+1)) {
			for _, ev := range w.Events {
				if ev.Type == clientv3.EventTypePut {
					c.adopt(ev.Kv.Value, ev.Kv.ModRevision)
				}
			}
		}
	}
}

// adopt follows a topology document (at etcd revision rev): a newer
// version naming this node becomes its view; one that no longer names it
// leaves it serving nothing.
func (c *Coord) adopt(b []byte, rev int64) {
	t, err := cluster.Parse(b)
	if err != nil {
		c.cfg.Logf("cluster: topology in etcd is invalid: %v", err)
		return
	}
	defer func() {
		if c.st.View().Topo.Version == t.Version {
			c.topoRev.Store(rev)
		}
	}()
	if _, named := t.Find(c.cfg.Self.Host, c.cfg.Self.Port); !named {
		if c.st.View().Topo.Assigned() > 0 && c.st.Orphan(t.Version) {
			c.cfg.Logf("cluster: topology version %d no longer names this node: it serves nothing until placed again", t.Version)
		}
		return
	}
	adopted, err := c.st.Adopt(t)
	switch {
	case err != nil:
		c.cfg.Logf("cluster: topology version %d not adopted: %v", t.Version, err)
	case adopted:
		v := c.st.View()
		role := "primary"
		if v.Self.Replica {
			role = "replica"
		} else if !v.Confirmed {
			role = "primary in an earlier incarnation (serving nothing until the coordinator decides)"
		}
		c.cfg.Logf("cluster: topology version %d adopted: %s of shard %d", t.Version, role, v.Self.Shard)
	}
}

// campaign runs for coordinator on the current session, coordinates while
// elected, and starts again on the next session when this one is replaced.
func (c *Coord) campaign(ctx context.Context) {
	for ctx.Err() == nil {
		c.mu.Lock()
		sess, sctx, joined := c.sess, c.sessCtx, c.joined
		c.mu.Unlock()
		e := concurrency.NewElection(sess, c.prefix()+"coordinator")
		if err := e.Campaign(sctx, c.cfg.Self.ID); err == nil && c.leads(sctx, sess, e) {
			c.cfg.Logf("cluster: this node coordinates cluster %q", c.cfg.Name)
			c.coordinate(sctx, clientv3.Compare(clientv3.CreateRevision(e.Key()), "=", e.Rev()))
		}
		select {
		case <-ctx.Done():
		case <-joined:
		case <-time.After(c.cfg.TTL):
			// Still this session: campaign again (a campaign that won on
			// a session etcd had expired is not leadership).
		}
	}
}

// leads reports whether a campaign that returned won on a live session:
// the election key is still there, under the session's lease. Campaign
// also returns when the keys before it are deleted because every lease,
// its own too, expired (an etcd stall): then it is not leadership.
func (c *Coord) leads(ctx context.Context, sess *concurrency.Session, e *concurrency.Election) bool {
	select {
	case <-sess.Done():
		return false
	default:
	}
	resp, err := c.cli.Get(ctx, e.Key())
	return err == nil && len(resp.Kvs) == 1 && resp.Kvs[0].CreateRevision == e.Rev() &&
		clientv3.LeaseID(resp.Kvs[0].Lease) == sess.Lease()
}

// coordinate keeps the topology in line with the members: the first one
// once the member set has settled, then each newcomer placed. Every write
// is fenced by lead (the election key is still this node's). For one TTL
// after its election, and after any gap in its view of etcd longer than
// half a TTL, it fails no absent node over: members whose leases lapsed
// with etcd away get the chance to register again.
func (c *Coord) coordinate(ctx context.Context, lead clientv3.Cmp) {
	grace := time.Now().Add(c.cfg.TTL)
	lastRead := time.Now()
	var ids []string
	changed := time.Now()
	// Registrations, reports of moves done and forgotten nodes wake it.
	nodes := c.cli.Watch(ctx, c.prefix(), clientv3.WithPrefix())
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for ctx.Err() == nil {
		members, err := c.members(ctx)
		if err == nil {
			if time.Since(lastRead) > c.cfg.TTL/2 {
				grace = time.Now().Add(c.cfg.TTL)
			}
			lastRead = time.Now()
			now := make([]string, len(members))
			for i, m := range members {
				now[i] = m.ID
			}
			if !slices.Equal(now, ids) {
				ids, changed = now, time.Now()
			}
			// The first topology waits for the member set to settle.
			form := time.Since(changed) >= c.cfg.Settle
			if err := c.step(ctx, lead, members, form, time.Now().Before(grace)); err != nil {
				c.cfg.Logf("cluster: coordinating: %v", err)
			}
		}
		select {
		case <-ctx.Done():
		case <-tick.C:
		case <-nodes:
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
			m.Lease = kv.Lease
			out = append(out, m)
		}
	}
	slices.SortFunc(out, func(a, b Member) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// step writes the next topology if the members call for one. The write
// is a transaction that holds only if this node still leads, the topology
// is the one read, and every member is still registered under the lease
// it was read with (and every absent node still absent): a decision made
// on a stale member list is never written.
func (c *Coord) step(ctx context.Context, lead clientv3.Cmp, members []Member, form, grace bool) error {
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
	case cur == nil && form && len(members) > 0:
		next, err = Form(members, c.cfg.Replicas)
	case cur != nil:
		var ch Change
		if ch, err = c.change(ctx); err != nil {
			return err
		}
		ch.Grace, ch.MaxDown, ch.Logf = grace, validityFactor*c.cfg.TTL, c.cfg.Logf
		next, err = Reconcile(cur, members, c.cfg.Replicas, ch)
		defer func() { c.tidy(ctx, next, cur, ch) }()
	}
	if err != nil || next == nil {
		return err
	}
	b, err := json.Marshal(next)
	if err != nil {
		return err
	}
	conds := []clientv3.Cmp{lead, clientv3.Compare(clientv3.ModRevision(c.topoKey()), "=", rev)}
	seen := map[string]bool{}
	for _, m := range members {
		seen[m.ID] = true
		conds = append(conds, clientv3.Compare(clientv3.LeaseValue(c.nodesKey()+m.ID), "=", m.Lease))
	}
	if cur != nil {
		for _, s := range cur.Shards {
			for _, n := range append([]cluster.Node{s.Primary}, s.Replicas...) {
				if !seen[n.ID] {
					conds = append(conds, clientv3.Compare(clientv3.CreateRevision(c.nodesKey()+n.ID), "=", 0))
				}
			}
		}
	}
	txn, err := c.cli.Txn(ctx).If(conds...).Then(clientv3.OpPut(c.topoKey(), string(b))).Commit()
	if err != nil {
		return err
	}
	if txn.Succeeded {
		c.cfg.Logf("cluster: topology version %d written (%d shards, %d nodes)", next.Version, len(next.Shards), next.Nodes())
	}
	return nil
}

// Force asks the coordinator to promote this node, a replica of a shard
// marked down, even though it is not eligible (CLUSTER FAILOVER FORCE):
// the decisions its copy lacks are lost.
func (c *Coord) Force() error {
	v := c.st.View()
	if !v.Self.Replica {
		return errors.New("this node is not a replica")
	}
	s := v.MyShard()
	if !s.Down {
		return fmt.Errorf("shard %s is not down (its primary serves, or the coordinator has not yet found it gone): nothing to force", s.ID)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err := c.cli.Put(ctx, c.forceKey()+s.ID, c.cfg.Self.ID)
	if err == nil {
		c.cfg.Logf("cluster: CLUSTER FAILOVER FORCE: asked the coordinator to promote this replica of shard %s", s.ID)
	}
	return err
}

// change reads the moves reported done and the nodes forgotten.
func (c *Coord) change(ctx context.Context) (Change, error) {
	ch := Change{Moved: map[[2]string]bool{}, Forget: map[string]bool{}, Force: map[string]string{}}
	resp, err := c.cli.Get(ctx, c.movedKey(), clientv3.WithPrefix())
	if err != nil {
		return ch, err
	}
	for _, kv := range resp.Kvs {
		if to, from, ok := strings.Cut(strings.TrimPrefix(string(kv.Key), c.movedKey()), "/"); ok {
			ch.Moved[[2]string{to, from}] = true
		}
	}
	if resp, err = c.cli.Get(ctx, c.forgetKey(), clientv3.WithPrefix()); err != nil {
		return ch, err
	}
	for _, kv := range resp.Kvs {
		ch.Forget[strings.TrimPrefix(string(kv.Key), c.forgetKey())] = true
	}
	if resp, err = c.cli.Get(ctx, c.forceKey(), clientv3.WithPrefix()); err != nil {
		return ch, err
	}
	for _, kv := range resp.Kvs {
		ch.Force[strings.TrimPrefix(string(kv.Key), c.forceKey())] = string(kv.Value)
	}
	return ch, nil
}

// tidy removes the reports of moves no topology names any more, and the
// forgotten nodes it does not name (the current one if next was not
// written).
func (c *Coord) tidy(ctx context.Context, next, cur *cluster.Topology, ch Change) {
	t := next
	if t == nil {
		t = cur
	}
	if resp, err := c.cli.Get(ctx, c.topoKey()); err != nil || len(resp.Kvs) == 0 {
		return
	} else if now, err := cluster.Parse(resp.Kvs[0].Value); err != nil || now.Version != t.Version {
		return // another version was written meanwhile: tidy next time
	}
	for k := range ch.Moved {
		if to := t.ShardByID(k[0]); to < 0 || !slices.ContainsFunc(t.Shards[to].Importing, func(im cluster.Import) bool { return im.From == k[1] }) {
			c.cli.Delete(ctx, c.movedKey()+k[0]+"/"+k[1])
		}
	}
	for id := range ch.Forget {
		if !names(t, id) {
			c.cli.Delete(ctx, c.forgetKey()+id)
		}
	}
	// A forced failover is done once its replica is the primary, or moot
	// once its shard has a primary that is registered.
	for sh, id := range ch.Force {
		if i := t.ShardByID(sh); i < 0 || t.Shards[i].Primary.ID == id || !t.Shards[i].Down {
			c.cli.Delete(ctx, c.forceKey()+sh)
		}
	}
}

func names(t *cluster.Topology, id string) bool {
	for _, s := range t.Shards {
		if s.Primary.ID == id || slices.ContainsFunc(s.Replicas, func(n cluster.Node) bool { return n.ID == id }) {
			return true
		}
	}
	return false
}

// ReportMoved records that the move of slots to shard to from shard from
// is done: the importing shard holds every state of them. The report
// holds only if this node is still registered in its incarnation and the
// topology is still the one its view follows: a mover of a primary failed
// over meanwhile reports nothing.
func (c *Coord) ReportMoved(to, from string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if !c.st.View().Serves() {
		return errors.New("this node does not serve as its shard's primary")
	}
	c.mu.Lock()
	lease := c.lease
	c.mu.Unlock()
	txn, err := c.cli.Txn(ctx).If(
		clientv3.Compare(clientv3.LeaseValue(c.nodesKey()+c.cfg.Self.ID), "=", int64(lease)),
		clientv3.Compare(clientv3.ModRevision(c.topoKey()), "=", c.topoRev.Load()),
	).Then(clientv3.OpPut(c.movedKey()+to+"/"+from, "done")).Commit()
	if err == nil && !txn.Succeeded {
		err = errors.New("the topology or this node's incarnation changed: not reported (retried on the new view)")
	}
	return err
}

// Forget asks the coordinator to remove node id, which must be named by
// the topology and not be running.
func (c *Coord) Forget(id string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if !names(c.st.View().Topo, id) {
		return fmt.Errorf("Unknown node %s", id)
	}
	members, err := c.members(ctx)
	if err != nil {
		return err
	}
	if slices.ContainsFunc(members, func(m Member) bool { return m.ID == id }) {
		return fmt.Errorf("node %s is running: stop it first (a running node cannot be forgotten)", id)
	}
	_, err = c.cli.Put(ctx, c.forgetKey()+id, "forget")
	return err
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
		shards[i] = cluster.Shard{Slots: []cluster.Range{{lo, hi}}, Primary: m.node()}
	}
	t := &cluster.Topology{Version: 1, Shards: shards}
	for _, m := range members[np:] {
		addReplica(t, m, replicas)
	}
	return cluster.NewTopology(1, t.Shards)
}

// Change is what the coordinator knows beside the members: the moves
// their sources reported done, and the nodes an operator had forgotten
// (CLUSTER FORGET).
type Change struct {
	Moved  map[[2]string]bool // {importing shard id, source shard id}
	Forget map[string]bool    // node ids
	Force  map[string]string  // shard id: the replica an operator forces to be promoted
	// Grace: absent nodes keep their places (members may be about to
	// register again: the coordinator was just elected, or etcd was away).
	Grace bool
	// MaxDown bounds how long an eligible replica may have been without
	// its primary's stream (0: no bound).
	MaxDown time.Duration
	Logf    func(format string, args ...any) // what a failover decided (nil: nothing)
}

func (ch Change) logf(format string, args ...any) {
	if ch.Logf != nil {
		ch.Logf(format, args...)
	}
}

// eligible returns the index in reps of the replica to promote in place of
// primary p: one registered that completed a copy of p's stream in its
// current process and heard from p within ch.MaxDown, the highest offset
// first (ties: the lower id); -1 when none is.
func eligible(p cluster.Node, reps []cluster.Node, alive map[string]Member, ch Change) int {
	best := -1
	for j, r := range reps {
		m, ok := alive[r.ID]
		if !ok || m.Follows != p.ID+"/"+p.Boot || ch.MaxDown > 0 && time.Duration(m.DownMs)*time.Millisecond > ch.MaxDown {
			continue
		}
		if best < 0 {
			best = j
			continue
		}
		if b := alive[reps[best].ID]; m.Offset > b.Offset || m.Offset == b.Offset && r.ID < reps[best].ID {
			best = j
		}
	}
	return best
}

// Reconcile returns the next version of cur for the members registered
// now, or nil when it needs none:
//   - a move reported done gives its slots to the importing shard;
//   - a node registered under a new lease with the boot id it was placed
//     with (its lease lapsed, its process and memory did not) is
//     confirmed in its new incarnation;
//   - a shard whose primary is gone, or restarted (a new boot id: its
//     memory holds only what it restored), gets its eligible replica with
//     the highest offset as its primary (failover; see eligible), and the
//     restarted primary becomes a replica;
//   - with no eligible replica, a restarted primary keeps its slots with
//     what it restored (the decisions it had not flushed are lost: logged),
//     and a shard whose primary is gone is marked down (its slots answer
//     CLUSTERDOWN) until the primary returns or an operator forces a
//     replica (ch.Force);
//   - replicas that are gone leave the topology;
//   - a shard that serves no slot yet and lost its primary is dropped with
//     its moves (nothing is lost); one that does serve slots is dropped
//     only once its primary is forgotten, its slots going, without their
//     states, to the shards with the fewest;
//   - members the topology does not name become replicas where fewer than
//     replicas are (a node that comes back after a failover rejoins this
//     way); otherwise, while no move is under way, one becomes the
//     primary of a new shard importing an even share of every shard's
//     slots.
//
// Under ch.Grace absent nodes keep their places.
func Reconcile(cur *cluster.Topology, members []Member, replicas int, ch Change) (*cluster.Topology, error) {
	alive := map[string]Member{}
	for _, m := range members {
		alive[m.ID] = m
	}
	known := map[string]bool{}
	changed := false
	shards := make([]cluster.Shard, len(cur.Shards))
	for i, s := range cur.Shards {
		s.Slots = slices.Clone(s.Slots)
		s.Replicas = slices.Clone(s.Replicas)
		s.Importing = slices.Clone(s.Importing)
		shards[i] = s
	}
	// Moves done.
	for i := range shards {
		t := &shards[i]
		var left []cluster.Import
		for _, im := range t.Importing {
			from := cur.ShardByID(im.From)
			if !ch.Moved[[2]string{t.ID, im.From}] || from < 0 {
				left = append(left, im)
				continue
			}
			shards[from].Slots = without(shards[from].Slots, im.Slots)
			t.Slots = merge(t.Slots, im.Slots)
			changed = true
		}
		t.Importing = left
	}
	var orphaned []cluster.Range
	drop := map[string]bool{}
	for i := range shards {
		s := &shards[i]
		known[s.Primary.ID] = true
		var reps []cluster.Node
		for _, r := range s.Replicas {
			known[r.ID] = true
			m, ok := alive[r.ID]
			switch {
			case ok:
				if n := m.node(); n != r {
					r, changed = n, true // a new incarnation
				}
				reps = append(reps, r)
			case ch.Grace:
				reps = append(reps, r)
			default:
				changed = true
			}
		}
		pm, ok := alive[s.Primary.ID]
		restarted := ok && pm.Boot != s.Primary.Boot
		switch {
		case ok && !restarted:
			if n := pm.node(); n != s.Primary || s.Down {
				s.Primary, s.Down, changed = n, false, true
			}
		case !ok && ch.Grace:
		default:
			best := eligible(s.Primary, reps, alive, ch)
			forced := false
			if id, ok := ch.Force[s.ID]; best < 0 && ok && !restarted {
				if best = slices.IndexFunc(reps, func(r cluster.Node) bool { return r.ID == id }); best >= 0 {
					forced = true
				}
			}
			switch {
			case best >= 0:
				why := "is gone"
				if restarted {
					why = "restarted"
				}
				if forced {
					ch.logf("cluster: shard %s: primary %s %s; replica %s promoted by an operator's CLUSTER FAILOVER FORCE although not eligible: decisions its copy lacks are lost", s.ID, s.Primary.ID, why, reps[best].ID)
				} else {
					ch.logf("cluster: shard %s: primary %s %s; replica %s promoted", s.ID, s.Primary.ID, why, reps[best].ID)
				}
				s.Primary, s.Down = reps[best], false
				reps = append(reps[:best:best], reps[best+1:]...)
				if restarted {
					reps = append(reps, pm.node()) // it holds the old state at best
				}
				changed = true
			case restarted:
				ch.logf("cluster: shard %s: primary %s restarted and no replica is eligible: it keeps its slots with the state it restored (decisions it made after its last flush may be admitted again)", s.ID, s.Primary.ID)
				s.Primary, s.Down, changed = pm.node(), false, true
			case len(s.Slots) == 0 || ch.Forget[s.Primary.ID]:
				drop[s.ID] = true
				orphaned = append(orphaned, s.Slots...)
				changed = true
			case !s.Down:
				ch.logf("cluster: shard %s: primary %s is gone and no replica is eligible: its slots are down until it returns (or CLUSTER FAILOVER FORCE on a replica)", s.ID, s.Primary.ID)
				s.Down, changed = true, true
			}
		}
		s.Replicas = reps
	}
	var kept []cluster.Shard
	for _, s := range shards {
		if drop[s.ID] {
			continue
		}
		var ims []cluster.Import
		for _, im := range s.Importing {
			if !drop[im.From] {
				ims = append(ims, im)
			}
		}
		s.Importing = ims
		kept = append(kept, s)
	}
	if len(kept) == 0 {
		return nil, nil // nobody left to serve: keep the last topology
	}
	if len(orphaned) > 0 {
		counts := make([]int, len(kept))
		gets := make([]cluster.SlotSet, len(kept))
		for i := range kept {
			counts[i] = count(kept[i].Slots)
		}
		for _, r := range orphaned {
			for slot := r[0]; slot <= r[1]; slot++ {
				fewest := 0
				for i := range counts {
					if counts[i] < counts[fewest] {
						fewest = i
					}
				}
				gets[fewest].Add([]cluster.Range{{slot, slot}})
				counts[fewest]++
			}
		}
		for i := range kept {
			kept[i].Slots = merge(kept[i].Slots, gets[i].Ranges())
		}
	}
	t := &cluster.Topology{Shards: kept}
	for _, m := range members {
		if known[m.ID] {
			continue
		}
		if lacking(t, replicas) || moving(t) {
			if lacking(t, replicas) {
				addReplica(t, m, replicas)
				changed = true
			}
			continue
		}
		addShard(t, m)
		changed = true
	}
	if migrateReplicas(t, replicas) {
		changed = true
	}
	if !changed {
		return nil, nil
	}
	return cluster.NewTopology(cur.Version+1, t.Shards)
}

// migrateReplicas gives each shard with fewer than want replicas one
// from a shard that has more than want (as Redis Cluster's replica
// migration): the replica takes a full copy of its new shard. It prefers
// a replica on another host than the new primary's. It reports whether it
// moved any.
func migrateReplicas(t *cluster.Topology, want int) bool {
	moved := false
	for i := range t.Shards {
		s := &t.Shards[i]
		for len(s.Replicas) < want {
			donor := -1
			for j := range t.Shards {
				if n := len(t.Shards[j].Replicas); n > want && (donor < 0 || n > len(t.Shards[donor].Replicas)) {
					donor = j
				}
			}
			if donor < 0 {
				return moved
			}
			d := &t.Shards[donor]
			pick := len(d.Replicas) - 1
			for k, r := range d.Replicas {
				if r.Host != s.Primary.Host {
					pick = k
				}
			}
			s.Replicas = append(s.Replicas, d.Replicas[pick])
			d.Replicas = append(d.Replicas[:pick:pick], d.Replicas[pick+1:]...)
			moved = true
		}
	}
	return moved
}

// lacking reports whether a shard has fewer than want replicas.
func lacking(t *cluster.Topology, want int) bool {
	for _, s := range t.Shards {
		if len(s.Replicas) < want {
			return true
		}
	}
	return false
}

// moving reports whether slots are on the move.
func moving(t *cluster.Topology) bool {
	for _, s := range t.Shards {
		if len(s.Importing) > 0 {
			return true
		}
	}
	return false
}

// addShard makes m the primary of a new shard importing, from every shard
// serving slots, its highest ones beyond an even share.
func addShard(t *cluster.Topology, m Member) {
	serving := 0
	for _, s := range t.Shards {
		if len(s.Slots) > 0 {
			serving++
		}
	}
	share := cluster.Slots / (serving + 1)
	ns := cluster.Shard{Primary: m.node()}
	sum := sha1.Sum([]byte("rlserver shard " + m.ID))
	ns.ID = hex.EncodeToString(sum[:])
	for _, s := range t.Shards {
		give := count(s.Slots) - share
		if give <= 0 {
			continue
		}
		var take []cluster.Range
		for i := len(s.Slots) - 1; i >= 0 && give > 0; i-- {
			r := s.Slots[i]
			n := min(give, r[1]-r[0]+1)
			take = append([]cluster.Range{{r[1] - n + 1, r[1]}}, take...)
			give -= n
		}
		ns.Importing = append(ns.Importing, cluster.Import{From: s.ID, Slots: take})
	}
	if len(ns.Importing) > 0 {
		t.Shards = append(t.Shards, ns)
	}
}

func count(rs []cluster.Range) int {
	n := 0
	for _, r := range rs {
		n += r[1] - r[0] + 1
	}
	return n
}

// merge returns the ranges of a and b together, sorted and joined.
func merge(a, b []cluster.Range) []cluster.Range {
	var set cluster.SlotSet
	set.Add(a)
	set.Add(b)
	return set.Ranges()
}

// without returns the ranges of a less those of b.
func without(a, b []cluster.Range) []cluster.Range {
	var set, minus cluster.SlotSet
	set.Add(a)
	minus.Add(b)
	for w := range set {
		set[w] &^= minus[w]
	}
	return set.Ranges()
}

// addReplica gives m to a shard with the fewest replicas (one with fewer
// than want when there is one), preferring one whose primary is on another
// host.
func addReplica(t *cluster.Topology, m Member, want int) {
	best := -1
	for i, s := range t.Shards {
		if lacking(t, want) && len(s.Replicas) >= want {
			continue
		}
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
	s.Replicas = append(s.Replicas, m.node())
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
