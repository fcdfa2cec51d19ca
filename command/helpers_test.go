package command

import (
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/rlserver/rlserver/clock"
	"github.com/rlserver/rlserver/resp"
	"github.com/rlserver/rlserver/shard"
)

// hashSeed is the key hash seed of testConn's stores, which decides the
// keys' shards and places in the index: the one COMMAND_SEED names, to
// replay a failure, or one drawn for the run. TestMain prints it.
var hashSeed = rand.Uint64() | 1

func TestMain(m *testing.M) {
	if v := os.Getenv("COMMAND_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil || n == 0 {
			fmt.Fprintf(os.Stderr, "COMMAND_SEED=%q: want a positive integer\n", v)
			os.Exit(2)
		}
		hashSeed = n
	}
	fmt.Printf("command tests: hash seed %d (replay with COMMAND_SEED=%d)\n", hashSeed, hashSeed)
	os.Exit(m.Run())
}

// testConn returns an authenticated RESP2 connection, on no socket, to a
// server over a fresh store of the given number of shards (0: the
// default) hashing keys with hashSeed, and the server's clock, set to
// 2026-01-01. Tests drive it with exec (and EndBatch) and read its
// replies in c.W.Buf.
func testConn(shards int) (*connection, *clock.Clock) { return seededConn(shards, hashSeed) }

// seededConn is testConn over a store whose key hash has the given seed.
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

// do runs one request on c as its own batch and returns the reply.
func (c *connection) do(args ...string) string {
	c.W.Buf = c.W.Buf[:0]
	c.exec(argsOf(args...))
	c.EndBatch()
	return string(c.W.Buf)
}

// argsOf turns strings into a request's arguments.
func argsOf(s ...string) [][]byte {
	b := make([][]byte, len(s))
	for i, a := range s {
		b[i] = []byte(a)
	}
	return b
}
