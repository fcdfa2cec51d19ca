// Package engine holds rlserver's rate-limiting algorithms.
//
// Every algorithm is a small state struct whose methods are pure functions of
// (state, parameters, now): no clock, lock, log, metric or I/O happens here.
// Time is integer nanoseconds on the server's clock (Unix-epoch based, see
// clock.Clock); durations are time.Duration at the edges. The zero value of
// every state is a fresh key.
//
// Callers (the shard layer) own locking: a state is not safe for concurrent
// use.
package engine

import (
	"errors"
	"math/bits"
	"time"
)

// Kind identifies a limiter kind. Its numeric value is persisted as one byte,
// so existing values must never change.
type Kind uint8

// Each kind's constant is declared in its algorithm's file, next to its
// register call (which refuses a value taken twice): 1 throttle (GCRA),
// 2 token bucket, 3 leaky bucket, 4 window, 5 concurrency. 15 is never a
// kind: persist's record of the function libraries takes it.

// kindInfo describes a limiter kind to the keyspace and persistence: the
// name TYPE reports and a constructor of its fresh state. Each algorithm's
// file registers its kind (see register).
type kindInfo struct {
	name   string
	value  bool
	object bool
	fresh  func() State
}

// MaxKinds bounds the kinds: every Kind is below it, so arrays indexed by
// kind (the keyspace's spare states, a restore's) have this length. The
// keyspace keeps a record's kind in the low four bits of its header byte.
const MaxKinds = 16

var kinds [MaxKinds]kindInfo

// objectKinds has bit k set for a kind kept as an object (see Object).
var objectKinds uint32

// register records limiter kind k's name and fresh-state constructor.
// Each algorithm's file calls it from init; a kind registered twice is a
// bug.
func register(k Kind, name string, fresh func() State) { add(k, kindInfo{name: name, fresh: fresh}) }

// RegisterValue records a Redis value kind (package values): a kind of the
// same keyspace, persisted and replicated as the limiters are, whose keys
// live until deleted or given a TTL (NoExpiry) instead of until fresh.
// object asks the keyspace to keep its states as objects whatever their
// size (collections whose encoding costs O(n) to decode on every call).
func RegisterValue(k Kind, name string, object bool, fresh func() State) {
	add(k, kindInfo{name: name, value: true, object: object, fresh: fresh})
}

// Object reports whether the keyspace keeps k's states as objects.
func (k Kind) Object() bool { return objectKinds&(1<<(k&31)) != 0 }

func add(k Kind, info kindInfo) {
	if int(k) >= len(kinds) || kinds[k].fresh != nil {
		panic("engine: kind registered twice or out of range")
	}
	kinds[k] = info
	if info.object {
		objectKinds |= 1 << k
	}
}

// NoExpiry is the expiry of a key without a TTL (a Redis value that was
// never given one): the last instant there is.
const NoExpiry int64 = 1<<63 - 1

// IsValue reports whether k is a Redis value kind rather than a limiter's.
func (k Kind) IsValue() bool { return int(k) < len(kinds) && kinds[k].value }

// String returns the name TYPE reports for the kind ("none" if unknown).
func (k Kind) String() string {
	if int(k) < len(kinds) && kinds[k].fresh != nil {
		return kinds[k].name
	}
	return "none"
}

// New returns a fresh (zero) state of kind k, or nil for an unknown kind.
func (k Kind) New() State {
	if int(k) < len(kinds) && kinds[k].fresh != nil {
		return kinds[k].fresh()
	}
	return nil
}

// Kinds returns every registered kind, in increasing order.
func Kinds() []Kind {
	var ks []Kind
	for k, info := range kinds {
		if info.fresh != nil {
			ks = append(ks, Kind(k))
		}
	}
	return ks
}

// ParseKind maps a TYPE name back to its kind.
func ParseKind(name string) (Kind, bool) {
	for k, info := range kinds {
		if info.fresh != nil && info.name == name {
			return Kind(k), true
		}
	}
	return 0, false
}

// Never is the RetryAfter of a request that can never be admitted (n > limit).
const Never time.Duration = -1

// Decision is the outcome of one limiter call, the five fields of the
// contract's decision reply, in nanoseconds. Formatting (ms, redis-cell
// seconds) is the protocol layer's job.
type Decision struct {
	Allowed    bool          // admitted and consumed (for n > 0)
	Limit      int64         // the most that could ever be admitted at once
	Remaining  int64         // units that could be admitted right now, after this call
	RetryAfter time.Duration // denied: until this request would be admitted, or Never; admitted: 0 or the delay to wait
	ResetAfter time.Duration // until the key is back to its fresh state (0: it is fresh, drop it)
}

// State is the common behaviour of every limiter state, used by the keyspace
// and by persistence. Its codec is the compact encoding (compact.go): the
// parameters last used together with the state, with instants relative to
// a reference instant (the key's expiry); the kind is not included, the
// caller stores it. The keyspace holds states in it and persistence writes
// it to disk (persist's version-2 records).
type State interface {
	// Kind returns the state's kind. It reads nothing of the receiver, so
	// a nil state of a kind's type answers too.
	Kind() Kind
	// AppendCompact appends the compact encoding of the parameters and the
	// state to b. Instants are stored relative to ref (the key's expiry, an
	// absolute server-clock instant in ns close to the state's reset time),
	// so they take few bytes.
	AppendCompact(b []byte, ref int64) []byte
	// DecodeCompact replaces the receiver's whole content with the state
	// AppendCompact encoded in b with the same ref. Bytes it cannot read
	// return an error wrapping ErrCorrupt (never a panic) and may leave the
	// receiver in any valid state.
	DecodeCompact(b []byte, ref int64) error
	// Size is an estimate of the heap bytes the state holds, for memory
	// accounting.
	Size() int
	// Reset makes the state a fresh key's (the zero value's behaviour),
	// keeping memory it can reuse, so a scratch state serves many keys
	// without allocating.
	Reset()
}

// Recycler is a State holding memory worth reusing (a LOG window's blocks):
// Recycle gives it back and leaves the state fresh. The keyspace calls it
// on a state it drops when nothing else refers to the state.
type Recycler interface{ Recycle() }

// Copier is a State whose whole content is a few words: CopyTo makes dst
// (a state of the same kind) equal to it with a struct copy, and reports
// whether it did; a state holding memory of its own (a LOG window) says
// false and changes nothing. The keyspace uses it to undo a take (CL.ALL
// takes a key's kept state at once, and puts the copy back if another
// rule denies).
type Copier interface{ CopyTo(dst State) bool }

// ErrCorrupt is returned by decoders for data they cannot read.
var ErrCorrupt = errors.New("engine: corrupt state encoding")

// mulDivFloor returns floor(a*b/c) for non-negative a, b and positive c
// without overflowing, saturating at maxInt64.
func mulDivFloor(a, b, c int64) int64 {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi >= uint64(c) {
		return maxInt64
	}
	q, _ := bits.Div64(hi, lo, uint64(c))
	if q > uint64(maxInt64) {
		return maxInt64
	}
	return int64(q)
}

const maxInt64 = int64(^uint64(0) >> 1)
