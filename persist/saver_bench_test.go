package persist

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/rlserver/rlserver/clock"
	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/shard"
)

// BenchmarkSaver1M measures the whole persistence path for 1,000,000 token
// bucket keys: one flush of every key from the keyspace into Pebble (drain,
// encode, batch, sync), one more after every key changed again in a random
// order, then a cold start that restores them all (Pebble open, load,
// decode, insert into shards). Run it once:
//
//	go test -run '^$' -bench Saver1M -benchtime 1x ./persist
func BenchmarkSaver1M(b *testing.B) {
	const keys = 1_000_000
	for i := 0; i < b.N; i++ {
		dir := b.TempDir()
		clock := clock.New()
		ks := shard.New(shard.Options{TrackChanges: true})
		now := clock.Now()
		p := engine.TokenBucketParams{Capacity: 100, Rate: 1, Period: time.Hour}
		for k := 0; k < keys; k++ {
			key := []byte(fmt.Sprintf("user:%07d", k))
			tokenTake(ks, key, now, p, 1)
		}
		db, err := Open(&Options{Dir: dir})
		if err != nil {
			b.Fatal(err)
		}
		saver, err := NewSaver(db, ks, clock, SaverOptions{Interval: time.Hour})
		if err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		began := time.Now()
		if err := saver.Save(); err != nil {
			b.Fatal(err)
		}
		flush := time.Since(began)
		// Then every key changed again in a random order, as random
		// traffic leaves them: the flush visits records scattered in memory.
		b.StopTimer()
		for _, k := range rand.New(rand.NewPCG(1, 2)).Perm(keys) {
			key := []byte(fmt.Sprintf("user:%07d", k))
			tokenTake(ks, key, now, p, 1)
		}
		b.StartTimer()
		began = time.Now()
		if err := saver.Save(); err != nil {
			b.Fatal(err)
		}
		reflush := time.Since(began)
		b.StopTimer()
		if err := saver.Shutdown(false); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()

		began = time.Now()
		db2, err := Open(&Options{Dir: dir})
		if err != nil {
			b.Fatal(err)
		}
		ks2 := shard.New(shard.Options{TrackChanges: true})
		saver2, err := NewSaver(db2, ks2, clock, SaverOptions{Interval: time.Hour})
		if err != nil {
			b.Fatal(err)
		}
		restore := time.Since(began)
		if saver2.Restored() != keys {
			b.Fatalf("restored %d keys, want %d", saver2.Restored(), keys)
		}
		b.StopTimer()
		saver2.Shutdown(false)
		b.ReportMetric(flush.Seconds(), "flush-s")
		b.ReportMetric(reflush.Seconds(), "reflush-random-s")
		b.ReportMetric(restore.Seconds(), "restore-s")
		b.ReportMetric(float64(ks2.Stats().Memory)/keys, "accounted-B/key")
		b.StartTimer()
	}
}
