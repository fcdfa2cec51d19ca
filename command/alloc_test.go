package command

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestLimiterCommandsAllocateNothing: in steady state, a limiter command
// (lookup, parsing, shard lock, engine, state decode and encode, reply)
// allocates nothing, on one hot key and on 1,000 keys taking turns, whether
// the keys stay alive or expire between calls (the clock moves 1 s a round,
// so every ACQUIRE lease and bucket of the "expiring" cases has expired by
// its key's next call).
func TestLimiterCommandsAllocateNothing(t *testing.T) {
	for _, cmd := range []string{
		"CL.THROTTLE {k} 1000000 1000000 1",
		"CL.TOKENBUCKET {k} 1000000 1000000 1",
		"CL.LEAKYBUCKET {k} 1000000 1000000 1",
		"CL.WINDOW {k} 1000000000 60 FIXED",
		"CL.WINDOW {k} 1000000000 60 SLIDING",
		"CL.WINDOW {k} 10000 10ms LOG",
		"CL.ACQUIRE {k} 1000 10ms",
		"CL.ALL 3 TOKENBUCKET {k}:a 1000000 1000000 1 THROTTLE {k}:b 1000000 1000000 1 FIXED {k}:c 1000000000 60",
		"CL.ALL 2 ACQUIRE {k}:a 1000 10ms SLIDING {k}:b 1000000000 60",
	} {
		for _, keys := range []int{1, 1000} {
			t.Run(fmt.Sprintf("%s/keys=%d", strings.Fields(cmd)[0], keys), func(t *testing.T) {
				c, clock := testConn(0)
				round := commandRound(t, c, cmd, keys, func(r []byte) bool { return r[0] == '*' })
				// Create the keys, grow scratch states and slabs: past two
				// 60 s windows, so that records have taken every size
				// their encodings take as windows advance.
				for range 130 {
					round()
					clock.Advance(time.Second)
				}
				if allocs := testing.AllocsPerRun(20, func() { round(); clock.Advance(time.Second) }); allocs != 0 {
					t.Fatalf("%.1f allocations per round of %d calls", allocs, keys)
				}
			})
		}
	}
}

// TestValueCommandsAllocateNothing: in steady state the value commands
// rate limiters on Redis send (counters with expiry, sorted-set logs,
// hash and list reads) allocate nothing, on 1,000 live keys taking turns:
// an allocation per request would run the garbage collector every few
// milliseconds at full load. (Writes that store new bytes in a hash or a
// list copy them: those are the value itself.)
func TestValueCommandsAllocateNothing(t *testing.T) {
	for _, tc := range []struct{ setup, cmd string }{
		{"SET {k} 1", "GET {k}"}, {"", "SET {k} xxx"}, {"", "SET {k} 1 EX 60"}, {"SET {k} 1", "SET {k} 1 PX 100 NX"},
		{"SET {k} 1", "GETEX {k} EX 60"}, {"", "INCR {k}"}, {"", "INCRBY {k} 3"}, {"", "DECR {k}"},
		{"SET {k} 1", "EXPIRE {k} 60"}, {"SET {k} 1", "PEXPIRE {k} 60000"}, {"SET {k} 1 EX 60", "TTL {k}"},
		{"SET {k} 1 EX 60", "PTTL {k}"}, {"SET {k} 1", "EXISTS {k}"}, {"", "DEL {k}"},
		{"SET {k} 1", "MGET {k} {k}"}, {"", "MSET {k} 1 {k} 2"},
		{"", "ZADD {k} 1 m"}, {"ZADD {k} 1 m 2 n", "ZCARD {k}"}, {"ZADD {k} 1 m 2 n", "ZREMRANGEBYSCORE {k} 0 0"},
		{"ZADD {k} 1 m 2 n", "ZRANGEBYSCORE {k} -inf +inf"},
		{"HSET {k} f 1 g 2", "HGET {k} f"}, {"HSET {k} f 1 g 2", "HMGET {k} f g"}, {"HSET {k} f 1 g 2", "HGETALL {k}"},
		{"RPUSH {k} a b c", "LRANGE {k} 0 -1"}, {"RPUSH {k} a b c", "LLEN {k}"},
	} {
		t.Run(tc.cmd, func(t *testing.T) {
			c, _ := testConn(0)
			ok := func(r []byte) bool { return r[0] != '-' }
			if tc.setup != "" {
				commandRound(t, c, tc.setup, 1000, ok)()
			}
			round := commandRound(t, c, tc.cmd, 1000, ok)
			for range 5 {
				round()
			}
			if allocs := testing.AllocsPerRun(10, round); allocs != 0 {
				t.Fatalf("%.1f allocations per round of 1000 calls", allocs)
			}
		})
	}
}

// commandRound returns a round of cmd on c over keys keys in turn ({k} in
// cmd stands for each), 16 to a batch, failing t on a reply that ok
// refuses. Slow log entries are turned off: a batch slower than 10 ms (a
// loaded machine, -race) would make one, which allocates its copy.
func commandRound(t *testing.T, c *connection, cmd string, keys int, ok func(reply []byte) bool) func() {
	c.h.obs.SetSlowlogThreshold(-1)
	calls := make([][][]byte, keys)
	for i := range calls {
		k := fmt.Sprintf("key:%06d", i)
		for _, f := range strings.Fields(strings.ReplaceAll(cmd, "{k}", k)) {
			calls[i] = append(calls[i], []byte(f))
		}
	}
	return func() {
		for i, args := range calls {
			c.exec(args)
			if len(c.W.Buf) == 0 || !ok(c.W.Buf) {
				t.Fatalf("%s: %q", args, c.W.Buf)
			}
			c.W.Buf = c.W.Buf[:0]
			if i%16 == 15 {
				c.EndBatch()
			}
		}
		c.EndBatch()
	}
}
