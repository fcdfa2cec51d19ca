package shard

import (
	"encoding/binary"
	"errors"
	"sync"

	"github.com/rlserver/rlserver/engine"
)

// The change feed. Every change of a key's state passes through one point,
// Shard.record, which feeds two kinds of consumer:
//
//   - the coalesced set (Options.TrackChanges, DrainChanges): the keys
//     changed since the last drain, each with its state as it is when
//     drained. Persistence consumes this form: it needs each key's latest
//     state only, however many times the key changed.
//   - the stream (Store.Subscribe, Feed): every change in order per shard,
//     as the resulting state with its absolute expiry (never the command),
//     and removals other than expiries (a subscriber expires a state by
//     its expiry itself), kept in a bounded ring per shard while someone
//     subscribes. It is the form replication needs. A subscriber that
//     falls more than the ring behind is told so (ErrBehind) and
//     resynchronises from a snapshot of the shard (Feed.Snapshot); nothing
//     ever waits for a subscriber.

// Event says what happened to a key.
type Event uint8

// The events of the feed.
const (
	EventPut    Event = 1 + iota // the key's state is Entry.Payload, expiring at Entry.ExpireAt
	EventDelete                  // DEL, UNLINK
	EventExpire                  // its state became fresh (lazily or by the sweep); not streamed
	EventEvict                   // removed by the memory bound
	EventFlush                   // every key of the shard removed (FLUSHDB, FLUSHALL); Change.Key is nil
)

var eventNames = [...]string{EventPut: "put", EventDelete: "delete", EventExpire: "expire", EventEvict: "evict", EventFlush: "flush"}

func (e Event) String() string {
	if int(e) < len(eventNames) && eventNames[e] != "" {
		return eventNames[e]
	}
	return "event?"
}

// Entry is one change of the stream, or of a snapshot (all EventPut). Key
// and Payload alias the buffer Read or Snapshot filled: copy them to keep
// them.
type Entry struct {
	Event    Event
	Kind     engine.Kind // EventPut only
	ExpireAt int64       // EventPut: absolute expiry, server-clock Unix ns
	Key      []byte
	// Payload is the state's compact encoding with ref ExpireAt (the
	// payload of a version-2 record on disk), EventPut only.
	Payload []byte
}

// ErrBehind is returned by Feed.Read to a subscriber the shard's ring has
// moved past: the changes it missed are gone, so it must take a Snapshot.
var ErrBehind = errors.New("shard: change feed subscriber fell behind; resynchronise from a snapshot")

// DefaultFeedBytes is the default Options.FeedBytes.
const DefaultFeedBytes = 1 << 20

// entryHeader is an entry's fixed part in the ring: its length (u32, what
// follows it), event, kind, expiry (i64), then the key's length as a
// uvarint, the key and the payload.
const entryHeader = 4 + 1 + 1 + 8

// ring is a shard's stream, allocated while someone subscribes. Entries
// are written back to back across the wrap; the oldest are dropped to make
// room.
type ring struct {
	buf  []byte // power-of-two size
	head uint64 // bytes ever written
	tail uint64 // the oldest entry still held starts here
	subs int
	hdr  [entryHeader + binary.MaxVarintLen64]byte
}

func (r *ring) write(p []byte) {
	n := uint64(len(r.buf))
	at := r.head & (n - 1)
	k := copy(r.buf[at:], p)
	copy(r.buf, p[k:])
	r.head += uint64(len(p))
}

func (r *ring) read(dst []byte, from, to uint64) []byte {
	n := uint64(len(r.buf))
	for from < to {
		at := from & (n - 1)
		end := min(n, at+(to-from))
		dst = append(dst, r.buf[at:end]...)
		from += end - at
	}
	return dst
}

func (r *ring) u32At(pos uint64) uint32 {
	var b [4]byte
	return binary.LittleEndian.Uint32(r.read(b[:0], pos, pos+4))
}

// add appends an entry, dropping the oldest ones to make room. An entry
// larger than the ring leaves it empty: every subscriber is then behind.
func (r *ring) add(ev Event, kind engine.Kind, exp int64, key, payload []byte) {
	h := entryHead(r.hdr[:0], ev, kind, exp, len(key), len(payload))
	size := uint64(len(h) + len(key) + len(payload))
	if size > uint64(len(r.buf)) {
		r.head += size
		r.tail = r.head
		return
	}
	for r.head+size-r.tail > uint64(len(r.buf)) {
		r.tail += 4 + uint64(r.u32At(r.tail))
	}
	r.write(h)
	r.write(key)
	r.write(payload)
}

// parseEntries appends the entries of b (whole entries as the ring holds
// them) to dst.
func parseEntries(dst []Entry, b []byte) []Entry {
	for len(b) >= entryHeader {
		size := 4 + int(binary.LittleEndian.Uint32(b))
		e := Entry{Event: Event(b[4]), Kind: engine.Kind(b[5]), ExpireAt: int64(binary.LittleEndian.Uint64(b[6:]))}
		kl, n := binary.Uvarint(b[entryHeader:])
		k := entryHeader + n
		e.Key = b[k : k+int(kl) : k+int(kl)]
		if e.Event == EventFlush {
			e.Key = nil
		}
		e.Payload = b[k+int(kl) : size : size]
		dst = append(dst, e)
		b = b[size:]
	}
	return dst
}

// record is the one point where the keyspace notes a change of a key's
// state: ev happened to key, whose record (for EventPut, the new one) is
// rec. The caller holds the lock; nothing here blocks.
func (sh *Shard) record(ev Event, key []byte, r ref) {
	if ev == EventPut {
		sh.markDirty(r)
	} else {
		sh.changes.Add(1)
		if sh.track {
			sh.deleted.push(key)
		}
	}
	// A subscriber holds each state with its absolute expiry and drops
	// it when that passes, as the keyspace does: an expiry is no news to
	// it, and streaming them would double the entries of a workload of
	// short-lived keys.
	if sh.feed.subs == 0 || ev == EventExpire {
		return
	}
	if ev != EventPut {
		sh.feed.add(ev, 0, 0, key, nil)
		return
	}
	rec := sh.slabs.get(r)
	exp := recExp(rec)
	sh.feed.add(EventPut, engine.Kind(rec[0]&kindMask), exp, key, sh.encoded(rec, exp))
}

// encoded returns the compact encoding of record rec's state: its payload,
// or its box encoded into the shard's payload scratch (valid until the
// next use of it).
func (sh *Shard) encoded(rec []byte, exp int64) []byte {
	_, payload := recSplit(rec)
	if rec[0]&flagBoxed == 0 {
		return payload
	}
	sh.pbuf = sh.boxes[boxIndex(payload)].AppendCompact(sh.pbuf[:0], exp)
	return sh.pbuf
}

// recordFlush notes that every key of the shard is about to go (Clear).
func (sh *Shard) recordFlush() {
	n := sh.idx.n
	sh.changes.Add(int64(n))
	if sh.track {
		sh.each(minInt64, func(it Item) bool {
			sh.deleted.push(it.Key)
			return true
		})
	}
	if sh.feed.subs > 0 {
		sh.feed.add(EventFlush, 0, 0, nil, nil)
	}
}

// Feed is one subscriber's position in every shard's stream. Its methods
// are safe for concurrent use on distinct shards.
type Feed struct {
	s      *Store
	pos    []uint64 // per shard: the next byte to read
	closed sync.Once
}

// Subscribe starts a subscriber at the current end of every shard's
// stream. A subscriber that needs the state from before takes a Snapshot
// of each shard first. The caller must Close it: while any subscriber is
// open, every change is also written to the shards' rings (each
// Options.FeedBytes).
func (s *Store) Subscribe() *Feed {
	f := &Feed{s: s, pos: make([]uint64, len(s.shards))}
	for i := range s.shards {
		sh := &s.shards[i]
		sh.Lock()
		if sh.feed.subs == 0 {
			// The changes made while nobody subscribed are in no ring:
			// a position from before is not resumable (SubscribeAt), not
			// even the last one, so the stream skips a byte.
			sh.feed.buf = make([]byte, s.FeedBytes())
			sh.feed.head++
			sh.feed.tail = sh.feed.head
		}
		sh.feed.subs++
		f.pos[i] = sh.feed.head
		sh.Unlock()
	}
	return f
}

// Close ends the subscription; the last one frees the rings.
func (f *Feed) Close() {
	f.closed.Do(func() {
		for i := range f.s.shards {
			sh := &f.s.shards[i]
			sh.Lock()
			if sh.feed.subs--; sh.feed.subs == 0 {
				sh.feed.buf = nil
			}
			sh.Unlock()
		}
	})
}

// Read appends to dst the changes of shard i since the last Read or
// Snapshot of it, in the order they happened, copying their bytes into buf
// (returned grown: the entries alias it). The shard is locked only to copy
// the bytes. A subscriber the ring has moved past gets ErrBehind, and
// nothing else, until it takes a Snapshot.
func (f *Feed) Read(i int, dst []Entry, buf []byte) ([]Entry, []byte, error) {
	sh := &f.s.shards[i]
	sh.Lock()
	r := &sh.feed
	if f.pos[i] < r.tail {
		sh.Unlock()
		return dst, buf, ErrBehind
	}
	start := len(buf)
	buf = r.read(buf, f.pos[i], r.head)
	f.pos[i] = r.head
	sh.Unlock()
	return parseEntries(dst, buf[start:]), buf, nil
}

// Snapshot appends to dst every live key of shard i at now as an EventPut
// entry (bytes copied into buf, returned grown), and moves the
// subscriber's position in shard i to the end of its stream: applying the
// snapshot in place of everything the subscriber held of the shard, then
// what Read returns from there on, reproduces the shard. The shard is
// locked while its keys are copied.
func (f *Feed) Snapshot(i int, now int64, dst []Entry, buf []byte) ([]Entry, []byte) {
	start := len(buf)
	buf, _ = f.SnapshotRaw(i, now, buf)
	return parseEntries(dst, buf[start:]), buf
}

// entryHead appends the header of an entry in the ring's layout to b.
func entryHead(b []byte, ev Event, kind engine.Kind, exp int64, keyLen, payloadLen int) []byte {
	start := len(b)
	b = append(b, 0, 0, 0, 0, byte(ev), byte(kind))
	b = binary.LittleEndian.AppendUint64(b, uint64(exp))
	b = binary.AppendUvarint(b, uint64(keyLen))
	binary.LittleEndian.PutUint32(b[start:], uint32(len(b)-start-4+keyLen+payloadLen))
	return b
}
