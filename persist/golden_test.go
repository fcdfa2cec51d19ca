package persist

import (
	"io"
	"os"
	"path/filepath"
	"testing"
)

// The golden v1 directory is a small Pebble store written once by
// TestGoldenV1 with PERSIST_WRITE_GOLDEN=1 and committed. It guards data on
// users' disks against format changes: if this test fails, the change broke
// old stores. Never regenerate it to make a failing test pass; add a
// golden-v2 next to it instead.
const goldenV1Dir = "testdata/golden-v1"

// goldenNow is the Load time of the golden test (2023-11-14T22:13:20Z).
const goldenNow int64 = 1_700_000_000_000_000_000

// goldenV1Records are the valid records in golden-v1, in key order, minus
// goldenV1Expired. Payloads are arbitrary bytes: persist doesn't read them.
var goldenV1Records = []Record{
	recV1("concurrency:db", 5, 4_102_444_800_000_000_000, "\x00\x00\x00\x00\x00\x00\x00\x0a\x00\x00\x00\x00\x00\x00\x00\x03"),
	recV1("concurrency:jobs", 5, 0, "\x00\x00\x00\x00\x00\x00\x00\x01"),
	recV1("leaky:\x00binary\xff", 3, 1_700_000_000_000_000_001, "\x03\x00\x00\x00\x00\x00\x00\x00\x40\x42\x0f\x00\x00\x00\x00\x00"),
	recV1("leaky:upload", 3, 0, "leaky-state"),
	recV1("tb:api", 2, 4_102_444_800_000_000_000, "\x00\x00\x00\x00\x00\x00\x00\x64\x00\x00\x00\x00\x3b\x9a\xca\x00"),
	recV1("tb:empty-payload", 2, 0, ""),
	recV1("throttle:user:1", 1, 4_102_444_800_000_000_000, "\x00\x00\x00\x00\x00\x00\x00\x0f\x00\x00\x00\x00\x00\x00\x00\x3c"),
	recV1("throttle:user:2", 1, 0, "gcra"),
	recV1("window:login", 4, 4_102_444_800_000_000_000, "\x01\x00\x00\x00\x00\x00\x00\x00\x05"),
	recV1("window:search", 4, 0, "sliding-window-state"),
}

// goldenV1Expired expired long before goldenNow.
var goldenV1Expired = recV1("tb:expired", 2, 1_000_000_000, "old")

// goldenV1Corrupt is stored with a value cut short inside the header.
const goldenV1CorruptKey = "throttle:corrupt"

func TestGoldenV1(t *testing.T) {
	if os.Getenv("PERSIST_WRITE_GOLDEN") == "1" {
		writeGoldenV1(t)
	}
	dir := filepath.Join(t.TempDir(), "golden")
	copyDir(t, goldenV1Dir, dir)
	s := openPebble(t, dir)
	got, st := loadAll(t, s, goldenNow)
	wantRecords(t, "golden-v1", got, goldenV1Records)
	wantStats(t, "golden-v1", st, len(goldenV1Records), 1, 1)
	if len(st.Errors) != 1 {
		t.Fatalf("errors = %v, want 1", st.Errors)
	}
	t.Logf("skipped as expected: %v", st.Errors[0])
}

func writeGoldenV1(t *testing.T) {
	if err := os.RemoveAll(goldenV1Dir); err != nil {
		t.Fatal(err)
	}
	s, err := Open(&Options{Dir: goldenV1Dir, Fsync: FsyncAlways})
	if err != nil {
		t.Fatal(err)
	}
	puts := append([]Record{goldenV1Expired}, goldenV1Records...)
	if err := s.Apply(puts, nil); err != nil {
		t.Fatal(err)
	}
	// version 1, kind 1, then 3 of the 8 ExpireAt bytes.
	if err := s.putRaw(appendKey(nil, []byte(goldenV1CorruptKey)), []byte{1, 1, 0, 0, 0}); err != nil {
		t.Fatal(err)
	}
	// Into an sstable, so the golden data exercises Pebble's table reader
	// and not only WAL replay.
	if err := s.db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Rewrite every file: Pebble preallocates its WAL (fallocate), which
	// makes the directory look megabytes big to du.
	tmp := t.TempDir()
	copyDir(t, goldenV1Dir, tmp)
	if err := os.RemoveAll(goldenV1Dir); err != nil {
		t.Fatal(err)
	}
	copyDir(t, tmp, goldenV1Dir)
	t.Logf("wrote %s", goldenV1Dir)
}

// copyDir copies the regular files of the flat directory src into a new
// directory dst.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			t.Fatalf("%s/%s is not a regular file", src, e.Name())
		}
		copyFile(t, filepath.Join(src, e.Name()), filepath.Join(dst, e.Name()))
	}
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
