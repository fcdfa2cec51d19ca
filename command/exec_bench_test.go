package command

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/rlserver/rlserver/clock"
	"github.com/rlserver/rlserver/shard"
)

// BenchmarkExec measures one command's server-side CPU cost, without I/O:
// table lookup, argument parsing, shard lock, engine, reply encoding, in
// batches of 16 as a pipeline of 16 would run them. Requests come as the
// reader hands them over (Session.Exec with their bytes).
func BenchmarkExec(b *testing.B) {
	for _, tc := range []struct {
		name string
		args []string
		keys []int // the positions of the keys in args
	}{
		{"throttle", []string{"CL.THROTTLE", "k", "15", "30", "60"}, []int{1}},
		{"tokenbucket", []string{"CL.TOKENBUCKET", "k", "100", "10", "1s"}, []int{1}},
		{"window-fixed", []string{"CL.WINDOW", "k", "100", "1m", "FIXED"}, []int{1}},
		// compare.sh's CL.ALL workload: each key expires within a
		// microsecond but the FIXED one, as on its random keys.
		{"all3", strings.Fields("CL.ALL 3 TOKENBUCKET au 1000000 1000000 1 THROTTLE ai 1000000 1000000 1 FIXED ar 1000000000 60"), []int{3, 8, 13}},
		{"ping", []string{"PING"}, nil},
	} {
		for _, keys := range []int{1, 100000} {
			b.Run(fmt.Sprintf("%s/keys=%d", tc.name, keys), func(b *testing.B) {
				// 8 shards as on a 2-core server, and a fixed seed: whether
				// hot keys share a shard does not change between runs.
				c := newTestConn(New(Config{}, shard.New(shard.Options{Shards: 8, Seed: benchSeed}), clock.New()))
				// names[j][i]: key i at key position j (CL.ALL's rules
				// name distinct keys)
				names := make([][][]byte, len(tc.keys))
				for j := range names {
					names[j] = make([][]byte, keys)
					for i := range names[j] {
						names[j][i] = []byte(fmt.Sprintf("k%d:%012d", j, i))
					}
				}
				args := make([][]byte, len(tc.args))
				for i, a := range tc.args {
					args[i] = []byte(a)
				}
				for j, pos := range tc.keys {
					args[pos] = names[j][0] // every name has its length
				}
				// The request as the reader hands it over: arguments
				// aliasing its bytes, the keys written in place.
				args, raw := asRead(args)
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					for j, pos := range tc.keys {
						// independent keys per position, as __rand_int__ draws them
						copy(args[pos], names[j][(i+j*(keys/3+1))%keys])
					}
					c.Exec(args, raw)
					c.W.Buf = c.W.Buf[:0]
					if i%16 == 15 {
						c.EndBatch() // a pipeline of 16
					}
				}
			})
		}
	}
}

// benchSeed is BenchmarkExec's hash seed (RL_BENCH_SEED overrides it).
var benchSeed = func() uint64 {
	if s, err := strconv.ParseUint(os.Getenv("RL_BENCH_SEED"), 10, 64); err == nil && s != 0 {
		return s
	}
	return 1
}()

// BenchmarkBatch runs pipelines of 16 requests as the server does: the
// batch is shown to Prefetch, then each request runs. Keys are drawn at
// random (fixed seed) from `keys` per key position, as redis-benchmark's
// __rand_int__ draws them, so that with many keys most lookups miss the
// cache unless prefetched. Reported per request.
func BenchmarkBatch(b *testing.B) {
	const pipeline = 16
	for _, tc := range []struct {
		name string
		args []string
		keys []int
	}{
		{"throttle", []string{"CL.THROTTLE", "k", "1000000", "1000000", "1"}, []int{1}},
		{"all3", strings.Fields("CL.ALL 3 TOKENBUCKET au 1000000 1000000 1 THROTTLE ai 1000000 1000000 1 FIXED ar 1000000000 60"), []int{3, 8, 13}},
	} {
		for _, keys := range []int{1, 1000, 100000} {
			b.Run(fmt.Sprintf("%s/keys=%d", tc.name, keys), func(b *testing.B) {
				c := newTestConn(New(Config{}, shard.New(shard.Options{Shards: 8, Seed: benchSeed}), clock.New()))
				// Key i at key position j, written in place (a table of
				// names would add its own cache misses to the requests').
				name := func(j, i int) []byte { return fmt.Appendf(nil, "k%d:%012d", j, i) }
				setKey := func(key []byte, i int) {
					for d := len(key) - 1; d >= 3; d-- {
						key[d] = byte('0' + i%10)
						i /= 10
					}
				}
				var reqs [pipeline][][]byte
				var raws [pipeline][]byte
				var all [][]byte
				var counts []int
				for p := range reqs {
					args := argsOf(tc.args...)
					for j, pos := range tc.keys {
						args[pos] = name(j, 0)
					}
					reqs[p], raws[p] = asRead(args)
					all = append(all, reqs[p]...)
					counts = append(counts, len(args))
				}
				// Every key exists before timing starts.
				for i := 0; i < keys; i++ {
					for _, pos := range tc.keys {
						setKey(reqs[0][pos], i)
					}
					c.Exec(reqs[0], raws[0])
					c.W.Buf = c.W.Buf[:0]
					c.EndBatch()
				}
				rng := rand.New(rand.NewPCG(benchSeed, 7))
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i += pipeline {
					for p := range reqs {
						for _, pos := range tc.keys {
							setKey(reqs[p][pos], rng.IntN(keys))
						}
					}
					c.Prefetch(all, counts)
					for p := range reqs {
						c.Exec(reqs[p], raws[p])
					}
					c.W.Buf = c.W.Buf[:0]
					c.EndBatch()
				}
			})
		}
	}
}
