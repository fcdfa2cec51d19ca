package script

import (
	"encoding/binary"
	"errors"
	"hash/crc64"
)

// FUNCTION DUMP's payload, as Redis 7.0 writes it (functionDumpCommand):
// for each library the RDB opcode FUNCTION2 and the library's code as an
// RDB string (LZF-compressed when that saves room, as rdbSaveRawString
// does), then the RDB version (2 bytes, little-endian) and the CRC-64
// (Jones, little-endian) of everything before it. Redis restores it, and a
// payload of Redis's restores here.

const (
	rdbOpFunctionPreGA = 246 // RDB_OPCODE_FUNCTION, Redis 7.0's release candidates
	rdbOpFunction2     = 245 // RDB_OPCODE_FUNCTION2
	// rdbVersion is the version DUMP writes: Redis 7.0's, so that 7.0
	// restores the payload.
	rdbVersion = 10
	// rdbMaxVersion is the newest version RESTORE accepts (Redis 7.4's
	// 12): the function format has not changed since 7.0.
	rdbMaxVersion = 12
)

// crcTable is Redis's CRC-64 (Jones polynomial, reflected).
var crcTable = crc64.MakeTable(0x95ac9329ac4bc9b5)

// redisCRC64 is Redis's crc64(0, b): initial value 0, no final xor (Go's
// crc64 inverts both, hence the complements).
func redisCRC64(b []byte) uint64 { return ^crc64.Update(^uint64(0), crcTable, b) }

// appendDump appends the payload of libraries' codes.
func appendDump(dst []byte, codes [][]byte) []byte {
	start := len(dst)
	for _, code := range codes {
		dst = append(dst, rdbOpFunction2)
		dst = appendRDBString(dst, code)
	}
	dst = binary.LittleEndian.AppendUint16(dst, rdbVersion)
	return binary.LittleEndian.AppendUint64(dst, redisCRC64(dst[start:]))
}

// errBadPayload is RESTORE's error for a payload whose footer is wrong.
var errBadPayload = errors.New("ERR DUMP payload version or checksum are wrong")

// parseDump returns the library codes of a payload, or the error RESTORE
// answers, as Redis words it.
func parseDump(p []byte) ([][]byte, error) {
	if len(p) < 10 {
		return nil, errBadPayload
	}
	footer := p[len(p)-10:]
	if binary.LittleEndian.Uint16(footer) > rdbMaxVersion || binary.LittleEndian.Uint64(footer[2:]) != redisCRC64(p[:len(p)-8]) {
		return nil, errBadPayload
	}
	var codes [][]byte
	// As Redis: read until the last 10 bytes (the footer), a string
	// being read from the whole payload.
	for pos := 0; len(p)-pos > 10; {
		var code []byte
		var n int
		switch p[pos] {
		case rdbOpFunction2:
			var ok bool
			if code, n, ok = readRDBString(p[pos+1:]); !ok {
				return nil, errors.New("ERR Failed loading library payload")
			}
		case rdbOpFunctionPreGA:
			var err error
			if code, n, err = readPreGA(p[pos+1:]); err != nil {
				return nil, err
			}
		default:
			return nil, errors.New("ERR given type is not a function")
		}
		codes = append(codes, code)
		pos += 1 + n
	}
	return codes, nil
}

// readPreGA reads a library in the format of Redis 7.0's release
// candidates (its name, engine, an optional description, then its code
// without the shebang line) and returns its code with the line made from
// them, as Redis's rdbFunctionLoad does.
func readPreGA(b []byte) (code []byte, n int, err error) {
	name, n1, ok := readRDBString(b)
	if !ok {
		return nil, 0, errors.New("ERR Failed loading library name")
	}
	engine, n2, ok := readRDBString(b[n1:])
	if !ok {
		return nil, 0, errors.New("ERR Failed loading engine name")
	}
	n = n1 + n2
	hasDesc, n3, _, ok := readRDBLen(b[n:])
	if !ok {
		return nil, 0, errors.New("ERR Failed loading library description indicator")
	}
	n += n3
	if hasDesc != 0 {
		_, n4, ok := readRDBString(b[n:])
		if !ok {
			return nil, 0, errors.New("ERR Failed loading library description")
		}
		n += n4
	}
	blob, n5, ok := readRDBString(b[n:])
	if !ok {
		return nil, 0, errors.New("ERR Failed loading library blob")
	}
	code = append(append(append(append(append([]byte("#!"), cString(engine)...), " name="...), cString(name)...), '\n'), cString(blob)...)
	return code, n + n5, nil
}

// appendRDBLen appends an RDB length (rdbSaveLen).
func appendRDBLen(dst []byte, n uint64) []byte {
	switch {
	case n < 1<<6:
		return append(dst, byte(n))
	case n < 1<<14:
		return append(dst, byte(n>>8)|0x40, byte(n))
	case n <= 1<<32-1:
		return binary.BigEndian.AppendUint32(append(dst, 0x80), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(dst, 0x81), n)
}

// readRDBLen reads an RDB length; enc reports a special encoding (the
// length is then its type).
func readRDBLen(b []byte) (n uint64, size int, enc, ok bool) {
	if len(b) == 0 {
		return 0, 0, false, false
	}
	switch b[0] >> 6 {
	case 0:
		return uint64(b[0] & 0x3f), 1, false, true
	case 1:
		if len(b) < 2 {
			return 0, 0, false, false
		}
		return uint64(b[0]&0x3f)<<8 | uint64(b[1]), 2, false, true
	case 3:
		return uint64(b[0] & 0x3f), 1, true, true
	}
	switch b[0] {
	case 0x80:
		if len(b) < 5 {
			return 0, 0, false, false
		}
		return uint64(binary.BigEndian.Uint32(b[1:])), 5, false, true
	case 0x81:
		if len(b) < 9 {
			return 0, 0, false, false
		}
		return binary.BigEndian.Uint64(b[1:]), 9, false, true
	}
	return 0, 0, false, false
}

// appendRDBString appends s as rdbSaveRawString does (rdbcompression on):
// LZF-compressed when longer than 20 bytes and compressible by at least 4,
// verbatim otherwise. (Integer encoding, which Redis tries first for
// strings of up to 11 bytes, never applies to a library: its code starts
// with "#!".)
func appendRDBString(dst, s []byte) []byte {
	if len(s) > 20 {
		out := make([]byte, len(s)-4)
		if n := lzfCompress(s, out); n > 0 {
			dst = append(dst, 0xc3) // RDB_ENCVAL<<6 | RDB_ENC_LZF
			dst = appendRDBLen(dst, uint64(n))
			dst = appendRDBLen(dst, uint64(len(s)))
			return append(dst, out[:n]...)
		}
	}
	return append(appendRDBLen(dst, uint64(len(s))), s...)
}

// readRDBString reads an RDB string of any encoding (rdbGenericLoadStringObject)
// and returns it and the bytes it took.
func readRDBString(b []byte) ([]byte, int, bool) {
	n, size, enc, ok := readRDBLen(b)
	if !ok {
		return nil, 0, false
	}
	b = b[size:]
	if !enc {
		if n > uint64(len(b)) {
			return nil, 0, false
		}
		return b[:n], size + int(n), true
	}
	switch n {
	case 0: // RDB_ENC_INT8
		if len(b) < 1 {
			return nil, 0, false
		}
		return itoa(int64(int8(b[0]))), size + 1, true
	case 1: // RDB_ENC_INT16
		if len(b) < 2 {
			return nil, 0, false
		}
		return itoa(int64(int16(binary.LittleEndian.Uint16(b)))), size + 2, true
	case 2: // RDB_ENC_INT32
		if len(b) < 4 {
			return nil, 0, false
		}
		return itoa(int64(int32(binary.LittleEndian.Uint32(b)))), size + 4, true
	case 3: // RDB_ENC_LZF
		clen, s1, e1, ok1 := readRDBLen(b)
		if !ok1 || e1 {
			return nil, 0, false
		}
		ulen, s2, e2, ok2 := readRDBLen(b[s1:])
		if !ok2 || e2 || clen > uint64(len(b)-s1-s2) || ulen == 0 || ulen > lzfMaxRatio*clen {
			return nil, 0, false
		}
		in := b[s1+s2 : s1+s2+int(clen)]
		out := make([]byte, ulen)
		if !lzfDecompress(in, out) {
			return nil, 0, false
		}
		return out, size + s1 + s2 + int(clen), true
	}
	return nil, 0, false
}

// lzfMaxRatio bounds what LZF makes of a byte (a 3-byte back reference
// copies 264): a length beyond is refused before it is allocated.
const lzfMaxRatio = 88

func itoa(n int64) []byte {
	var b [20]byte
	i := len(b)
	u := uint64(n)
	if n < 0 {
		u = uint64(-n)
	}
	for {
		i--
		b[i] = byte('0' + u%10)
		u /= 10
		if u == 0 {
			break
		}
	}
	if n < 0 {
		i--
		b[i] = '-'
	}
	return append([]byte(nil), b[i:]...)
}

// LZF, as Redis 7.0's lzf_c.c and lzf_d.c (liblzf 3.6, HLOG 16,
// VERY_FAST): the compressor is ported step for step, so that it makes
// Redis's bytes. Redis leaves its hash table uninitialised (INIT_HTAB 0):
// here it starts empty, which is what Redis's amounts to unless a stale
// entry happens to point at a match, when Redis's bytes differ (and still
// decompress to the same).
const (
	lzfHLog   = 16
	lzfHSize  = 1 << lzfHLog
	lzfMaxLit = 1 << 5
	lzfMaxOff = 1 << 13
	lzfMaxRef = 1<<8 + 1<<3
)

func lzfIdx(h uint32) uint32 { return ((h >> (3*8 - lzfHLog)) - h*5) & (lzfHSize - 1) }

// lzfCompress compresses in into out and returns the compressed length,
// or 0 if it does not fit in out.
func lzfCompress(in, out []byte) int {
	inLen, outLen := len(in), len(out)
	if inLen < 3 || outLen == 0 {
		return 0 // Redis compresses only strings of more than 20 bytes
	}
	// Positions of the last occurrence of each hash, plus one (0: none).
	htab := make([]int32, lzfHSize)
	ip, op, lit := 0, 1, 0 // op starts past the first literal run's header
	// literal copies in[ip] into the open literal run, closing the run
	// once it is as long as a run may be.
	literal := func() {
		lit++
		out[op] = in[ip]
		op++
		ip++
		if lit == lzfMaxLit {
			out[op-lit-1] = byte(lit - 1)
			lit = 0
			op++
		}
	}
	hval := uint32(in[0])<<8 | uint32(in[1])
	for ip < inLen-2 {
		hval = hval<<8 | uint32(in[ip+2])
		slot := lzfIdx(hval)
		ref := int(htab[slot]) - 1
		htab[slot] = int32(ip + 1)
		off := ip - ref - 1
		if ref > 0 && off < lzfMaxOff &&
			in[ref] == in[ip] && in[ref+1] == in[ip+1] && in[ref+2] == in[ip+2] {
			length := 2
			maxlen := inLen - ip - length
			if maxlen > lzfMaxRef {
				maxlen = lzfMaxRef
			}
			undo := 0
			if lit == 0 {
				undo = 1
			}
			if op-undo+3+1 >= outLen {
				return 0
			}
			out[op-lit-1] = byte(lit - 1) // stop run
			op -= undo                    // undo run if length is zero
			// As lzf_c.c: 16 steps unrolled (which may pass maxlen by
			// two) when maxlen > 16, then one at a time up to maxlen.
			mismatch := false
			if maxlen > 16 {
				for range 16 {
					length++
					if in[ref+length] != in[ip+length] {
						mismatch = true
						break
					}
				}
			}
			for !mismatch {
				length++
				mismatch = length >= maxlen || in[ref+length] != in[ip+length]
			}
			length -= 2 // now the octets matched, less one
			ip++
			if length < 7 {
				out[op] = byte(off>>8 + length<<5)
				op++
			} else {
				out[op] = byte(off>>8 + 7<<5)
				out[op+1] = byte(length - 7)
				op += 2
			}
			out[op] = byte(off)
			op++
			lit = 0
			op++ // start run
			ip += length + 1
			if ip >= inLen-2 {
				break
			}
			ip -= 2
			hval = uint32(in[ip])<<8 | uint32(in[ip+1])
			hval = hval<<8 | uint32(in[ip+2])
			htab[lzfIdx(hval)] = int32(ip + 1)
			ip++
			hval = hval<<8 | uint32(in[ip+2])
			htab[lzfIdx(hval)] = int32(ip + 1)
			ip++
			continue
		}
		if op >= outLen {
			return 0
		}
		literal()
	}
	if op+3 > outLen {
		return 0
	}
	for ip < inLen {
		literal()
	}
	out[op-lit-1] = byte(lit - 1) // end run
	if lit == 0 {
		op--
	}
	return op
}

// lzfDecompress decompresses in into out, which must be filled exactly;
// it reports false for input that does not decode so.
func lzfDecompress(in, out []byte) bool {
	ip, op := 0, 0
	for ip < len(in) {
		ctrl := int(in[ip])
		ip++
		if ctrl < 1<<5 { // a literal run of ctrl+1 bytes
			ctrl++
			if op+ctrl > len(out) || ip+ctrl > len(in) {
				return false
			}
			op += copy(out[op:], in[ip:ip+ctrl])
			ip += ctrl
			continue
		}
		length := ctrl >> 5
		ref := op - (ctrl&0x1f)<<8 - 1
		if ip >= len(in) {
			return false
		}
		if length == 7 {
			length += int(in[ip])
			ip++
			if ip >= len(in) {
				return false
			}
		}
		ref -= int(in[ip])
		ip++
		length += 2
		if op+length > len(out) || ref < 0 {
			return false
		}
		for i := 0; i < length; i++ { // byte by byte: the copy may overlap
			out[op] = out[ref]
			op++
			ref++
		}
	}
	return op == len(out)
}
