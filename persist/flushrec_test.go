package persist

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// recorded returns what dir's flush record says.
func recorded(t *testing.T, dir string) uint64 {
	t.Helper()
	next, ok, err := readFlushRecord(dir)
	if err != nil || !ok {
		t.Fatalf("flush record of %s: %v, %v", dir, ok, err)
	}
	return next
}

// TestFlushRecordFollowsTheLog: each Sync that ingests, and each rewrite,
// bring the record up to the log's next chunk; deleting every key and a
// rewrite of none (as after FLUSHALL) never lower it, and the store they
// leave opens.
func TestFlushRecordFollowsTheLog(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(&Options{Dir: dir, Logger: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	if got := recorded(t, dir); got != 1 {
		t.Fatalf("a new store's record says %d, want 1", got)
	}
	apply(t, s, []Record{rec("a", 1, 0, "A"), rec("b", 1, 0, "B")})
	if got := recorded(t, dir); got != s.next || got != 2 {
		t.Fatalf("record after a flush = %d, want %d (2)", got, s.next)
	}
	apply(t, s, nil, "a", "b")
	if got := recorded(t, dir); got != 3 {
		t.Fatalf("record after the deletions = %d, want 3", got)
	}
	if err := s.BeginRewrite(); err != nil {
		t.Fatal(err)
	}
	if err := s.CommitRewrite(); err != nil {
		t.Fatal(err)
	}
	if got := recorded(t, dir); got != 3 {
		t.Fatalf("record after a rewrite of no key = %d, want 3", got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openPebble(t, dir)
	if got, _ := loadAll(t, s, 0); len(got) != 0 {
		t.Fatalf("reopened store holds %s, want nothing", fmtRecords(got))
	}
	apply(t, s, []Record{rec("c", 1, 0, "C")})
	if got := recorded(t, dir); got != 4 {
		t.Fatalf("record after a flush on the reopened store = %d, want 4", got)
	}
}

// TestOpenRefusesOlderStore: a store that holds less of its log than its
// flush record says (here an older copy of it, as a damaged manifest
// would open) is refused with ErrDamaged and left as it was;
// Options.AcceptLoss opens it, logs the loss, and rewrites the record, so
// that the next Open takes it.
func TestOpenRefusesOlderStore(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(&Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	apply(t, s, []Record{rec("a", 1, 0, "A")})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(t.TempDir(), "old")
	if err := os.CopyFS(old, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	s, err = Open(&Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	apply(t, s, []Record{rec("b", 1, 0, "B")})
	apply(t, s, []Record{rec("c", 1, 0, "C")})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	newer, err := os.ReadFile(filepath.Join(dir, flushRecordName))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(old, flushRecordName), newer, 0o644); err != nil {
		t.Fatal(err)
	}

	before, _ := os.ReadDir(old)
	_, err = Open(&Options{Dir: old})
	if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "its log ends at chunk 1 but its flush record (RLSERVER-FLUSHED) says chunks up to 3 were flushed") {
		t.Fatalf("Open of an older store = %v, want ErrDamaged naming chunks 1 and 3", err)
	}
	if after, _ := os.ReadDir(old); len(after) != len(before) {
		t.Fatalf("the refused store changed: %d files, then %d", len(before), len(after))
	}

	var logged []string
	s, err = Open(&Options{Dir: old, AcceptLoss: true, Logger: func(f string, args ...any) { logged = append(logged, f) }})
	if err != nil {
		t.Fatalf("Open with AcceptLoss: %v", err)
	}
	got, _ := loadAll(t, s, 0)
	wantRecords(t, "the older store", got, []Record{rec("a", 1, 0, "A")})
	if len(logged) != 1 || !strings.Contains(logged[0], "accepting the loss") {
		t.Fatalf("logged %q, want one line accepting the loss", logged)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got := recorded(t, old); got != 2 {
		t.Fatalf("record after the recovery = %d, want 2", got)
	}
	openPebble(t, old)
}

// TestOpenDamagedFlushRecord: a record that does not check is ErrDamaged,
// unless AcceptLoss, which opens the store as it is.
func TestOpenDamagedFlushRecord(t *testing.T) {
	dir := t.TempDir()
	s := openPebble(t, dir)
	apply(t, s, []Record{rec("a", 1, 0, "A")})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, flushRecordName)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[6] ^= 1
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(&Options{Dir: dir}); !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "its flush record (RLSERVER-FLUSHED) is damaged (checksum mismatch)") {
		t.Fatalf("Open with a flipped record = %v, want ErrDamaged", err)
	}
	s, err = Open(&Options{Dir: dir, AcceptLoss: true})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := loadAll(t, s, 0)
	wantRecords(t, "the store", got, []Record{rec("a", 1, 0, "A")})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got := recorded(t, dir); got != 2 {
		t.Fatalf("record after the recovery = %d, want 2", got)
	}
}

// TestOpenReadOnlyOnFullDisk: a store whose file system has less free
// than the reserve opens read-only: Degraded says why (ENOSPC), Load
// restores it, writes are refused; once Writable finds room the store is
// opened for writing and takes them. A directory without a store yet
// opens the same way, empty, and gets its store then.
func TestOpenReadOnlyOnFullDisk(t *testing.T) {
	for _, fresh := range []bool{false, true} {
		dir := t.TempDir()
		var want []Record
		if !fresh {
			s := openPebble(t, dir)
			apply(t, s, []Record{rec("a", 1, 0, "A")})
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			want = append(want, rec("a", 1, 0, "A"))
		}
		s, err := Open(&Options{Dir: dir, DiskReserve: 1 << 62, Logger: t.Logf})
		if err != nil {
			t.Fatalf("Open on a full disk (fresh %v): %v", fresh, err)
		}
		if err := s.Degraded(); !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("Degraded on a full disk = %v, want ENOSPC", err)
		}
		got, _ := loadAll(t, s, 0)
		wantRecords(t, "restored read-only", got, want)
		if err := s.Apply([]Record{rec("b", 1, 0, "B")}, nil); err == nil || !strings.Contains(err.Error(), "the store is open read-only") {
			t.Fatalf("Apply on a read-only store = %v, want a refusal", err)
		}
		if err := s.Writable(0); !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("Writable on a full disk = %v, want ENOSPC", err)
		}
		s.resv = 0 // room made
		if err := s.Writable(0); err != nil || s.Degraded() != nil {
			t.Fatalf("Writable once there is room = %v (degraded %v), want the store opened for writing", err, s.Degraded())
		}
		apply(t, s, []Record{rec("b", 1, 0, "B")})
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		got, _ = loadAll(t, openPebble(t, dir), 0)
		wantRecords(t, "after the fault cleared", got, append(want, rec("b", 1, 0, "B")))
	}
}
