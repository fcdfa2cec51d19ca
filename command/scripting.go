package command

import (
	"slices"
	"strings"
	"unsafe"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/resp"
	"github.com/rlserver/rlserver/script"
)

// Scripting: EVAL, EVALSHA, their read-only forms and SCRIPT, FCALL,
// FCALL_RO and FUNCTION, on the Lua engine of package script. A script or
// function runs atomically, as EXEC does: every shard lock held, its
// redis.call commands run through the table (ACLs, statistics and the
// change feed as for any client), each reply handed to Lua in the
// protocol the script chose.

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
		first := argStr("script")
		if bySHA {
			first = argStr("sha1")
		}
		c := scriptCommand(name, summary, ro, first, func(c *Ctx, args [][]byte) { cmdEval(c, args, bySHA, ro) })
		c.Since = "2.6.0"
		return c
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
		s.ACL = []string{"scripting"}
	}
	scriptCmd.Subs[3].Flags = []string{"noscript", "allow_busy"} // SCRIPT KILL
	fcall := func(name, summary string, ro bool) *Command {
		c := scriptCommand(name, summary, ro, argStr("function"), func(c *Ctx, args [][]byte) { cmdFcall(c, args, ro) })
		c.Since, c.Complexity = "7.0.0", "Depends on the function that is executed."
		return c
	}
	return []*Command{
		eval("eval", "Executes a server-side Lua script.", false, false),
		eval("evalsha", "Executes a server-side Lua script by SHA1 digest.", true, false),
		eval("eval_ro", "Executes a read-only server-side Lua script.", false, true),
		eval("evalsha_ro", "Executes a read-only server-side Lua script by SHA1 digest.", true, true),
		scriptCmd,
		fcall("fcall", "Invokes a function.", false),
		fcall("fcall_ro", "Invokes a read-only function.", true),
		functionCommand(),
	}
}

// scriptCommand is a row of EVAL, EVALSHA, FCALL or a read-only form:
// the script or function first, then numkeys, the keys and the arguments.
func scriptCommand(name, summary string, ro bool, first Arg, run func(*Ctx, [][]byte)) *Command {
	flags := []string{"noscript", "stale", "skip_monitor", "may_replicate", "no_mandatory_keys"}
	rw := "RW"
	if ro {
		flags = []string{"noscript", "stale", "skip_monitor", "no_mandatory_keys", "readonly"}
		rw = "RO"
	}
	return &Command{Name: name, Arity: -3, Flags: flags, ACL: []string{"scripting"}, Group: "scripting",
		Complexity: "Depends on the script that is executed.", Summary: summary,
		Keys: KeySpec{First: 3, Last: 3, Step: 1, Flags: []string{rw, "ACCESS", "UPDATE"}, Movable: true, Find: evalKeys},
		Args: []Arg{first, argInt("numkeys"), opt(many(argKey("key"))), opt(many(argStr("arg")))},
		Run:  run}
}

// functionCommand is Redis 7's FUNCTION: the libraries of package script
// (function.go), which persistence and replication keep like keys.
func functionCommand() *Command {
	f := container("function", "scripting", "A container for function commands.",
		sub("function|delete", 3, "Deletes a library and its functions.", cmdFunctionDelete, argStr("library-name")),
		sub("function|dump", 2, "Dumps all libraries into a serialized binary payload.", cmdFunctionDump),
		sub("function|flush", -2, "Deletes all libraries and functions.", cmdFunctionFlush,
			opt(oneof("flush-type", token("ASYNC"), token("SYNC")))),
		sub("function|kill", 2, "Terminates a function during execution.", cmdFunctionKill),
		sub("function|list", -2, "Returns information about all libraries.", cmdFunctionList,
			opt(tokenArg("LIBRARYNAME", argStr("library-name-pattern"))), opt(token("WITHCODE"))),
		sub("function|load", -3, "Creates a library.", cmdFunctionLoad, opt(token("REPLACE")), argStr("function-code")),
		sub("function|restore", -3, "Restores all libraries from a payload.", cmdFunctionRestore, argStr("serialized-value"),
			opt(oneof("policy", token("FLUSH"), token("APPEND"), token("REPLACE")))),
		sub("function|stats", 2, "Returns information about a function during execution.", cmdFunctionStats),
	)
	f.Since = "7.0.0"
	for _, s := range f.Subs {
		s.Group, s.Since = "scripting", "7.0.0"
		s.ACL = []string{"scripting"}
		switch s.Name {
		case "function|delete", "function|flush":
			s.Flags = []string{"write", "noscript"}
		case "function|load", "function|restore":
			s.Flags = []string{"write", "denyoom", "noscript"}
		case "function|kill", "function|stats":
			s.Flags = []string{"noscript", "allow_busy"}
		default:
			s.Flags = []string{"noscript"}
		}
		if s.Name != "function|delete" && s.Name != "function|kill" && s.Name != "function|stats" {
			s.Complexity = "O(N) where N is the number of functions"
		}
	}
	return f
}

// FUNCTION LOAD [REPLACE] code
func cmdFunctionLoad(c *Ctx, args [][]byte) {
	replace, last := false, len(args)-1
	for _, a := range args[2:last] {
		if !equalFold(a, "REPLACE") {
			c.err(errFunctionOption(a))
			return
		}
		replace = true
	}
	name, err := c.h.scripts.LoadLibrary(args[last], replace)
	if err != nil {
		c.err(err.Error())
		return
	}
	c.W.BulkString(name)
}

// FUNCTION DELETE library-name
func cmdFunctionDelete(c *Ctx, args [][]byte) {
	if err := c.h.scripts.DeleteLibrary(string(args[2])); err != nil {
		c.err(err.Error())
		return
	}
	c.W.OK()
}

// FUNCTION FLUSH [ASYNC|SYNC]
func cmdFunctionFlush(c *Ctx, args [][]byte) {
	switch {
	case len(args) > 3:
		c.err(errSubcommandSyntax(args))
		return
	case len(args) == 3 && !equalFold(args[2], "ASYNC") && !equalFold(args[2], "SYNC"):
		c.err(errFunctionFlush)
		return
	}
	c.h.scripts.FlushFunctions()
	c.W.OK()
}

// FUNCTION LIST [LIBRARYNAME pattern] [WITHCODE]: the pattern is matched
// ignoring case, as Redis does.
func cmdFunctionList(c *Ctx, args [][]byte) {
	withCode := false
	var pattern []byte
	for i := 2; i < len(args); i++ {
		switch a := args[i]; {
		case !withCode && equalFold(a, "WITHCODE"):
			withCode = true
		case pattern == nil && equalFold(a, "LIBRARYNAME"):
			if i == len(args)-1 {
				c.err(errNoLibraryName)
				return
			}
			i++
			pattern = []byte(strings.ToLower(string(args[i])))
		default:
			c.err(errFunctionListArg(a))
			return
		}
	}
	libs := c.h.scripts.Libraries()
	if pattern != nil {
		libs = slices.DeleteFunc(libs, func(l *script.Library) bool { return !globMatch(pattern, strings.ToLower(l.Name)) })
	}
	c.W.Array(len(libs))
	for _, l := range libs {
		if withCode {
			c.W.Map(4)
		} else {
			c.W.Map(3)
		}
		c.W.BulkString("library_name")
		c.W.BulkString(l.Name)
		c.W.BulkString("engine")
		c.W.BulkString("LUA")
		c.W.BulkString("functions")
		c.W.Array(len(l.Functions))
		for _, f := range l.Functions {
			c.W.Map(3)
			c.W.BulkString("name")
			c.W.BulkString(f.Name)
			c.W.BulkString("description")
			if f.HasDescription {
				c.W.BulkString(f.Description)
			} else {
				c.W.Null()
			}
			c.W.BulkString("flags")
			names := f.Flags.Names()
			c.W.Set(len(names))
			for _, n := range names {
				c.W.Status(n)
			}
		}
		if withCode {
			c.W.BulkString("library_code")
			c.W.Bulk(l.Code)
		}
	}
}

// FUNCTION DUMP
func cmdFunctionDump(c *Ctx, args [][]byte) {
	_, payload := c.h.scripts.DumpFunctions()
	c.W.Bulk(payload)
}

// FUNCTION RESTORE payload [FLUSH|APPEND|REPLACE]
func cmdFunctionRestore(c *Ctx, args [][]byte) {
	if len(args) > 4 {
		c.err(errSubcommandSyntax(args))
		return
	}
	policy := script.RestoreAppend
	if len(args) == 4 {
		switch {
		case equalFold(args[3], "APPEND"):
		case equalFold(args[3], "REPLACE"):
			policy = script.RestoreReplace
		case equalFold(args[3], "FLUSH"):
			policy = script.RestoreFlush
		default:
			c.err(errRestorePolicy)
			return
		}
	}
	if err := c.h.scripts.RestoreFunctions(args[2], policy); err != nil {
		c.err(err.Error())
		return
	}
	c.W.OK()
}

// FUNCTION STATS: the function running (while an EVAL script runs, BUSY,
// as Redis answers), and how many libraries and functions are loaded.
func cmdFunctionStats(c *Ctx, args [][]byte) {
	running, function, name, req, d := c.h.scripts.Running()
	if running && !function {
		c.err(script.ErrBusyScript)
		return
	}
	c.W.Map(2)
	c.W.BulkString("running_script")
	if !running {
		c.W.Null()
	} else {
		c.W.Map(3)
		c.W.BulkString("name")
		c.W.BulkString(name)
		c.W.BulkString("command")
		c.W.Array(len(req))
		for _, a := range req {
			c.W.Bulk(a)
		}
		c.W.BulkString("duration_ms")
		c.W.Int(d.Milliseconds())
	}
	libs, funcs := c.h.scripts.FunctionCounts()
	c.W.BulkString("engines")
	c.W.Map(1)
	c.W.BulkString("LUA")
	c.W.Map(2)
	c.W.BulkString("libraries_count")
	c.W.Int(int64(libs))
	c.W.BulkString("functions_count")
	c.W.Int(int64(funcs))
}

// FUNCTION KILL: stops the running function unless it wrote (see
// cmdScriptKill).
func cmdFunctionKill(c *Ctx, args [][]byte) {
	if err := c.h.scripts.Kill(true); err != nil {
		c.err(err.Error())
		return
	}
	c.W.OK()
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
	// A script with a shebang line is what its flags say, as a function
	// is; one without runs in Redis's compatibility mode.
	flags, shebang, err := c.h.scripts.EvalFlags(sha, body)
	if err == nil && shebang {
		if msg := c.scriptRefused(flags, args); msg != "" {
			c.conn.reject(msg) // as dispatch refuses a command
			return
		}
		writes := flags&script.NoWrites == 0
		switch {
		case flags&script.NoCluster != 0 && c.h.cfg.Cluster != nil:
			c.err(errNoClusterFlag)
			return
		case writes && ro:
			c.err(errFcallRO)
			return
		}
		ro = ro || !writes
		c.allowOOM = flags&script.AllowOOM != 0
	}
	held := c.lockScript()
	c.W.Buf = c.h.scripts.Run(c.W.Buf, sha, body, keys, argv, c.scriptCaller(ro), c.W.Proto)
	c.allowOOM = false
	c.unlockScript(held)
}

// cmdFcall is FCALL and FCALL_RO (ro). As Redis, the function's flags
// decide what the command is: without no-writes it is a write (refused
// on a replica, by FCALL_RO and inside by none), without allow-oom or
// no-writes it is refused past maxmemory.
func cmdFcall(c *Ctx, args [][]byte, ro bool) {
	f := c.h.scripts.Function(args[1])
	if f != nil {
		if msg := c.scriptRefused(f.Flags, args); msg != "" {
			c.conn.reject(msg) // as dispatch refuses a command
			return
		}
	}
	n, ok := resp.ParseInt(args[2])
	switch {
	case f == nil:
		c.err(errFunctionNotFound)
		return
	case !ok:
		c.err(errFcallNumKeys)
		return
	case int(n) > len(args)-3:
		c.err(errNumKeys)
		return
	case n < 0:
		c.err(errNumKeysNeg)
		return
	case f.Flags&script.NoCluster != 0 && c.h.cfg.Cluster != nil:
		c.err(errNoClusterFlag)
		return
	}
	writes := f.Flags&script.NoWrites == 0
	if writes && ro {
		c.err(errFcallRO)
		return
	}
	keys, argv := args[3:3+n], args[3+n:]
	held := c.lockScript()
	c.allowOOM = f.Flags&script.AllowOOM != 0
	c.W.Buf = c.h.scripts.Call(c.W.Buf, f, keys, argv, args, c.scriptCaller(ro || !writes), c.W.Proto)
	c.allowOOM = false
	c.unlockScript(held)
}

// scriptRefused is what Redis's processCommand refuses of FCALL, or of
// EVAL with a shebang line, given the flags, as it would refuse a write
// or denyoom command: a write on a replica (MOVED to the primary for its
// keys, READONLY without), a script without allow-oom or no-writes past
// maxmemory.
func (c *Ctx) scriptRefused(flags script.Flags, args [][]byte) string {
	write := flags&script.NoWrites == 0
	replica := c.h.cfg.Cluster != nil && !c.inExec && c.h.cfg.Cluster.View().Self.Replica
	if write && replica {
		if n, ok := resp.ParseInt(args[2]); ok && n > 0 && int(n) <= len(args)-3 {
			if msg := c.conn.routeSlot(cluster.Slot(args[3]), true); msg != "" {
				return msg
			}
		}
	}
	if write && flags&script.AllowOOM == 0 && c.h.outOfMemory() {
		return errOOM
	}
	if write && replica {
		return errReadOnlyReplica
	}
	return ""
}

// lockScript takes every shard lock for a script, unless EXEC holds
// them; it reports whether it did, for unlockScript.
func (c *Ctx) lockScript() (held bool) {
	if c.inExec {
		return false
	}
	c.txn, c.inExec = c.Store().LockAll(), true
	return true
}

func (c *Ctx) unlockScript(held bool) {
	if held {
		c.inExec = false
		c.txn.UnlockAll()
	}
}

// scriptCaller returns how a script's redis.call runs a command: through
// the table, as the client's own command, refused if flagged noscript,
// or if a write and the script read-only (ro); its reply is appended to
// dst in the protocol the script chose. The caller is made once per
// connection (scripts do not nest: EVAL and FCALL are noscript).
func (c *Ctx) scriptCaller(ro bool) script.Caller {
	c.scriptRO = ro
	if c.caller == nil {
		c.caller = c.scriptCall
	}
	return c.caller
}

func (c *Ctx) scriptCall(dst []byte, cargs [][]byte, p int) []byte {
	start := len(c.W.Buf)
	cmd := c.conn.command(cargs[0])
	if cmd != nil {
		if cmd.subIndex != nil && len(cargs) > 1 {
			if sub := cmd.sub(cargs[1]); sub != nil {
				cmd = sub
			}
		}
		switch {
		case cmd.noScript:
			return resp.AppendErr(dst, errScriptCmd)
		case c.scriptRO && cmd.write:
			return resp.AppendErr(dst, errScriptWrite)
		case cmd.write && c.h.cfg.Cluster != nil && c.h.cfg.Cluster.View().Self.Replica:
			// A replica takes changes only from its primary: a script's
			// write there is refused as Redis refuses it (dispatch's own
			// check is skipped inside a script, which holds every lock).
			return resp.AppendErr(dst, errReadOnlyReplica)
		}
	}
	proto := c.W.Proto
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
	if err := c.h.scripts.Kill(false); err != nil {
		c.err(err.Error())
		return
	}
	c.W.OK()
}
