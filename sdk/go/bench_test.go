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

// BenchmarkOverhead alternates the raw call and the SDK call on one
// connection, so that load on the machine hits both alike, and reports the
// SDK's extra time as a percentage of the raw call's (overhead-%), with
// and without a per-call timeout (a context with a deadline per call).
func BenchmarkOverhead(b *testing.B) {
	for _, tc := range []struct {
		name string
		opts Options
	}{{"no-timeout", Options{}}, {"timeout", Options{Timeout: time.Second, Failure: FailOpen}}} {
		b.Run(tc.name, func(b *testing.B) { benchOverhead(b, tc.opts) })
	}
}

func benchOverhead(b *testing.B, opts Options) {
	rdb := startServer(b).client(b)
	ctx := context.Background()
	tb := New(rdb, opts).TokenBucket(1000000, 1000000, time.Second)
	var raw, sdk time.Duration
	for b.Loop() {
		t0 := time.Now()
		if _, err := rdb.Do(ctx, "CL.TOKENBUCKET", "bench", "1000000", "1000000", "1s", 1).Slice(); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, err := tb.AllowN(ctx, "bench", 1); err != nil {
			b.Fatal(err)
		}
		sdk += time.Since(t1)
		raw += t1.Sub(t0)
	}
	b.ReportMetric(100*float64(sdk-raw)/float64(raw), "overhead-%")
	b.ReportMetric(float64(raw.Nanoseconds())/float64(b.N), "raw-ns/op")
	b.ReportMetric(float64(sdk.Nanoseconds())/float64(b.N), "sdk-ns/op")
}
