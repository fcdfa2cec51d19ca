package command

import (
	"slices"
	"strings"
	"testing"
)

// TestACLRulesRoundTrip: replaying a user's description on a new user
// gives the same permissions, whatever rules built them.
func TestACLRulesRoundTrip(t *testing.T) {
	tb := newTable(commandTable())
	for _, rules := range [][]string{
		{"on", ">a", ">b", "<a", "~x:*", "~y", "+@ratelimit", "-cl.all", "+config|get"},
		{"on", "nopass", "allkeys", "allcommands", "-@dangerous", "+keys", "-client|list"},
		{"off", "#" + hashPassword("p"), "resetkeys", "~k", "+client", "-client|setname"},
		{"on", ">x", "reset", "on", "+ping"},
	} {
		p := newPerm(tb)
		for _, r := range rules {
			if err := p.apply(tb, r); err != nil {
				t.Fatalf("%v: %q: %v", rules, r, err)
			}
		}
		q := newPerm(tb)
		for _, r := range strings.Fields(p.describe()) {
			if err := q.apply(tb, r); err != nil {
				t.Fatalf("replaying %q: %q: %v", p.describe(), r, err)
			}
		}
		if q.describe() != p.describe() || !slices.Equal(q.cmds, p.cmds) || q.allCmds != p.allCmds || q.allKeys != p.allKeys {
			t.Fatalf("%v: described %q, replayed as %q (commands equal: %v)", rules, p.describe(), q.describe(), slices.Equal(q.cmds, p.cmds))
		}
	}
}

// TestACLCommandBits: a container rule covers its subcommands, a
// subcommand rule only itself, categories their commands; allCmds is set
// only when every command is allowed.
func TestACLCommandBits(t *testing.T) {
	tb := newTable(commandTable())
	cmd := func(name string) *Command { c, err := tb.aclCommand(name); must(t, err); return c }
	p := newPerm(tb)
	must(t, p.apply(tb, "+config"))
	must(t, p.apply(tb, "-config|set"))
	if !p.can(cmd("config|get")) || p.can(cmd("config|set")) || p.can(cmd("ping")) {
		t.Fatal("config rules: wrong bits")
	}
	must(t, p.apply(tb, "+@ratelimit"))
	if !p.can(cmd("cl.throttle")) || !p.can(cmd("gcra")) || p.can(cmd("del")) || p.allCmds {
		t.Fatal("@ratelimit: wrong bits")
	}
	must(t, p.apply(tb, "allcommands"))
	if !p.allCmds {
		t.Fatal("allcommands: allCmds not set")
	}
	must(t, p.apply(tb, "-ping"))
	must(t, p.apply(tb, "+ping"))
	if !p.allCmds {
		t.Fatal("-ping +ping: allCmds not set back")
	}
	for _, bad := range []string{"+nosuch", "+config|nosuch", "+config|get|x", "+@nosuch", "x", "#abc", "<nope"} {
		if err := p.apply(tb, bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	must(t, p.apply(tb, "allkeys"))
	if err := p.apply(tb, "~more"); err != errACLPatternLate {
		t.Errorf("~more after allkeys: %v", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
