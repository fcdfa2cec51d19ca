// Package script runs Redis's Lua scripts (EVAL, EVALSHA) on a Lua 5.1 VM
// (gopher-lua), sandboxed as Redis 7 does: the libraries Redis loads, no
// global variable created or read unless it exists, math.random seeded
// the same for every script. A script changes state only through
// redis.call, which the caller runs through the command table; this
// package converts between Lua values and RESP replies both ways, as
// Redis's tables say.
package script

import (
	"bytes"
	"container/list"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"

	"github.com/rlserver/rlserver/resp"
	"github.com/rlserver/rlserver/values"
)

// Caller runs one command of a script (redis.call, redis.pcall) and
// appends its RESP reply to dst, in protocol proto (2 or 3: what the
// script chose with redis.setresp). args are valid only during the call.
type Caller func(dst []byte, args [][]byte, proto int) []byte

// Engine holds the scripts loaded (SCRIPT LOAD, EVAL), the function
// libraries (FUNCTION LOAD, see function.go) and the VMs they run on.
// Scripts and functions run one at a time.
type Engine struct {
	mu      sync.Mutex
	eval    vm                 // EVAL's
	scripts map[string]*cached // the scripts loaded, by sha1 hex
	call    Caller             // the running script's
	resp    int                // the running script's protocol for redis.call (redis.setresp)
	cur     *vm                // the VM running (eval or funcs)
	// randSt is math.random's lrand48 state, one for scripts and
	// functions, as Redis's.
	randSt  uint64
	Logf    func(level int, msg string)
	running string // the running script's sha, or function's name
	// redis.call's scratch, reused from call to call: the arguments'
	// bytes, where each ends, the arguments, the reply.
	argBuf  []byte
	argEnds []int
	args    [][]byte
	out     []byte
	// evalLRU orders the scripts EVAL added (not SCRIPT LOAD), most
	// recently used first: past MaxEvalScripts the least recent is
	// forgotten, as Redis 7.4 bounds them.
	evalLRU *list.List
	evalAt  map[string]*list.Element
	Evicted atomic.Int64 // scripts forgotten so (INFO stats' evicted_scripts)

	// The function libraries: an immutable set, replaced whole under mu
	// by every change, read without a lock (FCALL, LIST, DUMP, and
	// persistence and replication through FunctionsVersion).
	libs    atomic.Pointer[libSet]
	funcs   *vm        // the functions' VM, made by the first library loaded (nil: none yet)
	fenv    *fenv      // the functions' globals, on funcs
	loading *loadState // the library FUNCTION LOAD is running (nil: none)

	// A running script that has not written may be killed by SCRIPT KILL
	// (Kill). Once it has run longer than the threshold
	// (busy-reply-threshold), other clients are answered -BUSY, and the
	// watchdog calls OnBusy now and then until it ends.
	threshold atomic.Int64 // ns
	OnBusy    func()       // set before the first script runs
	killMu    sync.Mutex
	killable  bool // a script runs and may be killed
	wrote     bool
	runFunc   bool         // the running script is a function (FCALL)
	runName   string       // a running function's name (FUNCTION STATS)
	runReq    [][]byte     // and its request
	started   atomic.Int64 // when the running script started, Unix ns (0: none runs)
	kill      killSwitch   // the VMs' context
	watch     sync.Once
}

// cached is a script kept (SCRIPT LOAD, EVAL): compiled, with its
// shebang's flags, and what it counts for in Memory.
type cached struct {
	fn       *lua.LFunction
	flags    Flags // with shebang: the shebang line's
	shebang  bool
	body     int // its text's bytes
	compiled int // its compiled code's (protoBytes)
}

// vm is one Lua VM: EVAL's or the functions'. Both take the engine's
// kill switch as their context.
type vm struct {
	L       *lua.LState
	handler *lua.LFunction // onError
	chunk   string         // the chunk name errors give: user_script or user_function
}

// Errors of a killed script and of SCRIPT KILL, as Redis words them.
var (
	errKilled     = errors.New("ERR Script killed by user with SCRIPT KILL...")
	ErrNotBusy    = errors.New("NOTBUSY No scripts in execution right now.")
	ErrUnkillable = errors.New("UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.")
)

// The BUSY errors, while a script (EVAL) or a function (FCALL) runs: each
// names the command that kills it.
const (
	ErrBusyScript   = "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
	ErrBusyFunction = "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE."
)

// DefaultThreshold is Redis's busy-reply-threshold.
const DefaultThreshold = 5 * time.Second

// SetThreshold sets how long a script runs before other clients are
// answered -BUSY (0: at once).
func (e *Engine) SetThreshold(d time.Duration) { e.threshold.Store(int64(d)) }

// Threshold returns SetThreshold's value.
func (e *Engine) Threshold() time.Duration { return time.Duration(e.threshold.Load()) }

// Wrote records that the running script changed the keyspace: it can no
// longer be killed.
func (e *Engine) Wrote() {
	e.killMu.Lock()
	e.wrote = true
	e.killMu.Unlock()
}

// Kill stops the running script unless it wrote: an EVAL script by
// SCRIPT KILL (function false), a function by FUNCTION KILL (function
// true); the other kind is answered BUSY, as by Redis.
func (e *Engine) Kill(function bool) error {
	e.killMu.Lock()
	defer e.killMu.Unlock()
	switch {
	case !e.killable:
		return ErrNotBusy
	case e.wrote:
		return ErrUnkillable
	case e.runFunc && !function:
		return errors.New(ErrBusyFunction)
	case !e.runFunc && function:
		return errors.New(ErrBusyScript)
	}
	e.kill.fire(errKilled)
	return nil
}

// BusyError is the error other clients are answered while the running
// script is past the threshold (see Busy).
func (e *Engine) BusyError() string {
	e.killMu.Lock()
	defer e.killMu.Unlock()
	if e.runFunc {
		return ErrBusyFunction
	}
	return ErrBusyScript
}

// SHA1 returns a script's id: the hex SHA-1 of its body.
func SHA1(body []byte) string {
	s := sha1.Sum(body)
	return hex.EncodeToString(s[:])
}

// New returns an engine with no script loaded.
func New() *Engine {
	e := &Engine{scripts: map[string]*cached{},
		evalLRU: list.New(), evalAt: map[string]*list.Element{}}
	e.threshold.Store(int64(DefaultThreshold))
	e.eval = e.newVM("user_script")
	e.cur = &e.eval
	e.randSt = 0x330E // srand48(0): the generator then runs on across scripts, as Redis 7's
	e.libs.Store(&libSet{libs: map[string]*Library{}, funcs: map[string]*Function{}})
	return e
}

// Load keeps body and returns its sha, compiling it first: a script that
// does not compile is refused with Redis's error.
func (e *Engine) Load(body []byte) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	sha := SHA1(body)
	_, err := e.compile(sha, body)
	if el := e.evalAt[sha]; el != nil && err == nil {
		e.evalLRU.Remove(el) // loaded for good now
		delete(e.evalAt, sha)
	}
	return sha, err
}

// MaxEvalScripts bounds the scripts EVAL keeps, as Redis 7.4's LRU does.
const MaxEvalScripts = 500

// touchEval records a use of sha, a script EVAL added (added: just now),
// forgetting the least recently used past MaxEvalScripts.
func (e *Engine) touchEval(sha string, added bool) {
	if el := e.evalAt[sha]; el != nil {
		e.evalLRU.MoveToFront(el)
		return
	}
	if !added {
		return // SCRIPT LOAD's: kept for good
	}
	e.evalAt[sha] = e.evalLRU.PushFront(sha)
	for e.evalLRU.Len() > MaxEvalScripts {
		old := e.evalLRU.Remove(e.evalLRU.Back()).(string)
		delete(e.evalAt, old)
		delete(e.scripts, old)
		e.Evicted.Add(1)
	}
}

// Exists reports whether a script is loaded.
func (e *Engine) Exists(sha string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, ok := e.scripts[strings.ToLower(sha)]
	return ok
}

// Flush forgets every script (SCRIPT FLUSH).
func (e *Engine) Flush() {
	e.mu.Lock()
	defer e.mu.Unlock()
	clear(e.scripts)
	clear(e.evalAt)
	e.evalLRU.Init()
}

// compile returns the function of body, whose id is sha, compiling and
// keeping it unless it is kept already.
func (e *Engine) compile(sha string, body []byte) (*lua.LFunction, error) {
	if c := e.scripts[sha]; c != nil {
		return c.fn, nil
	}
	flags, shebang, n, err := parseShebang(body)
	if err != nil {
		return nil, err
	}
	// The shebang line is compiled as an empty one: line numbers stay.
	src := body[n:]
	chunk, err := parse.Parse(bytes.NewReader(src), "user_script")
	if err != nil {
		return nil, fmt.Errorf("ERR Error compiling script (new function): user_script:%s", compileMsg(err, src))
	}
	rewriteConcat(chunk)
	p, err := lua.Compile(chunk, "user_script")
	if err != nil {
		return nil, fmt.Errorf("ERR Error compiling script (new function): user_script:%s", compileMsg(err, src))
	}
	// As Redis runs a script as the body of a function without
	// parameters, it gets no "arg" table (Lua 5.1 would build one for a
	// chunk on every call).
	p.IsVarArg &^= lua.VarArgNeedsArg
	fn := e.eval.L.NewFunctionFromProto(p)
	e.scripts[sha] = &cached{fn: fn, flags: flags, shebang: shebang, body: len(body), compiled: protoBytes(p)}
	return fn, nil
}

// compileMsg turns a gopher-lua parse error into Lua 5.1's "line: msg"
// for the errors at the end of a script Lua words otherwise.
func compileMsg(err error, body []byte) string {
	pe, ok := err.(*parse.Error)
	if !ok {
		return err.Error()
	}
	if pe.Pos.Line < 0 { // at the end
		line := 1 + strings.Count(strings.TrimRight(string(body), "\n"), "\n")
		switch pe.Message {
		case "syntax error":
			return fmt.Sprintf("%d: unexpected symbol near '<eof>'", line)
		case "unterminated string":
			return fmt.Sprintf("%d: unfinished string near '<eof>'", line)
		}
		return fmt.Sprintf("%d: %s near '<eof>'", line, pe.Message)
	}
	return fmt.Sprintf("%d: %s near '%s'", pe.Pos.Line, pe.Message, pe.Token)
}

// ErrNoScript is EVALSHA's error for a sha not loaded.
const ErrNoScript = "NOSCRIPT No matching script. Please use EVAL."

// Run runs the script body (sha its id, body nil to run a loaded one)
// with keys and argv, running its commands through call, and appends its
// reply to dst in protocol proto (the client's).
func (e *Engine) Run(dst []byte, sha string, body []byte, keys, argv [][]byte, call Caller, proto int) []byte {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i := 0; i < len(sha); i++ {
		if 'A' <= sha[i] && sha[i] <= 'Z' {
			sha = strings.ToLower(sha)
			break
		}
	}
	var fn *lua.LFunction
	if c := e.scripts[sha]; c != nil {
		fn = c.fn
	}
	added := false
	if fn == nil {
		if body == nil {
			return appendErr(dst, ErrNoScript)
		}
		var err error
		if fn, err = e.compile(sha, body); err != nil {
			return appendErr(dst, err.Error())
		}
		added = true
	}
	e.touchEval(sha, added)
	L := e.eval.L
	g := L.Get(lua.GlobalsIndex).(*lua.LTable)
	g.RawSetString("KEYS", strTable(L, keys))
	g.RawSetString("ARGV", strTable(L, argv))
	return e.run(dst, &e.eval, sha, fn, nil, nil, call, proto)
}

// run runs fn with args on VM v, its commands run through call, and
// appends its reply to dst in protocol proto. name is the script's sha or
// the function's name (errors give it); req, a function's request (nil
// for EVAL), is what FUNCTION STATS shows while it runs. The caller holds
// e.mu.
func (e *Engine) run(dst []byte, v *vm, name string, fn *lua.LFunction, args []lua.LValue, req [][]byte, call Caller, proto int) []byte {
	L := v.L
	e.call, e.resp, e.running, e.cur = call, 2, name, v
	e.watch.Do(func() { go e.watchdog() })
	e.killMu.Lock()
	e.killable, e.wrote = true, false
	e.runFunc, e.runName, e.runReq = v != &e.eval, name, req
	e.kill.reset()
	e.started.Store(time.Now().UnixNano())
	e.killMu.Unlock()
	defer func() {
		e.killMu.Lock()
		e.killable, e.runReq = false, nil
		e.started.Store(0)
		e.killMu.Unlock()
		e.call, e.running = nil, ""
	}()
	L.Push(fn)
	for _, a := range args {
		L.Push(a)
	}
	if err := L.PCall(len(args), 1, v.handler); err != nil {
		L.SetTop(0)
		if cause := e.kill.cause(); cause != nil {
			err = &lua.ApiError{Object: e.withLine(err, cause.Error())}
		}
		return appendErr(dst, e.errorText(err))
	}
	ret := L.Get(-1)
	L.SetTop(0)
	return e.toRESP(dst, ret, proto)
}

// Busy reports whether a script has run longer than the threshold (then
// other clients are answered -BUSY, as Redis does): one atomic load when
// none runs.
func (e *Engine) Busy() bool {
	s := e.started.Load()
	return s != 0 && e.past(s)
}

// past reports whether a script started at s has run past the threshold.
func (e *Engine) past(s int64) bool { return time.Now().UnixNano()-s > e.threshold.Load() }

// watchdog calls OnBusy while a script runs past the threshold,
// checking a few times per threshold.
func (e *Engine) watchdog() {
	for {
		tick := 100 * time.Millisecond
		if d := e.Threshold(); d > 0 {
			tick = min(tick, max(d/4, time.Millisecond))
		}
		time.Sleep(tick)
		if e.Busy() && e.OnBusy != nil {
			e.OnBusy()
		}
	}
}

// killSwitch is the VM's context. gopher-lua selects on Done before
// every instruction, and a nil channel is the cheapest case of that
// select: Done returns nil until the running script is killed, then a
// closed channel (unlike a context.Context, Done changes; the VM is the
// only reader). Its methods are safe for concurrent use.
type killSwitch struct {
	done atomic.Pointer[chan struct{}]
	why  atomic.Pointer[error]
}

var closed = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// fire stops the running script with the error err.
func (k *killSwitch) fire(err error) {
	k.why.CompareAndSwap(nil, &err)
	k.done.Store(&closed)
}

// reset readies the switch for the next script.
func (k *killSwitch) reset() {
	if k.done.Load() != nil {
		k.done.Store(nil)
		k.why.Store(nil)
	}
}

// cause returns the error the script was stopped with (nil: not stopped).
func (k *killSwitch) cause() error {
	if p := k.why.Load(); p != nil {
		return *p
	}
	return nil
}

func (k *killSwitch) Deadline() (time.Time, bool) { return time.Time{}, false }

func (k *killSwitch) Done() <-chan struct{} {
	if p := k.done.Load(); p != nil {
		return *p
	}
	return nil
}

func (k *killSwitch) Err() error {
	if k.done.Load() != nil {
		return context.Canceled
	}
	return nil
}

func (k *killSwitch) Value(any) any { return nil }

func strTable(L *lua.LState, vals [][]byte) *lua.LTable {
	t := L.CreateTable(len(vals), 0)
	for i, v := range vals {
		t.RawSetInt(i+1, lua.LString(v))
	}
	return t
}

// onError is the error handler scripts run under, as Redis's: the error
// becomes a table {err=..., line=...}, a Lua error getting ERR before its
// message, the line where the script was when it was raised.
func (e *Engine) onError(L *lua.LState) int {
	v := L.Get(1)
	t, ok := v.(*lua.LTable)
	if !ok || t.RawGetString("err").Type() != lua.LTString {
		t = L.NewTable()
		t.RawSetString("err", lua.LString("ERR "+v.String()))
	}
	if t.RawGetString("line") == lua.LNil {
		t.RawSetString("line", lua.LNumber(e.scriptLine(L)))
	}
	L.Push(t)
	return 1
}

// scriptLine returns the running script's current line (0 unknown).
func (e *Engine) scriptLine(L *lua.LState) int {
	for level := 1; level <= 4; level++ {
		if n, err := strconv.Atoi(lineOf(L.Where(level), e.cur.chunk)); err == nil {
			return n
		}
	}
	return 0
}

// lineOf returns N of a "chunk:N:" position, or "".
func lineOf(where, chunk string) string {
	rest, ok := strings.CutPrefix(where, chunk)
	if !ok || !strings.HasPrefix(rest, ":") {
		return ""
	}
	n, _, _ := strings.Cut(rest[1:], ":")
	return n
}

// withLine is a table {err=msg, line=...} keeping the line err was raised
// at (the script was stopped there).
func (e *Engine) withLine(err error, msg string) *lua.LTable {
	t := e.cur.L.NewTable()
	t.RawSetString("err", lua.LString(msg))
	if ae, ok := err.(*lua.ApiError); ok {
		if old, ok := ae.Object.(*lua.LTable); ok {
			t.RawSetString("line", old.RawGetString("line"))
		}
	}
	return t
}

// errorText is the error a script that raised err answers, as Redis 7.0
// words it: the error (with its code), then the script (its sha, or the
// function's name), its chunk and the line.
func (e *Engine) errorText(err error) string {
	msg, line := err.Error(), 0
	if ae, ok := err.(*lua.ApiError); ok {
		if t, ok := ae.Object.(*lua.LTable); ok {
			msg = t.RawGetString("err").String()
			if n, ok := t.RawGetString("line").(lua.LNumber); ok {
				line = int(n)
			}
		}
	}
	return fmt.Sprintf("%s script: %s, on @%s:%d.", strings.TrimPrefix(msg, "-"), e.running, e.cur.chunk, line)
}

// toRESP converts a script's return value into a reply in protocol
// proto, as Redis's luaReplyToRedisReply.
func (e *Engine) toRESP(dst []byte, v lua.LValue, proto int) []byte {
	switch v := v.(type) {
	case lua.LString:
		return resp.AppendBulkString(dst, string(v))
	case lua.LBool:
		if e.resp == 2 { // the script's protocol, as Redis
			if v {
				return resp.AppendInt(dst, 1)
			}
			return resp.AppendNull(dst, proto)
		}
		return resp.AppendBool(dst, proto, bool(v))
	case lua.LNumber:
		return resp.AppendInt(dst, toInt(float64(v)))
	case *lua.LTable:
		if s, ok := v.RawGetString("err").(lua.LString); ok {
			return appendErr(dst, strings.TrimPrefix(string(s), "-"))
		}
		if s, ok := v.RawGetString("ok").(lua.LString); ok {
			return resp.AppendStatus(dst, strings.Map(noCRLF, string(s)))
		}
		if d, ok := v.RawGetString("double").(lua.LNumber); ok {
			if proto == 3 {
				return append(append(append(dst, ','), values.FormatScore(float64(d))...), "\r\n"...)
			}
			return resp.AppendBulkString(dst, values.FormatScore(float64(d)))
		}
		if m, ok := v.RawGetString("map").(*lua.LTable); ok {
			var pairs []lua.LValue
			m.ForEach(func(k, val lua.LValue) { pairs = append(pairs, k, val) })
			dst = resp.AppendMap(dst, proto, len(pairs)/2)
			for _, x := range pairs {
				dst = e.toRESP(dst, x, proto)
			}
			return dst
		}
		if s, ok := v.RawGetString("set").(*lua.LTable); ok {
			var members []lua.LValue
			s.ForEach(func(k, _ lua.LValue) { members = append(members, k) })
			dst = resp.AppendSet(dst, proto, len(members))
			for _, x := range members {
				dst = e.toRESP(dst, x, proto)
			}
			return dst
		}
		n := 0
		for v.RawGetInt(n+1) != lua.LNil {
			n++
		}
		dst = resp.AppendArray(dst, n)
		for i := 1; i <= n; i++ {
			dst = e.toRESP(dst, v.RawGetInt(i), proto)
		}
		return dst
	}
	return resp.AppendNull(dst, proto)
}

// toInt is C's (long long) cast of a Lua number.
func toInt(f float64) int64 {
	switch {
	case math.IsNaN(f):
		return math.MinInt64
	case f >= 9.223372036854775807e18 || f < -9.223372036854775808e18:
		return math.MinInt64
	}
	return int64(f)
}

func noCRLF(r rune) rune {
	if r == '\r' || r == '\n' {
		return ' '
	}
	return r
}

// appendErr appends an error reply; a message without a code gets ERR.
func appendErr(dst []byte, msg string) []byte {
	if msg == "" {
		msg = "ERR"
	}
	return resp.AppendErr(dst, msg)
}
