// Command repllag measures replication lag: it makes a decision on a new
// key at the primary, then asks the replica (READONLY) until the key is
// there, a given number of times while other clients load the primary,
// and prints the lag's percentiles.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

func main() {
	primary := flag.String("primary", "127.0.0.1:7001", "primary address")
	replica := flag.String("replica", "127.0.0.1:7002", "replica address")
	n := flag.Int("n", 2000, "probes")
	flag.Parse()
	ctx := context.Background()
	p := redis.NewClient(&redis.Options{Addr: *primary})
	r := redis.NewClient(&redis.Options{Addr: *replica, PoolSize: 1, OnConnect: func(ctx context.Context, cn *redis.Conn) error {
		return cn.Do(ctx, "READONLY").Err()
	}})
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	lags := make([]time.Duration, 0, *n)
	for i := range *n {
		key := "lag:" + run + ":" + strconv.Itoa(i)
		if err := p.Do(ctx, "CL.THROTTLE", key, "10", "10", "60").Err(); err != nil {
			fmt.Fprintln(os.Stderr, "primary:", err)
			os.Exit(1)
		}
		began := time.Now()
		for {
			ok, err := r.Exists(ctx, key).Result()
			if err != nil {
				fmt.Fprintln(os.Stderr, "replica:", err)
				os.Exit(1)
			}
			if ok == 1 {
				break
			}
		}
		lags = append(lags, time.Since(began))
	}
	slices.Sort(lags)
	q := func(f float64) time.Duration { return lags[int(f*float64(len(lags)-1))] }
	fmt.Printf("lag p50=%v p99=%v max=%v (%d probes)\n", q(0.5), q(0.99), lags[len(lags)-1], len(lags))
}
