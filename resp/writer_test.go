package resp

import "testing"

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
