package command

import (
	"fmt"
	"io"
	"log"

	"github.com/rlserver/rlserver/clock"
	"github.com/rlserver/rlserver/resp"
	"github.com/rlserver/rlserver/shard"
)

// testConn returns an authenticated RESP2 connection, on no socket, to a
// server over a fresh store of the given number of shards (0: the
// default), and the server's clock, set to 2026-01-01. Tests drive it
// with exec (and EndBatch) and read its replies in c.W.Buf.
func testConn(shards int) (*connection, *clock.Clock) { return seededConn(shards, 0) }

// seededConn is testConn over a store whose key hash has the given seed
// (0: a random one).
func seededConn(shards int, seed uint64) (*connection, *clock.Clock) {
	clock := clock.New()
	clock.Set(1_767_225_600_000_000_000)
	h := New(Config{}, shard.New(shard.Options{Shards: shards, Seed: seed}), clock)
	return newTestConn(h), clock
}

// newTestConn returns another connection to h's server.
func newTestConn(h *Handler) *connection {
	srv := resp.New(resp.Config{Logger: log.New(io.Discard, "", 0)}, h)
	return h.newConn(srv, resp.ConnInfo{FD: -1, Loop: -1}, &resp.Writer{Proto: 2})
}

// asRead encodes a request as a client sends it (a RESP multibulk) and
// returns its arguments aliasing those bytes, as the server's reader hands
// them to Exec.
func asRead(args [][]byte) ([][]byte, []byte) {
	raw := fmt.Appendf(nil, "*%d\r\n", len(args))
	at := make([]int, len(args))
	for i, a := range args {
		raw = fmt.Appendf(raw, "$%d\r\n", len(a))
		at[i] = len(raw)
		raw = append(append(raw, a...), "\r\n"...)
	}
	out := make([][]byte, len(args))
	for i, a := range args {
		out[i] = raw[at[i] : at[i]+len(a) : at[i]+len(a)]
	}
	return out, raw
}

// argsOf turns strings into a request's arguments.
func argsOf(s ...string) [][]byte {
	b := make([][]byte, len(s))
	for i, a := range s {
		b[i] = []byte(a)
	}
	return b
}
