package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlserver/rlserver/internal/redistest"
	"github.com/rlserver/rlserver/script"
)

// TestRateLimiterScriptsAgainstRedis runs the Lua rate limiters teams
// run on Redis today (testdata/lua: Spring Cloud Gateway's token bucket,
// rate-limit-redis, a sorted-set sliding log, Laravel's DurationLimiter,
// Python limits' moving window, go-redis/redis_rate's GCRA), unchanged,
// through EVAL and EVALSHA on rlserver and on redis-server, and compares
// every reply, in RESP2 and RESP3. The scripts take the time in ARGV,
// except redis_rate's, which reads TIME: its replies are compared on what
// does not depend on the microsecond (allowed and remaining).
func TestRateLimiterScriptsAgainstRedis(t *testing.T) {
	load := func(name string) string {
		b, err := os.ReadFile(filepath.Join("testdata", "lua", name+".lua"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	type call struct {
		script string
		keys   []string
		argv   []string
	}
	var calls []call
	add := func(name string, keys []string, argv ...string) {
		calls = append(calls, call{name, keys, argv})
	}
	// Spring: 2 tokens/s, capacity 5, 7 requests at t=100, then refills.
	for _, now := range []string{"100", "100", "100", "100", "100", "100", "100", "101", "101", "101", "104"} {
		add("spring_token_bucket", []string{"req.{u1}.tokens", "req.{u1}.ts"}, "2", "5", now, "1")
	}
	add("spring_token_bucket", []string{"req.{u1}.tokens", "req.{u1}.ts"}, "2", "5", "104", "9")
	for range 4 {
		add("express_fixed_window", []string{"rl:ip"}, "1", "60000")
	}
	for i, now := range []string{"1000", "1100", "1200", "1300", "2050", "2250", "2251"} {
		add("sliding_log_zset", []string{"log:u"}, now, "1000", "3", string(rune('a'+i)))
	}
	for _, now := range []string{"1000", "1001", "1002", "1003", "1061", "1062"} {
		add("laravel_duration", []string{"laravel:key"}, now, now, "60", "3")
	}
	for _, now := range []string{"500", "501", "502", "503", "600", "561"} {
		add("limits_moving_window", []string{"LIMITER/u/3/1/minute"}, now, "3", "60", "1")
	}
	add("limits_moving_window", []string{"LIMITER/u/3/1/minute"}, "700", "3", "60", "5")
	add("limits_moving_window", []string{"LIMITER/u/3/1/minute"}, "700", "3", "60", "3")

	ours := start(t)
	theirs := &server{Addr: redistest.Start(t)}
	for _, proto := range []string{"2", "3"} {
		for _, sha := range []bool{false, true} {
			a, b := diffPair(t, ours, theirs, proto)
			for _, cl := range calls {
				src := load(cl.script)
				req := []string{"EVAL", src}
				if sha {
					for _, c := range []*rawConn{a, b} {
						c.cmd("SCRIPT", "LOAD", src)
						if got := c.reply(); !strings.Contains(got, script.SHA1([]byte(src))) {
							t.Fatalf("SCRIPT LOAD %s: %q", cl.script, got)
						}
					}
					req = []string{"EVALSHA", script.SHA1([]byte(src))}
				}
				req = append(req, itoa(int64(len(cl.keys))))
				req = append(append(req, cl.keys...), cl.argv...)
				a.cmd(req...)
				b.cmd(req...)
				got, want := a.reply(), b.reply()
				if got != want {
					t.Errorf("RESP%s %s %v %v:\n got %q\nwant %q", proto, cl.script, cl.keys, cl.argv, got, want)
				}
				if strings.HasPrefix(want, "-") {
					t.Errorf("RESP%s %s %v %v: redis-server answers an error: %q", proto, cl.script, cl.keys, cl.argv, want)
				}
			}
			// The state the scripts left, key by key.
			for _, k := range []string{"req.{u1}.tokens", "req.{u1}.ts", "rl:ip", "log:u", "laravel:key", "LIMITER/u/3/1/minute"} {
				for _, q := range [][]string{{"TYPE", k}, {"TTL", k}} {
					a.cmd(q...)
					b.cmd(q...)
					if got, want := a.reply(), b.reply(); got != want {
						t.Errorf("RESP%s %v after the scripts: got %q, want %q", proto, q, got, want)
					}
				}
			}
		}
	}

	// redis_rate: burst 5, 1 per hour: five calls admitted with
	// remaining 4..0, then denied, on both servers.
	src := load("redis_rate_gcra")
	for _, srv := range []*server{ours, theirs} {
		c := srv.client(t, 2)
		var got []int64
		for range 7 {
			r, err := c.Eval(ctx, src, []string{"rate:u"}, 5, 1, 3600, 1).Slice()
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, r[0].(int64), r[1].(int64))
		}
		want := []int64{1, 4, 1, 3, 1, 2, 1, 1, 1, 0, 0, 0, 0, 0}
		if !equalInts(got, want) {
			t.Errorf("%s: redis_rate (allowed, remaining) x7 = %v, want %v", srv.Addr, got, want)
		}
	}
}

func equalInts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
