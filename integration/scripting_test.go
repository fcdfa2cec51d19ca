package integration

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/internal/redistest"
	"github.com/rlserver/rlserver/script"
)

// TestScripting: EVAL and EVALSHA run Lua scripts whose redis.call
// commands are rlserver's (a GCRA limiter decided from a script), in both
// protocols; SCRIPT LOAD, EXISTS and FLUSH manage the cache; NOSCRIPT for
// an unknown sha; commands flagged noscript and writes from EVAL_RO are
// refused; a script inside MULTI runs at EXEC; the keys a script changes
// are ordinary keys.
func TestScripting(t *testing.T) {
	s := start(t)
	protocols(t, func(t *testing.T, proto int) {
		c := s.client(t, proto)
		do(t, c, "FLUSHALL").equal("OK")
		const limiter = "return redis.call('CL.THROTTLE', KEYS[1], ARGV[1], ARGV[2], ARGV[3])"
		for i := range 3 {
			r := do(t, c, "EVAL", limiter, "1", "sl", "1", "2", "60").ints()
			if want := int64(0); i == 2 {
				want = 1
				if r[0] != want {
					t.Fatalf("decision %d from a script: %v, want denied", i, r)
				}
			} else if r[0] != want {
				t.Fatalf("decision %d from a script: %v, want admitted", i, r)
			}
		}
		do(t, c, "TYPE", "sl").equal("throttle")
		sha := script.SHA1([]byte(limiter))
		do(t, c, "SCRIPT", "EXISTS", sha, "ffffffffffffffffffffffffffffffffffffffff").equal("[1 0]")
		do(t, c, "SCRIPT", "FLUSH").equal("OK")
		do(t, c, "EVALSHA", sha, "1", "sl", "1", "2", "60").errIs("NOSCRIPT No matching script. Please use EVAL.")
		do(t, c, "SCRIPT", "LOAD", limiter).equal(sha)
		if r := do(t, c, "EVALSHA", strings.ToUpper(sha), "1", "sl", "1", "2", "60").ints(); r[0] != 1 {
			t.Fatalf("EVALSHA decision: %v, want denied", r)
		}
		do(t, c, "EVAL", "return {1, 'two', {3}}", "0").equal("[1 two [3]]")
		do(t, c, "EVAL", "return redis.call('MULTI')", "0").errIs("ERR This Redis command is not allowed from script script: " +
			script.SHA1([]byte("return redis.call('MULTI')")) + ", on @user_script:1.")
		do(t, c, "EVAL_RO", "return redis.call('CL.THROTTLE', KEYS[1], 1, 2, 60)", "1", "sl").errIs(
			"ERR Write commands are not allowed from read-only scripts. script: " +
				script.SHA1([]byte("return redis.call('CL.THROTTLE', KEYS[1], 1, 2, 60)")) + ", on @user_script:1.")
		do(t, c, "EVAL", "return 1", "2", "a").errIs("ERR Number of keys can't be greater than number of args")
		do(t, c, "EVAL", "return 1", "-1").errIs("ERR Number of keys can't be negative")
		do(t, c, "SCRIPT", "KILL").errIs("NOTBUSY No scripts in execution right now.")
		// TIME, as the sliding-window scripts read it, and DBSIZE.
		if r := do(t, c, "EVAL", "local t = redis.call('TIME'); return {#t, redis.call('DBSIZE')}", "0").ints(); r[0] != 2 || r[1] != 1 {
			t.Fatalf("TIME and DBSIZE from a script: %v", r)
		}
		pipe := c.TxPipeline()
		pipe.Do(ctx, "EVAL", "return redis.call('TYPE', KEYS[1])", "1", "sl")
		if cmds, err := pipe.Exec(ctx); err != nil || cmds[0].(interface{ Val() any }).Val() != "throttle" {
			t.Fatalf("EVAL in MULTI: %v %v", cmds, err)
		}
	})
}

// TestScriptKill: past busy-reply-threshold (CONFIG SET, lua-time-limit
// its alias) other clients are answered BUSY; SCRIPT KILL from another
// connection stops a script that has not written; one that wrote answers
// SCRIPT KILL with UNKILLABLE and runs on, as in Redis. (--io
// goroutines: TestBusyScriptOneLoop has the event loop.)
func TestScriptKill(t *testing.T) {
	s := start(t, "--io", "goroutines")
	a, b := s.client(t, 2), s.client(t, 2)
	do(t, b, "CONFIG", "SET", "busy-reply-threshold", "0").equal("OK")
	do(t, b, "CONFIG", "GET", "lua-time-limit").equal([]any{"lua-time-limit", "0"})
	loop := "while true do end"
	sha := script.SHA1([]byte(loop))
	do(t, b, "SCRIPT", "KILL").errIs("NOTBUSY No scripts in execution right now.")
	done := make(chan error, 1)
	go func() { done <- a.Do(ctx, "EVAL", loop, "0").Err() }()
	eventually(t, "SCRIPT KILL to stop the running script", func() bool {
		return b.Do(ctx, "SCRIPT", "KILL").Err() == nil
	})
	if err := <-done; err == nil || err.Error() != "ERR Script killed by user with SCRIPT KILL... script: "+sha+", on @user_script:1." {
		t.Fatalf("the killed script answered %v", err)
	}
	do(t, a, "PING").equal("PONG")
	// A script that wrote cannot be killed: it runs on (the server is
	// killed at the end of the test).
	wrote := "redis.call('CL.THROTTLE', KEYS[1], 1, 1, 1) while true do end"
	c := s.client(t, 2)
	go c.Do(ctx, "EVAL", wrote, "1", "kw")
	eventually(t, "SCRIPT KILL to answer UNKILLABLE", func() bool {
		err := b.Do(ctx, "SCRIPT", "KILL").Err()
		return err != nil && strings.HasPrefix(err.Error(), "UNKILLABLE Sorry the script already executed write commands")
	})
	// Past the threshold (0 here), other clients are told BUSY, as by
	// Redis, instead of waiting behind the script's locks for ever.
	do(t, b, "PING").errIs(busyScript)
	do(t, b, "GET", "k").errIs(busyScript)
	do(t, b, "CL.THROTTLE", "other", 1, 1, 1).errIs(busyScript)
}

const busyScript = "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."

// TestBusyScriptOneLoop: with one event loop (the default with
// persistence on two cores) a script past busy-reply-threshold holds the
// loop's goroutine, and the loop is lent: its other clients, and clients
// connecting meanwhile, are answered BUSY; SCRIPT KILL stops a script
// that has not written, which runs until then, as in Redis. A script
// that wrote runs on, and SHUTDOWN NOSAVE ends the server: the keys saved
// before the script are there after a restart, the script's write is not.
func TestBusyScriptOneLoop(t *testing.T) {
	dir := t.TempDir()
	s := startIn(t, dir, "--event-loops", "1")
	a, b := s.client(t, 2), s.client(t, 3)
	for _, c := range []*redis.Client{a, b} {
		do(t, c, "PING").equal("PONG") // each has its connection on the loop
	}
	do(t, b, "CONFIG", "SET", "busy-reply-threshold", "200").equal("OK")
	do(t, b, "SET", "before", "1").equal("OK")
	do(t, b, "SAVE").equal("OK")
	loop := "redis.call('GET', KEYS[1]) while true do end"
	sha := script.SHA1([]byte(loop))
	done := make(chan error, 1)
	go func() { done <- a.Do(ctx, "EVAL", loop, "1", "before").Err() }()
	eventually(t, "the script to run past the threshold", func() bool {
		err := b.Do(ctx, "PING").Err()
		return err != nil && err.Error() == busyScript
	})
	do(t, b, "GET", "before").errIs(busyScript)
	// A connection made while the script runs is served too.
	fresh := s.client(t, 2)
	do(t, fresh, "CL.THROTTLE", "k", 1, 1, 1).errIs(busyScript)
	do(t, b, "SCRIPT", "KILL").equal("OK")
	if err := <-done; err == nil || err.Error() != "ERR Script killed by user with SCRIPT KILL... script: "+sha+", on @user_script:1." {
		t.Fatalf("the killed script answered %v", err)
	}
	for _, c := range []*redis.Client{a, b, fresh} {
		do(t, c, "GET", "before").equal("1")
	}

	wrote := "redis.call('SET', KEYS[1], 'script') while true do end"
	once := noRetry(s)
	go once.Do(ctx, "EVAL", wrote, "1", "x")
	eventually(t, "SCRIPT KILL to answer UNKILLABLE", func() bool {
		err := b.Do(ctx, "SCRIPT", "KILL").Err()
		return err != nil && strings.HasPrefix(err.Error(), "UNKILLABLE Sorry the script already executed write commands")
	})
	do(t, fresh, "INCR", "before").errIs(busyScript)
	noRetry(s).Do(ctx, "SHUTDOWN", "NOSAVE") // the connection just closes
	if code := s.wait(t); code != 0 {
		t.Fatalf("SHUTDOWN NOSAVE: exit code %d\n%s", code, s.logs)
	}
	s = startIn(t, dir, "--event-loops", "1")
	c := s.client(t, 2)
	do(t, c, "GET", "before").equal("1")
	do(t, c, "EXISTS", "x").equal(int64(0))
}

// noRetry returns a client of one connection that sends each command once
// and waits for its reply as long as a test runs.
func noRetry(s *server) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1, PoolSize: 1, ReadTimeout: time.Minute})
	s.t.Cleanup(func() { c.Close() })
	return c
}

// TestBusyScriptTwoLoops: with two event loops, the loop that does not
// run the script is held too, by commands waiting for the keys the script
// holds: it is lent as well, so that every new client is answered BUSY,
// whichever loop it lands on, and SCRIPT KILL from any of them stops the
// script. The waiting commands then get their replies.
func TestBusyScriptTwoLoops(t *testing.T) {
	s := start(t, "--event-loops", "2", "--threads", "2")
	admin := s.client(t, 2)
	do(t, admin, "CONFIG", "SET", "busy-reply-threshold", "300").equal("OK")
	do(t, admin, "SET", "k", "v").equal("OK")
	done := make(chan error, 1)
	go func() { done <- noRetry(s).Do(ctx, "EVAL", "while true do end", "0").Err() }()
	waiting := make(chan any, 4)
	for range 4 { // spread over both loops: the other loop's first one waits for the locks
		c := noRetry(s)
		go func() {
			v, err := c.Do(ctx, "GET", "k").Result()
			if err != nil {
				v = err.Error()
			}
			waiting <- v
		}()
	}
	eventually(t, "the script to run past the threshold", func() bool {
		err := noRetry(s).Do(ctx, "PING").Err()
		return err != nil && err.Error() == busyScript
	})
	for range 6 {
		do(t, noRetry(s), "GET", "k").errIs(busyScript)
	}
	do(t, noRetry(s), "SCRIPT", "KILL").equal("OK")
	if err := <-done; err == nil || !strings.HasPrefix(err.Error(), "ERR Script killed by user with SCRIPT KILL...") {
		t.Fatalf("the killed script answered %v", err)
	}
	for range 4 {
		if v := <-waiting; v != "v" && v != busyScript {
			t.Fatalf("a GET sent while the script ran answered %v", v)
		}
	}
	do(t, admin, "GET", "k").equal("v")
}

// TestScriptingAgainstRedis: the same scripting requests to redis-server
// and to rlserver, in RESP2 and RESP3, replies compared: EVAL's
// conversions and errors, numkeys errors, EVAL_RO refusing a write,
// commands refused from scripts, unknown commands, SCRIPT LOAD, EXISTS,
// FLUSH, EVALSHA and NOSCRIPT, SCRIPT KILL with nothing running. Only
// commands both servers have are called (the value types are not here
// yet); TIME's reply is compared by its shape.
func TestScriptingAgainstRedis(t *testing.T) {
	ours := start(t)
	theirs := &server{Addr: redistest.Start(t)}
	requests := [][]string{
		{"SCRIPT", "FLUSH"},
		{"FUNCTION", "FLUSH"},
		{"FUNCTION", "FLUSH", "SYNC"},
		{"FUNCTION", "FLUSH", "NOW"},
		{"FUNCTION", "LIST"},
		{"FUNCTION", "LIST", "WITHCODE"},
		{"FUNCTION", "LIST", "FOO"},
		{"EVAL", "return {1, 'two', {3, nil, 4}, true, false}", "0"},
		{"EVAL", "return {ok='fine'}", "0"},
		{"EVAL", "return redis.error_reply('MYERR custom')", "0"},
		{"EVAL", "return {KEYS[1], ARGV[1], #KEYS, #ARGV}", "1", "k", "a", "b"},
		{"EVAL", "return redis.call('PING')", "0"},
		{"EVAL", "redis.call('SET', KEYS[1], 312657448.94957399) return redis.call('GET', KEYS[1])", "1", "num"},
		{"EVAL", "redis.call('SET', KEYS[1], 1/3) return redis.call('GET', KEYS[1])", "1", "num"},
		{"EVAL", "redis.call('SET', KEYS[1], 1e20) return redis.call('GET', KEYS[1])", "1", "num"},
		{"EVAL", "return {tostring(1/3), tostring(312660688.95028), tostring(1e15), tostring(7), tostring(-0.5), tostring(1/0), tostring('s'), tostring(nil)}", "0"},
		{"EVAL", "return redis.pcall('PING', 'a', 'b')", "0"},
		{"EVAL", "return redis.call('DEL', KEYS[1])", "1", "nosuchkey"},
		{"EVAL", "return redis.call('EXISTS', KEYS[1])", "1", "nosuchkey"},
		{"EVAL", "return #redis.call('TIME')", "0"},
		{"EVAL", "return redis.call('MULTI')", "0"},
		{"EVAL", "return redis.call('nosuchcommand')", "0"},
		{"EVAL", "return x", "0"},
		{"EVAL", "return 1 +", "0"},
		{"EVAL", "return 1", "2", "a"},
		{"EVAL", "return 1", "-1"},
		{"EVAL", "return 1", "x"},
		{"EVAL_RO", "return redis.call('DEL', KEYS[1])", "1", "k"},
		{"EVAL_RO", "return redis.call('EXISTS', KEYS[1])", "1", "k"},
		{"EVALSHA", "ffffffffffffffffffffffffffffffffffffffff", "0"},
		// Shebang lines: flags, their errors, line numbers kept.
		{"EVAL", "#!lua\nreturn 1", "0"},
		{"EVAL", "#!lua flags=no-writes\nreturn redis.call('SET', KEYS[1], 'v')", "1", "sb"},
		{"EVAL", "#!lua flags=no-writes,allow-oom\nreturn redis.call('GET', KEYS[1])", "1", "sb"},
		{"EVAL", "#!lua flags=allow-oom\nreturn redis.call('SET', KEYS[1], 'w')", "1", "sb"},
		{"EVAL_RO", "#!lua\nreturn 1", "0"},
		{"EVAL_RO", "#!lua flags=no-writes\nreturn redis.call('GET', KEYS[1])", "1", "sb"},
		{"EVAL", "#!lua flags=bogus\nreturn 1", "0"},
		{"EVAL", "#!lua flags=no-writes,bogus\nreturn 1", "0"},
		{"EVAL", "#!lua name=x\nreturn 1", "0"},
		{"EVAL", "#!python\nreturn 1", "0"},
		{"EVAL", "#!lua", "0"},
		{"EVAL", "#!lua\n\nreturn x", "0"},
		{"EVAL", "#!lua flags=no-cluster\nreturn 'nc'", "0"},
		{"SCRIPT", "LOAD", "#!lua flags=bogus\nreturn 1"},
		{"SCRIPT", "LOAD", "#!lua flags=no-writes\nreturn redis.call('SET', KEYS[1], 'v')"},
		{"EVALSHA_RO", script.SHA1([]byte("#!lua flags=no-writes\nreturn redis.call('SET', KEYS[1], 'v')")), "1", "sb"},
		{"SCRIPT", "LOAD", "#!lua\nreturn redis.call('SET', KEYS[1], 'v')"},
		{"EVALSHA_RO", script.SHA1([]byte("#!lua\nreturn redis.call('SET', KEYS[1], 'v')")), "1", "sb"},
		{"SCRIPT", "LOAD", "return ARGV[1]"},
		{"SCRIPT", "EXISTS", script.SHA1([]byte("return ARGV[1]")), "ffffffffffffffffffffffffffffffffffffffff"},
		{"EVALSHA", script.SHA1([]byte("return ARGV[1]")), "0", "v"},
		{"EVALSHA_RO", strings.ToUpper(script.SHA1([]byte("return ARGV[1]"))), "0", "w"},
		{"SCRIPT", "FLUSH", "ASYNC"},
		{"SCRIPT", "EXISTS", script.SHA1([]byte("return ARGV[1]"))},
		{"SCRIPT", "FLUSH", "NOW"},
		{"SCRIPT", "KILL"},
		{"CONFIG", "SET", "busy-reply-threshold", "4000"},
		{"CONFIG", "GET", "lua-time-limit"},
	}
	for _, proto := range []string{"2", "3"} {
		a, b := dial(t, ours), dial(t, theirs)
		a.cmd("HELLO", proto)
		b.cmd("HELLO", proto)
		a.reply()
		b.reply()
		for _, req := range requests {
			a.cmd(req...)
			b.cmd(req...)
			if got, want := a.reply(), b.reply(); got != want {
				t.Errorf("RESP%s %q:\n got %q\nwant %q", proto, req, got, want)
			}
		}
	}
}

// TestBusyScriptAgainstRedis: past busy-reply-threshold both servers
// answer other clients the same -BUSY. A script that has not written runs
// until SCRIPT KILL, which stops it with the same error. Beside a script
// that wrote and loops, SCRIPT KILL gets the same UNKILLABLE, HELLO is
// answered, SHUTDOWN refuses anything but NOSAVE (BUSY; a syntax error
// first), and FUNCTION STATS and FUNCTION KILL are refused (a script, not
// a function, runs). rlserver runs with a goroutine per connection and
// with one event loop, where every connection shares the script's loop.
func TestBusyScriptAgainstRedis(t *testing.T) {
	theirs := &server{Addr: redistest.Start(t)}
	want := busyScriptReplies(t, theirs)
	if !strings.HasPrefix(want[0], "-BUSY Redis is busy running a script.") {
		t.Fatalf("redis-server never answered BUSY: %q", want)
	}
	for _, args := range [][]string{{"--io", "goroutines"}, {"--event-loops", "1"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			got := busyScriptReplies(t, start(t, args...))
			// CL.THROTTLE is unknown to Redis, and HELLO names each
			// server's version and connection id: compared apart.
			const throttle, hello = 6, 8
			if got[throttle] != got[0] {
				t.Errorf("CL.THROTTLE beside the busy script: %q, want %q", got[throttle], got[0])
			}
			for _, r := range []string{got[hello], want[hello]} {
				if !strings.HasPrefix(r, "*14 $6 server $5 redis") {
					t.Errorf("HELLO beside the busy script: %q", r)
				}
			}
			for j := range want {
				if j != throttle && j != hello && got[j] != want[j] {
					t.Errorf("reply %d: got %q, want %q", j, got[j], want[j])
				}
			}
		})
	}
}

// busyScriptReplies runs TestBusyScriptAgainstRedis's requests on srv.
func busyScriptReplies(t *testing.T, srv *server) []string {
	a, b := dial(t, srv), dial(t, srv)
	b.cmd("CONFIG", "SET", "busy-reply-threshold", "100")
	if r := b.reply(); r != "+OK" {
		t.Fatalf("%s: CONFIG SET busy-reply-threshold: %q", srv.Addr, r)
	}
	// Redis answers nothing before the threshold; rlserver, with a
	// goroutine per connection, answers PONG until it: ask until BUSY.
	busy := func() string {
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
			if r := b.cmd("PING").reply(); strings.HasPrefix(r, "-BUSY") {
				return r
			}
		}
		return ""
	}
	var got []string
	a.cmd("EVAL", "while true do end", "0")
	got = append(got, busy(), b.cmd("SCRIPT", "KILL").reply(), a.reply(), b.cmd("PING").reply())
	a.cmd("EVAL", "redis.call('SET', KEYS[1], '1') while true do end", "1", "busykey")
	got = append(got, busy())
	for _, req := range [][]string{{"GET", "busykey"}, {"CL.THROTTLE", "x", "1", "1", "1"}, {"SCRIPT", "KILL"}, {"HELLO", "2"}, {"SHUTDOWN"}, {"SHUTDOWN", "BOGUS"},
		{"FUNCTION", "STATS"}, {"FUNCTION", "KILL"}} {
		got = append(got, b.cmd(req...).reply())
	}
	return got
}
