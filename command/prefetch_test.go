package command

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/rlserver/rlserver/resp"
)

func multibulk(args ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.String()
}

func TestRequestKeys(t *testing.T) {
	c, _ := testConn(1)
	for _, tc := range []struct {
		args []string
		keys string
	}{
		{[]string{"CL.THROTTLE", "gc:1", "10", "1", "1"}, "gc:1"},
		{[]string{"cl.window", "w", "5", "1m"}, "w"},            // any case
		{[]string{"TYPE", "k"}, "k"},                            // any command with keys
		{[]string{"PING"}, ""},                                  // no keys
		{[]string{"CL.ALL", "1", "FIXED", "a", "1", "1h"}, "a"}, // keys found by parsing
		{[]string{"CL.ALL", "2", "FIXED", "a", "1", "1h", "THROTTLE", "b", "1", "1", "1", "COST", "2"}, "a b"},
		{[]string{"CL.ALL", "3", "FIXED", "a", "1", "1h", "NOSUCH", "b", "1"}, "a"}, // as far as the rules go
		{[]string{"CL.ALL", "x", "FIXED", "a", "1", "1h"}, ""},
		{[]string{"CL.ALL", "9", "FIXED", "a", "1"}, ""},
		{[]string{"CL.THROTTLE"}, ""}, // too short for its key: exec will say so
		{[]string{"NOSUCH", "k"}, ""}, // unknown
	} {
		keys := c.requestKeys(argsOf(tc.args...))
		if got := string(bytes.Join(keys, []byte(" "))); got != tc.keys {
			t.Errorf("requestKeys(%q) = %q; want %q", tc.args, got, tc.keys)
		}
	}

	// After a CL.ALL as read, one with as many arguments has its keys
	// guessed where that one's were; one with another count is parsed.
	c.Exec(asRead(argsOf(strings.Fields("CL.ALL 2 FIXED a 1 1h THROTTLE b 1 1 1")...)))
	c.EndBatch()
	for args, want := range map[string]string{
		"cl.all 2 FIXED x 5 1m THROTTLE y 2 2 2":          "x y",
		"CL.ALL 2 THROTTLE x 1 1 1 FIXED y 1 1h":          "x FIXED", // a guess: the count matches
		"CL.ALL 2 FIXED x 5 1m THROTTLE y 2 2 2 COST 2":   "x y",
		"CL.ALL 3 FIXED x 5 1m FIXED y 2 2m FIXED z 1 1h": "x y z",
	} {
		keys := c.requestKeys(argsOf(strings.Fields(args)...))
		if got := string(bytes.Join(keys, []byte(" "))); got != want {
			t.Errorf("after a CL.ALL, requestKeys(%q) = %q; want %q", args, got, want)
		}
	}
}

// parsedBatch returns what a batch-mode Reader queues for in: the requests'
// arguments back to back, and each one's count.
func parsedBatch(in []byte) (args [][]byte, counts []int) {
	r := resp.NewReader(bytes.NewReader(in), 0)
	r.EnableBatch()
	for {
		_, err := r.Next()
		if a, n := r.Batch(); n != nil {
			args, counts = append(args, a...), append(counts, n...)
		}
		if err != nil {
			break
		}
	}
	return args, counts
}

// TestWarmLeavesNoLockAndAllocatesNothing: warming a batch takes and gives
// back the shards' locks (a shard held elsewhere is skipped, not waited
// for), and allocates nothing.
func TestWarmLeavesNoLockAndAllocatesNothing(t *testing.T) {
	c, _ := testConn(8)
	var batch strings.Builder
	for i := range 200 {
		k := fmt.Sprintf("k:%d", i)
		c.exec(argsOf("CL.THROTTLE", k, "10", "1", "1"))
		batch.WriteString(multibulk("CL.THROTTLE", k, "10", "1", "1"))
		if i%10 == 0 {
			batch.WriteString(multibulk("CL.ALL", "2", "FIXED", k+":w", "5", "1h", "TOKENBUCKET", k+":b", "5", "1", "1h"))
		}
	}
	c.W.Buf = c.W.Buf[:0]
	c.EndBatch()
	args, counts := parsedBatch([]byte(batch.String()))
	if len(counts) != 220 {
		t.Fatalf("parsed %d requests, want 220", len(counts))
	}
	store := c.Store()
	busy := store.Shard(3)
	busy.Lock() // another loop's, say
	c.warm(args, counts)
	busy.Unlock()
	for i := 0; i < store.NumShards(); i++ {
		if !store.Shard(i).TryLock() {
			t.Fatalf("shard %d is still locked after warm", i)
		}
		store.Shard(i).Unlock()
	}
	if a := testing.AllocsPerRun(100, func() { c.warm(args, counts) }); a != 0 {
		t.Fatalf("warm allocated %.1f times a batch", a)
	}
}

// FuzzWarm: whatever a client sends, warming what the reader queues of it
// neither panics nor leaves a shard locked.
func FuzzWarm(f *testing.F) {
	f.Add([]byte(multibulk("CL.THROTTLE", "a", "1", "1", "1") + multibulk("CL.WINDOW", "b", "1", "1h")))
	f.Add([]byte("*2\r\n$4\r\nTYPE\r\n$1\r\nk\r\n*2\r\n$4\r\nTYPE\r\n$1\r\nk"))
	f.Add([]byte("*3\r\n$3\r\nDEL\r\n$1\r\na\r\n$1\r\nb\r\n*1\r\n$4\r\nPING\r\n"))
	c, _ := testConn(4)
	c.exec(argsOf("CL.THROTTLE", "a", "1", "1", "1"))
	f.Fuzz(func(t *testing.T, in []byte) {
		r := resp.NewReader(bytes.NewReader(in), 0)
		r.EnableBatch()
		for {
			_, err := r.Next()
			if args, counts := r.Batch(); counts != nil {
				c.warm(args, counts)
			}
			if err != nil {
				break
			}
		}
		for i := 0; i < c.Store().NumShards(); i++ {
			if !c.Store().Shard(i).TryLock() {
				t.Fatalf("shard %d left locked", i)
			}
			c.Store().Shard(i).Unlock()
		}
	})
}
