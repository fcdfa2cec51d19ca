package persist

import (
	"encoding/binary"
	"fmt"
)

// The log: PebbleStore appends each Apply as chunks, values that hold many
// records each under sequential keys, instead of one Pebble key per limiter
// key. Writing in key order at the end of the keyspace lets each Sync
// ingest one table that overlaps no other (pebble.go), and one value per
// few hundred records spreads Pebble's per-key work over them. A rewrite (Store.BeginRewrite, CommitRewrite) writes every
// live key again and then drops the chunks before it, as Redis rewrites its
// append-only file; see the package documentation for the layout.

const (
	// FormatLog is the first byte of a chunk value: a sequence of records.
	FormatLog = 3

	prefixChunk = 'L' // log chunks: 'L' | sequence number (8 bytes, big-endian)
	prefixMeta  = 'M' // the store's metadata, one key (metaKey)

	opPut    = 1
	opDelete = 2

	// chunkTarget is the size at which Apply starts a new chunk: big
	// enough to spread Pebble's per-key cost, small enough that one
	// corrupt chunk loses few records.
	chunkTarget = 64 << 10
)

var (
	chunkLower = []byte{prefixChunk}
	chunkUpper = []byte{prefixChunk + 1}
	metaKey    = []byte{prefixMeta, 'b', 'a', 's', 'e'}
)

func chunkKey(seq uint64) []byte {
	k := make([]byte, 9)
	k[0] = prefixChunk
	binary.BigEndian.PutUint64(k[1:], seq)
	return k
}

// chunkSeq returns the sequence number of a chunk key.
func chunkSeq(key []byte) (uint64, bool) {
	if len(key) != 9 || key[0] != prefixChunk {
		return 0, false
	}
	return binary.BigEndian.Uint64(key[1:]), true
}

// meta is the store's metadata: the chunks [Base, BaseEnd) are the last
// committed rewrite, which wrote Keys keys, and Load replays from Base.
type meta struct {
	Base, BaseEnd, Keys uint64
}

func (m meta) encode() []byte {
	b := make([]byte, 1, 25)
	b[0] = 1 // metadata version
	b = binary.BigEndian.AppendUint64(b, m.Base)
	b = binary.BigEndian.AppendUint64(b, m.BaseEnd)
	return binary.BigEndian.AppendUint64(b, m.Keys)
}

func decodeMeta(b []byte) (meta, error) {
	if len(b) != 25 || b[0] != 1 {
		return meta{}, fmt.Errorf("%w: store metadata %x is not version 1 (written by a newer rlserver?)", ErrCorrupt, b)
	}
	return meta{Base: binary.BigEndian.Uint64(b[1:]), BaseEnd: binary.BigEndian.Uint64(b[9:]), Keys: binary.BigEndian.Uint64(b[17:])}, nil
}

// appendPut appends a put record to a chunk.
func appendPut(dst []byte, r *Record) []byte {
	dst = append(dst, opPut)
	dst = binary.AppendUvarint(dst, uint64(len(r.Key)))
	dst = appendHeader(append(dst, r.Key...), r)
	dst = binary.AppendUvarint(dst, uint64(len(r.Payload)))
	return append(dst, r.Payload...)
}

// appendDelete appends a deletion record to a chunk.
func appendDelete(dst, key []byte) []byte {
	dst = append(dst, opDelete)
	dst = binary.AppendUvarint(dst, uint64(len(key)))
	return append(dst, key...)
}

// chunkReader walks the records of one chunk value.
type chunkReader struct {
	b   []byte
	off int
}

func newChunkReader(v []byte) (chunkReader, error) {
	if len(v) == 0 || v[0] != FormatLog {
		return chunkReader{}, fmt.Errorf("%w: chunk format %x, want %d (written by a newer rlserver?)", ErrCorrupt, v[:min(len(v), 1)], FormatLog)
	}
	return chunkReader{b: v, off: 1}, nil
}

// next decodes the next record, aliasing the chunk. ok is false at the
// end; an error (wrapping ErrCorrupt) means the rest of the chunk is
// unreadable.
func (c *chunkReader) next() (r Record, ok bool, err error) {
	if c.off >= len(c.b) {
		return r, false, nil
	}
	bad := func(what string) (Record, bool, error) {
		return Record{}, false, fmt.Errorf("%w: chunk record at offset %d: %s", ErrCorrupt, c.off, what)
	}
	b := c.b[c.off:]
	op := b[0]
	kl, n := binary.Uvarint(b[1:])
	if n <= 0 || kl > uint64(len(b)-1-n) {
		return bad("bad key length")
	}
	p := 1 + n
	r.Key = b[p : p+int(kl) : p+int(kl)]
	p += int(kl)
	switch op {
	case opDelete:
		r.Deleted = true
	case opPut:
		if len(b)-p < headerLen {
			return bad("truncated header")
		}
		r.Version, r.Kind = b[p], b[p+1]
		r.ExpireAt = int64(binary.BigEndian.Uint64(b[p+2:]))
		p += headerLen
		pl, n := binary.Uvarint(b[p:])
		if n <= 0 || pl > uint64(len(b)-p-n) {
			return bad("bad payload length")
		}
		p += n
		r.Payload = b[p : p+int(pl) : p+int(pl)]
		p += int(pl)
		if r.Kind == 0 || (r.Version != FormatV1 && r.Version != FormatV2) {
			c.off += p
			return r, true, fmt.Errorf("%w: key %q: kind %d, format version %d", ErrCorrupt, r.Key, r.Kind, r.Version)
		}
	default:
		return bad(fmt.Sprintf("unknown op %d", op))
	}
	c.off += p
	return r, true, nil
}

// loadChunk replays one chunk into fn through loadStep. A record that does
// not decode is skipped alone; a chunk that stops parsing loses the rest,
// counted as one skipped record.
func loadChunk(st *LoadStats, now int64, seq uint64, v []byte, fn func(Record) error) error {
	c, err := newChunkReader(v)
	for err == nil {
		r, ok, rerr := c.next()
		if !ok {
			err = rerr
			break
		}
		if err := loadStep(st, now, r, rerr, fn); err != nil {
			return err
		}
	}
	if err != nil {
		st.skip(fmt.Errorf("log chunk %d: %w", seq, err))
	}
	return nil
}
