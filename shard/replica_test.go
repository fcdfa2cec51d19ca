package shard

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlserver/rlserver/engine"
)

// TestReplicaCopiesPrimary: a replica store that applies a primary's
// full snapshot and then its raw stream (ParseEntries, Apply, ApplyFlush)
// holds exactly the primary's keys, states and expiries, also when the
// two stores have different shard counts; SubscribeAt resumes from a
// position the rings hold and refuses one they dropped.
func TestReplicaCopiesPrimary(t *testing.T) {
	for _, replicaShards := range []int{4, 8} {
		primary := New(Options{Shards: 4, Seed: 7, Cluster: true, FeedBytes: 1 << 12})
		replica := New(Options{Shards: replicaShards, Seed: 9, Cluster: true})
		p := engine.TokenBucketParams{Capacity: 10, Rate: 1, Period: time.Second}
		now := int64(1e18)
		take := func(key string, n int64) {
			op := newTakeOp(func(b *engine.TokenBucket) engine.Decision { return b.Take(now, p, n) })
			primary.View().Update([]byte(key), now, op)
		}
		for i := range 50 {
			take("k"+string(rune('a'+i%26))+string(rune('a'+i/26)), 1)
		}
		f := primary.Subscribe()
		apply := func(i int, raw []byte) {
			t.Helper()
			entries, err := ParseEntries(nil, raw)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				if e.Event == EventFlush {
					replica.ApplyFlush(i, primary.NumShards())
					continue
				}
				sh := replica.ShardFor(e.Key)
				sh.Lock()
				err := sh.Apply(e)
				sh.Unlock()
				if err != nil {
					t.Fatal(err)
				}
			}
		}
		pos := make([]uint64, primary.NumShards())
		for i := range pos {
			var raw []byte
			raw, pos[i] = f.SnapshotRaw(i, now, nil)
			apply(i, raw)
		}
		// Changes after the snapshot: more takes, a delete, a flush of one shard.
		take("ka", 3)
		take("new", 2)
		sh := primary.ShardFor([]byte("kba"))
		sh.Lock()
		sh.Delete([]byte("kba"), now)
		sh.Unlock()
		cleared := primary.ShardFor([]byte("kca"))
		cleared.Lock()
		cleared.clear()
		cleared.Unlock()
		for i := range pos {
			raw, at, err := f.ReadRaw(i, nil)
			if err != nil {
				t.Fatal(err)
			}
			apply(i, raw)
			pos[i] = at
		}
		a, b := dump(primary, now), dump(replica, now)
		if strings.Count(a, ";") < 10 || strings.Contains(a, "kba=") || strings.Contains(a, "kca=") {
			t.Fatalf("primary's keys are not what the test made: %s", a)
		}
		if a != b {
			t.Fatalf("%d replica shards: replica differs from primary:\nprimary %s\nreplica %s", replicaShards, a, b)
		}
		if g := primary.SubscribeAt(pos); g == nil {
			t.Fatal("SubscribeAt refused the current position")
		} else {
			g.Close()
		}
		// Overrun shard 0's 4 KB ring: its old position is gone.
		for i := range 400 {
			take(string(rune('A'+i%26))+"{x}"+string(rune('A'+i/26)), 1)
		}
		if g := primary.SubscribeAt(pos); g != nil {
			g.Close()
			t.Fatal("SubscribeAt accepted a position the ring dropped")
		}
		f.Close()
	}
}

// dump renders every live key with its kind, expiry and state.
func dump(s *Store, now int64) string {
	var keys []string
	m := map[string]string{}
	for i := 0; i < s.NumShards(); i++ {
		sh := s.Shard(i)
		sh.Lock()
		sh.Each(now, func(it Item) bool {
			st := sh.State(it)
			keys = append(keys, string(it.Key))
			m[string(it.Key)] = it.Kind.String() + " " + fmt.Sprintf("%x", st.AppendCompact(nil, it.ExpireAt)) + " " + strconv.FormatInt(it.ExpireAt, 10)
			return true
		})
		sh.Unlock()
	}
	slices.Sort(keys)
	var b bytes.Buffer
	for _, k := range keys {
		b.WriteString(k + "=" + m[k] + ";")
	}
	return b.String()
}

// TestParseEntriesHostileBytes: stream bytes from the network, cut or
// corrupted anywhere, give an error or entries that Apply accepts or
// refuses, never a panic.
func TestParseEntriesHostileBytes(t *testing.T) {
	primary := New(Options{Shards: 1, Seed: 3})
	p := engine.TokenBucketParams{Capacity: 10, Rate: 1, Period: time.Second}
	for i := range 20 {
		op := newTakeOp(func(b *engine.TokenBucket) engine.Decision { return b.Take(1e18, p, 1) })
		primary.View().Update([]byte{byte('a' + i)}, 1e18, op)
	}
	f := primary.Subscribe()
	defer f.Close()
	raw, _ := f.SnapshotRaw(0, 1e18, nil)
	rng := rand.New(rand.NewPCG(1, 2))
	replica := New(Options{Shards: 1, Seed: 4})
	sh := replica.Shard(0)
	for trial := range 20000 {
		b := append([]byte(nil), raw...)
		switch trial % 3 {
		case 0:
			b = b[:rng.IntN(len(b)+1)]
		case 1:
			for range 1 + rng.IntN(4) {
				b[rng.IntN(len(b))] = byte(rng.Uint32())
			}
		case 2:
			b = make([]byte, rng.IntN(64))
			for i := range b {
				b[i] = byte(rng.Uint32())
			}
		}
		entries, err := ParseEntries(nil, b)
		if err != nil {
			continue
		}
		sh.Lock()
		for _, e := range entries {
			if e.Event != EventFlush {
				sh.Apply(e)
			}
		}
		sh.Unlock()
	}
}
