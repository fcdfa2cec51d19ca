package repl

import "errors"

// A promoted replica continues its primary's history (Redis's PSYNC2 idea),
// so that a sibling replica, or the old primary restarted from its --dir,
// catches up from the stream instead of a full copy.
//
// A replica records every change it applies in its own stream too, and
// notes checkpoints: "the primary's shard i at p is my shard i at h". When
// it is promoted it keeps them (a history) with its former primary's
// replication id and where that stream ended. A node offering a position
// p in that stream (RLREPL HELLO's reply) resumes from the own position h
// of the last checkpoint at or before p: the states between are applied
// again, which changes nothing. It is refused when it holds a change the
// promoted node never had (its upper bound passes the stream's end), and
// when the checkpoint's bytes are no longer in the ring: a full copy then.

// checkpoint maps a position of the primary's stream to this node's own.
type checkpoint struct{ p, h uint64 }

const (
	cpEvery = 4 << 10 // primary stream bytes between two checkpoints of a shard
	cpMax   = 2048    // checkpoints kept per shard, the newest
)

// history is the stream a promoted replica continues.
type history struct {
	replid string
	cps    [][]checkpoint // per shard, by position
	last   []uint64       // per shard: where the stream ended here
}

// note records that primary shard i's stream at p is this node's shard i
// at h, every cpEvery bytes (always with force). The caller holds r.apply,
// and the primary has as many shards as this node.
func (r *replicaState) note(i int, p, h uint64, force bool) {
	if r.cps == nil {
		return
	}
	cs := r.cps[i]
	if n := len(cs); n > 0 && !force && p-cs[n-1].p < cpEvery {
		return
	}
	if len(cs) >= cpMax {
		cs = append(cs[:0], cs[cpMax/2:]...)
	}
	r.cps[i] = append(cs, checkpoint{p, h})
}

// resetCheckpoints starts noting afresh for a stream of shards primary
// shards (none when the count differs from this node's: its shards then
// hold other keys than the primary's).
func (n *Node) resetCheckpoints(shards int) {
	n.rep.cps = nil
	if shards == n.cfg.Store.NumShards() {
		n.rep.cps = make([][]checkpoint, shards)
	}
}

// promoted keeps the replica's checkpoints as the history this node, now
// its shard's primary, continues. Called without n.mu (it takes r.apply).
func (n *Node) promoted() {
	r := &n.rep
	r.apply.Lock()
	defer r.apply.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.replid == "" || !r.synced || r.cps == nil || r.staged != nil {
		return
	}
	h := &history{replid: r.replid, cps: r.cps, last: make([]uint64, len(r.pos))}
	for i, p := range r.pos {
		h.last[i] = uint64(max(p, 0))
		cs := h.cps[i]
		if len(cs) == 0 || cs[len(cs)-1].p != h.last[i] {
			h.cps[i] = append(cs, checkpoint{h.last[i], n.cfg.Store.Head(i)})
		}
	}
	n.hist.Store(h)
	n.cfg.Logf("replication: promoted: replicas of primary history %s continue from it where they can", r.replid)
	// The replica's position is the former primary's: it is no longer
	// this node's to offer.
	r.replid, r.synced, r.cps, r.pos = "", false, nil, nil
}

// continueAt returns the own positions a node holding history replid up
// to pos (and nothing past upto) resumes from, or nil.
func (n *Node) continueAt(replid string, pos, upto []uint64) []uint64 {
	h := n.hist.Load()
	if h == nil || h.replid != replid || len(pos) != len(h.last) || len(upto) != len(pos) {
		return nil
	}
	out := make([]uint64, len(pos))
	for i, p := range pos {
		if upto[i] > h.last[i] || p > upto[i] {
			return nil
		}
		j := len(h.cps[i]) - 1
		for j >= 0 && h.cps[i][j].p > p {
			j--
		}
		if j < 0 {
			return nil
		}
		out[i] = h.cps[i][j].h
	}
	return out
}

// Continue answers RLREPL CONTINUE: the primary took the position this
// replica offered in its former primary's history; it continues in the
// primary's own, replid, from pos.
func (n *Node) Continue(replid string, pos []uint64) error {
	r := &n.rep
	r.apply.Lock()
	defer r.apply.Unlock()
	if !n.isReplica() {
		return errors.New("this node is not a replica")
	}
	r.mu.Lock()
	if !r.synced || r.from == "" || len(pos) != len(r.pos) {
		r.mu.Unlock()
		return errors.New("no position was offered to continue from (RLREPL HELLO first)")
	}
	r.replid, r.upto, r.copyOf, r.resumed = replid, nil, r.fromID, false
	for i, p := range pos {
		r.pos[i] = int64(p)
	}
	r.mu.Unlock()
	n.resetCheckpoints(len(pos))
	n.cfg.Logf("replication: continuing from the primary's history %s at offset %d", replid, sum(pos))
	if n.cfg.CopyChanged != nil {
		n.cfg.CopyChanged()
	}
	return nil
}
