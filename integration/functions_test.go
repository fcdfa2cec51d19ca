package integration

import (
	"cmp"
	"context"
	bin "encoding/binary"
	"fmt"
	"hash/crc64"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/internal/redistest"
	"github.com/rlserver/rlserver/script"
)

// lib is a library's code: its shebang line, then body.
func lib(name, body string) string { return "#!lua name=" + name + "\n" + body }

// TestFunctionsAgainstRedis: Redis 7's functions, the same requests to
// redis-server and to rlserver, in RESP2 and RESP3, replies compared:
// FUNCTION LOAD [REPLACE] and its errors (metadata, names, the engine,
// the load sandbox where only redis.register_function, redis.log and the
// version fields exist, the load timeout, register_function's forms and
// refusals, collisions), FCALL and FCALL_RO with every flag and error,
// FUNCTION LIST with its options, STATS, DELETE, FLUSH, DUMP (byte for
// byte), KILL with nothing running, functions inside MULTI and refused
// from scripts. Each FUNCTION LIST names one library: Redis lists
// libraries, and functions, in its hash tables' order.
func TestFunctionsAgainstRedis(t *testing.T) {
	t.Parallel()
	echo := lib("echo", "redis.register_function('echo', function(keys, args) return {keys[1], args[1], #keys, #args} end)")
	set := lib("setter", "redis.register_function{function_name='set', callback=function(keys, args) return redis.call('SET', keys[1], args[1]) end, description='sets a key'}")
	get := lib("getter", "redis.register_function{function_name='get', callback=function(keys, args) return redis.call('GET', keys[1]) end, flags={'no-writes'}}")
	flags := lib("flagged", "redis.register_function{function_name='flagged', callback=function() return redis.call('PING') end,\n"+
		"flags={'no-writes', 'ALLOW-OOM', 'allow-stale', 'no-cluster', 'allow-cross-slot-keys'}, description=''}")
	diffRequests(t, [][]string{
		{"FUNCTION", "FLUSH"},
		{"FUNCTION", "LIST"},
		{"FUNCTION", "STATS"},
		{"FUNCTION", "DUMP"},
		{"FUNCTION", "LOAD", echo},
		{"FUNCTION", "LIST", "WITHCODE"},
		{"FUNCTION", "DUMP"},
		{"FCALL", "echo", "1", "k", "a"},
		{"FCALL", "ECHO", "0"},
		{"FCALL_RO", "echo", "0"},
		{"FUNCTION", "LOAD", echo},
		{"FUNCTION", "LOAD", "REPLACE", echo},
		{"FUNCTION", "LOAD", "replace", "REPLACE", echo},
		{"FUNCTION", "LOAD", set},
		{"FCALL", "set", "1", "k", "v"},
		{"GET", "k"},
		{"FCALL_RO", "set", "1", "k", "v"},
		{"FUNCTION", "LIST", "LIBRARYNAME", "setter"},
		{"FUNCTION", "LOAD", get},
		{"FCALL_RO", "get", "1", "k"},
		{"FCALL", "get", "1", "k"},
		{"FUNCTION", "LIST", "LIBRARYNAME", "GET*", "WITHCODE"},
		{"FUNCTION", "LIST", "WITHCODE", "LIBRARYNAME", "g?tter"},
		{"FUNCTION", "LIST", "LIBRARYNAME", "nomatch"},
		{"FUNCTION", "LOAD", flags},
		{"FUNCTION", "LIST", "LIBRARYNAME", "flagged"},
		{"FCALL_RO", "flagged", "0"},
		{"FUNCTION", "STATS"},
		// FCALL's errors.
		{"FCALL", "nosuch", "0"},
		{"FCALL", "nosuch", "x"},
		{"FCALL", "echo", "x"},
		{"FCALL", "echo", "-1"},
		{"FCALL", "echo", "2", "a"},
		{"FCALL", "echo", "99999999999999999999"},
		{"FCALL", "echo"},
		{"FCALL_RO", "echo"},
		// FUNCTION LOAD's refusals: nothing changes.
		{"FUNCTION", "LOAD"},
		{"FUNCTION", "LOAD", "REPLACE"},
		{"FUNCTION", "LOAD", "foo", echo},
		{"FUNCTION", "LOAD", "return 1"},
		{"FUNCTION", "LOAD", "#!lua"},
		{"FUNCTION", "LOAD", "#!lua name=x"},
		{"FUNCTION", "LOAD", "#!lua\nreturn 1"},
		{"FUNCTION", "LOAD", "#!lua name=x name=y\n"},
		{"FUNCTION", "LOAD", "#!lua foo=bar\n"},
		{"FUNCTION", "LOAD", "#!lua name=a-b\n"},
		{"FUNCTION", "LOAD", "#!lua name=\n"},
		{"FUNCTION", "LOAD", "#!lua NAME=\"x y\"\n"},
		{"FUNCTION", "LOAD", "#!lua name=\"x\n"},
		{"FUNCTION", "LOAD", "#!foo name=x\n"},
		{"FUNCTION", "LOAD", "#! lua name=x\n"},
		{"FUNCTION", "LOAD", "#!LUA name=up\nredis.register_function('up', function() return 'up' end)"},
		{"FCALL", "up", "0"},
		{"FUNCTION", "LOAD", lib("e", "")},
		{"FUNCTION", "LOAD", lib("e", "return 1")},
		{"FUNCTION", "LOAD", lib("e", "local a =")},
		{"FUNCTION", "LOAD", lib("e", "redis.register_function('a-b', function() end)")},
		{"FUNCTION", "LOAD", lib("e", "redis.register_function('', function() end)")},
		{"FUNCTION", "LOAD", lib("e", "redis.register_function('x', 1)")},
		{"FUNCTION", "LOAD", lib("e", "redis.register_function({}, function() end)")},
		{"FUNCTION", "LOAD", lib("e", "redis.register_function('x')")},
		{"FUNCTION", "LOAD", lib("e", "redis.register_function()")},
		{"FUNCTION", "LOAD", lib("e", "redis.register_function('x', function() end, 3)")},
		{"FUNCTION", "LOAD", lib("e", "redis.register_function{function_name='x'}")},
		{"FUNCTION", "LOAD", lib("e", "redis.register_function{callback=function() end}")},
		{"FUNCTION", "LOAD", lib("e", "redis.register_function{function_name='x', callback=function() end, flags={'bad'}}")},
		{"FUNCTION", "LOAD", lib("e", "redis.register_function{function_name='x', callback=function() end, flags={1}}")},
		{"FUNCTION", "LOAD", lib("e", "redis.register_function{function_name='x', callback=function() end, flags='no-writes'}")},
		{"FUNCTION", "LOAD", lib("e", "redis.register_function{function_name='x', callback=function() end, foo=1}")},
		{"FUNCTION", "LOAD", lib("e", "redis.register_function{function_name='x', callback=1}")},
		{"FUNCTION", "LOAD", lib("e", "redis.register_function{function_name={}, callback=function() end}")},
		{"FUNCTION", "LOAD", lib("e", "redis.register_function{function_name='x', callback=function() end, description={}}")},
		{"FUNCTION", "LOAD", lib("e", "redis.register_function('x', function() end) redis.register_function('x', function() end)")},
		{"FUNCTION", "LOAD", lib("e", "redis.register_function('echo', function() end)")},
		{"FUNCTION", "LOAD", lib("e", "redis.register_function('ECHO', function() end)")},
		// The load sandbox: no globals but redis, no redis.call.
		{"FUNCTION", "LOAD", lib("e", "redis.register_function('x', function() end) redis.call('PING')")},
		{"FUNCTION", "LOAD", lib("e", "redis.register_function('x', function() end) return math.floor(1)")},
		{"FUNCTION", "LOAD", lib("e", "redis.register_function('x', function() end) error('boom')")},
		{"FUNCTION", "LOAD", lib("e", "redis.register_function('x', function() end) x = 1")},
		{"FUNCTION", "LOAD", lib("e", "redis.register_function('x', function() end) redis.foo = 1")},
		{"FUNCTION", "LOAD", lib("e", "redis.register_function('x', function() end) return redis.setresp")},
		{"FUNCTION", "LOAD", lib("e", "redis.register_function('x', function() end) return KEYS")},
		{"FUNCTION", "LOAD", lib("e", "redis.register_function('x', function() end) redis.log(redis.LOG_WARNING)")},
		{"FUNCTION", "LOAD", lib("e", "redis.register_function('x', function() end) redis.log(99, 'x')")},
		{"FUNCTION", "LOAD", lib("e", "redis.register_function('x', function() end) local i = 0 while true do i = i + 1 end")},
		{"FUNCTION", "LOAD", lib("fine", "redis.log(redis.LOG_DEBUG, 'loading') local v = redis.LOG_NOTICE + #redis.REDIS_VERSION + redis.REDIS_VERSION_NUM\n"+
			"redis.register_function(5, function() return v > 0 end)\nredis.register_function{function_name='described', description=7, callback=function() return 1 end}\nreturn 5")},
		{"FCALL", "5", "0"},
		{"FUNCTION", "LOAD", lib("concat", "local at_load = 'v' .. 1.5 .. '/' .. 0.1 + 0.2\n"+
			"redis.register_function('concat', function(k, a) return {at_load, a[1] .. (0.1 + 0.2), 2^53 .. ''} end)")},
		{"FCALL", "concat", "0", "x"},
		// Concatenation errors name the operand as Lua 5.1 does.
		{"FUNCTION", "LOAD", lib("concaterr", "local up\n"+
			"redis.register_function('cat_field', function(k, a) return 'x' .. a[2] end)\n"+
			"redis.register_function('cat_local', function(k, a) local v = a[2] return v .. 'x' end)\n"+
			"redis.register_function('cat_upvalue', function() return 'x' ..\n up end)\n"+
			"redis.register_function('cat_global', function() return 'x' .. redis end)")},
		{"FCALL", "cat_field", "0", "a"},
		{"FCALL", "cat_local", "0", "a"},
		{"FCALL", "cat_upvalue", "0"},
		{"FCALL", "cat_global", "0"},
		{"FUNCTION", "DELETE", "concaterr"},
		{"FUNCTION", "LOAD", lib("concatload", "local t = {} local s = 'x' .. t.nope")},
		{"FUNCTION", "LIST", "LIBRARYNAME", "e*"},
		{"FUNCTION", "STATS"},
		// A REPLACE whose function another library has: refused, the old
		// library kept.
		{"FUNCTION", "LOAD", "REPLACE", lib("echo", "redis.register_function('set', function() end)")},
		{"FCALL", "echo", "0"},
		// Running functions: errors, the sandbox, conversions.
		{"FUNCTION", "LOAD", lib("run", "redis.register_function('boom', function() error('boom') end)\n"+
			"redis.register_function('reply', function() return redis.error_reply('MY err') end)\n"+
			"redis.register_function('raise', function() error({err='X y'}) end)\n"+
			"redis.register_function('unknown', function() return redis.call('nosuch') end)\n"+
			"redis.register_function('nested', function() return redis.call('FCALL', 'echo', 0) end)\n"+
			"redis.register_function('fnlist', function() return redis.call('FUNCTION', 'LIST') end)\n"+
			"redis.register_function('global', function() x = 1 end)\n"+
			"redis.register_function('keys', function() return KEYS end)\n"+
			"redis.register_function('status', function() return {ok='fine'} end)\n"+
			"redis.register_function('mixed', function(k, a) return {1, 'two', {3, nil, 4}, true, false, 3.99, k, a} end)\n"+
			"redis.register_function('resp3', function(k) redis.setresp(3) return redis.call('HGETALL', k[1]) end)\n"+
			"redis.register_function('maths', function() return {math.floor(2.5), string.len('abc'), cjson.encode({1}), redis.sha1hex('')} end)\n"+
			"local reg = redis.register_function\n"+
			"redis.register_function('late', function() return reg('b', function() end) end)")},
		{"FCALL", "boom", "0"},
		{"FCALL", "reply", "0"},
		{"FCALL", "raise", "0"},
		{"FCALL", "unknown", "0"},
		{"FCALL", "nested", "0"},
		{"FCALL", "fnlist", "0"},
		{"FCALL", "global", "0"},
		{"FCALL", "keys", "0"},
		{"FCALL", "status", "0"},
		{"FCALL", "mixed", "2", "k1", "k2", "a1"},
		{"HSET", "h", "f", "v"},
		{"FCALL", "resp3", "1", "h"},
		{"FCALL", "maths", "0"},
		{"FCALL", "late", "0"},
		{"EVAL", "return redis.call('FCALL', 'echo', 0)", "0"},
		{"FCALL_RO", "get", "1", "h"},
		{"FUNCTION", "LOAD", lib("ro", "redis.register_function{function_name='ro_set', callback=function(k) return redis.call('SET', k[1], 'x') end, flags={'no-writes'}}")},
		{"FCALL", "ro_set", "1", "k"},
		{"FCALL_RO", "ro_set", "1", "k"},
		// MULTI.
		{"MULTI"},
		{"FCALL", "set", "1", "m", "1"},
		{"FCALL", "get", "1", "m"},
		{"EXEC"},
		// FUNCTION LIST's and the other subcommands' errors.
		{"FUNCTION", "LIST", "LIBRARYNAME"},
		{"FUNCTION", "LIST", "WITHCODE", "WITHCODE"},
		{"FUNCTION", "LIST", "LIBRARYNAME", "a", "LIBRARYNAME", "b"},
		{"FUNCTION", "LIST", "bogus"},
		{"FUNCTION", "STATS", "x"},
		{"FUNCTION", "DUMP", "x"},
		{"FUNCTION", "KILL"},
		{"FUNCTION", "KILL", "x"},
		{"FUNCTION", "DELETE"},
		{"FUNCTION", "DELETE", "a", "b"},
		{"FUNCTION", "DELETE", "nosuch"},
		{"FUNCTION", "DELETE", "ECHO"},
		{"FUNCTION", "DELETE", "echo"},
		{"FCALL", "echo", "0"},
		{"FUNCTION", "LIST", "LIBRARYNAME", "echo"},
		{"FUNCTION", "NOSUCH"},
		{"FUNCTION", "FLUSH", "NOW"},
		{"FUNCTION", "FLUSH", "a", "b"},
		{"FUNCTION", "FLUSH", "ASYNC"},
		{"FUNCTION", "STATS"},
		{"FUNCTION", "LOAD", get},
		{"FUNCTION", "FLUSH", "sync"},
		{"FUNCTION", "LIST"},
	})
}

// funcPayload builds a FUNCTION DUMP payload of raw entries (an RDB type
// byte, then a string), as Redis checksums it.
func funcPayload(version uint16, entries ...string) string {
	var p []byte
	for _, e := range entries {
		p = append(p, e...)
	}
	p = bin.LittleEndian.AppendUint16(p, version)
	crc := ^crc64.Update(^uint64(0), crc64.MakeTable(0x95ac9329ac4bc9b5), p)
	return string(bin.LittleEndian.AppendUint64(p, crc))
}

// dumpOf is the FUNCTION DUMP payload of libraries, as rlserver makes it
// (which TestFunctionsAgainstRedis checks is Redis's).
func dumpOf(t *testing.T, codes ...string) string {
	e := script.New()
	for _, c := range codes {
		if _, err := e.LoadLibrary([]byte(c), false); err != nil {
			t.Fatal(err)
		}
	}
	_, p := e.DumpFunctions()
	return string(p)
}

// bulkOf is the string of a bulk reply as rawConn.reply renders it.
func bulkOf(reply string) string {
	_, s, _ := strings.Cut(reply, " ")
	return s
}

// rdbString is s as a verbatim RDB string (shorter than 64 bytes).
func rdbString(s string) string { return string(rune(len(s))) + s }

// TestFunctionRestoreAgainstRedis: FUNCTION RESTORE with each policy and
// its refusals, the same payloads to both servers: a library already
// there (APPEND), replaced (REPLACE), every other removed (FLUSH), a
// function another library has, two libraries of one name, a library
// that does not load, a payload of another type, the pre-GA format, a
// bad checksum or version, a string that runs past the end.
func TestFunctionRestoreAgainstRedis(t *testing.T) {
	t.Parallel()
	a := lib("a", "redis.register_function('fa', function() return 'a' end)")
	a2 := lib("a", "redis.register_function('fa2', function() return 'a2' end)")
	b := lib("b", "redis.register_function('fb', function() return 'b' end)")
	clash := lib("c", "redis.register_function('FB', function() return 'c' end)")
	pa, pa2, pab, pc := dumpOf(t, a), dumpOf(t, a2), dumpOf(t, a, b), dumpOf(t, clash)
	broken := []byte(pa)
	broken[5] ^= 0xff
	short := lib("s", "redis.register_function('s', function() end)")
	diffRequests(t, [][]string{
		{"FUNCTION", "FLUSH"},
		{"FUNCTION", "RESTORE", pa},
		{"FCALL", "fa", "0"},
		{"FUNCTION", "RESTORE", pa},
		{"FUNCTION", "RESTORE", pa, "APPEND"},
		{"FUNCTION", "RESTORE", pa2, "replace"},
		{"FCALL", "fa", "0"},
		{"FCALL", "fa2", "0"},
		{"FUNCTION", "RESTORE", pab, "REPLACE"},
		{"FUNCTION", "RESTORE", pc},
		{"FCALL", "fb", "0"},
		{"FUNCTION", "RESTORE", pc, "FLUSH"},
		{"FCALL", "fa", "0"},
		{"FCALL", "fb", "0"},
		{"FCALL", "FB", "0"},
		{"FUNCTION", "RESTORE", pa, "bogus"},
		{"FUNCTION", "RESTORE", pa, "APPEND", "x"},
		{"FUNCTION", "RESTORE", string(broken)},
		{"FUNCTION", "RESTORE", "short"},
		{"FUNCTION", "RESTORE", funcPayload(10, "\xf5"+rdbString(short), "\xf5"+rdbString(short))},
		{"FUNCTION", "RESTORE", funcPayload(10, "\xf5"+rdbString("return 1"))},
		{"FUNCTION", "RESTORE", funcPayload(10, "\xf5"+rdbString(lib("z", "return 1")))},
		{"FUNCTION", "RESTORE", funcPayload(10, "\x00"+rdbString(short))},
		{"FUNCTION", "RESTORE", funcPayload(10, "\xf6"+rdbString(short))},
		{"FUNCTION", "RESTORE", funcPayload(10, "\xf6\x03pre\x03LUA\x01\x02dd"+rdbString("\nredis.register_function('pre', function() return 1 end)"))},
		{"FCALL", "pre", "0"},
		{"FUNCTION", "LIST", "LIBRARYNAME", "pre", "WITHCODE"},
		{"FUNCTION", "RESTORE", funcPayload(10, "\xf5\x3fshort")},
		{"FUNCTION", "RESTORE", funcPayload(9, "\xf5"+rdbString(short))},
		{"FCALL", "s", "0"},
		{"FUNCTION", "RESTORE", funcPayload(10)},
		{"FUNCTION", "RESTORE", funcPayload(10), "FLUSH"},
		{"FUNCTION", "STATS"},
	})
}

// TestFunctionDumpFromRedis: a payload redis-server dumps of several
// libraries restores on rlserver (and rlserver's on redis-server): the
// same libraries, each function answering the same.
func TestFunctionDumpFromRedis(t *testing.T) {
	t.Parallel()
	ours := dial(t, start(t))
	theirs := dial(t, &server{Addr: redistest.Start(t)})
	var codes []string
	for _, name := range []string{"alpha", "beta", "gamma"} {
		codes = append(codes, lib(name, "-- "+strings.Repeat(name+" ", 30)+"\n"+
			"redis.register_function('"+name+"', function(keys, args) return {'"+name+"', keys[1], args[1]} end)"))
	}
	for _, c := range codes {
		theirs.cmd("FUNCTION", "LOAD", c).reply()
	}
	payload := bulkOf(theirs.cmd("FUNCTION", "DUMP").reply())
	if got := ours.cmd("FUNCTION", "RESTORE", payload).reply(); got != "+OK" {
		t.Fatalf("RESTORE of redis-server's payload: %q", got)
	}
	for _, name := range []string{"alpha", "beta", "gamma"} {
		if got, want := ours.cmd("FCALL", name, "1", "k", "a").reply(), theirs.cmd("FCALL", name, "1", "k", "a").reply(); got != want {
			t.Errorf("FCALL %s: %q, want %q", name, got, want)
		}
		if got, want := ours.cmd("FUNCTION", "LIST", "LIBRARYNAME", name, "WITHCODE").reply(), theirs.cmd("FUNCTION", "LIST", "LIBRARYNAME", name, "WITHCODE").reply(); got != want {
			t.Errorf("FUNCTION LIST %s: %q, want %q", name, got, want)
		}
	}
	// And back: rlserver's payload (libraries in name order) on redis-server.
	ours.cmd("FUNCTION", "LOAD", lib("delta", "redis.register_function('delta', function() return 'd' end)")).reply()
	payload = bulkOf(ours.cmd("FUNCTION", "DUMP").reply())
	if got := theirs.cmd("FUNCTION", "RESTORE", payload, "FLUSH").reply(); got != "+OK" {
		t.Fatalf("RESTORE of rlserver's payload on redis-server: %q", got)
	}
	if got := theirs.cmd("FCALL", "delta", "0").reply(); got != "$1 d" {
		t.Fatalf("FCALL delta on redis-server: %q", got)
	}
}

var durationMs = regexp.MustCompile(`duration_ms :\d+`)

// TestBusyFunctionAgainstRedis: beside a function that loops, once busy,
// both servers answer other
// clients the BUSY that names FUNCTION KILL, FUNCTION STATS describes it
// (its duration aside), SCRIPT KILL refuses to kill it, FUNCTION KILL
// does, and the function answers that it was killed. Then a function that
// wrote is unkillable, and EVAL is answered BUSY. (rlserver serves a
// connection per goroutine here: a script runs on its connection's event
// loop.)
func TestBusyFunctionAgainstRedis(t *testing.T) {
	t.Parallel()
	ours := start(t, "--io", "goroutines")
	theirs := &server{Addr: redistest.Start(t)}
	var got [2][]string
	for i, srv := range []*server{ours, theirs} {
		a, b := dial(t, srv), dial(t, srv)
		b.cmd("FUNCTION", "LOAD", lib("busy", "redis.register_function('spin', function() while true do end end)\n"+
			"redis.register_function('spinw', function(k) redis.call('SET', k[1], 1) while true do end end)"))
		if r := b.reply(); r != "$4 busy" {
			t.Fatalf("%s: FUNCTION LOAD: %q", srv.Addr, r)
		}
		// rlserver stops a script that has not written at the threshold
		// itself, Redis waits for a KILL: 0 makes rlserver busy at once
		// and never stop it, where Redis's 0 is never busy.
		threshold := "10"
		if srv == ours {
			threshold = "0"
		}
		if r := b.cmd("CONFIG", "SET", "busy-reply-threshold", threshold).reply(); r != "+OK" {
			t.Fatalf("%s: CONFIG SET busy-reply-threshold: %q", srv.Addr, r)
		}
		got[i] = append(got[i], b.cmd("FUNCTION", "STATS").reply())
		a.cmd("FCALL", "spin", "0")
		deadline := time.Now().Add(10 * time.Second)
		busy := ""
		for busy == "" && time.Now().Before(deadline) {
			if r := b.cmd("PING").reply(); strings.HasPrefix(r, "-BUSY") {
				busy = r
			}
		}
		stats := durationMs.ReplaceAllString(b.cmd("FUNCTION", "STATS").reply(), "duration_ms :N")
		got[i] = append(got[i], busy, stats, b.cmd("SCRIPT", "KILL").reply(), b.cmd("FUNCTION", "KILL").reply(), a.reply(), b.cmd("PING").reply())
		// A function that wrote is unkillable. (rlserver is busy at once:
		// a KILL that comes before the write stops it, and it runs again.)
		unkillable := ""
		deadline = time.Now().Add(10 * time.Second)
		for unkillable == "" && time.Now().Before(deadline) {
			a.cmd("FCALL", "spinw", "1", "w")
			for time.Now().Before(deadline) {
				r := b.cmd("FUNCTION", "KILL").reply()
				if strings.HasPrefix(r, "-UNKILLABLE") {
					unkillable = r
					break
				}
				if r == "+OK" {
					a.reply()
					break
				}
			}
		}
		got[i] = append(got[i], unkillable, b.cmd("GET", "w").reply(), b.cmd("EVAL", "return 1", "0").reply())
	}
	if !strings.HasPrefix(got[1][1], "-BUSY") {
		t.Fatalf("redis-server never answered BUSY: %q", got[1])
	}
	for j := range got[0] {
		if got[0][j] != got[1][j] {
			t.Errorf("reply %d: got %q, want %q", j, got[0][j], got[1][j])
		}
	}
}

// TestFunctionsOOMAgainstRedis: past maxmemory under noeviction, both
// servers refuse FCALL of a function that may write (its flags make it a
// denyoom command) and FUNCTION LOAD, and run one flagged allow-oom (whose
// writes then pass the bound) or no-writes.
func TestFunctionsOOMAgainstRedis(t *testing.T) {
	t.Parallel()
	diffRequests(t, [][]string{
		{"FUNCTION", "FLUSH"},
		{"FUNCTION", "LOAD", lib("oom", "redis.register_function('w', function(k) return redis.call('SET', k[1], 'w') end)\n"+
			"redis.register_function{function_name='oomw', callback=function(k) return redis.call('SET', k[1], 'oom') end, flags={'allow-oom'}}\n"+
			"redis.register_function{function_name='r', callback=function(k) return redis.call('GET', k[1]) end, flags={'no-writes'}}")},
		{"SET", "fill", strings.Repeat("v", 100000)},
		{"CONFIG", "SET", "maxmemory-policy", "noeviction"},
		{"CONFIG", "SET", "maxmemory", "1"},
		{"FCALL", "w", "1", "k"},
		{"FCALL", "oomw", "1", "k"},
		{"FCALL", "r", "1", "k"},
		{"FCALL_RO", "r", "1", "k"},
		{"FCALL", "nosuch", "0"},
		// EVAL scripts with a shebang line are what their flags say;
		// without one, their writes are checked one by one.
		{"EVAL", "#!lua\nreturn 1", "0"},
		{"EVAL", "#!lua flags=allow-oom\nreturn redis.call('SET', KEYS[1], 'e')", "1", "k"},
		{"EVAL", "#!lua flags=no-writes\nreturn redis.call('GET', KEYS[1])", "1", "k"},
		{"EVAL", "return redis.call('GET', KEYS[1])", "1", "k"},
		{"EVAL", "return redis.call('SET', KEYS[1], 'c')", "1", "k"},
		{"FUNCTION", "LOAD", lib("more", "redis.register_function('more', function() end)")},
		{"FUNCTION", "DELETE", "oom"},
		{"CONFIG", "SET", "maxmemory", "0"},
		{"FUNCTION", "LIST"},
	})
}

// TestFunctionsACL: FCALL is checked as any command: a user without it
// is refused, its keys must match the user's patterns, and the commands a
// function runs are checked against the user too.
func TestFunctionsACL(t *testing.T) {
	t.Parallel()
	s := start(t)
	admin := s.client(t, 2)
	do(t, admin, "FUNCTION", "LOAD", lib("acl", "redis.register_function('setk', function(k, a) return redis.call('SET', k[1], a[1]) end)\n"+
		"redis.register_function('flush', function() return redis.call('FLUSHALL') end)")).equal("acl")
	do(t, admin, "ACL", "SETUSER", "app", "on", ">pw", "~app:*", "+fcall", "+set", "+get").equal("OK")
	do(t, admin, "ACL", "SETUSER", "nofcall", "on", ">pw", "~*", "+set").equal("OK")
	app := redis.NewClient(&redis.Options{Addr: s.Addr, Username: "app", Password: "pw", Protocol: 2})
	nofcall := redis.NewClient(&redis.Options{Addr: s.Addr, Username: "nofcall", Password: "pw", Protocol: 2})
	t.Cleanup(func() { app.Close(); nofcall.Close() })
	do(t, app, "FCALL", "setk", "1", "app:k", "v").equal("OK")
	do(t, app, "FCALL", "setk", "1", "other:k", "v").errIs("NOPERM No permissions to access a key")
	if err := do(t, app, "FCALL", "flush", "0").err; err == nil || !strings.Contains(err.Error(), "flushall") {
		t.Fatalf("FLUSHALL from a function of a user without it: %v", err)
	}
	do(t, app, "FUNCTION", "LIST").errIs("NOPERM User app has no permissions to run the 'function|list' command")
	do(t, nofcall, "FCALL", "setk", "1", "k", "v").errIs("NOPERM User nofcall has no permissions to run the 'fcall' command")
	do(t, admin, "GET", "app:k").equal("v")
	do(t, admin, "EXISTS", "other:k").equal(0)
}

// TestFunctionsPersist: the function libraries survive a restart: after
// SAVE and kill -9, and after a clean shutdown (SIGTERM, which rewrites
// the store); so do their deletion and FUNCTION FLUSH. Keys beside them
// are restored as ever, a key named "functions" (their record's name)
// among them.
func TestFunctionsPersist(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := startIn(t, dir)
	c := dial(t, s)
	alpha := lib("alpha", "redis.register_function{function_name='alpha', callback=function(k, a) return 'alpha ' .. a[1] end, flags={'no-writes'}, description='first'}")
	beta := lib("beta", "-- "+strings.Repeat("compressible ", 20)+"\nredis.register_function('beta', function(k) return redis.call('INCR', k[1]) end)")
	for _, req := range [][]string{{"FUNCTION", "LOAD", alpha}, {"FUNCTION", "LOAD", beta}, {"SET", "functions", "a key"}, {"FCALL", "beta", "1", "n"}} {
		if r := c.cmd(req...).reply(); strings.HasPrefix(r, "-") {
			t.Fatalf("%q: %s", req, r)
		}
	}
	list, dump := c.cmd("FUNCTION", "LIST", "WITHCODE").reply(), c.cmd("FUNCTION", "DUMP").reply()
	check := func(want map[string]string) {
		t.Helper()
		for req, w := range want {
			if got := c.cmd(strings.Fields(req)...).reply(); got != w {
				t.Fatalf("after the restart, %s: %q, want %q", req, got, w)
			}
		}
	}
	c.cmd("SAVE").reply()
	s.kill()
	s = startIn(t, dir)
	c = dial(t, s)
	if !strings.Contains(s.logs.String(), ", 2 keys restored in ") {
		t.Fatalf("the ready line does not say 2 keys restored:\n%s", s.logs)
	}
	check(map[string]string{
		"FUNCTION LIST WITHCODE": list, "FUNCTION DUMP": dump, "FCALL alpha 0 x": "$7 alpha x",
		"FCALL beta 1 n": ":2", "GET functions": "$5 a key",
	})
	c.cmd("FUNCTION", "DELETE", "alpha").reply()
	list = c.cmd("FUNCTION", "LIST", "WITHCODE").reply()
	s.cmd.Process.Signal(syscall.SIGTERM)
	if code := s.wait(t); code != 0 {
		t.Fatalf("exit code %d after SIGTERM", code)
	}
	s = startIn(t, dir)
	c = dial(t, s)
	check(map[string]string{"FUNCTION LIST WITHCODE": list, "FCALL alpha 0 x": "-ERR Function not found", "FCALL beta 1 n": ":3"})
	c.cmd("FUNCTION", "FLUSH").reply()
	c.cmd("SAVE").reply()
	s.kill()
	s = startIn(t, dir)
	c = dial(t, s)
	check(map[string]string{"FUNCTION LIST": "*0", "GET functions": "$5 a key", "GET n": "$1 3"})
}

// TestFunctionsReplicate: in cluster mode a primary's function libraries
// reach its replica (WAIT counts it once they have), as do their deletion
// and FUNCTION FLUSH; a replica restarted from its directory, and one
// wiped, have them again once synchronised. On the replica the libraries
// cannot change (READONLY); a READONLY connection runs a no-writes
// function there, a function that may write is sent to the primary
// (MOVED), or refused without keys; a write inside EVAL is refused
// (READONLY). FCALL's keys must share a slot
// (CROSSSLOT) and be the node's (MOVED); no-cluster functions are refused.
func TestFunctionsReplicate(t *testing.T) {
	t.Parallel()
	c := startRLCluster(t, "--save-interval", "100ms")
	p0, r3 := dial(t, c.Nodes[0]), dial(t, c.Nodes[3])
	want := func(conn *rawConn, req []string, reply string) {
		t.Helper()
		if got := conn.cmd(req...).reply(); got != reply {
			t.Fatalf("%q: %q, want %q", req, got, reply)
		}
	}
	code := lib("rl", "redis.register_function('incr', function(k) return redis.call('INCR', k[1]) end)\n"+
		"redis.register_function{function_name='get', callback=function(k) return redis.call('GET', k[1]) end, flags={'no-writes'}}\n"+
		"redis.register_function{function_name='nc', callback=function() return 1 end, flags={'no-writes', 'no-cluster'}}")
	want(p0, []string{"FUNCTION", "LOAD", code}, "$2 rl")
	want(p0, []string{"FCALL", "incr", "1", "{user1000}.n"}, ":1")
	want(p0, []string{"WAIT", "1", "10000"}, ":1")
	list := p0.cmd("FUNCTION", "LIST", "WITHCODE").reply()
	want(r3, []string{"FUNCTION", "LIST", "WITHCODE"}, list)
	moved := "-MOVED 3443 127.0.0.1:" + strconv.Itoa(c.Ports[0])
	for _, req := range [][]string{
		{"FUNCTION", "LOAD", "REPLACE", code}, {"FUNCTION", "DELETE", "rl"}, {"FUNCTION", "FLUSH"},
		{"FUNCTION", "RESTORE", bulkOf(p0.cmd("FUNCTION", "DUMP").reply()), "FLUSH"},
	} {
		want(r3, req, "-READONLY You can't write against a read only replica.")
	}
	want(r3, []string{"FCALL", "get", "1", "{user1000}.n"}, moved)
	want(r3, []string{"READONLY"}, "+OK")
	want(r3, []string{"FCALL", "get", "1", "{user1000}.n"}, "$1 1")
	want(r3, []string{"FCALL_RO", "get", "1", "{user1000}.n"}, "$1 1")
	want(r3, []string{"FCALL", "incr", "1", "{user1000}.n"}, moved)
	want(r3, []string{"FCALL", "incr", "0"}, "-READONLY You can't write against a read only replica.")
	// An EVAL may run on the replica, but a write inside it is refused as
	// Redis refuses it: the replica keeps its primary's value.
	if got := r3.cmd("EVAL", "return redis.call('INCR', KEYS[1])", "1", "{user1000}.n").reply(); !strings.HasPrefix(got, "-READONLY You can't write against a read only replica. script: ") {
		t.Fatalf("a write in EVAL on a replica: %q, want READONLY", got)
	}
	want(r3, []string{"EVAL", "return redis.call('GET', KEYS[1])", "1", "{user1000}.n"}, "$1 1")
	// With a shebang line an EVAL is what its flags say, as a function.
	want(r3, []string{"EVAL", "#!lua\nreturn redis.call('GET', KEYS[1])", "1", "{user1000}.n"}, moved)
	want(r3, []string{"EVAL", "#!lua flags=no-writes\nreturn redis.call('GET', KEYS[1])", "1", "{user1000}.n"}, "$1 1")
	want(p0, []string{"EVAL", "#!lua flags=no-cluster\nreturn 1", "0"}, "-ERR Can not run script on cluster, 'no-cluster' flag is set.")
	want(p0, []string{"FCALL", "incr", "2", "{user1000}.n", "other"}, "-CROSSSLOT Keys in request don't hash to the same slot")
	if got := p0.cmd("FCALL", "incr", "1", "other").reply(); !strings.HasPrefix(got, "-MOVED ") {
		t.Fatalf("FCALL of a key of another shard: %q, want MOVED", got)
	}
	want(p0, []string{"FCALL", "nc", "0"}, "-ERR Can not run script on cluster, 'no-cluster' flag is set.")

	// A restarted replica resumes, a wiped one copies all: both get the
	// libraries.
	c.Nodes[3].kill()
	want(p0, []string{"FUNCTION", "LOAD", lib("more", "redis.register_function('more', function() return 'more' end)")}, "$4 more")
	c.Nodes[3] = c.startNode(t, 3)
	want(p0, []string{"WAIT", "1", "10000"}, ":1")
	list = p0.cmd("FUNCTION", "LIST", "WITHCODE", "LIBRARYNAME", "more").reply()
	r3 = dial(t, c.Nodes[3])
	want(r3, []string{"FUNCTION", "LIST", "WITHCODE", "LIBRARYNAME", "more"}, list)
	c.Nodes[3].kill()
	if err := os.RemoveAll(c.Dirs[3]); err != nil {
		t.Fatal(err)
	}
	c.Nodes[3] = c.startNode(t, 3)
	want(p0, []string{"WAIT", "1", "10000"}, ":1")
	r3 = dial(t, c.Nodes[3])
	want(r3, []string{"FUNCTION", "LIST", "WITHCODE", "LIBRARYNAME", "more"}, list)
	want(r3, []string{"FUNCTION", "STATS"}, p0.cmd("FUNCTION", "STATS").reply())

	// Libraries of more than the replica's proto-max-bulk-len in all go
	// in pieces.
	r := rand.New(rand.NewPCG(43, 1))
	for i := range 5 {
		comment := make([]byte, 300<<10)
		for j := range comment {
			comment[j] = byte('!' + r.IntN(90))
		}
		name := fmt.Sprintf("big%d", i)
		want(p0, []string{"FUNCTION", "LOAD", lib(name, "--[==["+string(comment)+"]==]\nredis.register_function('"+name+"', function() return 1 end)")}, "$4 "+name)
	}
	want(p0, []string{"WAIT", "1", "10000"}, ":1")
	dump := p0.cmd("FUNCTION", "DUMP").reply()
	if len(dump) < 1<<20 {
		t.Fatalf("the big libraries dump to %d bytes, want more than 1 MB", len(dump))
	}
	if got := r3.cmd("FUNCTION", "DUMP").reply(); got != dump {
		t.Fatalf("the replica's payload (%d bytes) differs from the primary's (%d bytes)", len(got), len(dump))
	}

	want(p0, []string{"FUNCTION", "DELETE", "rl"}, "+OK")
	want(p0, []string{"WAIT", "1", "10000"}, ":1")
	want(r3, []string{"FUNCTION", "LIST", "LIBRARYNAME", "rl"}, "*0")
	want(p0, []string{"FUNCTION", "FLUSH"}, "+OK")
	want(p0, []string{"WAIT", "1", "10000"}, ":1")
	want(r3, []string{"FUNCTION", "LIST"}, "*0")
}

// TestFunctionsConcurrent: clients calling functions while others
// replace, delete, list, dump and restore the libraries: each call answers
// a version of its function or that it is not found, nothing else, and
// the race detector sees nothing.
func TestFunctionsConcurrent(t *testing.T) {
	t.Parallel()
	s := start(t)
	version := func(v int) string {
		return lib("conc", fmt.Sprintf("redis.register_function('conc', function(k) redis.call('INCR', k[1]) return %d end)", v))
	}
	admin := s.client(t, 2)
	do(t, admin, "FUNCTION", "LOAD", version(0)).equal("conc")
	stop := make(chan struct{})
	errs := make(chan error, 16)
	for i := range 6 {
		c := s.client(t, 2+i%2)
		go func() {
			for {
				select {
				case <-stop:
					errs <- nil
					return
				default:
				}
				v, err := c.Do(ctx, "FCALL", "conc", "1", fmt.Sprint("k", i)).Result()
				if err != nil && err.Error() != "ERR Function not found" {
					errs <- fmt.Errorf("FCALL: %v", err)
					return
				}
				if err == nil {
					if n, ok := v.(int64); !ok || n < 0 || n > 50 {
						errs <- fmt.Errorf("FCALL answered %v", v)
						return
					}
				}
			}
		}()
	}
	for v := 1; v <= 50; v++ {
		do(t, admin, "FUNCTION", "LOAD", "REPLACE", version(v)).equal("conc")
		do(t, admin, "FUNCTION", "LIST")
		do(t, admin, "FUNCTION", "STATS")
		dump := do(t, admin, "FUNCTION", "DUMP").val
		if v%10 == 0 {
			do(t, admin, "FUNCTION", "DELETE", "conc").equal("OK")
			do(t, admin, "FUNCTION", "RESTORE", dump).equal("OK")
		}
	}
	close(stop)
	for range 6 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	do(t, admin, "FCALL", "conc", "1", "k").equal(50)
}

// TestScriptCountsAgainstRedis: INFO memory has Redis 7.0's scripting
// fields, in its order, and counts the scripts loaded (EVAL's and SCRIPT
// LOAD's), the libraries and the functions as redis-server does, through
// loads, a library replaced and the flushes; the scripts' and the
// functions' bytes grow and fall when redis-server's do, and the totals
// add up.
func TestScriptCountsAgainstRedis(t *testing.T) {
	t.Parallel()
	ours, theirs := start(t).client(t, 2), redis.NewClient(&redis.Options{Addr: redistest.Start(t), Protocol: 2})
	t.Cleanup(func() { theirs.Close() })
	// fields returns INFO memory's fields between total_system_memory_human
	// and maxmemory, where Redis puts scripting's, in order.
	fields := func(c *redis.Client) (names []string, vals map[string]string) {
		t.Helper()
		info, err := c.Info(context.Background(), "memory").Result()
		if err != nil {
			t.Fatal(err)
		}
		vals, in := map[string]string{}, false
		for _, line := range strings.Split(info, "\r\n") {
			k, v, _ := strings.Cut(line, ":")
			switch {
			case k == "total_system_memory_human":
				in = true
			case k == "maxmemory":
				in = false
			case in:
				names = append(names, k)
				vals[k] = v
			}
		}
		return names, vals
	}
	num := func(vals map[string]string, k string) int64 {
		n, err := strconv.ParseInt(vals[k], 10, 64)
		if err != nil {
			t.Fatalf("%s: %q", k, vals[k])
		}
		return n
	}
	_, before := fields(ours)
	_, beforeTheirs := fields(theirs)
	for _, req := range [][]any{
		{"PING"},
		{"SCRIPT", "LOAD", "return 1"},
		{"EVAL", "return 2", "0"},
		{"EVAL", "return 2", "0"},
		{"FUNCTION", "LOAD", lib("a", "redis.register_function('f1', function() return 1 end)\nredis.register_function('f2', function() return 2 end)")},
		{"FUNCTION", "LOAD", "REPLACE", lib("a", "redis.register_function('f1', function() return 1 end)")},
		{"FUNCTION", "LOAD", lib("b", "redis.register_function('f3', function() return 3 end)")},
		{"SCRIPT", "FLUSH"},
		{"FUNCTION", "FLUSH"},
	} {
		ctx := context.Background()
		if err := ours.Do(ctx, req...).Err(); err != nil {
			t.Fatalf("%v on rlserver: %v", req, err)
		}
		if err := theirs.Do(ctx, req...).Err(); err != nil {
			t.Fatalf("%v on redis-server: %v", req, err)
		}
		names, vals := fields(ours)
		wantNames, want := fields(theirs)
		if !slices.Equal(names, wantNames) {
			t.Fatalf("after %v: INFO memory's scripting fields %q, redis-server's %q", req, names, wantNames)
		}
		for _, k := range []string{"number_of_cached_scripts", "number_of_functions", "number_of_libraries"} {
			if vals[k] != want[k] {
				t.Errorf("after %v: %s:%s, redis-server %s", req, k, vals[k], want[k])
			}
		}
		for _, k := range []string{"used_memory_scripts_eval", "used_memory_functions"} {
			got, wantd := cmp.Compare(num(vals, k), num(before, k)), cmp.Compare(num(want, k), num(beforeTheirs, k))
			if got != wantd {
				t.Errorf("after %v: %s went %d -> %d, redis-server's %d -> %d", req, k, num(before, k), num(vals, k), num(beforeTheirs, k), num(want, k))
			}
		}
		vm, fn, ev := num(vals, "used_memory_vm_eval"), num(vals, "used_memory_functions"), num(vals, "used_memory_scripts_eval")
		if num(vals, "used_memory_lua") != vm || num(vals, "used_memory_vm_total") != vm+num(vals, "used_memory_vm_functions") ||
			num(vals, "used_memory_scripts") != fn+ev {
			t.Errorf("after %v: the totals do not add up: %v", req, vals)
		}
		if ev == 0 && num(vals, "number_of_cached_scripts") > 0 || fn == 0 && num(vals, "number_of_libraries") > 0 {
			t.Errorf("after %v: scripts or libraries loaded count no bytes: %v", req, vals)
		}
		before, beforeTheirs = vals, want
	}
}
