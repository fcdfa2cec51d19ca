package resp

import (
	"strconv"
	"strings"
	"testing"
)

// An error quoting what a client sent stays one line: CR and LF become
// spaces, as in Redis's error replies.
func TestAppendErrOneLine(t *testing.T) {
	for _, tc := range []struct{ msg, want string }{
		{"ERR plain", "-ERR plain\r\n"},
		{"ERR unknown subcommand '\r\n+OK'", "-ERR unknown subcommand '  +OK'\r\n"},
		{"ERR a\nb\rc", "-ERR a b c\r\n"},
	} {
		if got := string(AppendErr([]byte("x"), tc.msg)); got != "x"+tc.want {
			t.Errorf("AppendErr(%q) = %q, want %q", tc.msg, got, "x"+tc.want)
		}
	}
}

// TestAppendVerbatim: a verbatim string is "=" len+4 "txt:" in RESP3 and a
// bulk string in RESP2, for texts whose lengths cross a digit count.
func TestAppendVerbatim(t *testing.T) {
	for _, n := range []int{0, 5, 6, 9, 10, 995, 996, 12345} {
		text := strings.Repeat("a", n)
		for _, tc := range []struct{ got, want string }{
			{string(AppendVerbatim([]byte("x"), 3, text)), "x=" + strconv.Itoa(n+4) + "\r\ntxt:" + text + "\r\n"},
			{string(AppendVerbatim([]byte("x"), 2, []byte(text))), "x$" + strconv.Itoa(n) + "\r\n" + text + "\r\n"},
		} {
			if tc.got != tc.want {
				t.Errorf("verbatim of %d bytes: %q, want %q", n, tc.got, tc.want)
			}
		}
	}
}
