package command

import (
	"strings"

	"github.com/rlserver/rlserver/resp"
)

// COMMAND, COMMAND COUNT|INFO|DOCS|LIST: generated from the command table.

// COMMAND: the table does not change while the server runs, so each
// protocol's reply is built once and copied after.
func cmdCommand(c *Ctx, args [][]byte) {
	t := c.h.table
	cached := &t.commandReply[c.W.Proto&1]
	reply := cached.Load()
	if reply == nil {
		b := resp.AppendArray(nil, len(t.cmds))
		for _, cmd := range t.cmds {
			b = appendCommandInfo(b, c.W.Proto, cmd)
		}
		cached.Store(&b)
		reply = &b
	}
	c.W.Buf = append(c.W.Buf, *reply...)
}

func cmdCommandCount(c *Ctx, args [][]byte) {
	c.W.Int(int64(len(c.h.table.cmds)))
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
func cmdCommandInfo(c *Ctx, args [][]byte) {
	t := c.h.table
	if len(args) == 2 {
		cmdCommand(c, args)
		return
	}
	c.W.Array(len(args) - 2)
	for _, a := range args[2:] {
		if cmd := t.findCommand(string(a)); cmd != nil {
			c.W.Buf = appendCommandInfo(c.W.Buf, c.W.Proto, cmd)
		} else {
			c.W.NullArray()
		}
	}
}

func appendCommandInfo(b []byte, proto int, cmd *Command) []byte {
	b = resp.AppendArray(b, 10)
	b = resp.AppendBulkString(b, cmd.Name)
	b = resp.AppendInt(b, int64(cmd.Arity))
	flags := cmd.displayFlags()
	b = resp.AppendSet(b, proto, len(flags))
	for _, f := range flags {
		b = resp.AppendStatus(b, f)
	}
	b = resp.AppendInt(b, int64(cmd.Keys.First))
	b = resp.AppendInt(b, int64(cmd.Keys.Last))
	b = resp.AppendInt(b, int64(cmd.Keys.Step))
	b = resp.AppendSet(b, proto, len(cmd.ACL))
	for _, a := range cmd.ACL {
		b = resp.AppendStatus(b, "@"+a)
	}
	b = resp.AppendSet(b, proto, len(cmd.Tips))
	for _, tip := range cmd.Tips {
		b = resp.AppendBulkString(b, tip)
	}
	b = appendKeySpecs(b, proto, cmd.Keys)
	if len(cmd.Subs) == 0 {
		return resp.AppendSet(b, proto, 0) // Redis's empty subcommands are a set
	}
	b = resp.AppendArray(b, len(cmd.Subs))
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
		return resp.AppendSet(b, proto, 0)
	}
	b = resp.AppendSet(b, proto, 1)
	flags := k.Flags
	if k.Movable {
		flags = append(append([]string(nil), flags...), "INCOMPLETE")
	}
	b = resp.AppendMap(b, proto, 3)
	b = resp.AppendBulkString(b, "flags")
	b = resp.AppendSet(b, proto, len(flags))
	for _, f := range flags {
		b = resp.AppendStatus(b, f)
	}
	b = resp.AppendBulkString(b, "begin_search")
	b = resp.AppendMap(b, proto, 2)
	b = resp.AppendBulkString(b, "type")
	b = resp.AppendBulkString(b, "index")
	b = resp.AppendBulkString(b, "spec")
	b = resp.AppendMap(b, proto, 1)
	b = resp.AppendBulkString(b, "index")
	b = resp.AppendInt(b, int64(k.First))
	b = resp.AppendBulkString(b, "find_keys")
	b = resp.AppendMap(b, proto, 2)
	b = resp.AppendBulkString(b, "type")
	b = resp.AppendBulkString(b, "range")
	b = resp.AppendBulkString(b, "spec")
	b = resp.AppendMap(b, proto, 3)
	last := k.Last
	if last > 0 {
		last -= k.First
	}
	b = resp.AppendBulkString(b, "lastkey")
	b = resp.AppendInt(b, int64(last))
	b = resp.AppendBulkString(b, "keystep")
	b = resp.AppendInt(b, int64(k.Step))
	b = resp.AppendBulkString(b, "limit")
	return resp.AppendInt(b, 0)
}

// COMMAND DOCS [name ...]
func cmdCommandDocs(c *Ctx, args [][]byte) {
	t := c.h.table
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
	c.W.Map(len(cmds))
	for _, cmd := range cmds {
		c.W.BulkString(cmd.Name)
		c.W.Buf = appendCommandDoc(c.W.Buf, c.W.Proto, cmd)
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
	b = resp.AppendMap(b, proto, n)
	b = resp.AppendBulkString(b, "summary")
	b = resp.AppendBulkString(b, cmd.Summary)
	b = resp.AppendBulkString(b, "since")
	b = resp.AppendBulkString(b, cmd.Since)
	b = resp.AppendBulkString(b, "group")
	b = resp.AppendBulkString(b, cmd.Group)
	b = resp.AppendBulkString(b, "complexity")
	b = resp.AppendBulkString(b, cmd.Complexity)
	if len(cmd.Args) > 0 {
		b = resp.AppendBulkString(b, "arguments")
		b = appendArgDocs(b, proto, cmd.Args, 0)
	}
	if len(cmd.Subs) > 0 {
		b = resp.AppendBulkString(b, "subcommands")
		b = resp.AppendMap(b, proto, len(cmd.Subs))
		for _, s := range cmd.Subs {
			b = resp.AppendBulkString(b, s.Name)
			b = appendCommandDoc(b, proto, s)
		}
	}
	return b
}

func appendArgDocs(b []byte, proto int, args []Arg, keyIndex int) []byte {
	b = resp.AppendArray(b, len(args))
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
		b = resp.AppendMap(b, proto, n)
		b = resp.AppendBulkString(b, "name")
		b = resp.AppendBulkString(b, a.Name)
		b = resp.AppendBulkString(b, "type")
		b = resp.AppendBulkString(b, a.Type)
		if a.Type == "key" {
			b = resp.AppendBulkString(b, "key_spec_index")
			b = resp.AppendInt(b, int64(keyIndex))
		}
		if a.Token != "" {
			b = resp.AppendBulkString(b, "token")
			b = resp.AppendBulkString(b, a.Token)
		}
		if len(flags) > 0 {
			b = resp.AppendBulkString(b, "flags")
			b = resp.AppendSet(b, proto, len(flags))
			for _, f := range flags {
				b = resp.AppendStatus(b, f)
			}
		}
		if len(a.Args) > 0 {
			b = resp.AppendBulkString(b, "arguments")
			b = appendArgDocs(b, proto, a.Args, keyIndex)
		}
	}
	return b
}

// COMMAND LIST [FILTERBY MODULE name | ACLCAT category | PATTERN pattern]
func cmdCommandList(c *Ctx, args [][]byte) {
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
			c.err(errSyntax)
			return
		}
	default:
		c.err(errSyntax)
		return
	}
	var names []string
	for _, cmd := range c.h.table.cmds {
		if keep(cmd) {
			names = append(names, cmd.Name)
		}
	}
	c.W.Array(len(names))
	for _, n := range names {
		c.W.BulkString(n)
	}
}

// requestCommand resolves the command a request (name and arguments)
// names, subcommand included, as dispatch does; nil if none.
func (t *Table) requestCommand(args [][]byte) *Command {
	var scratch [32]byte
	cmd := t.lookup(args[0], &scratch)
	if cmd != nil && cmd.subIndex != nil && len(args) > 1 {
		cmd = cmd.sub(args[1])
	}
	return cmd
}

// getKeys is COMMAND GETKEYS's work: the command args names, and its keys,
// or Redis's error for a request it cannot take keys from.
func (c *Ctx) getKeys(args [][]byte) (*Command, [][]byte, string) {
	cmd := c.h.table.requestCommand(args)
	switch {
	case cmd == nil:
		return nil, nil, errInvalidCommand
	case cmd.Keys.First <= 0 && cmd.Keys.Find == nil:
		return nil, nil, errNoKeyArgs
	case !cmd.arityOK(len(args)):
		return nil, nil, errInvalidArgCount
	}
	keys := cmd.keysOf(args, nil)
	if len(keys) == 0 {
		return nil, nil, errInvalidArgs
	}
	return cmd, keys, ""
}

// COMMAND GETKEYS command [arg ...]
func cmdCommandGetKeys(c *Ctx, args [][]byte) {
	_, keys, msg := c.getKeys(args[2:])
	if msg != "" {
		c.err(msg)
		return
	}
	c.W.Array(len(keys))
	for _, k := range keys {
		c.W.Bulk(k)
	}
}

// COMMAND GETKEYSANDFLAGS command [arg ...]: each key with its key spec's
// flags, as Redis spells them (RW, RO, OW, RM upper case, the rest lower).
func cmdCommandGetKeysAndFlags(c *Ctx, args [][]byte) {
	cmd, keys, msg := c.getKeys(args[2:])
	if msg != "" {
		c.err(msg)
		return
	}
	c.W.Array(len(keys))
	for _, k := range keys {
		c.W.Array(2)
		c.W.Bulk(k)
		c.W.Array(len(cmd.Keys.Flags))
		for _, f := range cmd.Keys.Flags {
			switch f {
			case "RW", "RO", "OW", "RM":
				c.W.BulkString(f)
			default:
				c.W.BulkString(strings.ToLower(f))
			}
		}
	}
}
