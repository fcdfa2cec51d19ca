package shard

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/rlserver/rlserver/engine"
)

// BenchmarkTake is one limiter decision's keyspace work, without the
// protocol: hash, Find, Load (decode), the engine's Take, Put (encode), on
// one hot key and on 100,000 keys that stay alive.
func BenchmarkTake(b *testing.B) {
	for _, keys := range []int{1, 100_000, 1_000_000} {
		b.Run(fmt.Sprint("keys=", keys), func(b *testing.B) {
			s := New(Options{Shards: 4})
			names := make([][]byte, keys)
			for i := range names {
				names[i] = fmt.Appendf(nil, "tb:%012d", i)
			}
			p := engine.TokenBucketParams{Capacity: 1_000_000_000, Rate: 1, Period: time.Hour}
			now := int64(1.8e18)
			op := newTakeOp(func(st *engine.TokenBucket) engine.Decision { return st.Take(now, p, 1) })
			take := func(key []byte) { call(s, key, now, op) }
			for _, k := range names {
				take(k)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				take(names[(i*7919)%keys])
			}
		})
	}
}

// BenchmarkMemory1M loads 1,000,000 token-bucket keys ("tb:" and 12
// digits, as bench/compare.sh makes them) and reports the Go heap they
// take per key once index growths have finished, and what the shards
// account for.
func BenchmarkMemory1M(b *testing.B) {
	for i := 0; i < b.N; i++ {
		const n = 1_000_000
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		s := New(Options{})
		loadBuckets(s, n, 1_000_000_000, int64(1.8e18))
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapInuse-before.HeapInuse)/n, "heap-B/key")
		b.ReportMetric(float64(s.Stats().Memory)/n, "accounted-B/key")
		runtime.KeepAlive(s)
	}
}

// BenchmarkEvictingInsert inserts new token-bucket keys into a keyspace
// at its memory bound (about 300,000 keys), so that every insert evicts:
// the slab allocation, release and sampling of bench/evict.sh without the
// protocol.
func BenchmarkEvictingInsert(b *testing.B) {
	s := New(Options{Shards: 8})
	p := engine.TokenBucketParams{Capacity: 100, Rate: 1, Period: time.Hour}
	now := int64(1.8e18)
	op := newTakeOp(func(st *engine.TokenBucket) engine.Decision { return st.Take(now, p, 1) })
	key := make([]byte, 0, 24)
	for i := range 300_000 {
		key = fmt.Appendf(key[:0], "f:%d", i*7919)
		call(s, key, now, op)
	}
	s.SetMaxMemory(s.Stats().Memory)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		key = fmt.Appendf(key[:0], "i:%d", i*7919)
		call(s, key, now+int64(i), op)
	}
	if s.Stats().Evicted == 0 {
		b.Fatal("nothing evicted")
	}
}

// BenchmarkSweepLive sweeps a keyspace of 300,000 live keys, none due, in
// the sweeper's steps: the cost of active expiry on a server whose keys are
// all in use, per slot visited.
func BenchmarkSweepLive(b *testing.B) {
	s := New(Options{Shards: 8})
	now := int64(1.8e18)
	loadBuckets(s, 300_000, 100, now)
	b.ResetTimer()
	const step = 2000
	for i := 0; i < b.N; i += step {
		sh := s.Shard(i / step % s.NumShards())
		if sh.Sweep(now, step) != 0 {
			b.Fatal("a live key was swept")
		}
	}
}

// loadBuckets inserts n token-bucket keys ("tb:" and 12 digits, as
// bench/compare.sh makes them), each with one token taken at now from an
// hour bucket of the given capacity, then finishes the index growths under
// way, as the server's sweep does within seconds: until then a shard also
// holds the table it grows from.
func loadBuckets(s *Store, n int, capacity int64, now int64) {
	p := engine.TokenBucketParams{Capacity: capacity, Rate: 1, Period: time.Hour}
	key := make([]byte, 0, 16)
	for k := 0; k < n; k++ {
		key = fmt.Appendf(key[:0], "tb:%012d", k)
		st := &engine.TokenBucket{}
		d := st.Take(now, p, 1)
		s.ShardFor(key).Insert(key, st, now+int64(d.ResetAfter))
	}
	for j := 0; j < s.NumShards(); j++ {
		for sh := s.Shard(j); sh.idx.old != nil; {
			sh.Sweep(0, 1<<16)
		}
	}
}
