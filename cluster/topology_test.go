package cluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const goodTopology = `{"version": 3, "shards": [
 {"slots": [[0, 8000], [8001, 8191]], "primary": {"id": "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "host": "10.0.0.1", "port": 6379},
  "replicas": [{"id": "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", "host": "10.0.0.2", "port": 6379}]},
 {"id": "cccccccccccccccccccccccccccccccccccccccc", "slots": [[8192, 16383]], "primary": {"id": "dddddddddddddddddddddddddddddddddddddddd", "host": "10.0.0.3", "port": 6379}}
]}`

func TestParseTopology(t *testing.T) {
	topo, err := Parse([]byte(goodTopology))
	if err != nil {
		t.Fatal(err)
	}
	if !topo.Complete() || topo.Assigned() != Slots || topo.Nodes() != 3 || topo.Version != 3 {
		t.Fatalf("complete %v assigned %d nodes %d version %d", topo.Complete(), topo.Assigned(), topo.Nodes(), topo.Version)
	}
	if topo.Owner(0) != 0 || topo.Owner(8191) != 0 || topo.Owner(8192) != 1 || topo.Owner(16383) != 1 {
		t.Fatalf("owners: %d %d %d %d", topo.Owner(0), topo.Owner(8191), topo.Owner(8192), topo.Owner(16383))
	}
	if id := topo.Shards[0].Primary.ID; id != strings.Repeat("a", 40) {
		t.Fatalf("ids are kept in lower case: %s", id)
	}
	if !ValidID(topo.Shards[0].ID) || topo.Shards[1].ID != strings.Repeat("c", 40) {
		t.Fatalf("shard ids: %q %q", topo.Shards[0].ID, topo.Shards[1].ID)
	}
	r, ok := topo.Find("10.0.0.2", 6379)
	if !ok || !r.Replica || r.Shard != 0 || r.Node.ID != strings.Repeat("b", 40) {
		t.Fatalf("Find replica: %+v %v", r, ok)
	}
	if _, ok := topo.Find("10.0.0.2", 6380); ok {
		t.Fatal("Find matched a port the topology does not name")
	}

	for _, tc := range []struct{ doc, want string }{
		{`{"version": 1, "shards": []}`, "no shards"},
		{`{"version": -1, "shards": [{"slots": [], "primary": {"id": "` + strings.Repeat("a", 40) + `", "host": "h", "port": 1}}]}`, "negative"},
		{`{"version": 1, "shards": [{"slots": [[0, 16384]], "primary": {"id": "` + strings.Repeat("a", 40) + `", "host": "h", "port": 1}}]}`, "not within 0-16383"},
		{`{"version": 1, "shards": [{"slots": [[5, 4]], "primary": {"id": "` + strings.Repeat("a", 40) + `", "host": "h", "port": 1}}]}`, "not within"},
		{`{"version": 1, "shards": [{"slots": [], "primary": {"id": "xyz", "host": "h", "port": 1}}]}`, "not 40 hex"},
		{`{"version": 1, "shards": [{"slots": [], "primary": {"id": "` + strings.Repeat("a", 40) + `", "host": "", "port": 1}}]}`, "needs a host"},
		{`{"version": 1, "shards": [{"slots": [], "primary": {"id": "` + strings.Repeat("a", 40) + `", "host": "h", "port": 1},
		  "replicas": [{"id": "` + strings.Repeat("a", 40) + `", "host": "h2", "port": 1}]}]}`, "used twice"},
		{`{"version": 1, "shards": [{"slots": [], "primary": {"id": "` + strings.Repeat("a", 40) + `", "host": "h", "port": 1},
		  "replicas": [{"id": "` + strings.Repeat("b", 40) + `", "host": "h", "port": 1}]}]}`, "address h:1 is used twice"},
		{`{"version": 1, "shards": [{"slots": [[0, 10]], "primary": {"id": "` + strings.Repeat("a", 40) + `", "host": "h", "port": 1}},
		  {"slots": [[10, 20]], "primary": {"id": "` + strings.Repeat("b", 40) + `", "host": "h", "port": 2}}]}`, "slot 10 is also shard 0's"},
		{`{"version": 1, "shards": [], "extra": 1}`, "unknown field"},
		{`not json`, "invalid topology"},
	} {
		_, err := Parse([]byte(tc.doc))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%s): %v, want an error containing %q", tc.doc, err, tc.want)
		}
	}
}

// TestStateReload: a node adopts only newer versions that still name it
// with its id, and watchers see each adoption.
func TestStateReload(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "topo.json")
	write := func(doc string) {
		if err := os.WriteFile(file, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(goodTopology)
	st, err := NewStatic(file, "10.0.0.2", 6379)
	if err != nil {
		t.Fatal(err)
	}
	if v := st.View(); !v.Self.Replica || v.MyShard().Primary.Host != "10.0.0.1" {
		t.Fatalf("view: %+v", v.Self)
	}
	if _, err := NewStatic(file, "10.0.0.9", 6379); err == nil || !strings.Contains(err.Error(), "no node announced at 10.0.0.9:6379") {
		t.Fatalf("a node the file does not name: %v", err)
	}
	var seen []int64
	st.Watch(func(old, new *View) { seen = append(seen, new.Topo.Version) })
	if adopted, err := st.Reload(); adopted || err != nil {
		t.Fatalf("same version: adopted %v, %v", adopted, err)
	}
	// Version 4 promotes this node (shard 0's roles swapped).
	swapped := `{"version": 4, "shards": [
 {"slots": [[0, 8191]], "primary": {"id": "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", "host": "10.0.0.2", "port": 6379},
  "replicas": [{"id": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "host": "10.0.0.1", "port": 6379}]},
 {"slots": [[8192, 16383]], "primary": {"id": "dddddddddddddddddddddddddddddddddddddddd", "host": "10.0.0.3", "port": 6379}}
]}`
	write(swapped)
	if adopted, err := st.Reload(); !adopted || err != nil {
		t.Fatalf("version 4: adopted %v, %v", adopted, err)
	}
	if v := st.View(); v.Self.Replica || v.Topo.Version != 4 || v.Self.Node.ID != strings.Repeat("b", 40) {
		t.Fatalf("after version 4: %+v", v.Self)
	}
	// Version 5 gives this address another id: refused, version 4 stays.
	write(strings.Replace(strings.Replace(swapped, `"version": 4`, `"version": 5`, 1), "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", strings.Repeat("e", 40), 1))
	if adopted, err := st.Reload(); adopted || err == nil || !strings.Contains(err.Error(), "but it is "+strings.Repeat("b", 40)) {
		t.Fatalf("another id: adopted %v, %v", adopted, err)
	}
	write("{")
	if _, err := st.Reload(); err == nil {
		t.Fatal("an invalid file was adopted")
	}
	if st.View().Topo.Version != 4 || len(seen) != 1 || seen[0] != 4 {
		t.Fatalf("version %d, watchers saw %v", st.View().Topo.Version, seen)
	}
}

func TestLoadNodeID(t *testing.T) {
	dir := t.TempDir()
	id, err := LoadNodeID(dir, "")
	if err != nil || !ValidID(id) {
		t.Fatalf("new id %q, %v", id, err)
	}
	if again, err := LoadNodeID(dir, ""); again != id || err != nil {
		t.Fatalf("kept id %q, want %q (%v)", again, id, err)
	}
	if _, err := LoadNodeID(dir, strings.Repeat("f", 40)); err == nil || !strings.Contains(err.Error(), "another node's") {
		t.Fatalf("another id: %v", err)
	}
	dir2 := t.TempDir()
	if got, err := LoadNodeID(dir2, strings.Repeat("f", 40)); got != strings.Repeat("f", 40) || err != nil {
		t.Fatalf("given id: %q %v", got, err)
	}
}

// TestParseImports: an import names another shard that serves every slot
// it moves, each slot moving once; a static topology file has none.
func TestParseImports(t *testing.T) {
	doc := func(importing string) string {
		return `{"version": 2, "shards": [
 {"id": "cccccccccccccccccccccccccccccccccccccccc", "slots": [[0, 16383]], "primary": {"id": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "host": "h", "port": 1}},
 {"id": "dddddddddddddddddddddddddddddddddddddddd", "slots": [], "primary": {"id": "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", "host": "h", "port": 2},
  "importing": ` + importing + `}]}`
	}
	topo, err := Parse([]byte(doc(`[{"from": "cccccccccccccccccccccccccccccccccccccccc", "slots": [[8192, 16383]]}]`)))
	if err != nil || !topo.Complete() || topo.Owner(16383) != 0 || topo.ShardByID(strings.Repeat("d", 40)) != 1 {
		t.Fatalf("a valid import: %v", err)
	}
	for _, bad := range []string{
		`[{"from": "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee", "slots": [[0, 1]]}]`,                                                                          // no such shard
		`[{"from": "dddddddddddddddddddddddddddddddddddddddd", "slots": [[0, 1]]}]`,                                                                          // itself
		`[{"from": "cccccccccccccccccccccccccccccccccccccccc", "slots": []}]`,                                                                                // nothing
		`[{"from": "cccccccccccccccccccccccccccccccccccccccc", "slots": [[0, 16384]]}]`,                                                                      // out of range
		`[{"from": "cccccccccccccccccccccccccccccccccccccccc", "slots": [[0, 5]]}, {"from": "cccccccccccccccccccccccccccccccccccccccc", "slots": [[5, 6]]}]`, // twice
	} {
		if _, err := Parse([]byte(doc(bad))); err == nil {
			t.Fatalf("accepted importing %s", bad)
		}
	}
	file := filepath.Join(t.TempDir(), "topology.json")
	os.WriteFile(file, []byte(doc(`[{"from": "cccccccccccccccccccccccccccccccccccccccc", "slots": [[8192, 16383]]}]`)), 0o644)
	if _, err := NewStatic(file, "h", 1); err == nil || !strings.Contains(err.Error(), "importing") {
		t.Fatalf("a static topology with an import: %v", err)
	}
}

// TestReady: /readyz's policy. A node is ready once a topology names it,
// unless fenced; a replica also needs its link "connected".
func TestReady(t *testing.T) {
	s, err := NewDynamic(Node{ID: strings.Repeat("b", 40), Host: "10.0.0.2", Port: 6379})
	if err != nil {
		t.Fatal(err)
	}
	check := func(link string, ok bool, why string) {
		t.Helper()
		if gotOK, gotWhy := s.Ready(link); gotOK != ok || gotWhy != why {
			t.Errorf("Ready(%q) = %v %q, want %v %q", link, gotOK, gotWhy, ok, why)
		}
	}
	check("connected", false, "no cluster topology yet")
	topo, err := Parse([]byte(goodTopology))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Adopt(topo); err != nil {
		t.Fatal(err)
	}
	check("sync", false, "replica not caught up with its primary (link: sync)")
	check("connected", true, "")
	s.Leave()
	check("connected", false, "fenced: its etcd lease is not renewed, or the topology does not name this incarnation yet")
}
