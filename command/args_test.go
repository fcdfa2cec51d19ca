package command

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/rlserver/rlserver/resp"
)

func TestParseDuration(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"1", time.Second, true}, {"60", time.Minute, true}, {"250ms", 250 * time.Millisecond, true},
		{"1s", time.Second, true}, {"15m", 15 * time.Minute, true}, {"2h", 2 * time.Hour, true},
		{"1d", 24 * time.Hour, true}, {"0", 0, false}, {"0ms", 0, false}, {"-1", 0, false},
		{"-5s", 0, false}, {"1.5s", 0, false}, {"s", 0, false}, {"ms", 0, false}, {"1x", 0, false},
		{"1S", 0, false}, {"", 0, false}, {"9223372036s", 9223372036 * time.Second, true},
		{"9223372037s", 0, false}, {"106751d", 106751 * 24 * time.Hour, true}, {"106752d", 0, false},
		{"1us", 0, false}, {"1 s", 0, false},
	} {
		got, ok := parseDuration([]byte(tc.in))
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("parseDuration(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestParseSeconds(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"1", time.Second, true}, {"0.5", 500 * time.Millisecond, true}, {".5", 500 * time.Millisecond, true},
		{"60", time.Minute, true}, {"0.000000001", 1, true}, {"0.0000000001", 0, false},
		{"0", 0, false}, {"0.0", 0, false}, {"-1", 0, false}, {".", 0, false},
		{"", 0, false}, {"1.5.5", 0, false}, {"abc", 0, false},
		// What strtod also takes: Java's Double.toString forms and more.
		{"1.0E7", 1e7 * time.Second, true}, {"1e3", 1000 * time.Second, true}, {"60.0", time.Minute, true},
		{"60.", time.Minute, true}, {"+2", 2 * time.Second, true}, {"5E-1", 500 * time.Millisecond, true},
		{"1.5e+2", 150 * time.Second, true}, {"1.0000000004", time.Second, true}, {"1.0000000005", time.Second + 1, true},
		{"2.5E-9", 3, true}, {"1e-10", 0, false}, {"-1e3", 0, false}, {"1e", 0, false}, {"e3", 0, false},
		{"1e3x", 0, false}, {"0x10", 0, false}, {"inf", 0, false}, {"nan", 0, false}, {" 1", 0, false},
		{"1e99999", 0, false}, {"1e10", 0, false}, {"9e9", 9e9 * time.Second, true}, {"1/2", 0, false},
	} {
		got, ok := parseSeconds([]byte(tc.in))
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("parseSeconds(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestRounding(t *testing.T) {
	for _, tc := range []struct {
		d         time.Duration
		ms, cellS int64
	}{
		{0, 0, 0}, {1, 1, 0}, {time.Millisecond, 1, 1}, {999 * time.Microsecond, 1, 0},
		{3 * time.Second, 3000, 3}, {3100 * time.Millisecond, 3100, 4}, {3*time.Second + 500*time.Microsecond, 3001, 3},
		{-1, -1, -1}, {math.MaxInt64, math.MaxInt64/int64(time.Millisecond) + 1, math.MaxInt64/int64(time.Second) + 1},
	} {
		if got := ceilMs(tc.d); got != tc.ms {
			t.Errorf("ceilMs(%v) = %d, want %d", tc.d, got, tc.ms)
		}
		if got := cellSeconds(tc.d); got != tc.cellS {
			t.Errorf("cellSeconds(%v) = %d, want %d", tc.d, got, tc.cellS)
		}
	}
}

func TestGlobMatch(t *testing.T) {
	for _, tc := range []struct {
		pat, s string
		want   bool
	}{
		{"*", "", true}, {"*", "abc", true}, {"a*", "abc", true}, {"a*", "bac", false},
		{"*c", "abc", true}, {"a?c", "abc", true}, {"a?c", "ac", false}, {"[ab]", "a", true},
		{"[ab]", "c", false}, {"[^ab]", "c", true}, {"[^ab]", "a", false}, {"[a-c]x", "bx", true},
		{"[c-a]x", "bx", true}, {"[a-c]x", "dx", false}, {`\*`, "*", true}, {`\*`, "a", false},
		{"rl:*:ip", "rl:user:ip", true}, {"rl:*:ip", "rl:user:id", false}, {"h[\\]]llo", "h]llo", true},
		{"**a", "bba", true}, {"[abc", "a", false},
	} {
		if got := globMatch([]byte(tc.pat), tc.s); got != tc.want {
			t.Errorf("globMatch(%q, %q) = %v, want %v", tc.pat, tc.s, got, tc.want)
		}
	}
}

// TestCommandTableShape walks the table: every command is named in lower
// case, runs something, has a real arity and consistent key positions, and
// documents its arguments; subcommands are named container|sub.
func TestCommandTableShape(t *testing.T) {
	tab := newTable(commandTable())
	seen := map[string]bool{}
	var check func(c *Command, parent string)
	check = func(c *Command, parent string) {
		if c.Name != strings.ToLower(c.Name) || seen[c.Name] {
			t.Errorf("%q: not lower case or duplicated", c.Name)
		}
		seen[c.Name] = true
		if parent != "" && !strings.HasPrefix(c.Name, parent+"|") {
			t.Errorf("subcommand %q not named %s|...", c.Name, parent)
		}
		if c.Run == nil && len(c.Subs) == 0 {
			t.Errorf("%s: no handler", c.Name)
		}
		if c.Arity == 0 || c.Summary == "" || c.Group == "" || c.Since == "" {
			t.Errorf("%s: arity %d, summary %q, group %q, since %q", c.Name, c.Arity, c.Summary, c.Group, c.Since)
		}
		if k := c.Keys; k.First != 0 && (k.Step < 1 || (k.Last > 0 && k.Last < k.First)) {
			t.Errorf("%s: bad key spec %+v", c.Name, k)
		}
		keyArgs := 0
		var count func([]Arg)
		count = func(args []Arg) {
			for _, a := range args {
				if a.Type == "key" {
					keyArgs++
				}
				count(a.Args)
			}
		}
		count(c.Args)
		if (c.Keys.First != 0) != (keyArgs > 0 || c.Keys.Movable) {
			t.Errorf("%s: key spec %+v but %d key arguments documented", c.Name, c.Keys, keyArgs)
		}
		if c.MaxArgs != 0 && (c.Arity > 0 || c.MaxArgs < -c.Arity) {
			t.Errorf("%s: MaxArgs %d with arity %d", c.Name, c.MaxArgs, c.Arity)
		}
		for _, s := range c.Subs {
			check(s, c.Name)
		}
	}
	for _, c := range tab.cmds {
		check(c, "")
	}
	for _, name := range []string{"cl.throttle", "gcra", "cl.tokenbucket", "cl.leakybucket", "cl.window", "cl.acquire",
		"cl.release", "cl.renew", "cl.all", "ping", "echo", "hello", "auth", "select", "quit", "reset", "client",
		"command", "info", "time", "dbsize", "config", "exists", "del", "unlink", "type", "ttl", "pttl", "scan",
		"keys", "flushdb", "flushall", "multi", "exec", "discard", "save", "bgsave", "lastsave", "shutdown", "debug"} {
		if tab.byName[name] == nil {
			t.Errorf("the contract's %s is missing from the table", name)
		}
	}
	var scratch [32]byte
	if tab.lookup([]byte("Cl.ThRoTtLe"), &scratch) != tab.byName["cl.throttle"] {
		t.Error("lookup is not case-insensitive")
	}
	if n := testing.AllocsPerRun(100, func() { tab.lookup([]byte("CL.THROTTLE"), &scratch) }); n != 0 {
		t.Errorf("lookup allocates %v times", n)
	}
}

func FuzzParsers(f *testing.F) {
	for _, s := range []string{"1", "250ms", "1d", "-1", "0.5", "9223372036854775807", "1e9", "..", "1.000000001"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if d, ok := parseDuration(b); ok && d <= 0 {
			t.Fatalf("parseDuration(%q) = %v accepted", b, d)
		}
		if d, ok := parseSeconds(b); ok && d <= 0 {
			t.Fatalf("parseSeconds(%q) = %v accepted", b, d)
		}
		if n, ok := parsePositive(b); ok && n <= 0 {
			t.Fatalf("parsePositive(%q) = %d accepted", b, n)
		}
		if n, ok := resp.ParseInt(b); ok {
			if got, _ := resp.ParseInt([]byte(itoa(n))); got != n {
				t.Fatalf("parseInt round trip %q -> %d -> %d", b, n, got)
			}
		}
		globMatch(b, string(b))
	})
}

func itoa(n int64) string {
	var buf [24]byte
	return string(appendIntText(buf[:0], n))
}

func appendIntText(b []byte, n int64) []byte {
	if n < 0 {
		b = append(b, '-')
		if n == -1<<63 {
			return append(b, "9223372036854775808"...)
		}
		n = -n
	}
	if n >= 10 {
		b = appendIntText(b, n/10)
	}
	return append(b, byte('0'+n%10))
}
