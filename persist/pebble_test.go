package persist

import (
	"bufio"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestValueEncodingV2(t *testing.T) {
	r := Record{Key: []byte("user:1"), Version: FormatV2, Kind: 2, ExpireAt: 0x0102030405060708, Payload: []byte{0xaa, 0xbb}}
	// version | kind | ExpireAt big-endian | payload
	if got, want := hex.EncodeToString(appendValue(nil, &r)), "02"+"02"+"0102030405060708"+"aabb"; got != want {
		t.Errorf("value = %s, want %s", got, want)
	}
	d, err := decodeRecord(appendKey(nil, r.Key), appendValue(nil, &r))
	if err != nil || !recordsEqual(d, r) {
		t.Errorf("decode(encode(%+v)) = %+v, %v", r, d, err)
	}
}

func TestValueEncodingV1(t *testing.T) {
	r := Record{Key: []byte("user:1"), Version: FormatV1, Kind: 2, ExpireAt: 0x0102030405060708, Payload: []byte{0xaa, 0xbb}}
	if got, want := hex.EncodeToString(appendKey(nil, r.Key)), "6b757365723a31"; got != want {
		t.Errorf("key = %s, want %s", got, want)
	}
	// version | kind | ExpireAt big-endian | payload
	if got, want := hex.EncodeToString(appendValue(nil, &r)), "01"+"02"+"0102030405060708"+"aabb"; got != want {
		t.Errorf("value = %s, want %s", got, want)
	}
	r.ExpireAt = -2 // two's complement, decodes back
	d, err := decodeRecord(appendKey(nil, r.Key), appendValue(nil, &r))
	if err != nil || !recordsEqual(d, r) {
		t.Errorf("decode(encode(%+v)) = %+v, %v", r, d, err)
	}
}

func TestParseFsyncPolicy(t *testing.T) {
	for _, p := range []FsyncPolicy{FsyncAlways, FsyncEverySec, FsyncNo} {
		got, err := ParseFsyncPolicy(p.String())
		if err != nil || got != p {
			t.Errorf("ParseFsyncPolicy(%q) = %v, %v; want %v", p.String(), got, err, p)
		}
	}
	if _, err := ParseFsyncPolicy("sometimes"); err == nil {
		t.Errorf("ParseFsyncPolicy(sometimes) succeeded")
	}
	var zero Options
	if zero.Fsync != FsyncEverySec {
		t.Errorf("zero Options.Fsync = %v, want everysec", zero.Fsync)
	}
}

// TestFsyncPolicies round-trips through every policy: what Apply wrote is
// on disk after Sync, and what it wrote since after Close.
func TestFsyncPolicies(t *testing.T) {
	for _, p := range []FsyncPolicy{FsyncAlways, FsyncEverySec, FsyncNo} {
		t.Run(p.String(), func(t *testing.T) {
			dir := t.TempDir()
			s, err := Open(&Options{Dir: dir, Fsync: p, Logger: t.Logf})
			if err != nil {
				t.Fatal(err)
			}
			apply(t, s, []Record{rec("a", 1, 0, "A")})
			if err := s.Apply([]Record{rec("b", 2, 0, "B")}, nil); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if ents, err := os.ReadDir(filepath.Join(dir, stageDirName)); err != nil || len(ents) != 0 {
				t.Fatalf("staging directory after Close: %v, %v; want it empty", ents, err)
			}
			got, _ := loadAll(t, openPebble(t, dir), 0)
			wantRecords(t, "after reopen", got, []Record{rec("a", 1, 0, "A"), rec("b", 2, 0, "B")})
		})
	}
}

func TestOpenOptionErrors(t *testing.T) {
	if _, err := Open(nil); err == nil || !strings.Contains(err.Error(), "Dir is empty") {
		t.Errorf("Open(nil) = %v, want a Dir-is-empty error", err)
	}
	if _, err := Open(&Options{Dir: t.TempDir(), Fsync: 9}); err == nil {
		t.Errorf("Open with fsync policy 9 succeeded")
	}
	// A file where the directory should be.
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(&Options{Dir: file}); err == nil || !strings.Contains(err.Error(), file) {
		t.Errorf("Open(a file) = %v, want an error naming it", err)
	}
}

func TestOpenRefusesForeignDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Open(&Options{Dir: dir})
	if err == nil || !strings.Contains(err.Error(), "notes.txt") {
		t.Fatalf("Open(dir with notes.txt) = %v, want a refusal naming the file", err)
	}
	// The refusal left nothing behind.
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if n := e.Name(); n != "notes.txt" {
			t.Errorf("refused Open left %s behind", n)
		}
	}
	// A fresh volume mount (lost+found, dot files) is fine.
	dir = t.TempDir()
	for _, n := range []string{"lost+found", ".keep"} {
		if err := os.Mkdir(filepath.Join(dir, n), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	openPebble(t, dir)
}

func TestOpenLockedInProcess(t *testing.T) {
	dir := t.TempDir()
	first := openPebble(t, dir)
	apply(t, first, []Record{rec("a", 1, 0, "A")})
	s, err := Open(&Options{Dir: dir})
	if err == nil {
		s.Close()
		t.Fatal("second Open of a locked dir succeeded")
	}
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("second Open = %v, want ErrLocked naming the dir", err)
	}
	t.Logf("second Open: %v", err)
	// The first store is unaffected, and the lock is free once it closes.
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	got, _ := loadAll(t, openPebble(t, dir), 0)
	wantRecords(t, "after the first closed", got, []Record{rec("a", 1, 0, "A")})
}

// TestOpenLockedByOtherProcess holds the lock in a child process (this test
// binary re-run as TestHelperHoldLock), which is the case Pebble's LOCK file
// exists for.
func TestOpenLockedByOtherProcess(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "PERSIST_HELPER_LOCK_DIR="+dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close() // the helper exits when its stdin closes
		cmd.Wait()
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "locked\n" {
		t.Fatalf("helper said %q, %v; want \"locked\"", line, err)
	}
	_, err = Open(&Options{Dir: dir})
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("Open of a dir locked by another process = %v, want ErrLocked naming the dir", err)
	}
	t.Logf("Open: %v", err)
}

// TestMain doubles as the helper process of TestOpenLockedByOtherProcess:
// with PERSIST_HELPER_LOCK_DIR set it holds that directory's lock until its
// stdin closes, instead of running tests.
func TestMain(m *testing.M) {
	if dir := os.Getenv("PERSIST_HELPER_LOCK_DIR"); dir != "" {
		holdLock(dir)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func holdLock(dir string) {
	s, err := Open(&Options{Dir: dir})
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(1)
	}
	fmt.Println("locked")
	bufio.NewReader(os.Stdin).ReadString('\n') // until the parent closes stdin
	s.Close()
}

// TestOpenRefusesMissingManifestMarker: a store whose data files are there
// but whose manifest marker is gone is refused (Pebble would start an empty
// store over them and delete them), and left as it was.
func TestOpenRefusesMissingManifestMarker(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(&Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Apply([]Record{{Key: []byte("k"), Version: FormatV2, Kind: 2, ExpireAt: 1 << 62}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	markers, _ := filepath.Glob(filepath.Join(dir, "marker.manifest.*"))
	if len(markers) == 0 {
		t.Fatalf("no manifest marker in %s", dir)
	}
	for _, m := range markers {
		os.Remove(m)
	}
	before, _ := os.ReadDir(dir)
	if _, err := Open(&Options{Dir: dir}); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "manifest marker") {
		t.Fatalf("Open without the manifest marker = %v, want a refusal naming it", err)
	}
	after, _ := os.ReadDir(dir)
	if len(after) != len(before) {
		t.Fatalf("the refused store changed: %d files, then %d", len(before), len(after))
	}
}
