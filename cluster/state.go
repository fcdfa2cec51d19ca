package cluster

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// View is the topology a node follows and its own place in it. A View
// never changes: a newer topology is a new View.
type View struct {
	Topo *Topology
	Self Role
	// Confirmed: the topology names the node's current incarnation (see
	// Node.Boot). An unconfirmed primary serves no key, streams to no
	// replica and moves no slot.
	Confirmed bool
}

// Serves reports whether the node may act as its shard's primary.
func (v *View) Serves() bool { return !v.Self.Replica && v.Confirmed }

// Primary returns the node serving slot's writes, and false when no shard
// serves it.
func (v *View) Primary(slot int) (Node, bool) {
	i := v.Topo.Owner(slot)
	if i < 0 {
		return Node{}, false
	}
	return v.Topo.Shards[i].Primary, true
}

// MyShard returns the node's shard.
func (v *View) MyShard() *Shard { return &v.Topo.Shards[v.Self.Shard] }

// State is a node's cluster state: the view it follows, replaced whole
// when it adopts a newer topology. Readers load it without a lock.
type State struct {
	file string // --cluster-config ("" none)
	host string // the announced address the node finds itself by
	port int

	mu      sync.Mutex // serialises Reload, Adopt and SetIncarnation
	cur     atomic.Pointer[View]
	boot    string // the incarnation (etcd mode): see Node.Boot
	lease   int64
	base    time.Time    // the monotonic origin of fenceBy
	fenceBy atomic.Int64 // ns after base at which the node is fenced (0: never)
	gate    atomic.Pointer[Gate]
	leaving atomic.Bool
	watches []func(old, new *View)

	chMu    sync.Mutex
	changed chan struct{} // closed at the next change (see Changed)
}

// NewStatic reads the static topology file and finds the node announced at
// host:port in it.
func NewStatic(file, host string, port int) (*State, error) {
	t, err := parseStatic(file)
	if err != nil {
		return nil, err
	}
	s := &State{file: file, host: host, port: port, base: time.Now()}
	v, err := s.view(t)
	if err != nil {
		return nil, err
	}
	s.cur.Store(v)
	return s, nil
}

// NewDynamic returns the state of a node whose topology comes from
// elsewhere (etcd): until one names it, the node serves no slot (every
// keyed command answers CLUSTERDOWN), as the primary of an empty shard of
// its own in a topology of version 0.
func NewDynamic(self Node) (*State, error) {
	t := &Topology{Shards: []Shard{{Primary: self}}}
	if err := t.index(); err != nil {
		return nil, err
	}
	s := &State{host: self.Host, port: self.Port, base: time.Now(), boot: self.Boot}
	v, err := s.view(t)
	if err != nil {
		return nil, err
	}
	s.cur.Store(v)
	return s, nil
}

func (s *State) view(t *Topology) (*View, error) {
	r, ok := t.Find(s.host, s.port)
	if !ok {
		return nil, fmt.Errorf("the topology (version %d) has no node announced at %s:%d (set --announce-host/--announce-port to this node's entry)", t.Version, s.host, s.port)
	}
	if cur := s.cur.Load(); cur != nil && cur.Self.Node.ID != r.Node.ID {
		return nil, fmt.Errorf("the topology (version %d) gives this node (%s:%d) id %s, but it is %s", t.Version, s.host, s.port, r.Node.ID, cur.Self.Node.ID)
	}
	return &View{Topo: t, Self: r, Confirmed: r.Node.Boot == s.boot && r.Node.Lease == s.lease}, nil
}

// SetIncarnation records the node's incarnation (a new etcd lease at each
// join): until a topology names it, the node serves as no primary.
func (s *State) SetIncarnation(lease int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lease == lease {
		return
	}
	s.lease = lease
	old := s.cur.Load()
	v := *old
	v.Confirmed = v.Self.Node.Boot == s.boot && v.Self.Node.Lease == lease
	s.install(old, &v)
}

// install makes v the view and tells the watchers. The caller holds s.mu.
func (s *State) install(old, v *View) {
	s.cur.Store(v)
	for _, fn := range s.watches {
		fn(old, v)
	}
	s.notify()
}

// FenceAfter fences the node from deadline on, unless it is called again
// with a later one (each renewal of its membership does): a node that
// cannot renew its membership stops serving keys before anyone can take
// its slots over, so that two primaries never serve one slot. Checked at every
// keyed command, so a node frozen past its deadline serves nothing when it
// runs again, before any goroutine could notice. The deadline is kept on
// the monotonic clock: a step of the wall clock moves no fence.
func (s *State) FenceAfter(deadline time.Time) { s.fenceBy.Store(max(int64(deadline.Sub(s.base)), 1)) }

// LeaseLate reports whether the node's lease was not renewed in time.
func (s *State) LeaseLate() bool {
	d := s.fenceBy.Load()
	return d != 0 && int64(time.Since(s.base)) > d
}

// Ready reports whether the node serves what it should (/readyz): once
// it knows a topology, unless fenced, and on a replica once its link to
// the primary (link, as ROLE words it) is up and synchronised; why not
// when it does not.
func (s *State) Ready(link string) (bool, string) {
	v := s.View()
	if v == nil || v.Topo == nil || v.Topo.Version == 0 {
		return false, "no cluster topology yet"
	}
	if s.Fenced() {
		return false, "fenced: its etcd lease is not renewed, or the topology does not name this incarnation yet"
	}
	if v.Self.Replica && link != "connected" {
		return false, "replica not caught up with its primary (link: " + link + ")"
	}
	return true, ""
}

// Fenced reports whether the node must serve no key: its lease was not
// renewed in time, it is a primary whose incarnation the topology does not
// confirm yet, or it is leaving (see Leave).
func (s *State) Fenced() bool {
	if s.leaving.Load() || s.LeaseLate() {
		return true
	}
	v := s.cur.Load()
	return !v.Self.Replica && !v.Confirmed && v.Topo.Assigned() > 0
}

// Leave fences the node for good: it is shutting down, and must serve no
// key once another node may be given its slots.
func (s *State) Leave() {
	s.leaving.Store(true)
	s.notify()
}

// Changed returns a channel closed at the next change of how slots are
// served here: a new view, a new gate, the node leaving. A command held
// while its slot moves (see command's holdMoving) waits on it.
func (s *State) Changed() <-chan struct{} {
	s.chMu.Lock()
	defer s.chMu.Unlock()
	if s.changed == nil {
		s.changed = make(chan struct{})
	}
	return s.changed
}

// notify closes the channel Changed returned.
func (s *State) notify() {
	s.chMu.Lock()
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
	s.chMu.Unlock()
}

// Orphan makes the node serve nothing, in a view of the given version: a
// topology of that version no longer names it (another node took its
// place while it was away). It reports whether it changed the view.
func (s *State) Orphan(version int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.cur.Load()
	if version <= old.Topo.Version {
		return false
	}
	t := &Topology{Version: version, Shards: []Shard{{Primary: old.Self.Node}}}
	if t.index() != nil {
		return false
	}
	v := &View{Topo: t, Self: Role{Node: old.Self.Node}}
	s.install(old, v)
	return true
}

// View returns the current view.
func (s *State) View() *View { return s.cur.Load() }

// File returns the static topology file.
func (s *State) File() string { return s.file }

// Watch has fn called, under the state's lock, after each change of view.
func (s *State) Watch(fn func(old, new *View)) {
	s.mu.Lock()
	s.watches = append(s.watches, fn)
	s.mu.Unlock()
}

// Reload reads the topology file again and adopts it if its version is
// newer than the current one; adopted tells whether it did. An invalid
// file, or one that no longer names this node as it is, changes nothing.
func (s *State) Reload() (adopted bool, err error) {
	t, err := parseStatic(s.file)
	if err != nil {
		return false, err
	}
	return s.Adopt(t)
}

// Adopt makes t the current topology if its version is newer.
func (s *State) Adopt(t *Topology) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.cur.Load()
	if t.Version <= old.Topo.Version {
		return false, nil
	}
	v, err := s.view(t)
	if err != nil {
		return false, err
	}
	s.install(old, v)
	return true, nil
}

// Gate says how a slot on the move is served, overriding the topology
// until its next version: the source's primary redirects it with ASK to
// the importing primary once it handed it over (Handed), and that primary
// serves it to ASKING connections (Imported).
type Gate struct {
	Handed   SlotSet
	Imported SlotSet
	To       Node // the importing primary the Handed slots are asked of
}

// SetGate replaces the gate (nil: none).
func (s *State) SetGate(g *Gate) {
	s.gate.Store(g)
	s.notify()
}

// Gate returns the gate, nil when no slot is on the move here.
func (s *State) Gate() *Gate { return s.gate.Load() }

// parseStatic reads a static topology file: slots move only in an
// etcd-run cluster, whose coordinator writes the imports.
func parseStatic(file string) (*Topology, error) {
	t, err := ParseFile(file)
	if err != nil {
		return nil, err
	}
	for i, s := range t.Shards {
		if len(s.Importing) > 0 {
			return nil, fmt.Errorf("%s: shard %d: \"importing\" is for an etcd-run cluster (--cluster-etcd): a static topology moves slots by a new version", file, i)
		}
	}
	return t, nil
}
