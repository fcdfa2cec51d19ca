package shard

import (
	"fmt"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/engine"
)

// Replication's side of the change feed: a primary sends each shard's
// stream as the raw bytes the ring holds (ReadRaw, SnapshotRaw), the
// positions in it being the replication offsets; a replica parses them
// (ParseEntries) and applies them (Apply).

// ReadRaw appends to buf the bytes of shard i's stream since the last read
// of it, whole entries as the ring holds them, and returns the position
// they end at (the subscriber's new position). It fails with ErrBehind as
// Read does.
func (f *Feed) ReadRaw(i int, buf []byte) ([]byte, uint64, error) {
	sh := &f.s.shards[i]
	sh.Lock()
	defer sh.Unlock()
	r := &sh.feed
	if f.pos[i] < r.tail {
		return buf, f.pos[i], ErrBehind
	}
	buf = r.read(buf, f.pos[i], r.head)
	f.pos[i] = r.head
	return buf, r.head, nil
}

// SnapshotRaw is Snapshot's raw form: it appends every live key of shard
// i as put entries to buf and returns the position the subscriber goes on
// from.
func (f *Feed) SnapshotRaw(i int, now int64, buf []byte) ([]byte, uint64) {
	sh := &f.s.shards[i]
	sh.Lock()
	defer sh.Unlock()
	sh.each(now, func(it Item) bool {
		payload := sh.encoded(sh.slabs.get(it.ref), it.ExpireAt)
		buf = append(entryHead(buf, EventPut, it.Kind, it.ExpireAt, len(it.Key), len(payload)), it.Key...)
		buf = append(buf, payload...)
		return true
	})
	f.pos[i] = sh.feed.head
	return buf, f.pos[i]
}

// SubscribeAt starts a subscriber at the given position of every shard's
// stream, as a replica that held the stream up to there resumes. It
// returns nil when a position is not in a ring any more (or not yet):
// the replica must then take a full copy.
func (s *Store) SubscribeAt(pos []uint64) *Feed {
	if len(pos) != len(s.shards) {
		return nil
	}
	f := s.Subscribe()
	for i := range s.shards {
		sh := &s.shards[i]
		sh.Lock()
		ok := pos[i] >= sh.feed.tail && pos[i] <= sh.feed.head
		sh.Unlock()
		if !ok {
			f.Close()
			return nil
		}
		f.pos[i] = pos[i]
	}
	return f
}

// FeedBytes returns the size of each shard's change stream ring while
// someone subscribes (a power of two, at least Options.FeedBytes).
func (s *Store) FeedBytes() int {
	size := 1 << 10
	for size < s.feedBytes {
		size <<= 1
	}
	return size
}

// Heads appends every shard's stream position (the bytes it ever held) to
// dst: what WAIT waits for its replicas to have. It takes no lock: each
// shard's position is the one its last Unlock published.
func (s *Store) Heads(dst []uint64) []uint64 {
	for i := range s.shards {
		dst = append(dst, s.shards[i].head.Load())
	}
	return dst
}

// Head returns shard i's stream position, as Heads does.
func (s *Store) Head(i int) uint64 { return s.shards[i].head.Load() }

// ParseEntries appends the entries of raw stream bytes to dst, checking
// their framing (they come from the network): a torn or malformed entry
// is an error.
func ParseEntries(dst []Entry, b []byte) ([]Entry, error) {
	for len(b) > 0 {
		if len(b) < entryHeader {
			return dst, fmt.Errorf("shard: stream entry of %d bytes, under its header's %d", len(b), entryHeader)
		}
		size := 4 + int(uint32(b[0])|uint32(b[1])<<8|uint32(b[2])<<16|uint32(b[3])<<24)
		if size < entryHeader+1 || size > len(b) {
			return dst, fmt.Errorf("shard: stream entry of %d bytes does not fit the %d received", size, len(b))
		}
		ev := Event(b[4])
		if ev < EventPut || ev > EventFlush {
			return dst, fmt.Errorf("shard: stream entry with unknown event %d", b[4])
		}
		e := b[:size]
		var kl, n uint64
		for shift := 0; ; shift += 7 {
			if entryHeader+int(n) >= size || shift > 63 {
				return dst, fmt.Errorf("shard: stream entry with a bad key length")
			}
			c := e[entryHeader+n]
			n++
			kl |= uint64(c&0x7f) << shift
			if c < 0x80 {
				break
			}
		}
		if kl > uint64(size-entryHeader-int(n)) {
			return dst, fmt.Errorf("shard: stream entry's key overruns it")
		}
		dst = parseEntries(dst, e)
		b = b[size:]
	}
	return dst, nil
}

// apply writes a change a replica received from its primary: a put
// stores the state (its payload must decode, else nothing changes and the
// error says why), any other event removes the key (a flush removes the
// keys of the primary's shard, see ApplyFlush). The change is recorded as
// the replica's own (persistence keeps it). The caller holds the lock of
// the key's shard; a replica runs no limiter decision, so nothing else
// writes its keys.
func (sh *Shard) apply(e Entry) error {
	h := sh.hash.bytes(e.Key)
	f := sh.lookup(e.Key, h)
	sh.now = sh.clock()
	if e.Event != EventPut {
		if f.OK {
			sh.removeAt(f.pos, f.ref, EventDelete)
		}
		return nil
	}
	var st engine.State
	if e.Kind != 0 {
		st = sh.sc.For(e.Kind, e.Payload)
	}
	if st == nil {
		return fmt.Errorf("shard: stream entry of unknown kind %d", e.Kind)
	}
	if err := st.DecodeCompact(e.Payload, e.ExpireAt); err != nil {
		return fmt.Errorf("shard: %v state of key %q does not decode: %w", e.Kind, e.Key, err)
	}
	if sh.put(f, e.Key, h, st, e.ExpireAt, true) {
		sh.sc.Forget(st)
	}
	sh.fitBudget()
	return nil
}

// ApplyFlush removes, from every shard, the keys that lived in shard i of
// a primary with n shards (n a power of two, both in cluster mode, where
// a key's shard is its slot mod the shard count). The caller holds no
// lock.
func (s *Store) ApplyFlush(i, n int) {
	for j := range s.shards {
		sh := &s.shards[j]
		sh.Lock()
		if n == len(s.shards) {
			if j == i {
				sh.clear()
			}
			sh.Unlock()
			continue
		}
		var gone [][]byte
		sh.each(minInt64, func(it Item) bool {
			if cluster.Slot(it.Key)&(n-1) == i {
				gone = append(gone, append([]byte(nil), it.Key...))
			}
			return true
		})
		for _, k := range gone {
			h := sh.hash.bytes(k)
			if f := sh.lookup(k, h); f.OK {
				sh.removeAt(f.pos, f.ref, EventDelete)
			}
		}
		sh.Unlock()
	}
}

// ClearAll removes every key (a replica's full resynchronisation begins).
func (s *Store) ClearAll() {
	for i := range s.shards {
		sh := &s.shards[i]
		sh.Lock()
		sh.clear()
		sh.Unlock()
	}
}
