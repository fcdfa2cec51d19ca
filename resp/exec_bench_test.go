package resp

import (
	"fmt"
	"io"
	"log"
	"testing"

	"github.com/rlserver/rlserver/shard"
)

// BenchmarkExec measures one command's server-side CPU cost, without I/O:
// table lookup, argument parsing, shard lock, engine, reply encoding, in
// batches of 16 as a pipeline of 16 would run them.
func BenchmarkExec(b *testing.B) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"throttle", []string{"CL.THROTTLE", "k", "15", "30", "60"}},
		{"tokenbucket", []string{"CL.TOKENBUCKET", "k", "100", "10", "1s"}},
		{"window-fixed", []string{"CL.WINDOW", "k", "100", "1m", "FIXED"}},
		{"ping", []string{"PING"}},
	} {
		for _, keys := range []int{1, 100000} {
			b.Run(fmt.Sprintf("%s/keys=%d", tc.name, keys), func(b *testing.B) {
				srv := New(Config{Logger: log.New(io.Discard, "", 0)}, shard.New(shard.Options{}), shard.NewClock())
				c := &Conn{srv: srv, proto: 2, authed: true}
				names := make([][]byte, keys)
				for i := range names {
					names[i] = []byte(fmt.Sprintf("key:%012d", i))
				}
				args := make([][]byte, len(tc.args))
				for i, a := range tc.args {
					args[i] = []byte(a)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if len(args) > 1 {
						args[1] = names[i%keys]
					}
					c.exec(args)
					c.out = c.out[:0]
					if i%16 == 15 {
						c.endBatch() // a pipeline of 16
					}
				}
			})
		}
	}
}
