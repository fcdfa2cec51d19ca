package engine

import (
	"encoding/binary"
	"time"
	"unsafe"
)

// Concurrency is the state of a CL.ACQUIRE key: a semaphore whose permits
// (leases) expire. Its zero value is a fresh key. Times are ns on the
// server's clock, counts are units.
//
// A request of n units is admitted while the units held by unexpired leases
// plus n fit in the limit. A lease acquired at t for d lives while now <
// t+d. Expired leases are pruned lazily, by the next call that changes the
// state. The limit travels with every call: lowering it below what is held
// only denies until enough leases are released or expire.
//
// Time going backwards is clamped on purpose: a call at now earlier than the
// last change is answered as if made at that instant, so no lease comes back
// to life. Instants before the Unix epoch are taken as the epoch.
//
// Leases are kept in expiry order with a running total of their units, so
// Acquire and Check cost O(expired leases dropped) plus, for an admission,
// an insertion that is an append when lease lengths are equal; Release and
// Renew look the id up in O(leases), at most limit of them.
//
// Lease ids are the caller's (unique, e.g. from crypto/rand; the server
// makes 16-character ones) and are stored as given, inline in the lease, so
// that a state holds no pointer but its lease slice and decoding one
// allocates nothing. An id is therefore at most MaxLeaseIDLen bytes: Acquire
// denies a longer one like any other invalid input (RetryAfter Never,
// nothing changes), and Release and Renew report false for it.
type Concurrency struct {
	limit  int64   // limit of the last acquisition
	lease  int64   // lease duration of the last acquisition, ns
	last   int64   // instant of the last change, ns
	leases []lease // by expiry, earliest first
	held   int64   // units of every lease in leases (live or not yet pruned)
}

// MaxLeaseIDLen is the longest lease id a Concurrency stores, in bytes.
const MaxLeaseIDLen = 16

type lease struct {
	expiry int64 // ns; live while now < expiry
	units  int64
	id     [MaxLeaseIDLen]byte // the id's bytes, then zeros
	idLen  uint8
}

// setID makes id (at most MaxLeaseIDLen bytes) the id of l, whose id bytes
// are zero. Copying the id keeps the caller's string from escaping: a
// caller may pass one converted from a reused buffer.
func (l *lease) setID(id string) {
	l.idLen = uint8(len(id))
	copy(l.id[:], id)
}

// idBytes returns the bytes of the lease's id.
func (l *lease) idBytes() []byte { return l.id[:l.idLen] }

var _ State = (*Concurrency)(nil)

// Kind returns KindConcurrency.
func (s *Concurrency) Kind() Kind { return KindConcurrency }

// KindConcurrency is the kind of CL.ACQUIRE semaphores. Its value is persisted: never change it.
const KindConcurrency Kind = 5

func init() { register(KindConcurrency, "concurrency", func() State { return new(Concurrency) }) }

// Reset makes s a fresh key's state, keeping the lease slice's memory.
func (s *Concurrency) Reset() {
	*s = Concurrency{leases: s.leases[:0]}
}

// ConcurrencyParams are the limits of a CL.ACQUIRE request: at most Limit
// units held at once, each admission holding its units for Lease under the
// lease id ID (per request, like TokenBucketParams.MaxWait; Check ignores
// Lease and ID).
type ConcurrencyParams struct {
	Limit int64         // units: the most held at once
	Lease time.Duration // how long an admission holds its units
	ID    string        // the new lease's id, at most MaxLeaseIDLen bytes
}

// Take admits n units at now (ns) under lease p.ID for p.Lease if the units
// held plus n fit in p.Limit, and returns the decision. Remaining is the
// limit minus the units held after the call (at least 0); a denied
// RetryAfter is, as the contract says, the time until the earliest lease
// expires (even if that one alone frees too few units), or Never when n >
// limit. n == 0 peeks: nothing is stored. A denied call changes nothing.
// Limit <= 0, Lease <= 0, n < 0 or an id longer than MaxLeaseIDLen are
// denied with Never.
func (s *Concurrency) Take(now int64, p ConcurrencyParams, n int64) Decision {
	if p.Lease <= 0 || len(p.ID) > MaxLeaseIDLen {
		return Decision{Limit: p.Limit, RetryAfter: Never}
	}
	return s.decide(now, p.Limit, int64(p.Lease), n, p.ID, true)
}

// Check returns what Take(now, p, n) would answer, without changing
// anything; ResetAfter counts only the leases already held, since the lease
// asked for is not taken.
func (s *Concurrency) Check(now int64, p ConcurrencyParams, n int64) Decision {
	return s.decide(now, p.Limit, 0, n, "", false)
}

// clamp returns the effective instant for now.
func (s *Concurrency) clamp(now int64) int64 {
	return max(now, s.last, 0)
}

// scan returns the units held by leases live at now, and the earliest and
// latest expiry among them (0 when none is live). Expired leases are the
// first ones; scan skips them without changing anything.
func (s *Concurrency) scan(now int64) (held, earliest, latest int64) {
	held = s.held
	i := 0
	for ; i < len(s.leases) && s.leases[i].expiry <= now; i++ {
		held -= s.leases[i].units
	}
	if i == len(s.leases) {
		return 0, 0, 0
	}
	return held, s.leases[i].expiry, s.leases[len(s.leases)-1].expiry
}

func (s *Concurrency) decide(now, limit, leaseNS, n int64, id string, commit bool) Decision {
	if limit <= 0 || n < 0 {
		return Decision{Limit: limit, RetryAfter: Never}
	}
	now = s.clamp(now)
	held, earliest, latest := s.scan(now)
	ok := n <= limit && n <= limit-held
	d := Decision{Allowed: ok, Limit: limit}
	if ok {
		if commit && n > 0 {
			expiry := winAdd(now, leaseNS)
			s.prune(now)
			s.insert(expiry, n).setID(id)
			s.limit, s.lease, s.last = limit, leaseNS, now
			latest = max(latest, expiry)
		}
		held += n
	} else {
		d.RetryAfter = Never
		if n <= limit {
			d.RetryAfter = winSince(earliest, now)
		}
	}
	d.Remaining = max(limit-held, 0)
	d.ResetAfter = winSince(latest, now)
	return d
}

// insert adds a lease of units expiring at expiry at its place in expiry
// order (after leases expiring at the same instant) and returns it, its id
// empty. The caller sets the id in place: a lease is 40 bytes, and building
// one elsewhere to copy it in slows Acquire down
// (BenchmarkConcurrencyAcquireRelease).
func (s *Concurrency) insert(expiry, units int64) *lease {
	i := len(s.leases)
	for i > 0 && s.leases[i-1].expiry > expiry {
		i--
	}
	s.leases = append(s.leases, lease{})
	copy(s.leases[i+1:], s.leases[i:])
	l := &s.leases[i]
	*l = lease{expiry: expiry, units: units}
	s.held = winAdd(s.held, units)
	return l
}

// remove drops the lease at index i.
func (s *Concurrency) remove(i int) lease {
	l := s.leases[i]
	copy(s.leases[i:], s.leases[i+1:])
	s.leases = s.leases[:len(s.leases)-1]
	s.held -= l.units
	return l
}

// find returns the index of the lease id live at now, or -1 (always for an
// id too long to be stored).
func (s *Concurrency) find(now int64, id string) int {
	if len(id) > MaxLeaseIDLen {
		return -1
	}
	for i := range s.leases {
		if s.leases[i].expiry > now && string(s.leases[i].idBytes()) == id {
			return i
		}
	}
	return -1
}

// prune drops the leases expired at now (the first ones).
func (s *Concurrency) prune(now int64) {
	i := 0
	for ; i < len(s.leases) && s.leases[i].expiry <= now; i++ {
		s.held -= s.leases[i].units
	}
	if i == 0 {
		return
	}
	kept := copy(s.leases, s.leases[i:])
	s.leases = s.leases[:kept]
	if kept == 0 {
		s.leases = nil
	} else if cap(s.leases) > 16 && kept*4 <= cap(s.leases) {
		s.leases = append([]lease(nil), s.leases...)
	}
}

// Release returns the units of lease id at now (ns). It reports false, and
// changes nothing, when the lease is unknown or has expired (or the id is
// longer than MaxLeaseIDLen).
func (s *Concurrency) Release(now int64, id string) bool {
	now = s.clamp(now)
	i := s.find(now, id)
	if i < 0 {
		return false
	}
	s.remove(i)
	s.prune(now)
	s.last = now
	return true
}

// Renew makes lease id, live at now (ns), expire lease from now (which may
// shorten it). It reports false, and changes nothing, when the lease is
// unknown or has expired (or the id is longer than MaxLeaseIDLen), or
// lease <= 0.
func (s *Concurrency) Renew(now int64, id string, lease time.Duration) bool {
	now = s.clamp(now)
	i := s.find(now, id)
	if i < 0 || lease <= 0 {
		return false
	}
	l := s.remove(i)
	nl := s.insert(winAdd(now, int64(lease)), l.units)
	nl.id, nl.idLen = l.id, l.idLen
	s.prune(now)
	s.last = now
	return true
}

// ResetAfter returns the time from now (ns) until the last live lease
// expires: 0 when none is live and the key is fresh.
func (s *Concurrency) ResetAfter(now int64) time.Duration {
	now = s.clamp(now)
	_, _, latest := s.scan(now)
	return winSince(latest, now)
}

// Held returns the units held by leases live at now (ns).
func (s *Concurrency) Held(now int64) int64 {
	held, _, _ := s.scan(s.clamp(now))
	return held
}

// Size returns an estimate of the heap bytes the state holds: the ids are
// inside the leases.
func (s *Concurrency) Size() int {
	return int(unsafe.Sizeof(*s)) + cap(s.leases)*int(unsafe.Sizeof(lease{}))
}

// The compact codec of a Concurrency (see compact.go for the shared format).

var _ State = (*Concurrency)(nil)

// Compact encoding of a Concurrency. The fresh state (the zero value: no
// parameters, no last change, no lease) is no bytes at all; any other is
//
//	header  one byte: bits 0-1 and 2-3 the scale classes of limit and
//	        lease, bit 4 set when some id is not MaxLeaseIDLen bytes long
//	        (each lease then stores its id's length), bits 5-7 zero
//	limit   scaled
//	lease   scaled, ns
//	last    zigzag varint: last − (ref − lease), wrapping: a key expires
//	        when its last lease does, and the lease taken last is usually
//	        that one (leases of one key tend to be of one length)
//	count   varint: the number of leases
//	leases  latest expiry first (the reverse of the slice), each
//	        dt      the latest: zigzag varint expiry − ref, wrapping; the
//	                others: varint t' − expiry, t' that of the lease after
//	                it (expiries never decrease)
//	        du      varint: units − 1 (a lease holds at least one)
//	        idLen   varint, only with header bit 4: the id's length
//	        id      the id's bytes
//
// For a key whose ref is its expiry, the lease that expires last costs one
// byte of expiry, and leases of one length taken in a burst cost little
// more. The ids, random and server-made, cannot be shortened: a key with
// one lease of one unit costs 7 bytes plus its id.

// concIDLens is bit 4 of the header: ids are not all MaxLeaseIDLen long.
const concIDLens = 1 << 4

// AppendCompact appends the compact encoding of s (see State and the
// concurrency layout above) to b.
func (s *Concurrency) AppendCompact(b []byte, ref int64) []byte {
	if s.limit == 0 && s.lease == 0 && s.last == 0 && len(s.leases) == 0 {
		return b
	}
	ml, cl := scaleDown(uint64(s.limit))
	md, cd := scaleDown(uint64(s.lease))
	h := cl | cd<<2
	for i := range s.leases {
		if s.leases[i].idLen != MaxLeaseIDLen {
			h |= concIDLens
			break
		}
	}
	b = append(b, h)
	b = binary.AppendUvarint(b, ml)
	b = binary.AppendUvarint(b, md)
	b = appendDelta(b, s.last, int64(uint64(ref)-uint64(s.lease)))
	b = binary.AppendUvarint(b, uint64(len(s.leases)))
	for i := len(s.leases) - 1; i >= 0; i-- {
		l := &s.leases[i]
		if i == len(s.leases)-1 {
			b = appendDelta(b, l.expiry, ref)
		} else {
			b = binary.AppendUvarint(b, uint64(s.leases[i+1].expiry)-uint64(l.expiry))
		}
		b = binary.AppendUvarint(b, uint64(l.units)-1)
		if h&concIDLens != 0 {
			b = append(b, l.idLen) // a varint: at most 16
		}
		b = append(b, l.idBytes()...)
	}
	return b
}

// DecodeCompact replaces s with the state AppendCompact encoded in b with
// the same ref. It accepts the states decodeConcurrency does. It reuses s's
// lease slice whenever its capacity holds the leases, so it allocates only
// when the slice must grow (then leaving room for one more lease, as the
// Acquire that usually follows takes). On error s is left fresh, its lease
// slice kept.
func (s *Concurrency) DecodeCompact(b []byte, ref int64) error {
	if err := s.decodeCompact(b, ref); err != nil {
		s.Reset()
		return err
	}
	return nil
}

func (s *Concurrency) decodeCompact(b []byte, ref int64) error {
	leases := s.leases[:0]
	*s = Concurrency{leases: leases}
	if len(b) == 0 {
		return nil
	}
	h := b[0]
	if h>>5 != 0 {
		return errCompactHeader
	}
	r := compactReader{b: b[1:]}
	s.limit = r.scaled(h & 3)
	s.lease = r.scaled(h >> 2 & 3)
	s.last = r.delta(int64(uint64(ref) - uint64(s.lease)))
	count := r.uvarint()
	if r.err != nil {
		return r.err
	}
	if s.last < 0 {
		return errCompactState
	}
	if count == 0 {
		if h&concIDLens != 0 {
			return errCompactHeader // no id, so none of another length
		}
		if err := r.end(); err != nil {
			return err
		}
		if s.limit == 0 && s.lease == 0 && s.last == 0 {
			return errCompactFresh
		}
		return nil
	}
	// Each lease takes at least three bytes (dt, du, idLen), or
	// MaxLeaseIDLen+2 when the ids are all that long: this bounds what a
	// bad count allocates.
	least := uint64(MaxLeaseIDLen + 2)
	if h&concIDLens != 0 {
		least = 3
	}
	if count > uint64(len(r.b))/least {
		return errCompactLeases
	}
	n := int(count)
	if cap(leases) >= n {
		leases = leases[:n]
	} else {
		leases = make([]lease, n, n+1)
	}
	// Leases come latest first: fill the slice backwards.
	next, held, short := int64(0), int64(0), false
	for i := n - 1; i >= 0; i-- {
		var expiry int64
		if i == n-1 {
			expiry = r.delta(ref)
		} else if dt := r.uvarint(); dt <= uint64(next) {
			expiry = next - int64(dt)
		} else {
			r.fail(errCompactLeases) // an expiry before 0
		}
		du := r.uvarint()
		idLen := uint64(MaxLeaseIDLen)
		if h&concIDLens != 0 {
			idLen = r.uvarint()
		}
		if idLen > MaxLeaseIDLen {
			r.fail(errCompactLeases)
		}
		id := r.bytes(idLen)
		if r.err != nil {
			return r.err
		}
		// Expiries stay >= 0 and the units within maxInt64, as
		// decodeConcurrency requires.
		if expiry < 0 || du >= uint64(maxInt64-held) {
			return errCompactLeases
		}
		l := lease{expiry: expiry, units: int64(du) + 1, idLen: uint8(idLen)}
		copy(l.id[:], id)
		leases[i] = l
		held += l.units
		short = short || idLen != MaxLeaseIDLen
		next = expiry
	}
	s.leases, s.held = leases, held
	if h&concIDLens != 0 && !short {
		return errCompactHeader // the lengths were all MaxLeaseIDLen
	}
	return r.end()
}
