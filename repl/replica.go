package repl

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/rlserver/rlserver/command"
	"github.com/rlserver/rlserver/shard"
)

// offsetsFile is where a replica keeps its position, in --dir.
const offsetsFile = "replication-offsets"

// replicaState is a replica's position in its primary's stream.
type replicaState struct {
	n *Node

	// apply serialises what changes the keyspace (Full, Apply, Synced)
	// and guards entries. It is held while shard locks are taken; mu is
	// never, because commands inside EXEC, which holds every shard's
	// lock, take mu (ROLE, INFO, CLUSTER SLOTS).
	apply   sync.Mutex
	entries []shard.Entry
	cps     [][]checkpoint // per primary shard (history.go; nil: none noted)

	// staged holds a full copy's pieces per primary shard until it is
	// complete (nil: no copy under way): the keys it replaces stay until
	// then, so a copy cut short (the primary died) wipes nothing.
	staged [][]byte

	mu     sync.Mutex // guards the fields below
	replid string     // the primary's replication id ("" none)
	pos    []int64    // per primary shard: the position applied up to (-1 unknown)
	synced bool       // a full copy was completed, or the position was kept
	linked bool       // a primary's link said HELLO
	lastIO time.Time
	from   string // the incarnation (cluster.Node.Inc) of the primary whose link said HELLO
	fromID string // its "id/boot"
	// copyOf is the "id/boot" of the primary whose stream this process
	// holds a complete copy of (a full copy completed, or a kept position
	// resumed): what makes the replica eligible for promotion ("" none).
	copyOf  string
	resumed bool    // Hello offered a position: the primary's next APPLY accepts it
	upto    []int64 // kept with the position: the store holds no change past it (nil: pos)
}

// savedOffsets is a position in a stream (replid) that the store in Dir
// reflects: every change up to Offsets, none past Upto.
type savedOffsets struct {
	ReplID  string   `json:"replid"`
	Offsets []uint64 `json:"offsets"`
	Upto    []uint64 `json:"upto,omitempty"`
}

// init reads the position a replica kept (a missing or damaged file means
// none: it will take a full copy).
func (r *replicaState) init(n *Node) {
	r.n = n
	if n.cfg.Dir == "" {
		return
	}
	b, err := os.ReadFile(filepath.Join(n.cfg.Dir, offsetsFile))
	if err != nil {
		return
	}
	var s savedOffsets
	if json.Unmarshal(b, &s) != nil || s.ReplID == "" || len(s.Offsets) == 0 {
		n.cfg.Logf("replication: %s is damaged: a full copy will be taken", offsetsFile)
		return
	}
	r.replid, r.synced = s.ReplID, true
	for _, o := range s.Offsets {
		r.pos = append(r.pos, int64(o))
	}
	if len(s.Upto) == len(s.Offsets) {
		for _, o := range s.Upto {
			r.upto = append(r.upto, int64(o))
		}
	}
}

func (r *replicaState) offset() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var s int64
	for _, p := range r.pos {
		s += max(p, 0)
	}
	return s
}

// Mark captures the replica's position before a flush of persistence;
// the function it returns, called once that flush is durable, keeps it in
// Dir: every change applied before the capture is then on disk, so a
// restart resumes at or before the position its store reflects (applying
// resulting states again changes nothing). A primary streaming to
// replicas keeps its own position the same way, with the position once
// the flush is durable as an upper bound of what the store holds: back
// as a replica of the replica promoted meanwhile, it continues from the
// stream (history.go) when that replica had everything it flushed.
func (n *Node) Mark() func() {
	if n.cfg.Dir == "" {
		return nil
	}
	if !n.isReplica() {
		n.mu.Lock()
		streaming := n.anchor != nil
		n.mu.Unlock()
		if !streaming {
			return nil
		}
		s := savedOffsets{ReplID: n.replid, Offsets: n.cfg.Store.Heads(nil)}
		return func() {
			s.Upto = n.cfg.Store.Heads(nil)
			if err := writeFileSync(filepath.Join(n.cfg.Dir, offsetsFile), s); err != nil {
				n.cfg.Logf("replication: keeping the position: %v", err)
			}
		}
	}
	r := &n.rep
	r.mu.Lock()
	if !r.synced || r.replid == "" {
		r.mu.Unlock()
		return nil
	}
	s := savedOffsets{ReplID: r.replid}
	for _, p := range r.pos {
		s.Offsets = append(s.Offsets, uint64(max(p, 0)))
	}
	r.mu.Unlock()
	return func() {
		if err := writeFileSync(filepath.Join(n.cfg.Dir, offsetsFile), s); err != nil {
			n.cfg.Logf("replication: keeping the position: %v", err)
		}
	}
}

func writeFileSync(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}

// Copy reports the primary incarnation ("id/boot") whose stream this
// process holds a complete copy of ("" none), and how long ago that
// primary was last heard from.
func (n *Node) Copy() (follows string, down time.Duration) {
	r := &n.rep
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.copyOf == "" || !n.isReplica() {
		return "", 0
	}
	return r.copyOf, time.Since(r.lastIO)
}

// Hello answers a primary's RLREPL HELLO: the position to resume from
// when this node is a replica of primaryID in incarnation inc and holds a
// copy of that primary's stream with the same shard count, else nothing
// (a full copy). A primary of another incarnation than the topology names
// (restarted, or not yet confirmed) is refused: it could wipe the copy.
func (n *Node) Hello(primaryID, replid string, shards int, inc string) ([]string, error) {
	v := n.cfg.Cluster.View()
	p := v.MyShard().Primary
	if !v.Self.Replica || p.ID != primaryID {
		return nil, fmt.Errorf("this node is not a replica of %s in topology version %d", primaryID, v.Topo.Version)
	}
	if p.Inc() != inc {
		return nil, fmt.Errorf("topology version %d names primary %s in another incarnation", v.Topo.Version, primaryID)
	}
	if shards < 1 || shards > shard.MaxShards {
		return nil, errors.New("invalid shard count")
	}
	r := &n.rep
	r.mu.Lock()
	defer r.mu.Unlock()
	r.linked, r.lastIO, r.from, r.fromID = true, time.Now(), inc, p.ID+"/"+p.Boot
	// The position is offered in whatever stream it is: the primary's own
	// (it resumes), or the one the primary continues since its promotion
	// (RLREPL CONTINUE follows), else a full copy.
	if !r.synced || len(r.pos) != shards {
		r.resumed = false
		return nil, nil
	}
	r.resumed = r.replid == replid
	out := []string{r.replid}
	for _, p := range r.pos {
		out = append(out, strconv.FormatInt(p, 10))
	}
	upto := r.upto
	if upto == nil {
		upto = r.pos
	}
	for _, p := range upto {
		out = append(out, strconv.FormatInt(p, 10))
	}
	return out, nil
}

// Full begins a full copy: the position kept is forgotten first (a crash
// in the middle must not resume from it); the keys go when the copy is
// complete (Synced).
func (n *Node) Full(replid string, shards int) error {
	if !n.isReplica() {
		return errors.New("this node is not a replica")
	}
	if shards < 1 || shards > shard.MaxShards || shards&(shards-1) != 0 {
		return errors.New("invalid shard count")
	}
	r := &n.rep
	r.apply.Lock()
	defer r.apply.Unlock()
	r.mu.Lock()
	if n.cfg.Dir != "" {
		if err := os.Remove(filepath.Join(n.cfg.Dir, offsetsFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
			r.mu.Unlock()
			return err
		}
	}
	pos := make([]int64, shards)
	for i := range pos {
		pos[i] = -1
	}
	// Nothing to keep (Mark) until the copy is complete.
	r.replid, r.synced, r.lastIO, r.pos, r.copyOf, r.resumed, r.upto = replid, false, time.Now(), pos, "", false, nil
	r.mu.Unlock()
	r.staged = make([][]byte, shards)
	n.resetCheckpoints(shards)
	n.cfg.Logf("replication: full copy from primary (replication id %s) begins", replid)
	return nil
}

// applyRun is how many entries Apply writes under one lock of a shard.
const applyRun = 64

// Apply applies stream bytes of primary shard i that end at position pos
// (-1: a piece of a snapshot, the position comes with the last piece).
func (n *Node) Apply(i int, pos int64, raw []byte) error {
	r := &n.rep
	r.apply.Lock()
	defer r.apply.Unlock()
	if !n.isReplica() {
		return errors.New("this node is not a replica")
	}
	v := n.cfg.Cluster.View()
	r.mu.Lock()
	agreed, primaries, from := r.replid != "" && i >= 0 && i < len(r.pos), len(r.pos), r.from
	took := agreed && r.resumed && r.staged == nil
	if took {
		r.copyOf, r.resumed = r.fromID, false // the primary took the position offered
	}
	r.mu.Unlock()
	if took {
		if r.cps == nil { // the position was kept on disk: note from here
			n.resetCheckpoints(primaries)
			r.mu.Lock()
			for k, p := range r.pos {
				r.note(k, uint64(max(p, 0)), n.cfg.Store.Head(k), true)
			}
			r.mu.Unlock()
		}
		if n.cfg.CopyChanged != nil {
			n.cfg.CopyChanged()
		}
	}
	if !agreed {
		return errors.New("no replication stream agreed (RLREPL HELLO/FULL first)")
	}
	if p := v.MyShard().Primary; p.Inc() != from {
		return fmt.Errorf("topology version %d names another primary incarnation than the stream's", v.Topo.Version)
	}
	if r.staged != nil {
		if pos >= 0 || len(raw) > 0 {
			r.staged[i] = append(r.staged[i], raw...)
		}
		r.mu.Lock()
		if pos >= 0 {
			r.pos[i] = pos
		}
		r.lastIO = time.Now()
		r.mu.Unlock()
		return nil
	}
	if err := n.applyRaw(i, primaries, raw); err != nil {
		return err
	}
	r.mu.Lock()
	if pos >= 0 {
		r.pos[i] = pos
		r.upto = nil
	}
	r.lastIO = time.Now()
	r.mu.Unlock()
	if pos >= 0 {
		r.note(i, uint64(pos), n.cfg.Store.Head(i), false)
	}
	return nil
}

// applyRaw applies stream bytes of primary shard i (of primaries) to the
// keyspace. The caller holds r.apply.
func (n *Node) applyRaw(i, primaries int, raw []byte) error {
	r := &n.rep
	var err error
	r.entries, err = shard.ParseEntries(r.entries[:0], raw)
	if err != nil {
		return err
	}
	store := n.cfg.Store
	// With as many shards as the primary, its shard i's keys are all in
	// ours (a key's shard is its slot's low bits): the entries go to it
	// under one lock at a time for a run of them, without each finding
	// its shard again.
	same := primaries == store.NumShards()
	var held *shard.Shard
	var lk shard.Locked // held's
	release := func() {
		if held != nil {
			lk.Unlock()
			held = nil
		}
	}
	defer release()
	for k, e := range r.entries {
		if e.Event == shard.EventFlush {
			release()
			store.ApplyFlush(i, primaries)
			continue
		}
		sh := store.Shard(i)
		if !same {
			sh = store.ShardFor(e.Key)
		}
		if sh != held || k%applyRun == 0 {
			release() // readers of the shard get a turn between runs
			lk, held = sh.Lock(), sh
		}
		if err := lk.Apply(e); err != nil {
			return err
		}
	}
	release()
	clear(r.entries) // don't keep the request's buffer alive
	return nil
}

// Synced ends a full copy.
func (n *Node) Synced() error {
	r := &n.rep
	r.apply.Lock()
	defer r.apply.Unlock()
	r.mu.Lock()
	for _, p := range r.pos {
		if p < 0 {
			r.mu.Unlock()
			return errors.New("the full copy is missing shards")
		}
	}
	primaries := len(r.pos)
	r.mu.Unlock()
	if r.staged == nil {
		return errors.New("no full copy under way")
	}
	// The copy is complete: it replaces every key at once.
	staged := r.staged
	r.staged = nil
	n.cfg.Store.ClearAll()
	for i, raw := range staged {
		if err := n.applyRaw(i, primaries, raw); err != nil {
			return err
		}
	}
	r.mu.Lock()
	for i, p := range r.pos {
		r.note(i, uint64(p), n.cfg.Store.Head(i), true)
	}
	r.synced, r.lastIO, r.copyOf = true, time.Now(), r.fromID
	r.mu.Unlock()
	if n.cfg.CopyChanged != nil {
		n.cfg.CopyChanged()
	}
	n.cfg.Logf("replication: full copy complete (%d keys)", n.keys())
	return nil
}

func (n *Node) keys() int {
	k := 0
	for i := 0; i < n.cfg.Store.NumShards(); i++ {
		sh := n.cfg.Store.Shard(i)
		lk := sh.Lock()
		k += lk.Len()
		lk.Unlock()
	}
	return k
}

// Online reports whether replica id of this node's shard holds a
// synchronised copy: a primary knows from its link, a replica of itself.
func (n *Node) Online(id string) bool {
	v := n.cfg.Cluster.View()
	if v.Self.Replica {
		if id != v.Self.Node.ID {
			return true // another replica of the shard: its primary knows
		}
		n.rep.mu.Lock()
		defer n.rep.mu.Unlock()
		return n.rep.synced
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	l := n.links[id]
	return l != nil && l.online.Load()
}

// Link is a replica's link state as ROLE words it.
func (n *Node) Link() string {
	n.rep.mu.Lock()
	defer n.rep.mu.Unlock()
	switch {
	case !n.rep.linked:
		return "connect"
	case !n.rep.synced:
		return "sync"
	}
	return "connected"
}

// Replicas lists a primary's replicas with their acknowledged offsets.
func (n *Node) Replicas() []command.ReplicaInfo {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []command.ReplicaInfo
	for _, r := range n.cfg.Cluster.View().MyShard().Replicas {
		l := n.links[r.ID]
		if l == nil || !l.online.Load() {
			continue
		}
		out = append(out, command.ReplicaInfo{Host: r.Host, Port: r.Port, Offset: l.offset()})
	}
	return out
}

func (l *link) offset() int64 {
	var s int64
	for i := range l.acked {
		s += int64(l.acked[i].Load())
	}
	return s
}

// Stats returns the node's replication statistics (INFO replication,
// metrics).
func (n *Node) Stats() command.ReplicationStats {
	v := n.cfg.Cluster.View()
	st := command.ReplicationStats{Offset: n.Offset()}
	if v.Self.Replica {
		p := v.MyShard().Primary
		st.Replica, st.MasterHost, st.MasterPort = true, p.Host, p.Port
		r := &n.rep
		r.mu.Lock()
		st.LinkUp, st.Syncing, st.LastIOAgo, st.ReplID = r.linked && r.synced, r.linked && !r.synced, -1, r.replid
		if !r.lastIO.IsZero() {
			st.LastIOAgo = int64(time.Since(r.lastIO) / time.Second)
		}
		r.mu.Unlock()
		return st
	}
	st.ReplID = n.replid
	now := time.Now()
	for _, r := range n.Replicas() {
		lag := int64(0)
		n.mu.Lock()
		for _, l := range n.links {
			if l.node.Host == r.Host && l.node.Port == r.Port {
				lag = int64(now.Sub(time.Unix(0, l.lastAck.Load())) / time.Second)
			}
		}
		n.mu.Unlock()
		st.Replicas = append(st.Replicas, command.ReplicaStats{Host: r.Host, Port: r.Port, Offset: r.Offset, Lag: lag})
	}
	st.BacklogSize = n.cfg.Store.FeedBytes() * n.cfg.Store.NumShards()
	return st
}
