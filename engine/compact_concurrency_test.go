package engine

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// sameConcurrency reports whether a and b hold the same state, the running
// total of units included (neither codec writes it).
func sameConcurrency(a, b *Concurrency) bool {
	return a.limit == b.limit && a.lease == b.lease && a.last == b.last && a.held == b.held &&
		slices.Equal(a.leases, b.leases)
}

// roundTripConc is roundTrip plus the fields the v1 fingerprint leaves out.
func roundTripConc(t testing.TB, s, recv *Concurrency, ref int64) []byte {
	t.Helper()
	enc := roundTrip(t, s, recv, ref)
	if !sameConcurrency(s, recv) {
		t.Fatalf("ref %d: %x decodes to %+v, want %+v", ref, enc, *recv, *s)
	}
	return enc
}

// leaseIDOf returns a random lease id: mostly MaxLeaseIDLen random bytes
// as the server makes, sometimes shorter (empty included), sometimes one
// byte too long (which Acquire must deny).
func leaseIDOf(r *rand.Rand) string {
	n := MaxLeaseIDLen
	switch r.IntN(8) {
	case 0:
		n = r.IntN(MaxLeaseIDLen)
	case 1:
		if r.IntN(4) == 0 {
			n = MaxLeaseIDLen + 1
		}
	}
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.IntN(256))
		if r.IntN(4) == 0 {
			b[i] = 0 // ids that differ only in trailing zeros must stay apart
		}
	}
	return string(b)
}

// TestConcurrencyCompactRoundTrip drives Concurrency through seeded random
// Acquire, Release and Renew calls (limit and lease changes, clock steps
// back, huge leases and limits, ids of every length) near 0, now and the
// end of int64 time, and after every step checks that the state
// round-trips exactly at its expiry, around it and at refs far from every
// instant, into a fresh receiver and into one that held other states, and
// that the copy decoded at the expiry answers the next call as the
// original does.
func TestConcurrencyCompactRoundTrip(t *testing.T) {
	for seed := range uint64(48) {
		r := rand.New(rand.NewPCG(seed, 0xcc))
		var s Concurrency
		dirty := new(Concurrency)
		now := startClock(r, seed)
		limit := compactNum(r, 50)
		if seed%6 == 5 {
			limit = compactNum(r, maxInt64) // units of any size
		}
		var ids []string
		ref := now
		for step := range 300 {
			if r.IntN(15) == 0 {
				limit = compactNum(r, max(limit, 50))
			}
			now = stepClock(r, now)
			lease := time.Duration(compactNum(r, int64(1e15)))
			if r.IntN(40) == 0 {
				lease = time.Duration(maxInt64)
			}
			old := "unknown"
			if len(ids) > 0 {
				old = ids[len(ids)-1-r.IntN(min(len(ids), 8))]
			}

			cp := new(Concurrency)
			roundTripConc(t, &s, cp, ref)
			var d, dc Decision
			switch op := r.IntN(10); {
			case op < 6:
				var n int64
				switch r.IntN(6) {
				case 0:
					n = 0
				case 1:
					n = limit
				case 2:
					n = 1 + r.Int64N(limit)
				default:
					n = 1 + r.Int64N(min(limit, 3))
				}
				id := leaseIDOf(r)
				d, dc = s.Take(now, ConcurrencyParams{Limit: limit, Lease: lease, ID: id}, n), cp.Take(now, ConcurrencyParams{Limit: limit, Lease: lease, ID: id}, n)
				if len(id) > MaxLeaseIDLen && (d != Decision{Limit: limit, RetryAfter: Never}) {
					t.Fatalf("seed %d step %d: Acquire with a %d-byte id = %s", seed, step, len(id), fmtWD(d))
				}
				if d.Allowed && n > 0 {
					ids = append(ids, id)
				}
			case op < 8:
				ok, okc := s.Release(now, old), cp.Release(now, old)
				d, dc = Decision{Allowed: ok}, Decision{Allowed: okc}
			default:
				ok, okc := s.Renew(now, old, lease), cp.Renew(now, old, lease)
				d, dc = Decision{Allowed: ok}, Decision{Allowed: okc}
			}
			if d != dc || !sameConcurrency(cp, &s) {
				t.Fatalf("seed %d step %d: the decoded copy answers %s, the original %s", seed, step, fmtWD(dc), fmtWD(d))
			}
			ref = int64(uint64(now) + uint64(s.ResetAfter(now)))
			for _, rf := range compactRefs(ref, now) {
				roundTripConc(t, &s, new(Concurrency), rf)
				roundTripConc(t, &s, dirty, rf)
			}
		}
	}
}

// TestConcurrencyCompactReceiverReuse decodes each of a set of states into
// receivers that held each other one: nothing of the previous content may
// survive, whatever the receiver's capacity.
func TestConcurrencyCompactReceiverReuse(t *testing.T) {
	const now = int64(1_800_000_000_123_456_789)
	makers := []func() *Concurrency{
		func() *Concurrency { return new(Concurrency) },
		func() *Concurrency {
			s := new(Concurrency)
			s.Take(now, ConcurrencyParams{Limit: 1000, Lease: 10 * time.Millisecond, ID: "0123456789abcdef"}, 1)
			return s
		},
		func() *Concurrency {
			s := new(Concurrency)
			for i := range 40 {
				s.Take(now+int64(i), ConcurrencyParams{Limit: 100, Lease: time.Duration(1+i%7) * time.Second, ID: fmt.Sprint("id", i)}, 1+int64(i%3))
			}
			return s
		},
		func() *Concurrency { // leases released: a last change but no lease
			s := new(Concurrency)
			s.Take(now, ConcurrencyParams{Limit: 3, Lease: time.Second, ID: "a"}, 2)
			s.Release(now+5, "a")
			return s
		},
		func() *Concurrency { // the capacity of 40 leases, holding 1
			s := new(Concurrency)
			for i := range 40 {
				s.Take(now, ConcurrencyParams{Limit: 100, Lease: time.Second, ID: fmt.Sprint("x", i)}, 1)
			}
			for i := range 39 {
				s.Release(now+1, fmt.Sprint("x", i))
			}
			return s
		},
		func() *Concurrency {
			s := new(Concurrency)
			s.Take(now, ConcurrencyParams{Limit: 2, Lease: time.Minute, ID: ""}, 1)
			s.Take(now, ConcurrencyParams{Limit: 2, Lease: time.Minute, ID: "\x00"}, 1)
			return s
		},
	}
	for _, prev := range makers {
		for _, next := range makers {
			for _, ref := range []int64{now, now + int64(time.Second), math.MinInt64, math.MaxInt64} {
				roundTripConc(t, next(), prev(), ref)
			}
		}
	}
}

// typicalConcurrency returns the typical ACQUIRE key: one lease of one unit
// under a server-made id, taken at now, with ref its expiry.
func typicalConcurrency() (*Concurrency, int64) {
	const now = int64(1_800_000_037_123_456_789)
	s := new(Concurrency)
	d := s.Take(now, ConcurrencyParams{Limit: 1000, Lease: 10 * time.Millisecond, ID: "0123456789abcdef"}, 1)
	return s, now + int64(d.ResetAfter)
}

// TestConcurrencyCompactSize checks exact sizes: the typical key, and a few
// other shapes whose cost the layout comment promises.
func TestConcurrencyCompactSize(t *testing.T) {
	s, ref := typicalConcurrency()
	b := s.AppendCompact(nil, ref)
	t.Logf("typical: %d bytes: %x", len(b), b)
	// header, limit, lease, last, count, expiry, units: 7 bytes plus the id.
	if len(b) != 7+MaxLeaseIDLen {
		t.Errorf("typical key: %d bytes (%x), want %d", len(b), b, 7+MaxLeaseIDLen)
	}

	const now = int64(1_800_000_037_123_456_789)
	id := func(i int) string { return fmt.Sprintf("%016d", i) }
	for _, c := range []struct {
		name string
		make func() *Concurrency
		want int
	}{
		{"fresh", func() *Concurrency { return new(Concurrency) }, 0},
		{"3 leases taken at once", func() *Concurrency {
			s := new(Concurrency)
			for i := range 3 {
				s.Take(now, ConcurrencyParams{Limit: 10, Lease: time.Second, ID: id(i)}, 1)
			}
			return s
		}, 5 + 3*(2+MaxLeaseIDLen)},
		{"short ids", func() *Concurrency {
			s := new(Concurrency)
			s.Take(now, ConcurrencyParams{Limit: 10, Lease: time.Second, ID: "a"}, 2)
			s.Take(now, ConcurrencyParams{Limit: 10, Lease: time.Second, ID: "bc"}, 1)
			return s
		}, 5 + (3 + 1) + (3 + 2)},
		{"released", func() *Concurrency { // limit 10: one byte; the last change 1 ns after the acquisition
			s := new(Concurrency)
			s.Take(now, ConcurrencyParams{Limit: 10, Lease: time.Second, ID: id(0)}, 1)
			s.Take(now, ConcurrencyParams{Limit: 10, Lease: time.Second, ID: id(1)}, 1)
			s.Release(now+1, id(1))
			return s
		}, 5 + 2 + MaxLeaseIDLen},
	} {
		s := c.make()
		ref := s.last + int64(s.ResetAfter(s.last)) // the expiry its last change gave the key
		b := s.AppendCompact(nil, ref)
		t.Logf("%-22s %2d bytes: %x", c.name, len(b), b)
		if len(b) != c.want {
			t.Errorf("%s: %d bytes (%x), want %d", c.name, len(b), b, c.want)
		}
	}

	// A busy key: a lease of 50ms to 150ms every 10ms on average, released
	// half the time, against a limit of 20.
	r := rand.New(rand.NewPCG(1, 2))
	var busy Concurrency
	cur := int64(1_800_000_000_000_000_000)
	var sum, worst, count, held int
	var live []string
	for i := range 20000 {
		cur += r.Int64N(int64(20 * time.Millisecond))
		if len(live) > 0 && r.IntN(2) == 0 {
			j := r.IntN(len(live))
			busy.Release(cur, live[j])
			live = slices.Delete(live, j, j+1)
		}
		if d := busy.Take(cur, ConcurrencyParams{Limit: 20, Lease: time.Duration(50+r.IntN(100)) * time.Millisecond, ID: id(i)}, 1); d.Allowed {
			live = append(live, id(i))
		}
		n := len(busy.AppendCompact(nil, cur+int64(busy.ResetAfter(cur))))
		sum += n
		worst = max(worst, n)
		held += len(busy.leases)
		count++
	}
	t.Logf("busy key: mean %.1f bytes (%.1f leases), max %d", float64(sum)/float64(count), float64(held)/float64(count), worst)
}

// TestConcurrencyCompactAllocs: decoding into a receiver whose lease slice
// holds the leases allocates nothing, nor does the Acquire that follows
// with an id converted from a reused buffer, nor the encoding; a receiver
// without the capacity allocates its slice once, with room for that
// Acquire.
func TestConcurrencyCompactAllocs(t *testing.T) {
	s, ref := typicalConcurrency()
	enc := s.AppendCompact(nil, ref)
	recv := new(Concurrency)
	recv.leases = make([]lease, 0, 4)
	if a := testing.AllocsPerRun(100, func() {
		if err := recv.DecodeCompact(enc, ref); err != nil {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Errorf("DecodeCompact into a reused receiver: %.1f allocations", a)
	}

	// The scratch cycle of an ACQUIRE: decode, Acquire under an id made in
	// a buffer, encode.
	buf := make([]byte, 0, 64)
	var idBuf [MaxLeaseIDLen]byte
	step := 0
	if a := testing.AllocsPerRun(100, func() {
		step++
		if err := recv.DecodeCompact(enc, ref); err != nil {
			t.Fatal(err)
		}
		for i := range idBuf {
			idBuf[i] = 'a' + byte(step+i)%26
		}
		now := ref - int64(5*time.Millisecond)
		if !recv.Take(now, ConcurrencyParams{Limit: 1000, Lease: 10 * time.Millisecond, ID: string(idBuf[:])}, 1).Allowed {
			t.Fatal("denied")
		}
		buf = recv.AppendCompact(buf[:0], now+int64(recv.ResetAfter(now)))
	}); a != 0 {
		t.Errorf("decode, Acquire, encode: %.1f allocations", a)
	}
	if !recv.Release(ref-1, string(idBuf[:])) {
		t.Error("the lease acquired under a buffer's id is not found")
	}

	// Release and Renew with ids from a buffer.
	if a := testing.AllocsPerRun(100, func() {
		if err := recv.DecodeCompact(enc, ref); err != nil {
			t.Fatal(err)
		}
		copy(idBuf[:], "0123456789abcdef")
		if !recv.Renew(ref-1, string(idBuf[:]), time.Second) || !recv.Release(ref-1, string(idBuf[:])) {
			t.Fatal("renew or release failed")
		}
	}); a != 0 {
		t.Errorf("decode, Renew, Release: %.1f allocations", a)
	}

	// No capacity: one allocation, and the Acquire after it none.
	recvs := make([]Concurrency, 102) // AllocsPerRun runs the function 101 times
	i := 0
	if a := testing.AllocsPerRun(100, func() {
		if err := recvs[i].DecodeCompact(enc, ref); err != nil {
			t.Fatal(err)
		}
		i++
	}); a != 1 {
		t.Errorf("DecodeCompact into a receiver without a lease slice: %.1f allocations, want 1", a)
	}
	i = 0
	if a := testing.AllocsPerRun(100, func() {
		if !recvs[i].Take(ref-1, ConcurrencyParams{Limit: 1000, Lease: time.Second, ID: "another"}, 1).Allowed || len(recvs[i].leases) != 2 {
			t.Fatal("denied")
		}
		i++
	}); a != 0 {
		t.Errorf("Acquire after decoding into a receiver without a lease slice: %.1f allocations", a)
	}
}

// TestConcurrencyLongIDs: an id longer than MaxLeaseIDLen is denied by
// Acquire and unknown to Release and Renew, changing nothing; one of
// MaxLeaseIDLen bytes works; ids that differ only by trailing zero bytes are
// different ids; decodeConcurrency rejects a stored id that is too long.
func TestConcurrencyLongIDs(t *testing.T) {
	long := strings.Repeat("x", MaxLeaseIDLen+1)
	full := long[:MaxLeaseIDLen]
	var s Concurrency
	if d := s.Take(wt0, ConcurrencyParams{Limit: 3, Lease: time.Second, ID: full}, 1); !d.Allowed {
		t.Fatalf("Acquire with a %d-byte id: %s", len(full), fmtWD(d))
	}
	before := binaryOf(t, &s)
	for _, n := range []int64{0, 1, 2} {
		if d := s.Take(wt0+1, ConcurrencyParams{Limit: 3, Lease: time.Second, ID: long}, n); d != (Decision{Limit: 3, RetryAfter: Never}) {
			t.Errorf("Acquire(n=%d) with a %d-byte id = %s, want denied with Never", n, len(long), fmtWD(d))
		}
	}
	if s.Release(wt0+1, long) || s.Renew(wt0+1, long, time.Minute) {
		t.Error("Release or Renew of a too long id succeeded")
	}
	if !bytes.Equal(before, binaryOf(t, &s)) {
		t.Error("calls with a too long id changed the state")
	}
	if !s.Renew(wt0+1, full, time.Minute) || !s.Release(wt0+2, full) {
		t.Errorf("Renew or Release of a %d-byte id failed", len(full))
	}

	// "a", "a\x00" and "" are three ids, though stored alike but for length.
	for _, id := range []string{"a", "a\x00", ""} {
		if !s.Take(wt0+3, ConcurrencyParams{Limit: 3, Lease: time.Second, ID: id}, 1).Allowed {
			t.Fatalf("Acquire %q denied", id)
		}
	}
	for _, id := range []string{"a\x00", "", "a"} {
		if !s.Release(wt0+4, id) {
			t.Errorf("Release %q failed", id)
		}
		if s.Release(wt0+4, id) {
			t.Errorf("Release %q succeeded twice", id)
		}
	}

	// decodeConcurrency: a 16-byte id is read, a 17-byte one is corrupt.
	for _, n := range []int{MaxLeaseIDLen, MaxLeaseIDLen + 1} {
		b := binaryOf(t, new(Concurrency))
		b[25] = 1 // one lease
		b = append(b, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, byte(n), 0, 0, 0)
		b = append(b, strings.Repeat("y", n)...)
		_, err := decodeConcurrency(b)
		if ok := n <= MaxLeaseIDLen; ok != (err == nil) || !ok && !errors.Is(err, ErrCorrupt) {
			t.Errorf("decodeConcurrency of a %d-byte id: %v", n, err)
		}
	}
}

// TestConcurrencyCompactCorrupt checks that DecodeCompact rejects, with an
// error wrapping ErrCorrupt and leaving the receiver fresh, every
// truncation of valid encodings, trailing bytes, overlong numbers, and the
// hand-made non-canonical or impossible encodings below; and accepts their
// valid neighbours.
func TestConcurrencyCompactCorrupt(t *testing.T) {
	recv := new(Concurrency)
	corruptAs := func(want error, what string, b []byte, ref int64) {
		t.Helper()
		recv.Take(wt0, ConcurrencyParams{Limit: 5, Lease: time.Second, ID: "prev"}, 1) // content that must go
		if err := recv.DecodeCompact(b, ref); !errors.Is(err, ErrCorrupt) || !errors.Is(err, want) {
			t.Errorf("%s: DecodeCompact(%x, %d) = %v, want %v", what, b, ref, err, want)
		}
		if !sameConcurrency(recv, &Concurrency{}) {
			t.Errorf("%s: the receiver holds %+v after an error", what, *recv)
		}
	}
	valid := func(what string, b []byte, ref int64) {
		t.Helper()
		if err := recv.DecodeCompact(b, ref); err != nil {
			t.Errorf("%s: DecodeCompact(%x, %d) = %v", what, b, ref, err)
		}
	}

	s, ref := typicalConcurrency()
	var multi Concurrency
	multi.Take(wt0, ConcurrencyParams{Limit: 10, Lease: time.Second, ID: "a"}, 2)
	multi.Take(wt0+1, ConcurrencyParams{Limit: 10, Lease: 3 * time.Second, ID: ""}, 1)
	multi.Take(wt0+2, ConcurrencyParams{Limit: 10, Lease: 2 * time.Second, ID: "lease-\x00-c"}, 300)
	for _, c := range []struct {
		s   *Concurrency
		ref int64
	}{{s, ref}, {&multi, wt0 + int64(3*time.Second) + 1}} {
		enc := c.s.AppendCompact(nil, c.ref)
		valid("valid", enc, c.ref)
		for n := 1; n < len(enc); n++ {
			corruptAs(ErrCorrupt, "truncated", enc[:n], c.ref)
		}
		corruptAs(errCompactTrailing, "trailing byte", append(enc[:len(enc):len(enc)], 0), c.ref)
		// The numbers before the leases, each written with one more byte.
		for j := 1; j <= 4; j++ {
			long := append(append(append([]byte{}, enc[:j]...), enc[j]|0x80, 0), enc[j+1:]...)
			corruptAs(errCompactVarint, fmt.Sprintf("overlong byte %d", j), long, c.ref)
		}
	}

	// ref 0 makes last's natural place −lease: hand-made encodings below
	// use lease 1 and last 0, so last is zigzag(1) = 2.
	id := strings.Repeat("i", MaxLeaseIDLen)
	corruptAs(errCompactFresh, "fresh written out", []byte{0, 0, 0, 0, 0}, 0)
	valid("fresh", nil, 0)
	valid("last 5, no lease", []byte{0, 0, 0, 10, 0}, 0)
	corruptAs(errCompactHeader, "header bits 5-7", []byte{0x20, 1, 1, 2, 0}, 0)
	corruptAs(errCompactHeader, "id lengths without leases", []byte{0x10, 1, 1, 2, 0}, 0)
	valid("one lease", append([]byte{0x00, 1, 1, 2, 1, 0, 0}, id...), 0)
	corruptAs(errCompactHeader, "id lengths, all full", append([]byte{0x10, 1, 1, 2, 1, 0, 0, 16}, id...), 0)
	valid("a short id", []byte{0x10, 1, 1, 2, 1, 0, 0, 1, 'x'}, 0)
	corruptAs(errCompactLeases, "id too long", append([]byte{0x10, 1, 1, 2, 1, 0, 0, 17}, id+"j"...), 0)
	corruptAs(errCompactVarint, "id beyond the bytes", []byte{0x10, 1, 1, 2, 1, 0, 0, 2, 'x'}, 0)
	corruptAs(errCompactVarint, "limit scale not the largest", []byte{0x00, 0xe8, 0x07, 1, 2, 0}, 0) // 1000 at scale 1
	corruptAs(errCompactVarint, "zero with a scale", []byte{0x01, 0, 1, 2, 0}, 0)
	corruptAs(errCompactVarint, "lease beyond int64", []byte{0x0c, 1, 0x80, 0x80, 0x80, 0x80, 0x40, 0, 0}, 0) // 2^34·1e9
	corruptAs(errCompactState, "last < 0", []byte{0x00, 1, 1, 0, 0}, 0)                                       // −1
	corruptAs(errCompactLeases, "expiry < 0", append([]byte{0x00, 1, 1, 2, 1, 1, 0}, id...), 0)               // −1
	// The second expiry is 0 − 1: before the first.
	corruptAs(errCompactLeases, "expiries out of order", []byte{0x10, 1, 1, 2, 2, 0, 0, 0, 1, 0, 0}, 0)
	// 0 − (2^64 − 1) wraps to 1: an expiry after the next one.
	corruptAs(errCompactLeases, "expiry gap wrapping", []byte{0x10, 1, 1, 2, 2, 0, 0, 0,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0, 0}, 0)
	valid("two leases at 0", []byte{0x10, 1, 1, 2, 2, 0, 0, 0, 0, 0, 0}, 0)
	corruptAs(errCompactLeases, "units beyond int64", append([]byte{0x00, 1, 1, 2, 1, 0,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}, id...), 0) // 2^63
	valid("units maxInt64", append([]byte{0x00, 1, 1, 2, 1, 0,
		0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}, id...), 0)
	corruptAs(errCompactLeases, "held beyond int64", []byte{0x10, 1, 1, 2, 2, 0,
		0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0, 0, 0, 0}, 0) // maxInt64 + 1
	corruptAs(errCompactLeases, "count beyond the bytes", append([]byte{0x00, 1, 1, 2, 2, 0, 0}, id...), 0)
	corruptAs(errCompactLeases, "huge count", []byte{0x10, 1, 1, 2, 0xff, 0xff, 0xff, 0xff, 0x0f, 0, 0, 0}, 0)
}

// FuzzConcurrencyDecodeCompact feeds arbitrary bytes to DecodeCompact: it
// must not panic, and what it accepts must re-encode to the same bytes,
// decode again (into a fresh and a used receiver) to the same state, and
// be exactly what decodeConcurrency restores from its v1 encoding. The
// same bytes read as a persisted state must round-trip through the compact
// codec.
func FuzzConcurrencyDecodeCompact(f *testing.F) {
	s, ref := typicalConcurrency()
	f.Add(ref, s.AppendCompact(nil, ref))
	f.Add(int64(0), s.AppendCompact(nil, 0))
	f.Add(ref, binaryOf(f, s))
	var multi Concurrency
	multi.Take(wt0, ConcurrencyParams{Limit: 10, Lease: time.Second, ID: "a"}, 2)
	multi.Take(wt0+1, ConcurrencyParams{Limit: 10, Lease: 3 * time.Second, ID: ""}, 1)
	multi.Take(wt0+2, ConcurrencyParams{Limit: 10, Lease: 2 * time.Second, ID: "lease-\x00-c"}, 3)
	f.Add(int64(math.MaxInt64), multi.AppendCompact(nil, math.MaxInt64))
	f.Add(wt0, binaryOf(f, &multi))
	f.Add(int64(0), []byte{0x10, 1, 1, 2, 2, 0, 0, 0, 0, 0, 0})
	f.Add(int64(0), []byte{})
	used := new(Concurrency)
	f.Fuzz(func(t *testing.T, ref int64, b []byte) {
		var s Concurrency
		if s.DecodeCompact(b, ref) == nil {
			if enc := s.AppendCompact(nil, ref); !bytes.Equal(enc, b) {
				t.Fatalf("DecodeCompact(%x, %d) re-encodes as %x", b, ref, enc)
			}
			roundTripConc(t, &s, new(Concurrency), ref)
			roundTripConc(t, &s, used, ref)
			d, err := decodeConcurrency(binaryOf(t, &s))
			if err != nil {
				t.Fatalf("DecodeCompact(%x, %d) gives a state decodeConcurrency rejects: %v", b, ref, err)
			}
			if !sameConcurrency(d, &s) {
				t.Fatalf("DecodeCompact(%x, %d) = %+v, decodeConcurrency of its encoding %+v", b, ref, s, *d)
			}
		} else if !sameConcurrency(&s, &Concurrency{}) {
			t.Fatalf("DecodeCompact(%x, %d) failed leaving %+v", b, ref, s)
		}
		if d, err := decodeConcurrency(b); err == nil {
			roundTripConc(t, d, new(Concurrency), ref)
			roundTripConc(t, d, used, ref)
		}
	})
}

// BenchmarkCompactConcurrency measures AppendCompact then DecodeCompact
// into a reused receiver, for the typical key and one holding 8 leases,
// and the scratch cycle of an ACQUIRE: decode, Acquire, encode.
func BenchmarkCompactConcurrency(b *testing.B) {
	s1, ref1 := typicalConcurrency()
	s8 := new(Concurrency)
	const now = int64(1_800_000_037_123_456_789)
	for i := range 8 {
		s8.Take(now+int64(i)*1e6, ConcurrencyParams{Limit: 1000, Lease: 10 * time.Millisecond, ID: fmt.Sprintf("%016d", i)}, 1)
	}
	ref8 := now + 7e6 + int64(10*time.Millisecond)
	for _, c := range []struct {
		name string
		s    *Concurrency
		ref  int64
	}{{"1-lease", s1, ref1}, {"8-leases", s8, ref8}} {
		b.Run(c.name, func(b *testing.B) { benchCompactRoundTrip(b, c.s, new(Concurrency), c.ref) })
	}
	b.Run("acquire-cycle", func(b *testing.B) {
		rec := s1.AppendCompact(nil, ref1)
		buf := make([]byte, 0, 64)
		recv := new(Concurrency)
		var id [MaxLeaseIDLen]byte
		copy(id[:], "fedcba9876543210")
		b.ReportAllocs()
		for b.Loop() {
			if err := recv.DecodeCompact(rec, ref1); err != nil {
				b.Fatal(err)
			}
			id[0]++
			now := ref1 - int64(5*time.Millisecond)
			d := recv.Take(now, ConcurrencyParams{Limit: 1000, Lease: 10 * time.Millisecond, ID: string(id[:])}, 1)
			buf = recv.AppendCompact(buf[:0], now+int64(d.ResetAfter))
		}
		b.ReportMetric(float64(len(buf)), "bytes")
	})
}
