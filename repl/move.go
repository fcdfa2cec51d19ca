package repl

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/shard"
)

// Slots moving between shards (etcd mode). The topology names, on the
// importing shard, the slots it imports and the shard they come from; the
// primary of that source shard runs a mover:
//
//  1. RLREPL IMPORT: the importing primary removes whatever it held of
//     the slots; the mover sends the slots' states (RLREPL MOVE), then
//     the changes its stream records for them, until the importer is
//     nearly caught up;
//  2. it freezes the slots (shard.Store.Freeze: commands changing their
//     keys wait, see command's holdMoving), sends the last changes and waits for their
//     acknowledgement: the importer now holds every state;
//  3. it reports the move done (to etcd, where the coordinator writes the
//     next topology, with the slots given to the importing shard);
//  4. RLREPL HANDOVER: the importer serves the slots to ASKING
//     connections, and the mover's node answers ASK for them, so that
//     clients wait for nothing but the new topology.
//
// Once the topology gives the slots away, the source removes their keys.
// A move the coordinator abandons (the importing shard died with no
// replica) thaws the slots. A move reported done is never begun again:
// the importer may already serve its slots.

// moveKey names a move: to the importing shard, from this node's shard.
type moveKey struct{ to, from string }

// mover is the source's side of a move.
type mover struct {
	n      *Node
	key    moveKey
	target cluster.Node // the importing shard's primary
	self   cluster.Node // this primary, in the incarnation the move speaks for
	slots  cluster.SlotSet
	quit   chan struct{}
	done   chan struct{} // closed when run returns
	conn   net.Conn
	connMu sync.Mutex
}

// importer is the importing primary's side of a move.
type importer struct {
	slots  cluster.SlotSet
	handed bool
}

// followMoves starts and stops the movers and importers view v calls for.
// The caller holds n.mu.
func (n *Node) followMoves(v *cluster.View) {
	want := map[moveKey]*cluster.Shard{}
	mine := v.MyShard()
	if v.Serves() && v.Topo.Assigned() > 0 {
		for i := range v.Topo.Shards {
			s := &v.Topo.Shards[i]
			for _, im := range s.Importing {
				if im.From == mine.ID {
					want[moveKey{s.ID, im.From}] = s
				}
			}
		}
	}
	for k, m := range n.movers {
		s, ok := want[k]
		if ok && s.Primary == m.target {
			continue
		}
		delete(n.movers, k)
		delete(n.handed, k) // a new target has not been handed anything
		close(m.quit)
		m.closeConn()
		if !ok {
			go n.endMove(m, v)
		}
	}
	for k, s := range want {
		if n.movers[k] != nil {
			continue
		}
		m := &mover{n: n, key: k, target: s.Primary, self: v.Self.Node, quit: make(chan struct{}), done: make(chan struct{})}
		for _, im := range s.Importing {
			if im.From == k.from {
				m.slots.Add(im.Slots)
			}
		}
		n.movers[k] = m
		go m.run()
	}

	// Imports this view no longer names are over: given to this shard, or
	// abandoned (their keys go).
	names := map[string]bool{}
	if v.Serves() {
		for _, im := range mine.Importing {
			names[im.From] = true
		}
	}
	for from, im := range n.imports {
		if names[from] {
			continue
		}
		delete(n.imports, from)
		var lost cluster.SlotSet
		for slot := 0; slot < cluster.Slots; slot++ {
			if im.slots.Has(slot) && (v.Self.Replica || v.Topo.Owner(slot) != v.Self.Shard) {
				lost.Add([]cluster.Range{{slot, slot}})
			}
		}
		if lost.Count() > 0 {
			go n.cfg.Store.DropSlots(&lost)
		}
	}
	n.setGate()
}

// endMove finishes a move this view no longer names: the slots given
// away lose their keys here; slots still this shard's are served again.
func (n *Node) endMove(m *mover, v *cluster.View) {
	<-m.done
	var gone cluster.SlotSet
	for slot := 0; slot < cluster.Slots; slot++ {
		if m.slots.Has(slot) && v.Topo.Owner(slot) != v.Self.Shard {
			gone.Add([]cluster.Range{{slot, slot}})
		}
	}
	if c := gone.Count(); c > 0 {
		keys := n.cfg.Store.DropSlots(&gone)
		n.cfg.Logf("cluster: %d slots moved to shard %s: their %d keys removed here", c, m.key.to, keys)
	} else {
		n.cfg.Logf("cluster: the move of %d slots to shard %s was abandoned: serving them again", m.slots.Count(), m.key.to)
	}
	n.cfg.Store.Thaw(&m.slots)
	n.mu.Lock()
	delete(n.handed, m.key)
	delete(n.reported, m.key)
	n.setGate()
	n.mu.Unlock()
}

// setGate publishes the slots handed over (ASK) and imported (ASKING).
// The caller holds n.mu.
func (n *Node) setGate() {
	var g cluster.Gate
	any := false
	for k := range n.handed {
		if m := n.movers[k]; m != nil {
			for w := range g.Handed {
				g.Handed[w] |= m.slots[w]
			}
			g.To, any = m.target, true
		}
	}
	for _, im := range n.imports {
		if im.handed {
			for w := range g.Imported {
				g.Imported[w] |= im.slots[w]
			}
			any = true
		}
	}
	if !any {
		n.cfg.Cluster.SetGate(nil)
		return
	}
	n.cfg.Cluster.SetGate(&g)
}

func (m *mover) stopped() bool {
	select {
	case <-m.quit:
		return true
	default:
		return false
	}
}

func (m *mover) closeConn() {
	m.connMu.Lock()
	if m.conn != nil {
		m.conn.Close()
	}
	m.connMu.Unlock()
}

// run moves the slots, again after each failure, until stopped.
func (m *mover) run() {
	defer close(m.done)
	n := m.n
	backoff := 100 * time.Millisecond
	for !m.stopped() {
		err := m.session()
		if err == nil || m.stopped() {
			return
		}
		n.cfg.Logf("cluster: moving %d slots to %s: %v", m.slots.Count(), m.target.Addr(), err)
		select {
		case <-m.quit:
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

// session runs one attempt of the move; nil once the move is reported
// done (the mover then waits for the topology).
func (m *mover) session() error {
	n := m.n
	n.mu.Lock()
	reported := n.reported[m.key]
	n.mu.Unlock()
	if reported {
		return nil
	}
	nc, err := net.DialTimeout("tcp", m.target.Addr(), 2*time.Second)
	if err != nil {
		return err
	}
	m.connMu.Lock()
	m.conn = nc
	m.connMu.Unlock()
	defer nc.Close()
	if m.stopped() {
		return errors.New("stopped")
	}
	c := newPipe(nc)
	go c.readAll()
	if auth := n.authArgs(); auth != nil {
		c.send(strs(auth...)...)
	}
	from := []byte(m.key.from)
	c.send(strs("RLREPL", "IMPORT", m.key.from, m.self.Inc())...)
	if err := c.sync(m.quit); err != nil {
		return fmt.Errorf("RLREPL IMPORT: %w", err)
	}

	began := time.Now()
	store := n.cfg.Store
	ns := store.NumShards()
	nsb := []byte(strconv.Itoa(ns))
	feed := store.Subscribe()
	defer feed.Close()
	var buf, out []byte
	keys := 0
	sendOut := func(i int) {
		si := []byte(strconv.Itoa(i))
		for b := out; len(b) > 0; {
			k := 0
			for k < len(b) && (k == 0 || k+entrySize(b[k:]) <= chunkBytes) {
				k += entrySize(b[k:])
				keys++
			}
			c.send([]byte("RLREPL"), []byte("MOVE"), from, nsb, si, b[:k])
			b = b[k:]
		}
	}
	for i := 0; i < ns; i++ {
		if !m.inShard(i, ns) {
			continue
		}
		out, _ = feed.SnapshotSlotsRaw(i, n.cfg.Clock.Now(), &m.slots, out[:0])
		sendOut(i)
	}
	snapshot := keys
	if err := c.sync(m.quit); err != nil {
		return err
	}
	pass := func() (int, error) {
		sent := 0
		for i := 0; i < ns; i++ {
			var err error
			buf, _, err = feed.ReadRaw(i, buf[:0])
			if err != nil {
				return 0, fmt.Errorf("shard %d: %w", i, err)
			}
			if !m.inShard(i, ns) {
				continue
			}
			out = shard.FilterRaw(out[:0], buf, &m.slots)
			sent += len(out)
			sendOut(i)
		}
		return sent, c.sync(m.quit)
	}
	// Catch up while the slots are served, then freeze them and send
	// the rest.
	for range 20 {
		sent, err := pass()
		if err != nil {
			return err
		}
		if sent < 64<<10 {
			break
		}
	}
	store.Freeze(&m.slots)
	frozen := time.Now()
	if _, err := pass(); err != nil {
		return err
	}
	for {
		err := errors.New("no coordinator to report it to")
		if n.cfg.Moved != nil {
			err = n.cfg.Moved(m.key.to, m.key.from)
		}
		if err == nil {
			break
		}
		n.cfg.Logf("cluster: reporting the move of %d slots to %s: %v", m.slots.Count(), m.target.Addr(), err)
		select {
		case <-m.quit:
			return errors.New("stopped")
		case <-time.After(200 * time.Millisecond):
		}
	}
	n.mu.Lock()
	n.reported[m.key] = true
	n.mu.Unlock()
	c.send([]byte("RLREPL"), []byte("HANDOVER"), from, []byte(m.self.Inc()))
	if err := c.sync(m.quit); err != nil {
		// The importer holds every state and the move is done: clients
		// wait (then get TRYAGAIN) until the topology gives it the slots.
		n.cfg.Logf("cluster: handing over %d slots to %s: %v", m.slots.Count(), m.target.Addr(), err)
		return nil
	}
	n.mu.Lock()
	if n.movers[m.key] == m {
		n.handed[m.key] = true
		n.setGate()
	}
	n.mu.Unlock()
	n.cfg.Logf("cluster: %d slots (%d keys, %d changes in passing) moved to %s in %v, writes paused %v",
		m.slots.Count(), snapshot, keys-snapshot, m.target.Addr(), time.Since(began).Round(time.Millisecond), time.Since(frozen).Round(time.Microsecond))
	return nil
}

// inShard reports whether keyspace shard i of ns holds any moving slot
// (a slot's keys live in shard slot mod ns, see shard.Options.Cluster).
func (m *mover) inShard(i, ns int) bool {
	for slot := i; slot < cluster.Slots; slot += ns {
		if m.slots.Has(slot) {
			return true
		}
	}
	return false
}

// pipe is a pipelined connection whose replies must all be +OK (or any
// non-error reply): sync waits until every command sent was answered.
type pipe struct {
	w    *bufio.Writer
	r    *replyReader
	mu   sync.Mutex
	sent int
	got  int
	err  error
	wake chan struct{}
}

func newPipe(nc net.Conn) *pipe {
	return &pipe{w: bufio.NewWriterSize(nc, 64<<10), r: newReplyReader(nc), wake: make(chan struct{}, 1)}
}

func strs(args ...string) [][]byte {
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	return b
}

func (p *pipe) send(args ...[]byte) {
	p.mu.Lock()
	p.sent++
	p.mu.Unlock()
	writeBulks(p.w, args...)
}

func (p *pipe) readAll() {
	for {
		v, err := p.r.read()
		if err == nil {
			if e, ok := v.(replyError); ok {
				err = e
			}
		}
		p.mu.Lock()
		if err != nil && p.err == nil {
			p.err = err
		}
		p.got++
		p.mu.Unlock()
		select {
		case p.wake <- struct{}{}:
		default:
		}
		if err != nil {
			return
		}
	}
}

// sync flushes and waits for the replies to everything sent.
func (p *pipe) sync(quit <-chan struct{}) error {
	if err := p.w.Flush(); err != nil {
		return err
	}
	for {
		p.mu.Lock()
		err, done := p.err, p.got >= p.sent
		p.mu.Unlock()
		if err != nil {
			return err
		}
		if done {
			return nil
		}
		select {
		case <-quit:
			return errors.New("stopped")
		case <-p.wake:
		case <-time.After(10 * time.Second):
			return errors.New("no reply in 10 s")
		}
	}
}

// Import begins importing the slots moving from shard from, whose primary
// speaks in incarnation inc: this node must be the primary of the shard
// importing them in its view, and inc the source's there. Whatever it held
// of them goes.
func (n *Node) Import(from, inc string) error {
	v := n.cfg.Cluster.View()
	slots, err := importing(v, from)
	if err != nil {
		return err
	}
	if err := sourceIs(v, from, inc); err != nil {
		return err
	}
	n.mu.Lock()
	n.imports[from] = &importer{slots: slots}
	n.setGate()
	n.mu.Unlock()
	dropped := n.cfg.Store.DropSlots(&slots)
	n.cfg.Logf("cluster: importing %d slots from shard %s (%d stale keys removed)", slots.Count(), from, dropped)
	return nil
}

// importing returns the slots v has this node's shard import from shard
// from.
func importing(v *cluster.View, from string) (cluster.SlotSet, error) {
	var slots cluster.SlotSet
	if v.Self.Replica {
		return slots, errors.New("this node is a replica")
	}
	if !v.Confirmed {
		return slots, fmt.Errorf("topology version %d does not name this node's incarnation yet", v.Topo.Version)
	}
	for _, im := range v.MyShard().Importing {
		if im.From == from {
			slots.Add(im.Slots)
			return slots, nil
		}
	}
	return slots, fmt.Errorf("topology version %d has this node's shard import nothing from %s", v.Topo.Version, from)
}

// ImportApply applies stream bytes of shard i of the source's n: puts and
// deletions of keys in the imported slots, and flushes of that shard.
func (n *Node) ImportApply(from string, ns, i int, raw []byte) error {
	n.mu.Lock()
	im := n.imports[from]
	n.mu.Unlock()
	if im == nil {
		return fmt.Errorf("no import from %s begun (RLREPL IMPORT first)", from)
	}
	if ns < 1 || ns > shard.MaxShards || ns&(ns-1) != 0 || i < 0 || i >= ns {
		return errors.New("invalid shard")
	}
	entries, err := shard.ParseEntries(nil, raw)
	if err != nil {
		return err
	}
	store := n.cfg.Store
	for _, e := range entries {
		if e.Event == shard.EventFlush {
			var gone cluster.SlotSet
			for slot := i; slot < cluster.Slots; slot += ns {
				if im.slots.Has(slot) {
					gone.Add([]cluster.Range{{slot, slot}})
				}
			}
			store.DropSlots(&gone)
			continue
		}
		if !im.slots.Has(cluster.Slot(e.Key)) {
			return fmt.Errorf("key %q is not in a slot imported from %s", e.Key, from)
		}
		sh := store.ShardFor(e.Key)
		lk := sh.Lock()
		err := lk.Apply(e)
		lk.Unlock()
		if err != nil {
			return err
		}
	}
	return nil
}

// sourceIs checks that v names inc as the incarnation of shard from's
// primary: a stale source (failed over meanwhile) is refused.
func sourceIs(v *cluster.View, from, inc string) error {
	if i := v.Topo.ShardByID(from); i < 0 || v.Topo.Shards[i].Primary.Inc() != inc {
		return fmt.Errorf("topology version %d names another primary of shard %s", v.Topo.Version, from)
	}
	return nil
}

// Handover marks the import from shard from handed over: its slots are
// served to ASKING connections.
func (n *Node) Handover(from, inc string) error {
	if err := sourceIs(n.cfg.Cluster.View(), from, inc); err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	im := n.imports[from]
	if im == nil {
		return fmt.Errorf("no import from %s begun", from)
	}
	im.handed = true
	n.setGate()
	return nil
}
