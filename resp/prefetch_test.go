package resp

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
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
		in, key string
		size    int
	}{
		{multibulk("CL.THROTTLE", "gc:1", "10", "1", "1"), "gc:1", -1},
		{multibulk("cl.window", "w", "5", "1m"), "w", -1},            // any case
		{multibulk("TYPE", "k"), "k", -1},                            // any command with keys
		{multibulk("PING"), "", -1},                                  // no keys
		{multibulk("CL.ALL", "1", "FIXED", "a", "1", "1h"), "a", -1}, // keys found by parsing
		{multibulk("CL.ALL", "2", "FIXED", "a", "1", "1h", "THROTTLE", "b", "1", "1", "1", "COST", "2"), "a b", -1},
		{multibulk("CL.ALL", "3", "FIXED", "a", "1", "1h", "NOSUCH", "b", "1"), "a", -1}, // as far as the rules go
		{multibulk("CL.ALL", "x", "FIXED", "a", "1", "1h"), "", -1},
		{multibulk("CL.ALL", "9", "FIXED", "a", "1"), "", -1},
		{multibulk("NOSUCH", "k"), "", -1}, // unknown
		{multibulk("CL.THROTTLE", "gc:1", "10", "1", "1") + multibulk("PING"), "gc:1", len(multibulk("CL.THROTTLE", "gc:1", "10", "1", "1"))}, // the first of two
		{"*2\r\n$4\r\nTYPE\r\n$1\r\nk", "", 0},          // partial
		{"PING\r\n", "", 0},                             // inline
		{"*2\r\n$4\r\nTYPE\r\n$-1\r\n", "", 0},          // not for us to judge
		{"*1\r\n$4\r\nPING\r", "", 0},                   // no LF yet
		{"*9999999999\r\n", "", 0},                      // absurd count
		{"*2\r\n$4\r\nTYPE\r\n$99999999999\r\n", "", 0}, // absurd length
	} {
		keys, size := requestKeys([]byte(tc.in), c)
		want := tc.size
		if want < 0 {
			want = len(tc.in)
		}
		if got := string(bytes.Join(keys, []byte(" "))); got != tc.key || size != want {
			t.Errorf("requestKeys(%q) = %q, %d; want %q, %d", tc.in, got, size, tc.key, want)
		}
	}
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
	c.out = c.out[:0]
	c.endBatch()
	in := []byte(batch.String())
	store := c.srv.store
	busy := store.Shard(3)
	busy.Lock() // another loop's, say
	c.warm(in)
	busy.Unlock()
	for i := 0; i < store.NumShards(); i++ {
		if !store.Shard(i).TryLock() {
			t.Fatalf("shard %d is still locked after warm", i)
		}
		store.Shard(i).Unlock()
	}
	if a := testing.AllocsPerRun(100, func() { c.warm(in) }); a != 0 {
		t.Fatalf("warm allocated %.1f times a batch", a)
	}
}

// FuzzWarm: whatever a client sends, warming it neither panics nor leaves
// a shard locked.
func FuzzWarm(f *testing.F) {
	f.Add([]byte(multibulk("CL.THROTTLE", "a", "1", "1", "1") + multibulk("CL.WINDOW", "b", "1", "1h")))
	f.Add([]byte("*2\r\n$4\r\nTYPE\r\n$1\r\nk\r\n*2\r\n$4\r\nTYPE\r\n$1\r\nk"))
	f.Add([]byte("*3\r\n$3\r\nDEL\r\n$1\r\na\r\n$1\r\nb\r\n*1\r\n$4\r\nPING\r\n"))
	c, _ := testConn(4)
	c.exec(argsOf("CL.THROTTLE", "a", "1", "1", "1"))
	f.Fuzz(func(t *testing.T, in []byte) {
		c.warm(in)
		for i := 0; i < c.srv.store.NumShards(); i++ {
			if !c.srv.store.Shard(i).TryLock() {
				t.Fatalf("shard %d left locked", i)
			}
			c.srv.store.Shard(i).Unlock()
		}
	})
}
