// Command overadmit measures what a failover over-admits without WAIT:
// for each limiter kind it drives decisions on one key (slot 3443) at the
// primary as fast as a pipelined client can, runs -kill once they are
// flowing, waits for the promoted replica to take decisions, reads the
// limiter's remaining units there (n = 0), and prints how many admissions
// the client saw that the new primary does not know about. Admissions
// whose replies were lost in the kill are not counted (a lower bound of
// what was lost, then).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

type kind struct {
	name  string
	args  func(n int) []any
	ok    func(r []any) bool
	limit int64
}

const limit = 100_000_000

var kinds = []kind{
	{"gcra (CL.THROTTLE)", func(n int) []any { return []any{"CL.THROTTLE", "{user1000}.oa.thr", limit - 1, 1, 3600, n} },
		func(r []any) bool { return r[0].(int64) == 0 }, limit},
	{"token bucket", func(n int) []any { return []any{"CL.TOKENBUCKET", "{user1000}.oa.tb", limit, 1, "1h", n} },
		func(r []any) bool { return r[0].(int64) == 1 }, limit},
	{"fixed window", func(n int) []any { return []any{"CL.WINDOW", "{user1000}.oa.win", limit, "1h", n, "FIXED"} },
		func(r []any) bool { return r[0].(int64) == 1 }, limit},
	{"sliding window", func(n int) []any { return []any{"CL.WINDOW", "{user1000}.oa.sw", limit, "1h", n, "SLIDING"} },
		func(r []any) bool { return r[0].(int64) == 1 }, limit},
	{"leaky bucket", func(n int) []any { return []any{"CL.LEAKYBUCKET", "{user1000}.oa.lb", limit, 1, "1h", n} },
		func(r []any) bool { return r[0].(int64) == 1 }, limit},
	// A concurrency key's state holds its leases, and every change sends
	// it whole: 1000 leases, not millions.
	{"leases (CL.ACQUIRE)", func(n int) []any { return []any{"CL.ACQUIRE", "{user1000}.oa.acq", 1000, "1h", n} },
		func(r []any) bool { return r[0].(int64) == 1 }, 1000},
}

func main() {
	primary := flag.String("primary", "", "the primary of slot 3443")
	others := flag.String("others", "", "comma-separated addresses of the other nodes")
	kill := flag.String("kill", "", "shell command that kills the primary")
	flag.Parse()
	ctx := context.Background()
	p := redis.NewClient(&redis.Options{Addr: *primary, MaxRetries: -1})
	admitted := make([]atomic.Int64, len(kinds))
	var wg sync.WaitGroup
	for i, k := range kinds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				pipe := p.Pipeline()
				cmds := make([]*redis.Cmd, 16)
				for j := range cmds {
					cmds[j] = pipe.Do(ctx, k.args(1)...)
				}
				pipe.Exec(ctx)
				for _, c := range cmds {
					r, err := c.Slice()
					if err != nil {
						return
					}
					if k.ok(r) {
						admitted[i].Add(1)
					}
				}
			}
		}()
	}
	time.Sleep(time.Second)
	killed := time.Now()
	if out, err := exec.Command("sh", "-c", *kill).CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "kill: %v %s\n", err, out)
		os.Exit(1)
	}
	wg.Wait()
	// The promoted node: the first other node that takes a decision on
	// the slot as its primary.
	var np *redis.Client
	for np == nil {
		for _, a := range strings.Split(*others, ",") {
			c := redis.NewClient(&redis.Options{Addr: a, MaxRetries: -1})
			if err := c.Do(ctx, kinds[0].args(0)...).Err(); err == nil {
				np = c
				break
			}
			c.Close()
		}
		time.Sleep(20 * time.Millisecond)
	}
	fmt.Printf("failover: %v after the kill\n", time.Since(killed).Round(time.Millisecond))
	for i, k := range kinds {
		r, err := np.Do(ctx, k.args(0)...).Slice()
		if err != nil {
			fmt.Fprintln(os.Stderr, k.name, err)
			os.Exit(1)
		}
		known := k.limit - r[2].(int64)
		seen := admitted[i].Load()
		fmt.Printf("%-20s admitted by the old primary (replies seen) %d, known to the new primary %d, over-admission %d\n", k.name, seen, known, max(seen-known, 0))
	}
}
