package shard

import (
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/rlserver/rlserver/engine"
)

// TestAgainstModel drives a shard with random inserts, updates, deletes,
// lookups, sweeps and drains, keys of every record size (1-byte and 2-byte
// length varints, slab and big records) and states that change size, and
// checks it against a map after every step: the same keys live with the
// same expiry and state, the same count, and drained changes that, applied
// to a "disk" map, reproduce the live keys. The states are a boxed fake,
// and real limiter states: token buckets (inline), LOG windows that cross
// the inline limit both ways, and lease sets (up to 3 leases, inline, or
// 24, boxed).
func TestAgainstModel(t *testing.T) {
	makers := map[string]func(*rand.Rand) engine.State{
		"fake": func(rng *rand.Rand) engine.State { return &fake{size: rng.IntN(200)} },
		"mixed": func(rng *rand.Rand) engine.State {
			now := int64(1.8e18) + rng.Int64N(1e12)
			switch rng.IntN(3) {
			case 0:
				st := &engine.TokenBucket{}
				st.Take(now, engine.TokenBucketParams{Capacity: 1 + rng.Int64N(1e9), Rate: 1 + rng.Int64N(1e6), Period: time.Second}, rng.Int64N(5))
				return st
			case 1:
				st := &engine.Window{}
				p := engine.WindowParams{Limit: 10000, Window: time.Minute, Mode: engine.WindowLog}
				for range rng.IntN(80) {
					now += rng.Int64N(1e9)
					st.Take(now, p, 1)
				}
				return st
			}
			st := &engine.Concurrency{}
			n := rng.IntN(4)
			if rng.IntN(4) == 0 {
				n = 24 // about 240 bytes: boxed
			}
			for i := range n {
				st.Take(now, engine.ConcurrencyParams{Limit: 30, Lease: time.Minute, ID: fmt.Sprint("lease", i)}, 1)
			}
			return st
		},
	}
	// fresh returns a state to decode a drained payload into.
	fresh := map[string]func(engine.Kind) engine.State{
		"fake":  func(engine.Kind) engine.State { return &fake{} },
		"mixed": engine.Kind.New,
	}
	for name, mk := range makers {
		for seed := uint64(1); seed <= 3; seed++ {
			t.Run(fmt.Sprint(name, "/seed", seed), func(t *testing.T) { modelRun(t, seed, mk, fresh[name]) })
		}
	}
}

type modelKey struct {
	state string // the state's fingerprint
	exp   int64
}

// fingerprint identifies a state: its compact encoding with a fixed ref
// (canonical, so equal states and only they have equal fingerprints).
func fingerprint(st engine.State) string {
	return hex.EncodeToString(st.AppendCompact(nil, 0))
}

func modelRun(t *testing.T, seed uint64, mk func(*rand.Rand) engine.State, fresh func(engine.Kind) engine.State) {
	rng := rand.New(rand.NewPCG(seed, 7))
	// The hash seed follows the test's, so a failure replays exactly (the
	// index's probe runs, growth and the sweep's order depend on it).
	s := New(Options{Shards: 1, TrackChanges: true, Seed: seed})
	t.Logf("seed %d (hash seed %d)", seed, s.Seed())
	sh := s.Shard(0)
	live := map[string]modelKey{}
	disk := map[string]string{} // key → fingerprint, as flushed
	keys := make([]string, 600)
	for i := range keys {
		pad := []int{0, 5, 120, 130, 600}[i%5]
		keys[i] = fmt.Sprint("k", i, strings.Repeat("x", pad))
	}
	now := int64(0)
	drain := func() {
		ch, _, left := sh.DrainChanges(nil, nil, 0)
		if left != 0 {
			t.Fatalf("DrainChanges left %d entries", left)
		}
		for _, c := range ch {
			if c.Deleted {
				delete(disk, string(c.Key))
			} else {
				// The payload is the compact encoding with ref the
				// record's expiry, as persistence writes it.
				st := fresh(c.Kind)
				if err := st.DecodeCompact(c.Payload, c.ExpireAt); err != nil {
					t.Fatalf("drained %q: payload %x does not decode with ref %d: %v", c.Key, c.Payload, c.ExpireAt, err)
				}
				disk[string(c.Key)] = fingerprint(st)
			}
		}
	}
	prev := keys[0]
	for step := 0; step < 8000; step++ {
		k := keys[rng.IntN(len(keys))]
		if rng.IntN(3) == 0 {
			k = prev // the same key again: it gets hot (see Shard.hot)
		}
		prev = k
		switch op := rng.IntN(10); {
		case op < 5:
			st := mk(rng)
			m := modelKey{state: fingerprint(st), exp: now + 1 + rng.Int64N(100)}
			sh.Insert([]byte(k), st, m.exp)
			live[k] = m
		case op < 7:
			_, was := live[k]
			if was && live[k].exp <= now {
				was = false
			}
			if got := sh.Delete([]byte(k), now); got != was {
				t.Fatalf("step %d: Delete(%q) = %v, want %v", step, k, got, was)
			}
			delete(live, k)
		case op < 8:
			now += rng.Int64N(10)
			sh.Sweep(now, rng.IntN(50))
		case op < 9:
			drain()
		default:
			st, exp, ok := sh.Get([]byte(k), now)
			m, was := live[k]
			if was && m.exp <= now {
				was = false
				delete(live, k)
			}
			if ok != was || (ok && (exp != m.exp || fingerprint(st) != m.state)) {
				t.Fatalf("step %d: Get(%q) = %v %d %v, want %+v %v", step, k, st, exp, ok, m, was)
			}
		}
		// Keys the shard may still hold: the model's, less those expired
		// (which lazy expiry or the sweep may or may not have removed).
		n := 0
		sh.Each(now, func(it Item) bool {
			m, ok := live[string(it.Key)]
			if !ok || m.exp != it.ExpireAt || fingerprint(sh.State(it)) != m.state {
				t.Fatalf("step %d: Each saw %q exp %d, model %+v %v", step, it.Key, it.ExpireAt, m, ok)
			}
			n++
			return true
		})
		want := 0
		for _, m := range live {
			if m.exp > now {
				want++
			}
		}
		if n != want {
			t.Fatalf("step %d: %d live keys, model %d", step, n, want)
		}
	}
	// Everything drained reproduces the shard, expired keys included until
	// they are swept (their removal is then drained as a deletion).
	drain()
	held := map[string]string{}
	sh.Each(minInt64, func(it Item) bool { held[string(it.Key)] = fingerprint(sh.State(it)); return true })
	if fmt.Sprint(held) != fmt.Sprint(disk) {
		t.Fatalf("disk after drain differs from the shard:\n%v\n%v", disk, held)
	}
	for sh.Sweep(now+1000, 1<<20) > 0 {
	}
	drain()
	if sh.Len() != 0 || len(disk) != 0 || s.Stats().Memory != 0 {
		t.Fatalf("after expiring everything: %d keys, %d on disk, %d bytes", sh.Len(), len(disk), s.Stats().Memory)
	}
}

// TestGrowIncrementally: while the index moves to a larger table a few
// slots per lookup, every key stays reachable (whichever table holds it),
// deletes, updates and sweeps find the right one, no command moves more
// than a few slots, and the move completes.
func TestGrowIncrementally(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 9))
	s := New(Options{Shards: 1, Seed: 3})
	t.Logf("hash seed %d", s.Seed())
	sh := s.Shard(0)
	live := map[string]int64{}
	grows, maxMoved := 0, 0
	for i := 0; i < 60000; i++ {
		k := fmt.Sprint("key", rng.IntN(40000))
		before, migrating := sh.idx.mig, sh.idx.old != nil
		switch op := rng.IntN(10); {
		case op < 6:
			exp := 1000 + rng.Int64N(1000)
			size := sh.idx.size
			sh.Insert([]byte(k), &fake{size: 1}, exp)
			live[k] = exp
			if sh.idx.size != size {
				grows++
				continue
			}
		case op < 8:
			_, ok := live[k]
			if got := sh.Delete([]byte(k), 0); got != ok {
				t.Fatalf("step %d: Delete(%s) = %v during a move: %v", i, k, got, migrating)
			}
			delete(live, k)
		default:
			_, exp, ok := sh.Get([]byte(k), 0)
			if want, was := live[k]; ok != was || exp != want {
				t.Fatalf("step %d: Get(%s) = %d %v, want %d %v (moving: %v)", i, k, exp, ok, want, was, migrating)
			}
		}
		if migrating && sh.idx.old != nil {
			maxMoved = max(maxMoved, sh.idx.mig-before)
		}
	}
	if grows < 5 || maxMoved > 2*migrateStep {
		t.Fatalf("%d grows, at most %d old slots moved by one command", grows, maxMoved)
	}
	n := 0
	sh.Each(0, func(it Item) bool {
		if live[string(it.Key)] != it.ExpireAt {
			t.Fatalf("Each: %s expires at %d, model %d", it.Key, it.ExpireAt, live[string(it.Key)])
		}
		n++
		return true
	})
	if n != len(live) || sh.Len() != len(live) {
		t.Fatalf("Each saw %d keys, Len %d, model %d", n, sh.Len(), len(live))
	}
	// The sweep moves what is left and then removes everything expired.
	for sh.Sweep(5000, 1<<20) > 0 {
	}
	if sh.Len() != 0 || sh.idx.old != nil || s.Stats().Memory != 0 {
		t.Fatalf("after sweeping all: %d keys, still moving: %v, %d bytes", sh.Len(), sh.idx.old != nil, s.Stats().Memory)
	}
}

// fillUntilGrowth inserts keys k0, k1, ... into sh until, past 5,000, an
// insert starts a growth of the index (most keys are then in the old
// table), and returns them.
func fillUntilGrowth(t *testing.T, sh *Shard) []string {
	t.Helper()
	var keys []string
	for i := 0; ; i++ {
		k := fmt.Sprint("k", i)
		size := sh.idx.size
		sh.Insert([]byte(k), &fake{size: 1}, 100)
		keys = append(keys, k)
		if i >= 5000 && sh.idx.size != size {
			return keys // a move just started
		}
		if i > 100000 {
			t.Fatal("the index never grew")
		}
	}
}

// TestGrowDeleteMovedKey: a key the move has passed, then deleted, stays
// deleted while the move goes on (its old slot, left behind to keep the old
// table's probe runs, must never match again).
func TestGrowDeleteMovedKey(t *testing.T) {
	s := New(Options{Seed: testSeed(t), Shards: 1})
	sh := s.Shard(0)
	keys := fillUntilGrowth(t, sh)
	sh.idx.migrate(&sh.slabs, sh.idx.oldSize/2) // half of the old table moved
	if sh.idx.old == nil {
		t.Fatal("the move finished too early for this test")
	}
	// Few enough lookups (8 slots moved each) that the move goes on.
	for _, k := range keys[:100] {
		if !sh.Delete([]byte(k), 0) {
			t.Fatalf("Delete(%s): not found", k)
		}
		if _, _, ok := sh.Get([]byte(k), 0); ok {
			t.Fatalf("%s came back after its deletion", k)
		}
	}
	if sh.idx.old == nil {
		t.Fatal("the move finished during the test")
	}
	if want := len(keys) - 100; sh.Len() != want {
		t.Fatalf("after deleting 100: %d keys, want %d", sh.Len(), want)
	}
}
