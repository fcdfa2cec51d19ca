package command

import (
	"crypto/rand"
	"encoding/hex"
	"slices"
	"strings"

	"github.com/rlserver/rlserver/resp"
)

// aclSub is an ACL subcommand's table row: admin ones change or reveal
// users, the rest are harmless.
func aclSub(name string, arity int, admin bool, summary string, run func(*Ctx, [][]byte), args ...Arg) *Command {
	c := sub("acl|"+name, arity, summary, run, args...)
	c.Group, c.Since = "server", "6.0.0"
	if admin {
		c.Flags = append(c.Flags, "admin")
	}
	return c
}

func aclContainer() *Command {
	return container("acl", "server", "A container for Access List Control commands.",
		aclSub("setuser", -3, true, "Creates and modifies an ACL user and its rules.", cmdACLSetUser,
			argStr("username"), opt(many(argStr("rule")))),
		aclSub("getuser", 3, true, "Lists the ACL rules of a user.", cmdACLGetUser, argStr("username")),
		aclSub("deluser", -3, true, "Deletes ACL users, and terminates their connections.", cmdACLDelUser, many(argStr("username"))),
		aclSub("list", 2, true, "Dumps the effective rules in ACL file format.", cmdACLList),
		aclSub("users", 2, true, "Lists all ACL users.", cmdACLUsers),
		aclSub("whoami", 2, false, "Returns the authenticated username of the current connection.", cmdACLWhoAmI),
		aclSub("cat", -2, false, "Lists the ACL categories, or the commands inside a category.", cmdACLCat, opt(argStr("category"))),
		aclSub("save", 2, true, "Saves the effective ACL rules in the configured ACL file.", cmdACLSave),
		aclSub("load", 2, true, "Reloads the rules from the configured ACL file.", cmdACLLoad),
		aclSub("genpass", -2, false, "Generates a pseudorandom, secure password that can be used to identify ACL users.", cmdACLGenPass, opt(argInt("bits"))),
	)
}

// ACL SETUSER username [rule ...]
func cmdACLSetUser(c *Ctx, args [][]byte) {
	name := string(args[2])
	if !validUserName(name) {
		c.err("ERR Usernames can't contain spaces or null characters")
		return
	}
	rules := make([]string, len(args)-3)
	for i, r := range args[3:] {
		rules[i] = string(r)
	}
	if err := c.h.acl.setUser(name, rules); err != nil {
		c.err("ERR " + err.Error())
		return
	}
	c.W.OK()
}

// ACL GETUSER username
func cmdACLGetUser(c *Ctx, args [][]byte) {
	u := c.h.acl.user(string(args[2]))
	if u == nil {
		c.W.Null()
		return
	}
	p := u.perm.Load()
	flags := []string{map[bool]string{true: "on", false: "off"}[p.on]}
	if p.nopass {
		flags = append(flags, "nopass")
	}
	c.W.Map(6)
	c.W.BulkString("flags")
	c.W.Array(len(flags))
	for _, f := range flags {
		c.W.BulkString(f)
	}
	c.W.BulkString("passwords")
	c.W.Array(len(p.passwords))
	for _, h := range p.passwords {
		c.W.BulkString(h)
	}
	c.W.BulkString("commands")
	c.W.BulkString(strings.Join(p.cmdRules, " "))
	c.W.BulkString("keys")
	c.W.BulkString(p.keysText())
	c.W.BulkString("channels")
	c.W.BulkString(map[bool]string{true: "&*", false: ""}[p.channels])
	c.W.BulkString("selectors")
	c.W.Array(0)
}

// ACL DELUSER username [username ...]
func cmdACLDelUser(c *Ctx, args [][]byte) {
	names := make([]string, len(args)-2)
	for i, a := range args[2:] {
		names[i] = string(a)
	}
	n, err := c.h.acl.deleteUsers(names)
	if err != nil {
		c.err("ERR " + err.Error())
		return
	}
	c.W.Int(int64(n))
}

func cmdACLList(c *Ctx, args [][]byte) { c.bulkStrings(c.h.acl.list()) }

func cmdACLUsers(c *Ctx, args [][]byte) { c.bulkStrings(c.h.acl.names()) }

func cmdACLWhoAmI(c *Ctx, args [][]byte) { c.W.BulkString(c.sess.user.name) }

// ACL CAT [category]
func cmdACLCat(c *Ctx, args [][]byte) {
	if len(args) > 3 {
		c.err(errWrongArgs("acl|cat"))
		return
	}
	if len(args) == 2 {
		c.bulkStrings(aclCategories)
		return
	}
	cat := strings.ToLower(string(args[2]))
	if !slices.Contains(aclCategories, cat) {
		c.err("ERR Unknown category '" + string(args[2]) + "'")
		return
	}
	cmds := c.h.table.cats[cat]
	names := make([]string, len(cmds))
	for i, cmd := range cmds {
		names[i] = cmd.Name
	}
	c.bulkStrings(names)
}

func cmdACLSave(c *Ctx, args [][]byte) {
	if err := c.h.acl.save(); err != nil {
		c.err("ERR " + err.Error())
		return
	}
	c.W.OK()
}

func cmdACLLoad(c *Ctx, args [][]byte) {
	if err := c.h.acl.load(); err != nil {
		c.err("ERR " + err.Error())
		return
	}
	c.W.OK()
}

// ACL GENPASS [bits]: 256 bits unless told, as hex.
func cmdACLGenPass(c *Ctx, args [][]byte) {
	bits := int64(256)
	if len(args) > 3 {
		c.err(errWrongArgs("acl|genpass"))
		return
	}
	if len(args) == 3 {
		n, ok := resp.ParseInt(args[2])
		if !ok || n <= 0 || n > 4096 {
			c.err("ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096")
			return
		}
		bits = n
	}
	buf := make([]byte, (bits+7)/8)
	rand.Read(buf)
	c.W.BulkString(hex.EncodeToString(buf)[:(bits+3)/4])
}

// bulkStrings replies an array of bulk strings.
func (c *Ctx) bulkStrings(ss []string) {
	c.W.Array(len(ss))
	for _, s := range ss {
		c.W.BulkString(s)
	}
}
