package integration

import (
	"strings"
	"testing"

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
