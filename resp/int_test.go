package resp

import "testing"

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
