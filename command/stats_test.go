package command

import (
	"fmt"
	"strings"
	"testing"
)

// TestHistogramBuckets: each duration lands in the bucket whose bounds
// hold it, buckets are at most 25% wide, and octaves start at powers of
// two (LATENCY HISTOGRAM and Prometheus sum whole buckets).
func TestHistogramBuckets(t *testing.T) {
	for v := int64(0); v < 1<<41; v = v*9/8 + 1 {
		i := histIndex(v)
		lo := int64(0)
		if i > 0 {
			lo = histUpper(i-1) + 1
		}
		if i < histBuckets-1 && (v < lo || v > histUpper(i)) {
			t.Fatalf("histIndex(%d) = %d, which holds [%d, %d]", v, i, lo, histUpper(i))
		}
		if i > 0 && i < histBuckets-1 && float64(histUpper(i)-lo+1) > 0.25*float64(lo)+1 {
			t.Fatalf("bucket %d [%d, %d] is wider than 25%%", i, lo, histUpper(i))
		}
	}
	for k := 6; k < 40; k++ {
		if i := histIndex(1 << k); i != 1+(k-6)*4 || histUpper(i-1) != 1<<k-1 {
			t.Fatalf("2^%d ns starts bucket %d, want %d", k, i, 1+(k-6)*4)
		}
	}
	if histIndex(1<<62) != histBuckets-1 {
		t.Fatal("a huge duration is not in the last bucket")
	}
}

func TestPercentile(t *testing.T) {
	var s CmdStats
	s.hist[histIndex(1000)] = 98   // ~1 µs
	s.hist[histIndex(50000)] = 1   // ~50 µs
	s.hist[histIndex(3000000)] = 1 // ~3 ms
	for _, c := range []struct {
		p    float64
		want int64
	}{{50, histUpper(histIndex(1000))}, {98, histUpper(histIndex(1000))}, {99, histUpper(histIndex(50000))}, {99.9, histUpper(histIndex(3000000))}, {100, histUpper(histIndex(3000000))}} {
		if got := s.percentile(c.p); got != c.want {
			t.Errorf("p%v = %d, want %d", c.p, got, c.want)
		}
	}
	us, counts := s.powersOfTwoUsec()
	if fmt.Sprint(us, counts) != "[1 65 4194] [98 99 100]" {
		t.Errorf("LATENCY HISTOGRAM buckets %v %v", us, counts)
	}
}

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
		if s.Calls > 0 && s.samples() != uint64(s.Calls) {
			t.Errorf("%s: %d calls, %d latency samples", s.Name, s.Calls, s.samples())
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

// TestPrefixesBounded: prefixes are registered until maxPrefixes, and a
// prefix that cannot be a label value (binary keys) is "other".
func TestPrefixesBounded(t *testing.T) {
	c, _ := testConn(0)
	for _, k := range []string{"\xff\xfe:k", "a\nb:k", "nocolon", ":empty", strings.Repeat("p", maxPrefixLen+1) + ":k"} {
		if i := c.prefixIndex([]byte(k)); i != otherPrefix {
			t.Errorf("prefix of %q = %d, want other", k, i)
		}
	}
	for i := range maxPrefixes + 3 {
		want := i
		if i >= maxPrefixes {
			want = otherPrefix
		}
		k := fmt.Sprintf("p%d:x", i)
		if got := c.prefixIndex([]byte(k)); got != want {
			t.Fatalf("prefix of %q = %d, want %d", k, got, want)
		}
		if got := c.prefixIndex([]byte(k + ":y")); got != want { // cached
			t.Fatalf("prefix of %q again = %d, want %d", k, got, want)
		}
	}
	if got := c.prefixIndex([]byte("p3:z")); got != 3 {
		t.Fatalf("prefix p3 = %d after others, want 3", got)
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
