package engine

import (
	"bytes"
	"strconv"
	"testing"
	"time"
)

// Fuzz targets for the window and lease states: random operation sequences
// must never panic or admit beyond the bound, and decoders must survive any
// input. Run each with, e.g.,
//
//	go test -run '^$' -fuzz '^FuzzWindowOps$' -fuzztime 1m ./engine

// fuzzScale returns w×k/den, saturating.
func fuzzScale(w int64, k uint8, den int64) int64 { return mulDivFloor(w, int64(k), den) }

// checkDecision checks what every decision must satisfy.
func checkDecision(t *testing.T, what string, d Decision, limit, n int64) {
	t.Helper()
	switch {
	case d.Limit != limit:
		t.Fatalf("%s = %s: limit %d", what, fmtWD(d), limit)
	case d.Remaining < 0 || d.Remaining > limit:
		t.Fatalf("%s = %s: remaining out of [0, limit]", what, fmtWD(d))
	case d.ResetAfter < 0:
		t.Fatalf("%s = %s: negative reset", what, fmtWD(d))
	case d.Allowed && d.RetryAfter != 0:
		t.Fatalf("%s = %s: admitted with a retry", what, fmtWD(d))
	case d.Allowed && n > 0 && d.ResetAfter == 0:
		t.Fatalf("%s = %s: admitted but fresh", what, fmtWD(d))
	case !d.Allowed && (d.RetryAfter == Never) != (n > limit):
		t.Fatalf("%s = %s: Never iff n > limit", what, fmtWD(d))
	case !d.Allowed && d.RetryAfter != Never && d.RetryAfter <= 0:
		t.Fatalf("%s = %s: denied without a wait", what, fmtWD(d))
	case d.Allowed && n > 0 && d.Remaining > limit-n:
		t.Fatalf("%s = %s: remaining beyond limit-n", what, fmtWD(d))
	}
}

func FuzzWindowOps(f *testing.F) {
	f.Add(uint8(1), uint16(3), uint64(time.Second), uint64(wt0), []byte{0, 1, 10, 0, 2, 10, 0, 1, 200, 2, 0, 100, 0, 3, 40, 3, 0, 0, 0, 1, 0})
	f.Add(uint8(2), uint16(10), uint64(10*time.Second), uint64(wt0), []byte{0, 6, 30, 0, 4, 50, 0, 1, 0, 1, 3, 10, 0, 3, 10, 3, 0, 0, 0, 9, 60})
	f.Add(uint8(3), uint16(5), uint64(7), uint64(0), []byte{0, 1, 1, 0, 1, 0, 0, 3, 5, 2, 0, 30, 0, 2, 3, 3, 0, 0, 1, 4, 4})
	f.Add(uint8(2), uint16(65535), ^uint64(0), ^uint64(0), []byte{0, 255, 255, 0, 254, 1, 2, 0, 255, 0, 7, 7})
	f.Fuzz(func(t *testing.T, mode uint8, limit uint16, window, start uint64, ops []byte) {
		p := WindowParams{
			Limit:  1 + int64(limit%2000),
			Window: time.Duration(1 + window%uint64(maxInt64)),
			Mode:   WindowMode(1 + mode%3),
		}
		w := int64(p.Window)
		var s Window
		var evs []winEvent
		now, last := int64(start>>1), int64(0)
		for len(ops) >= 3 {
			kind, a, b := ops[0], ops[1], ops[2]
			ops = ops[3:]
			switch kind % 4 {
			case 0, 1:
				now = winAdd(now, fuzzScale(w, b, 64))
				n := int64(a) % (p.Limit + 2)
				if a == 255 {
					n = p.Limit
				}
				call := "Take(" + strconv.FormatInt(now, 10) + ", " + strconv.FormatInt(n, 10) + ")"
				chk := s.Check(now, p, n)
				before, _ := appendV1(&s, nil)
				d := s.Take(now, p, n)
				checkDecision(t, call, d, p.Limit, n)
				if chk != d {
					t.Fatalf("%s = %s, Check = %s", call, fmtWD(d), fmtWD(chk))
				}
				if d.Allowed && n > 0 {
					last = max(last, now)
					evs = append(evs, winEvent{last, n})
				} else if after, _ := appendV1(&s, nil); !bytes.Equal(before, after) {
					t.Fatalf("%s = %s changed the state", call, fmtWD(d))
				}
			case 2:
				now = max(now-fuzzScale(w, b, 256), 0) // the clock steps back
			case 3: // a round trip through the disk codec, ref the clock
				s = throughCodec(t, &s, now)
			}
		}
		if err := checkWindowBound(p, evs); err != nil {
			t.Fatalf("%+v: %v", p, err)
		}
	})
}

func FuzzWindowDecode(f *testing.F) {
	for _, mode := range []WindowMode{WindowFixed, WindowSliding, WindowLog} {
		var s Window
		s.Take(wt0, WindowParams{Limit: 5, Window: time.Second, Mode: mode}, 2)
		s.Take(wt0+7, WindowParams{Limit: 5, Window: time.Second, Mode: mode}, 1)
		b, _ := appendV1(&s, nil)
		f.Add(b)
	}
	f.Add([]byte{windowVersion, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := decodeWindow(b)
		if err != nil {
			return
		}
		if enc, _ := appendV1(s, nil); !bytes.Equal(enc, b) {
			t.Fatalf("decodeWindow(%x) re-encodes as %x", b, enc)
		}
		mode := s.Mode()
		if mode == 0 {
			mode = WindowLog
		}
		p := WindowParams{Limit: max(1, s.limit), Window: time.Duration(max(1, s.window)), Mode: mode}
		for i, n := range []int64{0, 1, p.Limit, 1} {
			now := winAdd(s.last, int64(i)*(int64(p.Window)/3))
			checkDecision(t, "Take", s.Take(now, p, n), p.Limit, n)
			q := WindowParams{Limit: 3, Window: time.Second, Mode: mode}
			checkDecision(t, "Check", s.Check(now, q, n), q.Limit, n)
		}
	})
}

func FuzzConcurrencyOps(f *testing.F) {
	f.Add(uint8(3), uint64(wt0), []byte{0, 1, 10, 0, 0, 2, 20, 1, 0, 1, 5, 2, 1, 0, 0, 1, 2, 0, 50, 0, 3, 0, 0, 0, 4, 0, 100, 1, 5, 0, 0, 0})
	f.Add(uint8(1), uint64(0), []byte{0, 1, 255, 0, 0, 1, 1, 1, 6, 0, 0, 0, 4, 0, 255, 0, 0, 1, 1, 0})
	f.Fuzz(func(t *testing.T, limit uint8, start uint64, ops []byte) {
		lim := 1 + int64(limit)
		var s Concurrency
		now, next := int64(start>>2), 0 // stays far from the end of int64 time
		unit := int64(time.Millisecond)
		for len(ops) >= 4 {
			kind, a, b, c := ops[0], ops[1], ops[2], ops[3]
			ops = ops[4:]
			id := strconv.Itoa(next - 1 - int(c%8))
			lease := time.Duration(1 + int64(b)*unit)
			if b == 255 {
				lease = time.Duration(maxInt64)
			}
			switch kind % 7 {
			case 0, 1:
				n := int64(a) % (lim + 2)
				d := s.Take(now, ConcurrencyParams{Limit: lim, Lease: lease, ID: strconv.Itoa(next)}, n)
				checkDecision(t, "Acquire", d, lim, n)
				if d.Allowed && n > 0 {
					next++
				}
			case 2:
				s.Release(now, id)
			case 3:
				s.Renew(now, id, lease)
			case 4:
				now = winAdd(now, int64(a)*int64(b)*unit)
			case 5:
				now = max(now-int64(a)*unit, 0) // the clock steps back
			case 6: // a round trip through the disk codec, ref the clock
				s = throughCodec(t, &s, now)
			}
			if held := s.Held(now); held < 0 || held > lim {
				t.Fatalf("%d units held, limit %d", held, lim)
			}
			if s.ResetAfter(now) < 0 || len(s.leases) > int(lim) {
				t.Fatalf("reset %v, %d leases stored, limit %d", s.ResetAfter(now), len(s.leases), lim)
			}
		}
	})
}

func FuzzConcurrencyDecode(f *testing.F) {
	var s Concurrency
	s.Take(wt0, ConcurrencyParams{Limit: 4, Lease: time.Second, ID: "a"}, 2)
	s.Take(wt0+1, ConcurrencyParams{Limit: 4, Lease: time.Minute, ID: "lease-b"}, 1)
	b, _ := appendV1(&s, nil)
	f.Add(b)
	b, _ = appendV1(&Concurrency{}, nil)
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := decodeConcurrency(b)
		if err != nil {
			return
		}
		if enc, _ := appendV1(s, nil); !bytes.Equal(enc, b) {
			t.Fatalf("decodeConcurrency(%x) re-encodes as %x", b, enc)
		}
		lim := max(1, s.limit)
		checkDecision(t, "Check", s.Check(s.last, ConcurrencyParams{Limit: lim}, 0), lim, 0)
		chk, d := s.Check(s.last, ConcurrencyParams{Limit: lim}, 1), s.Take(s.last, ConcurrencyParams{Limit: lim, Lease: time.Second, ID: "x"}, 1)
		if chk.Allowed != d.Allowed || chk.Remaining != d.Remaining || chk.RetryAfter != d.RetryAfter {
			t.Fatalf("Check = %s, Acquire = %s", fmtWD(chk), fmtWD(d))
		}
		if s.last < maxInt64-int64(time.Second) {
			// (A lease taken within a second of the end of int64 time
			// expires at once.)
			checkDecision(t, "Acquire", d, lim, 1)
		}
		if s.Held(s.last) < 0 || s.ResetAfter(s.last) < 0 {
			t.Fatalf("held %d reset %v", s.Held(s.last), s.ResetAfter(s.last))
		}
		s.Release(s.last+1, "x")
		s.Renew(s.last+2, "a", time.Second)
	})
}

// throughCodec returns a copy of *s made by a round trip through the
// compact codec with ref.
func throughCodec[T any, P interface {
	*T
	State
}](t *testing.T, s P, ref int64) T {
	t.Helper()
	enc := s.AppendCompact(nil, ref)
	var d T
	if err := P(&d).DecodeCompact(enc, ref); err != nil {
		t.Fatalf("DecodeCompact(%x, %d): %v", enc, ref, err)
	}
	return d
}
