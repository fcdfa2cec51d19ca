package shard

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/rlserver/rlserver/engine"
)

// TestFeedStream: a subscriber reads every change of a shard in the order
// it happened, as resulting states (the compact encoding with its absolute
// expiry) or removals with their cause; an expiry is not streamed (the
// state's expiry says it).
func TestFeedStream(t *testing.T) {
	s := New(Options{Shards: 1, MaxMemory: 1 << 20, Seed: 1})
	sh := s.Shard(0)
	f := s.Subscribe()
	defer f.Close()
	p := engine.TokenBucketParams{Capacity: 10, Rate: 1, Period: time.Second}
	op := newTakeOp(func(b *engine.TokenBucket) engine.Decision { return b.Take(1e18, p, 3) })
	sh.Lock()
	sh.update([]byte("a"), s.Hash([]byte("a")), 1e18, op, false) // put: 7 tokens, full in 3 s
	sh.Insert([]byte("b"), engine.KindWindow.New(), 1e18+5*sec)
	sh.Delete([]byte("b"), 1e18)
	sh.Sweep(1e18+4*sec, 100) // a expires
	sh.Insert([]byte("c"), engine.KindWindow.New(), 1e18+9*sec)
	sh.clear()
	sh.Unlock()
	got, _, err := f.Read(0, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, e := range got {
		lines = append(lines, fmt.Sprintf("%v %s %v %d %d", e.Event, e.Key, e.Kind, e.ExpireAt-1e18, len(e.Payload)))
	}
	want := []string{
		"put a tokenbucket 3000000000 6", "put b window 5000000000 0", "delete b none -1000000000000000000 0",
		"put c window 9000000000 0", "flush  none -1000000000000000000 0",
	}
	if fmt.Sprint(lines) != fmt.Sprint(want) {
		t.Fatalf("stream:\n%v\nwant\n%v", lines, want)
	}
	var tb engine.TokenBucket
	if err := tb.DecodeCompact(got[0].Payload, got[0].ExpireAt); err != nil {
		t.Fatal(err)
	}
	if d := tb.Check(1e18, p, 0); d.Remaining != 7 {
		t.Fatalf("streamed state has %d tokens, want 7", d.Remaining)
	}
	if more, _, err := f.Read(0, nil, nil); len(more) != 0 || err != nil {
		t.Fatalf("second read: %v %v", more, err)
	}
}

// TestFeedReplicaConverges drives a keyspace with random takes, deletes,
// expiries, evictions and flushes, and a replica that follows it through
// the feed, now and then not reading for a while so that a small ring
// moves past it: it is told (ErrBehind), takes a snapshot and catches up.
// After every step the replica holds exactly the primary's live keys and
// states. Nothing the primary does waits for the replica.
func TestFeedReplicaConverges(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if v, err := strconv.ParseUint(os.Getenv("FEED_SEED"), 10, 64); err == nil {
		seed = v // replay a failure
	}
	t.Logf("FEED_SEED=%d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	s := New(Options{Shards: 2, FeedBytes: 1 << 10, MaxMemory: 1200, Seed: seed})
	f := s.Subscribe()
	defer f.Close()
	now := int64(1.8e18)
	type rec struct {
		kind    engine.Kind
		exp     int64
		payload string
	}
	replica := []map[string]rec{{}, {}}
	behind, snapshots := 0, 0
	var entries []Entry
	var buf []byte
	catchUp := func(i int) {
		var err error
		entries, buf, err = f.Read(i, entries[:0], buf[:0])
		if errors.Is(err, ErrBehind) {
			behind++
			entries, buf = f.Snapshot(i, now, entries[:0], buf[:0])
			replica[i] = map[string]rec{}
			snapshots++
		} else if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			switch e.Event {
			case EventPut:
				replica[i][string(e.Key)] = rec{e.Kind, e.ExpireAt, string(e.Payload)}
			case EventFlush:
				replica[i] = map[string]rec{}
			default:
				delete(replica[i], string(e.Key))
			}
		}
	}
	p := engine.TokenBucketParams{Capacity: 20, Rate: 1, Period: time.Second}
	op := newTakeOp(func(b *engine.TokenBucket) engine.Decision { return b.Take(now, p, 1+int64(rng.IntN(3))) })
	for step := range 5000 {
		k := []byte(fmt.Sprintf("k%d", rng.IntN(200)))
		switch x := rng.IntN(100); {
		case x < 80:
			s.View().Update(k, now, op)
		case x < 90:
			sh := s.ShardFor(k)
			sh.Lock()
			sh.Delete(k, now)
			sh.Unlock()
		case x < 99:
			now += int64(rng.IntN(2000)) * int64(time.Millisecond)
			for i := range 2 {
				sh := s.Shard(i)
				sh.Lock()
				sh.Sweep(now, 50)
				sh.Unlock()
			}
		default:
			sh := s.Shard(rng.IntN(2))
			sh.Lock()
			sh.clear()
			sh.Unlock()
		}
		if rng.IntN(40) != 0 {
			continue // the replica reads now and then only
		}
		for i := range 2 {
			catchUp(i)
			sh := s.Shard(i)
			sh.Lock()
			live := map[string]rec{}
			sh.Each(now, func(it Item) bool {
				live[string(it.Key)] = rec{it.Kind, it.ExpireAt, string(sh.encoded(sh.slabs.get(it.ref), it.ExpireAt))}
				return true
			})
			sh.Unlock()
			// The replica drops what expired by the primary's clock, as the
			// primary does lazily.
			for k, r := range replica[i] {
				if r.exp <= now {
					delete(replica[i], k)
				}
			}
			if fmt.Sprint(live) != fmt.Sprint(replica[i]) {
				t.Fatalf("step %d shard %d: replica holds\n%v\nprimary\n%v", step, i, replica[i], live)
			}
		}
	}
	if behind == 0 || snapshots == 0 || s.Stats().Evicted == 0 {
		t.Fatalf("the replica never fell behind (%d) or nothing was evicted (%d): the test did not test that", behind, s.Stats().Evicted)
	}
	t.Logf("fell behind and resynchronised %d times", behind)
}

// TestFeedAllocatesNothing: with a subscriber, recording a change copies
// into the ring without allocating.
func TestFeedAllocatesNothing(t *testing.T) {
	s := New(Options{Seed: testSeed(t), Shards: 1})
	f := s.Subscribe()
	defer f.Close()
	p := engine.TokenBucketParams{Capacity: 1e9, Rate: 1, Period: time.Hour}
	op := newTakeOp(func(b *engine.TokenBucket) engine.Decision { return b.Take(1.8e18, p, 1) })
	keys := [][]byte{[]byte("a"), []byte("b")}
	round := func() {
		for _, k := range keys {
			s.View().Update(k, 1.8e18, op)
		}
	}
	round()
	if a := testing.AllocsPerRun(100, round); a != 0 {
		t.Fatalf("%v allocations per round with a subscriber", a)
	}
	got, _, _ := f.Read(0, nil, nil)
	if len(got) == 0 || !bytes.Equal(got[len(got)-1].Key, []byte("b")) {
		t.Fatalf("stream ends with %v", got[len(got)-1:])
	}
}
