package command

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// aclCategories are the categories ACL CAT lists: Redis's, plus ratelimit
// for the limiter commands. COMMAND lists a command's in this order.
var aclCategories = []string{"keyspace", "read", "write", "set", "sortedset", "list", "hash", "string",
	"bitmap", "hyperloglog", "geo", "stream", "pubsub", "admin", "fast", "slow", "blocking", "dangerous",
	"connection", "transaction", "scripting", "ratelimit"}

// aclUser is an ACL user. Sessions authenticated as it hold it and read its
// current permissions at each command, so ACL SETUSER and ACL LOAD apply to
// them at once.
type aclUser struct {
	name string
	perm atomic.Pointer[aclPerm]
}

// aclPerm is what a user may do, immutable once published: changes build a
// new one.
type aclPerm struct {
	on        bool
	nopass    bool
	passwords []string // SHA-256 hex digests, in the order added
	allKeys   bool
	patterns  []string
	channels  bool     // &* (there is no pub/sub: kept for ACL LIST only)
	cmds      []uint64 // a bit per Table.all id
	allCmds   bool     // every bit set: the dispatch fast path
	cmdRules  []string // the command rules that built cmds, for ACL LIST
	deleted   bool     // the user was removed: its connections are closed
}

// newPerm is a new user's permissions, Redis's: off, no password, no keys,
// no commands.
func newPerm(t *Table) *aclPerm {
	return &aclPerm{cmds: make([]uint64, (len(t.all)+63)/64), cmdRules: []string{"-@all"}}
}

// defaultPerm is the default user's at start: on, no password, everything.
func defaultPerm(t *Table) *aclPerm {
	p := newPerm(t)
	for _, r := range []string{"on", "nopass", "allkeys", "allchannels", "allcommands"} {
		if err := p.apply(t, r); err != nil {
			panic(err) // the rules above are valid
		}
	}
	return p
}

func (p *aclPerm) clone() *aclPerm {
	q := *p
	q.passwords = slices.Clone(p.passwords)
	q.patterns = slices.Clone(p.patterns)
	q.cmds = slices.Clone(p.cmds)
	q.cmdRules = slices.Clone(p.cmdRules)
	return &q
}

func (p *aclPerm) can(c *Command) bool { return p.cmds[c.id/64]&(1<<(c.id%64)) != 0 }

// setCmd allows or denies c, and a container's subcommands with it.
func (p *aclPerm) setCmd(c *Command, allow bool) {
	if allow {
		p.cmds[c.id/64] |= 1 << (c.id % 64)
	} else {
		p.cmds[c.id/64] &^= 1 << (c.id % 64)
	}
	for _, s := range c.Subs {
		p.setCmd(s, allow)
	}
}

func hashPassword(pass string) string {
	sum := sha256.Sum256([]byte(pass))
	return hex.EncodeToString(sum[:])
}

// Reasons ACL SETUSER gives for a refused rule, Redis's texts.
var (
	errACLSyntax      = errors.New("Syntax error")
	errACLUnknown     = errors.New("Unknown command or category name in ACL")
	errACLNoSuchPass  = errors.New("The password you are trying to remove from the user does not exist")
	errACLHash        = errors.New("The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters")
	errACLFirstArg    = errors.New("Allowing first-arg of a subcommand is not supported")
	errACLPatternLate = errors.New("Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns")
)

// apply applies one ACL rule, as ACL SETUSER and the ACL file spell it.
func (p *aclPerm) apply(t *Table, rule string) error {
	switch strings.ToLower(rule) {
	case "on":
		p.on = true
		return nil
	case "off":
		p.on = false
		return nil
	case "nopass":
		p.nopass, p.passwords = true, nil
		return nil
	case "resetpass":
		p.nopass, p.passwords = false, nil
		return nil
	case "allkeys":
		p.allKeys, p.patterns = true, []string{"*"}
		return nil
	case "resetkeys":
		p.allKeys, p.patterns = false, nil
		return nil
	case "allchannels":
		p.channels = true
		return nil
	case "resetchannels":
		p.channels = false
		return nil
	case "allcommands", "+@all":
		p.setAll(true)
		return nil
	case "nocommands", "-@all":
		p.setAll(false)
		return nil
	case "reset":
		*p = *newPerm(t)
		return nil
	}
	if rule == "" {
		return errACLSyntax
	}
	arg := rule[1:]
	switch rule[0] {
	case '>':
		p.addPassword(hashPassword(arg))
	case '<':
		return p.removePassword(hashPassword(arg))
	case '#':
		if !validHash(arg) {
			return errACLHash
		}
		p.addPassword(arg)
	case '!':
		if !validHash(arg) {
			return errACLHash
		}
		return p.removePassword(arg)
	case '~':
		if p.allKeys {
			return errACLPatternLate
		}
		if arg == "*" {
			p.allKeys, p.patterns = true, []string{"*"}
		} else if !slices.Contains(p.patterns, arg) {
			p.patterns = append(p.patterns, arg)
		}
	case '&':
		p.channels = true // no pub/sub: any channel rule is accepted and kept as &*
	case '+', '-':
		return p.applyCmdRule(t, rule)
	default:
		return errACLSyntax
	}
	return nil
}

func (p *aclPerm) setAll(allow bool) {
	for i := range p.cmds {
		p.cmds[i] = 0
		if allow {
			p.cmds[i] = ^uint64(0)
		}
	}
	p.allCmds = allow
	p.cmdRules = []string{map[bool]string{true: "+@all", false: "-@all"}[allow]}
}

// applyCmdRule applies +cmd, -cmd, +cmd|sub, -cmd|sub, +@cat or -@cat.
func (p *aclPerm) applyCmdRule(t *Table, rule string) error {
	allow := rule[0] == '+'
	name := strings.ToLower(rule[1:])
	if cat, ok := strings.CutPrefix(name, "@"); ok {
		if !slices.Contains(aclCategories, cat) {
			return errACLUnknown
		}
		for _, c := range t.cats[cat] {
			p.setCmd(c, allow)
		}
	} else {
		c, err := t.aclCommand(name)
		if err != nil {
			return err
		}
		p.setCmd(c, allow)
	}
	p.allCmds = !slices.ContainsFunc(p.cmds, func(w uint64) bool { return w != ^uint64(0) })
	p.cmdRules = append(p.cmdRules, string(rule[0])+name)
	return nil
}

// aclCommand finds the command or subcommand an ACL rule names.
func (t *Table) aclCommand(name string) (*Command, error) {
	base, sub, isSub := strings.Cut(name, "|")
	c := t.byName[base]
	if c == nil {
		return nil, errACLUnknown
	}
	if !isSub {
		return c, nil
	}
	if strings.Contains(sub, "|") {
		return nil, errACLFirstArg
	}
	s := c.subIndex[sub]
	if s == nil {
		return nil, errACLUnknown
	}
	return s, nil
}

func validHash(h string) bool {
	if len(h) != 64 {
		return false
	}
	for _, ch := range []byte(h) {
		if !('0' <= ch && ch <= '9' || 'a' <= ch && ch <= 'f') {
			return false
		}
	}
	return true
}

func (p *aclPerm) addPassword(h string) {
	p.nopass = false
	if !slices.Contains(p.passwords, h) {
		p.passwords = append(p.passwords, h)
	}
}

func (p *aclPerm) removePassword(h string) error {
	i := slices.Index(p.passwords, h)
	if i < 0 {
		return errACLNoSuchPass
	}
	p.passwords = slices.Delete(p.passwords, i, i+1)
	return nil
}

// accepts reports whether pass authenticates a user with these permissions.
func (p *aclPerm) accepts(pass []byte) bool {
	if !p.on {
		return false
	}
	if p.nopass {
		return true
	}
	h := []byte(hashPassword(string(pass)))
	ok := 0
	for _, w := range p.passwords {
		ok |= subtle.ConstantTimeCompare(h, []byte(w))
	}
	return ok == 1
}

// keysText is the key patterns as ACL LIST and GETUSER show them.
func (p *aclPerm) keysText() string {
	parts := make([]string, len(p.patterns))
	for i, k := range p.patterns {
		parts[i] = "~" + k
	}
	return strings.Join(parts, " ")
}

// describe renders the rules that rebuild the user, as ACL LIST and the ACL
// file spell them.
func (p *aclPerm) describe() string {
	parts := []string{map[bool]string{true: "on", false: "off"}[p.on]}
	if p.nopass {
		parts = append(parts, "nopass")
	}
	for _, h := range p.passwords {
		parts = append(parts, "#"+h)
	}
	if k := p.keysText(); k != "" {
		parts = append(parts, k)
	}
	parts = append(parts, map[bool]string{true: "&*", false: "resetchannels"}[p.channels])
	parts = append(parts, p.cmdRules...)
	return strings.Join(parts, " ")
}

// denied returns the NOPERM error for running args with command c, or "".
func (p *aclPerm) denied(user string, c *Command, args [][]byte, scratch [][]byte) string {
	if !p.allCmds && !p.can(c) {
		return fmt.Sprintf("NOPERM User %s has no permissions to run the '%s' command", user, c.Name)
	}
	if p.allKeys {
		return ""
	}
	for _, k := range c.keysOf(args, scratch[:0]) {
		if !slices.ContainsFunc(p.patterns, func(pat string) bool { return globMatch([]byte(pat), string(k)) }) {
			return "NOPERM No permissions to access a key"
		}
	}
	return ""
}

// keysOf appends every key of a request to dst, by the command's key spec.
func (c *Command) keysOf(args, dst [][]byte) [][]byte {
	k := c.Keys
	if k.Find != nil {
		return k.Find(args, dst)
	}
	if k.First <= 0 {
		return dst
	}
	last := k.Last
	if last < 0 {
		last += len(args)
	}
	step := max(k.Step, 1)
	for i := k.First; i <= last && i < len(args); i += step {
		dst = append(dst, args[i])
	}
	return dst
}

// acl holds the users. Changes take mu; sessions read a user's permissions
// without it.
type acl struct {
	table *Table
	file  string // --aclfile, "" none

	mu    sync.Mutex
	users map[string]*aclUser
	def   *aclUser // the default user, never removed
}

func newACL(t *Table, file string) *acl {
	a := &acl{table: t, file: file, users: make(map[string]*aclUser)}
	a.def = &aclUser{name: "default"}
	a.def.perm.Store(defaultPerm(t))
	a.users["default"] = a.def
	return a
}

// user returns the named user, or nil.
func (a *acl) user(name string) *aclUser {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.users[name]
}

// startUser is the user a new or reset connection is authenticated as:
// the default user when it needs no password, else none.
func (a *acl) startUser() *aclUser {
	if a.open() {
		return a.def
	}
	return nil
}

// open reports whether the default user needs no password (Redis's test
// for protected mode and for authenticating new connections).
func (a *acl) open() bool {
	p := a.def.perm.Load()
	return p.on && p.nopass
}

// setUser applies rules to the named user, creating it if needed; nothing
// changes unless every rule is valid.
func (a *acl) setUser(name string, rules []string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	u := a.users[name]
	var p *aclPerm
	if u == nil {
		p = newPerm(a.table)
	} else {
		p = u.perm.Load().clone()
	}
	for _, r := range rules {
		if err := p.apply(a.table, r); err != nil {
			return fmt.Errorf("Error in ACL SETUSER modifier '%s': %v", r, err)
		}
	}
	if u == nil {
		u = &aclUser{name: name}
		a.users[name] = u
	}
	u.perm.Store(p)
	return nil
}

// setPassword makes pass the default user's only password ("" none), as
// --requirepass and CONFIG SET requirepass do.
func (a *acl) setPassword(pass string) {
	rules := []string{"resetpass", ">" + pass}
	if pass == "" {
		rules = []string{"nopass"}
	}
	if err := a.setUser("default", rules); err != nil {
		panic(err) // both rule lists are valid
	}
}

// deleteUsers removes the named users and reports how many existed.
func (a *acl) deleteUsers(names []string) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if slices.Contains(names, "default") {
		return 0, errors.New("The 'default' user cannot be removed")
	}
	n := 0
	for _, name := range names {
		if u := a.users[name]; u != nil {
			a.remove(u)
			n++
		}
	}
	return n, nil
}

// remove drops u; its connections close at their next command. mu held.
func (a *acl) remove(u *aclUser) {
	delete(a.users, u.name)
	gone := newPerm(a.table)
	gone.deleted = true
	u.perm.Store(gone)
}

// names returns the user names, sorted.
func (a *acl) names() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]string, 0, len(a.users))
	for n := range a.users {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// list returns ACL LIST's lines, sorted by user name.
func (a *acl) list() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]string, 0, len(a.users))
	for n, u := range a.users {
		out = append(out, "user "+n+" "+u.perm.Load().describe())
	}
	slices.Sort(out)
	return out
}

var errNoACLFile = errors.New("This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration.")

// save writes every user to the ACL file, replacing it atomically.
func (a *acl) save() error {
	if a.file == "" {
		return errNoACLFile
	}
	text := strings.Join(a.list(), "\n") + "\n"
	tmp, err := os.CreateTemp(filepath.Dir(a.file), ".acl-*")
	if err != nil {
		return fmt.Errorf("There was an error trying to save the ACLs. Please check the server logs for more information (%v)", err)
	}
	_, err = tmp.WriteString(text)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), a.file)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("There was an error trying to save the ACLs. Please check the server logs for more information (%v)", err)
	}
	return nil
}

// load replaces the users with the ACL file's, all or nothing. Users the
// file does not name are removed; the default user, if not named, is back
// to its start state (on, no password, everything).
func (a *acl) load() error {
	if a.file == "" {
		return errNoACLFile
	}
	users, err := parseACLFile(a.table, a.file)
	if err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := users["default"]; !ok {
		users["default"] = defaultPerm(a.table)
	}
	for name, u := range a.users {
		if _, ok := users[name]; !ok {
			a.remove(u)
		}
	}
	for name, p := range users {
		u := a.users[name]
		if u == nil {
			u = &aclUser{name: name}
			a.users[name] = u
		}
		u.perm.Store(p)
	}
	return nil
}

// parseACLFile reads an ACL file: "user <name> <rule>..." lines; blank
// lines and lines starting with '#' are skipped.
func parseACLFile(t *Table, path string) (map[string]*aclPerm, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("Error loading ACLs, opening file '%s': %v", path, err)
	}
	users := make(map[string]*aclPerm)
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		fields := strings.Fields(line)
		fail := func(msg string) error {
			return fmt.Errorf("%s:%d: %s. WARNING: ACL errors detected, no change to the previously active ACL rules was performed", path, i+1, msg)
		}
		if fields[0] != "user" || len(fields) < 2 {
			return nil, fail("line should start with user keyword")
		}
		name := fields[1]
		if !validUserName(name) {
			return nil, fail("username can't contain spaces or null characters")
		}
		if _, dup := users[name]; dup {
			return nil, fail(fmt.Sprintf("Duplicate user '%s' found", name))
		}
		p := newPerm(t)
		for _, r := range fields[2:] {
			if err := p.apply(t, r); err != nil {
				return nil, fail(fmt.Sprintf("%v. Use ACL SETUSER with '%s' to test it", err, r))
			}
		}
		users[name] = p
	}
	return users, nil
}

func validUserName(name string) bool {
	return name != "" && !strings.ContainsAny(name, " \t\r\n\x00")
}
