package shard

import (
	"crypto/rand"
	"encoding/binary"
	"math/bits"
	"unsafe"
)

// hasher hashes keys under a seed: a multiply-mix hash (the wyhash family)
// instead of hash/maphash, whose seeds cannot be set, so that a test that
// prints its seed reproduces the same shards, index slots and SCAN order.
// A server draws its seed at random (Options.Seed 0), so clients cannot
// aim keys at one shard or one probe run.
type hasher struct{ seed uint64 }

const (
	hk0 = 0xa0761d6478bd642f
	hk1 = 0xe7037ed1a0b428db
	hk2 = 0x8ebc6af09c88c6e3
)

// randomSeed returns a non-zero seed from crypto/rand.
func randomSeed() uint64 {
	var b [8]byte
	for {
		rand.Read(b[:])
		if s := binary.LittleEndian.Uint64(b[:]); s != 0 {
			return s
		}
	}
}

func mix(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

func le64(p []byte) uint64 { return binary.LittleEndian.Uint64(p) }
func le32(p []byte) uint64 { return uint64(binary.LittleEndian.Uint32(p)) }

// bytes hashes p.
func (x hasher) bytes(p []byte) uint64 {
	n := len(p)
	s := x.seed ^ hk0
	var a, b uint64
	switch {
	case n == 0:
	case n < 4:
		a = uint64(p[0])<<16 | uint64(p[n>>1])<<8 | uint64(p[n-1])
	case n <= 8:
		a, b = le32(p), le32(p[n-4:])
	case n <= 16:
		a, b = le64(p), le64(p[n-8:])
	default:
		q := p
		for len(q) > 16 {
			s = mix(le64(q)^hk1, le64(q[8:])^s)
			q = q[16:]
		}
		a, b = le64(p[n-16:]), le64(p[n-8:])
	}
	return mix(hk2^uint64(n), mix(a^hk1, b^s))
}

// string hashes s as bytes would hash its bytes.
func (x hasher) string(s string) uint64 {
	return x.bytes(unsafe.Slice(unsafe.StringData(s), len(s)))
}
