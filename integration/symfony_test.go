package integration

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/internal/redistest"
)

// symfonyCacheDir returns where scripts/setup.sh unpacks Debian's
// php-symfony-cache and the packages its autoloader requires (or
// $RLSERVER_SYMFONY_CACHE): they are not installed, since installing them
// would remove the php-psr extension the PHP SDK's tests need.
func symfonyCacheDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("RLSERVER_SYMFONY_CACHE")
	if dir == "" {
		abs, err := filepath.Abs(filepath.Join("..", ".cache", "symfony-cache"))
		if err != nil {
			t.Fatal(err)
		}
		dir = abs
	}
	if _, err := os.Stat(filepath.Join(dir, "Symfony", "Component", "Cache", "autoload.php")); err != nil {
		t.Fatalf("Symfony Cache (Debian's php-symfony-cache, unpacked) is missing (%v): run ./scripts/setup.sh", err)
	}
	return dir
}

// symfonyRow is one line limit.php prints: a RateLimit, or a pool check.
type symfonyRow struct {
	Limiter   string `json:"limiter"`
	Step      string `json:"step"`
	Tokens    int    `json:"tokens"`
	Accepted  bool   `json:"accepted"`
	Remaining int    `json:"remaining"`
	Limit     int    `json:"limit"`
	RetryIn   int    `json:"retry_in"`
	Has       bool   `json:"has"`
	Cleared   bool   `json:"cleared"`
}

// String is the row without RetryIn, which depends on the clock.
func (r symfonyRow) String() string {
	if r.Tokens == 0 {
		return fmt.Sprintf("%s %s has=%v cleared=%v", r.Limiter, r.Step, r.Has, r.Cleared)
	}
	return fmt.Sprintf("%s %s tokens=%d accepted=%v remaining=%d limit=%d", r.Limiter, r.Step, r.Tokens, r.Accepted, r.Remaining, r.Limit)
}

// runSymfonyLimit runs testdata/symfony/limit.php in phase against addr,
// with the limiters named.
func runSymfonyLimit(t *testing.T, cacheDir, addr, phase string, limiters []symfonyLimiter) []symfonyRow {
	t.Helper()
	runCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var names []string
	for _, l := range limiters {
		names = append(names, l.name)
	}
	cmd := exec.CommandContext(runCtx, "php", "testdata/symfony/limit.php", cacheDir, addr, phase, strings.Join(names, ","))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("php limit.php %s against %s: %v\nstderr:\n%s\nstdout:\n%s", phase, addr, err, stderr.String(), stdout.String())
	}
	var rows []symfonyRow
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		var r symfonyRow
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("php limit.php %s: line %q: %v\nstderr:\n%s", phase, line, err, stderr.String())
		}
		rows = append(rows, r)
	}
	return rows
}

// symfonyLimiter is one of limit.php's limiters, with its policy's class
// (in the stored value) and the TTL CacheStorage gives its key: the
// window's interval, the sliding window's end plus an interval, the time
// to refill the whole bucket (5 tokens at 1 an hour).
type symfonyLimiter struct {
	name, class string
	ttl         time.Duration
}

var (
	// The three policies on CacheStorage alone (no lock).
	symfonyCacheLimiters = []symfonyLimiter{
		{"fixed_window", `Symfony\Component\RateLimiter\Policy\Window`, time.Hour},
		{"sliding_window", `Symfony\Component\RateLimiter\Policy\SlidingWindow`, 2 * time.Hour},
		{"token_bucket", `Symfony\Component\RateLimiter\Policy\TokenBucket`, 5 * time.Hour},
	}
	// The token bucket under symfony/lock's RedisStore.
	symfonyLockedLimiters = []symfonyLimiter{
		{"token_bucket_locked", `Symfony\Component\RateLimiter\Policy\TokenBucket`, 5 * time.Hour},
	}
)

// symfonyExpected returns what limit.php must print in phase, with the
// expected retry_in of each row (0 or an hour; -1 for no RateLimit).
func symfonyExpected(phase string, limiters []symfonyLimiter) (rows []symfonyRow, retryIn []int) {
	const hour = 3600
	for _, l := range limiters {
		add := func(step string, tokens int, accepted bool, remaining int) {
			rows = append(rows, symfonyRow{Limiter: l.name, Step: step, Tokens: tokens, Accepted: accepted, Remaining: remaining, Limit: 5})
			// The sliding window's retryAfter is always its window's end;
			// the others' is now when accepted, else when enough tokens are
			// back (an hour for a token, the fixed window's end).
			if accepted && l.name != "sliding_window" {
				retryIn = append(retryIn, 0)
			} else {
				retryIn = append(retryIn, hour)
			}
		}
		switch phase {
		case "consume":
			// Limit 5: 1, 2 and 1 accepted, 2 refused (1 left), 1 accepted,
			// then refused, nothing left and nothing refilled.
			add("consume0", 1, true, 4)
			add("consume1", 2, true, 2)
			add("consume2", 1, true, 1)
			add("consume3", 2, false, 1)
			add("consume4", 1, true, 0)
			add("consume5", 1, false, 0)
			add("consume6", 1, false, 0)
		case "again":
			// A new process reads the state back: still refused; reset()
			// deletes it, and the next call starts afresh.
			add("again", 1, false, 0)
			add("after-reset", 1, true, 4)
			rows = append(rows, symfonyRow{Limiter: l.name, Step: "has-item", Has: true})
			retryIn = append(retryIn, -1)
		}
	}
	if phase == "again" {
		rows = append(rows, symfonyRow{Step: "clear", Cleared: true})
		retryIn = append(retryIn, -1)
		for _, l := range limiters {
			rows = append(rows, symfonyRow{Limiter: l.name, Step: "has-item-after-clear", Has: false})
			retryIn = append(retryIn, -1)
		}
	}
	return rows, retryIn
}

// checkSymfonyRows fails on any row of got that is not the expected one,
// with retry_in within a minute below the expected value (time passes
// between the calls) or a second above it (a second boundary crossed
// within a call).
func checkSymfonyRows(t *testing.T, server, phase string, limiters []symfonyLimiter, got []symfonyRow) {
	t.Helper()
	want, retryIn := symfonyExpected(phase, limiters)
	if len(got) != len(want) {
		t.Errorf("%s, phase %s: %d rows, want %d:\n%s", server, phase, len(got), len(want), symfonyLines(got))
		return
	}
	for i := range want {
		if got[i].String() != want[i].String() {
			t.Errorf("%s, phase %s, row %d:\n got %s\nwant %s", server, phase, i, got[i], want[i])
			continue
		}
		r := retryIn[i]
		if r < 0 {
			continue
		}
		if lo := max(r-60, 0); got[i].RetryIn < lo || got[i].RetryIn > r+1 {
			t.Errorf("%s, phase %s, row %d (%s): retry_in %d s, want %d to %d", server, phase, i, got[i], got[i].RetryIn, lo, r+1)
		}
	}
}

func symfonyLines(rows []symfonyRow) string {
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "  %s retry_in=%d\n", r, r.RetryIn)
	}
	return b.String()
}

// TestSymfonyRateLimiterOnRedisAdapter runs Symfony's RateLimiter 5.4
// (Debian's php-symfony-rate-limiter, unchanged) with its CacheStorage on a
// Symfony Cache RedisAdapter (phpredis) against rlserver and against
// redis-server: the fixed window, the sliding window and the token bucket,
// 5 per hour, must accept and refuse exactly the same calls with the same
// remaining tokens on both, keep their state as string keys with the TTLs
// CacheStorage gives, read it back from a second process, and forget it on
// reset() and on the pool's clear(). Then the token bucket again under
// symfony/lock's RedisStore (Lua scripts on a sorted set), as
// framework.rate_limiter runs with a lock_factory on Redis.
//
// What the library sends (MONITOR on redis-server): MGET to fetch, SETEX in
// a pipeline to save, UNLINK to reset, EXISTS for hasItem(), INFO Server
// then SCAN 0 COUNT 1000 MATCH rl:* and UNLINK for clear(); the lock's EVAL
// scripts call TYPE (reading .ok of its status reply), TIME,
// ZREMRANGEBYSCORE, ZSCORE, ZCOUNT, ZADD, ZREM, ZREVRANGE key 0 0
// WITHSCORES and PEXPIREAT, and one SET PX probes TIME in scripts.
func TestSymfonyRateLimiterOnRedisAdapter(t *testing.T) {
	cacheDir := symfonyCacheDir(t)
	if _, err := exec.LookPath("php"); err != nil {
		t.Fatalf("php is not installed (%v): run ./scripts/setup.sh", err)
	}
	if out, err := exec.Command("php", "-m").Output(); err != nil || !strings.Contains("\n"+string(out), "\nredis\n") {
		t.Fatalf("php's redis extension (php-redis) is not loaded (%v): run ./scripts/setup.sh", err)
	}
	t.Run("CacheStorage", func(t *testing.T) {
		testSymfonyLimiters(t, cacheDir, symfonyCacheLimiters)
	})
	t.Run("RedisStoreLock", func(t *testing.T) {
		testSymfonyLimiters(t, cacheDir, symfonyLockedLimiters)
	})
}

// testSymfonyLimiters runs limit.php's two phases with limiters against a
// fresh rlserver and a fresh redis-server and checks the outcomes and the
// keys left.
func testSymfonyLimiters(t *testing.T, cacheDir string, limiters []symfonyLimiter) {
	ours := start(t)
	theirs := redistest.Start(t)
	servers := []struct {
		name, addr string
	}{{"redis-server", theirs}, {"rlserver", ours.Addr}}

	outputs := map[string][]symfonyRow{}
	for _, srv := range servers {
		c := redis.NewClient(&redis.Options{Addr: srv.addr, Protocol: 2})
		t.Cleanup(func() { c.Close() })

		rows := runSymfonyLimit(t, cacheDir, srv.addr, "consume", limiters)
		checkSymfonyRows(t, srv.name, "consume", limiters, rows)
		outputs[srv.name] = rows

		// The state CacheStorage left: one string per limiter, under the
		// pool's namespace and the sha1 of the limiter's id, expiring.
		for _, l := range limiters {
			sum := sha1.Sum([]byte(l.name + "-client"))
			key := "rl:" + hex.EncodeToString(sum[:])
			if typ, err := c.Type(ctx, key).Result(); err != nil || typ != "string" {
				t.Errorf("%s: TYPE %s (%s) = %q, %v; want string", srv.name, key, l.name, typ, err)
			}
			ttl, err := c.TTL(ctx, key).Result()
			if err != nil || ttl > l.ttl || ttl < l.ttl-time.Minute {
				t.Errorf("%s: TTL %s (%s) = %v, %v; want about %v", srv.name, key, l.name, ttl, err, l.ttl)
			}
			if v, err := c.Get(ctx, key).Result(); err != nil || !strings.Contains(v, l.class) {
				t.Errorf("%s: GET %s (%s) = %q, %v; want a serialized %s", srv.name, key, l.name, v, err, l.class)
			}
			// A lock is released after each call: its sorted set is gone.
			if n, err := c.Exists(ctx, l.name+"-client").Result(); err != nil || n != 0 {
				t.Errorf("%s: EXISTS %s-client = %d, %v; want 0 (no lock left)", srv.name, l.name, n, err)
			}
		}

		again := runSymfonyLimit(t, cacheDir, srv.addr, "again", limiters)
		checkSymfonyRows(t, srv.name, "again", limiters, again)
		outputs[srv.name] = append(outputs[srv.name], again...)

		// clear() removed the namespace's keys.
		if keys, err := c.Keys(ctx, "rl:*").Result(); err != nil || len(keys) != 0 {
			t.Errorf("%s: KEYS rl:* = %q, %v after the pool's clear(); want none", srv.name, keys, err)
		}
	}

	// Beyond the expected outcomes: the two servers gave the same ones.
	if a, b := symfonyLines(outputs["rlserver"]), symfonyLines(outputs["redis-server"]); stripRetry(a) != stripRetry(b) {
		t.Errorf("rlserver and redis-server differ:\nrlserver:\n%s\nredis-server:\n%s", a, b)
	}
}

// stripRetry drops the retry_in fields of symfonyLines's text.
func stripRetry(s string) string {
	var b strings.Builder
	for _, line := range strings.Split(s, "\n") {
		if i := strings.Index(line, " retry_in="); i >= 0 {
			line = line[:i]
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}
