package persist

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
)

// The flush record: a small checksummed file beside Pebble's, rewritten
// after each flush that reached the store, saying how far the log reached
// then (the next chunk number). Chunk numbers only grow (deletions, FLUSHALL
// and expiry append chunks; a rewrite starts after the last), so an open
// whose log ends before the record says has lost flushed data: a damaged
// manifest makes Pebble open an older version of the store, or an empty
// one, without an error.
//
//	"RLFR" | version (1 byte, 1) | next chunk (8 bytes, big-endian)
//	       | CRC-32C of the bytes before it (4 bytes, big-endian)
//
// It is replaced whole (a new file renamed over it), so a crash leaves the
// old record or the new one; the old one says less than the store holds,
// which passes.
const (
	flushRecordName = "RLSERVER-FLUSHED"
	flushRecordTmp  = flushRecordName + ".tmp"
	flushRecordLen  = 4 + 1 + 8 + 4
)

var flushRecordMagic = []byte("RLFR")

var crcTable = crc32.MakeTable(crc32.Castagnoli)

func encodeFlushRecord(next uint64) []byte {
	b := append(make([]byte, 0, flushRecordLen), flushRecordMagic...)
	b = append(b, 1)
	b = binary.BigEndian.AppendUint64(b, next)
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, crcTable))
}

// readFlushRecord reads dir's flush record: ok is false when there is
// none (a new store, or one an older release wrote). A record that is
// there but does not check is an error wrapping ErrDamaged.
func readFlushRecord(dir string) (next uint64, ok bool, err error) {
	path := filepath.Join(dir, flushRecordName)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	bad := func(why string) error {
		return fmt.Errorf("%w: its flush record (%s) is damaged (%s)", ErrDamaged, flushRecordName, why)
	}
	switch {
	case len(b) != flushRecordLen:
		return 0, false, bad(fmt.Sprintf("%d bytes, want %d", len(b), flushRecordLen))
	case binary.BigEndian.Uint32(b[flushRecordLen-4:]) != crc32.Checksum(b[:flushRecordLen-4], crcTable):
		return 0, false, bad("checksum mismatch")
	case string(b[:4]) != string(flushRecordMagic) || b[4] != 1:
		return 0, false, bad(fmt.Sprintf("header %x", b[:5]))
	}
	return binary.BigEndian.Uint64(b[5:]), true, nil
}

// writeFlushRecord replaces dir's flush record with one saying next: a
// new file, synced, renamed over the old one.
func writeFlushRecord(dir string, next uint64) error {
	tmp := filepath.Join(dir, flushRecordTmp)
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(encodeFlushRecord(next))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, flushRecordName))
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("writing the flush record: %w", err)
	}
	return nil
}
