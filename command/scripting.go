package command

import (
	"strings"
	"unsafe"

	"github.com/rlserver/rlserver/resp"
	"github.com/rlserver/rlserver/script"
)

// Scripting: EVAL, EVALSHA, their read-only forms and SCRIPT, on the Lua
// engine of package script. A script runs atomically, as EXEC does: every
// shard lock held, its redis.call commands run through the table (ACLs,
// statistics and the change feed as for any client), each reply handed to
// Lua in the protocol the script chose.

// evalKeys finds EVAL's keys: numkeys of them after the script.
func evalKeys(args, keys [][]byte) [][]byte {
	if len(args) < 3 {
		return keys
	}
	n, ok := resp.ParseInt(args[2])
	if !ok || n < 0 || int(n) > len(args)-3 {
		return keys
	}
	return append(keys, args[3:3+n]...)
}

func scriptingCommands() []*Command {
	eval := func(name, summary string, bySHA, ro bool) *Command {
		acl := []string{"slow", "scripting"}
		flags := []string{"noscript", "stale", "skip_monitor", "may_replicate", "no_mandatory_keys"}
		rw := "RW"
		if ro {
			flags = append(flags, "readonly")
			rw = "RO"
		}
		first := argStr("script")
		if bySHA {
			first = argStr("sha1")
		}
		return &Command{Name: name, Arity: -3, Flags: flags, ACL: acl, Group: "scripting", Since: "2.6.0",
			Complexity: "Depends on the script that is executed.", Summary: summary,
			Keys: KeySpec{First: 3, Last: 3, Step: 1, Flags: []string{rw, "ACCESS", "UPDATE"}, Movable: true, Find: evalKeys},
			Args: []Arg{first, argInt("numkeys"), opt(many(argKey("key"))), opt(many(argStr("arg")))},
			Run:  func(c *Ctx, args [][]byte) { cmdEval(c, args, bySHA, ro) }}
	}
	scriptCmd := container("script", "scripting", "A container for Lua scripts management commands.",
		sub("script|load", 3, "Loads a server-side Lua script to the script cache.", cmdScriptLoad, argStr("script")),
		sub("script|exists", -3, "Determines whether server-side Lua scripts exist in the script cache.", cmdScriptExists, many(argStr("sha1"))),
		sub("script|flush", -2, "Removes all server-side Lua scripts from the script cache.", cmdScriptFlush,
			opt(oneof("flush-type", token("ASYNC"), token("SYNC")))),
		sub("script|kill", 2, "Terminates a server-side Lua script during execution.", cmdScriptKill),
	)
	scriptCmd.Since = "2.6.0"
	for _, s := range scriptCmd.Subs {
		s.Group, s.Since = "scripting", "2.6.0"
		s.Flags = []string{"noscript"}
		s.ACL = []string{"slow", "scripting"}
	}
	scriptCmd.Subs[3].Flags = []string{"noscript", "allow_busy"} // SCRIPT KILL
	return []*Command{
		eval("eval", "Executes a server-side Lua script.", false, false),
		eval("evalsha", "Executes a server-side Lua script by SHA1 digest.", true, false),
		eval("eval_ro", "Executes a read-only server-side Lua script.", false, true),
		eval("evalsha_ro", "Executes a read-only server-side Lua script by SHA1 digest.", true, true),
		scriptCmd,
		functionCommand(),
	}
}

// functionCommand is the part of Redis 7's FUNCTION that runs with no
// function library loaded (there is no FUNCTION LOAD yet): FLUSH, which
// Redis's own test suite sends before every test file, LIST and STATS.
func functionCommand() *Command {
	f := container("function", "scripting", "A container for function commands.",
		sub("function|flush", -2, "Deletes all libraries and functions.", cmdFunctionFlush,
			opt(oneof("flush-type", token("ASYNC"), token("SYNC")))),
		sub("function|list", -2, "Returns information about all libraries.", cmdFunctionList,
			opt(tokenArg("LIBRARYNAME", argStr("library-name-pattern"))), opt(token("WITHCODE"))),
	)
	f.Since = "7.0.0"
	for _, s := range f.Subs {
		s.Group, s.Since = "scripting", "7.0.0"
		s.Flags = []string{"noscript"}
		s.ACL = []string{"slow", "scripting"}
	}
	f.Subs[0].Flags = []string{"write", "noscript"}
	return f
}

// FUNCTION FLUSH [ASYNC|SYNC]
func cmdFunctionFlush(c *Ctx, args [][]byte) {
	if len(args) > 3 || len(args) == 3 && !equalFold(args[2], "ASYNC") && !equalFold(args[2], "SYNC") {
		c.err("ERR FUNCTION FLUSH only supports SYNC|ASYNC option")
		return
	}
	c.W.OK()
}

// FUNCTION LIST [LIBRARYNAME pattern] [WITHCODE]: no library is loaded.
func cmdFunctionList(c *Ctx, args [][]byte) {
	for i := 2; i < len(args); i++ {
		switch {
		case equalFold(args[i], "WITHCODE"):
		case equalFold(args[i], "LIBRARYNAME") && i+1 < len(args):
			i++
		default:
			c.err("ERR Unknown argument " + string(args[i]))
			return
		}
	}
	c.W.Array(0)
}

func cmdEval(c *Ctx, args [][]byte, bySHA, ro bool) {
	n, ok := resp.ParseInt(args[2])
	switch {
	case !ok:
		c.err(errNotInt)
		return
	case n < 0:
		c.err(errNumKeysNeg)
		return
	case int(n) > len(args)-3:
		c.err(errNumKeys)
		return
	}
	keys, argv := args[3:3+n], args[3+n:]
	var sha string
	var body []byte
	if bySHA {
		// The request's bytes, lower-cased in place: no copy.
		b := args[1]
		for i, ch := range b {
			if 'A' <= ch && ch <= 'Z' {
				b[i] = ch + 'a' - 'A'
			}
		}
		sha = unsafe.String(unsafe.SliceData(b), len(b))
	} else {
		body = args[1]
		sha = script.SHA1(body)
	}
	held := !c.inExec // inside EXEC the locks are held already
	if held {
		c.txn, c.inExec = c.Store().LockAll(), true
	}
	proto := c.W.Proto
	call := func(dst []byte, cargs [][]byte, p int) []byte {
		start := len(c.W.Buf)
		cmd := c.conn.command(cargs[0])
		if cmd != nil {
			if cmd.subIndex != nil && len(cargs) > 1 {
				if sub := cmd.sub(cargs[1]); sub != nil {
					cmd = sub
				}
			}
			switch {
			case cmd.hasFlag("noscript"):
				return resp.AppendErr(dst, errScriptCmd)
			case ro && cmd.write:
				return resp.AppendErr(dst, errScriptWrite)
			}
		}
		c.W.Proto = p
		c.conn.exec(cargs)
		c.W.Proto = proto
		if cmd != nil && cmd.write {
			c.h.scripts.Wrote() // no longer killable
		}
		dst = append(dst, c.W.Buf[start:]...)
		c.W.Buf = c.W.Buf[:start]
		return dst
	}
	c.W.Buf = c.h.scripts.Run(c.W.Buf, sha, body, keys, argv, call, proto)
	if held {
		c.inExec = false
		c.txn.UnlockAll()
	}
}

func cmdScriptLoad(c *Ctx, args [][]byte) {
	sha, err := c.h.scripts.Load(args[2])
	if err != nil {
		c.err(err.Error())
		return
	}
	c.W.BulkString(sha)
}

func cmdScriptExists(c *Ctx, args [][]byte) {
	c.W.Array(len(args) - 2)
	for _, a := range args[2:] {
		if c.h.scripts.Exists(string(a)) {
			c.W.Int(1)
		} else {
			c.W.Int(0)
		}
	}
}

func cmdScriptFlush(c *Ctx, args [][]byte) {
	if len(args) > 3 || len(args) == 3 && !strings.EqualFold(string(args[2]), "async") && !strings.EqualFold(string(args[2]), "sync") {
		c.err("ERR SCRIPT FLUSH only support SYNC|ASYNC option")
		return
	}
	c.h.scripts.Flush()
	c.W.OK()
}

// cmdScriptKill stops the running script unless it wrote. A script holds
// every shard lock, so SCRIPT KILL reaches it only from a connection that
// is not waiting on a lock (another event loop, or --io goroutines).
func cmdScriptKill(c *Ctx, args [][]byte) {
	if err := c.h.scripts.Kill(); err != nil {
		c.err(err.Error())
		return
	}
	c.W.OK()
}
