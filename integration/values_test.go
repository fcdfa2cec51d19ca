package integration

import (
	"testing"

	"github.com/rlserver/rlserver/internal/redistest"
)

// diffRequests sends every request to rlserver and to redis-server, in
// RESP2 and RESP3, each protocol on fresh keys, and fails on any reply
// that differs.
func diffRequests(t *testing.T, requests [][]string) {
	t.Helper()
	ours := start(t)
	theirs := &server{Addr: redistest.Start(t)}
	for _, proto := range []string{"2", "3"} {
		a, b := dial(t, ours), dial(t, theirs)
		for _, c := range []*rawConn{a, b} {
			c.cmd("HELLO", proto)
			c.reply()
			c.cmd("FLUSHALL")
			c.reply()
		}
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
