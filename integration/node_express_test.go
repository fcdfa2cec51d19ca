package integration

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/internal/redistest"
)

// resetSeconds matches the reset times check.js prints, in whole seconds
// from now: the draft-6/7 reset, Retry-After, X-RateLimit-Reset's distance
// from now and getKey's resetTime.
var resetSeconds = regexp.MustCompile(`\b(reset|retry|x-reset|resetIn)=(-?\d+)`)

// normalizeResets replaces each reset time of a 60 s window (50 to 61 s:
// time passes, and X-RateLimit-Reset is rounded up to a whole Unix second)
// by "~60", and reports any other, but 0 for a key that is not there.
func normalizeResets(line string) (string, bool) {
	ok := true
	out := resetSeconds.ReplaceAllStringFunc(line, func(m string) string {
		sub := resetSeconds.FindStringSubmatch(m)
		n, _ := strconv.Atoi(sub[2])
		if n >= 50 && n <= 61 {
			return sub[1] + "=~60"
		}
		if n != 0 {
			ok = false
		}
		return m
	})
	return out, ok
}

// expressExpected is what check.js must print, reset times normalized: the
// outcomes on Redis.
var expressExpected = []string{
	// Limit 5 a minute: five admitted, then 429 with Retry-After.
	"a1 / A 200 policy=5;w=60 ratelimit=[limit=5, remaining=4, reset=~60] x-limit=5 x-remaining=4 x-reset=~60",
	"a2 / A 200 policy=5;w=60 ratelimit=[limit=5, remaining=3, reset=~60] x-limit=5 x-remaining=3 x-reset=~60",
	"a3 / A 200 policy=5;w=60 ratelimit=[limit=5, remaining=2, reset=~60] x-limit=5 x-remaining=2 x-reset=~60",
	"a4 / A 200 policy=5;w=60 ratelimit=[limit=5, remaining=1, reset=~60] x-limit=5 x-remaining=1 x-reset=~60",
	"a5 / A 200 policy=5;w=60 ratelimit=[limit=5, remaining=0, reset=~60] x-limit=5 x-remaining=0 x-reset=~60",
	"a6 / A 429 policy=5;w=60 ratelimit=[limit=5, remaining=0, reset=~60] x-limit=5 x-remaining=0 x-reset=~60 retry=~60",
	"a7 / A 429 policy=5;w=60 ratelimit=[limit=5, remaining=0, reset=~60] x-limit=5 x-remaining=0 x-reset=~60 retry=~60",
	// Another client, its own count.
	"b1 / B 200 policy=5;w=60 ratelimit=[limit=5, remaining=4, reset=~60] x-limit=5 x-remaining=4 x-reset=~60",
	// The get script: refused requests counted too; a missing key is
	// GET's nil (NaN hits) and PTTL's -2 ms.
	"a getKey A hits=7 resetIn=~60",
	"b getKey B hits=1 resetIn=~60",
	"nobody getKey nobody hits=NaN resetIn=0",
	// resetKey (DEL): A starts afresh.
	"resetKey A",
	"a-reset getKey A hits=NaN resetIn=0",
	"a-again1 / A 200 policy=5;w=60 ratelimit=[limit=5, remaining=4, reset=~60] x-limit=5 x-remaining=4 x-reset=~60",
	"a-again2 / A 200 policy=5;w=60 ratelimit=[limit=5, remaining=3, reset=~60] x-limit=5 x-remaining=3 x-reset=~60",
	"a-again3 / A 200 policy=5;w=60 ratelimit=[limit=5, remaining=2, reset=~60] x-limit=5 x-remaining=2 x-reset=~60",
	"a-again getKey A hits=3 resetIn=~60",
	// skipFailedRequests: each 500 counted, then given back (DECR), so
	// limit 3 never refuses.
	"fail1 /fail C 500 policy=3;w=60 ratelimit=[limit=3, remaining=2, reset=~60]",
	"fail2 /fail C 500 policy=3;w=60 ratelimit=[limit=3, remaining=2, reset=~60]",
	"fail3 /fail C 500 policy=3;w=60 ratelimit=[limit=3, remaining=2, reset=~60]",
	"fail4 /fail C 500 policy=3;w=60 ratelimit=[limit=3, remaining=2, reset=~60]",
	"fail5 /fail C 500 policy=3;w=60 ratelimit=[limit=3, remaining=2, reset=~60]",
	"fail getKey C hits=0 resetIn=~60",
	// resetExpiryOnChange (PEXPIRE on each hit), draft-6 headers: 2 a
	// minute.
	"slide1 /slide D 200 policy=2;w=60 limit=2 remaining=1 reset=~60",
	"slide2 /slide D 200 policy=2;w=60 limit=2 remaining=0 reset=~60",
	"slide3 /slide D 429 policy=2;w=60 limit=2 remaining=0 reset=~60 retry=~60",
	"slide4 /slide D 429 policy=2;w=60 limit=2 remaining=0 reset=~60 retry=~60",
	"slide getKey D hits=4 resetIn=~60",
}

// runExpressCheck runs testdata/node-express/check.js against addr and
// returns its transcript's lines, reset times normalized; it fails the test
// when the script fails, writes to stderr, or prints a reset time that is
// not about a minute.
func runExpressCheck(t *testing.T, name, addr string) []string {
	t.Helper()
	runCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(runCtx, "node", "testdata/node-express/check.js", "redis://"+addr)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: node check.js: %v\nstderr:\n%s\nstdout:\n%s", name, err, stderr.String(), stdout.String())
	}
	if stderr.Len() > 0 {
		t.Errorf("%s: check.js wrote to stderr:\n%s", name, stderr.String())
	}
	var lines []string
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		norm, ok := normalizeResets(line)
		if !ok {
			t.Errorf("%s: a reset time that is not about 60 s: %q", name, line)
		}
		lines = append(lines, norm)
	}
	return lines
}

// TestExpressRateLimitRedis runs express-rate-limit 7.5.1 with
// rate-limit-redis 4.3.1's RedisStore on ioredis 5.11.1 (npm, pinned in
// testdata/node-express's lockfile), unchanged, in an express 5 app driven
// over HTTP, against redis-server and against rlserver: each must print
// exactly expressExpected (five of seven admitted at 5 a minute, the
// RateLimit headers, getKey's counts, resetKey, skipFailedRequests'
// decrements, resetExpiryOnChange), the two transcripts must be the same,
// and the counters left must be the same strings with a minute's expiry.
//
// What the library sends (MONITOR on redis-server): SCRIPT LOAD of its
// increment and get scripts when each store is made; EVALSHA <increment> 1
// <prefix><key> <0|1> 60000 per request, whose script calls PTTL, then SET
// key 1 PX 60000 or INCR (and PEXPIRE with resetExpiryOnChange); EVALSHA
// <get> 1 key for getKey (GET and PTTL); DECR for a failed request given
// back; DEL for resetKey.
func TestExpressRateLimitRedis(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("node is not installed (%v): run ./scripts/setup.sh", err)
	}
	for _, pkg := range []string{"express", "express-rate-limit", "rate-limit-redis", "ioredis"} {
		if _, err := os.Stat("testdata/node-express/node_modules/" + pkg + "/package.json"); err != nil {
			t.Fatalf("%s is not installed in integration/testdata/node-express (%v): run ./scripts/setup.sh", pkg, err)
		}
	}

	ours := start(t)
	theirs := redistest.Start(t)
	servers := []struct{ name, addr string }{{"redis-server", theirs}, {"rlserver", ours.Addr}}

	transcripts := map[string][]string{}
	for _, srv := range servers {
		got := runExpressCheck(t, srv.name, srv.addr)
		transcripts[srv.name] = got
		if strings.Join(got, "\n") != strings.Join(expressExpected, "\n") {
			t.Errorf("%s: check.js printed:\n%s\nwant:\n%s", srv.name, strings.Join(got, "\n"), strings.Join(expressExpected, "\n"))
		}

		// The counters the store left: strings, expiring within a minute.
		c := redis.NewClient(&redis.Options{Addr: srv.addr, Protocol: 2})
		defer c.Close()
		for key, want := range map[string]string{"rl:A": "3", "rl:B": "1", "rlfail:C": "0", "rlslide:D": "4"} {
			if v, err := c.Get(ctx, key).Result(); err != nil || v != want {
				t.Errorf("%s: GET %s = %q, %v; want %q", srv.name, key, v, err, want)
			}
			if ttl, err := c.PTTL(ctx, key).Result(); err != nil || ttl <= 0 || ttl > time.Minute {
				t.Errorf("%s: PTTL %s = %v, %v; want within a minute", srv.name, key, ttl, err)
			}
		}
		if n, err := c.Exists(ctx, "rl:nobody").Result(); err != nil || n != 0 {
			t.Errorf("%s: EXISTS rl:nobody = %d, %v; want 0 (getKey creates nothing)", srv.name, n, err)
		}
	}

	if a, b := strings.Join(transcripts["rlserver"], "\n"), strings.Join(transcripts["redis-server"], "\n"); a != b {
		t.Errorf("rlserver and redis-server differ:\nrlserver:\n%s\nredis-server:\n%s", a, b)
	}
}
