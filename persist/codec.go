package persist

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The record format versions, the first byte of a stored value; see the
// package documentation. Both share the header; they differ in the
// payload's encoding.
const (
	// FormatV1: the payload is engine's frozen version-1 encoding
	// (engine.DecodeV1). Read, never written by the server.
	FormatV1 = 1
	// FormatV2: the payload is the state's compact encoding
	// (engine.State.AppendCompact) with ref the record's ExpireAt. Every
	// record the server writes is version 2.
	FormatV2 = 2
)

const (
	prefixRecord = 'k' // keyspace of limiter records
	headerLen    = 1 + 1 + 8
)

// recordKeyspace bounds iteration over the record keyspace: [k, l).
var (
	recordLower = []byte{prefixRecord}
	recordUpper = []byte{prefixRecord + 1}
)

func appendKey(dst, key []byte) []byte {
	return append(append(dst, prefixRecord), key...)
}

// appendHeader appends the fixed header of a record (version | kind |
// expire), the same in the per-key layout and in the log's puts.
func appendHeader(dst []byte, r *Record) []byte {
	dst = append(dst, r.Version, r.Kind)
	return binary.BigEndian.AppendUint64(dst, uint64(r.ExpireAt))
}

// appendValue appends r's value in the per-key layout: header | payload.
func appendValue(dst []byte, r *Record) []byte {
	return append(appendHeader(dst, r), r.Payload...)
}

func checkRecord(r *Record) error {
	if r.Kind == 0 {
		return fmt.Errorf("%w: key %q has kind 0", ErrInvalid, r.Key)
	}
	if r.Version != FormatV1 && r.Version != FormatV2 {
		return fmt.Errorf("%w: key %q has format version %d", ErrInvalid, r.Key, r.Version)
	}
	return nil
}

// decodeRecord decodes a stored key/value pair. The Record aliases key and
// value. Errors wrap ErrCorrupt.
func decodeRecord(key, value []byte) (Record, error) {
	if len(key) == 0 || key[0] != prefixRecord {
		return Record{}, fmt.Errorf("%w: key %q is outside the record keyspace", ErrCorrupt, key)
	}
	r := Record{Key: key[1:]}
	switch {
	case len(value) == 0:
		return r, fmt.Errorf("%w: key %q: empty value", ErrCorrupt, r.Key)
	case value[0] != FormatV1 && value[0] != FormatV2:
		return r, fmt.Errorf("%w: key %q: unsupported format version %d (written by a newer rlserver?)", ErrCorrupt, r.Key, value[0])
	case len(value) < headerLen:
		return r, fmt.Errorf("%w: key %q: value is %d bytes, shorter than the %d-byte header", ErrCorrupt, r.Key, len(value), headerLen)
	case value[1] == 0:
		return r, fmt.Errorf("%w: key %q: kind 0", ErrCorrupt, r.Key)
	}
	r.Version = value[0]
	r.Kind = value[1]
	r.ExpireAt = int64(binary.BigEndian.Uint64(value[2:headerLen]))
	r.Payload = value[headerLen:]
	return r, nil
}

// expired reports whether a record expiring at expireAt is gone at now.
func expired(expireAt, now int64) bool { return expireAt != 0 && expireAt <= now }

// loadStep handles one stored record for Load: derr is its decoding
// error. It counts it in st and calls fn, with an expired put as a
// deletion, and returns fn's error unless that wraps ErrCorrupt.
func loadStep(st *LoadStats, now int64, r Record, derr error, fn func(Record) error) error {
	err := derr
	if err == nil {
		put := !r.Deleted
		if put && expired(r.ExpireAt, now) {
			st.Expired++
			r, put = Record{Key: r.Key, Deleted: true}, false
		}
		err = fn(r)
		if err == nil {
			if put {
				st.Loaded++
			}
			return nil
		}
		if !isCorrupt(err) {
			return err
		}
		err = fmt.Errorf("key %q: %w", r.Key, err)
	}
	st.skip(err)
	return nil
}

// skip counts a record that is skipped, and says why up to MaxLoadErrors
// times.
func (st *LoadStats) skip(why error) {
	st.Skipped++
	if len(st.Errors) < MaxLoadErrors {
		st.Errors = append(st.Errors, why)
	}
}

func isCorrupt(err error) bool { return errors.Is(err, ErrCorrupt) }
