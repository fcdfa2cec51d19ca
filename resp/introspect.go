package resp

import (
	"strings"
)

// COMMAND, COMMAND COUNT|INFO|DOCS|LIST: generated from the command table.

func cmdCommand(c *Conn, args [][]byte) {
	t := c.srv.table
	c.out = appendArray(c.out, len(t.cmds))
	for _, cmd := range t.cmds {
		c.out = appendCommandInfo(c.out, c.proto, cmd)
	}
}

func cmdCommandCount(c *Conn, args [][]byte) {
	c.out = appendInt(c.out, int64(len(c.srv.table.cmds)))
}

// findCommand resolves "name" or "container|sub".
func (t *Table) findCommand(name string) *Command {
	name = strings.ToLower(name)
	top, sub, isSub := strings.Cut(name, "|")
	cmd := t.byName[top]
	if cmd == nil || !isSub {
		return cmd
	}
	return cmd.subIndex[sub]
}

// COMMAND INFO [name ...]
func cmdCommandInfo(c *Conn, args [][]byte) {
	t := c.srv.table
	if len(args) == 2 {
		cmdCommand(c, args)
		return
	}
	c.out = appendArray(c.out, len(args)-2)
	for _, a := range args[2:] {
		if cmd := t.findCommand(string(a)); cmd != nil {
			c.out = appendCommandInfo(c.out, c.proto, cmd)
		} else {
			c.out = appendNullArray(c.out, c.proto)
		}
	}
}

func appendNullArray(b []byte, proto int) []byte {
	if proto == 3 {
		return append(b, "_\r\n"...)
	}
	return append(b, "*-1\r\n"...)
}

func appendCommandInfo(b []byte, proto int, cmd *Command) []byte {
	b = appendArray(b, 10)
	b = appendBulkStr(b, cmd.Name)
	b = appendInt(b, int64(cmd.Arity))
	flags := cmd.displayFlags()
	b = appendSet(b, proto, len(flags))
	for _, f := range flags {
		b = appendStatus(b, f)
	}
	b = appendInt(b, int64(cmd.Keys.First))
	b = appendInt(b, int64(cmd.Keys.Last))
	b = appendInt(b, int64(cmd.Keys.Step))
	b = appendSet(b, proto, len(cmd.ACL))
	for _, a := range cmd.ACL {
		b = appendStatus(b, "@"+a)
	}
	b = appendArray(b, 0) // tips
	b = appendKeySpecs(b, proto, cmd.Keys)
	b = appendArray(b, len(cmd.Subs))
	for _, s := range cmd.Subs {
		b = appendCommandInfo(b, proto, s)
	}
	return b
}

// appendKeySpecs encodes Redis 7 key specifications: keys start at index
// First and run to Last (a range); CL.ALL's further keys are found by
// parsing, so its spec covers the first key and is flagged incomplete.
func appendKeySpecs(b []byte, proto int, k KeySpec) []byte {
	if k.First == 0 {
		return appendArray(b, 0)
	}
	b = appendArray(b, 1)
	flags := k.Flags
	if k.Movable {
		flags = append(append([]string(nil), flags...), "INCOMPLETE")
	}
	b = appendMap(b, proto, 3)
	b = appendBulkStr(b, "flags")
	b = appendSet(b, proto, len(flags))
	for _, f := range flags {
		b = appendStatus(b, f)
	}
	b = appendBulkStr(b, "begin_search")
	b = appendMap(b, proto, 2)
	b = appendBulkStr(b, "type")
	b = appendBulkStr(b, "index")
	b = appendBulkStr(b, "spec")
	b = appendMap(b, proto, 1)
	b = appendBulkStr(b, "index")
	b = appendInt(b, int64(k.First))
	b = appendBulkStr(b, "find_keys")
	b = appendMap(b, proto, 2)
	b = appendBulkStr(b, "type")
	b = appendBulkStr(b, "range")
	b = appendBulkStr(b, "spec")
	b = appendMap(b, proto, 3)
	last := k.Last
	if last > 0 {
		last -= k.First
	}
	b = appendBulkStr(b, "lastkey")
	b = appendInt(b, int64(last))
	b = appendBulkStr(b, "keystep")
	b = appendInt(b, int64(k.Step))
	b = appendBulkStr(b, "limit")
	return appendInt(b, 0)
}

// COMMAND DOCS [name ...]
func cmdCommandDocs(c *Conn, args [][]byte) {
	t := c.srv.table
	var cmds []*Command
	if len(args) == 2 {
		cmds = t.cmds
	} else {
		for _, a := range args[2:] {
			if cmd := t.findCommand(string(a)); cmd != nil {
				cmds = append(cmds, cmd)
			}
		}
	}
	c.out = appendMap(c.out, c.proto, len(cmds))
	for _, cmd := range cmds {
		c.out = appendBulkStr(c.out, cmd.Name)
		c.out = appendCommandDoc(c.out, c.proto, cmd)
	}
}

func appendCommandDoc(b []byte, proto int, cmd *Command) []byte {
	n := 4
	if len(cmd.Args) > 0 {
		n++
	}
	if len(cmd.Subs) > 0 {
		n++
	}
	b = appendMap(b, proto, n)
	b = appendBulkStr(b, "summary")
	b = appendBulkStr(b, cmd.Summary)
	b = appendBulkStr(b, "since")
	b = appendBulkStr(b, cmd.Since)
	b = appendBulkStr(b, "group")
	b = appendBulkStr(b, cmd.Group)
	b = appendBulkStr(b, "complexity")
	b = appendBulkStr(b, cmd.Complexity)
	if len(cmd.Args) > 0 {
		b = appendBulkStr(b, "arguments")
		b = appendArgDocs(b, proto, cmd.Args, 0)
	}
	if len(cmd.Subs) > 0 {
		b = appendBulkStr(b, "subcommands")
		b = appendMap(b, proto, len(cmd.Subs))
		for _, s := range cmd.Subs {
			b = appendBulkStr(b, s.Name)
			b = appendCommandDoc(b, proto, s)
		}
	}
	return b
}

func appendArgDocs(b []byte, proto int, args []Arg, keyIndex int) []byte {
	b = appendArray(b, len(args))
	for _, a := range args {
		var flags []string
		if a.Optional {
			flags = append(flags, "optional")
		}
		if a.Multiple {
			flags = append(flags, "multiple")
		}
		n := 2
		if a.Type == "key" {
			n++
		}
		if a.Token != "" {
			n++
		}
		if len(flags) > 0 {
			n++
		}
		if len(a.Args) > 0 {
			n++
		}
		b = appendMap(b, proto, n)
		b = appendBulkStr(b, "name")
		b = appendBulkStr(b, a.Name)
		b = appendBulkStr(b, "type")
		b = appendBulkStr(b, a.Type)
		if a.Type == "key" {
			b = appendBulkStr(b, "key_spec_index")
			b = appendInt(b, int64(keyIndex))
		}
		if a.Token != "" {
			b = appendBulkStr(b, "token")
			b = appendBulkStr(b, a.Token)
		}
		if len(flags) > 0 {
			b = appendBulkStr(b, "flags")
			b = appendSet(b, proto, len(flags))
			for _, f := range flags {
				b = appendStatus(b, f)
			}
		}
		if len(a.Args) > 0 {
			b = appendBulkStr(b, "arguments")
			b = appendArgDocs(b, proto, a.Args, keyIndex)
		}
	}
	return b
}

// COMMAND LIST [FILTERBY MODULE name | ACLCAT category | PATTERN pattern]
func cmdCommandList(c *Conn, args [][]byte) {
	keep := func(*Command) bool { return true }
	switch {
	case len(args) == 2:
	case len(args) == 5 && equalFold(args[2], "FILTERBY"):
		v := args[4]
		switch {
		case equalFold(args[3], "MODULE"):
			keep = func(*Command) bool { return false }
		case equalFold(args[3], "ACLCAT"):
			keep = func(cmd *Command) bool {
				for _, a := range cmd.ACL {
					if strings.EqualFold(a, string(v)) {
						return true
					}
				}
				return false
			}
		case equalFold(args[3], "PATTERN"):
			keep = func(cmd *Command) bool { return globMatch(v, cmd.Name) }
		default:
			c.err(ErrSyntax)
			return
		}
	default:
		c.err(ErrSyntax)
		return
	}
	var names []string
	for _, cmd := range c.srv.table.cmds {
		if keep(cmd) {
			names = append(names, cmd.Name)
		}
	}
	c.out = appendArray(c.out, len(names))
	for _, n := range names {
		c.out = appendBulkStr(c.out, n)
	}
}
