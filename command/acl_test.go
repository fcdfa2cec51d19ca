package command

import (
	"fmt"
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

// TestCommandCategoriesFromFlags: a row names only the categories its
// flags do not imply (aclFromFlags adds those), so that every command's
// categories follow Redis's rule from its flags: @write exactly with
// write, @fast with fast, @slow without, @read with readonly (scripts
// aside), @admin and @dangerous with admin.
func TestCommandCategoriesFromFlags(t *testing.T) {
	derived := []string{"read", "write", "fast", "slow", "blocking", "pubsub"}
	var rows func(cs []*Command)
	rows = func(cs []*Command) {
		for _, c := range cs {
			for _, cat := range c.ACL {
				if slices.Contains(derived, cat) || c.hasFlag("admin") && (cat == "admin" || cat == "dangerous") {
					t.Errorf("%s names @%s, which its flags %v decide", c.Name, cat, c.Flags)
				}
			}
			rows(c.Subs)
		}
	}
	rows(commandTable())
	tb := newTable(commandTable())
	for _, c := range tb.all {
		has := func(cat string) bool { return slices.Contains(c.ACL, cat) }
		for _, cat := range c.ACL {
			if !slices.Contains(aclCategories, cat) {
				t.Errorf("%s: unknown category %q", c.Name, cat)
			}
		}
		if has("write") != c.hasFlag("write") || has("fast") != c.hasFlag("fast") || has("slow") == has("fast") ||
			has("read") != (c.hasFlag("readonly") && !has("scripting")) || c.hasFlag("admin") && !(has("admin") && has("dangerous")) {
			t.Errorf("%s: categories %v disagree with flags %v", c.Name, c.ACL, c.Flags)
		}
	}
	// As Redis's: HELP shares its subcommands' own categories.
	for name, want := range map[string]string{"client|help": "[slow connection]", "object|help": "[keyspace slow]",
		"script|help": "[slow scripting]", "config|help": "[slow]"} {
		c, err := tb.aclCommand(name)
		must(t, err)
		if fmt.Sprint(c.ACL) != want {
			t.Errorf("%s: %v, want %s", name, c.ACL, want)
		}
	}
}
