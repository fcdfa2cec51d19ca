package persist

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/rlserver/rlserver/clock"
	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/shard"
)

// v1T0 is the instant the version-1 states below were made at
// (2026-01-01Z), and v1Now the instant the test restores and asks them at.
const (
	v1T0  = int64(1_767_225_600_000_000_000)
	v1Now = v1T0 + 1500e6
)

// v1Keys are version-1 records of every kind, with payloads in the frozen
// version-1 layout: the engine's golden states (engine/testdata/
// golden-v1.txt), as an older rlserver wrote them. ask and want are what the
// restored state must answer at v1Now (the engine golden test's answers).
var v1Keys = []struct {
	key     string
	kind    engine.Kind
	exp     int64
	payload string // hex
	ask     func(engine.State) engine.Decision
	want    engine.Decision
}{
	{"gcra", engine.KindThrottle, v1T0 + 3e9,
		"010400000000000000010000000000000000ca9a3b000000000000faed517286180000000000000000005ed0b200000000",
		func(st engine.State) engine.Decision {
			return st.(*engine.GCRA).Check(v1Now, engine.GCRAParams{MaxBurst: 4, Count: 1, Period: time.Second}, 1)
		}, engine.Decision{Allowed: true, Limit: 5, Remaining: 2, ResetAfter: 2500 * time.Millisecond}},
	{"tokenbucket", engine.KindTokenBucket, v1T0 + 4e9,
		"010a00000000000000030000000000000000ca9a3b000000000000faed517286180000000000000000007841cb02000000",
		func(st engine.State) engine.Decision {
			return st.(*engine.TokenBucket).Check(v1Now, engine.TokenBucketParams{Capacity: 10, Rate: 3, Period: time.Second}, 1)
		}, engine.Decision{Allowed: true, Limit: 10, Remaining: 1, ResetAfter: 2833333334}},
	{"leakybucket", engine.KindLeakyBucket, v1T0 + 2e9,
		"010500000000000000020000000000000000ca9a3b000000000000faed517286180000000000000000005ed0b200000000",
		func(st engine.State) engine.Decision {
			return st.(*engine.LeakyBucket).Check(v1Now, engine.LeakyBucketParams{Capacity: 5, Rate: 2, Period: time.Second}, 1)
		}, engine.Decision{Allowed: true, Limit: 5, Remaining: 4, ResetAfter: 500 * time.Millisecond}},
	{"fixed", engine.KindWindow, v1T0 + int64(time.Minute),
		"01010a00000000000000005847f80d0000000000faed517286180000faed5172861804000000000000000000000000000000",
		func(st engine.State) engine.Decision {
			return st.(*engine.Window).Check(v1Now, engine.WindowParams{Limit: 10, Window: time.Minute, Mode: engine.WindowFixed}, 1)
		}, engine.Decision{Allowed: true, Limit: 10, Remaining: 5, ResetAfter: 58500 * time.Millisecond}},
	{"sliding", engine.KindWindow, v1T0 + int64(2*time.Minute),
		"01020a00000000000000005847f80d0000000000faed517286180000faed5172861802000000000000000600000000000000",
		func(st engine.State) engine.Decision {
			return st.(*engine.Window).Check(v1Now, engine.WindowParams{Limit: 10, Window: time.Minute, Mode: engine.WindowSliding}, 1)
		}, engine.Decision{Allowed: true, Limit: 10, Remaining: 1, ResetAfter: 118500 * time.Millisecond}},
	{"log", engine.KindWindow, v1T0 + int64(10*time.Second),
		"0103050000000000000000e40b54020000000000faed51728618000000000000000002000000000ef4c35072861802000000000000000000faed517286180300000000000000",
		func(st engine.State) engine.Decision {
			return st.(*engine.Window).Check(v1Now, engine.WindowParams{Limit: 5, Window: 10 * time.Second, Mode: engine.WindowLog}, 1)
		}, engine.Decision{Allowed: true, Limit: 5, Remaining: 1, ResetAfter: 10 * time.Second}},
	{"concurrency", engine.KindConcurrency, v1T0 + int64(2*time.Minute),
		"01030000000000000000b08ef01b0000000000faed5172861802000000005841e65f7286180100000000000000090000006c656173652d6f6e6500b088de6d7286180100000000000000090000006c656173652d74776f",
		func(st engine.State) engine.Decision {
			return st.(*engine.Concurrency).Check(v1Now, engine.ConcurrencyParams{Limit: 3}, 1)
		}, engine.Decision{Allowed: true, Limit: 3, Remaining: 0, ResetAfter: 118500 * time.Millisecond}},
}

// openV1Keyspace opens the Pebble store in dir the normal way (Open, then
// NewSaver into a change-tracking keyspace, the clock frozen at v1Now).
func openV1Keyspace(t *testing.T, dir string) (*Saver, *shard.Store, *clock.Clock) {
	t.Helper()
	store, err := Open(&Options{Dir: dir, Logger: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	keys := shard.New(shard.Options{Shards: 4, TrackChanges: true, Seed: hashSeed(t)})
	clock := clock.New()
	clock.Set(v1Now)
	s, err := NewSaver(store, keys, clock, SaverOptions{Interval: time.Hour, Logger: t.Logf})
	if err != nil {
		store.Close()
		t.Fatalf("NewSaver: %v", err)
	}
	return s, keys, clock
}

// getKey returns key's live state and expiry in keys at v1Now.
func getKey(t *testing.T, keys *shard.Store, key string) (engine.State, int64) {
	t.Helper()
	st, exp, ok := liveState(keys, []byte(key), v1Now)
	if !ok {
		t.Fatalf("key %q was not restored", key)
	}
	return st, exp
}

// storedRecords reads every record of the Pebble store in dir (closed).
func storedRecords(t *testing.T, dir string) map[string]Record {
	t.Helper()
	s, err := Open(&Options{Dir: dir, Logger: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	recs, st := loadAll(t, s, v1Now)
	if st.Skipped != 0 || st.Expired != 0 {
		t.Fatalf("Load: %+v", st)
	}
	out := map[string]Record{}
	for _, r := range recs {
		out[string(r.Key)] = r
	}
	return out
}

// TestRestoreVersion1Store opens a store an older rlserver wrote (one
// Pebble key per limiter key, version-1 records of every kind), checks
// every key restores to exactly its state and expiry, changes one key and
// shuts down, which rewrites the store: every key is then a version-2
// record of the log, the per-key records are gone, and each key restores
// to the same state (the changed one to its new state). A version-2 record
// that does not decode is skipped and counted, and the rewrite drops it.
func TestRestoreVersion1Store(t *testing.T) {
	dir := t.TempDir()
	old, err := Open(&Options{Dir: dir, Fsync: FsyncAlways})
	if err != nil {
		t.Fatal(err)
	}
	var puts []Record
	for _, k := range v1Keys {
		p, err := hex.DecodeString(k.payload)
		if err != nil {
			t.Fatal(err)
		}
		puts = append(puts, Record{Key: []byte(k.key), Version: FormatV1, Kind: uint8(k.kind), ExpireAt: k.exp, Payload: p})
	}
	// A version-2 record whose payload does not decode: skipped and
	// counted like a corrupt version-1 record.
	broken := Record{Key: []byte("broken"), Version: FormatV2, Kind: uint8(engine.KindThrottle), ExpireAt: v1T0 + 3e9, Payload: []byte{0xff}}
	for _, r := range append(puts, broken) {
		if err := old.putRaw(appendKey(nil, r.Key), appendValue(nil, &r)); err != nil {
			t.Fatal(err)
		}
	}
	// The values are the version-1 layout, byte for byte.
	for _, r := range puts {
		v, closer, err := old.db.Get(appendKey(nil, r.Key))
		if err != nil {
			t.Fatal(err)
		}
		want := append([]byte{1, r.Kind, 0, 0, 0, 0, 0, 0, 0, 0}, r.Payload...)
		binary.BigEndian.PutUint64(want[2:10], uint64(r.ExpireAt))
		if !bytes.Equal(v, want) {
			t.Fatalf("%q: stored value %x, want %x", r.Key, v, want)
		}
		closer.Close()
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}

	check := func(s *Saver, keys *shard.Store, skip string, skipped int) {
		t.Helper()
		if got := s.Restored(); got != len(v1Keys) {
			t.Fatalf("restored %d keys, want %d", got, len(v1Keys))
		}
		if got, want := s.RestoreSummary(), fmt.Sprintf("(0 expired dropped, %d corrupt skipped)", skipped); !strings.HasSuffix(got, want) {
			t.Fatalf("RestoreSummary = %q, want it to end %q", got, want)
		}
		for _, k := range v1Keys {
			if k.key == skip {
				continue
			}
			st, exp := getKey(t, keys, k.key)
			if st.Kind() != k.kind || exp != k.exp {
				t.Errorf("%q: restored kind %v expiry %d, want %v %d", k.key, st.Kind(), exp, k.kind, k.exp)
			}
			if d := k.ask(st); d != k.want {
				t.Errorf("%q: restored state answers %+v, want %+v", k.key, d, k.want)
			}
		}
	}

	s, keys, clock := openV1Keyspace(t, dir)
	check(s, keys, "", 1)

	// A GCRA call on "gcra" changes it.
	p := engine.GCRAParams{MaxBurst: 4, Count: 1, Period: time.Second}
	now := clock.Now()
	d, status := keys.View().UpdateLive([]byte("gcra"), now, takeOp[engine.GCRAParams, *engine.GCRA]{p, 2})
	if status != shard.Done || !d.Allowed {
		t.Fatalf("Take: %v, denied: %+v", status, d)
	}
	st, newExp, _ := liveState(keys, []byte("gcra"), now)
	if newExp != now+int64(d.ResetAfter) {
		t.Fatalf("expiry %d after the take, want %d", newExp, now+int64(d.ResetAfter))
	}
	g := st.(*engine.GCRA)
	askLater := func(st engine.State) engine.Decision {
		return st.(*engine.GCRA).Check(v1Now+700e6, p, 1)
	}
	wantLater := askLater(g)
	wantPayload := g.AppendCompact(nil, newExp)
	if err := s.Shutdown(true); err != nil {
		t.Fatal(err)
	}

	recs := storedRecords(t, dir)
	if r, ok := recs["broken"]; ok {
		t.Fatalf("the rewrite kept the broken record: %+v", r)
	}
	for _, k := range v1Keys {
		r, ok := recs[k.key]
		switch {
		case !ok:
			t.Fatalf("%q is not stored", k.key)
		case r.Version != FormatV2:
			t.Fatalf("%q stored as v%d after the rewrite, want v2", k.key, r.Version)
		case k.key == "gcra":
			if r.ExpireAt != newExp || !bytes.Equal(r.Payload, wantPayload) {
				t.Fatalf("changed key stored with exp %d payload %x, want exp %d payload %x", r.ExpireAt, r.Payload, newExp, wantPayload)
			}
		}
	}
	legacy, err := Open(&Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	it, err := legacy.db.NewIter(&pebble.IterOptions{LowerBound: recordLower, UpperBound: recordUpper})
	if err != nil {
		t.Fatal(err)
	}
	if it.First() {
		t.Errorf("per-key record %q still stored after the rewrite", it.Key())
	}
	it.Close()
	legacy.Close()

	s, keys, _ = openV1Keyspace(t, dir)
	defer s.Shutdown(false)
	check(s, keys, "gcra", 0)
	st, exp := getKey(t, keys, "gcra")
	if exp != newExp {
		t.Errorf("gcra restored with expiry %d, want %d", exp, newExp)
	}
	if got := askLater(st); got != wantLater {
		t.Errorf("gcra restored from v2 answers %+v, want %+v", got, wantLater)
	}
	if got := st.AppendCompact(nil, exp); !bytes.Equal(got, wantPayload) {
		t.Errorf("gcra restored from v2 encodes as %x, want %x", got, wantPayload)
	}
}
