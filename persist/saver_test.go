package persist

import (
	"errors"
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/rlserver/rlserver/clock"
	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/shard"
)

// The Saver tests run over a MemStore and a change-tracking keyspace with a
// frozen clock. The flush loop's interval is an hour, so only the test's
// Save calls flush.

// saverT0 is a fixed instant: 2026-01-01T00:00:00Z in Unix ns.
const saverT0 = int64(1767225600) * int64(time.Second)

// saverParams are the token-bucket limits the tests use: 100 tokens, 1 per
// hour, so a key consumed by n expires n hours later.
var saverParams = engine.TokenBucketParams{Capacity: 100, Rate: 1, Period: time.Hour}

type saverFixture struct {
	t     *testing.T
	store Store
	mem   *MemStore
	keys  *shard.Store
	clock *clock.Clock
	s     *Saver
	logs  *lockedLines
}

type lockedLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *lockedLines) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

func (l *lockedLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// hashSeed returns the key hash seed of a test's keyspace, which decides
// the keys' shards and the order drains list them: the one PERSIST_SEED
// names, to replay a failure, or a random one. It logs the seed.
func hashSeed(t *testing.T) uint64 {
	t.Helper()
	seed := rand.Uint64() | 1
	if v := os.Getenv("PERSIST_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil || n == 0 {
			t.Fatalf("PERSIST_SEED=%q: want a positive integer", v)
		}
		seed = n
	}
	t.Logf("hash seed %d (replay with PERSIST_SEED=%d)", seed, seed)
	return seed
}

// newSaverFixture starts a Saver over store (a fresh MemStore if nil, which
// mem then holds) with the clock frozen at saverT0.
func newSaverFixture(t *testing.T, store Store) *saverFixture {
	t.Helper()
	f := &saverFixture{t: t, store: store, logs: &lockedLines{}}
	if store == nil {
		f.mem = NewMemStore()
		f.store = f.mem
	}
	f.keys = shard.New(shard.Options{Shards: 4, TrackChanges: true, Seed: hashSeed(t)})
	f.clock = clock.New()
	f.clock.Set(saverT0)
	s, err := NewSaver(f.store, f.keys, f.clock, SaverOptions{Interval: time.Hour, Logger: f.logs.logf})
	if err != nil {
		t.Fatalf("NewSaver: %v", err)
	}
	f.s = s
	t.Cleanup(func() { s.Shutdown(false) })
	return f
}

// take consumes n tokens of key at the clock's now, as a command would
// (View.Update).
func (f *saverFixture) take(key string, n int64) engine.Decision {
	f.t.Helper()
	d := tokenTake(f.keys, []byte(key), f.clock.Now(), saverParams, n)
	if !d.Allowed {
		f.t.Fatalf("take(%q, %d) denied: %+v", key, n, d)
	}
	return d
}

// del removes key, as DEL does.
func (f *saverFixture) del(key string) {
	f.t.Helper()
	if !deleteKey(f.keys, []byte(key), f.clock.Now()) {
		f.t.Fatalf("del(%q): no such key", key)
	}
}

func (f *saverFixture) save() {
	f.t.Helper()
	if err := f.s.Save(); err != nil {
		f.t.Fatalf("Save: %v", err)
	}
}

// info returns one field of the Saver's INFO persistence.
func (f *saverFixture) info(field string) string {
	f.t.Helper()
	for _, kv := range f.s.Stats().Fields() {
		if kv[0] == field {
			return kv[1]
		}
	}
	f.t.Fatalf("Info has no %s", field)
	return ""
}

// storedRemaining loads store (without dropping anything: it reads at
// saverT0) and returns each token-bucket key's remaining tokens at now, and
// checks that each record is version 2 and that its ExpireAt is when its
// bucket is full again.
func storedRemaining(t *testing.T, store Store, now int64) map[string]int64 {
	t.Helper()
	recs, st := loadAll(t, store, saverT0)
	if st.Skipped != 0 || st.Expired != 0 {
		t.Fatalf("Load: %+v", st)
	}
	out := map[string]int64{}
	for _, r := range recs {
		if engine.Kind(r.Kind) != engine.KindTokenBucket {
			t.Fatalf("record %q has kind %d, want %d", r.Key, r.Kind, engine.KindTokenBucket)
		}
		if r.Version != FormatV2 {
			t.Fatalf("record %q has version %d, want %d", r.Key, r.Version, FormatV2)
		}
		state, err := decodeState(r)
		if err != nil {
			t.Fatalf("record %q: %v", r.Key, err)
		}
		d := state.(*engine.TokenBucket).Check(now, saverParams, 0)
		if want := now + int64(d.ResetAfter); r.ExpireAt != want {
			t.Fatalf("record %q: ExpireAt %d, want %d (now + reset_after)", r.Key, r.ExpireAt, want)
		}
		out[string(r.Key)] = d.Remaining
	}
	return out
}

func wantStored(t *testing.T, store Store, now int64, want map[string]int64) {
	t.Helper()
	got := storedRemaining(t, store, now)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("stored remaining = %v, want %v", got, want)
	}
}

// TestSaverFlushWritesPutsAndDeletes: a flush writes every changed key's
// state and removes deleted keys; INFO persistence follows.
func TestSaverFlushWritesPutsAndDeletes(t *testing.T) {
	f := newSaverFixture(t, nil)
	if got := f.info("rdb_changes_since_last_save"); got != "0" {
		t.Fatalf("rdb_changes_since_last_save = %s at start, want 0", got)
	}
	f.take("a", 10)
	f.take("b", 20)
	f.take("c", 30)
	if got := f.info("rdb_changes_since_last_save"); got != "3" {
		t.Fatalf("rdb_changes_since_last_save = %s, want 3", got)
	}
	f.save()
	wantStored(t, f.mem, saverT0, map[string]int64{"a": 90, "b": 80, "c": 70})
	if got := f.info("rdb_changes_since_last_save"); got != "0" {
		t.Fatalf("rdb_changes_since_last_save = %s after Save, want 0", got)
	}
	if got := f.info("rdb_last_bgsave_status"); got != "ok" {
		t.Fatalf("rdb_last_bgsave_status = %s, want ok", got)
	}

	f.clock.Advance(time.Minute)
	f.del("a")
	f.take("b", 5)
	f.save()
	wantStored(t, f.mem, saverT0+int64(time.Minute), map[string]int64{"b": 75, "c": 70})

	// A flush with nothing changed writes nothing and keeps the store.
	f.save()
	wantStored(t, f.mem, saverT0+int64(time.Minute), map[string]int64{"b": 75, "c": 70})

	// FLUSHDB (View.Flush) deletes every key on the next flush.
	f.keys.View().Flush()
	f.save()
	if n := f.mem.Len(); n != 0 {
		t.Fatalf("after Flush and Save the store holds %d records, want 0", n)
	}
}

// TestSaverDeleteRecreateOneInterval: a key deleted and created again
// between two flushes is stored with its new state: the stale deletion is
// dropped, whether or not the key was on disk before. Deleted again, it is
// gone.
func TestSaverDeleteRecreateOneInterval(t *testing.T) {
	f := newSaverFixture(t, nil)
	f.take("old", 10)
	f.save()
	f.del("old")
	f.take("old", 3)
	f.take("new", 10)
	f.del("new")
	f.take("new", 4)
	f.take("gone", 1)
	f.del("gone")
	f.take("gone", 2)
	f.del("gone")
	f.save()
	wantStored(t, f.mem, saverT0, map[string]int64{"old": 97, "new": 96})
}

// flakyStore fails the Apply calls whose 1-based numbers are in fail, and
// can run a hook inside Apply.
type flakyStore struct {
	Store
	mu    sync.Mutex
	calls int
	fail  []int
	hook  func() // run inside every Apply, before writing
}

var errFlaky = errors.New("flaky: disk full")

func (s *flakyStore) Apply(puts []Record, deletes [][]byte) error {
	s.mu.Lock()
	s.calls++
	fail := slices.Contains(s.fail, s.calls)
	hook := s.hook
	s.mu.Unlock()
	if hook != nil {
		hook()
	}
	if fail {
		return errFlaky
	}
	return s.Store.Apply(puts, deletes)
}

// TestSaverRetriesFailedApply: a batch that fails to write is kept and
// written by the next flush; meanwhile SAVE fails, the status says err, the
// change counter and LASTSAVE don't move.
func TestSaverRetriesFailedApply(t *testing.T) {
	mem := NewMemStore()
	flaky := &flakyStore{Store: mem, fail: []int{1}}
	f := newSaverFixture(t, flaky)
	last := f.s.LastSave()
	f.take("a", 10)
	if err := f.s.Save(); !errors.Is(err, errFlaky) {
		t.Fatalf("Save = %v, want %v", err, errFlaky)
	}
	if n := mem.Len(); n != 0 {
		t.Fatalf("store holds %d records after a failed Apply, want 0", n)
	}
	if got := f.info("rdb_last_bgsave_status"); got != "err" {
		t.Fatalf("rdb_last_bgsave_status = %s after a failed flush, want err", got)
	}
	if got := f.info("rdb_changes_since_last_save"); got != "1" {
		t.Fatalf("rdb_changes_since_last_save = %s after a failed flush, want 1", got)
	}
	if got := f.s.LastSave(); got != last {
		t.Fatalf("LastSave = %d after a failed flush, want %d", got, last)
	}
	// Nothing changed since: the retry alone writes a.
	f.save()
	wantStored(t, mem, saverT0, map[string]int64{"a": 90})
	if got := f.info("rdb_last_bgsave_status"); got != "ok" {
		t.Fatalf("rdb_last_bgsave_status = %s, want ok", got)
	}
	if got := f.info("rdb_changes_since_last_save"); got != "0" {
		t.Fatalf("rdb_changes_since_last_save = %s, want 0", got)
	}
}

// TestSaverRetryNeverOverwritesNewerState: a failed batch whose retry fails
// again while the next, newer batch for the same key is written must not
// be written over that newer state later (nor resurrect a key deleted
// since). The store fails Apply calls 1 and 2: flush 1 fails (a = 90,
// b = 90); flush 2's retry of it fails, its new batch (a = 85, b deleted)
// is written; flush 3 retries the old batch.
func TestSaverRetryNeverOverwritesNewerState(t *testing.T) {
	mem := NewMemStore()
	flaky := &flakyStore{Store: mem, fail: []int{1, 2}}
	f := newSaverFixture(t, flaky)
	// a and b share a shard so that each flush is one Apply call.
	b := sameShard(f.keys, "a", "b")
	f.take("a", 10)
	f.take(b, 10)
	if err := f.s.Save(); !errors.Is(err, errFlaky) {
		t.Fatalf("flush 1: Save = %v, want %v", err, errFlaky)
	}
	f.take("a", 5)
	f.del(b)
	if err := f.s.Save(); !errors.Is(err, errFlaky) {
		t.Fatalf("flush 2: Save = %v, want %v (it fails too)", err, errFlaky)
	}
	wantStored(t, mem, saverT0, map[string]int64{}) // nothing written yet
	if err := f.s.Save(); err != nil {
		t.Fatalf("flush 3: Save = %v", err)
	}
	// Memory says a = 85 and no b; so must the store.
	wantStored(t, mem, saverT0, map[string]int64{"a": 85})
}

// TestSaverChangesCounterCountsWritesDuringFlush: a write that lands in a
// shard after the flush has drained it (while the batch is being written)
// is not on disk, so rdb_changes_since_last_save must not read 0 after that
// flush. Tests and operators poll that field to know everything is saved.
func TestSaverChangesCounterCountsWritesDuringFlush(t *testing.T) {
	mem := NewMemStore()
	flaky := &flakyStore{Store: mem}
	f := newSaverFixture(t, flaky)
	f.take("a", 10)
	// late is in a's shard, which the flush has drained when it writes.
	late := sameShard(f.keys, "a", "late")
	var once sync.Once
	flaky.hook = func() { once.Do(func() { f.take(late, 1) }) }
	f.save()
	flaky.hook = nil
	if got := storedRemaining(t, mem, saverT0); len(got) != 1 {
		t.Fatalf("stored = %v, want only a (late was written after the drain)", got)
	}
	if got := f.info("rdb_changes_since_last_save"); got != "1" {
		t.Fatalf("rdb_changes_since_last_save = %s with late unsaved, want 1", got)
	}
	f.save()
	wantStored(t, mem, saverT0, map[string]int64{"a": 90, late: 99})
	if got := f.info("rdb_changes_since_last_save"); got != "0" {
		t.Fatalf("rdb_changes_since_last_save = %s, want 0", got)
	}
}

// sameShard returns prefix, or prefix followed by a number, so that it is
// in base's shard.
func sameShard(keys *shard.Store, base, prefix string) string {
	k := prefix
	for i := 0; keys.ShardIndex([]byte(k)) != keys.ShardIndex([]byte(base)); i++ {
		k = fmt.Sprintf("%s%d", prefix, i)
	}
	return k
}

// tbRecord encodes a version-2 token-bucket record for key with n tokens
// consumed at saverT0.
func tbRecord(t *testing.T, key string, n int64) Record {
	t.Helper()
	var st engine.TokenBucket
	d := st.Take(saverT0, saverParams, n)
	exp := saverT0 + int64(d.ResetAfter)
	return Record{Key: []byte(key), Version: FormatV2, Kind: uint8(engine.KindTokenBucket), ExpireAt: exp, Payload: st.AppendCompact(nil, exp)}
}

// restoredRemaining returns the keyspace's keys and remaining tokens at now.
func restoredRemaining(f *saverFixture, now int64) map[string]int64 {
	out := map[string]int64{}
	for i := 0; i < f.keys.NumShards(); i++ {
		sh := f.keys.Shard(i)
		lk := sh.Lock()
		lk.Each(now, func(it shard.Item) bool {
			st := lk.State(it)
			tb, ok := st.(*engine.TokenBucket)
			if !ok {
				f.t.Errorf("key %q restored as %T", it.Key, st)
				return true
			}
			d := tb.Check(now, saverParams, 0)
			if it.ExpireAt != now+int64(d.ResetAfter) {
				f.t.Errorf("key %q restored with expiry %d, want %d", it.Key, it.ExpireAt, now+int64(d.ResetAfter))
			}
			out[string(it.Key)] = d.Remaining
			return true
		})
		sh.Unlock()
	}
	return out
}

// TestSaverRestoreSkipsCorrupt: records whose payload the engine can't
// decode (a valid kind with garbage, an unknown kind), whether version 1 or
// 2, are skipped, counted, logged by key and left in the store; the rest is
// restored and not counted as changes.
func TestSaverRestoreSkipsCorrupt(t *testing.T) {
	mem := NewMemStore()
	exp := saverT0 + int64(time.Hour)
	tb := uint8(engine.KindTokenBucket)
	apply(t, mem, []Record{
		tbRecord(t, "good", 10),
		{Key: []byte("garbage"), Version: FormatV2, Kind: tb, ExpireAt: exp, Payload: []byte("garbage")},
		{Key: []byte("alien"), Version: FormatV2, Kind: 99, ExpireAt: exp, Payload: []byte{1, 2, 3}},
		{Key: []byte("garbage-v1"), Version: FormatV1, Kind: tb, ExpireAt: exp, Payload: []byte("garbage")},
		{Key: []byte("alien-v1"), Version: FormatV1, Kind: 99, ExpireAt: exp, Payload: []byte{1, 2, 3}},
	})
	f := newSaverFixture(t, mem)
	if got := f.s.Restored(); got != 1 {
		t.Fatalf("Restored = %d, want 1", got)
	}
	for field, want := range map[string]string{"rl_keys_restored": "1", "rl_records_skipped": "4", "rl_expired_dropped_at_start": "0", "rdb_changes_since_last_save": "0"} {
		if got := f.info(field); got != want {
			t.Errorf("%s = %s, want %s", field, got, want)
		}
	}
	if got := f.s.RestoreSummary(); !strings.HasSuffix(got, "(0 expired dropped, 4 corrupt skipped)") {
		t.Errorf("RestoreSummary = %q", got)
	}
	logs := f.logs.String()
	for _, k := range []string{`"garbage"`, `"alien"`, `"garbage-v1"`, `"alien-v1"`} {
		if !strings.Contains(logs, "skipped a record that cannot be decoded: ") || !strings.Contains(logs, k) {
			t.Errorf("no log line for %s:\n%s", k, logs)
		}
	}
	if got := restoredRemaining(f, saverT0); fmt.Sprint(got) != "map[good:90]" {
		t.Errorf("keyspace = %v, want map[good:90]", got)
	}
	if n := mem.Len(); n != 5 {
		t.Errorf("store holds %d records, want 5 (corrupt ones stay)", n)
	}
	// Restored keys are not changes: a flush writes nothing new.
	f.save()
	if n := mem.Len(); n != 5 {
		t.Errorf("store holds %d records after Save, want 5", n)
	}
}

// TestSaverRestoreDropsExpired: records whose state became fresh by the
// clock's now (ExpireAt <= now) are not restored and are deleted from the
// store; one that expires a nanosecond later is restored.
func TestSaverRestoreDropsExpired(t *testing.T) {
	mem := NewMemStore()
	past := tbRecord(t, "past", 1)
	past.ExpireAt = saverT0 - 1
	exact := tbRecord(t, "exact", 1)
	exact.ExpireAt = saverT0
	apply(t, mem, []Record{past, exact, tbRecord(t, "live", 1)})
	f := newSaverFixture(t, mem)
	if got := f.s.Restored(); got != 1 {
		t.Fatalf("Restored = %d, want 1", got)
	}
	if got := f.info("rl_expired_dropped_at_start"); got != "2" {
		t.Fatalf("rl_expired_dropped_at_start = %s, want 2", got)
	}
	if got := restoredRemaining(f, saverT0); fmt.Sprint(got) != "map[live:99]" {
		t.Fatalf("keyspace = %v, want map[live:99]", got)
	}
	// The next rewrite drops them from the store.
	if err := f.s.save(true); err != nil {
		t.Fatal(err)
	}
	if n := mem.Len(); n != 1 {
		t.Fatalf("store holds %d records after a rewrite, want 1 (expired ones gone)", n)
	}
}

// TestSaverShutdown: Shutdown(true) flushes before closing the store;
// Shutdown(false) closes it without flushing.
func TestSaverShutdown(t *testing.T) {
	for _, save := range []bool{true, false} {
		t.Run(fmt.Sprint("save=", save), func(t *testing.T) {
			mem := NewMemStore()
			flaky := &flakyStore{Store: mem} // Close is the MemStore's
			f := newSaverFixture(t, flaky)
			f.take("a", 10)
			applied := false
			flaky.hook = func() { applied = true }
			if err := f.s.Shutdown(save); err != nil {
				t.Fatalf("Shutdown(%v): %v", save, err)
			}
			if applied != save {
				t.Fatalf("Shutdown(%v) applied a batch: %v", save, applied)
			}
			if err := mem.Apply(nil, nil); !errors.Is(err, ErrClosed) {
				t.Fatalf("store after Shutdown: Apply = %v, want ErrClosed", err)
			}
		})
	}
}

// TestSaverBGSave: BGSAVE flushes in the background; INFO's in-progress
// flag returns to 0 and the data is stored.
func TestSaverBGSave(t *testing.T) {
	f := newSaverFixture(t, nil)
	f.take("a", 10)
	if err := f.s.BGSave(); err != nil {
		t.Fatalf("BGSave: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for f.info("rdb_bgsave_in_progress") != "0" || f.info("rdb_changes_since_last_save") != "0" {
		if time.Now().After(deadline) {
			t.Fatal("BGSAVE did not finish in 10 s")
		}
		time.Sleep(time.Millisecond)
	}
	wantStored(t, f.mem, saverT0, map[string]int64{"a": 90})
}

// writeWhile runs writers goroutines that each make perWriter calls on the
// keys key(w, i) names, as commands would (take a token; every delEvery-th
// call deletes the key instead if it exists), and calls flush(n), n
// counting up, until they are done, and once after.
func (f *saverFixture) writeWhile(writers, perWriter, delEvery int, key func(w, i int) string, flush func(n int) error) {
	f.t.Helper()
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perWriter; i++ {
				k := []byte(key(w, i))
				now := f.clock.Now()
				if i%delEvery == 0 && deleteKey(f.keys, k, now) {
					continue
				}
				tokenTake(f.keys, k, now, saverParams, 1)
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	// At least four flushes, however fast the writers finish (without
	// -race they may be done before the second).
	for n, writing := 0, true; writing || n < 4; n++ {
		select {
		case <-done:
			writing = false
		default:
		}
		if err := flush(n); err != nil {
			f.t.Fatal(err)
		}
	}
}

// TestSaverConcurrentWrites: commands keep writing while flushes run (run
// with -race); after the writers stop, one more flush leaves the store
// equal to the keyspace.
func TestSaverConcurrentWrites(t *testing.T) {
	f := newSaverFixture(t, nil)
	f.writeWhile(4, 50, 7, func(w, i int) string { return fmt.Sprintf("k%d", (w*50+i)%16) }, func(int) error { return f.s.Save() })
	f.save()
	want := restoredRemaining(f, saverT0)
	wantStored(t, f.mem, saverT0, want)
}

// TestSaverRewriteConcurrentWrites: writers change and delete keys while
// flushes and rewrites run in small pieces on a Pebble store (run with
// -race); after the writers stop and one more flush, the store replays to
// exactly the keyspace, before and after a reopen, and no chunk older than
// the last rewrite is left.
func TestSaverRewriteConcurrentWrites(t *testing.T) {
	dp, mp := drainPiece, markPiece
	drainPiece, markPiece = 7, 13
	t.Cleanup(func() { drainPiece, markPiece = dp, mp })
	dir := t.TempDir()
	store := openPebble(t, dir)
	f := newSaverFixture(t, store)
	// Every other flush finishes a whole rewrite.
	f.writeWhile(4, 3000, 5, func(w, i int) string { return fmt.Sprintf("k%d", (w*7919+i*31)%400) },
		func(n int) error { return f.s.save(n%2 == 0) })
	f.save()
	want := restoredRemaining(f, saverT0)
	if len(want) == 0 {
		t.Fatal("no keys left to compare")
	}
	wantStored(t, store, saverT0, want)
	if got := f.s.rewrites.Load(); got < 2 {
		t.Fatalf("%d rewrites committed, want at least 2", got)
	}
	it, err := store.db.NewIter(&pebble.IterOptions{LowerBound: chunkLower, UpperBound: chunkKey(store.meta.Base)})
	if err != nil {
		t.Fatal(err)
	}
	for ok := it.First(); ok; ok = it.Next() {
		t.Errorf("chunk %x older than the last rewrite (%d) is still stored", it.Key(), store.meta.Base)
	}
	it.Close()
	if err := f.s.Shutdown(false); err != nil {
		t.Fatal(err)
	}
	g := newSaverFixture(t, openPebble(t, dir))
	if got := restoredRemaining(g, saverT0); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("restored after reopen %v, want %v", got, want)
	}
}

// TestSaverDiskFault: while the store cannot be written (here an injected
// "no space left on device"), flushes fail without draining anything: the
// keys wait in the keyspace, INFO says why, since when and how many keys
// wait, and the cause is logged once however often the flush is retried.
// When the fault clears, one flush writes every waiting key and the status
// is ok again.
func TestSaverDiskFault(t *testing.T) {
	f := newSaverFixture(t, nil)
	f.take("a", 10)
	f.save()
	f.s.InjectFault(fmt.Errorf("injected: %w", syscall.ENOSPC))
	f.take("a", 5)
	f.take("b", 1)
	for range 3 {
		if err := f.s.Save(); !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("Save under the fault = %v, want ENOSPC", err)
		}
	}
	for field, want := range map[string]string{
		"rdb_last_bgsave_status":  "err",
		"rl_persistence_error":    "injected: no space left on device",
		"rl_keys_pending":         "2",
		"rl_persistence_failures": "3",
	} {
		if got := f.info(field); got != want {
			t.Errorf("%s = %q under the fault, want %q", field, got, want)
		}
	}
	if since := f.info("rl_persistence_error_since"); since == "0" {
		t.Errorf("rl_persistence_error_since = %s under the fault", since)
	}
	wantStored(t, f.mem, saverT0, map[string]int64{"a": 90})
	if n := strings.Count(f.logs.String(), "persistence failing"); n != 1 {
		t.Fatalf("the fault was logged %d times over 3 flushes, want once:\n%s", n, f.logs)
	}
	f.s.InjectFault(nil)
	f.save()
	wantStored(t, f.mem, saverT0, map[string]int64{"a": 85, "b": 99})
	for field, want := range map[string]string{
		"rdb_last_bgsave_status": "ok", "rl_persistence_error": "", "rl_persistence_error_since": "0", "rl_keys_pending": "0",
	} {
		if got := f.info(field); got != want {
			t.Errorf("%s = %q after the fault cleared, want %q", field, got, want)
		}
	}
	if !strings.Contains(f.logs.String(), "persistence recovered") {
		t.Fatalf("no recovery logged:\n%s", f.logs)
	}
}

// TestPebbleWritable: the Pebble store refuses a write its file system
// cannot take: too little free space for the reserve, or a directory that
// is gone; it takes one that fits.
func TestPebbleWritable(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(&Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Writable(1 << 10); err != nil {
		t.Fatalf("Writable(1 KiB) on %s = %v", dir, err)
	}
	free, err := freeBytes(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Writable(int(free/2) + 1); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Writable(half the free space + 1) = %v, want ENOSPC", err)
	}
	moved := dir + "-moved"
	if err := os.Rename(dir, moved); err != nil {
		t.Fatal(err)
	}
	defer os.Rename(moved, dir)
	if err := s.Writable(1); !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("Writable with the directory gone = %v, want ENOENT", err)
	}
	// Made again: still refused, Pebble's files are in the old one.
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := s.Writable(1); !errors.Is(err, syscall.ENOENT) || !strings.Contains(err.Error(), "restart") {
		t.Fatalf("Writable with the directory made again = %v, want ENOENT and a restart", err)
	}
	os.Remove(dir)
}

// TestToBatchLastChangeWins: of several changes of one key in a batch,
// oldest first, only the last counts, whichever kind it is.
func TestToBatchLastChangeWins(t *testing.T) {
	put := func(k string) shard.Change {
		return shard.Change{Key: []byte(k), Kind: engine.KindTokenBucket, Payload: []byte(k)}
	}
	del := func(k string) shard.Change { return shard.Change{Key: []byte(k), Deleted: true} }
	for _, tc := range []struct {
		changes      []shard.Change
		puts, delete string
	}{
		{[]shard.Change{put("a"), put("b")}, "[a b]", "[]"},
		{[]shard.Change{put("a"), del("a")}, "[]", "[a]"},
		{[]shard.Change{del("a"), put("a")}, "[a]", "[]"},
		{[]shard.Change{put("a"), del("a"), put("a"), del("b"), put("c")}, "[a c]", "[b]"},
		{[]shard.Change{del("a"), put("a"), del("a")}, "[]", "[a]"},
		{[]shard.Change{del("x"), put("a"), del("b"), put("b"), del("a"), put("x"), del("c")}, "[b x]", "[a c]"},
	} {
		// A batch reused, as the saver does, and one whose keys all share
		// a hash (the keys themselves decide then).
		reused := batch{}
		for _, b := range []*batch{&reused, &reused, {hash: func(maphash.Seed, []byte) uint64 { return 7 }}} {
			toBatch(tc.changes, b)
			var puts, dels []string
			for _, r := range b.puts {
				puts = append(puts, string(r.Key))
			}
			for _, k := range b.deletes {
				dels = append(dels, string(k))
			}
			if fmt.Sprint(puts) != tc.puts || fmt.Sprint(dels) != tc.delete {
				t.Errorf("toBatch(%v): puts %v deletes %v, want %s %s", tc.changes, puts, dels, tc.puts, tc.delete)
			}
		}
	}
}

// syncHookStore runs hook before each Sync.
type syncHookStore struct {
	Store
	hook func()
}

func (s *syncHookStore) Sync() error {
	if s.hook != nil {
		s.hook()
	}
	return s.Store.Sync()
}

// TestSaverRewritesAfterLostWrites: a Sync that fails loses what its flush
// applied (here the stage's file is removed before Pebble ingests it), and
// those keys are no longer marked changed; the next flush rewrites every
// key (over the two flushes a rewrite takes), so none stays unwritten.
func TestSaverRewritesAfterLostWrites(t *testing.T) {
	ps := openPebble(t, t.TempDir())
	st := &syncHookStore{Store: ps}
	f := newSaverFixture(t, st)
	f.take("a", 10)
	f.take("b", 20)
	st.hook = func() {
		if err := os.RemoveAll(ps.stageDir); err != nil {
			t.Error(err)
		}
		if err := os.Mkdir(ps.stageDir, 0o755); err != nil {
			t.Error(err)
		}
	}
	if err := f.s.Save(); err == nil {
		t.Fatal("Save succeeded with its stage removed before the sync")
	}
	st.hook = nil
	f.save() // a rewrite is spread over two flushes
	f.save()
	wantStored(t, ps, saverT0, map[string]int64{"a": 90, "b": 80})
	if got := f.info("rl_rewrites"); got != "1" {
		t.Fatalf("rl_rewrites = %s, want 1 (the flush after the lost one rewrites)", got)
	}
}

// TestSaverRestoreInBatches restores a log whose later records replace and
// delete earlier ones, over more records than a restore hands on at once,
// with every kind: states the keyspace keeps as objects (long LOG windows,
// leases) among those it copies, whose objects a restore decodes into
// again. Every key must come back with its last state.
func TestSaverRestoreInBatches(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(&Options{Dir: dir, Logger: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	const keys = 3 * restoreBatchLen
	now := saverT0
	// state is key i's state at version v: each kind in turn, with v's
	// takes in it.
	state := func(i, v int) (engine.State, int64) {
		var st engine.State
		var exp int64
		for j := 0; j <= v; j++ {
			at := now + int64(j)*int64(time.Millisecond)
			var d engine.Decision
			switch i % 6 {
			case 0:
				tb, _ := st.(*engine.TokenBucket)
				if tb == nil {
					tb = new(engine.TokenBucket)
				}
				d, st = tb.Take(at, saverParams, 1), tb
			case 1, 2, 3: // fixed, sliding, LOG (300 entries: kept as an object)
				w, _ := st.(*engine.Window)
				if w == nil {
					w = new(engine.Window)
				}
				p := engine.WindowParams{Limit: 10000, Window: time.Hour, Mode: engine.WindowMode(i%6) % 4}
				for k := range 300 {
					d = w.Take(at+int64(k*k)*int64(time.Microsecond), p, 1)
				}
				st = w
			case 4: // 20 leases a version: kept as an object
				c, _ := st.(*engine.Concurrency)
				if c == nil {
					c = new(engine.Concurrency)
				}
				for l := range 20 {
					d = c.Take(at+int64(l)*int64(time.Microsecond), engine.ConcurrencyParams{Limit: 100, Lease: time.Hour, ID: fmt.Sprintf("lease-%d-%d", j, l)}, 1)
				}
				st = c
			case 5:
				g, _ := st.(*engine.GCRA)
				if g == nil {
					g = new(engine.GCRA)
				}
				d, st = g.Take(at, engine.GCRAParams{MaxBurst: 100, Count: 1, Period: time.Hour}, 1), g
			}
			if !d.Allowed {
				t.Fatalf("key %d version %d denied", i, v)
			}
			exp = at + int64(d.ResetAfter)
		}
		return st, exp
	}
	record := func(i, v int) Record {
		st, exp := state(i, v)
		return Record{Key: []byte(fmt.Sprintf("k%05d", i)), Version: FormatV2, Kind: uint8(st.Kind()), ExpireAt: exp, Payload: st.AppendCompact(nil, exp)}
	}
	want := map[string]Record{}
	for v := range 3 {
		var puts []Record
		var dels []string
		for i := range keys {
			switch {
			case v > 0 && i%7 == v:
				dels = append(dels, fmt.Sprintf("k%05d", i))
				delete(want, fmt.Sprintf("k%05d", i))
			case v == 0 || i%3 == v:
				r := record(i, v)
				puts = append(puts, r)
				want[string(r.Key)] = r
			}
		}
		apply(t, db, puts, dels...)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db, err = Open(&Options{Dir: dir, Logger: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	f := newSaverFixture(t, db)
	if got := f.s.Restored(); got != len(want) {
		t.Fatalf("Restored = %d, want %d", got, len(want))
	}
	seen := 0
	for i := 0; i < f.keys.NumShards(); i++ {
		sh := f.keys.Shard(i)
		lk := sh.Lock()
		lk.Each(now, func(it shard.Item) bool {
			seen++
			w, ok := want[string(it.Key)]
			st := lk.State(it)
			if !ok || uint8(st.Kind()) != w.Kind || it.ExpireAt != w.ExpireAt || string(st.AppendCompact(nil, it.ExpireAt)) != string(w.Payload) {
				t.Errorf("key %q restored as kind %d expiring %d, %x; want %v", it.Key, st.Kind(), it.ExpireAt, st.AppendCompact(nil, it.ExpireAt), w)
			}
			return true
		})
		sh.Unlock()
	}
	if seen != len(want) {
		t.Fatalf("%d keys restored, want %d", seen, len(want))
	}
}

// TestSaverLate: a flush is late once it has run longer than the save
// interval (the event loops then yield more often, and it takes longer
// slices); no flush is never late.
func TestSaverLate(t *testing.T) {
	f := newSaverFixture(t, nil) // interval: an hour
	if f.s.Late() {
		t.Fatal("Late with no flush under way")
	}
	now := time.Now()
	if f.s.noteLate(now.Add(-time.Minute), now) || f.s.Late() {
		t.Fatal("Late a minute into a flush with an hour's interval")
	}
	if !f.s.noteLate(now.Add(-2*time.Hour), now) || !f.s.Late() {
		t.Fatal("not Late two hours into a flush with an hour's interval")
	}
	f.save()
	if f.s.Late() {
		t.Fatal("Late after a flush ended")
	}
}
