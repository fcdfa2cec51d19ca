package persist

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
	"golang.org/x/sys/unix"
)

// Pebble tuning for a sidecar: rlserver keeps every live key in memory, so
// Pebble is written far more than it is read (reads happen once, in Load)
// and its block cache only needs to serve that scan and compactions.
const (
	pebbleCacheSize = 8 << 20 // block cache, bytes
	// pebbleMemTableSize bounds one memtable. Up to
	// pebbleMemTableStopWrites of them may queue for flushing before writes
	// stall, so Pebble's write buffering peaks at 16 MiB.
	pebbleMemTableSize       = 4 << 20
	pebbleMemTableStopWrites = 4
	// pebbleFormat is pinned rather than pebble.FormatNewest: opening a
	// directory ratchets it to this format, and a library upgrade must not do
	// that silently (an older binary could no longer open the data).
	pebbleFormat = pebble.FormatValueSeparation
)

// MaxOpenFiles bounds the files the store keeps open (Pebble's table
// cache, plus its log, manifest and directory): the server reserves them
// out of its file-descriptor limit before sizing --maxclients.
const MaxOpenFiles = 256

// pebbleTableCache is what of MaxOpenFiles Pebble's table cache may use.
const pebbleTableCache = MaxOpenFiles - 32

// PebbleStore is a Store backed by a Pebble directory. It is safe for
// concurrent use. The caller must Close it to release the directory lock
// and write what was applied since the last Sync.
type PebbleStore struct {
	db    *pebble.DB
	lock  *pebble.Lock
	dir   string
	fsync FsyncPolicy
	logf  func(format string, args ...any)
	resv  int64  // Options.DiskReserve
	dirID fileID // the directory opened, to notice it replaced

	// The stage (Apply writes chunks to it, Sync ingests it), under wmu.
	stage    *sstable.Writer
	stageAt  string // its path
	stageN   int    // stages made, to name the next
	stageDir string
	wopts    sstable.WriterOptions

	// The log (log.go). wmu orders writers: chunk numbers are handed out
	// and committed in one order.
	wmu         sync.Mutex
	next        uint64 // the next chunk's number
	meta        meta   // the last committed rewrite
	rewriteFrom uint64 // the first chunk of the rewrite under way
	rewriting   bool
	rewriteKeys uint64       // puts applied since BeginRewrite
	legacy      bool         // records of the per-key format are stored (until a rewrite)
	buf         []byte       // chunk scratch
	base, since atomic.Int64 // Sizes
	recorded    uint64       // what the flush record says (0: none yet), under wmu
	mu          sync.RWMutex // held shared by every operation, exclusively by Close and reopen
	closed      bool         // guarded by mu
	// degraded says why the store is open read-only (s.db may then be nil:
	// no store to read yet), guarded by mu. Writes are refused until
	// Writable finds the fault cleared and reopens it for writing.
	degraded error
}

var _ Store = (*PebbleStore)(nil)

// Open opens the Pebble store in opts.Dir, creating the directory and the
// store if missing. It fails, never falling back to an empty store, if the
// directory can't be created or read, holds something that is not a Pebble
// store, is locked by another process or another open PebbleStore
// (errors.Is(err, ErrLocked)), or holds less than its flush record says
// was flushed (errors.Is(err, ErrDamaged), unless Options.AcceptLoss). A
// store that can be read but not written (its file system full or
// read-only) is opened read-only: Degraded says why, and the first
// Writable that finds the fault cleared opens it for writing. The caller
// must Close the store.
func Open(opts *Options) (*PebbleStore, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	o.EnsureDefaults()
	if o.Dir == "" {
		return nil, errors.New("persist: Options.Dir is empty (use NewMemStore for a store without disk)")
	}
	if o.Fsync > FsyncNo {
		return nil, fmt.Errorf("persist: invalid fsync policy %v", o.Fsync)
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("persist: open %s: %w", o.Dir, err)
	}
	// Before locking, so that a refusal leaves no LOCK file behind.
	if err := checkForeignDir(o.Dir); err != nil {
		return nil, err
	}
	if err := checkManifestMarker(o.Dir); err != nil {
		return nil, err
	}
	recorded, haveRecord, err := readFlushRecord(o.Dir)
	if err != nil {
		if !errors.Is(err, ErrDamaged) {
			return nil, fmt.Errorf("persist: open %s: %w", o.Dir, err)
		}
		if !o.AcceptLoss {
			return nil, fmt.Errorf("persist: open %s: %w; refusing to start (restore from a CHECKPOINT copy, or start with --recover-damaged-store to accept what the store holds)", o.Dir, err)
		}
		o.Logger("persist: open %s: %v; starting with what the store holds (--recover-damaged-store)", o.Dir, err)
	}
	// Pebble drops an incomplete last record of the newest log silently
	// and refuses a damaged one elsewhere; read the logs first to say which.
	tails, _ := readWALTails(o.Dir)
	for _, t := range tails {
		if t.after > 0 {
			return nil, fmt.Errorf("persist: open %s: %w: %s; refusing to start without them (restore from a CHECKPOINT copy, or move the log away to start without the batches in and after the damage)", o.Dir, ErrCorrupt, t.describe())
		}
	}
	s := &PebbleStore{dir: o.Dir, fsync: o.Fsync, logf: o.Logger, resv: o.DiskReserve, stageDir: filepath.Join(o.Dir, stageDirName), next: 1}
	if s.dirID, err = idOf(o.Dir); err != nil {
		return nil, fmt.Errorf("persist: open %s: %w", o.Dir, err)
	}
	// Take the lock ourselves rather than inside pebble.Open, so that a lock
	// conflict gets its own clear error instead of a bare EAGAIN. A
	// directory that cannot be written takes a read lock instead.
	s.lock, err = pebble.LockDirectory(o.Dir, vfs.Default)
	lockErr := err
	if err != nil {
		var pe *fs.PathError
		switch {
		case errors.As(err, &pe) && writeFault(err):
			s.lock = nil // the read-only open takes a read lock
		case errors.As(err, &pe): // creating the LOCK file failed
			return nil, fmt.Errorf("persist: open %s: %w", o.Dir, err)
		default:
			return nil, fmt.Errorf("persist: open %s: %w: %w", o.Dir, ErrLocked, err)
		}
	}
	// First read-only: an open that writes drops the files its version of
	// the store does not name, which a damaged manifest makes most of them.
	if err := s.openPebble(true, tails); err != nil {
		s.release()
		return nil, err
	}
	if haveRecord && s.next < recorded {
		err := fmt.Errorf("%w: its log ends at chunk %d but its flush record (%s) says chunks up to %d were flushed: Pebble opened an older version of the store (a damaged MANIFEST-* file?), which would restore less than was flushed", ErrDamaged, s.next-1, flushRecordName, recorded-1)
		if !o.AcceptLoss {
			s.release()
			return nil, fmt.Errorf("persist: open %s: %w; refusing to start (restore from a CHECKPOINT copy, or start with --recover-damaged-store to accept the loss)", o.Dir, err)
		}
		o.Logger("persist: open %s: %v; accepting the loss (--recover-damaged-store)", o.Dir, err)
	}
	for _, t := range tails {
		if t.torn > 0 {
			o.Logger("persist: %s; dropped it (a crash in the middle of a write leaves such a tail)", t.describe())
		}
	}
	s.recorded = recorded
	if !haveRecord || s.next < recorded {
		s.recorded = 0 // rewritten when the store is opened for writing
	}
	// Opening for writing may replay the log into new files; Pebble treats
	// failing to write them as fatal, so a full or read-only disk keeps
	// the store read-only until it can be written.
	fault := diskFault(o.Dir, 0, o.DiskReserve)
	if fault != nil && !writeFault(fault) {
		s.release()
		return nil, fmt.Errorf("persist: open %s: %w", o.Dir, fault)
	}
	if fault != nil || s.lock == nil {
		if fault == nil {
			fault = fmt.Errorf("persist: %s is not writable: %w", o.Dir, lockErr)
		}
		s.degraded = fault
		return s, nil
	}
	if err := s.openWritable(); err != nil {
		s.release()
		return nil, fmt.Errorf("persist: open %s: %w", o.Dir, err)
	}
	return s, nil
}

// openPebble opens the store's Pebble directory, read-only or for
// writing, and reads the log's metadata. A read-only open of a directory
// without a store leaves s.db nil: there is nothing to read.
func (s *PebbleStore) openPebble(readOnly bool, tails []walTail) error {
	po := &pebble.Options{
		CacheSize:                   pebbleCacheSize,
		MemTableSize:                pebbleMemTableSize,
		MemTableStopWritesThreshold: pebbleMemTableStopWrites,
		FormatMajorVersion:          pebbleFormat,
		MaxOpenFiles:                pebbleTableCache,
		Logger:                      pebbleLogger{s.logf},
		Lock:                        s.lock,
		ReadOnly:                    readOnly,
	}
	if s.lock == nil {
		po.FS = readLockFS{vfs.Default}
	}
	// Chunks are compact encodings already; compressing them cost a
	// few percent of the server's CPU for little space.
	po.ApplyCompressionSettings(func() pebble.DBCompressionSettings { return pebble.DBCompressionNone })
	db, err := pebble.Open(s.dir, po)
	if readOnly && errors.Is(err, pebble.ErrDBDoesNotExist) {
		return nil
	}
	if err != nil {
		for _, t := range tails {
			if t.torn > 0 {
				err = fmt.Errorf("%w; %s", err, t.describe())
			}
		}
		if errors.Is(err, pebble.ErrCorruption) {
			err = fmt.Errorf("%w: %w (restore from a CHECKPOINT copy, or move the damaged log away to start without the batches in and after it)", ErrCorrupt, err)
		}
		if errors.Is(err, syscall.EAGAIN) {
			err = fmt.Errorf("%w: %w", ErrLocked, err)
		}
		return fmt.Errorf("persist: open %s: %w", s.dir, err)
	}
	s.db = db
	s.wopts = po.MakeWriterOptions(6, db.TableFormat())
	if err := s.openLog(); err != nil {
		return fmt.Errorf("persist: open %s: %w", s.dir, err)
	}
	return nil
}

// openWritable closes the read-only store and opens it for writing, with
// the write lock held (s.lock), then makes the staging directory and
// brings the flush record up to date.
func (s *PebbleStore) openWritable() error {
	if s.db != nil {
		if err := s.db.Close(); err != nil {
			return err
		}
		s.db = nil
	}
	if err := s.openPebble(false, nil); err != nil {
		return err
	}
	// A stage left by a crash was never ingested: nothing refers to it.
	err := os.RemoveAll(s.stageDir)
	if err == nil {
		err = os.Mkdir(s.stageDir, 0o755)
	}
	if err == nil && s.recorded != s.next {
		if err = writeFlushRecord(s.dir, s.next); err == nil {
			s.recorded = s.next
		}
	}
	return err
}

// release closes what Open opened, on its way out with an error.
func (s *PebbleStore) release() {
	if s.db != nil {
		_ = s.db.Close()
		s.db = nil
	}
	if s.lock != nil {
		_ = s.lock.Close()
		s.lock = nil
	}
}

// writeFault reports whether err says a file could not be written for a
// fault of the disk, its file system full or read-only, which the server
// lives with. A directory that is not the process's to write (EACCES,
// EPERM) is not one: at start, that is a configuration to fix.
func writeFault(err error) bool {
	for _, e := range []error{syscall.EROFS, syscall.ENOSPC, syscall.EDQUOT} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// readLockFS is the file system of a store opened read-only in a directory
// it cannot write: its lock is a shared lock on the LOCK file, opened
// read-only, which a running rlserver's write lock excludes (and which
// excludes one starting). A store without a LOCK file was never opened
// for writing: there is nothing to lock. (Locks of one process do not
// exclude each other: a second store of this process on the directory is
// refused by the write lock's own check only.)
type readLockFS struct{ vfs.FS }

func (readLockFS) Lock(name string) (io.Closer, error) {
	f, err := os.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return noLock{}, nil
	}
	if err != nil {
		return nil, err
	}
	spec := unix.Flock_t{Type: unix.F_RDLCK, Whence: io.SeekStart}
	if err := unix.FcntlFlock(f.Fd(), unix.F_SETLK, &spec); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("%w: %w", ErrLocked, err)
	}
	return f, nil
}

type noLock struct{}

func (noLock) Close() error { return nil }

// stageDirName is the directory, inside the store's, where stages are
// written before Pebble ingests them (a hard link: the same file system).
const stageDirName = "staging"

// openLog reads the metadata and finds the number of the next chunk.
func (s *PebbleStore) openLog() error {
	v, closer, err := s.db.Get(metaKey)
	switch {
	case err == nil:
		s.meta, err = decodeMeta(v)
		_ = closer.Close()
		if err != nil {
			return err
		}
	case !errors.Is(err, pebble.ErrNotFound):
		return err
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: chunkLower, UpperBound: chunkUpper})
	if err != nil {
		return err
	}
	s.next = max(s.meta.BaseEnd, 1)
	if it.Last() {
		seq, ok := chunkSeq(it.Key())
		if !ok {
			_ = it.Close()
			return fmt.Errorf("%w: log chunk key %x", ErrCorrupt, it.Key())
		}
		s.next = max(s.next, seq+1)
	}
	return errors.Join(it.Error(), it.Close())
}

// checkForeignDir refuses a non-empty directory that holds no Pebble file,
// so that a mistyped --dir doesn't scatter a store among someone's files.
// A lost+found or dot file (a fresh volume mount) doesn't count.
func checkForeignDir(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("persist: open %s: %w", dir, err)
	}
	var foreign string
	for _, e := range ents {
		n := e.Name()
		switch {
		case n == "LOCK" || n == "CURRENT" || n == "lost+found" || n == flushRecordTmp || strings.HasPrefix(n, "."):
		case n == flushRecordName:
			return nil // a store: the record says what it must hold
		case strings.HasPrefix(n, "OPTIONS-") || strings.HasPrefix(n, "MANIFEST-") || strings.HasPrefix(n, "marker."):
			return nil // a Pebble store (maybe half created): Pebble decides
		case strings.HasSuffix(n, ".log") || strings.HasSuffix(n, ".sst") || strings.HasSuffix(n, ".blob"):
			return nil
		default:
			foreign = n
		}
	}
	if foreign != "" {
		return fmt.Errorf("persist: open %s: directory is not empty and holds no Pebble store (found %q); refusing to create one there", dir, foreign)
	}
	return nil
}

// checkManifestMarker refuses a store whose data files are there but whose
// manifest marker (marker.manifest.*, naming the current MANIFEST) is
// not: Pebble would start an empty store over them and delete them.
func checkManifestMarker(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("persist: open %s: %w", dir, err)
	}
	data := 0
	for _, e := range ents {
		n := e.Name()
		switch {
		case strings.HasPrefix(n, "marker.manifest."):
			return nil
		case strings.HasPrefix(n, "MANIFEST-") || strings.HasSuffix(n, ".sst") || strings.HasSuffix(n, ".log") || strings.HasSuffix(n, ".blob") || n == flushRecordName:
			data++
		}
	}
	if data > 0 {
		return fmt.Errorf("persist: open %s: %w: the manifest marker (marker.manifest.*) is missing but %d data files are there; refusing to start an empty store over them (restore the marker, or start from a CHECKPOINT copy)", dir, ErrCorrupt, data)
	}
	return nil
}

// use holds the store open for one operation: it fails with ErrClosed
// once Close has begun, and otherwise returns what ends the hold.
func (s *PebbleStore) use() (release func(), err error) {
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return nil, ErrClosed
	}
	return s.mu.RUnlock, nil
}

// useLog is use that also holds wmu, which orders the log's writers.
func (s *PebbleStore) useLog() (release func(), err error) {
	if _, err := s.use(); err != nil {
		return nil, err
	}
	s.wmu.Lock()
	return func() { s.wmu.Unlock(); s.mu.RUnlock() }, nil
}

// useWrite is useLog for an operation that writes: it fails while the
// store is open read-only (Degraded).
func (s *PebbleStore) useWrite() (release func(), err error) {
	release, err = s.useLog()
	if err == nil && s.degraded != nil {
		release()
		return nil, fmt.Errorf("persist: the store is open read-only: %w", s.degraded)
	}
	return release, err
}

// Degraded returns why the store is open read-only (nil: it is not): its
// file system was full or read-only when it was opened. Writable opens it
// for writing once the fault has cleared.
func (s *PebbleStore) Degraded() error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.degraded
}

// Dir returns the store's directory.
func (s *PebbleStore) Dir() string { return s.dir }

// Apply implements Store: the records go to the log as chunks, written to
// the stage, a table that the next Sync hands to Pebble whole. Chunks never
// pass through Pebble's write-ahead log and memtable, and their tables
// (their keys are above every other chunk's) go to the bottom level, where
// no compaction rewrites them. A failed write drops the stage: what was
// applied since the last Sync is lost, as the Store contract allows.
func (s *PebbleStore) Apply(puts []Record, deletes [][]byte) error {
	for i := range puts {
		if err := checkRecord(&puts[i]); err != nil {
			return err
		}
	}
	release, err := s.useWrite()
	if err != nil {
		return err
	}
	defer release()
	if len(puts) == 0 && len(deletes) == 0 {
		return nil
	}
	if s.stage == nil {
		if err := s.newStage(); err != nil {
			return fmt.Errorf("persist: apply: %w", err)
		}
	}
	seq, written := s.next, int64(0)
	buf := append(s.buf[:0], FormatLog)
	cut := func() {
		if len(buf) > 1 && err == nil {
			written += int64(len(buf))
			err = s.stage.Set(chunkKey(seq), buf)
			seq++
		}
		buf = append(buf[:0], FormatLog)
	}
	for i := range puts {
		if buf = appendPut(buf, &puts[i]); len(buf) >= chunkTarget {
			cut()
		}
	}
	for _, k := range deletes {
		if buf = appendDelete(buf, k); len(buf) >= chunkTarget {
			cut()
		}
	}
	cut()
	s.buf = buf
	if err != nil {
		s.dropStage()
		return fmt.Errorf("persist: apply: %w", err)
	}
	s.next = seq
	s.since.Add(written)
	s.rewriteKeys += uint64(len(puts))
	return nil
}

// newStage starts a stage. With FsyncNo its file is never fsynced (the
// OS writes it back when it will).
func (s *PebbleStore) newStage() error {
	s.stageN++
	path := filepath.Join(s.stageDir, fmt.Sprintf("%06d.sst", s.stageN))
	f, err := vfs.Default.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	if s.fsync == FsyncNo {
		f = noSyncFile{f}
	}
	s.stage, s.stageAt = sstable.NewWriter(objstorageprovider.NewFileWritable(f), s.wopts), path
	return nil
}

type noSyncFile struct{ vfs.File }

func (noSyncFile) Sync() error     { return nil }
func (noSyncFile) SyncData() error { return nil }

// dropStage abandons the stage and its file.
func (s *PebbleStore) dropStage() {
	if s.stage != nil {
		_ = s.stage.Close()
		_ = os.Remove(s.stageAt)
		s.stage = nil
	}
}

// stageCost is what Sizes counts for each table ingested on top of its
// chunks, so that many small flushes lead to a rewrite too, which folds
// their tables into a few.
const stageCost = 16 << 10

// commitStage finishes the stage (fsyncing it unless FsyncNo) and has
// Pebble ingest it. The caller holds wmu. On failure the stage is gone.
func (s *PebbleStore) commitStage() error {
	if s.stage == nil {
		return nil
	}
	w, path := s.stage, s.stageAt
	s.stage = nil
	err := w.Close()
	if err == nil {
		err = s.db.Ingest(context.Background(), []string{path})
	}
	// Pebble holds a hard link to an ingested table.
	if rerr := os.Remove(path); err == nil && rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
		s.logf("persist: removing %s: %v", path, rerr)
	}
	if err != nil {
		return err
	}
	s.since.Add(stageCost)
	return s.record()
}

// record brings the flush record up to date with the log: every chunk
// before s.next is in the store (or was lost with a failed stage, and
// never counted). The caller holds wmu.
func (s *PebbleStore) record() error {
	if s.recorded == s.next {
		return nil
	}
	if err := writeFlushRecord(s.dir, s.next); err != nil {
		return err
	}
	s.recorded = s.next
	return nil
}

// BeginRewrite implements Store.
func (s *PebbleStore) BeginRewrite() error {
	release, err := s.useWrite()
	if err != nil {
		return err
	}
	defer release()
	s.rewriteFrom = s.next
	s.rewriting, s.rewriteKeys = true, 0
	s.since.Store(0)
	return nil
}

// CommitRewrite implements Store: it ingests the stage, points the
// metadata (a synced write) at the rewrite's first chunk, and then excises
// every chunk before it and every record of the older per-key format:
// Pebble drops their tables whole. A crash between the two leaves chunks
// that Load no longer reads, for the next rewrite to drop.
func (s *PebbleStore) CommitRewrite() error {
	release, err := s.useWrite()
	if err != nil {
		return err
	}
	defer release()
	if !s.rewriting {
		return errors.New("persist: CommitRewrite without BeginRewrite")
	}
	if err := s.commitStage(); err != nil {
		return fmt.Errorf("persist: commit rewrite: %w", err)
	}
	m := meta{Base: s.rewriteFrom, BaseEnd: s.next, Keys: s.rewriteKeys}
	if err := s.db.Set(metaKey, m.encode(), pebble.Sync); err != nil {
		return fmt.Errorf("persist: commit rewrite: %w", err)
	}
	s.rewriting = false
	s.meta = m
	s.base.Store(s.since.Swap(0))
	if err := s.record(); err != nil {
		return fmt.Errorf("persist: commit rewrite: %w", err)
	}
	ctx := context.Background()
	err = s.db.Excise(ctx, pebble.KeyRange{Start: chunkKey(0), End: chunkKey(m.Base)})
	if err == nil && s.legacy {
		if err = s.db.Excise(ctx, pebble.KeyRange{Start: recordLower, End: recordUpper}); err == nil {
			s.legacy = false
		}
	}
	if err != nil {
		s.logf("persist: dropping the log before the rewrite (the next rewrite tries again): %v", err)
	}
	return nil
}

// KeysHint implements Store.
func (s *PebbleStore) KeysHint() int {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return int(min(s.meta.Keys, 1<<31))
}

// Sizes implements Store.
func (s *PebbleStore) Sizes() (rewrite, since int64) {
	return s.base.Load(), s.since.Load()
}

// Writable implements Store: it creates and removes a probe file in the
// directory (which fails when the directory is gone, read-only or not
// ours to write) and asks the file system for twice need plus
// Options.DiskReserve bytes free. A store open read-only (Degraded) is
// opened for writing once that holds.
func (s *PebbleStore) Writable(need int) error {
	release, err := s.use()
	if err != nil {
		return err
	}
	err = diskFault(s.dir, need, s.resv)
	// A directory removed and made again is not the store's: Pebble's
	// files were in the old one, so writes would go nowhere durable.
	if id, ierr := idOf(s.dir); err == nil && (ierr != nil || id != s.dirID) {
		err = fmt.Errorf("persist: %s was removed and made again while the store was open; restart rlserver to write to it: %w", s.dir, syscall.ENOENT)
	}
	degraded := s.degraded != nil
	release()
	if err != nil || !degraded {
		return err
	}
	return s.reopen()
}

// diskFault returns why a write of about need bytes cannot be made in dir
// now (nil: it can): a probe file that cannot be made, or less than twice
// need plus reserve bytes free.
func diskFault(dir string, need int, reserve int64) error {
	probe := filepath.Join(dir, ".rlserver-probe")
	f, err := os.OpenFile(probe, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err == nil {
		_, err = f.Write([]byte{0})
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if rerr := os.Remove(probe); err == nil {
			err = rerr
		}
	}
	if err != nil {
		return fmt.Errorf("persist: %s is not writable: %w", dir, err)
	}
	free, err := freeBytes(dir)
	if err != nil {
		return fmt.Errorf("persist: %s: free space: %w", dir, err)
	}
	if want := 2*int64(need) + reserve; free < want {
		return fmt.Errorf("persist: %s: %w (%d bytes free, %d wanted)", dir, syscall.ENOSPC, free, want)
	}
	return nil
}

// reopen opens a store that was open read-only for writing, now that its
// disk takes writes. On failure it stays read-only (with nothing open if
// the read-only store was closed already), with the cause in degraded.
func (s *PebbleStore) reopen() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if s.degraded == nil {
		return nil
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	err := s.lockForWriting()
	if err == nil {
		err = s.openWritable()
	}
	if err != nil {
		err = fmt.Errorf("persist: opening %s for writing: %w", s.dir, err)
		s.degraded = err
		return err
	}
	s.logf("persist: %s takes writes again: the store is open for writing", s.dir)
	s.degraded = nil
	return nil
}

// lockForWriting takes the directory's write lock if the store holds a
// read lock only; the read-only store (which holds that) is closed first.
func (s *PebbleStore) lockForWriting() error {
	if s.lock != nil {
		return nil
	}
	if s.db != nil {
		if err := s.db.Close(); err != nil {
			return err
		}
		s.db = nil
	}
	lock, err := pebble.LockDirectory(s.dir, vfs.Default)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return err
		}
		return fmt.Errorf("%w: %w", ErrLocked, err)
	}
	s.lock = lock
	return nil
}

// Sync implements Store: it ingests the stage, fsynced unless the policy
// is FsyncNo.
func (s *PebbleStore) Sync() error {
	release, err := s.useWrite()
	if err != nil {
		return err
	}
	defer release()
	if err := s.commitStage(); err != nil {
		return fmt.Errorf("persist: sync: %w", err)
	}
	return nil
}

// Load implements Store: the records of the older per-key format first
// (a store an older release wrote, until its first rewrite), then the log
// from the last rewrite on, in order.
func (s *PebbleStore) Load(now int64, fn func(Record) error) (st LoadStats, err error) {
	release, err := s.useLog()
	if err != nil {
		return st, err
	}
	defer release()
	if s.db == nil {
		return st, nil // opened read-only where no store is yet
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: recordLower, UpperBound: recordUpper})
	if err != nil {
		return st, fmt.Errorf("persist: load: %w", err)
	}
	legacy := int64(0)
	for ok := it.First(); ok; ok = it.Next() {
		value, err := it.ValueAndErr()
		if err != nil {
			_ = it.Close()
			return st, fmt.Errorf("persist: load: %w", err)
		}
		legacy += int64(len(it.Key()) + len(value))
		r, derr := decodeRecord(it.Key(), value)
		if err := loadStep(&st, now, r, derr, fn); err != nil {
			_ = it.Close()
			return st, err
		}
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return st, fmt.Errorf("persist: load: %w", err)
	}
	s.legacy = legacy > 0
	it, err = s.db.NewIter(&pebble.IterOptions{LowerBound: chunkKey(s.meta.Base), UpperBound: chunkUpper})
	if err != nil {
		return st, fmt.Errorf("persist: load: %w", err)
	}
	defer func() {
		if cerr := it.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("persist: load: %w", cerr)
		}
	}()
	base, since := int64(0), legacy
	for ok := it.First(); ok; ok = it.Next() {
		seq, _ := chunkSeq(it.Key())
		value, err := it.ValueAndErr()
		if err != nil {
			return st, fmt.Errorf("persist: load: %w", err)
		}
		if seq < s.meta.BaseEnd {
			base += int64(len(value))
		} else {
			since += int64(len(value))
		}
		if err := loadChunk(&st, now, seq, value, fn); err != nil {
			return st, err
		}
	}
	if err := it.Error(); err != nil {
		return st, fmt.Errorf("persist: load: %w", err)
	}
	s.base.Store(base)
	s.since.Store(since)
	return st, nil
}

// Checkpoint implements Store with a Pebble checkpoint: sstables are
// hard-linked where the filesystem allows, so it is cheap, and the WAL is
// fsynced first so that the copy includes every applied batch.
func (s *PebbleStore) Checkpoint(dir string) error {
	release, err := s.useWrite()
	if err != nil {
		return err
	}
	defer release()
	if err := s.commitStage(); err != nil {
		return fmt.Errorf("persist: checkpoint: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(filepath.Clean(dir)), 0o755); err != nil {
		return fmt.Errorf("persist: checkpoint: %w", err)
	}
	if err := s.db.Checkpoint(dir, pebble.WithFlushedWAL()); err != nil {
		return fmt.Errorf("persist: checkpoint %s: %w", dir, err)
	}
	// The copy holds every chunk before s.next: its own flush record
	// says so, for a start from it to check.
	if err := writeFlushRecord(dir, s.next); err != nil {
		return fmt.Errorf("persist: checkpoint %s: %w", dir, err)
	}
	return nil
}

// Close implements Store: it ingests the stage, closes Pebble and releases
// the directory lock. It waits for operations in flight.
func (s *PebbleStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	err := s.commitStage()
	if err != nil {
		err = fmt.Errorf("persist: close: %w", err)
	}
	if s.db != nil {
		if cerr := s.db.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("persist: close: %w", cerr))
		}
	}
	if s.lock != nil {
		if lerr := s.lock.Close(); lerr != nil {
			err = errors.Join(err, fmt.Errorf("persist: close: releasing lock: %w", lerr))
		}
	}
	return err
}

// pebbleLogger routes Pebble's errors to Options.Logger. Its informational
// lines (WAL replay details on every open) are dropped: the server logs one
// line at start-up, and LoadStats says what was restored.
type pebbleLogger struct {
	logf func(format string, args ...any)
}

func (pebbleLogger) Infof(string, ...any) {}

func (l pebbleLogger) Errorf(format string, args ...any) { l.logf("pebble: error: "+format, args...) }

// Fatalf logs one line and exits 1: Pebble calls it on broken invariants
// and on writes it cannot recover from, where going on could corrupt the
// store. What was flushed before is on disk; a restart restores it.
func (l pebbleLogger) Fatalf(format string, args ...any) {
	// Pebble's errors print with their stack traces: keep the first line,
	// which says what and where.
	msg, _, _ := strings.Cut(fmt.Sprintf(format, args...), "\n")
	if strings.Contains(msg, "corruption") {
		msg += " (restore from a CHECKPOINT copy)"
	}
	l.logf("fatal: pebble: %s", msg)
	os.Exit(1)
}

// putRaw stores an already encoded key/value pair verbatim. MemStore's
// Checkpoint uses it to copy values it can't decode; tests use it to plant
// corrupt values.
func (s *PebbleStore) putRaw(key, value []byte) error {
	release, err := s.use()
	if err != nil {
		return err
	}
	defer release()
	return s.db.Set(key, value, pebble.Sync)
}
