package integration

import (
	"fmt"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/rlserver/rlserver/internal/redistest"
)

// The maxmemory policies on values, side by side with redis-server where
// Redis can be driven the same way. rlserver runs with one shard, whose
// table is small enough that eviction looks at every key: what the tests
// assert is then exact, not a matter of sampling. Redis samples
// (maxmemory-samples 10 here, and its pool of 16): the scenarios leave it
// many more evictable keys than it evicts, so that it too finds them.

// evictTarget is a server the eviction scenarios run on: pass makes every
// key written so far older, by the server's LRU clock, than any read or
// write after it; used is the bytes its bound counts.
type evictTarget struct {
	name string
	c    *redis.Client
	pass func(t *testing.T)
	used func(t *testing.T) int64
}

// evictTargets returns rlserver (one shard, its clock driven by DEBUG
// CLOCK) and redis-server (its clock real: pass polls OBJECT IDLETIME,
// which touches nothing, until the oldest key is 3 s idle), both under
// policy with lfu-log-factor 0 and lfu-decay-time 0, so that an LFU
// counter is exactly 5 plus the accesses.
func evictTargets(t *testing.T, policy string) []evictTarget {
	ours := start(t, "--dir", "", "--shards", "1", "--maxmemory-policy", policy).client(t, 2)
	setClock(t, ours, t0)
	theirs := redis.NewClient(&redis.Options{Addr: redistest.Start(t), Protocol: 2})
	t.Cleanup(func() { theirs.Close() })
	for _, c := range []*redis.Client{ours, theirs} {
		for _, kv := range [][2]string{{"maxmemory-policy", policy}, {"maxmemory-samples", "10"}, {"lfu-log-factor", "0"}, {"lfu-decay-time", "0"}} {
			do(t, c, "CONFIG", "SET", kv[0], kv[1]).equal("OK")
		}
	}
	return []evictTarget{
		{"rlserver", ours, func(t *testing.T) { advance(t, ours, 100_000) },
			func(t *testing.T) int64 { return infoField(t, ours, "memory", "used_memory_dataset") }},
		{"redis-server", theirs, func(t *testing.T) {
			if policy == "allkeys-lfu" {
				return // an LFU counter is no time
			}
			eventually(t, "old:00 idle for 3 s on redis-server", func() bool {
				return do(t, theirs, "OBJECT", "IDLETIME", "old:00").val.(int64) >= 3
			})
		}, func(t *testing.T) int64 { return infoField(t, theirs, "memory", "used_memory") }},
	}
}

// evictScenario writes 100 values of 1000 bytes (old:00-99), lets time
// pass, reads every fifth reads times, then bounds memory to what it
// holds plus 20 values and writes 50 more (new:00-49). It checks that
// the keys evicted, as many as evicted_keys says, are none of the old
// keys read, and returns how many of the new ones were.
func evictScenario(t *testing.T, tg evictTarget, reads int) int {
	c := tg.c
	val := strings.Repeat("v", 1000)
	base := tg.used(t)
	for i := range 100 {
		do(t, c, "SET", fmt.Sprintf("old:%02d", i), val).equal("OK")
	}
	tg.pass(t)
	read := func(i int) bool { return i%5 == 0 }
	for i := range 100 {
		if read(i) {
			for range reads {
				do(t, c, "GET", fmt.Sprintf("old:%02d", i)).equal(val)
			}
		}
	}
	used := tg.used(t)
	per := (used - base) / 100
	do(t, c, "CONFIG", "SET", "maxmemory", used+20*per).equal("OK")
	for j := range 50 {
		do(t, c, "SET", fmt.Sprintf("new:%02d", j), val).equal("OK")
	}
	var missing []string
	for i := range 100 {
		k := fmt.Sprintf("old:%02d", i)
		if do(t, c, "EXISTS", k).val.(int64) == 0 {
			if read(i) {
				t.Errorf("%s: %s, read since, evicted while keys never read remain", tg.name, k)
			}
			missing = append(missing, k)
		}
	}
	newGone := 0
	for j := range 50 {
		if do(t, c, "EXISTS", fmt.Sprintf("new:%02d", j)).val.(int64) == 0 {
			newGone++
		}
	}
	evicted := statValue(t, do(t, c, "INFO", "stats").val.(string), "evicted_keys")
	if int(evicted) != len(missing)+newGone || len(missing)+newGone < 20 {
		t.Errorf("%s: evicted_keys %d; %d old keys and %d new ones missing, want 20 or more",
			tg.name, evicted, len(missing), newGone)
	}
	return newGone
}

// TestLRUEvictsLeastRecentlyUsed: under allkeys-lru (rlserver's
// default), the values read since go last: of 100 values, a fifth read
// again after time passed, then 50 written under a bound with room for
// 20 of them, the keys evicted are only ones never read, on rlserver and
// on redis-server alike, and none of the new keys.
func TestLRUEvictsLeastRecentlyUsed(t *testing.T) {
	t.Parallel()
	for _, tg := range evictTargets(t, "allkeys-lru") {
		if gone := evictScenario(t, tg, 1); gone != 0 {
			t.Errorf("%s: %d of the keys written last evicted", tg.name, gone)
		}
	}
}

// TestLFUEvictsLeastFrequentlyUsed: under allkeys-lfu the values read
// three times go last, and OBJECT FREQ reports Redis's counters (5 for a
// new key, one more per access with lfu-log-factor 0). OBJECT IDLETIME
// answers Redis's error under an LFU policy.
func TestLFUEvictsLeastFrequentlyUsed(t *testing.T) {
	t.Parallel()
	for _, tg := range evictTargets(t, "allkeys-lfu") {
		evictScenario(t, tg, 3) // new keys start at 5, as unread old ones: either may go
		do(t, tg.c, "OBJECT", "FREQ", "old:00").equal(8)
		do(t, tg.c, "SET", "fresh", "1").equal("OK")
		do(t, tg.c, "OBJECT", "FREQ", "fresh").equal(5)
		do(t, tg.c, "INCR", "fresh").equal(2)
		do(t, tg.c, "OBJECT", "FREQ", "fresh").equal(6)
	}
	diffRequests(t, [][]string{
		{"CONFIG", "SET", "maxmemory-policy", "allkeys-lfu"},
		{"SET", "k", "v"},
		{"OBJECT", "IDLETIME", "k"},
		{"OBJECT", "IDLETIME", "nokey"},
		{"OBJECT", "FREQ", "nokey"},
		{"CONFIG", "SET", "lfu-log-factor", "-1"},
		{"CONFIG", "SET", "lfu-log-factor", "x"},
		{"CONFIG", "SET", "lfu-decay-time", "2147483648"},
		{"CONFIG", "SET", "lfu-log-factor", "0"},
		{"CONFIG", "SET", "lfu-decay-time", "0"},
		{"CONFIG", "GET", "lfu-log-factor"},
		{"CONFIG", "GET", "lfu-decay-time"},
		{"GET", "k"},
		{"OBJECT", "FREQ", "k"},
		{"CONFIG", "SET", "maxmemory-policy", "allkeys-lru"},
		{"OBJECT", "FREQ", "k"},
		{"CONFIG", "SET", "lfu-log-factor", "10"},
		{"CONFIG", "SET", "lfu-decay-time", "1"},
	})
}

// TestObjectIdleTimeAgainstRedis: OBJECT IDLETIME counts from a key's
// last read or write, in real seconds, on both servers; TYPE, TTL, PTTL,
// EXPIRETIME, EXISTS, OBJECT and MEMORY USAGE leave it, as Redis's
// LOOKUP_NOTOUCH; GET, HGET, EXPIRE, APPEND, RENAME (its source) and
// TOUCH reset it.
func TestObjectIdleTimeAgainstRedis(t *testing.T) {
	t.Parallel()
	ours := start(t, "--dir", "").client(t, 2)
	theirs := redis.NewClient(&redis.Options{Addr: redistest.Start(t), Protocol: 2})
	t.Cleanup(func() { theirs.Close() })
	both := []*redis.Client{ours, theirs}
	names := []string{"rlserver", "redis-server"}
	for _, c := range both {
		for _, k := range []string{"a", "b", "c", "d", "e", "f"} {
			do(t, c, "SET", k, "v").equal("OK") // not an integer: Redis shares those between keys
		}
		do(t, c, "HSET", "h", "f", "v").equal(1)
	}
	for i, c := range both {
		eventually(t, names[i]+": a idle for 3 s", func() bool {
			return do(t, c, "OBJECT", "IDLETIME", "a").val.(int64) >= 3
		})
	}
	for _, c := range both {
		for _, req := range [][]any{{"TYPE", "a"}, {"TTL", "a"}, {"PTTL", "a"}, {"EXPIRETIME", "a"}, {"EXISTS", "a"},
			{"OBJECT", "ENCODING", "a"}, {"MEMORY", "USAGE", "a"}, {"GET", "b"}, {"EXPIRE", "c", 100},
			{"APPEND", "d", "x"}, {"RENAME", "e", "e2"}, {"HGET", "h", "f"}, {"TOUCH", "f", "nokey"}} {
			if r := do(t, c, req...); r.err != nil {
				t.Fatalf("%v: %v", req, r.err)
			}
		}
	}
	for i, c := range both {
		if n := do(t, c, "OBJECT", "IDLETIME", "a").val.(int64); n < 3 {
			t.Errorf("%s: a idle %d s after commands that do not touch it, want 3 or more", names[i], n)
		}
		for _, k := range []string{"b", "c", "d", "e2", "h", "f"} {
			if n := do(t, c, "OBJECT", "IDLETIME", k).val.(int64); n > 1 {
				t.Errorf("%s: %s idle %d s just after a command touched it", names[i], k, n)
			}
		}
	}
}

// TestVolatilePolicies: under each volatile-* policy only keys with a
// TTL are evicted; once none is left, the commands that grow the
// keyspace answer Redis's -OOM (the text compared with redis-server's)
// while reads run. A key given a TTL is evictable again.
func TestVolatilePolicies(t *testing.T) {
	t.Parallel()
	val := strings.Repeat("v", 1000)
	for _, policy := range []string{"volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl"} {
		t.Run(policy, func(t *testing.T) {
			t.Parallel()
			rc := redis.NewClient(&redis.Options{Addr: redistest.Start(t), Protocol: 2})
			t.Cleanup(func() { rc.Close() })
			do(t, rc, "SET", "fill", strings.Repeat("v", 100000)).equal("OK")
			do(t, rc, "CONFIG", "SET", "maxmemory-policy", policy).equal("OK")
			do(t, rc, "CONFIG", "SET", "maxmemory", 1).equal("OK")
			theirs := do(t, rc, "SET", "k", "v").err
			if theirs == nil {
				t.Fatal("redis-server: SET over maxmemory with no key with a TTL ran")
			}

			c := start(t, "--dir", "", "--shards", "1", "--maxmemory", "64kb", "--maxmemory-policy", policy).client(t, 2)
			for i := range 20 {
				do(t, c, "SET", fmt.Sprint("vol:", i), val, "EX", 1000).equal("OK")
			}
			n := 0
			var ours error
			for ; n < 200; n++ {
				if ours = do(t, c, "SET", fmt.Sprint("per:", n), val).err; ours != nil {
					break
				}
			}
			if ours == nil || ours.Error() != theirs.Error() {
				t.Fatalf("%d SETs of keys without a TTL: %v, want redis-server's %v", n, ours, theirs)
			}
			do(t, c, "DBSIZE").equal(n)
			for i := range n {
				do(t, c, "EXISTS", fmt.Sprint("per:", i)).equal(1)
			}
			if ev := statValue(t, do(t, c, "INFO", "stats").val.(string), "evicted_keys"); ev != 20 {
				t.Fatalf("evicted_keys %d, want the 20 keys with a TTL", ev)
			}
			do(t, c, "GET", "per:0").equal(val)
			do(t, c, "CL.THROTTLE", "lim", 5, 5, 60).errIs(theirs.Error())
			do(t, c, "EXPIRE", "per:0", 1000).equal(1)
			do(t, c, "SET", "after", val).equal("OK")
			do(t, c, "EXISTS", "per:0").equal(0)
		})
	}
}

// TestDefaultPolicyLimitersFirst: under the default policy, limiter keys
// are evicted before values, those closest to their fresh state first,
// as before values were kept.
func TestDefaultPolicyLimitersFirst(t *testing.T) {
	t.Parallel()
	c := start(t, "--dir", "", "--shards", "1").client(t, 2)
	do(t, c, "CONFIG", "GET", "maxmemory-policy").equal([]any{"maxmemory-policy", "allkeys-lru"})
	setClock(t, c, t0)
	for i := range 50 {
		do(t, c, "SET", fmt.Sprintf("val:%02d", i), strings.Repeat("v", 100)).equal("OK")
	}
	advance(t, c, 100_000) // the values are idle for long
	for i := range 20 {
		do(t, c, "CL.TOKENBUCKET", fmt.Sprintf("short:%02d", i), 10, 10, "1s").ints() // fresh in 100 ms
		do(t, c, "CL.TOKENBUCKET", fmt.Sprintf("long:%02d", i), 10, 1, "1h").ints()   // fresh in 6 min
	}
	used := infoField(t, c, "memory", "used_memory_dataset")
	do(t, c, "CONFIG", "SET", "maxmemory", used-1).equal("OK")
	do(t, c, "SET", "one-more", "1").equal("OK")
	for i := range 20 {
		do(t, c, "EXISTS", fmt.Sprintf("long:%02d", i)).equal(1)
	}
	for i := range 50 {
		do(t, c, "EXISTS", fmt.Sprintf("val:%02d", i)).equal(1)
	}
	if short, _ := c.Keys(ctx, "short:*").Result(); len(short) == 20 {
		t.Fatal("no limiter key evicted")
	}
}
