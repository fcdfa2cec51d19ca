package resp_test

import (
	"bytes"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"testing"

	"github.com/rlserver/rlserver/clock"
	"github.com/rlserver/rlserver/command"
	"github.com/rlserver/rlserver/resp"
	"github.com/rlserver/rlserver/shard"
)

// Dispatch benchmarks: a pre-built batch of 16 pipelined limiter commands
// goes through a real server connection (reader -> table lookup -> handler
// -> shard lock -> engine -> reply encoding -> one write), and the client
// reads the 16 replies back. One op is one batch; ns/cmd is per command.
// Allocations are counted for the whole process, the client side included,
// which allocates nothing itself, so allocs/op is the server's per-batch
// figure (divide by 16 for per command).
//
// The limiter parameters keep every key alive (capacity 1e9, refill one per
// hour: a key expires only once it is full again), so the steady state
// exercises updates of existing keys, not creation and expiry.

// benchCmd encodes one request as a RESP multibulk.
func benchCmd(args ...string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.Bytes()
}

// benchBatch returns a batch of 16 requests alternating CL.THROTTLE and
// CL.TOKENBUCKET; key(i) names the key of request i.
func benchBatch(key func(i int) string) []byte {
	var b []byte
	for i := range 16 {
		if i%2 == 0 {
			b = append(b, benchCmd("CL.THROTTLE", "th:"+key(i), "1000000000", "1", "3600")...)
		} else {
			b = append(b, benchCmd("CL.TOKENBUCKET", "tb:"+key(i), "1000000000", "1", "3600")...)
		}
	}
	return b
}

// newServer returns a server running rlserver's commands over an
// in-memory store, whose logger discards.
func newServer(cfg resp.Config) *resp.Server {
	cfg.Logger = log.New(io.Discard, "", 0)
	return resp.New(cfg, command.New(command.Config{}, shard.New(shard.Options{}), clock.New()))
}

// benchServer starts such a server and serves one end of a conn pair.
func benchServer(b *testing.B, serverSide net.Conn) *resp.Server {
	b.Helper()
	s := newServer(resp.Config{})
	s.ServeConn(serverSide)
	return s
}

// benchTCP starts a server on a loopback port, through its own accept
// loop, and returns a client connected to it; both close when the
// benchmark ends.
func benchTCP(b *testing.B) net.Conn {
	b.Helper()
	s := newServer(resp.Config{})
	if err := s.Listen("127.0.0.1:0"); err != nil {
		b.Fatal(err)
	}
	go s.Serve()
	b.Cleanup(func() { s.Close(0) })
	client, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { client.Close() })
	return client
}

// roundTrip writes batch and reads the 16 replies, replyLines lines each
// (six for a limiter's array of five integers, twenty for CL.ALL's
// three rules).
func roundTrip(b *testing.B, conn net.Conn, batch, buf []byte, replyLines int) {
	if _, err := conn.Write(batch); err != nil {
		b.Fatal(err)
	}
	lines := 0
	for lines < 16*replyLines {
		n, err := conn.Read(buf)
		if err != nil {
			b.Fatal(err)
		}
		if buf[0] == '-' {
			b.Fatalf("error reply: %q", buf[:n])
		}
		lines += bytes.Count(buf[:n], []byte{'\n'})
	}
	if lines != 16*replyLines {
		b.Fatalf("read %d reply lines, want %d", lines, 16*replyLines)
	}
}

func benchPipeline16(b *testing.B, client net.Conn, batches [][]byte, replyLines int) {
	buf := make([]byte, 64<<10)
	// Create the keys and grow the buffers first: the steady state is
	// measured, not the first touch.
	for _, batch := range batches {
		roundTrip(b, client, batch, buf, replyLines)
	}
	b.SetBytes(int64(len(batches[0])))
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		roundTrip(b, client, batches[i], buf, replyLines)
		i++
		if i == len(batches) {
			i = 0
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*16), "ns/cmd")
}

// pipelineBatches returns the batches of a sub-benchmark: one hot key
// (every request on the same two keys), or 1,024 keys spread over 64
// pre-built batches.
func pipelineBatches(hot bool) [][]byte {
	if hot {
		return [][]byte{benchBatch(func(int) string { return "hot" })}
	}
	batches := make([][]byte, 64)
	for j := range batches {
		batches[j] = benchBatch(func(i int) string { return fmt.Sprintf("key:%06d", j*16+i) })
	}
	return batches
}

// BenchmarkPipeline16 drives the server over net.Pipe: no syscalls, so the
// profile is the protocol and dispatch path alone.
func BenchmarkPipeline16(b *testing.B) {
	for _, hot := range []bool{true, false} {
		name := "keys=1024"
		if hot {
			name = "keys=hot"
		}
		b.Run(name, func(b *testing.B) {
			client, server := net.Pipe()
			s := benchServer(b, server)
			defer s.Wait()
			defer client.Close()
			benchPipeline16(b, client, pipelineBatches(hot), 6)
		})
	}
}

// BenchmarkPipeline16TCP is BenchmarkPipeline16 over a loopback TCP
// connection through the server's own accept loop, syscalls included.
func BenchmarkPipeline16TCP(b *testing.B) {
	for _, hot := range []bool{true, false} {
		name := "keys=1024"
		if hot {
			name = "keys=hot"
		}
		b.Run(name, func(b *testing.B) {
			benchPipeline16(b, benchTCP(b), pipelineBatches(hot), 6)
		})
	}
}

// BenchmarkRandomTCP compares CL.ALL with three rules to a single-key
// command through the whole server over loopback TCP, on hot keys and on
// 100,000 random keys per key position (as redis-benchmark -r draws them),
// with the parameters of bench/compare.sh (states expire at once, so
// random keys are revived or re-created). 2,048 pre-built batches of 16
// requests are sent in turn on one connection; ns/cmd is wall time, the
// client's included. Against BenchmarkBatch in package command it shows
// what the server adds per request: the parse, the loop, the syscalls.
func BenchmarkRandomTCP(b *testing.B) {
	for _, tc := range []struct {
		name       string
		replyLines int
		request    func(key func(prefix string) string) []byte
	}{
		{"tokenbucket", 6, func(key func(string) string) []byte {
			return benchCmd("CL.TOKENBUCKET", key("tb"), "1000000", "1000000", "1")
		}},
		{"all3", 20, func(key func(string) string) []byte {
			return benchCmd("CL.ALL", "3", "TOKENBUCKET", key("au"), "1000000", "1000000", "1",
				"THROTTLE", key("ai"), "1000000", "1000000", "1", "FIXED", key("ar"), "1000000000", "60")
		}},
	} {
		for _, keys := range []int{1, 100000} {
			b.Run(fmt.Sprintf("%s/keys=%d", tc.name, keys), func(b *testing.B) {
				rng := rand.New(rand.NewPCG(1, 2))
				key := func(prefix string) string { return fmt.Sprintf("%s:%012d", prefix, rng.IntN(keys)) }
				batches := make([][]byte, 2048)
				if keys == 1 {
					batches = batches[:1]
				}
				for j := range batches {
					for range 16 {
						batches[j] = append(batches[j], tc.request(key)...)
					}
				}
				benchPipeline16(b, benchTCP(b), batches, tc.replyLines)
			})
		}
	}
}
