package cluster

import (
	"bytes"
	"crypto/rand"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Node is one rlserver of the cluster as the topology names it.
type Node struct {
	ID   string `json:"id"`
	Host string `json:"host"`
	Port int    `json:"port"`
	// Boot and Lease are the incarnation the coordinator placed the node
	// in (etcd mode; empty in a static topology): the process's random
	// boot id and the etcd lease it registered under. A node serves as a
	// primary only while the topology names its current incarnation, so
	// that a process restarted, or back after its lease lapsed, waits for
	// the coordinator to decide what it is.
	Boot  string `json:"boot,omitempty"`
	Lease int64  `json:"lease,omitempty"`
}

// Inc is the node's incarnation as the replication stream names it.
func (n Node) Inc() string { return n.Boot + "/" + strconv.FormatInt(n.Lease, 16) }

// Addr is the node's announced host:port.
func (n Node) Addr() string { return net.JoinHostPort(n.Host, strconv.Itoa(n.Port)) }

// Range is a range of slots, both ends included.
type Range [2]int

// Shard is a set of slot ranges served by one primary and replicated to
// its replicas.
type Shard struct {
	// ID is the shard id CLUSTER MYSHARDID and SHARDS report (40 hex
	// characters); by default derived from the shard's primary id.
	ID       string  `json:"id,omitempty"`
	Slots    []Range `json:"slots"`
	Primary  Node    `json:"primary"`
	Replicas []Node  `json:"replicas,omitempty"`
	// Importing lists the slots moving to this shard, each from the shard
	// that serves them until the move is done (etcd mode: the
	// coordinator writes it, the source's primary streams the slots' states
	// here, and the next version gives the slots to this shard).
	Importing []Import `json:"importing,omitempty"`
	// Down is set by the coordinator when the primary is gone and no
	// replica may be promoted: the shard's slots answer CLUSTERDOWN until
	// the primary returns or an operator forces a failover.
	Down bool `json:"down,omitempty"`
}

// Import is a move of slots to a shard from another (by shard id).
type Import struct {
	From  string  `json:"from"`
	Slots []Range `json:"slots"`
}

// SlotSet is a set of slots.
type SlotSet [Slots / 64]uint64

// Has reports whether slot is in the set.
func (s *SlotSet) Has(slot int) bool { return s[slot>>6]&(1<<(slot&63)) != 0 }

// Add adds the slots of ranges.
func (s *SlotSet) Add(ranges []Range) {
	for _, r := range ranges {
		for slot := r[0]; slot <= r[1]; slot++ {
			s[slot>>6] |= 1 << (slot & 63)
		}
	}
}

// Count returns how many slots the set has.
func (s *SlotSet) Count() int {
	n := 0
	for _, w := range s {
		n += bits.OnesCount64(w)
	}
	return n
}

// Ranges returns the set as ranges, in order.
func (s *SlotSet) Ranges() []Range {
	var out []Range
	for slot := 0; slot < Slots; slot++ {
		if !s.Has(slot) {
			continue
		}
		if n := len(out); n > 0 && out[n-1][1] == slot-1 {
			out[n-1][1] = slot
		} else {
			out = append(out, Range{slot, slot})
		}
	}
	return out
}

// Topology is the cluster's layout at one version: the document of
// --cluster-config (and, later, the one the elected coordinator writes to
// etcd). Parse validates it and indexes the slots.
type Topology struct {
	Version int64   `json:"version"`
	Shards  []Shard `json:"shards"`

	owner    [Slots]int16 // shard index per slot, -1 unassigned
	assigned int
}

// Role is a node's part in the topology.
type Role struct {
	Shard   int  // its shard's index in Topology.Shards
	Replica bool // a replica of the shard's primary (else the primary)
	Node    Node
}

// ParseFile reads and validates a topology file.
func ParseFile(path string) (*Topology, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	t, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// Parse decodes and validates a topology document: ids of 40 hex
// characters, each used once, as each host:port; slot ranges within
// 0-16383 that no two shards share.
func Parse(b []byte) (*Topology, error) {
	var t Topology
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&t); err != nil {
		return nil, fmt.Errorf("invalid topology: %w", err)
	}
	if err := t.index(); err != nil {
		return nil, fmt.Errorf("invalid topology: %w", err)
	}
	return &t, nil
}

func (t *Topology) index() error {
	if t.Version < 0 {
		return errors.New("version must not be negative")
	}
	if len(t.Shards) == 0 {
		return errors.New("no shards")
	}
	for i := range t.owner {
		t.owner[i] = -1
	}
	ids := map[string]bool{}
	addrs := map[string]bool{}
	node := func(n *Node, what string) error {
		n.ID = strings.ToLower(n.ID)
		if !ValidID(n.ID) {
			return fmt.Errorf("%s: id %q is not 40 hex characters", what, n.ID)
		}
		if n.Host == "" || n.Port <= 0 || n.Port > 65535 {
			return fmt.Errorf("%s %s: needs a host and a port (1-65535)", what, n.ID)
		}
		if ids[n.ID] {
			return fmt.Errorf("%s: id %s is used twice", what, n.ID)
		}
		if addrs[n.Addr()] {
			return fmt.Errorf("%s %s: address %s is used twice", what, n.ID, n.Addr())
		}
		ids[n.ID], addrs[n.Addr()] = true, true
		return nil
	}
	for i := range t.Shards {
		s := &t.Shards[i]
		what := fmt.Sprintf("shard %d", i)
		if err := node(&s.Primary, what+" primary"); err != nil {
			return err
		}
		for j := range s.Replicas {
			if err := node(&s.Replicas[j], what+" replica"); err != nil {
				return err
			}
		}
		if s.ID == "" {
			sum := sha1.Sum([]byte("rlserver shard " + s.Primary.ID))
			s.ID = hex.EncodeToString(sum[:])
		} else if s.ID = strings.ToLower(s.ID); !ValidID(s.ID) {
			return fmt.Errorf("%s: id %q is not 40 hex characters", what, s.ID)
		}
		for _, r := range s.Slots {
			if r[0] < 0 || r[1] >= Slots || r[0] > r[1] {
				return fmt.Errorf("%s: slot range %d-%d is not within 0-%d", what, r[0], r[1], Slots-1)
			}
			for slot := r[0]; slot <= r[1]; slot++ {
				if o := t.owner[slot]; o >= 0 {
					return fmt.Errorf("%s: slot %d is also shard %d's", what, slot, o)
				}
				t.owner[slot] = int16(i)
				t.assigned++
			}
		}
	}
	// An import names another shard, which serves every slot it moves; a
	// slot moves to one shard at a time.
	var moving SlotSet
	for i, s := range t.Shards {
		for _, im := range s.Importing {
			from := t.ShardByID(im.From)
			if from < 0 || from == i {
				return fmt.Errorf("shard %d: imports from %q, which is not another shard", i, im.From)
			}
			if len(im.Slots) == 0 {
				return fmt.Errorf("shard %d: imports no slot from shard %d", i, from)
			}
			for _, r := range im.Slots {
				if r[0] < 0 || r[1] >= Slots || r[0] > r[1] {
					return fmt.Errorf("shard %d: imported slot range %d-%d is not within 0-%d", i, r[0], r[1], Slots-1)
				}
				for slot := r[0]; slot <= r[1]; slot++ {
					if t.owner[slot] != int16(from) {
						return fmt.Errorf("shard %d: imports slot %d from shard %d, which does not serve it", i, slot, from)
					}
					if moving.Has(slot) {
						return fmt.Errorf("shard %d: slot %d is imported twice", i, slot)
					}
					moving.Add([]Range{{slot, slot}})
				}
			}
		}
	}
	return nil
}

// ShardByID returns the index of the shard with id, or -1.
func (t *Topology) ShardByID(id string) int {
	for i, s := range t.Shards {
		if s.ID == id {
			return i
		}
	}
	return -1
}

// ValidID reports whether id is a node or shard id: 40 lower-case hex
// characters.
func ValidID(id string) bool {
	if len(id) != 40 {
		return false
	}
	for _, c := range []byte(id) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// NewID returns a random node id.
func NewID() string {
	var b [20]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Owner returns the index of the shard serving slot, or -1.
func (t *Topology) Owner(slot int) int { return int(t.owner[slot]) }

// Ranges returns the slot ranges of the shard at index shard, in order
// (SlotSet.Ranges).
func (t *Topology) Ranges(shard int) []Range {
	var set SlotSet
	for slot := range Slots {
		if int(t.owner[slot]) == shard {
			set[slot>>6] |= 1 << (slot & 63)
		}
	}
	return set.Ranges()
}

// Assigned returns how many slots a shard serves.
func (t *Topology) Assigned() int { return t.assigned }

// Complete reports whether every slot is served: without that the cluster
// is down, as Redis's with cluster-require-full-coverage.
func (t *Topology) Complete() bool { return t.assigned == Slots }

// Find returns the role of the node announced at host:port.
func (t *Topology) Find(host string, port int) (Role, bool) {
	for i, s := range t.Shards {
		if s.Primary.Host == host && s.Primary.Port == port {
			return Role{Shard: i, Node: s.Primary}, true
		}
		for _, r := range s.Replicas {
			if r.Host == host && r.Port == port {
				return Role{Shard: i, Replica: true, Node: r}, true
			}
		}
	}
	return Role{}, false
}

// Nodes returns how many nodes the topology names.
func (t *Topology) Nodes() int {
	n := 0
	for _, s := range t.Shards {
		n += 1 + len(s.Replicas)
	}
	return n
}

// LoadNodeID returns the node id kept in dir, creating and keeping want
// (or a new random one when want is "") the first time. A dir holding
// another id than a non-empty want is an error: its data is another node's.
func LoadNodeID(dir, want string) (string, error) {
	path := filepath.Join(dir, "node-id")
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		id := strings.TrimSpace(string(b))
		if !ValidID(id) {
			return "", fmt.Errorf("%s: not a node id", path)
		}
		if want != "" && id != want {
			return "", fmt.Errorf("%s holds node id %s, but the topology gives this node %s: the data directory is another node's (use that node's entry, or an empty directory)", path, id, want)
		}
		return id, nil
	case !errors.Is(err, os.ErrNotExist):
		return "", err
	}
	id := want
	if id == "" {
		id = NewID()
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(id+"\n"), 0o644); err != nil {
		return "", err
	}
	if f, err := os.Open(tmp); err == nil {
		f.Sync()
		f.Close()
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", err
	}
	return id, nil
}

// NewTopology validates and indexes a topology built in code (the
// coordinator's).
func NewTopology(version int64, shards []Shard) (*Topology, error) {
	t := &Topology{Version: version, Shards: shards}
	if err := t.index(); err != nil {
		return nil, err
	}
	return t, nil
}
