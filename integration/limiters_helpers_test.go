package integration

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
)

// step is one row of a limiter table: a command and its exact reply.
type limStep struct {
	args []any
	want any
}

// runSteps drives steps in order, numbering them in failure messages.
func runSteps(t *testing.T, c *redis.Client, steps []limStep) {
	t.Helper()
	for i, st := range steps {
		r := do(t, c, st.args...)
		if r.err != nil {
			t.Fatalf("step %d: %v: error %v, want %v", i, st.args, r.err, st.want)
		}
		if fmt.Sprint(r.val) != fmt.Sprint(st.want) {
			t.Fatalf("step %d: %v = %v, want %v", i, st.args, r.val, st.want)
		}
	}
}

// dec is a decision reply, for compact tables.
func dec(allowed, limit, remaining, retry, reset int64) []int64 {
	return []int64{allowed, limit, remaining, retry, reset}
}

// words builds a command from a space-separated string, for compact tables.
func words(s string) []any {
	var out []any
	for _, f := range strings.Fields(s) {
		out = append(out, f)
	}
	return out
}

// snapshot is what a client can see of a key without changing it: EXISTS,
// TYPE, PTTL and, when peek is given, a peek's reply.
func snapshot(t *testing.T, c *redis.Client, key string, peek []any) string {
	t.Helper()
	s := fmt.Sprintf("exists=%v type=%v pttl=%v", do(t, c, "EXISTS", key).val, do(t, c, "TYPE", key).val, do(t, c, "PTTL", key).val)
	if peek != nil {
		r := do(t, c, peek...)
		s += fmt.Sprintf(" peek=%v err=%v", r.val, r.err)
	}
	return s
}

// unchanged runs f and fails if any key's snapshot changed. peeks[i] is the
// peek command for keys[i] (nil for none).
func unchanged(t *testing.T, c *redis.Client, keys []string, peeks [][]any, what string, f func()) {
	t.Helper()
	before := make([]string, len(keys))
	for i, k := range keys {
		before[i] = snapshot(t, c, k, peeks[i])
	}
	f()
	for i, k := range keys {
		if after := snapshot(t, c, k, peeks[i]); after != before[i] {
			t.Fatalf("%s changed key %q: before %s, after %s", what, k, before[i], after)
		}
	}
}

// expiresIn asserts that key's PTTL is ms and that the key exists until
// exactly ms have passed: advance ms-1, EXISTS 1; advance 1 more, EXISTS 0.
// It moves the server clock forward by ms.
func expiresIn(t *testing.T, c *redis.Client, key string, ms int64) {
	t.Helper()
	do(t, c, "PTTL", key).equal(ms)
	advance(t, c, ms-1)
	do(t, c, "EXISTS", key).equal(1)
	do(t, c, "PTTL", key).equal(1)
	advance(t, c, 1)
	do(t, c, "EXISTS", key).equal(0)
	do(t, c, "PTTL", key).equal(-2)
}

// leaseID returns the sixth field of a CL.ACQUIRE reply, checking the first
// five and that the id is 16 characters.
func leaseID(t *testing.T, c *redis.Client, want []int64, cmd ...any) string {
	t.Helper()
	r := do(t, c, cmd...)
	arr, ok := r.val.([]any)
	if r.err != nil || !ok || len(arr) != 6 {
		t.Fatalf("%v = %v %v, want 6 fields", cmd, r.val, r.err)
	}
	if got := fmt.Sprint(arr[:5]); got != fmt.Sprint(want) {
		t.Fatalf("%v = %v, want %v + lease id", cmd, arr, want)
	}
	id, ok := arr[5].(string)
	if !ok || len(id) != 16 {
		t.Fatalf("%v lease id = %T %v, want 16 characters", cmd, arr[5], arr[5])
	}
	return id
}

// numShards is the shard count the tests that care about shards start the
// server with.
const numShards = 8

// shardOf returns the shard index of key on s, read from SCAN's cursor: a
// cursor's bits above 52 are the shard to continue from (shard/scan.go), so
// SCAN 0 MATCH key COUNT 1 returns the index of the shard after key's one,
// or 0 when key's shard is the last. The key is created and deleted.
func shardOf(t *testing.T, c *redis.Client, key string) int {
	t.Helper()
	do(t, c, "CL.WINDOW", key, 1, "1h", "FIXED").ints()
	defer func() { do(t, c, "DEL", key).equal(1) }()
	keys, cursor, err := c.Scan(ctx, 0, key, 1).Result()
	if err != nil || len(keys) != 1 || keys[0] != key {
		t.Fatalf("SCAN 0 MATCH %s COUNT 1 = %v %v %v", key, cursor, keys, err)
	}
	if cursor == 0 {
		return numShards - 1
	}
	return int(cursor>>52) - 1
}

// twoShards returns two keys with prefix that live in different shards.
func twoShards(t *testing.T, c *redis.Client, prefix string) (string, string) {
	t.Helper()
	a := prefix + "0"
	sa := shardOf(t, c, a)
	for i := 1; i < 200; i++ {
		b := prefix + strconv.Itoa(i)
		if shardOf(t, c, b) != sa {
			return a, b
		}
	}
	t.Fatalf("200 keys all in shard %d", sa)
	return "", ""
}

// hammer runs calls commands from each of 64 goroutines on one client with a
// pool of 64 connections, and returns how many were admitted (admitted
// reads a reply).
func hammer(t *testing.T, c *redis.Client, calls int, admitted func([]any) bool, cmd ...any) int64 {
	t.Helper()
	var n atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for g := 0; g < 64; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for i := 0; i < calls; i++ {
				v, err := c.Do(ctx, cmd...).Slice()
				if err != nil {
					t.Errorf("%v: %v", cmd, err)
					return
				}
				if admitted(v) {
					n.Add(1)
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	return n.Load()
}
