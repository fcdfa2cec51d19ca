package command

import (
	"fmt"
	"os"
	"testing"

	"github.com/rlserver/rlserver/clock"
	"github.com/rlserver/rlserver/script"
	"github.com/rlserver/rlserver/shard"
)

// BenchmarkEval runs EVALSHA of the scripts bench/valload sends (the
// libraries' own, from integration/testdata/lua) on 1,000 keys, one
// request at a time; reported per script run. Instructions per run under
// callgrind are the deterministic reading.
func BenchmarkEval(b *testing.B) {
	for _, tc := range []struct {
		name, file string
		args       []string // after the key
	}{
		{"empty", "", nil},
		{"redis_rate", "redis_rate_gcra.lua", []string{"100", "10", "1", "1"}},
		{"rate_limit_redis", "express_fixed_window.lua", []string{"0", "60000"}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			body := []byte("return 1")
			if tc.file != "" {
				var err error
				if body, err = os.ReadFile("../integration/testdata/lua/" + tc.file); err != nil {
					b.Fatal(err)
				}
			}
			c := newTestConn(New(Config{}, shard.New(shard.Options{Shards: 8, Seed: benchSeed}), clock.New()))
			c.Exec(asRead(argsOf("SCRIPT", "LOAD", string(body))))
			sha := script.SHA1(body)
			reqs := make([][][]byte, 1000)
			raws := make([][]byte, len(reqs))
			for i := range reqs {
				args := []string{"EVALSHA", sha, "0"}
				if tc.file != "" {
					args = append([]string{"EVALSHA", sha, "1", fmt.Sprintf("k:%06d", i)}, tc.args...)
				}
				reqs[i], raws[i] = asRead(argsOf(args...))
			}
			c.W.Buf = c.W.Buf[:0]
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				c.Exec(reqs[i%len(reqs)], raws[i%len(reqs)])
				if c.W.Buf[0] == '-' {
					b.Fatalf("%s", c.W.Buf)
				}
				c.W.Buf = c.W.Buf[:0]
				c.EndBatch()
			}
		})
	}
}
