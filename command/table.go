package command

import (
	"slices"
	"strings"
	"sync/atomic"

	"github.com/rlserver/rlserver/observe"
)

// Command is one row of the command table: everything dispatch, the arity
// error, COMMAND INFO/DOCS/LIST and (later) cluster slot routing need to
// know about a command. The table is the only place a command is described.
type Command struct {
	Name       string   // lower case; a subcommand is "container|sub"
	Arity      int      // Redis's convention: the name counts, negative means "at least"
	MaxArgs    int      // with a negative Arity: the most arguments (name included) accepted; 0 no bound
	Flags      []string // Redis command flags: write, readonly, fast, denyoom, admin, noscript, loading, stale, no_auth, no_multi, movablekeys, ...
	ACL        []string // ACL categories without '@': a row gives those its flags do not imply; prepare adds those (aclFromFlags)
	Keys       KeySpec  // key positions (zero: no keys)
	Group      string   // COMMAND DOCS group
	Since      string   // version that introduced it (rlserver's for CL.*)
	Summary    string
	Complexity string
	Args       []Arg
	Tips       []string   // COMMAND INFO's tips for cluster clients (request_policy:..., response_policy:...)
	Subs       []*Command // subcommands of a container (CLIENT, COMMAND, CONFIG, DEBUG)
	Run        func(c *Ctx, args [][]byte)
	// RunsQueue marks EXEC, which runs the commands MULTI queued: they are
	// logged in the slow log, not it; cluster mode routes it by their keys
	// and, refusing it, discards the transaction.
	RunsQueue bool
	// NoDecision marks a @ratelimit command that answers no decision
	// (CL.RELEASE, CL.RENEW): it is not counted by outcome.
	NoDecision bool
	// SetsCaching marks CLIENT CACHING, whose YES covers the next command
	// (it does not use it up itself).
	SetsCaching bool

	id        int      // index in Table.all: the command's bit in ACL permissions
	parent    *Command // a subcommand's container
	noAuth    bool     // runs before authentication
	readonly  bool     // the readonly flag: a read client-side caching could keep
	write     bool     // the write flag: a replica refuses it
	denyoom   bool     // the denyoom flag: refused past maxmemory under noeviction
	allowBusy bool     // runs while a script is busy (allow_busy; EXEC never)
	routed    bool     // cluster mode decides where it runs (it has keys, or it is EXEC)
	immediate bool     // runs at once even inside MULTI
	noMulti   bool     // refused inside MULTI (it takes shard locks EXEC already holds)
	noScript  bool     // refused inside a script (noscript)
	subIndex  map[string]*Command

	// stat is what the statistics and the slow log know of it.
	stat observe.Cmd
}

// KeySpec gives key positions as COMMAND INFO reports them: arguments First
// to Last (negative: counted from the end) every Step. Movable marks commands
// whose further keys are found by parsing (CL.ALL); First is still the first
// key, so that cluster clients route on it.
type KeySpec struct {
	First, Last, Step int
	Flags             []string // RW, RO, OW, ACCESS, UPDATE, INSERT, DELETE
	Movable           bool
	// Find, for a Movable command, appends the keys of a request (args,
	// the name included) to keys, as Redis's getkeys_proc does. Given any
	// arguments it must neither fail nor panic: it returns what it could
	// find.
	Find func(args, keys [][]byte) [][]byte
}

// Arg describes one argument for COMMAND DOCS.
type Arg struct {
	Name     string
	Type     string // key, string, integer, double, pure-token, oneof, block
	Token    string
	Optional bool
	Multiple bool
	Args     []Arg // for oneof and block
}

func argKey(name string) Arg         { return Arg{Name: name, Type: "key"} }
func argStr(name string) Arg         { return Arg{Name: name, Type: "string"} }
func argInt(name string) Arg         { return Arg{Name: name, Type: "integer"} }
func opt(a Arg) Arg                  { a.Optional = true; return a }
func many(a Arg) Arg                 { a.Multiple = true; return a }
func token(tok string) Arg           { return Arg{Name: strings.ToLower(tok), Type: "pure-token", Token: tok} }
func tokenArg(tok string, a Arg) Arg { a.Token = tok; return a }
func oneof(name string, args ...Arg) Arg {
	return Arg{Name: name, Type: "oneof", Args: args}
}
func block(name string, args ...Arg) Arg {
	return Arg{Name: name, Type: "block", Args: args}
}

// Table is the command table, indexed for dispatch.
type Table struct {
	cmds   []*Command
	byName map[string]*Command
	all    []*Command            // commands and subcommands, by id
	cats   map[string][]*Command // ACL category (no '@') → its commands and subcommands

	commandReply [2]atomic.Pointer[[]byte] // COMMAND's reply in RESP2 and RESP3 (by Proto&1), once built
}

func newTable(cmds []*Command) *Table {
	t := &Table{cmds: cmds, byName: make(map[string]*Command, len(cmds)), cats: make(map[string][]*Command)}
	for _, c := range cmds {
		c.prepare()
		t.index(c)
		t.byName[c.Name] = c
		t.byName[strings.ToUpper(c.Name)] = c // clients mostly send upper case: one lookup
		if len(c.Subs) > 0 {
			if !slices.ContainsFunc(c.Subs, func(s *Command) bool { return s.Name == c.Name+"|help" }) {
				// Before the subcommands' prepare: HELP shares their own categories.
				c.Subs = append(c.Subs, helpFor(c))
			}
			c.subIndex = make(map[string]*Command, len(c.Subs))
			for _, s := range c.Subs {
				s.prepare()
				s.parent = c
				t.index(s)
				_, sub, _ := strings.Cut(s.Name, "|")
				c.subIndex[sub] = s
			}
		}
	}
	return t
}

// index gives c its id and files it under its ACL categories.
func (t *Table) index(c *Command) {
	c.id = len(t.all)
	c.stat.ID = c.id
	t.all = append(t.all, c)
	for _, cat := range c.ACL {
		t.cats[cat] = append(t.cats[cat], c)
	}
}

func (c *Command) prepare() {
	c.ACL = aclFromFlags(c.Flags, c.ACL)
	for _, f := range c.Flags {
		switch f {
		case "no_auth":
			c.noAuth = true
		case "readonly":
			c.readonly = true
		case "write":
			c.write = true
		case "denyoom":
			c.denyoom = true
		case "allow_busy":
			c.allowBusy = !c.RunsQueue
		case "no_multi_queue":
			c.immediate = true
		case "no_multi":
			c.noMulti = true
		case "noscript":
			c.noScript = true
		}
	}
	c.stat = observe.Cmd{
		Name:     c.Name,
		FirstKey: c.Keys.First,
		// Limiter commands (CL.ALL is @slow: its rules are unbounded) are
		// timed as shares of their batch, as the fast ones are.
		TimedAlone:  slices.Contains(c.ACL, "slow") && !slices.Contains(c.ACL, "ratelimit"),
		SkipSlowlog: c.RunsQueue,
		Fast:        c.hasFlag("fast"),
		Decides:     slices.Contains(c.ACL, "ratelimit") && !c.NoDecision,
	}
	c.routed = c.Keys.First > 0 || c.Keys.Find != nil || c.RunsQueue
	if c.Keys.Movable && !c.hasFlag("movablekeys") {
		c.Flags = append(c.Flags, "movablekeys")
	}
}

// aclFromFlags is Redis's setImplicitACLCategories: a row's own
// categories plus those its flags imply, in ACL CAT's order. Every row's
// categories come from here, so that COMMAND and ACL rules agree with
// Redis's and with the flags.
func aclFromFlags(flags, own []string) []string {
	cats := slices.Clone(own)
	add := func(cat string) {
		if !slices.Contains(cats, cat) {
			cats = append(cats, cat)
		}
	}
	for _, f := range flags {
		switch f {
		case "write":
			add("write")
		case "readonly":
			if !slices.Contains(own, "scripting") {
				add("read")
			}
		case "admin":
			add("admin")
			add("dangerous")
		case "pubsub":
			add("pubsub")
		case "fast":
			add("fast")
		case "blocking":
			add("blocking")
		}
	}
	if !slices.Contains(cats, "fast") {
		add("slow")
	}
	slices.SortStableFunc(cats, func(a, b string) int {
		return slices.Index(aclCategories, a) - slices.Index(aclCategories, b)
	})
	return cats
}

func (c *Command) hasFlag(f string) bool {
	for _, x := range c.Flags {
		if x == f {
			return true
		}
	}
	return false
}

// arityOK reports whether n arguments (the name included) fit the arity.
func (c *Command) arityOK(n int) bool {
	if c.Arity >= 0 {
		return n == c.Arity
	}
	return n >= -c.Arity && (c.MaxArgs == 0 || n <= c.MaxArgs)
}

// lookup finds a command by name, case-insensitively, without allocating
// for names already in lower case or short enough for scratch.
func (t *Table) lookup(name []byte, scratch *[32]byte) *Command {
	if c, ok := t.byName[string(name)]; ok {
		return c
	}
	if len(name) > len(scratch) {
		return t.byName[strings.ToLower(string(name))]
	}
	low := scratch[:len(name)]
	for i, ch := range name {
		if 'A' <= ch && ch <= 'Z' {
			ch += 'a' - 'A'
		}
		low[i] = ch
	}
	return t.byName[string(low)]
}

func (c *Command) sub(name []byte) *Command {
	return c.subIndex[strings.ToLower(string(name))]
}

// displayFlags are the flags COMMAND INFO reports (internal markers removed).
func (c *Command) displayFlags() []string {
	out := make([]string, 0, len(c.Flags))
	for _, f := range c.Flags {
		if f != "no_multi_queue" {
			out = append(out, f)
		}
	}
	return out
}

func upper(s string) string { return strings.ToUpper(s) }

// helpFor makes a container's HELP subcommand, listing its subcommands
// from the table as Redis's HELP replies do. It is in the categories of
// their own (not implied by flags) that they all share, as Redis's: CLIENT
// HELP @connection, OBJECT HELP @keyspace, SCRIPT HELP @scripting.
func helpFor(container *Command) *Command {
	name := container.Name
	var shared []string
	for i, s := range container.Subs {
		if i == 0 {
			shared = slices.Clone(s.ACL)
		}
		shared = slices.DeleteFunc(shared, func(cat string) bool { return !slices.Contains(s.ACL, cat) })
	}
	return &Command{
		Name: name + "|help", Arity: 2, Flags: []string{"loading", "stale"}, ACL: shared,
		Group: container.Group, Since: "0.1.0", Complexity: "O(1)", Summary: "Shows helpful text about the different subcommands.",
		Run: func(c *Ctx, args [][]byte) {
			lines := []string{upper(name) + " <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"}
			for _, s := range container.Subs {
				_, sub, _ := strings.Cut(s.Name, "|")
				lines = append(lines, upper(sub), "    "+s.Summary)
			}
			c.W.Array(len(lines))
			for _, l := range lines {
				c.W.Status(l)
			}
		},
	}
}
