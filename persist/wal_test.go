package persist

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/record"
)

// walRecords writes two batches through Pebble's write-ahead log (as a
// store of an older release did, and as the metadata still goes) to a new
// store in dir, a big one (key a's chunk, spanning several log blocks) and
// then key b's, closes it, and returns its newest log's path and the
// offsets where its records begin.
func walRecords(t *testing.T, dir string) (string, []int64) {
	t.Helper()
	s, err := Open(&Options{Dir: dir, Fsync: FsyncAlways})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range []Record{rec("a", 1, 0, strings.Repeat("x", 100<<10)), rec("b", 2, 0, "B")} {
		if err := s.putRaw(chunkKey(uint64(i+1)), appendPut([]byte{FormatLog}, &r)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	if len(logs) == 0 {
		t.Fatal("no write-ahead log")
	}
	path := logs[len(logs)-1]
	num, err := strconv.ParseUint(strings.TrimSuffix(filepath.Base(path), ".log"), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r := newLogReader(record.NewReader, bytes.NewReader(data), num)
	var offs []int64
	for {
		off := r.Offset()
		rec, err := r.Next()
		if err == nil {
			_, err = io.Copy(io.Discard, rec)
		}
		if err != nil {
			break
		}
		offs = append(offs, off)
	}
	return path, offs
}

// bigRecord returns the index of the record holding key a (the one that
// spans blocks).
func bigRecord(t *testing.T, offs []int64) int {
	for i := 0; i+1 < len(offs); i++ {
		if offs[i+1]-offs[i] > 64<<10 {
			return i
		}
	}
	t.Fatalf("no record spans the log's blocks: offsets %v", offs)
	return 0
}

// TestOpenReportsTornWAL: a log cut off inside its last records (a crash
// in the middle of a write) opens, restores what came before, and says in
// one log line what it dropped.
func TestOpenReportsTornWAL(t *testing.T) {
	dir := t.TempDir()
	path, offs := walRecords(t, dir)
	i := bigRecord(t, offs)
	cut := offs[i] + 40<<10 // inside key a's record
	if err := os.Truncate(path, cut); err != nil {
		t.Fatal(err)
	}
	logs := &lockedLines{}
	s, err := Open(&Options{Dir: dir, Logger: logs.logf})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer s.Close()
	if got := logs.String(); len(logs.lines) != 1 || strings.Contains(got, "\n") || !strings.Contains(got, filepath.Base(path)) ||
		!strings.Contains(got, "record at offset "+strconv.FormatInt(offs[i], 10)) || !strings.Contains(got, "dropped") {
		t.Fatalf("log = %q, want one line naming %s and the incomplete record at %d", got, filepath.Base(path), offs[i])
	}
	got, _ := loadAll(t, s, 0)
	wantRecords(t, "after a torn log", got, nil)
}

// TestOpenRefusesCorruptWAL: a log damaged before records that are whole
// is refused, in one line naming the log and the offset, wrapping
// ErrCorrupt: starting would silently drop acknowledged writes.
func TestOpenRefusesCorruptWAL(t *testing.T) {
	dir := t.TempDir()
	path, offs := walRecords(t, dir)
	i := bigRecord(t, offs)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[offs[i]+40<<10] ^= 0xff // inside key a's record; key b's follows
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Open(&Options{Dir: dir})
	if err == nil {
		t.Fatal("Open of a store with a corrupt log succeeded")
	}
	msg := err.Error()
	if !errors.Is(err, ErrCorrupt) || strings.Contains(msg, "\n") || !strings.Contains(msg, filepath.Base(path)) ||
		!strings.Contains(msg, "at offset "+strconv.FormatInt(offs[i], 10)) || !strings.Contains(msg, "then 1 whole batches") {
		t.Fatalf("Open: %v; want one line wrapping ErrCorrupt naming %s and offset %d", err, filepath.Base(path), offs[i])
	}
}
