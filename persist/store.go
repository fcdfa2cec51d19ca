package persist

import (
	"errors"
	"fmt"
)

// Record is one limiter key as stored on disk.
type Record struct {
	// Key is the limiter key (binary safe).
	Key []byte
	// Version is the record's format version, FormatV1 or FormatV2: how
	// Payload is encoded. Apply rejects any other (0 included) with
	// ErrInvalid.
	Version uint8
	// Kind is the engine.Kind of the limiter; 0 is invalid.
	Kind uint8
	// ExpireAt is the absolute expiry in Unix nanoseconds, wall clock; 0
	// means none.
	ExpireAt int64
	// Payload is the engine-encoded parameters and state, in the encoding
	// Version names; the Store does not read it.
	Payload []byte
	// Deleted marks a deletion (only Key is set), as Load replays one.
	Deleted bool
}

// LoadStats counts what Store.Load did.
type LoadStats struct {
	Loaded  int // puts passed to fn that it accepted (not deletions)
	Expired int // records with ExpireAt <= now, passed to fn as deletions
	Skipped int // corrupt records (undecodable, or rejected by fn with ErrCorrupt), left on disk
	// Errors says why records were skipped, one error per skipped record up
	// to MaxLoadErrors (Skipped keeps counting beyond). Each wraps ErrCorrupt
	// and names the key; the caller logs them.
	Errors []error
}

// MaxLoadErrors bounds LoadStats.Errors so that a badly damaged store
// doesn't produce millions of log lines.
const MaxLoadErrors = 100

// Store is durable storage for limiter records. Implementations are safe for
// concurrent use. Once Close has begun, the other methods return ErrClosed.
type Store interface {
	// Apply writes puts and deletes as one batch. Deletes are applied
	// after puts, so a key in both ends up deleted. A record with Kind 0
	// or a Version other than FormatV1 and FormatV2 is rejected (with
	// ErrInvalid) before anything is written. Apply does not retain the
	// slices. What is applied may reach the store (and Load) only at the
	// next Sync; an Apply or Sync that fails may lose everything applied
	// since the last Sync that worked, which the caller must write again.
	Apply(puts []Record, deletes [][]byte) error
	// Sync writes everything applied so far, as a whole, durably (fsynced
	// unless the policy is FsyncNo). The saver calls it after each flush.
	Sync() error
	// Load replays the store into fn, oldest first: a key may come more
	// than once, and a later record replaces an earlier one; a record with
	// Deleted set removes the key. A record whose ExpireAt is nonzero and
	// <= now (Unix nanoseconds) is passed as a deletion. Records that fail
	// to decode, and records for which fn returns an error wrapping
	// ErrCorrupt, are skipped, counted and explained in LoadStats.Errors;
	// they stay on disk until a rewrite. Any other error from fn stops Load
	// and is returned.
	//
	// The Record's Key and Payload are only valid during the call: fn must
	// copy them to keep them, and must not call the store's methods. Load
	// runs at start-up, before any Apply.
	Load(now int64, fn func(Record) error) (LoadStats, error)
	// BeginRewrite starts a rewrite; the caller then applies every live
	// key (and may go on applying other changes) and calls CommitRewrite.
	BeginRewrite() error
	// CommitRewrite ends the rewrite: from then on the store holds only
	// what was applied since BeginRewrite; older records go. Without it
	// (a crash, a failed Apply) the rewrite's records are just newer ones.
	CommitRewrite() error
	// KeysHint returns about how many keys Load will restore (the last
	// rewrite's), to size the keyspace before it.
	KeysHint() int
	// Sizes returns the bytes the last committed rewrite wrote and the
	// bytes applied since (records of older formats count there): the
	// caller rewrites when the second outgrows the first.
	Sizes() (rewrite, since int64)
	// Checkpoint writes a consistent copy of the store to dir, which must
	// not exist yet (its parent is created if needed). The copy is a Pebble
	// directory that Open accepts. Checkpoint does not block Apply for long.
	Checkpoint(dir string) error
	// Writable reports whether a write of about need bytes can be made now,
	// with an error saying why not (wrapping the OS error: no space left,
	// permission denied, a directory gone). The saver asks before writing:
	// Pebble treats some failed writes (its manifest, its write-ahead log)
	// as fatal, so a write the disk cannot take must never reach it.
	Writable(need int) error
	// Close writes what was applied since the last Sync and releases the
	// store. Close is idempotent.
	Close() error
}

// Errors returned by stores. Test them with errors.Is.
var (
	// ErrClosed is returned by every method of a closed store (but Close).
	ErrClosed = errors.New("persist: store is closed")
	// ErrLocked is returned by Open when another process, or another open
	// store in this process, holds the directory's LOCK file.
	ErrLocked = errors.New("persist: directory is locked by another rlserver (or another open store)")
	// ErrCorrupt marks a stored record that can't be decoded. Load wraps it
	// in the errors of LoadStats.Errors; a Load callback returns an error
	// wrapping it to have a record skipped rather than stop the load.
	ErrCorrupt = errors.New("persist: corrupt record")
	// ErrDamaged is returned by Open for a store that would restore less
	// than was flushed to it (a damaged manifest makes Pebble open an older
	// version of the store, or an empty one), or whose flush record is
	// itself damaged.
	ErrDamaged = errors.New("persist: damaged store")
	// ErrInvalid is returned by Apply for a record that can't be stored
	// (Kind 0, an unknown Version). Nothing of the batch is written.
	ErrInvalid = errors.New("persist: invalid record")
)

// FsyncPolicy says whether PebbleStore fsyncs what it writes, like Redis's
// appendfsync. The zero value is FsyncEverySec.
type FsyncPolicy uint8

// The fsync policies. The store writes at Sync only, which the saver calls
// once per flush (once per --save-interval): FsyncEverySec and FsyncAlways
// both fsync then, so each completed flush is on disk.
const (
	// FsyncEverySec fsyncs at every Sync (the default).
	FsyncEverySec FsyncPolicy = iota
	// FsyncAlways fsyncs at every Sync, as FsyncEverySec does.
	FsyncAlways
	// FsyncNo never fsyncs the log's tables: the OS writes them back when
	// it will (Pebble still fsyncs its own metadata).
	FsyncNo
)

var fsyncNames = [...]string{FsyncEverySec: "everysec", FsyncAlways: "always", FsyncNo: "no"}

// String returns the policy's name as ParseFsyncPolicy accepts it.
func (p FsyncPolicy) String() string {
	if int(p) < len(fsyncNames) {
		return fsyncNames[p]
	}
	return fmt.Sprintf("FsyncPolicy(%d)", uint8(p))
}

// ParseFsyncPolicy maps "always", "everysec" or "no" (Redis's appendfsync
// values) to a policy.
func ParseFsyncPolicy(s string) (FsyncPolicy, error) {
	for p, n := range fsyncNames {
		if n == s {
			return FsyncPolicy(p), nil
		}
	}
	return 0, fmt.Errorf("persist: unknown fsync policy %q (want always, everysec or no)", s)
}

// Options configures Open. A nil *Options, or a zero field, means the
// default stated on the field.
type Options struct {
	// Dir is the Pebble directory, created if missing. Required by Open.
	Dir string
	// Fsync is the fsync policy. Default FsyncEverySec.
	Fsync FsyncPolicy
	// DiskReserve is the free space, in bytes, Writable keeps on the
	// store's file system beyond twice the write asked for: room for
	// Pebble's memtable flushes, compactions and a new log file. Default
	// DefaultDiskReserve.
	DiskReserve int64
	// AcceptLoss opens a store whose flush record is damaged, or says more
	// was flushed than the store holds (ErrDamaged), with what it holds,
	// logging the loss (--recover-damaged-store). Without it Open refuses
	// such a store.
	AcceptLoss bool
	// Logger receives the store's and Pebble's error lines (one line per
	// call, without a trailing newline).
	// Default: discard. It must be safe for concurrent use.
	Logger func(format string, args ...any)
}

// DefaultDiskReserve is the default Options.DiskReserve.
const DefaultDiskReserve = 64 << 20

// EnsureDefaults fills zero fields with their defaults.
func (o *Options) EnsureDefaults() {
	if o.DiskReserve <= 0 {
		o.DiskReserve = DefaultDiskReserve
	}
	if o.Logger == nil {
		o.Logger = func(string, ...any) {}
	}
}
