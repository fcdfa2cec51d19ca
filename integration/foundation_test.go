package integration

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/rlserver/rlserver/shard"
)

func TestReadmeExample(t *testing.T) {
	t.Parallel()
	s := start(t)
	protocols(t, func(t *testing.T, proto int) {
		c := s.client(t, proto)
		do(t, c, "DEL", "user123").ints0()
		do(t, c, "CL.THROTTLE", "user123", 15, 30, 60).equal([]int64{0, 16, 15, -1, 2})
	})
}

// ints0 runs a command only for its side effect, failing on an error.
func (r result) ints0() {
	r.t.Helper()
	if r.err != nil {
		r.t.Fatalf("%v: %v", r.cmd, r.err)
	}
}

// TestRedisCellTable drives redis-cell's unit-test table (max_burst 4, 1 per
// second) through the wire, time set with DEBUG CLOCK.
func TestRedisCellTable(t *testing.T) {
	t.Parallel()
	s := start(t)
	c := s.client(t, 3)
	steps := []struct {
		atMs int64
		q    int64
		want []int64
	}{
		{0, 6, []int64{1, 5, 5, -1, 0}},
		{0, 1, []int64{0, 5, 4, -1, 1}},
		{0, 1, []int64{0, 5, 3, -1, 2}},
		{0, 1, []int64{0, 5, 2, -1, 3}},
		{0, 1, []int64{0, 5, 1, -1, 4}},
		{0, 1, []int64{0, 5, 0, -1, 5}},
		{0, 1, []int64{1, 5, 0, 1, 5}},
		{3000, 1, []int64{0, 5, 2, -1, 3}},
		{3100, 1, []int64{0, 5, 1, -1, 4}},
		{4000, 1, []int64{0, 5, 1, -1, 4}},
		{8000, 1, []int64{0, 5, 4, -1, 1}},
		{9500, 1, []int64{0, 5, 4, -1, 1}},
		{9500, 0, []int64{0, 5, 4, -1, 1}},
		{9500, 2, []int64{0, 5, 2, -1, 3}},
		{9500, 5, []int64{1, 5, 2, 3, 3}},
	}
	for i, st := range steps {
		setClock(t, c, t0+st.atMs)
		got := do(t, c, "CL.THROTTLE", "cell", 4, 1, 1, st.q).ints()
		if fmtInts(got) != fmtInts(st.want) {
			t.Fatalf("step %d: CL.THROTTLE cell 4 1 1 %d at +%dms = %v, want %v", i, st.q, st.atMs, got, st.want)
		}
	}
	// The key lives exactly until its state is fresh: reset_after 3 s.
	do(t, c, "PTTL", "cell").equal(3000)
	advance(t, c, 3000)
	do(t, c, "EXISTS", "cell").equal(0)
}

func fmtInts(v []int64) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, n := range v {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(itoa(n))
	}
	b.WriteByte(']')
	return b.String()
}

func itoa(n int64) string {
	if n < 0 {
		return "-" + itoa(-n)
	}
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

// TestRedisCellEndToEnd is redis-cell's end-to-end test (tests/e2e.rs):
// max_burst 0, 1 token per 2 s; time driven with DEBUG CLOCK instead of a
// sleep.
func TestRedisCellEndToEnd(t *testing.T) {
	t.Parallel()
	s := start(t)
	c := s.client(t, 2)
	setClock(t, c, t0)
	do(t, c, "CL.THROTTLE", "user123", 0, 1, 2, 1).equal([]int64{0, 1, 0, -1, 2})
	do(t, c, "CL.THROTTLE", "user123", 0, 1, 2, 1).equal([]int64{1, 1, 0, 2, 2})
	advance(t, c, 2000)
	do(t, c, "CL.THROTTLE", "user123", 0, 1, 2, 1).equal([]int64{0, 1, 0, -1, 2})
}

func TestThrottleFixesAndErrors(t *testing.T) {
	t.Parallel()
	s := start(t)
	c := s.client(t, 2)
	setClock(t, c, t0)
	// redis-cell issue 50: remaining never exceeds limit at high rates.
	for i := 0; i < 50; i++ {
		got := do(t, c, "CL.THROTTLE", "hi", 6000, 6000, 1).ints()
		if got[2] > got[1] {
			t.Fatalf("call %d: remaining %d > limit %d", i, got[2], got[1])
		}
		advance(t, c, 1)
	}
	for _, bad := range [][]any{
		{"CL.THROTTLE", "k", -1, 1, 1}, {"CL.THROTTLE", "k", 1, 0, 1},
		{"CL.THROTTLE", "k", 1, 1, 0}, {"CL.THROTTLE", "k", 1, 1, -5}, {"CL.THROTTLE", "k", 1, 1, 1, -1},
		{"CL.THROTTLE", "k", "x", 1, 1}, {"CL.THROTTLE", "k", 1, 1, "1.5"},
	} {
		do(t, c, bad...).errIs("ERR value is not an integer or out of range")
	}
	do(t, c, "EXISTS", "k").equal(0)
	do(t, c, "CL.THROTTLE", "k").errIs("ERR wrong number of arguments for 'cl.throttle' command")
	do(t, c, "CL.THROTTLE", "k", 1, 1, 1, 1, 1).errIs("ERR wrong number of arguments for 'cl.throttle' command")
	// Peek on a fresh key: [0, limit, limit, -1, 0], no key created.
	do(t, c, "CL.THROTTLE", "peek", 9, 1, "1m", 0).equal([]int64{0, 10, 10, -1, 0})
	do(t, c, "EXISTS", "peek").equal(0)
	// Durations with units are accepted for period.
	do(t, c, "CL.THROTTLE", "units", 1, 2, "2s").equal([]int64{0, 2, 1, -1, 1})
	// GCRA: fractional period in seconds, TOKENS.
	do(t, c, "GCRA", "g", 1, 1, "0.5").equal([]int64{0, 2, 1, -1, 1})
	do(t, c, "GCRA", "g", 1, 1, "0.5", "TOKENS", 1).equal([]int64{0, 2, 0, -1, 1})
	do(t, c, "GCRA", "g", 1, 1, "0.5", "TOKENS", 1).equal([]int64{1, 2, 0, 1, 1})
	do(t, c, "TYPE", "g").equal("throttle")
	do(t, c, "GCRA", "g2", 1, 1, "abc").errIs("ERR invalid duration 'abc'")
	// The period as Redis's strtod takes it: Java clients send 1.0E7, 60.0.
	do(t, c, "GCRA", "g3", 1, 1, "1.0E7").equal([]int64{0, 2, 1, -1, 10000000})
	do(t, c, "GCRA", "g4", 1, 1, "60.0").equal([]int64{0, 2, 1, -1, 60})
	do(t, c, "GCRA", "g5", 1, 1, "1e3").equal([]int64{0, 2, 1, -1, 1000})
	do(t, c, "GCRA", "g2", 1, 1, "0x10").errIs("ERR invalid duration '0x10'")
	do(t, c, "GCRA", "g2", 1, 1, "1", "TOKENZ", 1).errIs("ERR syntax error")
	do(t, c, "EXISTS", "g2").equal(0)
}

func TestHelloAndClientInfo(t *testing.T) {
	t.Parallel()
	s := start(t)
	c := s.client(t, 3)
	hello, err := c.Do(ctx, "HELLO", "3").Result()
	if err != nil {
		t.Fatal(err)
	}
	m, ok := hello.(map[any]any)
	if !ok {
		t.Fatalf("HELLO 3 = %T, want a map", hello)
	}
	for k, want := range map[string]any{"server": "redis", "version": "7.4.0", "proto": int64(3), "mode": "standalone", "role": "master"} {
		if m[k] != want {
			t.Errorf("HELLO 3 %s = %v, want %v", k, m[k], want)
		}
	}
	if _, ok := m["id"].(int64); !ok {
		t.Errorf("HELLO 3 id = %v", m["id"])
	}
	if mods, ok := m["modules"].([]any); !ok || len(mods) != 0 {
		t.Errorf("HELLO 3 modules = %v", m["modules"])
	}
	// go-redis sent HELLO 3 and CLIENT SETINFO on connect.
	info := do(t, c, "CLIENT", "INFO")
	if !strings.Contains(info.val.(string), "lib-name=go-redis") || !strings.Contains(info.val.(string), "resp=3") {
		t.Fatalf("CLIENT INFO = %q", info.val)
	}
	do(t, c, "HELLO", "4").errIs("NOPROTO unsupported protocol version")
	do(t, c, "CLIENT", "SETNAME", "worker-1").equal("OK")
	do(t, c, "CLIENT", "GETNAME").equal("worker-1")
	do(t, c, "CLIENT", "SETNAME", "bad name").errIs("ERR Client names cannot contain spaces, newlines or special characters.")
	do(t, c, "CLIENT", "NOPE").errIs("ERR unknown subcommand 'NOPE'. Try CLIENT HELP.")
	if help, err := c.Do(ctx, "CLIENT", "HELP").StringSlice(); err != nil || len(help) < 3 || help[0] != "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:" || help[1] != "ID" {
		t.Fatalf("CLIENT HELP = %q %v", help, err)
	}
	do(t, c, "CLIENT", "SETNAME").errIs("ERR wrong number of arguments for 'client|setname' command")
	if id := do(t, c, "CLIENT", "ID"); id.err != nil || id.val.(int64) <= 0 {
		t.Fatalf("CLIENT ID = %v %v", id.val, id.err)
	}
	list := do(t, c, "CLIENT", "LIST")
	if !strings.Contains(list.val.(string), "name=worker-1") {
		t.Fatalf("CLIENT LIST = %q", list.val)
	}
	do(t, c, "SELECT", 0).equal("OK")
	do(t, c, "SELECT", 1).errIs("ERR DB index is out of range")
	do(t, c, "ECHO", "hi").equal("hi")
	do(t, c, "PING", "x").equal("x")
	do(t, c, "RESET").equal("RESET")
}

func TestAuth(t *testing.T) {
	t.Parallel()
	s := start(t, "--requirepass", "s3cret")
	// A client without the password: every command but AUTH/HELLO/QUIT is refused.
	raw := dial(t, s)
	raw.send("PING\r\n")
	raw.expect("-NOAUTH Authentication required.")
	raw.send("CL.THROTTLE k 1 1 1\r\n")
	raw.expect("-NOAUTH Authentication required.")
	raw.send("AUTH wrong\r\n")
	raw.expect("-WRONGPASS invalid username-password pair or user is disabled.")
	raw.send("AUTH s3cret\r\n")
	raw.expect("+OK")
	raw.send("PING\r\n")
	raw.expect("+PONG")
	// HELLO 3 AUTH in one step, as go-redis does.
	raw.send("DEBUG CLOCK SET " + itoa(t0) + "\r\n")
	raw.expect("+OK")
	for _, proto := range []int{2, 3} {
		c := redis.NewClient(&redis.Options{Addr: s.Addr, Protocol: proto, Password: "s3cret"})
		do(t, c, "CL.THROTTLE", "k", 1, 1, 1).equal([]int64{0, 2, 1 - int64(proto-2), -1, 1 + int64(proto-2)})
		c.Close()
	}
	bad := redis.NewClient(&redis.Options{Addr: s.Addr, Password: "nope"})
	defer bad.Close()
	if err := bad.Ping(ctx).Err(); err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
		t.Fatalf("ping with wrong password: %v", err)
	}
	noauth := start(t)
	do(t, noauth.client(t, 2), "AUTH", "x").errIs("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?")
}

func TestCommandTable(t *testing.T) {
	t.Parallel()
	s := start(t)
	protocols(t, func(t *testing.T, proto int) {
		c := s.client(t, proto)
		infos, err := c.Command(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		count := do(t, c, "COMMAND", "COUNT").val.(int64)
		if int64(len(infos)) != count {
			t.Fatalf("COMMAND has %d entries, COMMAND COUNT %d", len(infos), count)
		}
		for name, want := range map[string]struct {
			arity             int8
			first, last, step int8
		}{
			"cl.throttle": {-5, 1, 1, 1}, "gcra": {-5, 1, 1, 1}, "cl.tokenbucket": {-5, 1, 1, 1},
			"cl.leakybucket": {-5, 1, 1, 1}, "cl.window": {-4, 1, 1, 1}, "cl.acquire": {-4, 1, 1, 1},
			"cl.release": {3, 1, 1, 1}, "cl.renew": {4, 1, 1, 1}, "cl.all": {-6, 3, 3, 1},
			"del": {-2, 1, -1, 1}, "exists": {-2, 1, -1, 1}, "type": {2, 1, 1, 1}, "pttl": {2, 1, 1, 1},
			"ping": {-1, 0, 0, 0}, "hello": {-1, 0, 0, 0}, "scan": {-2, 0, 0, 0}, "client": {-2, 0, 0, 0},
			"multi": {1, 0, 0, 0}, "info": {-1, 0, 0, 0}, "config": {-2, 0, 0, 0}, "command": {-1, 0, 0, 0},
			"shutdown": {-1, 0, 0, 0}, "flushall": {-1, 0, 0, 0}, "keys": {2, 0, 0, 0}, "dbsize": {1, 0, 0, 0},
		} {
			ci := infos[name]
			if ci == nil {
				t.Errorf("COMMAND lacks %s", name)
				continue
			}
			if ci.Arity != want.arity || ci.FirstKeyPos != want.first || ci.LastKeyPos != want.last || ci.StepCount != want.step {
				t.Errorf("%s: arity %d keys %d,%d,%d; want %+v", name, ci.Arity, ci.FirstKeyPos, ci.LastKeyPos, ci.StepCount, want)
			}
		}
		if ci := infos["cl.all"]; ci != nil && !contains(ci.Flags, "movablekeys") {
			t.Errorf("cl.all flags %v lack movablekeys", ci.Flags)
		}
		if ci := infos["exists"]; ci != nil && !ci.ReadOnly {
			t.Errorf("exists not readonly: %v", ci.Flags)
		}
		// The arity error is driven by the same table, for every command.
		for name, ci := range infos {
			if ci.Arity == -1 {
				continue
			}
			args := []any{name}
			n := int(ci.Arity) // positive: one more than required
			if n < 0 {
				n = -n - 2 // one short of the minimum
			}
			for i := 0; i < n; i++ {
				args = append(args, "x")
			}
			want := "ERR wrong number of arguments for '" + name + "' command"
			if name == "client" || name == "config" || name == "command" || name == "debug" {
				continue // containers: their own subcommand errors
			}
			do(t, c, args...).errIs(want)
		}
		docs := do(t, c, "COMMAND", "DOCS", "cl.throttle")
		if docs.err != nil || !strings.Contains(fmt.Sprint(docs.val), "Rate limits a key with GCRA") || !strings.Contains(fmt.Sprint(docs.val), "key_spec_index") {
			t.Fatalf("COMMAND DOCS cl.throttle = %v %v", docs.val, docs.err)
		}
		list, err := c.CommandList(ctx, nil).Result()
		if err != nil || int64(len(list)) != count || !contains(list, "cl.all") {
			t.Fatalf("COMMAND LIST = %v, %v", list, err)
		}
		do(t, c, "COMMAND", "INFO", "client|list").ints0()
	})
	c := s.client(t, 2)
	do(t, c, "NOSUCH", "a", "b").errIs("ERR unknown command 'NOSUCH', with args beginning with: 'a' 'b' ")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestMultiExec(t *testing.T) {
	t.Parallel()
	s := start(t)
	protocols(t, func(t *testing.T, proto int) {
		c := s.client(t, proto)
		setClock(t, c, t0)
		do(t, c, "FLUSHALL").equal("OK")
		cmds, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Do(ctx, "CL.THROTTLE", "m", 1, 1, 60)
			p.Do(ctx, "CL.THROTTLE", "m", 1, 1, 60)
			p.Do(ctx, "CL.THROTTLE", "m", 1, 1, 60)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		var limited []any
		for _, cmd := range cmds {
			limited = append(limited, cmd.(*redis.Cmd).Val().([]any)[0])
		}
		if fmtAny(limited) != "[0 0 1]" {
			t.Fatalf("limited flags in EXEC = %v, want [0 0 1]", limited)
		}
		// A command that fails to queue aborts the transaction: nothing runs.
		conn := c.Conn()
		defer conn.Close()
		do2 := func(args ...any) result {
			v, err := conn.Do(ctx, args...).Result()
			return result{t: t, val: v, err: err, cmd: args}
		}
		do2("MULTI").equal("OK")
		do2("CL.THROTTLE", "n", 1, 1, 60).equal("QUEUED")
		do2("CL.THROTTLE", "n").errIs("ERR wrong number of arguments for 'cl.throttle' command")
		do2("EXEC").errIs("EXECABORT Transaction discarded because of previous errors.")
		do(t, c, "EXISTS", "n").equal(0)
		do2("MULTI").equal("OK")
		do2("MULTI").errIs("ERR MULTI calls can not be nested")
		do2("CL.THROTTLE", "n", 1, 1, 60).equal("QUEUED")
		do2("DISCARD").equal("OK")
		do(t, c, "EXISTS", "n").equal(0)
		do2("EXEC").errIs("ERR EXEC without MULTI")
		do2("DISCARD").errIs("ERR DISCARD without MULTI")
	})
}

func fmtAny(v []any) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, x := range v {
		if i > 0 {
			b.WriteByte(' ')
		}
		switch n := x.(type) {
		case int64:
			b.WriteString(itoa(n))
		default:
			b.WriteString("?")
		}
	}
	b.WriteByte(']')
	return b.String()
}

func TestInfoAndKeyspace(t *testing.T) {
	t.Parallel()
	s := start(t)
	c := s.client(t, 2)
	setClock(t, c, t0)
	do(t, c, "CL.THROTTLE", "a", 1, 1, 10).ints0()
	do(t, c, "CL.TOKENBUCKET", "b", 5, 1, "1s").ints0()
	do(t, c, "CL.WINDOW", "c", 5, "1m", "FIXED").ints0()
	info := do(t, c, "INFO").val.(string)
	for _, want := range []string{"# Server\r\n", "redis_version:7.4.0\r\n", "# Clients\r\n", "connected_clients:1\r\n", "# Stats\r\n", "total_commands_processed:", "# Keyspace\r\ndb0:keys=3,expires=3,"} {
		if !strings.Contains(info, want) {
			t.Fatalf("INFO lacks %q:\n%s", want, info)
		}
	}
	only := do(t, c, "INFO", "keyspace").val.(string)
	if only != "# Keyspace\r\ndb0:keys=3,expires=3,avg_ttl=0,subexpiry=0\r\n" {
		t.Fatalf("INFO keyspace = %q", only)
	}
	n1 := statValue(t, do(t, c, "INFO", "stats").val.(string), "total_commands_processed")
	do(t, c, "PING").equal("PONG")
	n2 := statValue(t, do(t, c, "INFO", "stats").val.(string), "total_commands_processed")
	if n2 != n1+2 {
		t.Fatalf("total_commands_processed went %d -> %d, want +2", n1, n2)
	}
	do(t, c, "CONFIG", "RESETSTAT").equal("OK")
	// As in Redis, RESETSTAT itself is counted after the reset.
	if n := statValue(t, do(t, c, "INFO", "stats").val.(string), "total_commands_processed"); n != 1 {
		t.Fatalf("total_commands_processed after CONFIG RESETSTAT = %d, want 1", n)
	}
	do(t, c, "DBSIZE").equal(3)
	do(t, c, "TYPE", "a").equal("throttle")
	do(t, c, "TYPE", "b").equal("tokenbucket")
	do(t, c, "TYPE", "c").equal("window")
	do(t, c, "TYPE", "nope").equal("none")
	do(t, c, "EXISTS", "a", "b", "nope", "a").equal(3)
	do(t, c, "PTTL", "a").equal(10000)
	do(t, c, "TTL", "a").equal(10)
	do(t, c, "PTTL", "nope").equal(-2)
	do(t, c, "TTL", "nope").equal(-2)
	keys, err := c.Keys(ctx, "*").Result()
	if err != nil || len(keys) != 3 {
		t.Fatalf("KEYS * = %v %v", keys, err)
	}
	ab, err := c.Keys(ctx, "[ab]").Result()
	if sort.Strings(ab); err != nil || strings.Join(ab, ",") != "a,b" {
		t.Fatalf("KEYS [ab] = %v %v", ab, err)
	}
	cursor, typed := uint64(0), []string{}
	for {
		page, next, err := c.ScanType(ctx, cursor, "*", 1, "tokenbucket").Result()
		if err != nil {
			t.Fatal(err)
		}
		typed = append(typed, page...)
		if cursor = next; cursor == 0 {
			break
		}
	}
	if strings.Join(typed, ",") != "b" {
		t.Fatalf("SCAN TYPE tokenbucket = %v", typed)
	}
	do(t, c, "SCAN", "0", "TYPE", "bogus").errIs("ERR unknown type name 'bogus'")
	do(t, c, "DEL", "a", "nope").equal(1)
	do(t, c, "UNLINK", "b").equal(1)
	do(t, c, "DBSIZE").equal(1)
	// c (a FIXED window of 1m started at t0) is fresh again at t0+1m.
	advance(t, c, 59_999)
	do(t, c, "EXISTS", "c").equal(1)
	advance(t, c, 1)
	do(t, c, "EXISTS", "c").equal(0)
	do(t, c, "CL.WINDOW", "d", 5, "1m").ints0()
	do(t, c, "FLUSHDB").equal("OK")
	do(t, c, "DBSIZE").equal(0)
}

func statValue(t *testing.T, info, name string) int64 {
	t.Helper()
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			var n int64
			for _, ch := range v {
				n = n*10 + int64(ch-'0')
			}
			return n
		}
	}
	t.Fatalf("INFO lacks %s", name)
	return 0
}

// rawConn is a plain TCP connection for byte-exact protocol checks.
type rawConn struct {
	t  *testing.T
	nc net.Conn
	rd *bufio.Reader
}

func dial(t *testing.T, s *server) *rawConn {
	t.Helper()
	nc, err := net.Dial("tcp", s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawConn{t: t, nc: nc, rd: bufio.NewReader(nc)}
}

func (r *rawConn) send(s string) {
	r.t.Helper()
	if _, err := r.nc.Write([]byte(s)); err != nil {
		r.t.Fatal(err)
	}
}

// expect reads one line and compares it (without CRLF).
func (r *rawConn) expect(want string) {
	r.t.Helper()
	r.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := r.rd.ReadString('\n')
	if err != nil {
		r.t.Fatalf("reading reply, want %q: %v", want, err)
	}
	if got := strings.TrimRight(line, "\r\n"); got != want {
		r.t.Fatalf("reply %q, want %q", got, want)
	}
}

// expectClosed asserts the server closed the connection.
func (r *rawConn) expectClosed() {
	r.t.Helper()
	r.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if line, err := r.rd.ReadString('\n'); err == nil {
		r.t.Fatalf("connection still open, got %q", line)
	}
}

func TestProtocolErrorsCloseOnlyTheirConnection(t *testing.T) {
	t.Parallel()
	s := start(t)
	good := dial(t, s)
	for _, tc := range []struct{ in, reply string }{
		{"*20000000000\r\n", "-ERR Protocol error: invalid multibulk length"},
		{"*1\r\n$3000000000\r\n", "-ERR Protocol error: invalid bulk length"},
		{"*1\r\nx\r\n", "-ERR Protocol error: expected '$', got 'x'"},
		{"*3000000000000\r\n", "-ERR Protocol error: invalid multibulk length"},
		{"PING \"unbalanced\r\n", "-ERR Protocol error: unbalanced quotes in request"},
		{"*1\r\n$2000000\r\n", "-ERR Protocol error: invalid bulk length"},
	} {
		bad := dial(t, s)
		bad.send(tc.in)
		bad.expect(tc.reply)
		bad.expectClosed()
		good.send("PING\r\n")
		good.expect("+PONG")
	}
	// Redis ignores negative multibulk counts; inline commands work.
	good.send("*-10\r\n*1\r\n$4\r\nPING\r\n")
	good.expect("+PONG")
	good.send("CL.THROTTLE \"user 1\" 15 30 60\r\n")
	good.expect("*5")
}

func TestRace64OneKey(t *testing.T) {
	t.Parallel()
	s := start(t)
	c := redis.NewClient(&redis.Options{Addr: s.Addr, PoolSize: 64})
	defer c.Close()
	setClock(t, c, t0) // a frozen clock: nothing refills while we hammer
	const burst = 99   // limit 100
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < 64; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				v, err := c.Do(ctx, "CL.THROTTLE", "hot", burst, 1, "1h").Slice()
				if err != nil {
					t.Error(err)
					return
				}
				if v[0].(int64) == 0 {
					admitted.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if got := admitted.Load(); got != burst+1 {
		t.Fatalf("64 goroutines x 20 calls admitted %d, want exactly %d", got, burst+1)
	}
}

func TestRueidisStrictRESP3(t *testing.T) {
	t.Parallel()
	s := start(t)
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{s.Addr}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Do(ctx, c.B().Arbitrary("DEBUG", "CLOCK", "SET").Args(itoa(t0)).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	got, err := c.Do(ctx, c.B().Arbitrary("CL.THROTTLE").Keys("user123").Args("15", "30", "60").Build()).AsIntSlice()
	if err != nil {
		t.Fatal(err)
	}
	if fmtInts(got) != "[0 16 15 -1 2]" {
		t.Fatalf("rueidis CL.THROTTLE = %v", got)
	}
	acq, err := c.Do(ctx, c.B().Arbitrary("CL.ACQUIRE").Keys("sem").Args("1", "10s").Build()).ToArray()
	if err != nil || len(acq) != 6 {
		t.Fatalf("rueidis CL.ACQUIRE = %v %v", acq, err)
	}
	if id, err := acq[5].ToString(); err != nil || len(id) != 16 {
		t.Fatalf("lease id = %q %v", id, err)
	}
	denied, err := c.Do(ctx, c.B().Arbitrary("CL.ACQUIRE").Keys("sem").Args("1", "10s").Build()).ToArray()
	if err != nil || !denied[5].IsNil() {
		t.Fatalf("denied CL.ACQUIRE lease = %v %v, want null", denied, err)
	}
	info, err := c.Do(ctx, c.B().Info().Section("server").Build()).ToString()
	if err != nil || !strings.Contains(info, "redis_version:") {
		t.Fatalf("INFO over RESP3 = %q %v", info, err)
	}
	cfg, err := c.Do(ctx, c.B().ConfigGet().Parameter("maxmemory").Build()).AsStrMap()
	if err != nil || cfg["maxmemory"] != "0" {
		t.Fatalf("CONFIG GET maxmemory = %v %v", cfg, err)
	}
}

func TestRedisCLI(t *testing.T) {
	t.Parallel()
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Fatal("redis-cli not found: run ./scripts/setup.sh (installs Debian's redis-tools)")
	}
	s := start(t)
	out, err := exec.Command(cli, "-p", s.Port, "CL.THROTTLE", "user123", "15", "30", "60").CombinedOutput()
	if err != nil || string(out) != "0\n16\n15\n-1\n2\n" {
		t.Fatalf("redis-cli CL.THROTTLE = %q %v", out, err)
	}
	out, err = exec.Command(cli, "-3", "-p", s.Port, "HELLO", "3").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "proto 3") {
		t.Fatalf("redis-cli -3 HELLO 3 = %q %v", out, err)
	}
	out, _ = exec.Command(cli, "-p", s.Port, "CL.THROTTLE", "x").CombinedOutput()
	if strings.TrimRight(string(out), "\n") != "ERR wrong number of arguments for 'cl.throttle' command" {
		t.Fatalf("redis-cli arity error = %q", out)
	}
}

func TestConfigGetSet(t *testing.T) {
	t.Parallel()
	s := start(t)
	c := s.client(t, 2)
	do(t, c, "CONFIG", "GET", "maxmemory").equal([]any{"maxmemory", "0"})
	do(t, c, "CONFIG", "SET", "maxmemory", "10mb").equal("OK")
	do(t, c, "CONFIG", "GET", "maxmemory").equal([]any{"maxmemory", "10485760"})
	do(t, c, "CONFIG", "SET", "maxmemory", "lots").errIs("ERR CONFIG SET failed (possibly related to argument 'maxmemory') - argument must be a memory value")
	do(t, c, "CONFIG", "SET", "port", "1").errIs("ERR CONFIG SET failed (possibly related to argument 'port') - can't set immutable config")
	do(t, c, "CONFIG", "SET", "nosuch", "1").errIs("ERR Unknown option or number of arguments for CONFIG SET - 'nosuch'")
	do(t, c, "CONFIG", "GET", "maxmemory").equal([]any{"maxmemory", "10485760"})
}

func TestSigtermExitsCleanly(t *testing.T) {
	t.Parallel()
	s := start(t)
	c := s.client(t, 2)
	do(t, c, "PING").equal("PONG")
	s.cmd.Process.Signal(syscall.SIGTERM)
	if code := s.wait(t); code != 0 {
		t.Fatalf("exit code %d after SIGTERM:\n%s", code, s.logs)
	}
}

func TestDebugNeedsFlag(t *testing.T) {
	t.Parallel()
	s := start(t)
	do(t, s.client(t, 2), "DEBUG", "CLOCK", "BOGUS").errIs("ERR syntax error")
	off, err := tryStartOpts(t, "", false)
	if err != nil {
		t.Fatal(err)
	}
	do(t, off.client(t, 2), "DEBUG", "CLOCK", "SET", "1").errIs("ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.")
}

// TestSaveInsideMultiRefused: commands that flush take every shard lock,
// which EXEC holds; inside MULTI they are refused instead of deadlocking.
func TestSaveInsideMultiRefused(t *testing.T) {
	t.Parallel()
	s := start(t)
	c := s.client(t, 2)
	conn := c.Conn()
	defer conn.Close()
	if v, err := conn.Do(ctx, "MULTI").Result(); err != nil || v != "OK" {
		t.Fatalf("MULTI = %v %v", v, err)
	}
	if _, err := conn.Do(ctx, "SAVE").Result(); err == nil || err.Error() != "ERR Command not allowed inside a transaction" {
		t.Fatalf("SAVE in MULTI: %v", err)
	}
	if _, err := conn.Do(ctx, "EXEC").Result(); err == nil || err.Error() != "EXECABORT Transaction discarded because of previous errors." {
		t.Fatalf("EXEC: %v", err)
	}
	do(t, c, "SAVE").equal("OK")
}

// TestEnvironmentConfig: every flag can be set as RLSERVER_<NAME>.
// Serial: t.Setenv changes the environment every server started meanwhile
// would inherit (and the testing package refuses it in parallel tests).
func TestEnvironmentConfig(t *testing.T) {
	t.Setenv("RLSERVER_REQUIREPASS", "envpass")
	t.Setenv("RLSERVER_SHARDS", "4")
	s := start(t)
	raw := dial(t, s)
	raw.send("PING\r\n")
	raw.expect("-NOAUTH Authentication required.")
	c := redis.NewClient(&redis.Options{Addr: s.Addr, Password: "envpass", Protocol: 2})
	defer c.Close()
	do(t, c, "CONFIG", "GET", "shards").equal([]any{"shards", "4"})
	t.Setenv("RLSERVER_SHARDS", "3")
	if _, err := tryStart(t, ""); err == nil || !strings.Contains(err.Error(), "--shards must be a power of two") {
		t.Fatalf("RLSERVER_SHARDS=3: %v", err)
	}
}

// TestMaxMemoryEvictsClosestToFresh: with --maxmemory, the keys closest to
// their fresh state go first, so forgetting them changes the least.
func TestMaxMemoryEvictsClosestToFresh(t *testing.T) {
	t.Parallel()
	s := start(t, "--maxmemory", "16kb")
	c := s.client(t, 2)
	setClock(t, c, t0)
	pipe := c.Pipeline()
	for i := 0; i < 1000; i++ {
		pipe.Do(ctx, "CL.TOKENBUCKET", fmt.Sprintf("short:%04d", i), 10, 10, "1s") // fresh again in 100 ms
	}
	for i := 0; i < 1000; i++ {
		pipe.Do(ctx, "CL.TOKENBUCKET", fmt.Sprintf("long:%04d", i), 10, 1, "1h") // fresh again in 6 min
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	n := do(t, c, "DBSIZE").val.(int64)
	if n < 250 || n > 450 {
		t.Fatalf("DBSIZE = %d with 16kb for ~40-byte keys, want about 400", n)
	}
	if short, _ := c.Keys(ctx, "short:*").Result(); len(short) != 0 {
		t.Fatalf("%d short-lived keys survived while long-lived ones were evicted", len(short))
	}
	if ev := statValue(t, do(t, c, "INFO", "stats").val.(string), "evicted_keys"); ev != 2000-n {
		t.Fatalf("evicted_keys = %d, want %d", ev, 2000-n)
	}
}

// TestRepliesBeforePartialRequest: replies to the complete commands of a
// read are sent before the server waits for the rest of a partial one, as
// Redis does (a client may wait for them before sending more).
func TestRepliesBeforePartialRequest(t *testing.T) {
	t.Parallel()
	s := start(t)
	c := dial(t, s)
	c.send("PING\r\n*2\r\n$4\r\nECHO\r\n$2\r\nh")
	c.expect("+PONG")
	c.send("i\r\n")
	c.expect("$2")
	c.expect("hi")
}

// TestMemoryCommands: MEMORY USAGE reports the bytes --maxmemory counts for
// a key (nil for a missing one, as Redis answers), more once a LOG window
// outgrows the inline record and is kept as an object; SAMPLES is accepted;
// MEMORY PURGE answers OK; bad input is an error that changes nothing.
func TestMemoryCommands(t *testing.T) {
	t.Parallel()
	protocols(t, func(t *testing.T, proto int) {
		t.Parallel() // each protocol has a server of its own
		// One shard: a key written twice in a row in its shard is kept as
		// an object while hot, so "log" is interleaved with "tb" below.
		s := start(t, "--dir", "", "--shards", "1")
		c := s.client(t, proto)
		setClock(t, c, t0)
		do(t, c, "CL.TOKENBUCKET", "tb", 10, 1, "1s")
		small := do(t, c, "MEMORY", "USAGE", "tb").val.(int64)
		// A record of a 2-byte key and a 6-byte state: a 24-byte slot and
		// the 9 bytes a key is counted for the index.
		if small != 33 {
			t.Fatalf("MEMORY USAGE of a token bucket = %d, want 33", small)
		}
		do(t, c, "MEMORY", "USAGE", "tb", "SAMPLES", 5).equal(small)
		if r := do(t, c, "MEMORY", "USAGE", "missing"); r.err != redis.Nil {
			t.Fatalf("MEMORY USAGE of a missing key = %v %v, want nil", r.val, r.err)
		}
		do(t, c, "MEMORY", "USAGE", "tb", "SAMPLES").errIs("ERR syntax error")
		do(t, c, "MEMORY", "USAGE", "tb", "SAMPLES", "x").errIs("ERR value is not an integer or out of range")
		do(t, c, "MEMORY", "USAGE").errIs("ERR wrong number of arguments for 'memory|usage' command")
		// Between its calls, as many other keys as a shard keeps hot, so
		// that "log" is not a hot key (kept as an object).
		others := []string{"tb"}
		for j := 1; j < shard.HotKeys; j++ {
			others = append(others, fmt.Sprint("tb", j))
		}
		// tb as before; the others live for hours, so DBSIZE counts them.
		takeOther := func(k string) {
			if k == "tb" {
				do(t, c, "CL.TOKENBUCKET", k, 10, 1, "1s")
			} else {
				do(t, c, "CL.TOKENBUCKET", k, 1000, 1, "1h")
			}
		}
		for i := 0; i < 3; i++ {
			do(t, c, "CL.WINDOW", "log", 1000, "1h", "LOG")
			for _, k := range others {
				takeOther(k)
			}
			advance(t, c, 1000)
		}
		inline := do(t, c, "MEMORY", "USAGE", "log").val.(int64)
		for i := 0; i < 100; i++ {
			do(t, c, "CL.WINDOW", "log", 1000, "1h", "LOG")
			for _, k := range others {
				takeOther(k)
			}
			advance(t, c, 1000)
		}
		boxed := do(t, c, "MEMORY", "USAGE", "log").val.(int64)
		if inline > 64 || boxed < 100*16 {
			t.Fatalf("MEMORY USAGE of a LOG window: %d bytes with 3 entries, %d with 103", inline, boxed)
		}
		do(t, c, "MEMORY", "PURGE").equal("OK")
		do(t, c, "DBSIZE").equal(int64(1 + len(others))) // log, tb and the others
	})
}

// TestRueidisDefaultOptions: rueidis as most users create it (client-side
// caching on: it sends CLIENT TRACKING ON OPTIN at connect) works for
// every command; a read asked to be cached (DoCache) is refused with an
// error naming why, so no reply is ever cached, and plain reads still work.
func TestRueidisDefaultOptions(t *testing.T) {
	t.Parallel()
	s := start(t)
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{s.Addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got, err := c.Do(ctx, c.B().Arbitrary("CL.THROTTLE").Keys("k").Args("1", "1", "60").Build()).AsIntSlice()
	if err != nil || fmtInts(got) != "[0 2 1 -1 60]" {
		t.Fatalf("CL.THROTTLE = %v, %v", got, err)
	}
	if n, err := c.Do(ctx, c.B().Exists().Key("k").Build()).AsInt64(); n != 1 || err != nil {
		t.Fatalf("EXISTS = %v, %v", n, err)
	}
	for range 2 {
		_, err := c.DoCache(ctx, c.B().Type().Key("k").Cache(), time.Minute).ToString()
		if err == nil || !strings.Contains(err.Error(), "client-side caching is not supported") {
			t.Fatalf("DoCache(TYPE) = %v, want the refusal", err)
		}
	}
	if typ, err := c.Do(ctx, c.B().Type().Key("k").Build()).ToString(); typ != "throttle" || err != nil {
		t.Fatalf("TYPE = %v, %v", typ, err)
	}
	if _, err := c.Do(ctx, c.B().Del().Key("k").Build()).AsInt64(); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Do(ctx, c.B().Exists().Key("k").Build()).AsInt64(); n != 0 || err != nil {
		t.Fatalf("EXISTS after DEL = %v, %v", n, err)
	}
	// The tracking commands as a raw client sees them.
	r := redis.NewClient(&redis.Options{Addr: s.Addr, Protocol: 3})
	defer r.Close()
	do(t, r, "CLIENT", "GETREDIR").equal(int64(-1))
	do(t, r, "CLIENT", "CACHING", "YES").errIs("ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled")
	do(t, r, "CLIENT", "TRACKING", "ON").errIs("ERR rlserver accepts CLIENT TRACKING ON only in OPTIN mode, where nothing is cached unless asked with CLIENT CACHING YES (which it refuses): it sends no invalidation messages")
	do(t, r, "CLIENT", "TRACKING", "ON", "BCAST").errIs("ERR rlserver accepts CLIENT TRACKING ON only in OPTIN mode, where nothing is cached unless asked with CLIENT CACHING YES (which it refuses): it sends no invalidation messages")
	do(t, r, "CLIENT", "TRACKING", "ON", "OPTIN", "REDIRECT", "999999").errIs("ERR The client ID you want redirect to does not exist")
	do(t, r, "CLIENT", "TRACKING", "ON", "OPTIN", "NOLOOP").equal("OK")
	do(t, r, "CLIENT", "GETREDIR").equal(int64(0))
	do(t, r, "CLIENT", "CACHING", "NO").errIs("ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.")
	do(t, r, "CLIENT", "TRACKING", "OFF").equal("OK")
	do(t, r, "CLIENT", "GETREDIR").equal(int64(-1))
}

// TestClientListShowsCurrentCommand: the caller's own line names the
// command it is running, as Redis's does (cmd=client|list).
func TestClientListShowsCurrentCommand(t *testing.T) {
	t.Parallel()
	s := startIn(t, "")
	c := s.client(t, 2)
	c.Ping(ctx)
	if info := c.ClientInfo(ctx); info.Err() != nil || info.Val().LastCmd != "client|info" {
		t.Fatalf("CLIENT INFO cmd = %+v, %v; want client|info", info.Val(), info.Err())
	}
	list := c.ClientList(ctx).Val()
	if !strings.Contains(list, " cmd=client|list ") {
		t.Fatalf("CLIENT LIST: %q, want the caller's cmd=client|list", list)
	}

	// Connections are listed oldest first (ascending ids), one line each,
	// as Redis lists them.
	for range 20 {
		raw, err := net.Dial("tcp", s.Addr)
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Close()
		pong := make([]byte, 7)
		if _, err := raw.Write([]byte("PING\r\n")); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(raw, pong); err != nil || string(pong) != "+PONG\r\n" {
			t.Fatalf("PING: %q %v", pong, err)
		}
	}
	list = c.ClientList(ctx).Val()
	lines := strings.Split(strings.TrimSuffix(list, "\n"), "\n")
	if len(lines) != 21 {
		t.Fatalf("CLIENT LIST has %d lines, want 21:\n%s", len(lines), list)
	}
	prev := int64(0)
	for _, l := range lines {
		id, err := strconv.ParseInt(strings.TrimPrefix(strings.Fields(l)[0], "id="), 10, 64)
		if err != nil || id <= prev {
			t.Fatalf("CLIENT LIST ids not ascending at %q:\n%s", l, list)
		}
		prev = id
	}
}
