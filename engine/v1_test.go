package engine

import "encoding/binary"

// appendV1 appends the version-1 encoding of s (the frozen format DecodeV1
// reads) to b. Nothing in the server writes version 1 any more; the tests
// use this writer to make inputs for DecodeV1 and as an exact fingerprint
// of a state (it covers every field that affects behaviour, LOG entries
// included). TestGoldenEncodings checks it still writes the golden bytes.
func appendV1(s State, b []byte) ([]byte, error) {
	switch s := s.(type) {
	case *GCRA:
		return appendBucketWords(b, bucketVersion, s.p.MaxBurst, s.p.Count, int64(s.p.Period),
			s.b.last, int64(s.b.s.hi), int64(s.b.s.lo)), nil
	case *TokenBucket:
		return appendBucketWords(b, bucketVersion, s.p.Capacity, s.p.Rate, int64(s.p.Period),
			s.b.last, int64(s.b.s.hi), int64(s.b.s.lo)), nil
	case *LeakyBucket:
		return appendBucketWords(b, bucketVersion, s.p.Capacity, s.p.Rate, int64(s.p.Period),
			s.b.last, int64(s.b.s.hi), int64(s.b.s.lo)), nil
	case *Window:
		return appendWindowV1(s, b), nil
	case *Concurrency:
		return appendConcurrencyV1(s, b), nil
	}
	panic("appendV1: unknown state type")
}

// appendBucketWords writes the version-1 bucket layout (see v1.go).
func appendBucketWords(b []byte, version byte, words ...int64) []byte {
	b = append(b, version)
	for _, w := range words {
		b = binary.LittleEndian.AppendUint64(b, uint64(w))
	}
	return b
}

// appendWindowV1 appends the version-1 encoding of the window, with the
// parameters it was last admitted with, to b.
func appendWindowV1(s *Window, b []byte) []byte {
	b = append(b, windowVersion, byte(s.mode))
	if s.mode == 0 {
		return b
	}
	le := binary.LittleEndian
	b = le.AppendUint64(b, uint64(s.limit))
	b = le.AppendUint64(b, uint64(s.window))
	b = le.AppendUint64(b, uint64(s.last))
	if s.mode != WindowLog {
		b = le.AppendUint64(b, uint64(s.start))
		b = le.AppendUint64(b, uint64(s.cur))
		return le.AppendUint64(b, uint64(s.prev))
	}
	l := s.log
	if l == nil {
		l = &winLog{}
	}
	b = le.AppendUint64(b, l.base)
	b = le.AppendUint32(b, uint32(l.n))
	for i := 0; i < l.n; i++ {
		e := l.at(i)
		b = le.AppendUint64(b, uint64(e.t))
		b = le.AppendUint64(b, e.cum)
	}
	return b
}

// appendConcurrencyV1 appends the version-1 encoding of the leases, with
// the parameters last acquired with, to b.
func appendConcurrencyV1(s *Concurrency, b []byte) []byte {
	le := binary.LittleEndian
	b = append(b, concurrencyVersion)
	b = le.AppendUint64(b, uint64(s.limit))
	b = le.AppendUint64(b, uint64(s.lease))
	b = le.AppendUint64(b, uint64(s.last))
	b = le.AppendUint32(b, uint32(len(s.leases)))
	for _, l := range s.leases {
		b = le.AppendUint64(b, uint64(l.expiry))
		b = le.AppendUint64(b, uint64(l.units))
		b = le.AppendUint32(b, uint32(l.idLen))
		b = append(b, l.idBytes()...)
	}
	return b
}
