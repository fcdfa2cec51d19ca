package integration

import (
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"
)

// Races: 64 goroutines on one go-redis client with 64 connections hammer one
// key (or one CL.ALL over two shards) with the clock frozen, so nothing
// refills or expires: exactly the limit must be admitted, and the key must
// then say it is exhausted.

// raceClient returns a frozen-clock server's client with a pool of 64.
func raceClient(t *testing.T, args ...string) *redis.Client {
	t.Helper()
	s := start(t, args...)
	c := redis.NewClient(&redis.Options{Addr: s.Addr, PoolSize: 64})
	t.Cleanup(func() { c.Close() })
	setClock(t, c, t0)
	return c
}

// allowedFirst reads a native decision (or CL.ALL reply): allowed is field 0.
func allowedFirst(v []any) bool { return v[0] == int64(1) }

func TestRaceLimiters(t *testing.T) {
	t.Parallel()
	c := raceClient(t)
	// Each command admits exactly 100 units; 64 goroutines x 8 calls = 512
	// requests for 1 unit, 64 x 8 x 3 units when n = 3 (33 admitted).
	for _, tc := range []struct {
		name     string
		cmd      string
		admitted func([]any) bool
		want     int64
		peek     string
		after    any
	}{
		{"TokenBucket", "CL.TOKENBUCKET k 100 1 1h", allowedFirst, 100,
			"CL.TOKENBUCKET k 100 1 1h 0", dec(1, 100, 0, 0, 360000000)},
		{"TokenBucketN3", "CL.TOKENBUCKET k 100 1 1h 3", allowedFirst, 33, // 99 taken, 1 left
			"CL.TOKENBUCKET k 100 1 1h 0", dec(1, 100, 1, 0, 356400000)},
		{"LeakyBucket", "CL.LEAKYBUCKET k 100 1 1h", allowedFirst, 100,
			"CL.LEAKYBUCKET k 100 1 1h 0", dec(1, 100, 0, 0, 360000000)},
		{"Fixed", "CL.WINDOW k 100 1h FIXED", allowedFirst, 100,
			"CL.WINDOW k 100 1h 0 FIXED", dec(1, 100, 0, 0, 3600000)},
		{"Sliding", "CL.WINDOW k 100 1h SLIDING", allowedFirst, 100,
			"CL.WINDOW k 100 1h 0 SLIDING", dec(1, 100, 0, 0, 7200000)},
		{"Log", "CL.WINDOW k 100 1h LOG", allowedFirst, 100,
			"CL.WINDOW k 100 1h 0 LOG", dec(1, 100, 0, 0, 3600000)},
		{"Acquire", "CL.ACQUIRE k 100 1h", allowedFirst, 100,
			"CL.ACQUIRE k 100 1h 0", []any{1, 100, 0, 0, 3600000, nil}},
		// CL.THROTTLE answers limited = 0 when admitted; limit = 99+1.
		{"Throttle", "CL.THROTTLE k 99 1 1h", func(v []any) bool { return v[0] == int64(0) }, 100,
			"CL.THROTTLE k 99 1 1h 0", []any{0, 100, 0, -1, 360000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			do(t, c, "FLUSHALL").equal("OK")
			if got := hammer(t, c, 8, tc.admitted, words(tc.cmd)...); got != tc.want {
				t.Fatalf("64 goroutines x 8 %q admitted %d, want exactly %d", tc.cmd, got, tc.want)
			}
			do(t, c, words(tc.peek)...).equal(tc.after)
		})
	}
}

// TestRaceAllTwoShards: CL.ALL over a token bucket of 100 and a FIXED window
// of 50 in different shards admits exactly 50, and, all or nothing, takes
// exactly 50 tokens, even while other goroutines take tokens directly.
func TestRaceAllTwoShards(t *testing.T) {
	t.Parallel()
	c := raceClient(t, "--shards", fmt.Sprint(numShards))
	ka, kb := twoShards(t, c, "race:")
	all := words(fmt.Sprintf("CL.ALL 2 TOKENBUCKET %s 100 1 1h FIXED %s 50 1h", ka, kb))
	if got := hammer(t, c, 8, allowedFirst, all...); got != 50 {
		t.Fatalf("64 goroutines x 8 CL.ALL admitted %d, want exactly 50", got)
	}
	do(t, c, "CL.TOKENBUCKET", ka, 100, 1, "1h", 0).equal(dec(1, 100, 50, 0, 180000000))
	do(t, c, "CL.WINDOW", kb, 50, "1h", 0, "FIXED").equal(dec(1, 50, 0, 0, 3600000))

	// Mixed: CL.ALL (token bucket 100 + FIXED 1000, which never denies)
	// races with direct takes of 1 token; together they admit exactly 100
	// tokens, and the window counts exactly the CL.ALL admissions.
	do(t, c, "FLUSHALL").equal("OK")
	all = words(fmt.Sprintf("CL.ALL 2 TOKENBUCKET %s 100 1 1h FIXED %s 1000 1h", ka, kb))
	direct := []any{"CL.TOKENBUCKET", ka, 100, 1, "1h"}
	done := make(chan int64)
	go func() { done <- hammer(t, c, 8, allowedFirst, direct...) }()
	viaAll := hammer(t, c, 8, allowedFirst, all...)
	if got := viaAll + <-done; got != 100 {
		t.Fatalf("CL.ALL (%d) and CL.TOKENBUCKET together admitted %d, want exactly 100", viaAll, got)
	}
	// The window exists only if some CL.ALL was admitted (the direct takes
	// may win every token).
	reset := int64(3600000)
	if viaAll == 0 {
		reset = 0
	}
	do(t, c, "CL.WINDOW", kb, 1000, "1h", 0, "FIXED").equal(dec(1, 1000, 1000-viaAll, 0, reset))
}
