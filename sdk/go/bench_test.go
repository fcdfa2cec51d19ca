package rlserver

import (
	"context"
	"testing"
	"time"
)

// The SDK's overhead per decision over the raw go-redis call it makes:
// compare ns/op of BenchmarkRawGoRedis and BenchmarkSDKTokenBucket
// (go test -run XXX -bench . -count 5). Both go to the same local server,
// one connection, one decision at a time.

func BenchmarkRawGoRedis(b *testing.B) {
	rdb := startServer(b).client(b)
	ctx := context.Background()
	for b.Loop() {
		v, err := rdb.Do(ctx, "CL.TOKENBUCKET", "bench", "1000000", "1000000", "1s", 1).Slice()
		if err != nil || len(v) != 5 {
			b.Fatal(v, err)
		}
	}
}

func BenchmarkSDKTokenBucket(b *testing.B) {
	rdb := startServer(b).client(b)
	ctx := context.Background()
	tb := New(rdb, Options{Timeout: time.Second, Failure: FailOpen}).TokenBucket(1000000, 1000000, time.Second)
	for b.Loop() {
		d, err := tb.AllowN(ctx, "bench", 1)
		if err != nil || !d.Allowed {
			b.Fatal(d, err)
		}
	}
}
