package command

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rlserver/rlserver/cluster"
)

// A slot on the move (etcd mode): the source's primary answers ASK for
// what it handed over, and the importing primary serves a slot handed to
// it to every connection, ASKING or not, so that nodes on two topology
// versions cannot send a client back and forth with MOVED. Before the
// handover it answers MOVED to the owner.
func TestRouteSlotOnTheMove(t *testing.T) {
	st := twoShards(t)
	c, _ := testConn(0)
	c.h.SetCluster(st, nil)
	keyOn := func(mine bool) (string, int) {
		for i := 0; ; i++ {
			k := fmt.Sprint("k", i)
			if s := cluster.Slot([]byte(k)); s < 8192 == mine {
				return k, s
			}
		}
	}
	run := c.do
	theirs, slot := keyOn(false)
	want := fmt.Sprintf("-MOVED %d 127.0.0.1:7002\r\n", slot)
	if got := run("CL.THROTTLE", theirs, "10", "10", "60"); got != want {
		t.Fatalf("before the handover: %q, want %q", got, want)
	}
	var g cluster.Gate
	g.Imported.Add([]cluster.Range{{slot, slot}})
	st.SetGate(&g)
	if got := run("CL.THROTTLE", theirs, "10", "10", "60"); got != "*5\r\n:0\r\n:11\r\n:10\r\n:-1\r\n:6\r\n" {
		t.Fatalf("handed over, without ASKING: %q", got)
	}
	if got := run("ASKING") + run("CL.THROTTLE", theirs, "10", "10", "60"); got != "+OK\r\n*5\r\n:0\r\n:11\r\n:9\r\n:-1\r\n:12\r\n" {
		t.Fatalf("handed over, after ASKING: %q", got)
	}

	mine, slot := keyOn(true)
	g = cluster.Gate{To: cluster.Node{ID: strings.Repeat("b", 40), Host: "127.0.0.1", Port: 7002}}
	g.Handed.Add([]cluster.Range{{slot, slot}})
	st.SetGate(&g)
	want = fmt.Sprintf("-ASK %d 127.0.0.1:7002\r\n", slot)
	if got := run("CL.THROTTLE", mine, "10", "10", "60"); got != want {
		t.Fatalf("handed away: %q, want %q", got, want)
	}
}

// twoShards returns the cluster state of a node, 127.0.0.1:7001, serving
// slots 0-8191; 127.0.0.1:7002 serves the rest.
func twoShards(t *testing.T) *cluster.State {
	t.Helper()
	a, b := strings.Repeat("a", 40), strings.Repeat("b", 40)
	st, err := cluster.NewDynamic(cluster.Node{ID: a, Host: "127.0.0.1", Port: 7001})
	if err != nil {
		t.Fatal(err)
	}
	topo, err := cluster.Parse(fmt.Appendf(nil, `{"version": 2, "shards": [
		{"slots": [[0, 8191]], "primary": {"id": %q, "host": "127.0.0.1", "port": 7001}},
		{"slots": [[8192, 16383]], "primary": {"id": %q, "host": "127.0.0.1", "port": 7002}}]}`, a, b))
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := st.Adopt(topo); !ok || err != nil {
		t.Fatalf("Adopt: %v, %v", ok, err)
	}
	return st
}
