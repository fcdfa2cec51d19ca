package engine

import (
	"errors"
	"testing"
	"time"
)

// TestDecodeEveryKind round-trips one used state of each kind through the
// disk codecs: the compact encoding (written and read, with the key's
// expiry as ref, as version-2 records hold it) and the frozen version 1
// (read only: DecodeV1). It checks the restored state answers the next call
// exactly as the original does, and that a truncated encoding is corrupt.
func TestDecodeEveryKind(t *testing.T) {
	const now = int64(1_767_225_600_000_000_000)
	g, tb, lb := usedBuckets(now)
	w := usedWindow(now, WindowLog)
	cc := new(Concurrency)
	cc.Take(now, ConcurrencyParams{Limit: 5, Lease: time.Minute, ID: "lease-1"}, 2)

	later := now + int64(700*time.Millisecond)
	next := map[Kind]func(State) Decision{
		KindThrottle: func(s State) Decision {
			return s.(*GCRA).Check(later, GCRAParams{MaxBurst: 4, Count: 1, Period: time.Second}, 1)
		},
		KindTokenBucket: func(s State) Decision {
			return s.(*TokenBucket).Check(later, TokenBucketParams{Capacity: 10, Rate: 3, Period: time.Second}, 1)
		},
		KindLeakyBucket: func(s State) Decision {
			return s.(*LeakyBucket).Check(later, LeakyBucketParams{Capacity: 10, Rate: 3, Period: time.Second}, 1)
		},
		KindWindow: func(s State) Decision {
			return s.(*Window).Check(later, WindowParams{Limit: 10, Window: time.Minute, Mode: WindowLog}, 1)
		},
		KindConcurrency: func(s State) Decision { return s.(*Concurrency).Check(later, ConcurrencyParams{Limit: 5}, 1) },
	}
	for _, st := range []State{g, tb, lb, w, cc} {
		ref := now + int64(time.Minute) // the key's expiry
		b := st.AppendCompact(nil, ref)
		got := st.Kind().New()
		if err := got.DecodeCompact(b, ref); err != nil {
			t.Fatalf("%v: DecodeCompact: %v", st.Kind(), err)
		}
		if a, b := next[st.Kind()](st), next[st.Kind()](got); a != b {
			t.Fatalf("%v: compact: restored state answers %+v, original %+v", st.Kind(), b, a)
		}
		if err := st.Kind().New().DecodeCompact(b[:len(b)-1], ref); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("%v: truncated compact encoding: err %v, want ErrCorrupt", st.Kind(), err)
		}

		b, err := appendV1(st, nil)
		if err != nil {
			t.Fatalf("%v: appendV1: %v", st.Kind(), err)
		}
		got, err = DecodeV1(st.Kind(), b)
		if err != nil {
			t.Fatalf("%v: DecodeV1: %v", st.Kind(), err)
		}
		if got.Kind() != st.Kind() {
			t.Fatalf("%v: decoded kind %v", st.Kind(), got.Kind())
		}
		if a, b := next[st.Kind()](st), next[st.Kind()](got); a != b {
			t.Fatalf("%v: v1: restored state answers %+v, original %+v", st.Kind(), b, a)
		}
		if _, err := DecodeV1(st.Kind(), b[:len(b)-1]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("%v: truncated v1 encoding: err %v, want ErrCorrupt", st.Kind(), err)
		}
	}
	if _, err := DecodeV1(Kind(99), []byte{1}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("unknown kind: err %v", err)
	}
	if Kind(99).New() != nil {
		t.Fatal("Kind(99).New() is not nil")
	}
}

// TestCopyTo: the kinds that are a few words copy into a state of their
// kind, which then encodes and answers as the original; LOG windows,
// leases and states of another kind are refused and left unchanged.
func TestCopyTo(t *testing.T) {
	const now = int64(1_767_225_600_000_000_000)
	ref := now + int64(time.Minute)
	g, tb, lb := usedBuckets(now)
	fixed := usedWindow(now, WindowFixed)
	for _, st := range []State{g, tb, lb, fixed, usedWindow(now, WindowSliding)} {
		dst := st.Kind().New()
		if !st.(Copier).CopyTo(dst) {
			t.Fatalf("%v: CopyTo refused a state of its kind", st.Kind())
		}
		if a, b := string(st.AppendCompact(nil, ref)), string(dst.AppendCompact(nil, ref)); a != b {
			t.Errorf("%v: copy encodes %x, original %x", st.Kind(), b, a)
		}
		other := KindConcurrency.New()
		if st.(Copier).CopyTo(other) {
			t.Errorf("%v: CopyTo into a %v answered true", st.Kind(), other.Kind())
		}
	}

	log := usedWindow(now, WindowLog)
	dst := new(Window)
	before := string(dst.AppendCompact(nil, ref))
	if log.CopyTo(dst) || string(dst.AppendCompact(nil, ref)) != before {
		t.Error("a LOG window copied itself")
	}
	// Nor into a scratch window holding a LOG ring: the copy would drop it.
	if fixed.CopyTo(log) {
		t.Error("a FIXED window copied itself over a LOG window's ring")
	}
	if _, ok := State(new(Concurrency)).(Copier); ok {
		t.Error("leases (a slice) claim to copy with a struct copy")
	}
}

// usedBuckets returns a GCRA, a token bucket and a leaky bucket each
// taken from once at now.
func usedBuckets(now int64) (*GCRA, *TokenBucket, *LeakyBucket) {
	g := new(GCRA)
	g.Take(now, GCRAParams{MaxBurst: 4, Count: 1, Period: time.Second}, 2)
	tb := new(TokenBucket)
	tb.Take(now, TokenBucketParams{Capacity: 10, Rate: 3, Period: time.Second}, 4)
	lb := new(LeakyBucket)
	lb.Take(now, LeakyBucketParams{Capacity: 10, Rate: 3, Period: time.Second}, 4)
	return g, tb, lb
}

// usedWindow returns a window of the given mode with 3 units admitted at
// now (limit 10 a minute).
func usedWindow(now int64, mode WindowMode) *Window {
	w := new(Window)
	w.Take(now, WindowParams{Limit: 10, Window: time.Minute, Mode: mode}, 3)
	return w
}
