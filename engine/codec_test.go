package engine

import (
	"errors"
	"testing"
	"time"
)

// TestDecodeEveryKind round-trips one used state of each kind through
// AppendBinary and Decode, and checks the restored state answers the next
// call exactly as the original does.
func TestDecodeEveryKind(t *testing.T) {
	const now = int64(1_767_225_600_000_000_000)
	g := new(GCRA)
	g.Take(now, GCRAParams{MaxBurst: 4, Count: 1, Period: time.Second}, 2)
	tb := new(TokenBucket)
	tb.Take(now, TokenBucketParams{Capacity: 10, Rate: 3, Period: time.Second}, 4)
	lb := new(LeakyBucket)
	lb.Take(now, LeakyBucketParams{Capacity: 10, Rate: 3, Period: time.Second}, 4)
	w := new(Window)
	w.Take(now, WindowParams{Limit: 10, Window: time.Minute, Mode: WindowLog}, 3)
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
		b, err := st.AppendBinary(nil)
		if err != nil {
			t.Fatalf("%v: AppendBinary: %v", st.Kind(), err)
		}
		got, err := Decode(st.Kind(), b)
		if err != nil {
			t.Fatalf("%v: Decode: %v", st.Kind(), err)
		}
		if got.Kind() != st.Kind() {
			t.Fatalf("%v: decoded kind %v", st.Kind(), got.Kind())
		}
		if a, b := next[st.Kind()](st), next[st.Kind()](got); a != b {
			t.Fatalf("%v: restored state answers %+v, original %+v", st.Kind(), b, a)
		}
		if _, err := Decode(st.Kind(), b[:len(b)-1]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("%v: truncated encoding: err %v, want ErrCorrupt", st.Kind(), err)
		}
	}
	if _, err := Decode(Kind(99), []byte{1}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("unknown kind: err %v", err)
	}
}
