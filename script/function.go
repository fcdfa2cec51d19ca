package script

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"

	"github.com/rlserver/rlserver/resp"
)

// Functions, Redis 7's other scripting interface, as Redis 7.0 runs them:
// FUNCTION LOAD runs a library's code ("#!lua name=lib" then Lua) once, on
// a VM of their own, where the only global is a redis table holding
// register_function, log and the LOG_* and version fields; the functions
// it registers are then called by FCALL with the sandbox EVAL scripts
// get, their keys and arguments passed as two tables. The globals of that
// VM stay read-only: a library keeps nothing but its functions.

// Flags are a function's flags (redis.register_function's flags).
type Flags uint8

// The flags, in the order Redis lists them.
const (
	NoWrites       Flags = 1 << iota // no-writes: the function only reads (FCALL_RO may run it)
	AllowOOM                         // allow-oom: runs past maxmemory
	AllowStale                       // allow-stale: runs on a stale replica
	NoCluster                        // no-cluster: refused in cluster mode
	AllowCrossSlot                   // allow-cross-slot-keys
)

var flagNames = [...]string{"no-writes", "allow-oom", "allow-stale", "no-cluster", "allow-cross-slot-keys"}

// Names returns the flags' names, in Redis's order.
func (f Flags) Names() []string {
	var out []string
	for i, n := range flagNames {
		if f&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	return out
}

// Function is a library's function, as redis.register_function
// registered it. It does not change once loaded.
type Function struct {
	Name           string
	Description    string
	HasDescription bool // false: none given (FUNCTION LIST's null)
	Flags          Flags
	fn             *lua.LFunction
}

// Library is a loaded library. It does not change once loaded.
type Library struct {
	Name      string
	Code      []byte      // as FUNCTION LOAD was given it
	Functions []*Function // by name
	compiled  int         // its code's size compiled (protoBytes)
}

// libSet is the libraries loaded, replaced whole by every change.
type libSet struct {
	version uint64              // bumped by every change (see FunctionsVersion)
	libs    map[string]*Library // by name
	funcs   map[string]*Function
	// Functions by lower-case name: FCALL's lookup ignores case, as
	// Redis's. Two functions of a library differing only in case are
	// both loaded, as by Redis; this finds the one registered last.
}

// sorted returns the libraries, by name.
func (s *libSet) sorted() []*Library {
	out := slices.Collect(maps.Values(s.libs))
	slices.SortFunc(out, func(a, b *Library) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// join returns s with libs added (s is not changed). A library already
// in s is replaced with replace set, else the call fails with exists's
// error; a function whose name another library left in s has fails with
// Redis's error.
func (s *libSet) join(libs []*Library, replace bool, exists func(name string) error) (*libSet, error) {
	next := &libSet{version: s.version, libs: maps.Clone(s.libs), funcs: maps.Clone(s.funcs)}
	for _, l := range libs {
		if old := next.libs[l.Name]; old != nil {
			if !replace {
				return nil, exists(l.Name)
			}
			next.unlink(old)
		}
	}
	for _, l := range libs {
		for _, f := range l.Functions {
			if next.funcs[strings.ToLower(f.Name)] != nil {
				return nil, fmt.Errorf("ERR Function %s already exists", f.Name)
			}
		}
	}
	for _, l := range libs {
		next.libs[l.Name] = l
		for _, f := range l.Functions {
			next.funcs[strings.ToLower(f.Name)] = f
		}
	}
	return next, nil
}

// unlink removes library l and its functions from s.
func (s *libSet) unlink(l *Library) {
	delete(s.libs, l.Name)
	for _, f := range l.Functions {
		if k := strings.ToLower(f.Name); s.funcs[k] == f {
			delete(s.funcs, k)
		}
	}
}

// publish makes next the libraries loaded, as a change. The caller holds
// e.mu.
func (e *Engine) publish(next *libSet) {
	next.version = e.libs.Load().version + 1
	e.libs.Store(next)
}

// fenv is the functions' globals: a table of its own, empty and
// read-only, whose reads go to the library API while a library loads
// and to the sandbox's globals otherwise.
type fenv struct {
	env     *lua.LTable // what library code sees as its globals
	meta    *lua.LTable // env's metatable, whose __index switches
	globals *lua.LTable // the sandbox's
	libAPI  *lua.LTable // {redis = register_function, log, ...}
}

// loadState is the library a FUNCTION LOAD is running.
type loadState struct {
	lib *Library
}

// functionsVM returns the functions' VM, making it the first time. The
// caller holds e.mu.
func (e *Engine) functionsVM() *vm {
	if e.funcs != nil {
		return e.funcs
	}
	v := e.newVM("user_function")
	L := v.L
	readonly := L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("Attempt to modify a readonly table")
		return 0
	})
	missing := L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("Script attempted to access nonexistent global variable '%s'", L.CheckAny(2).String())
		return 0
	})
	protect := func(t *lua.LTable) {
		mt := L.NewTable()
		mt.RawSetString("__index", missing)
		mt.RawSetString("__newindex", readonly)
		L.SetMetatable(t, mt)
	}
	r := L.NewTable()
	r.RawSetString("register_function", L.NewFunction(e.registerFunction))
	r.RawSetString("log", L.NewFunction(e.log))
	for name, lv := range map[string]int{"LOG_DEBUG": LogDebug, "LOG_VERBOSE": LogVerbose, "LOG_NOTICE": LogNotice, "LOG_WARNING": LogWarning} {
		r.RawSetString(name, lua.LNumber(lv))
	}
	setVersion(r)
	protect(r)
	api := L.NewTable()
	api.RawSetString("redis", r)
	api.RawSetString(concatName, L.NewFunction(concat)) // what `..` compiles to (see concat.go)
	protect(api)
	f := &fenv{env: L.NewTable(), meta: L.NewTable(), globals: L.Get(lua.GlobalsIndex).(*lua.LTable), libAPI: api}
	f.meta.RawSetString("__index", f.globals)
	f.meta.RawSetString("__newindex", readonly)
	L.SetMetatable(f.env, f.meta)
	e.funcs, e.fenv = &v, f
	return e.funcs
}

// loadTimeout bounds the run of a library's code, as Redis's
// LOAD_TIMEOUT_MS: it should only register functions.
const loadTimeout = 500 * time.Millisecond

var errLoadTimeout = errors.New("ERR FUNCTION LOAD timeout")

// meta is a library's metadata, its shebang line.
type meta struct {
	name, engine string
	body         []byte // the code after the shebang line (its newline included, so that lines count from the shebang's)
}

// parseMeta reads the shebang line of code ("#!lua name=lib"), as
// Redis's functionExtractLibMetaData.
func parseMeta(code []byte) (meta, error) {
	if !bytes.HasPrefix(code, []byte("#!")) {
		return meta{}, errors.New("ERR Missing library metadata")
	}
	// Redis reads the line as a C string: up to a NUL byte.
	c := code
	if i := bytes.IndexByte(c, 0); i >= 0 {
		c = c[:i]
	}
	nl := bytes.IndexByte(c, '\n')
	if nl < 0 {
		return meta{}, errors.New("ERR Invalid library metadata")
	}
	parts, ok := resp.SplitArgs(c[:nl])
	if !ok || len(parts) == 0 {
		return meta{}, errors.New("ERR Invalid library metadata")
	}
	md := meta{engine: string(parts[0][min(2, len(parts[0])):]), body: code[nl:]}
	named := false
	for _, p := range parts[1:] {
		if len(p) < 5 || !strings.EqualFold(string(p[:5]), "name=") {
			return meta{}, fmt.Errorf("ERR Invalid metadata value given: %s", cString(p))
		}
		if named {
			return meta{}, errors.New("ERR Invalid metadata value, name argument was given multiple times")
		}
		md.name, named = string(p[5:]), true
	}
	if !named {
		return meta{}, errors.New("ERR Library name was not given")
	}
	return md, nil
}

// cString is b up to its first NUL byte, as C's %s prints it.
func cString(b []byte) []byte {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return b[:i]
	}
	return b
}

// validName reports whether a library or function name is valid: letters,
// digits and underscores, at least one.
func validName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

const errBadName = "ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long"

// LoadLibrary loads a library (FUNCTION LOAD [REPLACE] code) and returns
// its name, or Redis's error; a library that fails to load changes
// nothing.
func (e *Engine) LoadLibrary(code []byte, replace bool) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	next, name, err := e.loadInto(e.libs.Load(), code, replace, loadTimeout)
	if err != nil {
		return "", err
	}
	e.publish(next)
	return name, nil
}

// loadInto returns s with the library of code added (s is not changed),
// as Redis's functionsCreateWithLibraryCtx; its code may run for timeout
// (0: no bound). The caller holds e.mu.
func (e *Engine) loadInto(s *libSet, code []byte, replace bool, timeout time.Duration) (*libSet, string, error) {
	md, err := parseMeta(code)
	if err != nil {
		return nil, "", err
	}
	if !validName(md.name) {
		return nil, "", errors.New(errBadName)
	}
	if !strings.EqualFold(md.engine, "lua") {
		return nil, "", fmt.Errorf("ERR Engine '%s' not found", md.engine)
	}
	if s.libs[md.name] != nil && !replace {
		return nil, "", fmt.Errorf("ERR Library '%s' already exists", md.name)
	}
	lib, err := e.create(md, code, timeout)
	if err != nil {
		return nil, "", err
	}
	next, err := s.join([]*Library{lib}, true, nil)
	return next, md.name, err
}

// create compiles a library's code and runs it, for it to register its
// functions, under the load sandbox, for timeout at most (0: no bound).
// The caller holds e.mu.
func (e *Engine) create(md meta, code []byte, timeout time.Duration) (*Library, error) {
	v := e.functionsVM()
	L, f := v.L, e.fenv
	chunk, err := parse.Parse(bytes.NewReader(md.body), "user_function")
	if err != nil {
		return nil, fmt.Errorf("ERR Error compiling function: user_function:%s", compileMsg(err, md.body))
	}
	rewriteConcat(chunk)
	p, err := lua.Compile(chunk, "user_function")
	if err != nil {
		return nil, fmt.Errorf("ERR Error compiling function: user_function:%s", compileMsg(err, md.body))
	}
	p.IsVarArg &^= lua.VarArgNeedsArg
	fn := L.NewFunctionFromProto(p)
	fn.Env = f.env // and so every function it makes
	lib := &Library{Name: md.name, Code: bytes.Clone(code), compiled: protoBytes(p)}

	ctx := context.Background()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, timeout, errLoadTimeout)
		defer cancel()
		L.SetContext(ctx)
	} else {
		L.RemoveContext()
	}
	f.meta.RawSetString("__index", f.libAPI)
	e.loading, e.cur = &loadState{lib: lib}, v
	L.Push(fn)
	err = L.PCall(0, 0, nil)
	L.SetTop(0)
	f.meta.RawSetString("__index", f.globals)
	e.loading, e.cur = nil, &e.eval
	L.SetContext(&e.kill)
	if err != nil {
		msg := err.Error()
		if errors.Is(context.Cause(ctx), errLoadTimeout) {
			msg = errLoadTimeout.Error()
		} else if ae, ok := err.(*lua.ApiError); ok {
			msg = "ERR " + ae.Object.String()
			if t, ok := ae.Object.(*lua.LTable); ok {
				if s, ok := t.RawGetString("err").(lua.LString); ok {
					msg = string(s)
				}
			}
		}
		return nil, fmt.Errorf("ERR Error registering functions: %s", msg)
	}
	if len(lib.Functions) == 0 {
		return nil, errors.New("ERR No functions registered")
	}
	slices.SortStableFunc(lib.Functions, func(a, b *Function) int { return strings.Compare(a.Name, b.Name) })
	return lib, nil
}

// registerFunction is redis.register_function, in either form: (name,
// callback), or a table {function_name=, callback=, flags=, description=}.
func (e *Engine) registerFunction(L *lua.LState) int {
	ls := e.loading
	if ls == nil {
		e.raiseErr(L, "ERR redis.register_function can only be called on FUNCTION LOAD command")
	}
	fail := func(msg string) int {
		e.raiseErr(L, "ERR "+msg)
		return 0
	}
	f := &Function{}
	switch L.GetTop() {
	case 1:
		t, ok := L.Get(1).(*lua.LTable)
		if !ok {
			return fail("calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).")
		}
		named := false
		var msg string
		t.ForEach(func(k, v lua.LValue) {
			if msg != "" {
				return
			}
			key, ok := luaString(k)
			if !ok {
				msg = "named argument key given to redis.register_function is not a string"
				return
			}
			switch strings.ToLower(key) {
			case "function_name":
				if f.Name, ok = luaString(v); !ok {
					msg = "function_name argument given to redis.register_function must be a string"
				}
				named = true
			case "description":
				if f.Description, ok = luaString(v); !ok {
					msg = "description argument given to redis.register_function must be a string"
				}
				f.HasDescription = true
			case "callback":
				if f.fn, ok = v.(*lua.LFunction); !ok {
					msg = "callback argument given to redis.register_function must be a function"
				}
			case "flags":
				ft, ok := v.(*lua.LTable)
				if !ok {
					msg = "flags argument to redis.register_function must be a table representing function flags"
					return
				}
				if f.Flags, ok = readFlags(ft); !ok {
					msg = "unknown flag given"
				}
			default:
				msg = "unknown argument given to redis.register_function"
			}
		})
		switch {
		case msg != "":
			return fail(msg)
		case !named:
			return fail("redis.register_function must get a function name argument")
		case f.fn == nil:
			return fail("redis.register_function must get a callback argument")
		}
	case 2:
		var ok bool
		if f.Name, ok = luaString(L.Get(1)); !ok {
			return fail("first argument to redis.register_function must be a string")
		}
		if f.fn, ok = L.Get(2).(*lua.LFunction); !ok {
			return fail("second argument to redis.register_function must be a function")
		}
	default:
		return fail("wrong number of arguments to redis.register_function")
	}
	if !validName(f.Name) {
		e.raiseErr(L, errBadName)
	}
	if slices.ContainsFunc(ls.lib.Functions, func(o *Function) bool { return o.Name == f.Name }) {
		return fail("Function already exists in the library")
	}
	ls.lib.Functions = append(ls.lib.Functions, f)
	return 0
}

// readFlags reads a flags table: names, case ignored.
func readFlags(t *lua.LTable) (Flags, bool) {
	var flags Flags
	for j := 1; ; j++ {
		v := t.RawGetInt(j)
		if v == lua.LNil {
			return flags, true
		}
		s, ok := luaString(v)
		if !ok {
			return 0, false
		}
		i := slices.IndexFunc(flagNames[:], func(n string) bool { return strings.EqualFold(n, s) })
		if i < 0 {
			return 0, false
		}
		flags |= 1 << i
	}
}

// luaString is Lua's lua_tolstring of a string or a number.
func luaString(v lua.LValue) (string, bool) {
	switch v := v.(type) {
	case lua.LString:
		return string(v), true
	case lua.LNumber:
		return luaNumber(float64(v)), true
	}
	return "", false
}

// DeleteLibrary removes a library and its functions (FUNCTION DELETE).
func (e *Engine) DeleteLibrary(name string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.libs.Load()
	old := s.libs[name]
	if old == nil {
		return errors.New("ERR Library not found")
	}
	next := &libSet{libs: maps.Clone(s.libs), funcs: maps.Clone(s.funcs)}
	next.unlink(old)
	e.publish(next)
	return nil
}

// FlushFunctions removes every library (FUNCTION FLUSH).
func (e *Engine) FlushFunctions() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.publish(&libSet{libs: map[string]*Library{}, funcs: map[string]*Function{}})
}

// Libraries returns the libraries loaded, by name (FUNCTION LIST).
func (e *Engine) Libraries() []*Library { return e.libs.Load().sorted() }

// Function returns the function of that name, case ignored, or nil.
func (e *Engine) Function(name []byte) *Function {
	funcs := e.libs.Load().funcs
	if f := funcs[string(name)]; f != nil {
		return f
	}
	return funcs[strings.ToLower(string(name))]
}

// FunctionCounts returns how many libraries and functions are loaded
// (FUNCTION STATS).
func (e *Engine) FunctionCounts() (libraries, functions int) {
	s := e.libs.Load()
	for _, l := range s.libs {
		functions += len(l.Functions)
	}
	return len(s.libs), functions
}

// Running describes the running script for FUNCTION STATS: whether one
// runs, whether it is a function, and if so its name, its request (a
// copy) and how long it has run.
func (e *Engine) Running() (running, function bool, name string, req [][]byte, d time.Duration) {
	e.killMu.Lock()
	defer e.killMu.Unlock()
	if !e.killable {
		return false, false, "", nil, 0
	}
	if !e.runFunc {
		return true, false, "", nil, 0
	}
	for _, a := range e.runReq {
		req = append(req, bytes.Clone(a))
	}
	return true, true, e.runName, req, time.Duration(time.Now().UnixNano() - e.started.Load())
}

// Call runs function f (FCALL) with keys and argv, its commands run
// through call, and appends its reply to dst in protocol proto; req is
// the request, which FUNCTION STATS shows while it runs (it must stay
// valid until Call returns).
func (e *Engine) Call(dst []byte, f *Function, keys, argv [][]byte, req [][]byte, call Caller, proto int) []byte {
	e.mu.Lock()
	defer e.mu.Unlock()
	v := e.funcs // made by the load of f's library
	L := v.L
	return e.run(dst, v, f.Name, f.fn, []lua.LValue{strTable(L, keys), strTable(L, argv)}, req, call, proto)
}

// DumpFunctions returns the libraries as FUNCTION DUMP's payload, and the
// version of the libraries it holds (see FunctionsVersion).
func (e *Engine) DumpFunctions() (version uint64, payload []byte) {
	s := e.libs.Load()
	libs := s.sorted()
	codes := make([][]byte, len(libs))
	for i, l := range libs {
		codes[i] = l.Code
	}
	return s.version, appendDump(nil, codes)
}

// FunctionsVersion changes whenever the libraries do: persistence and
// replication write them again when it has.
func (e *Engine) FunctionsVersion() uint64 { return e.libs.Load().version }

// RestorePolicy is FUNCTION RESTORE's policy.
type RestorePolicy uint8

// The policies: APPEND (the default) fails on a library already loaded,
// REPLACE replaces it, FLUSH removes every library first.
const (
	RestoreAppend RestorePolicy = iota
	RestoreReplace
	RestoreFlush
)

// RestoreFunctions loads the libraries of a FUNCTION DUMP payload (FUNCTION
// RESTORE); on any error nothing changes.
func (e *Engine) RestoreFunctions(payload []byte, policy RestorePolicy) error {
	return e.restore(payload, policy, loadTimeout)
}

// restore is RestoreFunctions, each library's code run for timeout at
// most (0: no bound).
func (e *Engine) restore(payload []byte, policy RestorePolicy, timeout time.Duration) error {
	codes, err := parseDump(payload)
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	loaded := &libSet{libs: map[string]*Library{}, funcs: map[string]*Function{}}
	for _, code := range codes {
		if loaded, _, err = e.loadInto(loaded, code, false, timeout); err != nil {
			return err
		}
	}
	if policy == RestoreFlush {
		e.publish(loaded)
		return nil
	}
	next, err := e.libs.Load().join(loaded.sorted(), policy == RestoreReplace, func(name string) error {
		return fmt.Errorf("ERR Library %s already exists", name)
	})
	if err != nil {
		return err
	}
	e.publish(next)
	return nil
}

// ReplaceFunctions makes the libraries of a FUNCTION DUMP payload the
// only ones (FUNCTION RESTORE's FLUSH policy): how a restart and a
// replica take them. Their code runs without FUNCTION LOAD's time bound,
// as Redis loads them from its RDB file or its primary: each ran within
// it once, and a slower machine must not refuse it.
func (e *Engine) ReplaceFunctions(payload []byte) error {
	return e.restore(payload, RestoreFlush, 0)
}
