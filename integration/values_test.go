package integration

import (
	"fmt"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/internal/redistest"
)

// diffPair dials ours and theirs, switches both connections to proto and
// empties both servers.
func diffPair(t *testing.T, ours, theirs *server, proto string) (a, b *rawConn) {
	t.Helper()
	a, b = dial(t, ours), dial(t, theirs)
	for _, c := range []*rawConn{a, b} {
		c.cmd("HELLO", proto)
		c.reply()
		c.cmd("FLUSHALL")
		c.reply()
	}
	return a, b
}

// diffRequests sends every request to rlserver and to redis-server, in
// RESP2 and RESP3, each protocol on fresh keys, and fails on any reply
// that differs.
func diffRequests(t *testing.T, requests [][]string) {
	t.Helper()
	ours := start(t)
	theirs := &server{Addr: redistest.Start(t)}
	for _, proto := range []string{"2", "3"} {
		a, b := diffPair(t, ours, theirs, proto)
		for _, req := range requests {
			a.cmd(req...)
			b.cmd(req...)
			if got, want := a.reply(), b.reply(); got != want {
				t.Errorf("RESP%s %q:\n got %q\nwant %q", proto, req, got, want)
			}
		}
	}
}

func TestStringsAgainstRedis(t *testing.T) {
	diffRequests(t, [][]string{
		{"GET", "s"},
		{"SET", "s", "v"},
		{"GET", "s"},
		{"TYPE", "s"},
		{"TTL", "s"},
		{"SET", "s", "w", "NX"},
		{"SET", "s", "w", "XX"},
		{"SET", "s2", "w", "XX"},
		{"SET", "s", "x", "GET"},
		{"SET", "s3", "x", "GET"},
		{"SET", "s3", "y", "NX", "GET"},
		{"SET", "s", "v", "EX", "100"},
		{"TTL", "s"},
		{"SET", "s", "v2", "KEEPTTL"},
		{"TTL", "s"},
		{"SET", "s", "v3"},
		{"TTL", "s"},
		{"SET", "s", "v", "EX", "0"},
		{"SET", "s", "v", "EX", "-1"},
		{"SET", "s", "v", "PX", "x"},
		{"SET", "s", "v", "EX", "10", "PX", "10"},
		{"SET", "s", "v", "EX", "10", "KEEPTTL"},
		{"SET", "s", "v", "NX", "XX"},
		{"SET", "s", "v", "FOO"},
		{"SET", "s", "v", "EX"},
		{"SET", "s", "v", "EX", "9223372036854775807"},
		{"SET", "s", "v", "EXAT", "1"},
		{"GET", "s"},
		{"SET", "s", "v", "PXAT", "4102444800123"},
		{"EXPIRETIME", "s"},
		{"PEXPIRETIME", "s"},
		{"SETNX", "s", "a"},
		{"SETNX", "n", "a"},
		{"SETEX", "e", "100", "v"},
		{"TTL", "e"},
		{"SETEX", "e", "0", "v"},
		{"SETEX", "e", "x", "v"},
		{"PSETEX", "e", "-5", "v"},
		{"PSETEX", "e", "100000", "v"},
		{"TTL", "e"},
		{"GETSET", "e", "w"},
		{"TTL", "e"},
		{"GETSET", "new", "w"},
		{"GETDEL", "new"},
		{"GETDEL", "new"},
		{"SET", "g", "v"},
		{"GETEX", "g", "EX", "100"},
		{"TTL", "g"},
		{"GETEX", "g", "PERSIST"},
		{"TTL", "g"},
		{"GETEX", "g", "EX", "0"},
		{"GETEX", "g", "EX", "5", "PX", "5"},
		{"GETEX", "g", "FOO"},
		{"GETEX", "nokey", "EX", "5"},
		{"MSET", "a", "1", "b", "2"},
		{"MSET", "a", "1", "b"},
		{"MGET", "a", "b", "nokey"},
		{"INCR", "a"},
		{"INCRBY", "a", "10"},
		{"DECR", "a"},
		{"DECRBY", "a", "-5"},
		{"DECRBY", "a", "-9223372036854775808"},
		{"INCRBY", "a", "x"},
		{"INCRBY", "a", "9223372036854775807"},
		{"INCR", "g"},
		{"SET", "big", "9223372036854775807"},
		{"INCR", "big"},
		{"SET", "neg", "-9223372036854775808"},
		{"DECR", "neg"},
		{"SET", "sp", " 1"},
		{"INCR", "sp"},
		{"SET", "z", "01"},
		{"INCR", "z"},
		{"INCR", "fresh"},
		{"INCRBYFLOAT", "f", "1.5"},
		{"INCRBYFLOAT", "f", "0.1"},
		{"INCRBYFLOAT", "f", "x"},
		{"INCRBYFLOAT", "f", "inf"},
		{"INCRBYFLOAT", "g", "1"},
		{"SET", "f2", "3.0e3"},
		{"INCRBYFLOAT", "f2", "1"},
		{"APPEND", "ap", "abc"},
		{"APPEND", "ap", "de"},
		{"STRLEN", "ap"},
		{"STRLEN", "nokey"},
		{"GET", "ap"},
		{"SET", "t", "v"},
		{"EXPIRE", "t", "100"},
		{"TTL", "t"},
		{"EXPIRE", "t", "200", "NX"},
		{"EXPIRE", "t", "200", "XX"},
		{"EXPIRE", "t", "100", "GT"},
		{"EXPIRE", "t", "300", "GT"},
		{"EXPIRE", "t", "300", "LT"},
		{"EXPIRE", "t", "50", "LT"},
		{"TTL", "t"},
		{"EXPIRE", "t", "50", "NX", "XX"},
		{"EXPIRE", "t", "50", "GT", "LT"},
		{"EXPIRE", "t", "50", "FOO"},
		{"EXPIRE", "t", "x"},
		{"EXPIRE", "t", "9223372036854775807"},
		{"PERSIST", "t"},
		{"PERSIST", "t"},
		{"TTL", "t"},
		{"EXPIRE", "t", "100", "XX"},
		{"EXPIRE", "t", "100", "GT"},
		{"EXPIRE", "t", "100", "LT"},
		{"TTL", "t"},
		{"EXPIRE", "nokey", "100"},
		{"PEXPIRE", "t", "-1"},
		{"EXISTS", "t"},
		{"SET", "t", "v"},
		{"EXPIREAT", "t", "1"},
		{"EXISTS", "t"},
		{"SET", "t", "v"},
		{"PEXPIREAT", "t", "4102444800123"},
		{"PEXPIRETIME", "t"},
		{"EXPIRETIME", "nokey"},
		{"SET", "r1", "v"},
		{"EXPIRE", "r1", "100"},
		{"RENAME", "r1", "r2"},
		{"GET", "r1"},
		{"GET", "r2"},
		{"TTL", "r2"},
		{"RENAME", "nokey", "r3"},
		{"SET", "r3", "x"},
		{"RENAMENX", "r2", "r3"},
		{"RENAMENX", "r2", "r4"},
		{"RENAMENX", "r4", "r4"},
		{"RENAME", "r4", "r4"},
		{"GET", "r4"},
		{"DEL", "r4", "r3"},
		{"DBSIZE"},
	})
}

func TestHashesAgainstRedis(t *testing.T) {
	diffRequests(t, [][]string{
		{"HSET", "h", "a", "1", "b", "2"},
		{"HSET", "h", "a", "3", "c", "4"},
		{"HSET", "h", "a"},
		{"HMSET", "h", "d", "5"},
		{"HGET", "h", "a"},
		{"HGET", "h", "zz"},
		{"HGET", "nokey", "a"},
		{"HGETALL", "h"},
		{"HKEYS", "h"},
		{"HVALS", "h"},
		{"HLEN", "h"},
		{"HEXISTS", "h", "a"},
		{"HEXISTS", "h", "zz"},
		{"HMGET", "h", "a", "zz", "b"},
		{"HMGET", "nokey", "a"},
		{"HSETNX", "h", "a", "9"},
		{"HSETNX", "h", "e", "9"},
		{"HDEL", "h", "b", "zz", "c"},
		{"HGETALL", "h"},
		{"HINCRBY", "h", "a", "10"},
		{"HINCRBY", "h", "new", "-3"},
		{"HINCRBY", "h", "a", "x"},
		{"HSET", "h", "s", "abc"},
		{"HINCRBY", "h", "s", "1"},
		{"HINCRBY", "h", "a", "9223372036854775807"},
		{"HINCRBYFLOAT", "h", "fl", "1.5"},
		{"HINCRBYFLOAT", "h", "fl", "0.25"},
		{"HINCRBYFLOAT", "h", "s", "1"},
		{"HINCRBYFLOAT", "h", "fl", "x"},
		{"HINCRBYFLOAT", "nokey2", "f", "inf"},
		{"EXISTS", "nokey2"},
		{"HGETALL", "h"},
		{"HDEL", "h", "a", "d", "e", "new", "s", "fl"},
		{"EXISTS", "h"},
		{"HGETALL", "nokey"},
		{"TYPE", "h"},
		{"SET", "str", "v"},
		{"HGET", "str", "a"},
		{"HSET", "str", "a", "b"},
		{"HSET", "h2", "f", "v"},
		{"GET", "h2"},
		{"INCR", "h2"},
		{"TYPE", "h2"},
		{"TTL", "h2"},
		{"SET", "h2", "now a string"},
		{"TYPE", "h2"},
	})
}

func TestSortedSetsAgainstRedis(t *testing.T) {
	diffRequests(t, [][]string{
		{"ZADD", "z", "1", "a", "2", "b", "3", "c"},
		{"ZADD", "z", "1", "a", "5", "b"},
		{"ZADD", "z", "CH", "1", "a", "6", "b", "7", "d"},
		{"ZADD", "z", "NX", "0", "a", "8", "e"},
		{"ZADD", "z", "XX", "0", "a", "9", "f"},
		{"ZADD", "z", "GT", "CH", "5", "a", "1", "b"},
		{"ZADD", "z", "LT", "CH", "1", "a", "10", "c"},
		{"ZADD", "z", "INCR", "2", "a"},
		{"ZADD", "z", "INCR", "NX", "2", "a"},
		{"ZADD", "z", "INCR", "XX", "2", "nosuch"},
		{"ZADD", "z", "INCR", "1", "a", "2", "b"},
		{"ZADD", "z", "NX", "XX", "1", "a"},
		{"ZADD", "z", "GT", "LT", "1", "a"},
		{"ZADD", "z", "NX", "GT", "1", "a"},
		{"ZADD", "z", "1"},
		{"ZADD", "z", "x", "a"},
		{"ZADD", "z", "nan", "a"},
		{"ZADD", "z", "inf", "inf", "-inf", "minf"},
		{"ZADD", "z", "INCR", "-inf", "inf"},
		{"ZADD", "z", "1.5e3", "sci", "0x10", "hex"},
		{"ZADD", "zxx", "XX", "1", "a"},
		{"EXISTS", "zxx"},
		{"ZCARD", "z"},
		{"ZCARD", "nokey"},
		{"ZSCORE", "z", "a"},
		{"ZSCORE", "z", "inf"},
		{"ZSCORE", "z", "zz"},
		{"ZINCRBY", "z", "2.5", "a"},
		{"ZINCRBY", "z", "1", "new"},
		{"ZINCRBY", "z", "x", "a"},
		{"ZINCRBY", "z", "-inf", "inf"},
		{"ZRANGE", "z", "0", "-1"},
		{"ZRANGE", "z", "0", "-1", "WITHSCORES"},
		{"ZRANGE", "z", "1", "3", "REV", "WITHSCORES"},
		{"ZRANGE", "z", "-100", "100"},
		{"ZRANGE", "z", "5", "2"},
		{"ZRANGE", "z", "x", "2"},
		{"ZRANGE", "z", "(1", "10", "BYSCORE", "WITHSCORES"},
		{"ZRANGE", "z", "10", "(1", "BYSCORE", "REV"},
		{"ZRANGE", "z", "-inf", "+inf", "BYSCORE", "LIMIT", "1", "2"},
		{"ZRANGE", "z", "-inf", "+inf", "BYSCORE", "LIMIT", "1", "-1"},
		{"ZRANGE", "z", "-inf", "+inf", "BYSCORE", "LIMIT", "-1", "2"},
		{"ZRANGE", "z", "0", "1", "LIMIT", "0", "1"},
		{"ZRANGE", "z", "a", "b", "BYSCORE"},
		{"ZRANGE", "z", "0", "1", "FOO"},
		{"ZRANGEBYSCORE", "z", "-inf", "(7", "WITHSCORES", "LIMIT", "0", "3"},
		{"ZRANGEBYSCORE", "z", "-inf", "7", "REV"},
		{"ZREVRANGEBYSCORE", "z", "+inf", "5"},
		{"ZREVRANGEBYSCORE", "z", "5", "+inf"},
		{"ZCOUNT", "z", "-inf", "+inf"},
		{"ZCOUNT", "z", "(1", "7"},
		{"ZCOUNT", "z", "x", "7"},
		{"ZCOUNT", "nokey", "0", "1"},
		{"ZADD", "lex", "0", "a", "0", "b", "0", "c", "0", "d"},
		{"ZRANGE", "lex", "[b", "(d", "BYLEX"},
		{"ZRANGE", "lex", "+", "-", "BYLEX", "REV", "LIMIT", "1", "2"},
		{"ZRANGE", "lex", "b", "d", "BYLEX"},
		{"ZRANGE", "lex", "-", "+", "BYLEX", "WITHSCORES"},
		{"ZREVRANGE", "z", "0", "2", "WITHSCORES"},
		{"ZREVRANGE", "z", "0", "-1"},
		{"ZREVRANGE", "z", "0", "1", "LIMIT", "0", "1"},
		{"ZRANGEBYLEX", "lex", "[b", "+"},
		{"ZRANGEBYLEX", "lex", "-", "+", "LIMIT", "1", "2"},
		{"ZRANGEBYLEX", "lex", "-", "+", "WITHSCORES"},
		{"ZREVRANGEBYLEX", "lex", "+", "(b"},
		{"ZRANK", "z", "a"},
		{"ZREVRANK", "z", "a"},
		{"ZRANK", "z", "nosuch"},
		{"ZRANK", "nokey", "a"},
		{"ZREMRANGEBYSCORE", "z", "-inf", "(2"},
		{"ZREMRANGEBYSCORE", "z", "x", "2"},
		{"ZREMRANGEBYRANK", "z", "0", "0"},
		{"ZREMRANGEBYRANK", "z", "-1", "-1"},
		{"ZRANGE", "z", "0", "-1", "WITHSCORES"},
		{"ZREM", "z", "d", "zz"},
		{"ZPOPMIN", "z"},
		{"ZPOPMIN", "z", "2"},
		{"ZPOPMIN", "z", "0"},
		{"ZPOPMIN", "z", "-1"},
		{"ZPOPMIN", "nokey"},
		{"ZPOPMIN", "nokey", "2"},
		{"ZPOPMIN", "z", "100"},
		{"EXISTS", "z"},
		{"ZREMRANGEBYRANK", "lex", "0", "-1"},
		{"EXISTS", "lex"},
		{"SET", "str", "v"},
		{"ZADD", "str", "1", "a"},
		{"ZRANGE", "str", "0", "-1"},
		{"ZSCORE", "str", "a"},
		// A sliding log as the rate limiters on Redis keep one.
		{"ZADD", "log", "1000", "r1", "1100", "r2", "1200", "r3"},
		{"ZREMRANGEBYSCORE", "log", "-inf", "1050"},
		{"ZCARD", "log"},
		{"PEXPIRE", "log", "60000"},
		{"TTL", "log"},
		{"TYPE", "log"},
	})
}

func TestListsAgainstRedis(t *testing.T) {
	diffRequests(t, [][]string{
		{"LPUSH", "l", "a", "b", "c"},
		{"RPUSH", "l", "d", "e"},
		{"LRANGE", "l", "0", "-1"},
		{"LRANGE", "l", "1", "2"},
		{"LRANGE", "l", "-2", "100"},
		{"LRANGE", "l", "3", "1"},
		{"LRANGE", "l", "x", "1"},
		{"LRANGE", "nokey", "0", "-1"},
		{"LLEN", "l"},
		{"LLEN", "nokey"},
		{"LINDEX", "l", "0"},
		{"LINDEX", "l", "-1"},
		{"LINDEX", "l", "10"},
		{"LINDEX", "l", "x"},
		{"LPOP", "l"},
		{"RPOP", "l"},
		{"LPOP", "l", "2"},
		{"LPOP", "l", "0"},
		{"LPOP", "l", "-1"},
		{"RPOP", "l", "10"},
		{"EXISTS", "l"},
		{"LPOP", "nokey"},
		{"LPOP", "nokey", "1"},
		{"RPUSH", "r", "a", "b", "a", "c", "a"},
		{"LREM", "r", "1", "a"},
		{"LREM", "r", "-1", "a"},
		{"LRANGE", "r", "0", "-1"},
		{"LREM", "r", "0", "zz"},
		{"LREM", "r", "x", "a"},
		{"RPUSH", "r", "x", "y", "z"},
		{"LTRIM", "r", "1", "-2"},
		{"LRANGE", "r", "0", "-1"},
		{"LTRIM", "r", "5", "1"},
		{"EXISTS", "r"},
		{"LTRIM", "nokey", "0", "1"},
		{"LTRIM", "r", "a", "1"},
		{"SET", "str", "v"},
		{"LPUSH", "str", "a"},
		{"LRANGE", "str", "0", "-1"},
		{"RPUSH", "cap", "1", "2", "3", "4"},
		{"LTRIM", "cap", "-2", "-1"},
		{"LRANGE", "cap", "0", "-1"},
		{"TYPE", "cap"},
		{"RENAME", "cap", "cap2"},
		{"LRANGE", "cap2", "0", "-1"},
	})
}

// valueKeys writes one key of every value kind under prefix, small and
// large, some with a TTL, and returns their names.
func valueKeys(t *testing.T, c *redis.Client, prefix string) []string {
	t.Helper()
	p := func(s string) string { return prefix + s }
	do(t, c, "SET", p("str"), "v").equal("OK")
	do(t, c, "SET", p("cnt"), "41", "EX", "3600").equal("OK")
	do(t, c, "INCR", p("cnt")).equal(42)
	do(t, c, "SET", p("long"), strings.Repeat("x", 5000)).equal("OK")
	do(t, c, "HSET", p("hash"), "tokens", "9", "ts", "1700000000").equal(2)
	for i := range 300 {
		do(t, c, "HSET", p("bighash"), fmt.Sprint("f", i), i)
		do(t, c, "ZADD", p("bigzset"), i, fmt.Sprint("m", i))
		do(t, c, "RPUSH", p("biglist"), i)
	}
	do(t, c, "ZADD", p("zset"), 1.5, "a", 2, "b").equal(2)
	do(t, c, "PEXPIRE", p("zset"), 3_600_000).equal(1)
	do(t, c, "RPUSH", p("list"), "a", "b", "c").equal(3)
	return []string{p("str"), p("cnt"), p("long"), p("hash"), p("bighash"), p("zset"), p("bigzset"), p("list"), p("biglist")}
}

// valueDump is what a client reads of keys: each one's type, whether it
// has a TTL, and its whole content.
func valueDump(t *testing.T, c *redis.Client, keys []string) string {
	t.Helper()
	var b strings.Builder
	for _, k := range keys {
		typ := do(t, c, "TYPE", k).val
		ttl := do(t, c, "TTL", k).integer()
		var content any
		switch typ {
		case "string":
			content = do(t, c, "GET", k).val
		case "hash":
			content = do(t, c, "HGETALL", k).val
		case "zset":
			content = do(t, c, "ZRANGE", k, 0, -1, "WITHSCORES").val
		case "list":
			content = do(t, c, "LRANGE", k, 0, -1).val
		}
		fmt.Fprintf(&b, "%s %v ttl>0:%v ttl=-1:%v %v\n", k, typ, ttl > 0, ttl == -1, content)
	}
	return b.String()
}

// TestValuesPersist: values of every kind, small and large, with and
// without a TTL, are as they were after a restart from what SAVE wrote,
// and after a kill -9 once the background flush has written them.
func TestValuesPersist(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := startIn(t, dir)
	c := s.client(t, 3)
	keys := valueKeys(t, c, "v:")
	want := valueDump(t, c, keys)
	if !strings.Contains(want, "v:cnt string ttl>0:true ttl=-1:false 42") || !strings.Contains(want, "v:str string ttl>0:false ttl=-1:true v") {
		t.Fatalf("dump before the restart:\n%s", want)
	}
	do(t, c, "SAVE").equal("OK")
	s.kill()
	s = startIn(t, dir)
	c = s.client(t, 3)
	wantRestored(t, s, c, len(keys))
	if got := valueDump(t, c, keys); got != want {
		t.Fatalf("after the restart:\n%s\nwant:\n%s", got, want)
	}
	// Changes after the restart: a deleted field, a popped element, a
	// removed TTL, then kill -9 after the flush reports them written.
	do(t, c, "HDEL", "v:bighash", "f7").equal(1)
	do(t, c, "LPOP", "v:biglist").equal("0")
	do(t, c, "PERSIST", "v:cnt").equal(1)
	do(t, c, "DEL", "v:list").equal(1)
	want = valueDump(t, c, keys)
	do(t, c, "SAVE").equal("OK")
	s.kill()
	s = startIn(t, dir)
	c = s.client(t, 3)
	if got := valueDump(t, c, keys); got != want {
		t.Fatalf("after the second restart:\n%s\nwant:\n%s", got, want)
	}
}

// TestValuesReplicate: values written on a primary are on its replica
// (after WAIT), including their TTLs and removals.
func TestValuesReplicate(t *testing.T) {
	t.Parallel()
	c := startRLCluster(t, "--save-interval", "100ms")
	p0 := c.Nodes[0].client(t, 2)
	keys := valueKeys(t, p0, "{user1000}.")
	do(t, p0, "HDEL", "{user1000}.bighash", "f1").equal(1)
	do(t, p0, "LTRIM", "{user1000}.biglist", 10, 19).equal("OK")
	do(t, p0, "ZREMRANGEBYSCORE", "{user1000}.bigzset", "-inf", 100).equal(101)
	want := valueDump(t, p0, keys)
	do(t, p0, "WAIT", 1, 10000).equal(1)
	r3 := c.Nodes[3].client(t, 2)
	do(t, r3, "READONLY").equal("OK")
	if got := valueDump(t, r3, keys); got != want {
		t.Fatalf("on the replica:\n%s\nwant:\n%s", got, want)
	}
	if err := do(t, r3, "SET", "{user1000}.str", "w").err; err == nil || !strings.HasPrefix(err.Error(), "MOVED 3443 ") {
		t.Fatalf("SET on the replica: %v, want MOVED 3443", err)
	}
}

func TestObjectEncodingAgainstRedis(t *testing.T) {
	long := strings.Repeat("x", 65)
	reqs := [][]string{
		{"SET", "i", "12345"}, {"OBJECT", "ENCODING", "i"},
		{"SET", "e", "hello"}, {"OBJECT", "ENCODING", "e"},
		{"SET", "r", strings.Repeat("y", 45)}, {"OBJECT", "ENCODING", "r"},
		{"HSET", "h", "f", "v"}, {"OBJECT", "ENCODING", "h"},
		{"HSET", "hl", "f", long}, {"OBJECT", "ENCODING", "hl"},
		{"ZADD", "z", "1", "a"}, {"OBJECT", "ENCODING", "z"},
		{"ZADD", "zl", "1", long}, {"OBJECT", "ENCODING", "zl"},
		{"RPUSH", "l", "a"}, {"OBJECT", "ENCODING", "l"},
		{"OBJECT", "ENCODING", "nokey"},
		{"OBJECT", "REFCOUNT", "l"},
		{"OBJECT", "FREQ", "l"},
		{"OBJECT", "FREQ", "nokey"},
		{"OBJECT", "ENCODING"},
		{"CONFIG", "SET", "zset-max-listpack-entries", "1"},
		{"ZADD", "z2", "1", "a", "2", "b"}, {"OBJECT", "ENCODING", "z2"},
		{"CONFIG", "SET", "hash-max-ziplist-value", "2"},
		{"HSET", "h2", "f", "vvv"}, {"OBJECT", "ENCODING", "h2"},
		{"CONFIG", "SET", "zset-max-listpack-entries", "128"},
		{"CONFIG", "SET", "hash-max-ziplist-value", "64"},
	}
	big := []string{"ZADD", "zbig"}
	hbig := []string{"HSET", "hbig"}
	for i := range 129 {
		big = append(big, fmt.Sprint(i), fmt.Sprint("m", i))
	}
	for i := range 513 {
		hbig = append(hbig, fmt.Sprint("f", i), "v")
	}
	reqs = append(reqs, big, []string{"OBJECT", "ENCODING", "zbig"}, hbig, []string{"OBJECT", "ENCODING", "hbig"})
	diffRequests(t, reqs)
}

// TestKeyspaceExpiresAgainstRedis: INFO keyspace counts the keys with a
// TTL as Redis does, through SET, EXPIRE, PERSIST, RENAME, DEL and
// removal of an emptied value.
func TestKeyspaceExpiresAgainstRedis(t *testing.T) {
	ours := start(t).client(t, 2)
	theirs := redis.NewClient(&redis.Options{Addr: redistest.Start(t), Protocol: 2})
	t.Cleanup(func() { theirs.Close() })
	keyspace := func(c *redis.Client) string {
		info := c.Info(ctx, "keyspace").Val()
		i := strings.Index(info, "db0:")
		if i < 0 {
			return "empty"
		}
		line := info[i:]
		line = line[:strings.Index(line, ",avg_ttl")]
		return line
	}
	steps := [][]any{
		{"SET", "a", "1"}, {"SET", "b", "1", "EX", "100"}, {"HSET", "h", "f", "v"},
		{"EXPIRE", "h", "100"}, {"PERSIST", "b"}, {"SET", "a", "2", "PX", "100000"},
		{"RENAME", "a", "c"}, {"RPUSH", "l", "x"}, {"EXPIRE", "l", "100"}, {"LPOP", "l"},
		{"SET", "c", "3"}, {"DEL", "h"}, {"GETEX", "c", "EX", "50"}, {"FLUSHALL"}, {"SET", "z", "1"},
	}
	for _, s := range steps {
		if err := ours.Do(ctx, s...).Err(); err != nil {
			t.Fatalf("%v: %v", s, err)
		}
		theirs.Do(ctx, s...)
		if got, want := keyspace(ours), keyspace(theirs); got != want {
			t.Fatalf("after %v: INFO keyspace %q, want %q", s, got, want)
		}
	}
}

// TestEnvoyRatelimitRedisPipeline: the commands envoyproxy/ratelimit's
// Redis backend sends per descriptor, INCRBY then EXPIRE, pipelined for
// all the request's descriptors, get Redis's replies to the letter, and
// the counter its limit check reads grows as on Redis.
func TestEnvoyRatelimitRedisPipeline(t *testing.T) {
	ours := start(t)
	theirs := &server{Addr: redistest.Start(t)}
	a, b := dial(t, ours), dial(t, theirs)
	keys := []string{"domain_remote_address_10.0.0.1_1700000040", "domain_path_/api_1700000000"}
	for round := range 12 {
		var reqs [][]string
		for i, k := range keys {
			hits := fmt.Sprint(1 + i*round%3)
			reqs = append(reqs, []string{"INCRBY", k, hits}, []string{"EXPIRE", k, "60"})
		}
		for _, r := range reqs {
			a.cmd(r...)
			b.cmd(r...)
		}
		for _, r := range reqs {
			if got, want := a.reply(), b.reply(); got != want {
				t.Fatalf("round %d %q: got %q, want %q", round, r, got, want)
			}
		}
	}
	for _, k := range keys {
		for _, q := range [][]string{{"GET", k}, {"TTL", k}, {"TYPE", k}} {
			a.cmd(q...)
			b.cmd(q...)
			if got, want := a.reply(), b.reply(); got != want {
				t.Fatalf("%q: got %q, want %q", q, got, want)
			}
		}
	}
}

// TestNoEviction: under --maxmemory-policy noeviction, past --maxmemory the
// commands that may grow the keyspace answer Redis's -OOM error and
// nothing is evicted; reads and deletes still run, and once a DEL brings
// the keyspace under the bound, writes run again. CONFIG GET/SET
// maxmemory-policy answer as Redis's.
func TestNoEviction(t *testing.T) {
	s := start(t, "--maxmemory", "1mb", "--maxmemory-policy", "noeviction")
	c := s.client(t, 2)
	do(t, c, "CONFIG", "GET", "maxmemory-policy").equal([]any{"maxmemory-policy", "noeviction"})
	val := strings.Repeat("v", 1000)
	n := 0
	for ; n < 5000; n++ {
		if err := c.Set(ctx, fmt.Sprint("k", n), val, 0).Err(); err != nil {
			if err.Error() != "OOM command not allowed when used memory > 'maxmemory'." {
				t.Fatalf("SET k%d: %v", n, err)
			}
			break
		}
	}
	if n < 500 || n >= 5000 {
		t.Fatalf("%d keys of 1000 bytes were written under a 1mb bound", n)
	}
	do(t, c, "DBSIZE").equal(int64(n))
	do(t, c, "CL.THROTTLE", "lim", 5, 5, 60).errIs("OOM command not allowed when used memory > 'maxmemory'.")
	do(t, c, "GET", "k0").equal(val)
	do(t, c, "EXISTS", "k1").equal(1)
	for i := range 100 {
		do(t, c, "DEL", fmt.Sprint("k", i)).equal(1)
	}
	do(t, c, "SET", "again", "1").equal("OK")
	if got := do(t, c, "INFO", "memory").val.(string); !strings.Contains(got, "maxmemory_policy:noeviction") {
		t.Fatalf("INFO memory does not name the policy:\n%s", got)
	}
	do(t, c, "CONFIG", "SET", "maxmemory-policy", "allkeys-lru").equal("OK")
	for i := range 300 {
		do(t, c, "SET", fmt.Sprint("more", i), val).equal("OK") // evicts now
	}
	// Redis's own -OOM under noeviction, past a bound it is already over.
	rc := redis.NewClient(&redis.Options{Addr: redistest.Start(t), Protocol: 2})
	t.Cleanup(func() { rc.Close() })
	rc.Do(ctx, "SET", "fill", strings.Repeat("v", 100000))
	rc.Do(ctx, "CONFIG", "SET", "maxmemory-policy", "noeviction")
	rc.Do(ctx, "CONFIG", "SET", "maxmemory", "1")
	theirs := rc.Do(ctx, "SET", "k", "v").Err()
	c.Do(ctx, "CONFIG", "SET", "maxmemory-policy", "noeviction")
	c.Do(ctx, "CONFIG", "SET", "maxmemory", "1")
	if ours := c.Do(ctx, "SET", "k", "v").Err(); theirs == nil || ours == nil || ours.Error() != theirs.Error() {
		t.Fatalf("SET past maxmemory under noeviction: %v, redis-server: %v", ours, theirs)
	}
	rc.Do(ctx, "CONFIG", "SET", "maxmemory", "0")
	diffRequests(t, [][]string{
		{"CONFIG", "SET", "maxmemory-policy", "bogus"},
		{"CONFIG", "SET", "maxmemory-policy", "ALLKEYS-LRU"},
		{"CONFIG", "GET", "maxmemory-policy"},
		{"CONFIG", "SET", "maxmemory-policy", "noeviction"},
		{"CONFIG", "GET", "maxmemory-policy"},
	})
}

// TestTouchAgainstRedis: TOUCH's count (missing keys, a key given twice),
// its arity error, its COMMAND INFO, and under allkeys-lfu the counter it
// raises once per key given (lfu-log-factor 0: every access counts),
// which EXISTS and OBJECT leave.
func TestTouchAgainstRedis(t *testing.T) {
	diffRequests(t, [][]string{
		{"COMMAND", "INFO", "touch"},
		{"TOUCH"},
		{"TOUCH", "nokey"},
		{"SET", "a", "v"},
		{"HSET", "h", "f", "v"},
		{"TOUCH", "a", "nokey", "h", "a"},
		{"CONFIG", "SET", "lfu-log-factor", "0"},
		{"CONFIG", "SET", "maxmemory-policy", "allkeys-lfu"},
		{"SET", "f", "v"},
		{"OBJECT", "FREQ", "f"},
		{"TOUCH", "f", "f", "f"},
		{"EXISTS", "f"},
		{"OBJECT", "FREQ", "f"},
		{"CONFIG", "SET", "maxmemory-policy", "allkeys-lru"},
		{"CONFIG", "SET", "lfu-log-factor", "10"},
	})
}
