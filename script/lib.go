package script

import (
	"math"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// Redis's log levels (redis.LOG_*).
const (
	LogDebug = iota
	LogVerbose
	LogNotice
	LogWarning
)

// newVM makes a VM: the sandbox, and the error handler its scripts run
// under; chunk names its scripts in errors.
func (e *Engine) newVM(chunk string) vm {
	L := e.newState()
	L.SetContext(&e.kill)
	return vm{L: L, handler: L.NewFunction(e.onError), chunk: chunk}
}

// newState makes the sandbox Redis gives scripts: the base, table,
// string, math, bit, cjson, struct and cmsgpack libraries (no os, io, require, loadfile, dofile), the
// redis table, math.random as Redis seeds it, and the globals table
// closed to new names and to reads of absent ones.
func (e *Engine) newState() *lua.LState {
	L := lua.NewState(lua.Options{SkipOpenLibs: true})
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{{lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}, {lua.StringLibName, lua.OpenString}, {lua.MathLibName, lua.OpenMath}} {
		L.Push(L.NewFunction(lib.open))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	openBit(L)
	openCjson(L)
	openStruct(L)
	openCmsgpack(L)
	g := L.Get(lua.GlobalsIndex).(*lua.LTable)
	for _, name := range []string{"loadfile", "dofile", "require", "module", "collectgarbage", "newproxy", "_printregs"} {
		g.RawSetString(name, lua.LNil)
	}
	// pcall gives a script the message of an error table, not the table:
	// a script cannot hand a caught error on as Redis's error reply.
	g.RawSetString("pcall", L.NewFunction(func(L *lua.LState) int {
		n := L.GetTop()
		if n == 0 {
			L.ArgError(1, "value expected")
		}
		top := L.GetTop() - n
		if err := L.PCall(n-1, lua.MultRet, nil); err != nil {
			v := err.(*lua.ApiError).Object
			if t, ok := v.(*lua.LTable); ok && t.RawGetString("err").Type() == lua.LTString {
				v = t.RawGetString("err")
			}
			L.Push(lua.LFalse)
			L.Push(v)
			return 2
		}
		L.Insert(lua.LTrue, top+1)
		return L.GetTop() - top
	}))
	// tostring writes a number as Lua 5.1 does (LUA_NUMBER_FMT, %.14g).
	base := g.RawGetString("tostring")
	g.RawSetString(concatName, L.NewFunction(concat))
	g.RawSetString("tostring", L.NewFunction(func(L *lua.LState) int {
		if n, ok := L.Get(1).(lua.LNumber); ok && L.GetTop() >= 1 {
			L.Push(lua.LString(luaNumber(float64(n))))
			return 1
		}
		top := L.GetTop()
		L.Push(base)
		for i := 1; i <= top; i++ {
			L.Push(L.Get(i))
		}
		L.Call(top, 1)
		return 1
	}))
	math := g.RawGetString("math").(*lua.LTable)
	math.RawSetString("random", L.NewFunction(e.random))
	math.RawSetString("randomseed", L.NewFunction(e.randomseed))

	r := L.NewTable()
	for name, fn := range map[string]lua.LGFunction{
		"call": func(L *lua.LState) int { return e.redisCall(L, true) }, "pcall": func(L *lua.LState) int { return e.redisCall(L, false) },
		"error_reply": errorReply, "status_reply": statusReply, "sha1hex": sha1hex, "log": e.log,
		"setresp": e.setresp, "replicate_commands": func(L *lua.LState) int { L.Push(lua.LTrue); return 1 },
		"set_repl": func(L *lua.LState) int { return 0 },
	} {
		r.RawSetString(name, L.NewFunction(fn))
	}
	for name, v := range map[string]int{"LOG_DEBUG": LogDebug, "LOG_VERBOSE": LogVerbose, "LOG_NOTICE": LogNotice, "LOG_WARNING": LogWarning,
		"REPL_NONE": 0, "REPL_AOF": 1, "REPL_SLAVE": 2, "REPL_REPLICA": 2, "REPL_ALL": 3} {
		r.RawSetString(name, lua.LNumber(v))
	}
	setVersion(r)
	g.RawSetString("redis", r)

	mt := L.NewTable()
	mt.RawSetString("__newindex", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("Attempt to modify a readonly table")
		return 0
	}))
	mt.RawSetString("__index", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("Script attempted to access nonexistent global variable '%s'", L.CheckAny(2).String())
		return 0
	}))
	L.SetMetatable(g, mt)
	return L
}

// RedisVersion is the Redis version scripts see (redis.REDIS_VERSION and
// REDIS_VERSION_NUM): the one HELLO and INFO report.
const RedisVersion = "7.4.0"

// setVersion sets redis.REDIS_VERSION and REDIS_VERSION_NUM (0x00MMmmpp)
// in the redis table r.
func setVersion(r *lua.LTable) {
	num := 0
	for _, part := range strings.SplitN(RedisVersion, ".", 3) {
		n, _ := strconv.Atoi(part)
		num = num<<8 | n
	}
	r.RawSetString("REDIS_VERSION", lua.LString(RedisVersion))
	r.RawSetString("REDIS_VERSION_NUM", lua.LNumber(num))
}

// lrand48 is the generator math.random uses, as Redis's redisLrand48.
func (e *Engine) lrand48() int64 {
	e.randSt = (0x5DEECE66D*e.randSt + 0xB) & (1<<48 - 1)
	return int64(e.randSt >> 17)
}

// random is Redis's math.random: lrand48 scaled as Lua 5.1 scales rand().
func (e *Engine) random(L *lua.LState) int {
	const max = 1<<31 - 1
	r := float64(e.lrand48()%max) / max
	switch L.GetTop() {
	case 0:
		L.Push(lua.LNumber(r))
	case 1:
		u := L.CheckInt(1)
		if u < 1 {
			L.RaiseError("bad argument #1 to 'random' (interval is empty)")
		}
		L.Push(lua.LNumber(math.Floor(r*float64(u)) + 1))
	case 2:
		l, u := L.CheckInt(1), L.CheckInt(2)
		if l > u {
			L.RaiseError("bad argument #2 to 'random' (interval is empty)")
		}
		L.Push(lua.LNumber(math.Floor(r*float64(u-l+1)) + float64(l)))
	default:
		L.RaiseError("wrong number of arguments")
	}
	return 1
}

func (e *Engine) randomseed(L *lua.LState) int {
	e.randSt = uint64(int32(L.CheckInt(1)))<<16 | 0x330E
	return 0
}

// redisCall runs redis.call (raise) or redis.pcall.
func (e *Engine) redisCall(L *lua.LState, raise bool) int {
	n := L.GetTop()
	fail := func(msg string) int {
		if raise {
			e.raiseErr(L, msg)
		}
		L.Push(field(L, "err", lua.LString(msg)))
		return 1
	}
	if n == 0 {
		return fail("ERR Please specify at least one argument for this redis lib call")
	}
	// The arguments are copied into one reused buffer, then sliced: a
	// command may change its arguments in place, and Lua's strings are
	// shared.
	buf, ends := e.argBuf[:0], e.argEnds[:0]
	for i := 1; i <= n; i++ {
		switch v := L.Get(i).(type) {
		case lua.LString:
			buf = append(buf, v...)
		case lua.LNumber:
			// As Redis 7.0: printf's %.17g, not Lua's own conversion.
			buf = strconv.AppendFloat(buf, float64(v), 'g', 17, 64)
		default:
			return fail("ERR Lua redis lib command arguments must be strings or integers")
		}
		ends = append(ends, len(buf))
	}
	args := e.args[:0]
	for i, end := range ends {
		start := 0
		if i > 0 {
			start = ends[i-1]
		}
		args = append(args, buf[start:end:end])
	}
	e.argBuf, e.argEnds, e.args = buf, ends, args
	e.out = e.call(e.out[:0], args, e.resp)
	if len(e.out) > 0 && e.out[0] == '-' {
		msg := string(e.out[1 : len(e.out)-2])
		if strings.HasPrefix(msg, "ERR unknown command") {
			return fail("ERR Unknown Redis command called from script")
		}
		return fail(msg)
	}
	v, _, err := toLua(L, e.out)
	if err != nil {
		return fail("ERR " + err.Error())
	}
	L.Push(v)
	return 1
}

// raiseErr raises Redis's error table {err=msg, line=...} (msg with its
// code), which a script's pcall sees as msg.
func (e *Engine) raiseErr(L *lua.LState, msg string) {
	t := L.CreateTable(0, 2)
	t.RawSetString("err", lua.LString(msg))
	t.RawSetString("line", lua.LNumber(e.scriptLine(L)))
	L.Error(t, 0)
}

func errorReply(L *lua.LState) int {
	L.Push(field(L, "err", lua.LString(L.CheckString(1))))
	return 1
}

func statusReply(L *lua.LState) int {
	L.Push(field(L, "ok", lua.LString(L.CheckString(1))))
	return 1
}

func sha1hex(L *lua.LState) int {
	L.Push(lua.LString(SHA1([]byte(L.CheckString(1)))))
	return 1
}

func (e *Engine) log(L *lua.LState) int {
	if L.GetTop() < 2 {
		e.raiseErr(L, "ERR redis.log() requires two arguments or more.")
	}
	level := L.CheckInt(1)
	if level < LogDebug || level > LogWarning {
		e.raiseErr(L, "ERR Invalid debug level.")
	}
	msg := ""
	for i := 2; i <= L.GetTop(); i++ {
		if i > 2 {
			msg += " "
		}
		msg += L.ToStringMeta(L.Get(i)).String()
	}
	if e.Logf != nil {
		e.Logf(level, msg)
	}
	return 0
}

func (e *Engine) setresp(L *lua.LState) int {
	if L.GetTop() != 1 {
		e.raiseErr(L, "ERR redis.setresp() requires one argument.")
	}
	v := L.CheckInt(1)
	if v != 2 && v != 3 {
		e.raiseErr(L, "ERR RESP version must be 2 or 3.")
	}
	e.resp = v
	return 0
}

// luaNumber formats f as Lua 5.1's tostring does (C's %.14g).
func luaNumber(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f) && math.Signbit(f):
		return "-nan"
	case math.IsNaN(f):
		return "nan"
	}
	return strconv.FormatFloat(f, 'g', 14, 64)
}
