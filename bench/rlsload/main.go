// rlsload drives a rate limit service (envoy.service.ratelimit.v3) with
// ShouldRateLimit requests from concurrent clients and reports decisions,
// admissions and latency percentiles as one line of key=value pairs
// (bench/rls.sh runs it against rlserver and envoyproxy/ratelimit alike).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8081", "the service's gRPC address")
	domain := flag.String("domain", "bench", "domain")
	key := flag.String("key", "user", "descriptor key")
	clients := flag.Int("clients", 50, "concurrent clients")
	conns := flag.Int("conns", 4, "gRPC connections the clients share")
	requests := flag.Int("requests", 200000, "requests in all")
	distinct := flag.Int("distinct", 0, "0: one hot value; n: values drawn from n distinct ones")
	flag.Parse()

	cc := make([]pb.RateLimitServiceClient, *conns)
	for i := range cc {
		conn, err := grpc.NewClient(*addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer conn.Close()
		cc[i] = pb.NewRateLimitServiceClient(conn)
	}
	var next, ok, over, failed atomic.Int64
	lat := make([][]time.Duration, *clients)
	var wg sync.WaitGroup
	began := time.Now()
	for c := 0; c < *clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			client := cc[c%len(cc)]
			for {
				n := next.Add(1)
				if n > int64(*requests) {
					return
				}
				value := "hot"
				if *distinct > 0 {
					value = strconv.FormatInt((n*7919)%int64(*distinct), 10)
				}
				req := &pb.RateLimitRequest{Domain: *domain, Descriptors: []*rlv3.RateLimitDescriptor{
					{Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: *key, Value: value}}}}}
				t := time.Now()
				resp, err := client.ShouldRateLimit(context.Background(), req)
				lat[c] = append(lat[c], time.Since(t))
				switch {
				case err != nil:
					failed.Add(1)
				case resp.OverallCode == pb.RateLimitResponse_OK:
					ok.Add(1)
				default:
					over.Add(1)
				}
			}
		}(c)
	}
	wg.Wait()
	elapsed := time.Since(began)
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	pct := func(p float64) time.Duration {
		if len(all) == 0 {
			return 0
		}
		return all[int(float64(len(all)-1)*p)]
	}
	fmt.Printf("requests=%d ok=%d over=%d errors=%d seconds=%.3f rps=%.0f p50_us=%d p99_us=%d\n",
		len(all), ok.Load(), over.Load(), failed.Load(), elapsed.Seconds(), float64(len(all))/elapsed.Seconds(),
		pct(0.50).Microseconds(), pct(0.99).Microseconds())
}
