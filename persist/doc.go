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
// # On-disk format, version 1
//
// Every limiter key is one Pebble key/value pair:
//
//	key   = 'k' | limiter key bytes (binary safe, any length)
//	value = version (1 byte, = 1)
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
// A value whose version byte is not 1, whose kind byte is 0 or that is
// shorter than the 10-byte header is corrupt: Load skips it, counts it and
// reports why, but leaves it on disk, because a value written by a newer
// rlserver (a higher version byte) must survive a downgrade and upgrade.
// Changing this layout means a new version byte, a decoder for the old one
// kept forever, and a new golden directory under testdata (see
// TestGoldenV1), never an edit of testdata/golden-v1.
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
