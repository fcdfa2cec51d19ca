package command

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rlserver/rlserver/clock"
	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/resp"
	"github.com/rlserver/rlserver/shard"
)

// runner runs one request on c as a batch of its own and returns its reply.
func runner(c *connection) func(args ...string) string {
	return func(args ...string) string {
		c.W.Buf = c.W.Buf[:0]
		c.exec(argsOf(args...))
		c.EndBatch()
		return string(c.W.Buf)
	}
}

// decision is the five-integer reply [allowed, limit, remaining,
// retry_after_ms, reset_after_ms].
func decision(v ...int64) string {
	b := resp.AppendArray(nil, len(v))
	for _, x := range v {
		b = resp.AppendInt(b, x)
	}
	return string(b)
}

// TestGiveBackReplies: RLS GIVEBACK's exact replies for each rule form:
// the units come back into the limiter's state, which keeps its window or
// refill (reset_after_ms equals PTTL after it); more than was taken
// empties the limiter and removes its key; a key that does not exist
// answers a fresh limiter's decision and is not created; each give-back
// that changes a state is recorded as a change, as a take is.
func TestGiveBackReplies(t *testing.T) {
	c, clock := testConn(0)
	run := runner(c)
	changes := func() int64 { return c.Store().Stats().Changes }
	steps := []struct {
		req     string
		want    string
		changed int64
	}{
		{"CL.WINDOW f 10 60s 4 FIXED", decision(1, 10, 6, 0, 60000), 1},
		{"CL.TOKENBUCKET b 10 1 1s 4", decision(1, 10, 6, 0, 4000), 1},
		{"CL.ALL 1 THROTTLE g 9 1 1s COST 4", "*2\r\n:1\r\n" + decision(1, 10, 6, 0, 4000), 1},
		{"ADVANCE 1500", "", 0},
		// The window keeps its start: 58.5 s to its end.
		{"RLS GIVEBACK FIXED f 10 60s 3", decision(1, 10, 9, 0, 58500), 1},
		{"PTTL f", ":58500\r\n", 0},
		// 2.5 s of backlog less 2: half a token short of full.
		{"RLS GIVEBACK TOKENBUCKET b 10 1 1s 2", decision(1, 10, 9, 0, 500), 1},
		{"PTTL b", ":500\r\n", 0},
		{"RLS GIVEBACK THROTTLE g 9 1 1s 2", decision(1, 10, 9, 0, 500), 1},
		{"PTTL g", ":500\r\n", 0},
		// n = 0 looks.
		{"rls giveback fixed f 10 60s 0", decision(1, 10, 9, 0, 58500), 0},
		// More than is left in use: empty, and the key is gone.
		{"RLS GIVEBACK FIXED f 10 60s 5", decision(1, 10, 10, 0, 0), 1},
		{"EXISTS f", ":0\r\n", 0},
		{"RLS GIVEBACK TOKENBUCKET b 10 1 1s 1000", decision(1, 10, 10, 0, 0), 1},
		{"EXISTS b", ":0\r\n", 0},
		// Nothing to give back: a fresh limiter's answer, no key made.
		{"RLS GIVEBACK SLIDING s 10 60s 3", decision(1, 10, 10, 0, 0), 0},
		{"RLS GIVEBACK THROTTLE none 9 1 1s 3", decision(1, 10, 10, 0, 0), 0},
		{"EXISTS s none", ":0\r\n", 0},
		{"DBSIZE", ":1\r\n", 0}, // g only
	}
	for i, s := range steps {
		before := changes()
		if s.req == "ADVANCE 1500" {
			clock.Advance(1500 * time.Millisecond)
			continue
		}
		if got := run(strings.Fields(s.req)...); got != s.want {
			t.Fatalf("step %d: %s = %q, want %q", i, s.req, got, s.want)
		}
		if got := changes() - before; got != s.changed {
			t.Fatalf("step %d: %s recorded %d changes, want %d", i, s.req, got, s.changed)
		}
	}
}

// TestGiveBackAsNeverTaken: for each rule form, a key that took n units
// and later gave them back answers every later request, and expires, as a
// key that shared its history but never took them (a sliding window's
// previous window weighs in; a bucket is partly refilled).
func TestGiveBackAsNeverTaken(t *testing.T) {
	for _, f := range []struct {
		form, params string
		take         func(key string, n int) string
	}{
		{"FIXED", "10 60s", func(k string, n int) string { return fmt.Sprintf("CL.WINDOW %s 10 60s %d FIXED", k, n) }},
		{"SLIDING", "10 60s", func(k string, n int) string { return fmt.Sprintf("CL.WINDOW %s 10 60s %d SLIDING", k, n) }},
		{"TOKENBUCKET", "10 10 60s", func(k string, n int) string { return fmt.Sprintf("CL.TOKENBUCKET %s 10 10 60s %d", k, n) }},
		{"THROTTLE", "9 10 60s", func(k string, n int) string { return fmt.Sprintf("CL.ALL 1 THROTTLE %s 9 10 60s COST %d", k, n) }},
	} {
		t.Run(f.form, func(t *testing.T) {
			c, clock := testConn(0)
			run := func(req string) string { return runner(c)(strings.Fields(req)...) }
			advance := func(ms int64) { clock.Advance(time.Duration(ms) * time.Millisecond) }
			both := func(step string, n int) {
				t.Helper()
				a, b := run(f.take("a", n)), run(f.take("b", n))
				if a != b {
					t.Fatalf("%s: after the give-back %q, never taking %q", step, a, b)
				}
				if pa, pb := run("PTTL a"), run("PTTL b"); pa != pb {
					t.Fatalf("%s: PTTL %q, never taking %q", step, pa, pb)
				}
			}
			both("history", 3)
			advance(61_000)
			both("history", 2)
			advance(350)
			run(f.take("a", 4))
			advance(700)
			back := run("RLS GIVEBACK " + f.form + " a " + f.params + " 4")
			if look := run("RLS GIVEBACK " + f.form + " b " + f.params + " 0"); back != look {
				t.Fatalf("the give-back answered %q, a look at the key never taking %q", back, look)
			}
			for i, s := range []struct {
				ms int64
				n  int
			}{{0, 0}, {0, 2}, {250, 1}, {1000, 0}, {20_000, 4}, {37_000, 0}, {0, 3}, {45_000, 2}, {90_000, 0}} {
				advance(s.ms)
				both(fmt.Sprintf("step %d (+%d ms, %d)", i, s.ms, s.n), s.n)
			}
		})
	}
}

// TestGiveBackRefusals: bad requests get a clear error and change
// nothing: no state, no recorded change.
func TestGiveBackRefusals(t *testing.T) {
	c, _ := testConn(0)
	run := func(req string) string { return runner(c)(strings.Fields(req)...) }
	run("CL.WINDOW f 10 60s 4 FIXED")
	run("SET str x")
	state := func() string {
		return run("CL.WINDOW f 10 60s 0 FIXED") + run("PTTL f") + run("GET str") + run("DBSIZE")
	}
	before, changes := state(), c.Store().Stats().Changes
	wrongArgs := "-ERR wrong number of arguments for 'rls|giveback' command\r\n"
	for _, s := range []struct{ req, want string }{
		{"RLS GIVEBACK NOPE f 10 60s 1", "-" + errGiveBackRule + "\r\n"},
		{"RLS GIVEBACK LOG f 10 60s 1", "-" + errGiveBackRule + "\r\n"},
		{"RLS GIVEBACK LEAKYBUCKET f 10 1 1s 1", "-" + errGiveBackRule + "\r\n"},
		{"RLS GIVEBACK ACQUIRE f 10 1s 1", "-" + errGiveBackRule + "\r\n"},
		{"RLS GIVEBACK", wrongArgs},
		{"RLS GIVEBACK FIXED f 10 60s", wrongArgs},
		{"RLS GIVEBACK FIXED f 10 60s 1 2", wrongArgs},
		{"RLS GIVEBACK TOKENBUCKET f 10 1 1s", wrongArgs},
		{"RLS GIVEBACK TOKENBUCKET f 10 1 1s 1 2", wrongArgs},
		{"RLS GIVEBACK FIXED f 0 60s 1", "-" + errNotInt + "\r\n"},
		{"RLS GIVEBACK FIXED f 10 1.5s 1", "-ERR invalid duration '1.5s'\r\n"},
		{"RLS GIVEBACK FIXED f 10 60s -1", "-" + errNotInt + "\r\n"},
		{"RLS GIVEBACK FIXED f 10 60s x", "-" + errNotInt + "\r\n"},
		{"RLS GIVEBACK THROTTLE f 9 2000000 1ms 1", "-" + errZeroRate + "\r\n"},
		{"RLS GIVEBACK SLIDING f 10 60s 1", "-" + errWrongType + "\r\n"},
		{"RLS GIVEBACK TOKENBUCKET f 10 1 1s 1", "-" + errWrongType + "\r\n"},
		{"RLS GIVEBACK THROTTLE f 9 1 1s 1", "-" + errWrongType + "\r\n"},
		{"RLS GIVEBACK FIXED str 10 60s 1", "-" + errWrongType + "\r\n"},
		{"RLS NOSUCH", "-ERR unknown subcommand 'NOSUCH'. Try RLS HELP.\r\n"},
	} {
		if got := run(s.req); got != s.want {
			t.Errorf("%s = %q, want %q", s.req, got, s.want)
		}
	}
	// Not from scripts.
	script := runner(c)("EVAL", "return redis.call('RLS', 'GIVEBACK', 'FIXED', KEYS[1], '10', '60s', '1')", "1", "f")
	if !strings.Contains(script, "not allowed from script") {
		t.Errorf("from a script: %q", script)
	}
	// Not for a user limited to the limiter commands.
	run("ACL SETUSER app on nopass ~* +@ratelimit")
	app := newTestConn(c.h)
	runner(app)("AUTH", "app", "x")
	if got := runner(app)(strings.Fields("RLS GIVEBACK FIXED f 10 60s 1")...); got != "-NOPERM User app has no permissions to run the 'rls|giveback' command\r\n" {
		t.Errorf("as a @ratelimit user: %q", got)
	}
	if after := state(); after != before {
		t.Fatalf("refused requests changed the keys:\n%q\nwas\n%q", after, before)
	}
	if got := c.Store().Stats().Changes; got != changes {
		t.Fatalf("refused requests recorded %d changes", got-changes)
	}
}

// TestGiveBackRouted: in cluster mode RLS GIVEBACK is routed by its key
// as any write: a key of another shard's slot answers MOVED there and is
// not touched; COMMAND GETKEYS finds the key.
func TestGiveBackRouted(t *testing.T) {
	clk := clock.New()
	clk.Set(1_767_225_600_000_000_000) // 2026-01-01, as testConn's
	h := New(Config{}, shard.New(shard.Options{Cluster: true}), clk)
	h.SetCluster(twoShards(t), nil)
	c := newTestConn(h)
	run := func(req string) string { return runner(c)(strings.Fields(req)...) }
	keyOn := func(mine bool) (string, int) {
		for i := 0; ; i++ {
			k := fmt.Sprint("k", i)
			if s := cluster.Slot([]byte(k)); s < 8192 == mine {
				return k, s
			}
		}
	}
	theirs, slot := keyOn(false)
	before := c.Store().Stats().Changes
	if got, want := run("RLS GIVEBACK FIXED "+theirs+" 10 60s 1"), fmt.Sprintf("-MOVED %d 127.0.0.1:7002\r\n", slot); got != want {
		t.Fatalf("another shard's key: %q, want %q", got, want)
	}
	if c.Store().Stats().Changes != before || c.Store().View().Len() != 0 {
		t.Fatal("a redirected give-back changed the keyspace")
	}
	mine, _ := keyOn(true)
	if got := run("CL.WINDOW " + mine + " 10 60s 4 FIXED"); got != decision(1, 10, 6, 0, 60000) {
		t.Fatalf("CL.WINDOW on this shard's key: %q", got)
	}
	if got := run("RLS GIVEBACK FIXED " + mine + " 10 60s 3"); got != decision(1, 10, 9, 0, 60000) {
		t.Fatalf("this shard's key: %q", got)
	}
	if got := run("COMMAND GETKEYS RLS GIVEBACK FIXED " + mine + " 10 60s 1"); got != fmt.Sprintf("*1\r\n$%d\r\n%s\r\n", len(mine), mine) {
		t.Fatalf("COMMAND GETKEYS: %q", got)
	}
}
