package observe

import "testing"

// TestRedacted: the secrets Redis keeps out of the slow log are kept out,
// whatever the case of the parameter's name.
func TestRedacted(t *testing.T) {
	args := func(s ...string) [][]byte {
		out := make([][]byte, len(s))
		for i, a := range s {
			out[i] = []byte(a)
		}
		return out
	}
	for _, tc := range []struct {
		cmd  string
		args [][]byte
		want []bool
	}{
		{"config|set", args("CONFIG", "SET", "requirepass", "s3cret"), []bool{false, false, false, true}},
		{"config|set", args("config", "set", "RequirePass", "s3cret", "maxclients", "10"), []bool{false, false, false, true, false, false}},
		{"config|set", args("CONFIG", "SET", "masterauth", "s3cret"), []bool{false, false, false, true}},
		{"auth", args("AUTH", "user", "pass"), []bool{false, true, true}},
		{"hello", args("HELLO", "3", "AUTH", "u", "p", "SETNAME", "n"), []bool{false, false, false, true, true, false, false}},
	} {
		for i, want := range tc.want {
			if got := redacted(&Cmd{Name: tc.cmd}, tc.args, i); got != want {
				t.Errorf("%s %q: argument %d redacted %v, want %v", tc.cmd, tc.args, i, got, want)
			}
		}
	}
}
