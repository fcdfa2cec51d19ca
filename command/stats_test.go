package command

import (
	"fmt"
	"strings"
	"testing"
)

// TestStatsOfBatches: calls, failures, rejections and decisions are
// counted exactly whatever the batches hold: more different commands than
// a batch keeps apart, EXEC's commands, statistics read mid-batch, a
// closed connection.
func TestStatsOfBatches(t *testing.T) {
	c, _ := testConn(0)
	h := c.h
	names := []string{"PING", "ECHO x", "TIME", "DBSIZE", "EXISTS a", "TTL a", "PTTL a", "TYPE a", "CLIENT ID", "CLIENT GETNAME"}
	for round := 0; round < 3; round++ {
		for _, n := range names {
			c.exec(argsOf(strings.Fields(n)...))
		}
		c.exec(argsOf("CL.THROTTLE", "user:1", "1", "1", "60")) // allowed, allowed, denied
		c.exec(argsOf("CL.THROTTLE", "x"))                      // rejected
		c.exec(argsOf("CL.TOKENBUCKET", "user:1", "1", "1", "1"))
		c.EndBatch()
	}
	c.exec(argsOf("MULTI"))
	c.exec(argsOf("CL.WINDOW", "nocolon", "1", "60"))
	c.exec(argsOf("PING"))
	c.exec(argsOf("EXEC"))
	c.exec(argsOf("INFO", "commandstats")) // publishes mid-batch
	c.EndBatch()
	c.Close()
	snap := h.Snapshot()
	got := map[string]string{}
	for _, s := range snap.Commands {
		got[s.Name] = fmt.Sprintf("%d/%d/%d/%d/%d", s.Calls, s.Failed, s.Rejected, s.Allowed, s.Denied)
		if s.Calls > 0 && s.Samples() != uint64(s.Calls) {
			t.Errorf("%s: %d calls, %d latency samples", s.Name, s.Calls, s.Samples())
		}
	}
	want := map[string]string{
		"ping": "4/0/0/0/0", "echo": "3/0/0/0/0", "time": "3/0/0/0/0", "dbsize": "3/0/0/0/0", "exists": "3/0/0/0/0",
		"ttl": "3/0/0/0/0", "pttl": "3/0/0/0/0", "type": "3/0/0/0/0", "client|id": "3/0/0/0/0", "client|getname": "3/0/0/0/0",
		"cl.throttle": "3/0/3/2/1", "cl.tokenbucket": "3/3/0/0/0", "multi": "1/0/0/0/0", "exec": "1/0/0/0/0",
		"cl.window": "1/0/0/1/0", "info": "1/0/0/0/0",
		// limiters that decided nothing are listed (with zeros) for /metrics
		"gcra": "0/0/0/0/0", "cl.leakybucket": "0/0/0/0/0", "cl.acquire": "0/0/0/0/0", "cl.all": "0/0/0/0/0",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("statistics\n got %v\nwant %v", got, want)
	}
	if fmt.Sprint(snap.Errors) != "map[ERR:3 WRONGTYPE:3]" {
		t.Errorf("errors %v", snap.Errors)
	}
	pfx := map[string]string{}
	for _, p := range snap.Prefixes {
		pfx[p.Prefix] = fmt.Sprintf("%d/%d", p.Allowed, p.Denied)
	}
	if fmt.Sprint(pfx) != "map[other:1/0 user:2/1]" {
		t.Errorf("prefixes %v", pfx)
	}
}

// TestErrorsAllocateNothing: counting an error reply of a code seen before
// allocates nothing.
func TestErrorsAllocateNothing(t *testing.T) {
	c, _ := testConn(0)
	c.exec(argsOf("CL.THROTTLE", "k", "1", "1", "60"))
	wrong := argsOf("CL.TOKENBUCKET", "k", "1", "1", "1")
	c.exec(wrong)
	c.EndBatch()
	if n := testing.AllocsPerRun(100, func() {
		c.W.Buf = c.W.Buf[:0]
		c.exec(wrong)
		c.EndBatch()
	}); n != 0 {
		t.Fatalf("%.1f allocations per WRONGTYPE", n)
	}
}
