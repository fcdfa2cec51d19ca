// Package persist stores rlserver's limiter keys on disk, behind the small
// Store interface, so that state survives a restart.
//
// The command path never waits on disk: shards keep their state in memory and
// the Saver hands changed keys to Store.Apply in batches every
// --save-interval, taking them from a shard a few thousand at a time so
// that no command waits long for its lock. Store.Load runs once at
// start-up.
//
// Two implementations exist: PebbleStore (Open), backed by
// github.com/cockroachdb/pebble/v2, and MemStore (NewMemStore), which keeps
// each key's last record in memory, for tests of other packages.
//
// # On-disk format
//
// The store is a log kept in Pebble. Each Apply appends chunks: Pebble
// values of up to about 64 KiB holding many records, under sequential keys.
// A rewrite (BeginRewrite, the caller applies every live key, CommitRewrite)
// starts a new base and drops every chunk before it, as Redis rewrites its
// append-only file; the saver rewrites when the log written since the last
// rewrite has outgrown it, and at a clean shutdown. Load replays the chunks
// from the base on, in order. Appending at the end of the keyspace lets
// each Sync hand Pebble a whole table that overlaps no other (see
// Durability), and Pebble's per-key work is spread over a chunk's records.
//
//	'L' | seq (8 bytes, big-endian)   a chunk: FormatLog (1 byte, 3) | records
//	'M' "base"                        metadata: version (1) | base seq | base end seq | keys
//	'k' | limiter key                 a record of the older per-key layout
//
// A chunk's record is
//
//	put:    1 | uvarint key length | key | version (1 byte: 1 or 2)
//	        | kind (1 byte, engine.Kind; 0 is invalid)
//	        | expire (8 bytes, int64 big-endian: absolute expiry in Unix
//	          nanoseconds, wall clock; 0 = none)
//	        | uvarint payload length | payload
//	delete: 2 | uvarint key length | key
//
// One record is not a key's: the function libraries (FUNCTION LOAD), a
// put of kind KindFunctions (15, which no engine.Kind takes) under the key
// "functions", expire 0, whose payload is FUNCTION DUMP's (package script);
// the last one Load meets holds them all. The saver writes it after each
// change to them and in every rewrite. Load hands it to the saver's
// Functions instead of the keyspace; a deletion of the key "functions" is
// always a keyspace key's.
//
// Releases before the log stored one Pebble key per limiter key ('k' |
// key, value = version | kind | expire | payload, the same fields). Load
// reads those first, then the log; the first rewrite deletes them.
//
// The version byte says how the payload is encoded:
//
//   - Version 2 (FormatV2), what rlserver writes: the payload is the state's
//     compact encoding (engine.State.AppendCompact, see engine/compact.go)
//     made with ref = the record's expire field, the key's expiry, which is
//     also the ref the keyspace keeps the state in memory with. It is
//     decoded with DecodeCompact on a fresh state of the kind
//     (engine.Kind.New) and the same ref. An empty payload is a fresh state.
//   - Version 1 (FormatV1), written by older releases and only read now:
//     the payload is engine's frozen version-1 encoding, decoded by
//     engine.DecodeV1 (engine/v1.go).
//
// Both encodings accept exactly the same states, so every record of either
// version restores to a state that can be written again as version 2.
//
// A record whose version byte is neither 1 nor 2, whose kind byte is 0 or
// whose payload its version's decoder rejects is corrupt: Load (or the
// restore callback) skips it, counts it and reports why; a chunk that does
// not parse loses the records after the damage, counted as one. The next
// rewrite writes only the keys the server holds, so it drops what was
// skipped (keep a CHECKPOINT copy to keep it). Changing this layout, or the
// compact encoding of any state, means a new version byte, a decoder for
// the old one kept forever, and new golden data (see TestGoldenV1 here,
// TestGoldenEncodings and TestGoldenCompact in engine), never an edit of
// existing golden data.
//
// Beside Pebble's files, RLSERVER-FLUSHED (flushrec.go) records how far
// the log reached at the last flush that reached the store, checksummed
// and replaced whole by a rename:
//
//	"RLFR" | version (1) | next chunk seq (8 bytes, big-endian) | CRC-32C (4)
//
// Open reads the store read-only first and refuses it (ErrDamaged) when
// its log ends before that: a damaged manifest makes Pebble open an older
// version of the store, or an empty one, without an error. A store that
// can be read but not written (its file system full or read-only) stays
// open read-only until Writable finds the fault cleared.
//
// The Pebble directory uses the format major version FormatValueSeparation,
// pinned (not FormatNewest) so that upgrading the Pebble library never
// ratchets an existing directory to a format an older binary can't open.
//
// # Durability
//
// Apply writes chunks to a stage, an sstable file in the store's staging
// directory; Sync finishes it and has Pebble ingest it (a hard link and a
// manifest edit), so that the log's chunks never pass through Pebble's
// write-ahead log, memtable or compactions: their keys are above every
// other chunk's, so their tables go to the bottom level, and a rewrite
// excises the tables before it whole. The saver calls Sync at the end of
// each flush, so a crash loses at most the flush under way and what was
// acknowledged since it began: a stage left by a crash is deleted at the
// next Open. FsyncEverySec (the default) and FsyncAlways fsync each table
// before ingesting it; FsyncNo does not (the OS writes it back). Only the
// metadata (written with each rewrite, synced) goes through Pebble's
// write-ahead log.
package persist
