package integration

import (
	"fmt"
	"math"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/rlserver/rlserver/internal/redistest"
)

// TestRedisRateLibrary runs go-redis/redis_rate v10, unchanged, with a
// go-redis v9 client (RESP2 and RESP3) against rlserver and against
// redis-server. The library sends its GCRA scripts with EVALSHA (EVAL
// after NOSCRIPT); they read the clock with TIME, GET the key's
// theoretical arrival time and SET it back with EX; Reset is a DEL.
//
// Each scenario's transcript holds the integer fields (Allowed,
// Remaining) and the durations rounded to the tenth of a second (RetryAfter is
// -1 when allowed): nothing refills while a scenario runs (it takes
// milliseconds against periods of a minute or an hour; the per-second
// scenario waits its RetryAfter on purpose). The transcripts must equal
// the expected one, the same for both servers.
func TestRedisRateLibrary(t *testing.T) {
	rl := start(t)
	ref := &server{Addr: redistest.Start(t)}
	want := redisRateExpected()
	got := map[string][]string{}
	for _, srv := range []struct {
		name string
		s    *server
	}{{"rlserver", rl}, {"redis-server", ref}} {
		for _, proto := range []int{2, 3} {
			name := fmt.Sprintf("%s/RESP%d", srv.name, proto)
			t.Run(name, func(t *testing.T) {
				c := srv.s.client(t, proto)
				if err := c.FlushAll(ctx).Err(); err != nil {
					t.Fatal(err)
				}
				lines := redisRateScenario(t, c)
				got[name] = lines
				compareTranscripts(t, "expected", want, name, lines)
			})
		}
	}
	for _, proto := range []string{"RESP2", "RESP3"} {
		a, b := got["rlserver/"+proto], got["redis-server/"+proto]
		if a != nil && b != nil {
			compareTranscripts(t, "redis-server/"+proto, b, "rlserver/"+proto, a)
		}
	}
}

var plainDecimal = regexp.MustCompile(`^[0-9]+\.[0-9]+$`)

// compareTranscripts fails listing every line that differs.
func compareTranscripts(t *testing.T, nameA string, a []string, nameB string, b []string) {
	t.Helper()
	var diffs []string
	for i := 0; i < len(a) || i < len(b); i++ {
		var la, lb string
		if i < len(a) {
			la = a[i]
		}
		if i < len(b) {
			lb = b[i]
		}
		if la != lb {
			diffs = append(diffs, fmt.Sprintf("line %d differs:\n  %s: %q\n  %s: %q", i+1, nameA, la, nameB, lb))
		}
	}
	if diffs != nil {
		t.Fatalf("%s\n%s:\n%s\n%s:\n%s", strings.Join(diffs, "\n"),
			nameA, strings.Join(a, "\n"), nameB, strings.Join(b, "\n"))
	}
}

// tenths renders a redis_rate duration: -1 as is, else rounded to the
// tenth of a second (the calls of a scenario are milliseconds apart).
func tenths(d time.Duration) string {
	if d == -1 {
		return "-1"
	}
	return fmt.Sprintf("%.1fs", math.Round(d.Seconds()*10)/10)
}

func fmtRate(what string, r *redis_rate.Result) string {
	return fmt.Sprintf("%s: allowed=%d remaining=%d retry=%s reset=%s",
		what, r.Allowed, r.Remaining, tenths(r.RetryAfter), tenths(r.ResetAfter))
}

func redisRateScenario(t *testing.T, c *redis.Client) []string {
	t.Helper()
	l := redis_rate.NewLimiter(c)
	var out []string
	check := func(what string, r *redis_rate.Result, err error) *redis_rate.Result {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if r.Allowed == 0 && r.RetryAfter <= 0 {
			t.Errorf("%s: denied with RetryAfter %v, want > 0", what, r.RetryAfter)
		}
		if r.Allowed > 0 && r.RetryAfter != -1 {
			t.Errorf("%s: allowed with RetryAfter %v, want -1", what, r.RetryAfter)
		}
		out = append(out, fmtRate(what, r))
		return r
	}
	note := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	ttl := func(key string) {
		d, err := c.TTL(ctx, "rate:"+key).Result()
		if err != nil {
			t.Fatal(err)
		}
		note("TTL rate:%s = %v", key, d)
	}
	exists := func(key string) {
		n, err := c.Exists(ctx, "rate:"+key).Result()
		if err != nil {
			t.Fatal(err)
		}
		note("EXISTS rate:%s = %d", key, n)
	}

	// PerHour(10): burst 10, one more every 6 minutes. 15 calls: the
	// first 10 allowed, Remaining 9..0, then 5 denied.
	hour := redis_rate.PerHour(10)
	allowed := 0
	for i := 1; i <= 15; i++ {
		r, err := l.Allow(ctx, "hour", hour)
		allowed += check(fmt.Sprintf("Allow hour #%d", i), r, err).Allowed
	}
	note("hour: %d of 15 allowed", allowed)
	ttl("hour")
	// The script SETs the theoretical arrival time, a Lua number
	// (seconds since 2017 with microseconds): redis.call converts it as
	// Redis does, "%.17g" (Redis 7.0; shortest round trip from 7.2), a
	// plain decimal such as 312657448.94957399, never an exponent form.
	tat, err := c.Get(ctx, "rate:hour").Result()
	if err != nil {
		t.Fatal(err)
	}
	note("GET rate:hour is a plain decimal: %v", plainDecimal.MatchString(tat))
	if !plainDecimal.MatchString(tat) {
		t.Errorf("GET rate:hour = %q: Redis stores the Lua number SET by the script as a plain decimal (%%.17g), e.g. 312657448.94957399", tat)
	}
	// Reset deletes the key: the next call starts a fresh burst.
	if err := l.Reset(ctx, "hour"); err != nil {
		t.Fatal(err)
	}
	exists("hour")
	r, err := l.Allow(ctx, "hour", hour)
	check("Allow hour after Reset", r, err)
	ttl("hour")

	// AllowN with n > burst: never allowed, and leaves no key.
	r, err = l.AllowN(ctx, "n", hour, 11)
	check("AllowN n 11", r, err)
	exists("n")
	r, err = l.AllowN(ctx, "n", hour, 3)
	check("AllowN n 3", r, err)
	r, err = l.AllowN(ctx, "n", hour, 8)
	check("AllowN n 8", r, err)
	r, err = l.AllowN(ctx, "n", hour, 7)
	check("AllowN n 7", r, err)
	r, err = l.AllowN(ctx, "n", hour, 1)
	check("AllowN n 1", r, err)
	ttl("n")

	// PerMinute(5) with a burst of 8: one more every 12 s.
	minute := redis_rate.PerMinute(5)
	minute.Burst = 8
	allowed = 0
	for i := 1; i <= 10; i++ {
		r, err := l.Allow(ctx, "minute", minute)
		allowed += check(fmt.Sprintf("Allow minute #%d", i), r, err).Allowed
	}
	note("minute: %d of 10 allowed", allowed)
	ttl("minute")

	// AllowAtMost takes what is left, up to n.
	atMost := redis_rate.PerMinute(5)
	r, err = l.AllowAtMost(ctx, "atmost", atMost, 3)
	check("AllowAtMost atmost 3", r, err)
	r, err = l.AllowAtMost(ctx, "atmost", atMost, 5)
	check("AllowAtMost atmost 5", r, err)
	r, err = l.AllowAtMost(ctx, "atmost", atMost, 1)
	check("AllowAtMost atmost 1", r, err)
	r, err = l.AllowAtMost(ctx, "atmost", atMost, 10)
	check("AllowAtMost atmost 10", r, err)
	ttl("atmost")

	// PerSecond(2): 2 allowed, the third denied; after its RetryAfter (at
	// most half a second) one more is allowed.
	sec := redis_rate.PerSecond(2)
	for i := 1; i <= 3; i++ {
		r, err = l.Allow(ctx, "second", sec)
		check(fmt.Sprintf("Allow second #%d", i), r, err)
	}
	if r.RetryAfter <= 0 || r.RetryAfter > 500*time.Millisecond {
		t.Fatalf("PerSecond(2): RetryAfter %v, want in (0, 500ms]", r.RetryAfter)
	}
	time.Sleep(r.RetryAfter + 5*time.Millisecond) // the refill under test
	r, err = l.Allow(ctx, "second", sec)
	check("Allow second after RetryAfter", r, err)
	// Its ResetAfter depends on how long the sleep overslept: left out.
	out[len(out)-1] = out[len(out)-1][:strings.Index(out[len(out)-1], " reset=")]
	return out
}

// redisRateExpected is what redis_rate answers on redis-server 7.
func redisRateExpected() []string {
	var w []string
	for i := 1; i <= 10; i++ {
		w = append(w, fmt.Sprintf("Allow hour #%d: allowed=1 remaining=%d retry=-1 reset=%d.0s", i, 10-i, 360*i))
	}
	for i := 11; i <= 15; i++ {
		w = append(w, fmt.Sprintf("Allow hour #%d: allowed=0 remaining=0 retry=360.0s reset=3600.0s", i))
	}
	w = append(w,
		"hour: 10 of 15 allowed",
		"TTL rate:hour = 1h0m0s",
		"GET rate:hour is a plain decimal: true",
		"EXISTS rate:hour = 0",
		"Allow hour after Reset: allowed=1 remaining=9 retry=-1 reset=360.0s",
		"TTL rate:hour = 6m0s",
		"AllowN n 11: allowed=0 remaining=0 retry=360.0s reset=0.0s",
		"EXISTS rate:n = 0",
		"AllowN n 3: allowed=3 remaining=7 retry=-1 reset=1080.0s",
		"AllowN n 8: allowed=0 remaining=0 retry=360.0s reset=1080.0s",
		"AllowN n 7: allowed=7 remaining=0 retry=-1 reset=3600.0s",
		"AllowN n 1: allowed=0 remaining=0 retry=360.0s reset=3600.0s",
		"TTL rate:n = 1h0m0s",
	)
	for i := 1; i <= 8; i++ {
		w = append(w, fmt.Sprintf("Allow minute #%d: allowed=1 remaining=%d retry=-1 reset=%d.0s", i, 8-i, 12*i))
	}
	for i := 9; i <= 10; i++ {
		w = append(w, fmt.Sprintf("Allow minute #%d: allowed=0 remaining=0 retry=12.0s reset=96.0s", i))
	}
	w = append(w,
		"minute: 8 of 10 allowed",
		"TTL rate:minute = 1m36s",
		"AllowAtMost atmost 3: allowed=3 remaining=2 retry=-1 reset=36.0s",
		"AllowAtMost atmost 5: allowed=2 remaining=0 retry=-1 reset=60.0s",
		"AllowAtMost atmost 1: allowed=0 remaining=0 retry=12.0s reset=60.0s",
		"AllowAtMost atmost 10: allowed=0 remaining=0 retry=12.0s reset=60.0s",
		"TTL rate:atmost = 1m0s",
		"Allow second #1: allowed=1 remaining=1 retry=-1 reset=0.5s",
		"Allow second #2: allowed=1 remaining=0 retry=-1 reset=1.0s",
		"Allow second #3: allowed=0 remaining=0 retry=0.5s reset=1.0s",
		"Allow second after RetryAfter: allowed=1 remaining=0 retry=-1",
	)
	return w
}
