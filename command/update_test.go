package command

import (
	"fmt"
	"testing"

	"github.com/rlserver/rlserver/shard"
)

// TestExpiredKeyRevivedInPlace: a key whose state became fresh is reused
// (same entry, reset state) when it comes back, with the same replies a
// new key gets; a key of another kind replaces it.
func TestExpiredKeyRevivedInPlace(t *testing.T) {
	c, clock := testConn(1)
	store := c.Store()
	run := c.do
	want := "*5\r\n:1\r\n:10\r\n:5\r\n:0\r\n:500\r\n"
	if got := run("CL.TOKENBUCKET", "k", "10", "10", "1s", "5"); got != want {
		t.Fatalf("first take = %q, want %q", got, want)
	}
	sh := store.Shard(0)
	// Other keys between the calls, so that k is not hot (kept as a box).
	for i := range shard.HotKeys {
		run("CL.TOKENBUCKET", fmt.Sprint("other", i), "10", "10", "1h")
	}
	before := store.Stats().Memory
	clock.Advance(600_000_000) // fresh after 500 ms
	if got := run("CL.TOKENBUCKET", "k", "10", "10", "1s", "5"); got != want {
		t.Fatalf("take after expiry = %q, want %q (as a new key)", got, want)
	}
	lk := sh.Lock()
	f, n := lk.Find([]byte("k"), store.Hash([]byte("k"))), lk.Len()
	lk.Unlock()
	if !f.OK || n != 1+shard.HotKeys || store.Stats().Memory != before {
		t.Fatalf("after revival: %+v, %d keys, memory %d (was %d)", f, n, store.Stats().Memory, before)
	}
	if st := store.Stats(); st.Expired != 1 {
		t.Fatalf("expired_keys = %d, want 1", st.Expired)
	}
	clock.Advance(600_000_000)
	if got := run("CL.WINDOW", "k", "5", "1m", "FIXED"); got != "*5\r\n:1\r\n:5\r\n:4\r\n:0\r\n:58800\r\n" {
		t.Fatalf("another kind on the expired key = %q", got)
	}
	if run("TYPE", "k") != "+window\r\n" {
		t.Fatal("TYPE after another kind took the expired key is not window")
	}
}
