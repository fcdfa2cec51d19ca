package cluster

// Slot routing: which node runs a command on a slot, as Redis's
// getNodeByQuery decides. The command layer finds the slot of a request's
// keys and answers the error; the decision is here, beside the topology.

// Routing is where a command on a slot goes.
type Routing uint8

const (
	// Here: this node runs it.
	Here Routing = iota
	// Unbound: no shard serves the slot (CLUSTERDOWN Hash slot not served).
	Unbound
	// Down: the cluster is down for it (an incomplete topology, the
	// slot's shard down, or this node fenced).
	Down
	// Ask: the slot was handed to the importing primary (ASK).
	Ask
	// Moved: another node serves it (MOVED).
	Moved
)

// Route decides where a command on slot runs: write says it writes,
// readOnly that its connection sent READONLY (a replica then serves its
// shard's reads). For Ask and Moved it returns the node's address.
func (s *State) Route(slot int, write, readOnly bool) (Routing, string) {
	v := s.View()
	owner := v.Topo.Owner(slot)
	if owner < 0 {
		return Unbound, ""
	}
	if !v.Topo.Complete() || v.Topo.Shards[owner].Down || s.Fenced() {
		return Down, ""
	}
	if g := s.Gate(); g != nil && !v.Self.Replica {
		// A slot on the move: the source's primary sends what it handed
		// over to the importing primary, which serves it. It does so
		// without ASKING too: the source no longer serves the slot, and a
		// client redirected here by a node already on the next topology
		// must not be sent back to the source while this node is not yet
		// (an exchange of MOVED that exhausts the client's redirects).
		if owner == v.Self.Shard && g.Handed.Has(slot) {
			return Ask, g.To.Addr()
		}
		if g.Imported.Has(slot) {
			return Here, ""
		}
	}
	if owner == v.Self.Shard && (!v.Self.Replica || readOnly && !write) {
		return Here, ""
	}
	p, _ := v.Primary(slot)
	return Moved, p.Addr()
}
