package integration

// How a server starts on a store that is damaged, or on a disk it cannot
// write: never silently with fewer keys than were flushed, and on a full
// or read-only disk as a running server lives with one.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// flushedStore makes a store in dir of rounds × per keys, each round made
// durable by a SAVE of its own (so that the manifest records one table per
// round), and leaves it as kill -9 does. It returns the number of keys.
func flushedStore(t *testing.T, dir string, rounds, per int) int {
	t.Helper()
	s := startIn(t, dir, "--save-interval", "1h")
	c := s.client(t, 3)
	for r := range rounds {
		p := c.Pipeline()
		for i := range per {
			p.Do(ctx, "CL.TOKENBUCKET", fmt.Sprintf("key:%d:%d", r, i), 100, 1, "1h")
		}
		if _, err := p.Exec(ctx); err != nil {
			t.Fatal(err)
		}
		do(t, c, "SAVE").equal("OK")
	}
	s.kill()
	return rounds * per
}

// copyStore copies the store in dir to a fresh directory.
func copyStore(t *testing.T, dir string) string {
	t.Helper()
	d := filepath.Join(t.TempDir(), "copy")
	if err := os.CopyFS(d, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	return d
}

// flip inverts up to 8 bytes of file from off on (off < 0: the middle).
func flip(t *testing.T, file string, off int) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if off < 0 {
		off = len(b) / 2
	}
	for i := off; i < min(off+8, len(b)); i++ {
		b[i] ^= 0xff
	}
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// one returns a store file matching pattern in d.
func one(t *testing.T, d, pattern string) string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(d, pattern))
	if len(files) != 1 {
		t.Fatalf("%d files %s in %s, want one", len(files), pattern, d)
	}
	return files[0]
}

// refused asserts a start on d that exits 1 with one line holding want.
func refused(t *testing.T, what, d, want string, args ...string) string {
	t.Helper()
	out := startFails(t, what, append([]string{"--port", "0", "--dir", d}, args...)...)
	if !strings.Contains(out, want) || strings.Count(strings.TrimSpace(out), "\n") != 0 || strings.Contains(out, "goroutine") {
		t.Fatalf("%s: want one line holding %q:\n%s", what, want, out)
	}
	return out
}

// loudOrWhole starts a server on d and asserts one of the two outcomes a
// damaged store may have: a refusal (exit 1, one line), or a start that
// restores every one of keys. It reports whether the server started.
func loudOrWhole(t *testing.T, what, d string, keys int) bool {
	t.Helper()
	s, err := tryStart(t, d)
	if err != nil {
		const exited = "rlserver exited before ready: exit status 1\n"
		msg := err.Error()
		if !strings.HasPrefix(msg, exited) || strings.Count(strings.TrimSpace(strings.TrimPrefix(msg, exited)), "\n") != 0 {
			t.Fatalf("%s: want exit status 1 and one line: %v", what, err)
		}
		return false
	}
	if got := infoInt(t, s.client(t, 3), "rl_keys_restored"); got != int64(keys) {
		t.Fatalf("%s: started with %d keys restored, want %d (or a refusal):\n%s", what, got, keys, s.logs)
	}
	s.kill()
	return true
}

// TestPersistDamagedManifest: a manifest damaged in the middle makes
// Pebble open an older version of the store without an error; the flush
// record beside the store says how far the log reached, so the server
// refuses to start, exit 1, with one line saying so. Damage anywhere else
// in the manifest is refused too (or, where Pebble still reads every
// table, restores every key). --recover-damaged-store starts with what
// the store holds and logs the loss; the record then describes that
// store, so that a start without the flag takes it.
func TestPersistDamagedManifest(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	keys := flushedStore(t, dir, 4, 500)

	d := copyStore(t, dir)
	flip(t, one(t, d, "MANIFEST-*"), -1)
	out := refused(t, "server with a manifest damaged in its middle", d,
		"persist: damaged store: its log ends at chunk ")
	if !strings.Contains(out, "but its flush record (RLSERVER-FLUSHED) says chunks up to ") || !strings.Contains(out, "Pebble opened an older version of the store (a damaged MANIFEST-* file?), which would restore less than was flushed; refusing to start (restore from a CHECKPOINT copy, or start with --recover-damaged-store to accept the loss)") {
		t.Fatalf("the refusal does not say what to do:\n%s", out)
	}

	s := startIn(t, d, "--recover-damaged-store")
	c := s.client(t, 3)
	restored := infoInt(t, c, "rl_keys_restored")
	if restored >= int64(keys) {
		t.Fatalf("%d keys restored from a store damaged to an older version, want fewer than %d", restored, keys)
	}
	eventually(t, "the loss in the log", func() bool {
		return strings.Contains(s.logs.String(), "; accepting the loss (--recover-damaged-store)")
	})
	s.kill()
	s = startIn(t, d)
	if got := infoInt(t, s.client(t, 3), "rl_keys_restored"); got != restored {
		t.Fatalf("a start after the recovery restored %d keys, want %d", got, restored)
	}
	s.kill()

	manifest, err := os.ReadFile(one(t, dir, "MANIFEST-*"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 8 {
		off := len(manifest) * i / 8
		d := copyStore(t, dir)
		flip(t, one(t, d, "MANIFEST-*"), off)
		loudOrWhole(t, fmt.Sprintf("manifest flipped at %d of %d", off, len(manifest)), d, keys)
	}
}

// TestPersistDamagedFlushRecord: a flush record that does not check
// (bytes flipped, cut short) stops the server with one line naming it,
// exit 1; --recover-damaged-store (here its variable,
// RLSERVER_RECOVER_DAMAGED_STORE) starts with every key the store holds
// and says so; a store without a record (written by an older release)
// starts with every key.
func TestPersistDamagedFlushRecord(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	keys := flushedStore(t, dir, 2, 200)

	d := copyStore(t, dir)
	flip(t, filepath.Join(d, "RLSERVER-FLUSHED"), 5)
	refused(t, "server with its flush record flipped", d,
		"persist: damaged store: its flush record (RLSERVER-FLUSHED) is damaged (checksum mismatch); refusing to start")

	d = copyStore(t, dir)
	if err := os.Truncate(filepath.Join(d, "RLSERVER-FLUSHED"), 9); err != nil {
		t.Fatal(err)
	}
	refused(t, "server with its flush record cut short", d,
		"persist: damaged store: its flush record (RLSERVER-FLUSHED) is damaged (9 bytes, want 17); refusing to start")
	// The flag, as every flag, can be set by its environment variable.
	cmd := serverCommand("--port", "0", "--dir", d)
	cmd.Env = append(cmd.Environ(), "RLSERVER_RECOVER_DAMAGED_STORE=true")
	s, err := startCmd(t, d, cmd)
	if err != nil {
		t.Fatal(err)
	}
	wantRestored(t, s, s.client(t, 3), keys)
	eventually(t, "the recovery in the log", func() bool {
		return strings.Contains(s.logs.String(), "is damaged (9 bytes, want 17); starting with what the store holds (--recover-damaged-store)")
	})
	s.kill()

	d = copyStore(t, dir)
	if err := os.Remove(filepath.Join(d, "RLSERVER-FLUSHED")); err != nil {
		t.Fatal(err)
	}
	s = startIn(t, d)
	wantRestored(t, s, s.client(t, 3), keys)
	s.kill()
}

// TestPersistDamagedFileKinds damages every other file of a store, one
// file per fresh copy: a table (each holds flushed chunks, which Load
// reads) is refused with one line naming it, exit 1; the write-ahead log
// (which holds no chunks: they are ingested as tables), the options file
// and the markers (empty: their names say what they mark) are not read
// for the data, and the server starts with every key.
func TestPersistDamagedFileKinds(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	keys := flushedStore(t, dir, 3, 300)
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	damaged := map[string]int{}
	for _, e := range ents {
		name := e.Name()
		kind := ""
		switch {
		case strings.HasSuffix(name, ".sst"):
			kind = "table"
		case strings.HasSuffix(name, ".log"):
			kind = "log"
		case strings.HasPrefix(name, "OPTIONS-"):
			kind = "options"
		case strings.HasPrefix(name, "marker."):
			kind = "marker"
		default:
			continue // LOCK, staging; the manifest and the record have tests of their own
		}
		damaged[kind]++
		d := copyStore(t, dir)
		file := filepath.Join(d, name)
		if kind == "marker" {
			if err := os.WriteFile(file, []byte("damage"), 0o644); err != nil {
				t.Fatal(err)
			}
		} else {
			flip(t, file, -1)
		}
		if kind == "table" {
			out := refused(t, name+" damaged", d, name)
			if !strings.Contains(out, "corruption") {
				t.Fatalf("%s damaged: the refusal does not name the corruption:\n%s", name, out)
			}
			continue
		}
		if !loudOrWhole(t, name+" damaged", d, keys) {
			t.Fatalf("%s damaged: refused, want a start with every key", name)
		}
	}
	for _, k := range []string{"table", "log", "options", "marker"} {
		if damaged[k] == 0 {
			t.Errorf("no %s file damaged (%v)", k, damaged)
		}
	}
}

// mountTmpfs mounts a tmpfs of size (mount's syntax: 16m) for the test,
// unmounted when it ends. The test runs as root.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	mnt := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Fatalf("mount -t tmpfs (the test needs root): %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", mnt, err, out)
		}
	})
	return mnt
}

// remount changes the options of the tmpfs at mnt (size=, ro, rw).
func remount(t *testing.T, mnt, opts string) {
	t.Helper()
	if out, err := exec.Command("mount", "-o", "remount,"+opts, mnt).CombinedOutput(); err != nil {
		t.Fatalf("mount -o remount,%s %s: %v: %s", opts, mnt, err, out)
	}
}

// TestPersistStartOnFaultyDisk: a server started on a store whose file
// system is full (less free than --disk-reserve) or read-only restores
// every key, decides from memory, and reports the fault as a running
// server does: INFO persistence, SAVE's error, the log, and /readyz
// (ready, saying why writes wait). When the fault clears, the store is
// opened for writing and every waiting key is written: a kill -9 then
// loses nothing. A fresh directory on a full disk starts empty the same
// way and gets its store once there is room.
func TestPersistStartOnFaultyDisk(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		keys    int
		reserve string // --disk-reserve of the start on the fault
		fault   string // remount options that make it (before the start)
		clear   string // and that clear it
		text    string // in rl_persistence_error
	}{
		{"full", 100, "64mb", "", "size=256m", "no space left on device ("},
		{"read-only", 100, "1mb", "ro", "rw", "is not writable: open "},
		{"full-fresh", 0, "64mb", "", "size=256m", "no space left on device ("},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			began := time.Now()
			mnt := mountTmpfs(t, "16m")
			dir := filepath.Join(mnt, "data")
			if tc.keys > 0 {
				s := startIn(t, dir, "--disk-reserve", "1mb")
				c := s.client(t, 3)
				for i := range tc.keys {
					bucket100(t, c, fmt.Sprintf("k:%d", i), 1)
				}
				do(t, c, "SAVE").equal("OK")
				s.kill()
			} else if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if tc.fault != "" {
				remount(t, mnt, tc.fault)
			}

			s := startIn(t, dir, "--disk-reserve", tc.reserve, "--save-interval", "50ms", "--metrics-addr", "127.0.0.1:0")
			c := s.client(t, 3)
			wantRestored(t, s, c, tc.keys)
			p := infoPersistence(t, c)
			if p["rdb_last_bgsave_status"] != "err" || !strings.Contains(p["rl_persistence_error"], tc.text) || p["rl_persistence_error_since"] == "0" {
				t.Fatalf("INFO persistence on a %s disk at start: %v", tc.name, p)
			}
			if tc.name == "read-only" && !strings.HasSuffix(p["rl_persistence_error"], "read-only file system") {
				t.Fatalf("rl_persistence_error = %q, want the read-only file system named", p["rl_persistence_error"])
			}
			eventually(t, "the fault in the log", func() bool {
				return strings.Contains(s.logs.String(), "error: persistence failing, decisions go on from memory and changes wait (retrying with back-off): persist: "+dir)
			})
			metrics := "http://" + s.metricsAddr(t) + "/readyz"
			code, body := httpGet(t, metrics)
			if code != 200 || !strings.HasPrefix(body, "ready (persistence failing since "+p["rl_persistence_error_since"]+", deciding from memory, ") || !strings.Contains(body, tc.text) {
				t.Fatalf("/readyz on a %s disk = %d %q", tc.name, code, body)
			}
			for i := range 10 {
				bucket100(t, c, fmt.Sprintf("new:%d", i), 2)
			}
			if tc.keys > 0 {
				wantBucket(t, bucket100(t, c, "k:3", 1), 98, time.Since(began))
			}
			waiting := 10 + min(tc.keys, 1)
			if got := infoInt(t, c, "rl_keys_pending"); got != int64(waiting) {
				t.Fatalf("rl_keys_pending = %d, want %d", got, waiting)
			}
			if err := c.Save(ctx).Err(); err == nil || !strings.Contains(err.Error(), tc.text) {
				t.Fatalf("SAVE on a %s disk: %v, want the fault", tc.name, err)
			}

			remount(t, mnt, tc.clear)
			eventually(t, "the waiting keys written", func() bool {
				p := infoPersistence(t, c)
				return p["rdb_last_bgsave_status"] == "ok" && p["rl_keys_pending"] == "0" && p["rl_persistence_error"] == ""
			})
			eventually(t, "the store opened for writing in the log", func() bool {
				l := s.logs.String()
				return strings.Contains(l, "persist: "+dir+" takes writes again: the store is open for writing") && strings.Contains(l, "persistence recovered after ")
			})
			if code, body := httpGet(t, metrics); code != 200 || body != "ready\n" {
				t.Fatalf("/readyz once the fault cleared = %d %q", code, body)
			}
			s.kill()

			s = startIn(t, dir, "--disk-reserve", "1mb")
			c = s.client(t, 3)
			wantRestored(t, s, c, tc.keys+10)
			if tc.keys > 0 {
				wantBucket(t, bucket100(t, c, "k:3", 0), 98, time.Since(began))
			}
			wantBucket(t, bucket100(t, c, "new:9", 0), 98, time.Since(began))
		})
	}
}

// TestPersistUnreadableDirAtStart: a data directory that cannot be read
// at all (here a file where the directory should be) stops the server at
// once with one line, exit 1: a disk fault is lived with, a directory
// that is not there to read is not.
func TestPersistUnreadableDirAtStart(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(file, []byte("not a directory"), 0o644); err != nil {
		t.Fatal(err)
	}
	refused(t, "server on a file", file, fmt.Sprintf("error: cannot open data directory %q: persist: open %s: mkdir %s: not a directory", file, file, file))
}
