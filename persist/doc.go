// Package persist stores rlserver's limiter keys on disk, behind the small
// Store interface, so that state survives a restart.
//
// The command path never waits on disk: shards keep their state in memory and
// hand changed keys to Store.Apply in batches (one call per flush of a
// shard's worth, every --save-interval). Store.Load runs once at start-up.
//
// Two implementations exist: PebbleStore (Open), backed by
// github.com/cockroachdb/pebble/v2, and MemStore (NewMemStore), which keeps
// the same encoded records in memory, for --dir "" (no persistence) and for
// tests of other packages.
//
// # On-disk format
//
// Every limiter key is one Pebble key/value pair:
//
//	key   = 'k' | limiter key bytes (binary safe, any length)
//	value = version (1 byte: 1 or 2, Record.Version)
//	      | kind    (1 byte, engine.Kind; 0 is invalid)
//	      | expire  (8 bytes, int64 big-endian two's complement:
//	                 absolute expiry in Unix nanoseconds, wall clock; 0 = none)
//	      | payload (rest of the value; engine-encoded parameters + state)
//
// The first key byte is a keyspace prefix: 'k' holds limiter records, and
// every other prefix is reserved for future use (metadata, indexes) and is
// ignored by Load. The value header is fixed-width (10 bytes), so a reader
// can check expiry without touching the payload.
//
// The version byte says how the payload is encoded; the header is the same
// in both versions:
//
//   - Version 2 (FormatV2), what rlserver writes: the payload is the state's
//     compact encoding (engine.State.AppendCompact, see engine/compact.go)
//     made with ref = the record's expire field, the key's expiry, which is
//     also the ref the keyspace keeps the state in memory with. It is
//     decoded with DecodeCompact on a fresh state of the kind
//     (engine.Kind.New) and the same ref. An empty payload is a fresh state.
//   - Version 1 (FormatV1), written by older releases and only read now:
//     the payload is engine's frozen version-1 encoding, decoded by
//     engine.DecodeV1 (engine/v1.go). A version-1 record is rewritten as
//     version 2 the next time its key changes.
//
// Both encodings accept exactly the same states, so every record of either
// version restores to a state that can be written again as version 2.
//
// A value whose version byte is neither 1 nor 2, whose kind byte is 0 or
// that is shorter than the 10-byte header is corrupt, and so is a record
// whose payload its version's decoder rejects: Load (or the restore
// callback) skips it, counts it and reports why, but leaves it on disk,
// because a value written by a newer rlserver (a higher version byte) must
// survive a downgrade and upgrade. Changing this layout, or the compact
// encoding of any state, means a new version byte, a decoder for the old
// one kept forever, and new golden data (see TestGoldenV1 here,
// TestGoldenEncodings and TestGoldenCompact in engine), never an edit of
// existing golden data.
//
// The Pebble directory uses the format major version FormatValueSeparation,
// pinned (not FormatNewest) so that upgrading the Pebble library never
// ratchets an existing directory to a format an older binary can't open.
//
// # Durability
//
// The Fsync option mirrors Redis's appendfsync. FsyncAlways commits every
// Apply with a WAL fsync. FsyncEverySec (the default) commits without fsync
// and a goroutine inside PebbleStore fsyncs the WAL once per SyncInterval
// (default 1s) if anything was written since the last sync; callers don't run
// a ticker. FsyncNo never fsyncs on its own. With every policy Sync (used by
// SAVE) fsyncs on demand, and Close fsyncs the WAL before closing, so a clean
// shutdown loses nothing.
//
// A crash loses at most the writes since the last fsync: none with
// FsyncAlways, about one SyncInterval with FsyncEverySec, whatever the OS had
// not written back with FsyncNo. (A process crash, not only a machine crash,
// can lose unsynced writes: Pebble buffers the WAL briefly in memory.)
// Recovery replays the WAL up to the first torn record, so each Apply batch
// is restored whole or not at all.
package persist
