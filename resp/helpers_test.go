package resp

import (
	"io"
	"log"

	"github.com/rlserver/rlserver/shard"
)

// testConn returns an authenticated RESP2 connection, on no socket, to a
// server over a fresh store of the given number of shards (0: the default),
// and the server's clock, set to 2026-01-01. Tests drive it with exec.
func testConn(shards int) (*Conn, *shard.Clock) { return seededConn(shards, 0) }

// seededConn is testConn over a store whose key hash has the given seed
// (0: a random one).
func seededConn(shards int, seed uint64) (*Conn, *shard.Clock) {
	clock := shard.NewClock()
	clock.Set(1_767_225_600_000_000_000)
	srv := New(Config{Logger: log.New(io.Discard, "", 0)}, shard.New(shard.Options{Shards: shards, Seed: seed}), clock)
	return &Conn{srv: srv, proto: 2, authed: true}, clock
}

// argsOf turns strings into a request's arguments.
func argsOf(s ...string) [][]byte {
	b := make([][]byte, len(s))
	for i, a := range s {
		b[i] = []byte(a)
	}
	return b
}
