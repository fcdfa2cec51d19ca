package resp

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// TestParseInt: Redis's string2ll accepts the canonical decimal form of an
// int64 and nothing else.
func TestParseInt(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true}, {"1", 1, true}, {"-1", -1, true}, {"9223372036854775807", 1<<63 - 1, true},
		{"-9223372036854775808", -1 << 63, true}, {"9223372036854775808", 0, false},
		{"-9223372036854775809", 0, false}, {"18446744073709551616", 0, false}, {"99999999999999999999", 0, false},
		{"-1000000000000000000", -1e18, true}, {"999999999999999999", 999999999999999999, true},
		{"", 0, false}, {"-", 0, false}, {"+1", 0, false}, {"01", 0, false}, {" 1", 0, false},
		{"1 ", 0, false}, {"1.5", 0, false}, {"1e3", 0, false}, {"abc", 0, false}, {"-0", 0, false},
	} {
		got, ok := ParseInt([]byte(tc.in))
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("ParseInt(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// TestAppendInt: integer replies and aggregate headers match strconv's
// digits for every edge (each power of ten and its neighbours, where the
// digit count and the 8-digit groups change), for every value up to a
// million and for random values of every length; appending into a buffer
// with no room to spare grows it, and what was before is kept.
func TestAppendInt(t *testing.T) {
	vals := []int64{math.MaxInt64, math.MinInt64, math.MaxInt64 - 1, math.MinInt64 + 1}
	for p := int64(1); p <= 1e18; p *= 10 {
		vals = append(vals, p-1, p, p+1, -(p - 1), -p, -(p + 1))
	}
	for v := int64(-1e6); v <= 1e6; v++ {
		vals = append(vals, v)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		v := rng.Int64() >> rng.IntN(63)
		if rng.IntN(2) == 0 {
			v = -v
		}
		vals = append(vals, v)
	}
	for _, v := range vals {
		if got, want := string(AppendInt([]byte("x"), v)), "x:"+strconv.FormatInt(v, 10)+"\r\n"; got != want {
			t.Fatalf("AppendInt(%d) = %q, want %q", v, got, want)
		}
		full := make([]byte, 3) // no spare capacity
		copy(full, "abc")
		if got, want := string(appendLine(full, '*', v)), "abc*"+strconv.FormatInt(v, 10)+"\r\n"; got != want {
			t.Fatalf("appendLine(%d) on a full buffer = %q, want %q", v, got, want)
		}
	}
	for _, n := range []int{0, 9, 10, 99, 12345678, 123456789} {
		ds := strconv.Itoa(n)
		for _, tc := range []struct{ got, want string }{
			{string(AppendArray(nil, n)), "*" + ds + "\r\n"},
			{string(AppendMap(nil, 3, n)), "%" + ds + "\r\n"},
			{string(AppendSet(nil, 3, n)), "~" + ds + "\r\n"},
			{string(AppendMap(nil, 2, n)), "*" + strconv.Itoa(2*n) + "\r\n"},
		} {
			if tc.got != tc.want {
				t.Errorf("header of %d: %q, want %q", n, tc.got, tc.want)
			}
		}
	}
}
