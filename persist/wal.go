package persist

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cockroachdb/pebble/v2/record"
)

// walTail is how one write-ahead log file ends, read before Pebble opens
// the store: Pebble replays a log up to its first damaged record and, in
// the newest log, drops an incomplete last record without a word.
type walTail struct {
	file    string
	batches int   // whole records (Pebble batches: one Apply each) before the end
	end     int64 // where they end
	torn    int64 // bytes of an incomplete record of this log after end (0: a clean end)
	after   int   // whole records found in later blocks: the damage is not at the end
	err     error // what stopped the reading, unless a clean end
}

// The chunk layout of Pebble's log records (record package): blocks of
// 32 KiB; a chunk header is checksum (4) | length (2) | encoding (1), then
// for the recyclable encodings the log number (4).
const (
	walBlockSize       = 32 << 10
	walLegacyHeader    = 7
	walRecyclableFirst = 5 // encodings 5-12 carry the log number
	walLastEncoding    = 12
)

// newLogReader calls record.NewReader with the log number in the type it
// wants (declared in a package of Pebble's own).
func newLogReader[N ~uint64](newReader func(io.Reader, N) *record.Reader, r io.Reader, num uint64) *record.Reader {
	return newReader(r, N(num))
}

// readWALTails reads every write-ahead log in dir.
func readWALTails(dir string) ([]walTail, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var tails []walTail
	for _, e := range ents {
		name := e.Name()
		num, err := strconv.ParseUint(strings.TrimSuffix(name, ".log"), 10, 64)
		if !strings.HasSuffix(name, ".log") || err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		tails = append(tails, readWALTail(name, num, data))
	}
	return tails, nil // ReadDir sorts by name: oldest log first
}

func readWALTail(name string, num uint64, data []byte) walTail {
	t := walTail{file: name}
	r := newLogReader(record.NewReader, bytes.NewReader(data), num)
	for {
		t.end = r.Offset()
		rec, err := r.Next()
		if err == nil {
			_, err = io.Copy(io.Discard, rec)
		}
		if errors.Is(err, io.EOF) {
			return t
		}
		if err != nil {
			t.err = err
			t.torn = tornBytes(data, t.end, uint32(num))
			t.after = recordsAfter(data, t.end, num)
			return t
		}
		t.batches++
	}
}

// recordsAfter counts the whole records of log num that begin in the
// first block after off's that holds any: Pebble stops its replay at a
// damaged record and, when it cannot tell damage from an incomplete last
// write, drops them too.
func recordsAfter(data []byte, off int64, num uint64) int {
	for b := off/walBlockSize + 1; b*walBlockSize < int64(len(data)); b++ {
		r := newLogReader(record.NewReader, bytes.NewReader(data[b*walBlockSize:]), num)
		n := 0
		for {
			rec, err := r.Next()
			if err == nil {
				_, err = io.Copy(io.Discard, rec)
			}
			if err != nil {
				break
			}
			n++
		}
		if n > 0 {
			return n
		}
	}
	return 0
}

// tornBytes returns how many bytes from off on belong to an incomplete
// record of log num: none when the log simply ends there (zeroes of a
// preallocated file, or chunks a recycled file kept from an older log).
func tornBytes(data []byte, off int64, num uint32) int64 {
	if rest := walBlockSize - off%walBlockSize; rest < walLegacyHeader {
		off += rest // the block's trailer: the next chunk starts a block
	}
	if off+walLegacyHeader > int64(len(data)) {
		return 0
	}
	h := data[off:]
	enc := h[6]
	switch {
	case enc == 0 || enc > walLastEncoding:
		return 0
	case enc >= walRecyclableFirst:
		if len(h) < walLegacyHeader+4 || uint32(h[7])|uint32(h[8])<<8|uint32(h[9])<<16|uint32(h[10])<<24 != num {
			return 0
		}
	}
	end := int64(len(bytes.TrimRight(data, "\x00")))
	return max(end-off, int64(walLegacyHeader))
}

// describe says, in one line, what a damaged log loses.
func (t walTail) describe() string {
	s := fmt.Sprintf("write-ahead log %s: %d whole batches, then %d bytes of a damaged or incomplete record at offset %d (%v)", t.file, t.batches, t.torn, t.end, t.err)
	if t.after > 0 {
		s += fmt.Sprintf(", then %d whole batches that replaying would drop", t.after)
	}
	return s
}
