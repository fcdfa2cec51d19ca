package persist

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// harness opens the Store under test. The behavioural suite runs once per
// implementation (TestPebbleStore, TestMemStore).
type harness struct {
	// open returns a fresh, empty store; the harness closes it at cleanup.
	open func(t *testing.T) Store
	// reopen closes s and returns a store over the same data (a restart).
	reopen func(t *testing.T, s Store) Store
	// log: Load replays every record applied since the last rewrite
	// (PebbleStore), not only each key's last (MemStore).
	log bool
}

// replayed returns how many puts Load passes: final for a store that keeps
// each key's last record, logged for one that replays its log.
func (h harness) replayed(final, logged int) int {
	if h.log {
		return logged
	}
	return final
}

func pebbleHarness() harness {
	return harness{
		open: func(t *testing.T) Store {
			t.Helper()
			return openPebble(t, t.TempDir())
		},
		reopen: func(t *testing.T, s Store) Store {
			t.Helper()
			dir := s.(*PebbleStore).Dir()
			if err := s.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			return openPebble(t, dir)
		},
		log: true,
	}
}

func memHarness() harness {
	return harness{
		open: func(t *testing.T) Store {
			s := NewMemStore()
			t.Cleanup(func() { s.Close() })
			return s
		},
		reopen: func(t *testing.T, s Store) Store {
			m := s.(*MemStore)
			m.mu.RLock()
			data, base, since := m.m, m.base, m.since
			m.mu.RUnlock()
			if err := m.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			r := &MemStore{m: data, base: base, since: since}
			t.Cleanup(func() { r.Close() })
			return r
		},
	}
}

// openPebble opens a PebbleStore in dir and closes it at cleanup.
func openPebble(t *testing.T, dir string) *PebbleStore {
	t.Helper()
	s, err := Open(&Options{Dir: dir, Logger: t.Logf})
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func TestPebbleStore(t *testing.T) { runSuite(t, pebbleHarness()) }
func TestMemStore(t *testing.T)    { runSuite(t, memHarness()) }

func runSuite(t *testing.T, h harness) {
	tests := []struct {
		name string
		fn   func(*testing.T, harness)
	}{
		{"RoundTrip", testRoundTrip},
		{"DeleteSurvivesReopen", testDeleteSurvivesReopen},
		{"ExpiredDroppedOnLoad", testExpiredDroppedOnLoad},
		{"CorruptSkippedAndCounted", testCorruptSkipped},
		{"CallbackErrors", testCallbackErrors},
		{"ApplyRejectsKindZero", testApplyRejectsKindZero},
		{"Checkpoint", testCheckpoint},
		{"Rewrite", testRewrite},
		{"Closed", testClosed},
		{"Concurrent", testConcurrent},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, h) })
	}
}

// rec returns a version-2 record (persist does not read payloads).
func rec(key string, kind uint8, expireAt int64, payload string) Record {
	return Record{Key: []byte(key), Version: FormatV2, Kind: kind, ExpireAt: expireAt, Payload: []byte(payload)}
}

// recV1 returns a version-1 record.
func recV1(key string, kind uint8, expireAt int64, payload string) Record {
	r := rec(key, kind, expireAt, payload)
	r.Version = FormatV1
	return r
}

// loadAll loads s at now, replays what fn receives (a later record
// replaces an earlier one, a deletion removes it) and returns the records
// that remain, in key order.
func loadAll(t *testing.T, s Store, now int64) ([]Record, LoadStats) {
	t.Helper()
	m := map[string]Record{}
	st, err := s.Load(now, func(r Record) error {
		if r.Deleted {
			delete(m, string(r.Key))
			return nil
		}
		m[string(r.Key)] = Record{Key: bytes.Clone(r.Key), Version: r.Version, Kind: r.Kind, ExpireAt: r.ExpireAt, Payload: bytes.Clone(r.Payload)}
		return nil
	})
	if err != nil {
		t.Fatalf("Load(%d): %v", now, err)
	}
	got := make([]Record, 0, len(m))
	for _, r := range m {
		got = append(got, r)
	}
	slices.SortFunc(got, func(a, b Record) int { return bytes.Compare(a.Key, b.Key) })
	return got, st
}

// apply writes one batch as a flush does: Apply, then Sync.
func apply(t *testing.T, s Store, puts []Record, deletes ...string) {
	t.Helper()
	var dels [][]byte
	for _, d := range deletes {
		dels = append(dels, []byte(d))
	}
	if err := s.Apply(puts, dels); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if err := s.Sync(); err != nil {
		t.Fatalf("Sync: %v", err)
	}
}

func recordsEqual(a, b Record) bool {
	return bytes.Equal(a.Key, b.Key) && a.Version == b.Version && a.Kind == b.Kind && a.ExpireAt == b.ExpireAt && bytes.Equal(a.Payload, b.Payload)
}

func fmtRecords(rs []Record) string {
	var b strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&b, "\n\t{%q v%d kind=%d exp=%d %q}", r.Key, r.Version, r.Kind, r.ExpireAt, r.Payload)
	}
	return b.String()
}

func wantRecords(t *testing.T, what string, got, want []Record) {
	t.Helper()
	if !slices.EqualFunc(got, want, recordsEqual) {
		t.Fatalf("%s: got records%s\nwant%s", what, fmtRecords(got), fmtRecords(want))
	}
}

func wantStats(t *testing.T, what string, st LoadStats, loaded, expired, skipped int) {
	t.Helper()
	if st.Loaded != loaded || st.Expired != expired || st.Skipped != skipped {
		t.Fatalf("%s: stats loaded/expired/skipped = %d/%d/%d, want %d/%d/%d (errors %v)",
			what, st.Loaded, st.Expired, st.Skipped, loaded, expired, skipped, st.Errors)
	}
}

func testRoundTrip(t *testing.T, h harness) {
	s := h.open(t)
	got, st := loadAll(t, s, 0)
	wantRecords(t, "empty store", got, nil)
	wantStats(t, "empty store", st, 0, 0, 0)

	// Binary keys, including the empty key and bytes around the prefix.
	puts := []Record{
		rec("user:1", 1, 0, "gcra"),
		rec("", 2, 5e18, ""),
		rec("\x00\xff", 3, 1, "\x00\x01\x02"),
		rec("k", 4, 1<<62, "window"),
		rec("user:2", 5, 42, strings.Repeat("c", 300)),
	}
	apply(t, s, puts)
	want := slices.Clone(puts)
	slices.SortFunc(want, func(a, b Record) int { return bytes.Compare(a.Key, b.Key) })

	got, st = loadAll(t, s, 0)
	wantRecords(t, "before reopen", got, want)
	wantStats(t, "before reopen", st, 5, 0, 0)

	// Overwrite one; the newest value wins.
	apply(t, s, []Record{rec("user:1", 1, 7, "gcra2")})
	want[slices.IndexFunc(want, func(r Record) bool { return string(r.Key) == "user:1" })] = rec("user:1", 1, 7, "gcra2")

	s = h.reopen(t, s)
	got, st = loadAll(t, s, 0)
	wantRecords(t, "after reopen", got, want)
	wantStats(t, "after reopen", st, h.replayed(5, 6), 0, 0)
}

func testDeleteSurvivesReopen(t *testing.T, h harness) {
	s := h.open(t)
	apply(t, s, []Record{rec("a", 1, 0, "A"), rec("b", 2, 0, "B"), rec("c", 3, 0, "C")})
	s = h.reopen(t, s)
	// Delete a key written before the restart, and put-and-delete in one
	// batch (deletes win), and delete a key that never existed.
	apply(t, s, []Record{rec("d", 4, 0, "D")}, "a", "d", "nope")
	want := []Record{rec("b", 2, 0, "B"), rec("c", 3, 0, "C")}
	got, _ := loadAll(t, s, 0)
	wantRecords(t, "before reopen", got, want)
	for i := range 2 {
		s = h.reopen(t, s)
		got, _ = loadAll(t, s, 0)
		wantRecords(t, fmt.Sprintf("after reopen %d", i+1), got, want)
	}
}

func testExpiredDroppedOnLoad(t *testing.T, h harness) {
	s := h.open(t)
	apply(t, s, []Record{
		rec("a", 1, 100, "A"), // expired at now=150
		rec("b", 2, 150, "B"), // expires exactly at now: expired
		rec("c", 3, 151, "C"),
		rec("d", 4, 0, "D"), // never expires
	})
	got, st := loadAll(t, s, 150)
	want := []Record{rec("c", 3, 151, "C"), rec("d", 4, 0, "D")}
	wantRecords(t, "Load(150)", got, want)
	wantStats(t, "Load(150)", st, 2, 2, 0)

	// A rewrite of what Load kept drops them from disk: a Load before
	// their expiry, after a restart, no longer sees them.
	rewrite(t, s, got)
	s = h.reopen(t, s)
	got, st = loadAll(t, s, 1)
	wantRecords(t, "Load(1) after rewrite and reopen", got, want)
	wantStats(t, "Load(1) after rewrite and reopen", st, 2, 0, 0)
}

// rewrite rewrites s to hold exactly live, as the saver does.
func rewrite(t *testing.T, s Store, live []Record) {
	t.Helper()
	if err := s.BeginRewrite(); err != nil {
		t.Fatalf("BeginRewrite: %v", err)
	}
	apply(t, s, live)
	if err := s.CommitRewrite(); err != nil {
		t.Fatalf("CommitRewrite: %v", err)
	}
}

// rawPutter plants stored pairs verbatim (both stores implement it).
type rawPutter interface{ putRaw(key, value []byte) error }

func putRaw(t *testing.T, s Store, key, value string) {
	t.Helper()
	if err := s.(rawPutter).putRaw([]byte(key), []byte(value)); err != nil {
		t.Fatalf("putRaw: %v", err)
	}
}

func testCorruptSkipped(t *testing.T, h harness) {
	s := h.open(t)
	apply(t, s, []Record{rec("a", 1, 0, "A"), recV1("z", 5, 0, "Z")})
	putRaw(t, s, "kbad-empty", "")
	putRaw(t, s, "kbad-short", "\x01\x02\x00\x00")
	putRaw(t, s, "kbad-version", "\x03\x01\x00\x00\x00\x00\x00\x00\x00\x00payload")
	putRaw(t, s, "kbad-kind0", "\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00payload")
	putRaw(t, s, "m-other-keyspace", "ignored") // not a record: not counted

	want := []Record{rec("a", 1, 0, "A"), recV1("z", 5, 0, "Z")}
	for i := range 2 { // corrupt records stay on disk and are skipped again
		got, st := loadAll(t, s, 0)
		what := fmt.Sprintf("load %d", i+1)
		wantRecords(t, what, got, want)
		wantStats(t, what, st, 2, 0, 4)
		if len(st.Errors) != 4 {
			t.Fatalf("%s: %d errors, want 4: %v", what, len(st.Errors), st.Errors)
		}
		for j, key := range []string{"bad-empty", "bad-kind0", "bad-short", "bad-version"} {
			err := st.Errors[j]
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), fmt.Sprintf("%q", key)) {
				t.Errorf("%s: error %d = %v, want ErrCorrupt naming %q", what, j, err, key)
			}
		}
		if msg := st.Errors[3].Error(); !strings.Contains(msg, "version 3 (written by a newer rlserver?)") {
			t.Errorf("%s: version 3: %s", what, msg)
		}
		s = h.reopen(t, s)
	}
}

func testCallbackErrors(t *testing.T, h harness) {
	s := h.open(t)
	apply(t, s, []Record{rec("a", 1, 0, "A"), rec("b", 2, 0, "B"), rec("c", 3, 0, "C")})

	// An error wrapping ErrCorrupt skips the record.
	var seen []string
	st, err := s.Load(0, func(r Record) error {
		seen = append(seen, string(r.Key))
		if string(r.Key) == "b" {
			return fmt.Errorf("%w: payload too short", ErrCorrupt)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	wantStats(t, "ErrCorrupt from fn", st, 2, 0, 1)
	if want := []string{"a", "b", "c"}; !slices.Equal(seen, want) {
		t.Fatalf("fn saw %q, want %q", seen, want)
	}
	if len(st.Errors) != 1 || !errors.Is(st.Errors[0], ErrCorrupt) || !strings.Contains(st.Errors[0].Error(), `"b"`) {
		t.Fatalf("errors = %v, want one ErrCorrupt naming \"b\"", st.Errors)
	}

	// Any other error stops the load.
	stop := errors.New("stop")
	seen = nil
	st, err = s.Load(0, func(r Record) error {
		seen = append(seen, string(r.Key))
		if string(r.Key) == "b" {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) {
		t.Fatalf("Load = %v, want the callback's error", err)
	}
	if want := []string{"a", "b"}; !slices.Equal(seen, want) {
		t.Fatalf("fn saw %q, want %q", seen, want)
	}
	wantStats(t, "stopped", st, 1, 0, 0)
}

func testApplyRejectsKindZero(t *testing.T, h harness) {
	s := h.open(t)
	err := s.Apply([]Record{rec("a", 1, 0, "A"), rec("b", 0, 0, "B")}, nil)
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("Apply with kind 0 = %v, want ErrInvalid", err)
	}
	got, _ := loadAll(t, s, 0)
	wantRecords(t, "after rejected Apply", got, nil)
	for _, v := range []uint8{0, 3} {
		bad := rec("b", 1, 0, "B")
		bad.Version = v
		if err := s.Apply([]Record{rec("a", 1, 0, "A"), bad}, nil); !errors.Is(err, ErrInvalid) {
			t.Fatalf("Apply with version %d = %v, want ErrInvalid", v, err)
		}
	}
	got, _ = loadAll(t, s, 0)
	wantRecords(t, "after rejected Apply", got, nil)
}

func testCheckpoint(t *testing.T, h harness) {
	s := h.open(t)
	want := []Record{rec("a", 1, 0, "A"), rec("b", 2, 500, "B"), rec("c", 5, 0, "C")}
	apply(t, s, want)
	apply(t, s, []Record{rec("gone", 3, 0, "X")}, "gone")
	putRaw(t, s, "kcorrupt", "\x01")
	dir := filepath.Join(t.TempDir(), "backups", "ckpt") // parent created
	if err := s.Checkpoint(dir); err != nil {
		t.Fatalf("Checkpoint: %v", err)
	}
	if err := s.Checkpoint(dir); err == nil {
		t.Fatalf("Checkpoint into an existing dir succeeded, want an error")
	}
	// Writes after the checkpoint are not in it.
	apply(t, s, []Record{rec("later", 4, 0, "L")}, "a")

	c := openPebble(t, dir)
	got, st := loadAll(t, c, 0)
	wantRecords(t, "checkpoint", got, want)
	wantStats(t, "checkpoint", st, h.replayed(3, 4), 0, 1)
}

func testClosed(t *testing.T, h harness) {
	s := h.open(t)
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close = %v, want nil", err)
	}
	if err := s.Apply([]Record{rec("a", 1, 0, "")}, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Apply after Close = %v, want ErrClosed", err)
	}
	if err := s.Apply(nil, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("empty Apply after Close = %v, want ErrClosed", err)
	}
	if err := s.Sync(); !errors.Is(err, ErrClosed) {
		t.Errorf("Sync after Close = %v, want ErrClosed", err)
	}
	if _, err := s.Load(0, func(Record) error { return nil }); !errors.Is(err, ErrClosed) {
		t.Errorf("Load after Close = %v, want ErrClosed", err)
	}
	if err := s.Checkpoint(filepath.Join(t.TempDir(), "c")); !errors.Is(err, ErrClosed) {
		t.Errorf("Checkpoint after Close = %v, want ErrClosed", err)
	}
}

// testConcurrent runs shard-like flushers, SAVE-like syncs and a checkpoint
// at once (for the race detector), then checks every write landed.
func testConcurrent(t *testing.T, h harness) {
	s := h.open(t)
	const writers, batches, perBatch = 4, 20, 50
	var wg sync.WaitGroup
	errs := make(chan error, writers+2)
	for w := range writers {
		wg.Go(func() {
			for b := range batches {
				puts := make([]Record, perBatch)
				for i := range puts {
					puts[i] = rec(fmt.Sprintf("w%d-%04d", w, b*perBatch+i), uint8(1+w), 0, "payload")
				}
				if err := s.Apply(puts, nil); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Go(func() {
		for range 10 {
			if err := s.Sync(); err != nil {
				errs <- err
				return
			}
		}
	})
	wg.Go(func() {
		if err := s.Checkpoint(filepath.Join(t.TempDir(), "c")); err != nil {
			errs <- err
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	s = h.reopen(t, s)
	_, st := loadAll(t, s, 0)
	wantStats(t, "after concurrent writes", st, writers*batches*perBatch, 0, 0)
}

// testRewrite: a rewrite that is not committed (a crash, a failed write)
// leaves its records as newer ones over what was there; a committed one
// leaves exactly what was applied since BeginRewrite, deletions included,
// across a reopen, and Sizes follows.
func testRewrite(t *testing.T, h harness) {
	s := h.open(t)
	apply(t, s, []Record{rec("a", 1, 0, "A"), rec("b", 2, 0, "B"), rec("c", 3, 0, "C")})
	if base, since := s.Sizes(); base != 0 || since == 0 {
		t.Fatalf("Sizes before any rewrite = %d, %d; want 0 and more", base, since)
	}
	if err := s.BeginRewrite(); err != nil {
		t.Fatal(err)
	}
	apply(t, s, []Record{rec("a", 1, 0, "A2")})
	s = h.reopen(t, s) // no CommitRewrite
	got, _ := loadAll(t, s, 0)
	wantRecords(t, "uncommitted rewrite", got, []Record{rec("a", 1, 0, "A2"), rec("b", 2, 0, "B"), rec("c", 3, 0, "C")})

	if err := s.BeginRewrite(); err != nil {
		t.Fatal(err)
	}
	apply(t, s, []Record{rec("b", 2, 0, "B2"), rec("d", 4, 0, "D")})
	apply(t, s, []Record{rec("e", 5, 0, "E")}, "d") // a change during the rewrite
	if err := s.CommitRewrite(); err != nil {
		t.Fatal(err)
	}
	want := []Record{rec("b", 2, 0, "B2"), rec("e", 5, 0, "E")}
	got, _ = loadAll(t, s, 0)
	wantRecords(t, "committed rewrite", got, want)
	base, since := s.Sizes()
	if base == 0 || since != 0 {
		t.Fatalf("Sizes after the rewrite = %d, %d; want more and 0", base, since)
	}
	apply(t, s, []Record{rec("f", 6, 0, "F")})
	s = h.reopen(t, s)
	got, _ = loadAll(t, s, 0)
	wantRecords(t, "committed rewrite, reopened", got, append(want, rec("f", 6, 0, "F")))
	if b, since2 := s.Sizes(); b != base || since2 == 0 {
		t.Fatalf("Sizes after reopen = %d, %d; want %d and more", b, since2, base)
	}
	if err := s.CommitRewrite(); err == nil {
		t.Fatalf("CommitRewrite without BeginRewrite succeeded")
	}
}
