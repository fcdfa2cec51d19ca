// Package repl replicates a cluster shard's keyspace from its primary to
// its replicas: resulting states, never commands.
//
// The primary connects to each replica of its shard (the topology names
// them) as a client and sends, per keyspace shard, the raw bytes of the
// shard's change stream (shard.Feed.ReadRaw) in RLREPL APPLY commands; the
// replica applies them and replies +OK, and those replies, in order, are
// the acknowledgements WAIT counts. A replica's position is the stream
// offset of every primary shard it applied up to, with the primary's
// replication id (drawn at each start): a replica that comes back with
// positions the primary's rings still hold resumes from there (partial
// resynchronisation), any other gets a snapshot of every shard first
// (RLREPL FULL, APPLY, SYNCED).
//
// Entries carry absolute wall-clock expiries from the primary's clock, so a
// replica decides nothing with its own: it expires a key when the state
// the primary sent has become fresh, which is what the primary's key would
// be too (an absent key and a fresh state are the same thing).
package repl

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlserver/rlserver/clock"
	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/shard"
)

// Config configures a Node.
type Config struct {
	Store   *shard.Store
	Clock   *clock.Clock
	Cluster *cluster.State
	// User and Password authenticate the primary to its replicas ("" no
	// AUTH; User "" is the default user).
	User, Password string
	// Dir keeps a replica's position (replication-offsets) beside its
	// store, so that it resumes after a restart; "" none.
	Dir string
	// Logf receives log lines.
	Logf func(format string, args ...any)
	// Moved reports a slot move done (see move.go): the coordinator then
	// gives the slots to the importing shard. nil: no coordinator (a
	// static topology moves no slot).
	Moved func(to, from string) error
	// Functions, if set, are the node's function libraries (FUNCTION
	// LOAD): a primary sends them whole to each replica when a session
	// begins and whenever they change (RLREPL FUNCTIONS), and WAIT counts
	// a replica once it has them too. nil: none.
	Functions Functions
	// CopyChanged publishes the replica's copy (Copy) at once, before the
	// primary learns that the copy is complete: a decision WAIT confirms
	// on it is then never on a replica the coordinator thinks ineligible.
	// nil: nothing to publish to.
	CopyChanged func()
}

// Functions is what replication needs of the function libraries (package
// script's Engine); its methods must be safe for concurrent use.
type Functions interface {
	// FunctionsVersion changes whenever the libraries do.
	FunctionsVersion() uint64
	// DumpFunctions returns the libraries as FUNCTION DUMP's payload, and
	// their version.
	DumpFunctions() (version uint64, payload []byte)
}

// Node is a cluster node's replication: the primary's links to its
// replicas, or the replica's position. It implements command.Replication.
type Node struct {
	cfg    Config
	replid string // this run's replication id, as a primary

	mu     sync.Mutex // guards the fields below (the primary's side)
	anchor *shard.Feed
	links  map[string]*link // by replica id
	closed bool

	movers   map[moveKey]*mover   // this primary's slots moving away
	handed   map[moveKey]bool     // moves handed over (ASK)
	reported map[moveKey]bool     // moves reported done
	imports  map[string]*importer // slots moving here, by source shard

	acked     atomic.Pointer[chan struct{}] // closed and replaced when an acknowledgement arrives
	streaming atomic.Int32                  // links in session with their replica

	rep  replicaState
	hist atomic.Pointer[history] // the stream continued since a promotion (history.go)
}

// New returns the replication of a node and starts its part: links to
// the replicas of a primary, or a replica's wait for its primary.
func New(cfg Config) *Node {
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	n := &Node{cfg: cfg, replid: cluster.NewID(), links: map[string]*link{},
		movers: map[moveKey]*mover{}, handed: map[moveKey]bool{}, reported: map[moveKey]bool{}, imports: map[string]*importer{}}
	ch := make(chan struct{})
	n.acked.Store(&ch)
	n.rep.init(n)
	cfg.Cluster.Watch(func(_, v *cluster.View) { n.follow(v) })
	n.follow(cfg.Cluster.View())
	return n
}

// follow takes the node's part in view v: as a primary, a link to each
// replica of its shard (the rings kept from the first); as a replica, none.
func (n *Node) follow(v *cluster.View) {
	want := map[string]cluster.Node{}
	if v.Serves() { // an unconfirmed incarnation streams to no replica
		for _, r := range v.MyShard().Replicas {
			want[r.ID] = r
		}
	}
	// The rings record changes only while the shard has replicas: a
	// primary without any pays nothing for the feed. Feeds are opened and
	// closed without n.mu held: that takes every shard's lock, and
	// commands run inside EXEC, which holds those, take n.mu (ROLE, WAIT).
	// A replica records what it applies in its own stream too, to
	// continue its primary's history if it is promoted (history.go); once
	// open, the stream stays, so that the history it continues is whole.
	if v.Serves() {
		n.promoted()
	}
	var open *shard.Feed
	if len(want) > 0 || v.Self.Replica {
		open = n.cfg.Store.Subscribe()
	}
	defer func() {
		if open != nil {
			open.Close()
		}
	}()
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return
	}
	if open != nil && n.anchor == nil {
		n.anchor, open = open, nil
	}
	for id, l := range n.links {
		if r, ok := want[id]; !ok || r != l.node {
			l.stop()
			delete(n.links, id)
		}
	}
	for id, r := range want {
		if n.links[id] == nil {
			l := newLink(n, r, v.Self.Node)
			n.links[id] = l
			go l.run()
		}
	}
	n.followMoves(v)
}

// Close stops replication.
func (n *Node) Close() {
	n.mu.Lock()
	n.closed = true
	for id, l := range n.links {
		l.stop()
		delete(n.links, id)
	}
	for k, m := range n.movers {
		close(m.quit)
		m.closeConn()
		delete(n.movers, k)
	}
	anchor := n.anchor
	n.anchor = nil
	n.mu.Unlock()
	if anchor != nil {
		anchor.Close() // without n.mu: see follow
	}
}

// Streaming reports whether the node, a primary, is streaming to a
// replica: its links then need turns on the event loops' threads.
func (n *Node) Streaming() bool { return n.streaming.Load() > 0 }

// notify wakes the WAITs: an acknowledgement arrived.
func (n *Node) notify() {
	ch := make(chan struct{})
	old := n.acked.Swap(&ch)
	close(*old)
}

// functionsVersion is the function libraries' version (0 without any).
func (n *Node) functionsVersion() uint64 {
	if n.cfg.Functions == nil {
		return 0
	}
	return n.cfg.Functions.FunctionsVersion()
}

func (n *Node) isReplica() bool { return n.cfg.Cluster.View().Self.Replica }

// Offset is the primary's stream length over every shard, or what the
// replica applied of it.
func (n *Node) Offset() int64 {
	if n.isReplica() {
		return n.rep.offset()
	}
	var sum int64
	for _, h := range n.cfg.Store.Heads(nil) {
		sum += int64(h)
	}
	return sum
}

// Drain waits, on a primary, until each replica linked to it has
// acknowledged every change made so far, or timeout; it returns how many
// did and how many there are.
func (n *Node) Drain(timeout time.Duration) (acked, replicas int) {
	if n.isReplica() {
		return 0, 0
	}
	n.mu.Lock()
	replicas = len(n.links)
	n.mu.Unlock()
	if replicas == 0 {
		return 0, 0
	}
	return n.Wait(replicas, timeout, nil), replicas
}

// Wait returns how many replicas acknowledged every change made before
// it, waiting up to timeout (0: for ever; negative: not at all) for want
// of them, or until gone is closed (nil: never). Links are nudged to send
// at once.
func (n *Node) Wait(want int, timeout time.Duration, gone <-chan struct{}) int {
	target := n.cfg.Store.Heads(nil)
	fv := n.functionsVersion()
	var deadline <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		deadline = t.C
	}
	for {
		ch := *n.acked.Load()
		got := 0
		n.mu.Lock()
		for _, l := range n.links {
			if l.has(target) && l.hasFunctions(fv) {
				got++
			} else {
				l.nudge()
			}
		}
		n.mu.Unlock()
		if got >= want || timeout < 0 {
			return got
		}
		select {
		case <-ch:
		case <-deadline:
			return got
		case <-gone:
			return got
		}
	}
}
