package script

import (
	"bufio"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/rlserver/rlserver/internal/redistest"
	"github.com/rlserver/rlserver/resp"
)

// rawConn is a RESP connection that returns replies as their bytes.
type rawConn struct {
	t   *testing.T
	nc  net.Conn
	rd  *bufio.Reader
	buf []byte
	L   *lua.LState // for toLua, which finds where a reply ends
}

func (c *rawConn) do(args ...[]byte) []byte {
	c.t.Helper()
	var b []byte
	b = resp.AppendArray(b, len(args))
	for _, a := range args {
		b = resp.AppendBulk(b, a)
	}
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatal(err)
	}
	c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		if _, rest, err := toLua(c.L, c.buf); err == nil {
			out := c.buf[:len(c.buf)-len(rest)]
			c.buf = append([]byte(nil), rest...)
			return out
		}
		chunk := make([]byte, 4096)
		n, err := c.rd.Read(chunk)
		if err != nil {
			c.t.Fatal(err)
		}
		c.buf = append(c.buf, chunk[:n]...)
	}
}

func (c *rawConn) cmd(args ...string) []byte {
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	return c.do(b...)
}

// dialer returns a maker of connections to a redis-server started for
// the test.
func dialer(t *testing.T) func(proto int) *rawConn {
	addr := redistest.Start(t)
	return func(proto int) *rawConn {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nc.Close() })
		c := &rawConn{t: t, nc: nc, rd: bufio.NewReader(nc), L: lua.NewState()}
		if proto == 3 {
			c.cmd("HELLO", "3")
		}
		return c
	}
}

// TestAgainstRedis: each script, with its keys and arguments, answers
// byte for byte what redis-server's EVAL answers, in RESP2 and RESP3,
// when its redis.call runs on that same server: the conversions both
// ways, the sandbox's errors, math.random, redis.* helpers.
func TestAgainstRedis(t *testing.T) {
	dial := dialer(t)
	conns := map[int]*rawConn{2: dial(2), 3: dial(3)}
	calls := map[int]*rawConn{2: dial(2), 3: dial(3)}
	cases := []struct {
		setup  [][]string
		script string
		keys   []string
		argv   []string
	}{
		{nil, "return 1", nil, nil},
		{nil, "return 3.99", nil, nil},
		{nil, "return -3.99", nil, nil},
		{nil, "return 'hello'", nil, nil},
		{nil, "return true", nil, nil},
		{nil, "return false", nil, nil},
		{nil, "return nil", nil, nil},
		{nil, "return {1, 2, 'three', {4, 'five'}}", nil, nil},
		{nil, "return {1, 2, nil, 4}", nil, nil},
		{nil, "return {ok='fine'}", nil, nil},
		{nil, "return {err='My Error'}", nil, nil},
		{nil, "return redis.error_reply('E2 custom')", nil, nil},
		{nil, "return redis.status_reply('PONG')", nil, nil},
		{nil, "return redis.sha1hex('')", nil, nil},
		{nil, "return {KEYS[1], KEYS[2], ARGV[1], #ARGV}", []string{"a", "b"}, []string{"x", "y", "z"}},
		{nil, "return redis.call('SET', KEYS[1], ARGV[1])", []string{"k"}, []string{"v"}},
		{[][]string{{"SET", "k", "v"}}, "return redis.call('GET', KEYS[1])", []string{"k"}, nil},
		{nil, "return redis.call('GET', 'missing')", nil, nil},
		{nil, "return {1.5 .. '', (0.1 + 0.2) .. '', 2^53 .. '', 'a' .. 1 .. 2.25 .. -0.5, 1e100 .. 'x', 10/3 .. ''}", nil, nil},
		{nil, "local n = 1700000000123456 return 'k:' .. n .. ':' .. n / 1000", nil, nil},
		{nil, "return 'a' .. nil", nil, nil},
		{nil, "return {} .. 'a'", nil, nil},
		{nil, "local t = setmetatable({}, {__concat = function(a, b) return 'm' end}) return {t .. 'x', 'x' .. t}", nil, nil},
		{nil, "local s = 'x' for i = 1, 3 do s = s .. i / 4 end return s", nil, nil},
		// Concatenation errors name the operand as Lua 5.1 does: the
		// first unless it is a string or a number.
		{nil, "return 'a' .. KEYS[1]", nil, nil},
		{nil, "local x; return 'a' .. x", nil, nil},
		{nil, "local x; return x .. 'a'", nil, nil},
		{nil, "local x, y return x .. y", nil, nil},
		{nil, "local x = 1 local y return x .. y", nil, nil},
		{nil, "local x return 1 .. x", nil, nil},
		{nil, "local x return {} .. x", nil, nil},
		{nil, "return KEYS .. 'a'", nil, nil},
		{nil, "return 'a' .. _G", nil, nil},
		{nil, "return 'a' .. tostring", nil, nil},
		{nil, "return redis .. nil", nil, nil},
		{nil, "return nil .. redis", nil, nil},
		{nil, "local t = {} return 'a' .. t.foo", nil, nil},
		{nil, "local t = {} return 'a' .. t['foo']", nil, nil},
		{nil, "local t = {} local k = 'foo' return 'a' .. t[k]", nil, nil},
		{nil, "local t = {{}} return 'a' .. t[1].c", nil, nil},
		{nil, "local t = {} return 'x' .. t.b .. 'y'", nil, nil},
		{nil, "return 'a' .. redis.call", nil, nil},
		{nil, "return 'a' .. math.pi .. math.huge .. math.nothing", nil, nil},
		{nil, "return 'a' .. ARGV[1]", nil, nil},
		{nil, "local x; local function f() return 'a' .. x end return f()", nil, nil},
		{nil, "local x; local function f() return (function() return 'a' .. x end)() end return f()", nil, nil},
		{nil, "local x; do local x = 'in' end return 'a' .. x", nil, nil},
		{nil, "local x = 'out' do local x; return 'a' .. x end", nil, nil},
		{nil, "for i = 1, 2 do local v end local x return 'a' .. x", nil, nil},
		{nil, "local n = 0 repeat local r; n = n + 1 if n > 1 then return 'a' .. r end until false", nil, nil},
		{nil, "local t = {} function t:m() return 'a' .. self end return t:m()", nil, nil},
		{nil, "local f = function(...) return 'a' .. arg end return f()", nil, nil},
		{nil, "local function f(p) return 'a' .. p end return f()", nil, nil},
		{nil, "local x return 'a' .. (x)", nil, nil},
		{nil, "local x, y return 'a' .. (x or y)", nil, nil},
		{nil, "local x return 'a' .. x .. 'b'", nil, nil},
		{nil, "return 'a' .. #KEYS .. nil", nil, nil},
		{nil, "return 'a' .. {}", nil, nil},
		{nil, "return 'a' .. true", nil, nil},
		{nil, "return 'a' .. redis.call('GET', 'nokey')", nil, nil},
		{nil, "local t = {} return 'a' .. t['50%\\0x']", nil, nil},
		{nil, "local t = {} return t .. t", nil, nil},
		{nil, "local function f() return 'b', 'more' end return nil .. f()", nil, nil},
		{nil, "local function f(...) return {} .. ... end return f('b', 'more')", nil, nil},
		{nil, "local function f(...) return 'a' .. ... end return f(nil, 'more')", nil, nil},
		{nil, "local function f(...) return ... .. 'a' end return f(1, 'more')", nil, nil},
		{nil, "local ok, e = pcall(function() local v return 'a' .. v end) return e", nil, nil},
		{nil, "local x\n\nreturn 'a' ..\n x", nil, nil},
		{nil, "local x\nreturn 'a' .. x ..\n 'b'", nil, nil},
		{nil, "local x\nreturn ('a' .. x) ..\n 'b'", nil, nil},
		{nil, "local t = {}\nreturn 'a' .. t\n.foo", nil, nil},
		{nil, "local x\nreturn 'a' .. tostring(\n1) .. x", nil, nil},
		{nil, "local x\nreturn 'a' .. x .. tostring(\n1)", nil, nil},
		{nil, "local x\nreturn x .. 1 +\n1", nil, nil},
		{nil, "local x\nreturn 'a' .. x ..\n{\n1}", nil, nil},
		{nil, "return type(redis.call('GET', 'missing'))", nil, nil},
		{[][]string{{"SET", "n", "10"}}, "return redis.call('INCRBY', KEYS[1], 5)", []string{"n"}, nil},
		{[][]string{{"SET", "n", "10"}}, "return redis.call('INCRBY', KEYS[1], 2.5)", []string{"n"}, nil},
		{[][]string{{"SET", "s", "abc"}}, "return redis.call('INCR', KEYS[1])", []string{"s"}, nil},
		{[][]string{{"SET", "s", "abc"}}, "local r = redis.pcall('INCR', KEYS[1]); return {type(r), r['err']}", []string{"s"}, nil},
		{[][]string{{"SET", "s", "abc"}}, "local ok, e = pcall(redis.call, 'INCR', KEYS[1]); return {tostring(ok), e['err']}", []string{"s"}, nil},
		{[][]string{{"RPUSH", "l", "a", "b", "c"}}, "return redis.call('LRANGE', KEYS[1], 0, -1)", []string{"l"}, nil},
		{nil, "return redis.call('PING')", nil, nil},
		{nil, "local r = redis.call('PING'); return r['ok']", nil, nil},
		{nil, "x = 1", nil, nil},
		{nil, "return y", nil, nil},
		{nil, "return undefined_function()", nil, nil},
		{nil, "error('boom')", nil, nil},
		{nil, "error({err='TABLEERR raised'})", nil, nil},
		{nil, "return math.random(0)", nil, nil},
		{nil, "return redis.log(99, 'x')", nil, nil},
		{nil, "local ok, e = pcall(error, {err='X y'}); return {type(e), tostring(e)}", nil, nil},
		{nil, "local ok, a, b = pcall(function() return 1, 2 end); return {tostring(ok), a, b}", nil, nil},
		{nil, "return 1 +", nil, nil},
		{nil, `return {cjson.encode({1, 2, 'a/b', {x=1.5}}), cjson.encode({}), cjson.encode('q"\\\n\1'), cjson.encode(0.1), cjson.encode(1e15), cjson.encode(cjson.null)}`, nil, nil},
		{nil, "return {cjson.encode(true), cjson.encode({[1]=1, [2]=2}), cjson.encode({[20]=1})}", nil, nil},
		{nil, "return cjson.encode({[1]=1, [12]=2})", nil, nil},
		{nil, "return cjson.encode(0/0)", nil, nil},
		{nil, "local t = cjson.decode('{\"a\":[1,2,{\"b\":null}],\"c\":\"x\"}'); return {t.a[1], t.a[2], type(t.a[3].b), t.c, tostring(t.a[3].b == cjson.null)}", nil, nil},
		{nil, "return cjson.decode('[1.5, true, false, \"s\"]')[1] * 2", nil, nil},
		{nil, "return type(cjson.decode('[1.5, true, false, \"s\"]')[2])", nil, nil},
		{nil, "return {cmsgpack.pack(1, -1, 127, 128, -33, 300, -200, 70000, -40000, 5000000000, -5000000000)}", nil, nil},
		{nil, "return {cmsgpack.pack(1.5, 0.1, true, false, nil, 'short', string.rep('x', 40), string.rep('y', 300))}", nil, nil},
		{nil, "return {cmsgpack.pack({1, 2, {3}}), cmsgpack.pack({a=1}), cmsgpack.pack({}), cmsgpack.pack({[2]=1})}", nil, nil},
		{nil, "local a, b, c = cmsgpack.unpack(cmsgpack.pack(7, 'x', {1, {k='v'}})); return {a, b, c[1], c[2].k}", nil, nil},
		{nil, "return {cmsgpack.unpack(cmsgpack.pack(-5, 2.25, 1e10, -3000000000))}", nil, nil},
		{nil, "return {cmsgpack.unpack_one(cmsgpack.pack(1, 2, 3))}", nil, nil},
		{nil, "return {cmsgpack.unpack_limit(cmsgpack.pack(1, 2, 3), 2)}", nil, nil},
		{nil, "return {cmsgpack.unpack_one(cmsgpack.pack(1, 2), 1)}", nil, nil},
		{nil, "return cmsgpack.unpack(string.char(0xcd, 1))", nil, nil},
		{nil, "return cmsgpack.unpack(string.char(0xc1))", nil, nil},
		{nil, "return {struct.pack('>I2', 258), struct.pack('<i', -2), struct.pack('Bc0I', 3, 'abc', 7), struct.pack('s', 'hi'), struct.pack('d', 1.5), struct.pack('f', 0.25), struct.pack('bhx', -1, 2)}", nil, nil},
		{nil, "return {struct.unpack('Bc0I', struct.pack('Bc0I', 3, 'abc', 7))}", nil, nil},
		{nil, "return {struct.unpack('>i2h', struct.pack('>i2h', -5, -300))}", nil, nil},
		{nil, "return {struct.unpack('s', 'ab\\0cd'), struct.unpack('c2', 'xyz', 2)}", nil, nil},
		{nil, "return {struct.size('>I2bd'), struct.size('!4bi'), struct.pack('!4bi', 1, 2)}", nil, nil},
		{nil, "return {struct.unpack('d', struct.pack('d', 2.75))}", nil, nil},
		{nil, "return struct.size('s')", nil, nil},
		{nil, "return struct.pack('i')", nil, nil},
		{nil, "return struct.unpack('I', 'ab')", nil, nil},
		{nil, "return {bit.tobit(0xffffffff), bit.tobit(1.5), bit.tobit(2.5), bit.tobit(-1), bit.bnot(0), bit.band(0xff, 0x0f, 0x3), bit.bor(1, 2, 4)}", nil, nil},
		{nil, "return {bit.bxor(5, 3), bit.lshift(1, 31), bit.rshift(-1, 28), bit.arshift(-256, 4), bit.rol(0x80000001, 1), bit.ror(1, 1), bit.bswap(0x12345678)}", nil, nil},
		{nil, "return {bit.tohex(255), bit.tohex(-1, -4), bit.tohex(0x1234, 2), bit.lshift(1, 33)}", nil, nil},
		{nil, "return redis.call()", nil, nil},
		{nil, "return redis.call('SET', 'k', {})", nil, nil},
		{nil, "return {type(os), type(io), type(require), type(loadfile), type(dofile)}", nil, nil},
		{nil, "return redis.replicate_commands()", nil, nil},
		{nil, "return tonumber('12') + 1", nil, nil},
		{nil, "return string.format('%d-%s', 5, 'x')", nil, nil},
		{nil, "return table.concat({'a','b'}, ',')", nil, nil},
		{nil, "redis.setresp(3); return redis.call('HGETALL', 'nohash')", nil, nil},
		{nil, "redis.setresp(3); return true", nil, nil},
		{nil, "redis.setresp(3); return false", nil, nil},
		{nil, "redis.setresp(4)", nil, nil},
		{[][]string{{"HSET", "h", "f", "v"}}, "redis.setresp(3); local r = redis.call('HGETALL', KEYS[1]); return r['map']['f']", []string{"h"}, nil},
		{nil, "return {double=3.5}", nil, nil},
		{nil, "return redis.call('nosuchcommand')", nil, nil},
		{nil, "return 'unterminated", nil, nil},
		{nil, "local t = {} t[1] = 'a' t[3] = 'c' return t", nil, nil},
	}
	e := New()
	for i, c := range cases {
		for _, proto := range []int{2, 3} {
			reset := func() {
				conns[proto].cmd("FLUSHALL")
				for _, s := range c.setup {
					conns[proto].cmd(s...)
				}
			}
			args := []string{"EVAL", c.script, strconv.Itoa(len(c.keys))}
			args = append(append(args, c.keys...), c.argv...)
			reset()
			want := string(conns[proto].cmd(args...))
			reset()
			call := func(dst []byte, args [][]byte, p int) []byte {
				if p != 2 && p != 3 {
					t.Fatalf("called in protocol %d", p)
				}
				return append(dst, calls[p].do(args...)...)
			}
			got := string(e.Run(nil, SHA1([]byte(c.script)), []byte(c.script), bytesOf(c.keys), bytesOf(c.argv), call, proto))
			if got != want {
				t.Errorf("case %d (RESP%d) %q:\n got %q\nwant %q", i, proto, c.script, got, want)
			}
		}
	}
}

func bytesOf(ss []string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}

// TestScriptCache: EVALSHA of an unknown sha is NOSCRIPT; Load keeps a
// script under its sha; Flush forgets it.
func TestScriptCache(t *testing.T) {
	e := New()
	none := func([]byte, [][]byte, int) []byte { t.Fatal("no command expected"); return nil }
	if got := string(e.Run(nil, "ffffffffffffffffffffffffffffffffffffffff", nil, nil, nil, none, 2)); got != "-"+ErrNoScript+"\r\n" {
		t.Fatalf("unknown sha: %q", got)
	}
	sha, err := e.Load([]byte("return ARGV[1]"))
	if err != nil || sha != SHA1([]byte("return ARGV[1]")) || !e.Exists(strings.ToUpper(sha)) {
		t.Fatalf("Load: %s %v", sha, err)
	}
	if got := string(e.Run(nil, sha, nil, nil, [][]byte{[]byte("v")}, none, 2)); got != "$1\r\nv\r\n" {
		t.Fatalf("EVALSHA: %q", got)
	}
	if _, err := e.Load([]byte("return (")); err == nil {
		t.Fatal("a script that does not compile was loaded")
	}
	e.Flush()
	if e.Exists(sha) {
		t.Fatal("Flush kept the script")
	}
}

// TestEvalScriptsBounded: EVAL keeps at most MaxEvalScripts scripts, the
// least recently used forgotten first (EVALSHA then answers NOSCRIPT);
// SCRIPT LOAD's are never forgotten, and a use keeps a script.
func TestEvalScriptsBounded(t *testing.T) {
	e := New()
	call := func(dst []byte, args [][]byte, proto int) []byte { return dst }
	loaded, _ := e.Load([]byte("return 'loaded'"))
	first := []byte("return 0")
	kept := []byte("return 1")
	e.Run(nil, SHA1(first), first, nil, nil, call, 2)
	e.Run(nil, SHA1(kept), kept, nil, nil, call, 2)
	for i := 2; i < MaxEvalScripts+1; i++ {
		if i == MaxEvalScripts-5 {
			e.Run(nil, SHA1(kept), nil, nil, nil, call, 2) // EVALSHA: a use
		}
		b := []byte(fmt.Sprintf("return %d", i))
		e.Run(nil, SHA1(b), b, nil, nil, call, 2)
	}
	if e.Exists(SHA1(first)) || !e.Exists(SHA1(kept)) || !e.Exists(loaded) {
		t.Fatalf("first %v kept %v loaded %v, want false true true", e.Exists(SHA1(first)), e.Exists(SHA1(kept)), e.Exists(loaded))
	}
	if got := string(e.Run(nil, SHA1(first), nil, nil, nil, call, 2)); !strings.HasPrefix(got, "-NOSCRIPT") {
		t.Fatalf("EVALSHA of the forgotten script: %q", got)
	}
	if e.Evicted.Load() != 1 {
		t.Fatalf("evicted %d, want 1", e.Evicted.Load())
	}
}
