package integration

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/internal/redistest"
)

// laravelRedisDir returns where scripts/setup.sh unpacks Laravel 8.83's
// Redis component (Debian's php-illuminate-redis and the packages its
// autoloader requires; or $RLSERVER_LARAVEL_REDIS): not installed, since
// installing Debian's php-laravel-framework would remove the php-psr
// extension the PHP SDK's tests need.
func laravelRedisDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("RLSERVER_LARAVEL_REDIS")
	if dir == "" {
		abs, err := filepath.Abs(filepath.Join("..", ".cache", "laravel-redis"))
		if err != nil {
			t.Fatal(err)
		}
		dir = abs
	}
	if _, err := os.Stat(filepath.Join(dir, "Illuminate", "Redis", "Limiters", "DurationLimiter.php")); err != nil {
		t.Fatalf("Laravel's Redis component (Debian's php-illuminate-redis, unpacked) is missing (%v): run ./scripts/setup.sh", err)
	}
	return dir
}

// laravelSeconds matches the times check.php prints in whole seconds from
// now: a window's end, a key's TTL.
var laravelSeconds = regexp.MustCompile(`\b(decays_in|remaining_in|ttl)=(-?\d+)`)

// normalizeLaravel replaces each time of about a minute (55 to 60 s) by
// "~60" and of about two (115 to 120 s) by "~120", as time passes between
// the call and the print; others are left as they are, and differ from the
// expected lines.
func normalizeLaravel(line string) string {
	return laravelSeconds.ReplaceAllStringFunc(line, func(m string) string {
		sub := laravelSeconds.FindStringSubmatch(m)
		n, _ := strconv.Atoi(sub[2])
		switch {
		case n >= 55 && n <= 60:
			return sub[1] + "=~60"
		case n >= 115 && n <= 120:
			return sub[1] + "=~120"
		}
		return m
	})
}

// laravelExpected is what check.php must print, times normalized: the
// outcomes on Redis.
var laravelExpected = []string{
	// DurationLimiter, 3 per 60 s: three acquired, then refused; the
	// hash's count goes on counting refused calls, and it expires after
	// twice the decay.
	"duration acquire1 acquired=true remaining=2 decays_in=~60",
	"duration acquire2 acquired=true remaining=1 decays_in=~60",
	"duration acquire3 acquired=true remaining=0 decays_in=~60",
	"duration acquire4 acquired=false remaining=0 decays_in=~60",
	"duration acquire5 acquired=false remaining=0 decays_in=~60",
	"duration hash count=5 window=60 type=hash ttl=~120",
	// tooManyAttempts: maxLocks - count, -2.
	"duration tooManyAttempts=true remaining=-2 decays_in=~60",
	// On a missing key its script answers {0, now + decay}.
	"duration fresh tooManyAttempts=false decaysAt=0 remaining_in=~60",
	"duration fresh type=none",
	// clear() deletes the hash; the next call starts a window.
	"duration clear type=none",
	"duration after-clear acquired=true remaining=2 decays_in=~60",
	// block(0): one try, then LimiterTimeoutException.
	`duration block1 "ran"`,
	"duration block2 timeout",
	// A 1 s window: refused within it, admitted once it is over (block(5)
	// polling).
	"duration short1 acquired=true remaining=1",
	"duration short2 acquired=true remaining=0",
	"duration short3 acquired=false remaining=0",
	`duration short block(5) "ran" waited=yes`,
	// Redis::throttle()->allow(2)->every(60).
	"duration builder1 ran",
	"duration builder2 ran",
	`duration builder3 failed: Illuminate\Contracts\Redis\LimiterTimeoutException`,
	// ConcurrencyLimiter, 2 slots: nested blocks take slot 1, then 2, the
	// third is refused; the slots are strings expiring after releaseAfter,
	// deleted on release, also when the callback throws.
	"concurrency outer holds type=string ttl=~60 / type=none",
	"concurrency middle holds type=string ttl=~60 / type=string ttl=~60",
	`concurrency nested "inner timeout"`,
	"concurrency released type=none / type=none",
	"concurrency throw boom type=none",
	// block() without a callback keeps its slot.
	"concurrency held1 true",
	"concurrency held2 true",
	"concurrency held3 timeout",
	"concurrency held type=string ttl=~60 / type=string ttl=~60",
	// A slot held for 1 s: block(5) gets it once it expires.
	"concurrency brief1 true",
	`concurrency brief2 block(5) "ran" waited=yes`,
	// Redis::funnel()->limit(1), nested.
	`concurrency builder outer ran, inner failed: Illuminate\Contracts\Redis\LimiterTimeoutException`,
	"concurrency builder type=none",
}

// runLaravelCheck runs testdata/laravel/check.php against addr and returns
// its transcript's lines, times normalized; it fails the test when the
// script fails or writes to stderr.
func runLaravelCheck(t *testing.T, dir, name, addr string) []string {
	t.Helper()
	runCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(runCtx, "php", "testdata/laravel/check.php", dir, addr)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: php check.php: %v\nstderr:\n%s\nstdout:\n%s", name, err, stderr.String(), stdout.String())
	}
	if stderr.Len() > 0 {
		t.Errorf("%s: check.php wrote to stderr:\n%s", name, stderr.String())
	}
	var lines []string
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		lines = append(lines, normalizeLaravel(line))
	}
	return lines
}

// TestLaravelLimiters runs Laravel 8.83's Illuminate\Redis\Limiters
// (Debian's php-illuminate-redis, from the php-laravel-framework source,
// unchanged) without a Laravel application: a RedisManager with no
// container builds the PhpRedisConnection (phpredis) with Laravel's default
// key prefix, and testdata/laravel/check.php drives DurationLimiter
// (acquire, tooManyAttempts, clear, block, a window's end, the throttle()
// builder) and ConcurrencyLimiter (nested block()s, release, a throwing
// callback, slots held until they expire, the funnel() builder) against
// redis-server and against rlserver. Each must print exactly
// laravelExpected, the two transcripts must be the same, and the keys left
// must be the same.
//
// What the library sends (MONITOR on redis-server): SELECT 0 on connecting;
// EVAL (never EVALSHA) of DurationLimiter's script with 1 key and ARGV
// microtime(true), time(), decay, maxLocks, whose script calls EXISTS,
// HMSET key start <time> end <time+decay> count 1 and EXPIRE key
// <decay*2> (numbers computed in Lua), HGET start/end/count and HINCRBY,
// comparing microtime with HGET's strings as Lua strings, and returns a
// Lua boolean (false: a nil in the reply); its tooManyAttempts script
// (EXISTS, HGET); DEL for clear(). ConcurrencyLimiter: EVAL with the
// slots as KEYS of MGET over unpack(KEYS), then SET slot <id> EX
// <releaseAfter> and a string built from ARGV, or no return value (nil);
// its release script GET then DEL.
func TestLaravelLimiters(t *testing.T) {
	dir := laravelRedisDir(t)
	if _, err := exec.LookPath("php"); err != nil {
		t.Fatalf("php is not installed (%v): run ./scripts/setup.sh", err)
	}
	if out, err := exec.Command("php", "-m").Output(); err != nil || !strings.Contains("\n"+string(out), "\nredis\n") {
		t.Fatalf("php's redis extension (php-redis) is not loaded (%v): run ./scripts/setup.sh", err)
	}

	ours := start(t)
	theirs := redistest.Start(t)
	servers := []struct{ name, addr string }{{"redis-server", theirs}, {"rlserver", ours.Addr}}

	transcripts := map[string][]string{}
	for _, srv := range servers {
		got := runLaravelCheck(t, dir, srv.name, srv.addr)
		transcripts[srv.name] = got
		if strings.Join(got, "\n") != strings.Join(laravelExpected, "\n") {
			t.Errorf("%s: check.php printed:\n%s\nwant:\n%s", srv.name, strings.Join(got, "\n"), strings.Join(laravelExpected, "\n"))
		}

		// The keys left: the duration limiters' hashes (count, a window of
		// decay seconds, expiring after twice that) and the held slots.
		c := redis.NewClient(&redis.Options{Addr: srv.addr, Protocol: 2})
		defer c.Close()
		for key, want := range map[string]struct {
			count  string
			window int
			ttl    time.Duration
		}{
			"laravel_database_dl":         {"1", 60, 120 * time.Second},
			"laravel_database_dl-block":   {"2", 60, 120 * time.Second},
			"laravel_database_dl-builder": {"3", 60, 120 * time.Second},
		} {
			h, err := c.HGetAll(ctx, key).Result()
			from, _ := strconv.Atoi(h["start"])
			to, _ := strconv.Atoi(h["end"])
			if err != nil || h["count"] != want.count || from == 0 || to-from != want.window {
				t.Errorf("%s: HGETALL %s = %v, %v; want count %s and a %d s window", srv.name, key, h, err, want.count, want.window)
			}
			if ttl, err := c.TTL(ctx, key).Result(); err != nil || ttl > want.ttl || ttl < want.ttl-10*time.Second {
				t.Errorf("%s: TTL %s = %v, %v; want about %v", srv.name, key, ttl, err, want.ttl)
			}
		}
		for _, key := range []string{"laravel_database_cl-held1", "laravel_database_cl-held2"} {
			if v, err := c.Get(ctx, key).Result(); err != nil || len(v) != 20 {
				t.Errorf("%s: GET %s = %q, %v; want the holder's 20-character id", srv.name, key, v, err)
			}
			if ttl, err := c.TTL(ctx, key).Result(); err != nil || ttl > time.Minute || ttl < 50*time.Second {
				t.Errorf("%s: TTL %s = %v, %v; want about a minute", srv.name, key, ttl, err)
			}
		}
		if n, err := c.Exists(ctx, "laravel_database_cl1", "laravel_database_cl2", "laravel_database_cl-builder1", "laravel_database_cl-brief1", "laravel_database_dl-fresh").Result(); err != nil || n != 0 {
			t.Errorf("%s: EXISTS of the released slots and the unused limiter = %d, %v; want 0", srv.name, n, err)
		}
	}

	if a, b := strings.Join(transcripts["rlserver"], "\n"), strings.Join(transcripts["redis-server"], "\n"); a != b {
		t.Errorf("rlserver and redis-server differ:\nrlserver:\n%s\nredis-server:\n%s", a, b)
	}
}
