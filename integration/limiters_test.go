package integration

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// Integration tests of the native limiter commands through go-redis, time
// driven with DEBUG CLOCK. Every expected reply is computed by hand from
// /work/shared/spec/commands.md; the decision is
// [allowed, limit, remaining, retry_after_ms, reset_after_ms].

// fresh empties the keyspace and freezes the clock at t0.
func fresh(t *testing.T, c *redis.Client) {
	t.Helper()
	do(t, c, "FLUSHALL").equal("OK")
	setClock(t, c, t0)
}

func TestLimiterTokenBucket(t *testing.T) {
	t.Parallel()
	s := start(t)
	protocols(t, func(t *testing.T, proto int) {
		c := s.client(t, proto)
		fresh(t, c)
		runSteps(t, c, []limStep{
			{words("CL.TOKENBUCKET tb 5 1 1s"), dec(1, 5, 4, 0, 1000)}, // 1 token short of full: 1 s
			{words("PTTL tb"), 1000},
			{words("TYPE tb"), "tokenbucket"},
			{words("CL.TOKENBUCKET tb 5 1 1s 4"), dec(1, 5, 0, 0, 5000)},
			{words("CL.TOKENBUCKET tb 5 1 1s"), dec(0, 5, 0, 1000, 5000)},
			{words("CL.TOKENBUCKET tb 5 1 1s 0"), dec(1, 5, 0, 0, 5000)},
			{words("CL.TOKENBUCKET tb 5 1 1s 6"), dec(0, 5, 0, -1, 5000)}, // n > capacity: never
			{words("PTTL tb"), 5000},
			{words("DEBUG CLOCK ADVANCE 1500"), "OK"},
			{words("CL.TOKENBUCKET tb 5 1 1s 0"), dec(1, 5, 1, 0, 3500)},   // 1.5 tokens, floor 1
			{words("CL.TOKENBUCKET tb 5 1 1s 2"), dec(0, 5, 1, 500, 3500)}, // 0.5 token short
			{words("CL.TOKENBUCKET tb 5 1 1s"), dec(1, 5, 0, 0, 4500)},     // 0.5 left: 4.5 s to full
		})
		expiresIn(t, c, "tb", 4500)

		// 3 per second refills one token every 333.33... ms, exactly: takes
		// at +334, +667 and +1000 ms all succeed (1.002, 1.001, 1.000
		// tokens); with per-call rounding drift the last would fail.
		runSteps(t, c, []limStep{
			{words("CL.TOKENBUCKET ex 3 3 1s 3"), dec(1, 3, 0, 0, 1000)},
			{words("CL.TOKENBUCKET ex 3 3 1s"), dec(0, 3, 0, 334, 1000)}, // 333.33 ms, rounded up
			{words("DEBUG CLOCK ADVANCE 333"), "OK"},
			{words("CL.TOKENBUCKET ex 3 3 1s 0"), dec(1, 3, 0, 0, 667)}, // 0.999 tokens
			{words("DEBUG CLOCK ADVANCE 1"), "OK"},
			{words("CL.TOKENBUCKET ex 3 3 1s"), dec(1, 3, 0, 0, 1000)}, // 0.002 left: 999.33 ms to full
			{words("DEBUG CLOCK ADVANCE 333"), "OK"},
			{words("CL.TOKENBUCKET ex 3 3 1s"), dec(1, 3, 0, 0, 1000)}, // 0.001 left: 999.67 ms
			{words("DEBUG CLOCK ADVANCE 333"), "OK"},
			{words("CL.TOKENBUCKET ex 3 3 1s"), dec(1, 3, 0, 0, 1000)}, // exactly 1.000 taken
			{words("DEBUG CLOCK ADVANCE 333"), "OK"},
			{words("CL.TOKENBUCKET ex 3 3 1s"), dec(0, 3, 0, 1, 667)}, // 0.999: 0.33 ms short, rounded up
		})
		expiresIn(t, c, "ex", 667)
	})
}

func TestLimiterTokenBucketReserve(t *testing.T) {
	t.Parallel()
	s := start(t)
	protocols(t, func(t *testing.T, proto int) {
		c := s.client(t, proto)
		fresh(t, c)
		runSteps(t, c, []limStep{
			{words("CL.TOKENBUCKET rs 2 1 1s 2"), dec(1, 2, 0, 0, 2000)},
			// The next token exists in 1 s <= 1.5 s: admitted into debt
			// (tokens -1), act in 1 s; full again in 3 s.
			{words("CL.TOKENBUCKET rs 2 1 1s RESERVE 1500ms"), dec(1, 2, 0, 1000, 3000)},
			// Later callers queue behind the debt: 2 s until a token.
			{words("CL.TOKENBUCKET rs 2 1 1s"), dec(0, 2, 0, 2000, 3000)},
			{words("CL.TOKENBUCKET rs 2 1 1s RESERVE 1999ms"), dec(0, 2, 0, 2000, 3000)},
			{words("CL.TOKENBUCKET rs 2 1 1s 1 reserve 2s"), dec(1, 2, 0, 2000, 4000)},
			{words("CL.TOKENBUCKET rs 2 1 1s 3 RESERVE 1h"), dec(0, 2, 0, -1, 4000)},
			{words("CL.TOKENBUCKET rs 2 1 1s 0 RESERVE 1s"), dec(1, 2, 0, 0, 4000)},
			{words("PTTL rs"), 4000},
			{words("DEBUG CLOCK ADVANCE 3000"), "OK"},
			{words("CL.TOKENBUCKET rs 2 1 1s 0"), dec(1, 2, 1, 0, 1000)}, // -2 + 3 = 1 token
		})
		expiresIn(t, c, "rs", 1000)
	})
}

// A later call's parameters carry the state over, clamped to them.
func TestLimiterParameterChanges(t *testing.T) {
	t.Parallel()
	s := start(t)
	c := s.client(t, 2)
	fresh(t, c)
	runSteps(t, c, []limStep{
		{words("CL.TOKENBUCKET pc 10 1 1s 2"), dec(1, 10, 8, 0, 2000)},
		{words("CL.TOKENBUCKET pc 5 1 1s 0"), dec(1, 5, 5, 0, 0)}, // 8 tokens clamped to 5: full
		{words("CL.TOKENBUCKET pc 5 1 1s"), dec(1, 5, 4, 0, 1000)},
		{words("PTTL pc"), 1000},
		{words("CL.TOKENBUCKET pc 10 1 1s 0"), dec(1, 10, 4, 0, 6000)}, // 4 carried, 6 short
		{words("CL.TOKENBUCKET pc 10 2 1s 0"), dec(1, 10, 4, 0, 3000)}, // 6 short at 2/s
		{words("CL.TOKENBUCKET pc 10 2 1s"), dec(1, 10, 3, 0, 3500)},
		{words("PTTL pc"), 3500},

		// Leaky: level 4 of 5 is clamped to 2 of 2 (as of the last update).
		{words("CL.LEAKYBUCKET pl 5 1 1s 4"), dec(1, 5, 1, 0, 4000)},
		{words("CL.LEAKYBUCKET pl 2 1 1s 0"), dec(1, 2, 0, 0, 2000)},
		// A peek (or denial) never shortens the expiry: under capacity 5,
		// the state it stored, the key is fresh only in 4 s.
		{words("PTTL pl"), 4000},
		{words("CL.LEAKYBUCKET pl 2 1 1s"), dec(0, 2, 0, 1000, 2000)},
		{words("DEBUG CLOCK ADVANCE 1000"), "OK"},
		{words("CL.LEAKYBUCKET pl 2 1 1s"), dec(1, 2, 0, 1000, 2000)}, // level 2 drained to 1, +1
		{words("PTTL pl"), 2000},

		// FIXED: 2 used of 3, the limit lowered to 1 (clamped), then raised.
		{words("CL.WINDOW pw 3 1m 2 FIXED"), dec(1, 3, 1, 0, 59000)}, // clock at t0+1s
		{words("CL.WINDOW pw 1 1m 0 FIXED"), dec(1, 1, 0, 0, 59000)},
		{words("CL.WINDOW pw 1 1m FIXED"), dec(0, 1, 0, 59000, 59000)},
		{words("CL.WINDOW pw 5 1m FIXED"), dec(1, 5, 2, 0, 59000)},
		// Window length 30 s: the count moves to the 30 s window holding
		// the last admission, [t0, t0+30s).
		{words("CL.WINDOW pw 5 30s 0 FIXED"), dec(1, 5, 2, 0, 29000)},

		// LOG: 3 units at T and 2 at T+1s; limit lowered to 2 drops the
		// oldest units, so only the entry at T+1s counts, until T+11s.
		{words("CL.WINDOW pg 5 10s 3 LOG"), dec(1, 5, 2, 0, 10000)},
		{words("DEBUG CLOCK ADVANCE 1000"), "OK"},
		{words("CL.WINDOW pg 5 10s 2 LOG"), dec(1, 5, 0, 0, 10000)},
		{words("CL.WINDOW pg 2 10s 0 LOG"), dec(1, 2, 0, 0, 10000)},
		{words("CL.WINDOW pg 2 10s LOG"), dec(0, 2, 0, 10000, 10000)},

		// ACQUIRE: lowering the limit below what is held only denies.
		{words("CL.ACQUIRE pa 3 10s 0"), []any{1, 3, 3, 0, 0, nil}},
		{words("CL.ACQUIRE pa 1 10s 0"), []any{1, 1, 1, 0, 0, nil}},
	})
	leaseID(t, c, dec(1, 3, 1, 0, 10000), words("CL.ACQUIRE pa 3 10s 2")...)
	do(t, c, words("CL.ACQUIRE pa 1 10s")...).equal([]any{0, 1, 0, 10000, 10000, nil})
	leaseID(t, c, dec(1, 3, 0, 0, 10000), words("CL.ACQUIRE pa 3 10s")...)
}

func TestLimiterLeakyBucket(t *testing.T) {
	t.Parallel()
	s := start(t)
	protocols(t, func(t *testing.T, proto int) {
		c := s.client(t, proto)
		fresh(t, c)
		runSteps(t, c, []limStep{
			{words("CL.LEAKYBUCKET lb 3 1 1s"), dec(1, 3, 2, 0, 1000)},      // empty before: act now
			{words("CL.LEAKYBUCKET lb 3 1 1s"), dec(1, 3, 1, 1000, 2000)},   // level 1 ahead: wait 1 s
			{words("CL.LEAKYBUCKET lb 3 1 1s 2"), dec(0, 3, 1, 1000, 2000)}, // 2+2 > 3: fits in 1 s
			{words("CL.LEAKYBUCKET lb 3 1 1s 1"), dec(1, 3, 0, 2000, 3000)},
			{words("CL.LEAKYBUCKET lb 3 1 1s 4"), dec(0, 3, 0, -1, 3000)},
			{words("TYPE lb"), "leakybucket"},
			{words("PTTL lb"), 3000},
			{words("DEBUG CLOCK ADVANCE 500"), "OK"},
			{words("CL.LEAKYBUCKET lb 3 1 1s 0"), dec(1, 3, 0, 0, 2500)}, // level 2.5: remaining 3-ceil(2.5)
			{words("CL.LEAKYBUCKET lb 3 1 1s"), dec(0, 3, 0, 500, 2500)},
			{words("DEBUG CLOCK ADVANCE 500"), "OK"},
			{words("CL.LEAKYBUCKET lb 3 1 1s"), dec(1, 3, 0, 2000, 3000)}, // level 2 ahead
		})
		expiresIn(t, c, "lb", 3000)
	})
}

func TestLimiterWindowFixed(t *testing.T) {
	t.Parallel()
	s := start(t)
	protocols(t, func(t *testing.T, proto int) {
		c := s.client(t, proto)
		fresh(t, c)
		advance(t, c, 10_000) // 50 s left in the window [t0, t0+1m)
		runSteps(t, c, []limStep{
			{words("CL.WINDOW fw 3 1m FIXED"), dec(1, 3, 2, 0, 50000)},
			{words("CL.WINDOW fw 3 1m 2 fixed"), dec(1, 3, 0, 0, 50000)},
			{words("CL.WINDOW fw 3 1m FIXED"), dec(0, 3, 0, 50000, 50000)},
			{words("CL.WINDOW fw 3 1m 4 FIXED"), dec(0, 3, 0, -1, 50000)},
			{words("CL.WINDOW fw 3 1m 0 FIXED"), dec(1, 3, 0, 0, 50000)},
			{words("TYPE fw"), "window"},
		})
		expiresIn(t, c, "fw", 50000)
		do(t, c, words("CL.WINDOW fw 3 1m 2 FIXED")...).equal(dec(1, 3, 1, 0, 60000))
		expiresIn(t, c, "fw", 60000)
	})
}

func TestLimiterWindowSliding(t *testing.T) {
	t.Parallel()
	s := start(t)
	protocols(t, func(t *testing.T, proto int) {
		c := s.client(t, proto)
		fresh(t, c)
		advance(t, c, 30_000)
		runSteps(t, c, []limStep{
			// 4 in [t0, t0+1m); fresh once they have slid out as the
			// previous window too: 30 s + 60 s.
			{words("CL.WINDOW sw 10 1m 4"), dec(1, 10, 6, 0, 90000)},
			{words("DEBUG CLOCK ADVANCE 45000"), "OK"},
			// t0+75s: previous 4 weighted 45/60 = 3.
			{words("CL.WINDOW sw 10 1m 0"), dec(1, 10, 7, 0, 45000)},
			{words("PTTL sw"), 45000},
			{words("CL.WINDOW sw 10 1m 7 SLIDING"), dec(1, 10, 0, 0, 105000)}, // 3+7 <= 10
			// 1 more fits once 4·left/60s <= 2, left = 30 s: in 15 s.
			{words("CL.WINDOW sw 10 1m"), dec(0, 10, 0, 15000, 105000)},
			// 4 more never fit in this window (7+4 > 10); in the next one
			// once 7·left/60s <= 6: left = 51.428571428 s, wait
			// 45 s + 60 s - 51.428571428 s = 53.571428572 s, rounded up.
			{words("CL.WINDOW sw 10 1m 4 sliding"), dec(0, 10, 0, 53572, 105000)},
			{words("CL.WINDOW sw 10 1m 11"), dec(0, 10, 0, -1, 105000)},
			{words("DEBUG CLOCK ADVANCE 15000"), "OK"},
			{words("CL.WINDOW sw 10 1m 0"), dec(1, 10, 1, 0, 90000)}, // 4·30/60 + 7 = 9
			{words("CL.WINDOW sw 10 1m"), dec(1, 10, 0, 0, 90000)},
			{words("TYPE sw"), "window"},
		})
		expiresIn(t, c, "sw", 90000)
	})
}

func TestLimiterWindowLog(t *testing.T) {
	t.Parallel()
	s := start(t)
	protocols(t, func(t *testing.T, proto int) {
		c := s.client(t, proto)
		fresh(t, c)
		runSteps(t, c, []limStep{
			{words("CL.WINDOW lg 3 10s 1 LOG"), dec(1, 3, 2, 0, 10000)},
			{words("DEBUG CLOCK ADVANCE 2000"), "OK"},
			{words("CL.WINDOW lg 3 10s LOG"), dec(1, 3, 1, 0, 10000)},
			{words("DEBUG CLOCK ADVANCE 3000"), "OK"},
			{words("CL.WINDOW lg 3 10s log"), dec(1, 3, 0, 0, 10000)},      // entries at 0, 2, 5 s
			{words("CL.WINDOW lg 3 10s LOG"), dec(0, 3, 0, 5000, 10000)},   // the 0 s entry leaves at 10 s
			{words("CL.WINDOW lg 3 10s 2 LOG"), dec(0, 3, 0, 7000, 10000)}, // and the 2 s one at 12 s
			{words("CL.WINDOW lg 3 10s 4 LOG"), dec(0, 3, 0, -1, 10000)},
			{words("DEBUG CLOCK ADVANCE 5000"), "OK"},
			// At 10 s the window is (0, 10s]: the 0 s entry has left.
			{words("CL.WINDOW lg 3 10s 0 LOG"), dec(1, 3, 1, 0, 5000)},
			{words("PTTL lg"), 5000},
			{words("DEBUG CLOCK ADVANCE 1999"), "OK"},
			{words("CL.WINDOW lg 3 10s 2 LOG"), dec(0, 3, 1, 1, 3001)},
			{words("DEBUG CLOCK ADVANCE 1"), "OK"},
			{words("CL.WINDOW lg 3 10s 2 LOG"), dec(1, 3, 0, 0, 10000)},
			{words("TYPE lg"), "window"},
		})
		expiresIn(t, c, "lg", 10000)
		// The LOG limit is bounded (default 10000).
		do(t, c, words("CL.WINDOW big 10000 1s 0 LOG")...).equal(dec(1, 10000, 10000, 0, 0))
		do(t, c, words("CL.WINDOW big 10001 1s LOG")...).errIs("ERR limit exceeds the maximum for LOG windows (CONFIG GET log-max-limit)")
		do(t, c, "EXISTS", "big").equal(0)
	})
}

func TestLimiterConcurrency(t *testing.T) {
	t.Parallel()
	s := start(t)
	protocols(t, func(t *testing.T, proto int) {
		c := s.client(t, proto)
		fresh(t, c)
		id1 := leaseID(t, c, dec(1, 2, 1, 0, 10000), words("CL.ACQUIRE sem 2 10s")...)
		do(t, c, "TYPE", "sem").equal("concurrency")
		advance(t, c, 2000)
		// id1 expires at 10 s, id2 at 7 s: reset runs to the last one.
		id2 := leaseID(t, c, dec(1, 2, 0, 0, 8000), words("CL.ACQUIRE sem 2 5s")...)
		if id1 == id2 {
			t.Fatalf("two leases share id %q", id1)
		}
		runSteps(t, c, []limStep{
			{words("CL.ACQUIRE sem 2 5s"), []any{0, 2, 0, 5000, 8000, nil}}, // earliest expiry: id2 at 7 s
			{words("CL.ACQUIRE sem 2 5s 3"), []any{0, 2, 0, -1, 8000, nil}},
			{words("CL.ACQUIRE sem 2 5s 0"), []any{1, 2, 0, 0, 8000, nil}},
			{words("PTTL sem"), 8000},
			{[]any{"CL.RELEASE", "sem", id1}, 1},
			{words("PTTL sem"), 5000}, // only id2 is left
			{[]any{"CL.RELEASE", "sem", id1}, 0},
			{words("CL.RELEASE sem nosuchleaseid00"), 0},
			{words("CL.RELEASE nokey x"), 0},
			{words("CL.RENEW nokey x 1s"), 0},
			{words("EXISTS nokey"), 0},
			{words("CL.ACQUIRE sem 2 5s 0"), []any{1, 2, 1, 0, 5000, nil}},
			{[]any{"CL.RENEW", "sem", id2, "20s"}, 1},
			{words("PTTL sem"), 20000},
			{words("CL.ACQUIRE sem 2 5s 0"), []any{1, 2, 1, 0, 20000, nil}},
			{[]any{"CL.RENEW", "sem", id2, "1s"}, 1}, // a renewal may shorten
			{words("PTTL sem"), 1000},
			{[]any{"CL.RENEW", "sem", id2, "3s"}, 1},
		})
		expiresIn(t, c, "sem", 3000)
		do(t, c, "CL.RENEW", "sem", id2, "1s").equal(0)
		do(t, c, "CL.RELEASE", "sem", id2).equal(0)

		// An expired lease of a live key: RELEASE and RENEW answer 0 and
		// change nothing.
		short := leaseID(t, c, dec(1, 2, 1, 0, 1000), words("CL.ACQUIRE sem2 2 1s")...)
		leaseID(t, c, dec(1, 2, 0, 0, 10000), words("CL.ACQUIRE sem2 2 10s")...)
		advance(t, c, 1000)
		peek := words("CL.ACQUIRE sem2 2 1s 0")
		unchanged(t, c, []string{"sem2"}, [][]any{peek}, "RELEASE/RENEW of an expired lease", func() {
			do(t, c, "CL.RELEASE", "sem2", short).equal(0)
			do(t, c, "CL.RENEW", "sem2", short, "1m").equal(0)
		})
		do(t, c, peek...).equal([]any{1, 2, 1, 0, 9000, nil})
		// n units under one lease; ids stay distinct.
		seen := map[string]bool{}
		for i := 0; i < 20; i++ {
			id := leaseID(t, c, dec(1, 100, 98-2*int64(i), 0, 60000), words("CL.ACQUIRE many 100 1m 2")...)
			if seen[id] {
				t.Fatalf("lease id %q handed out twice", id)
			}
			seen[id] = true
		}
	})
}

func TestLimiterAll(t *testing.T) {
	t.Parallel()
	s := start(t, "--shards", fmt.Sprint(numShards))
	protocols(t, func(t *testing.T, proto int) {
		c := s.client(t, proto)
		fresh(t, c)
		six := "CL.ALL 6 TOKENBUCKET a:tb 5 1 1s THROTTLE a:th 4 1 1s LEAKYBUCKET a:lb 3 1 1s " +
			"FIXED a:fx 3 1m SLIDING a:sl 3 1m LOG a:lg 3 1m"
		keys := []string{"a:tb", "a:th", "a:lb", "a:fx", "a:sl", "a:lg"}
		peeks := [][]any{
			words("CL.TOKENBUCKET a:tb 5 1 1s 0"), words("CL.THROTTLE a:th 4 1 1s 0"),
			words("CL.LEAKYBUCKET a:lb 3 1 1s 0"), words("CL.WINDOW a:fx 3 1m 0 FIXED"),
			words("CL.WINDOW a:sl 3 1m 0 SLIDING"), words("CL.WINDOW a:lg 3 1m 0 LOG"),
		}
		runSteps(t, c, []limStep{
			{words(six), []any{1, dec(1, 5, 4, 0, 1000), dec(1, 5, 4, 0, 1000), dec(1, 3, 2, 0, 1000),
				dec(1, 3, 2, 0, 60000), dec(1, 3, 2, 0, 120000), dec(1, 3, 2, 0, 60000)}},
			{words(six + " COST 2"), []any{1, dec(1, 5, 2, 0, 3000), dec(1, 5, 2, 0, 3000), dec(1, 3, 0, 1000, 3000),
				dec(1, 3, 0, 0, 60000), dec(1, 3, 0, 0, 120000), dec(1, 3, 0, 0, 60000)}},
		})
		for i, k := range keys {
			want := []string{"tokenbucket", "throttle", "leakybucket", "window", "window", "window"}[i]
			do(t, c, "TYPE", k).equal(want)
		}
		// Every window rule is full: nothing is consumed anywhere, and each
		// rule answers what it would alone (the buckets would admit).
		unchanged(t, c, keys, peeks, "a denied CL.ALL", func() {
			do(t, c, words(six)...).equal([]any{0, dec(1, 5, 1, 0, 4000), dec(1, 5, 1, 0, 4000), dec(0, 3, 0, 1000, 3000),
				dec(0, 3, 0, 60000, 60000), dec(0, 3, 0, 80000, 120000), dec(0, 3, 0, 60000, 60000)})
		})
		for i, want := range []any{dec(1, 5, 2, 0, 3000), []any{0, 5, 2, -1, 3}, dec(1, 3, 0, 0, 3000),
			dec(1, 3, 0, 0, 60000), dec(1, 3, 0, 0, 120000), dec(1, 3, 0, 0, 60000)} {
			do(t, c, peeks[i]...).equal(want)
		}
		for i, ms := range []int64{3000, 3000, 3000, 60000, 120000, 60000} {
			do(t, c, "PTTL", keys[i]).equal(ms)
		}

		// Two keys in different shards; the second rule denies, the first
		// takes nothing.
		ka, kb := twoShards(t, c, "x:")
		two := fmt.Sprintf("CL.ALL 2 TOKENBUCKET %s 2 1 1h FIXED %s 1 1h", ka, kb)
		do(t, c, words(two)...).equal([]any{1, dec(1, 2, 1, 0, 3600000), dec(1, 1, 0, 0, 3600000)})
		do(t, c, words(two)...).equal([]any{0, dec(1, 2, 0, 0, 7200000), dec(0, 1, 0, 3600000, 3600000)})
		do(t, c, "CL.TOKENBUCKET", ka, 2, 1, "1h", 0).equal(dec(1, 2, 1, 0, 3600000))
		do(t, c, "PTTL", ka).equal(3600000)

		// A key of the wrong kind, or a window of another mode: WRONGTYPE,
		// and nothing consumed or created.
		kp := [][]any{{"CL.TOKENBUCKET", ka, 2, 1, "1h", 0}, {"CL.WINDOW", kb, 1, "1h", 0, "FIXED"}, nil, nil}
		leaseID(t, c, dec(1, 2, 1, 0, 60000), words("CL.ACQUIRE sem 2 1m")...)
		unchanged(t, c, []string{ka, kb, "nokey", "sem"}, kp, "CL.ALL with a wrong type", func() {
			do(t, c, "CL.ALL", 2, "TOKENBUCKET", ka, 2, 1, "1h", "SLIDING", kb, 1, "1h").errIs(wrongType)
			do(t, c, "CL.ALL", 2, "FIXED", "nokey", 1, "1h", "TOKENBUCKET", kb, 2, 1, "1h").errIs(wrongType)
			do(t, c, "CL.ALL", 2, "TOKENBUCKET", ka, 2, 1, "1h", "FIXED", "sem", 1, "1h").errIs(wrongType)
			do(t, c, "CL.ALL", 2, "LOG", "nokey", 1, "1h", "THROTTLE", ka, 1, 1, "1h").errIs(wrongType)
		})
	})
}

// TestLimiterAllHotKey: a hot key (its state kept as an object) in a CL.ALL
// whose earlier rule, in the same shard, makes another key hot. Getting hot
// takes over the object the cooled key gives back; before the fix, the
// later rule then took from the other key's state and stored it in place
// of its own: afterwards a reported 9 tokens of 10 (want 7) and b 9 of
// 100 (want 98).
func TestLimiterAllHotKey(t *testing.T) {
	t.Parallel()
	s := start(t, "--shards", "1")
	protocols(t, func(t *testing.T, proto int) {
		c := s.client(t, proto)
		fresh(t, c)
		runSteps(t, c, []limStep{
			{words("CL.TOKENBUCKET a 10 1 1h"), dec(1, 10, 9, 0, 3600000)},
			{words("CL.TOKENBUCKET a 10 1 1h"), dec(1, 10, 8, 0, 7200000)}, // a is hot
			{words("CL.TOKENBUCKET b 100 1 1h"), dec(1, 100, 99, 0, 3600000)},
			{words("CL.ALL 2 TOKENBUCKET b 100 1 1h TOKENBUCKET a 10 1 1h"), []any{1, dec(1, 100, 98, 0, 7200000), dec(1, 10, 7, 0, 10800000)}},
			{words("CL.TOKENBUCKET a 10 1 1h 0"), dec(1, 10, 7, 0, 10800000)},
			{words("CL.TOKENBUCKET b 100 1 1h 0"), dec(1, 100, 98, 0, 7200000)},
			// And denied: the hot key's object is not taken.
			{words("CL.TOKENBUCKET a 10 1 1h"), dec(1, 10, 6, 0, 14400000)},
			{words("CL.TOKENBUCKET a 10 1 1h"), dec(1, 10, 5, 0, 18000000)}, // hot again
			{words("CL.ALL 2 TOKENBUCKET a 10 1 1h FIXED w 1 1h COST 2"), []any{0, dec(1, 10, 3, 0, 25200000), dec(0, 1, 1, -1, 0)}},
			{words("CL.TOKENBUCKET a 10 1 1h 0"), dec(1, 10, 5, 0, 18000000)},
		})
	})
}

// TestLimiterAllScratchGrowth: a connection's first CL.ALL with more rules
// than it has seen, whose first rule's key gets hot and keeps the rule's
// scratch state. Before the fix, making room for the second rule moved the
// scratch slots, the note "the shard keeps this state" went to the old
// ones, and the next CL.ALL decoded key x into h's state: h then read as a
// full bucket (want 8 of 10).
func TestLimiterAllScratchGrowth(t *testing.T) {
	t.Parallel()
	s := start(t, "--shards", "1")
	c := redis.NewClient(&redis.Options{Addr: s.Addr, PoolSize: 1}) // one connection: its scratch
	t.Cleanup(func() { c.Close() })
	fresh(t, c)
	runSteps(t, c, []limStep{
		{words("CL.TOKENBUCKET h 10 1 1h"), dec(1, 10, 9, 0, 3600000)},
		{words("CL.ALL 2 TOKENBUCKET h 10 1 1h FIXED w 10 1h"), []any{1, dec(1, 10, 8, 0, 7200000), dec(1, 10, 9, 0, 3600000)}},
		{words("CL.ALL 1 TOKENBUCKET x 100 1 1h"), []any{1, dec(1, 100, 99, 0, 3600000)}},
		{words("CL.TOKENBUCKET h 10 1 1h 0"), dec(1, 10, 8, 0, 7200000)},
		{words("CL.TOKENBUCKET x 100 1 1h 0"), dec(1, 100, 99, 0, 3600000)},
	})
}

// TestLimiterAllAcquireRule: CL.ALL holds an ACQUIRE rule, answered as
// CL.ACQUIRE answers (six elements, the lease id last): an id only when the
// whole call admitted, and then a real lease of the key.
func TestLimiterAllAcquireRule(t *testing.T) {
	t.Parallel()
	s := start(t)
	protocols(t, func(t *testing.T, proto int) {
		c := s.client(t, proto)
		fresh(t, c)
		r := do(t, c, words("CL.ALL 2 ACQUIRE exp 2 30s FIXED ip 1 1m")...)
		arr, ok := r.val.([]any)
		if r.err != nil || !ok || len(arr) != 3 || fmt.Sprint(arr[0]) != "1" || fmt.Sprint(arr[2]) != fmt.Sprint(dec(1, 1, 0, 0, 60000)) {
			t.Fatalf("admitted CL.ALL with ACQUIRE = %v %v", r.val, r.err)
		}
		lease, ok := arr[1].([]any)
		if !ok || len(lease) != 6 || fmt.Sprint(lease[:5]) != fmt.Sprint(dec(1, 2, 1, 0, 30000)) {
			t.Fatalf("ACQUIRE rule's decision = %v", arr[1])
		}
		id, ok := lease[5].(string)
		if !ok || len(id) != 16 {
			t.Fatalf("ACQUIRE rule's lease id = %T %v", lease[5], lease[5])
		}
		// The window is used up: nothing is taken, and the ACQUIRE rule's
		// decision has no id.
		unchanged(t, c, []string{"exp"}, [][]any{words("CL.ACQUIRE exp 2 30s 0")}, "a denied CL.ALL with ACQUIRE", func() {
			do(t, c, words("CL.ALL 2 ACQUIRE exp 2 30s FIXED ip 1 1m")...).equal(
				[]any{0, []any{1, 2, 0, 0, 30000, nil}, dec(0, 1, 0, 60000, 60000)})
		})
		do(t, c, "CL.RELEASE", "exp", id).equal(1)
		do(t, c, words("CL.ALL 1 ACQUIRE ip 1 1s")...).errIs(wrongType)
	})
}

// A single window rule is the shortest valid CL.ALL (6 arguments): the
// contract's form is "CL.ALL numrules rule [rule ...]".
func TestLimiterAllOneWindowRule(t *testing.T) {
	t.Parallel()
	s := start(t)
	c := s.client(t, 2)
	fresh(t, c)
	do(t, c, words("CL.ALL 1 FIXED one 1 1h")...).equal([]any{1, dec(1, 1, 0, 0, 3600000)})
	do(t, c, words("CL.ALL 1 LOG two 1 1h")...).equal([]any{1, dec(1, 1, 0, 0, 3600000)})
	do(t, c, words("CL.ALL 1 FIXED one 1 1h")...).equal([]any{0, dec(0, 1, 0, 3600000, 3600000)})
}

const wrongType = "WRONGTYPE Operation against a key holding the wrong kind of value"

// TestLimiterPeeksCreateNoKey: peeks, and calls denied on a fresh key,
// answer from a fresh state and create nothing.
func TestLimiterPeeksCreateNoKey(t *testing.T) {
	t.Parallel()
	s := start(t)
	protocols(t, func(t *testing.T, proto int) {
		c := s.client(t, proto)
		fresh(t, c)
		runSteps(t, c, []limStep{
			{words("CL.TOKENBUCKET p 5 1 1s 0"), dec(1, 5, 5, 0, 0)},
			{words("CL.TOKENBUCKET p 5 1 1s 0 RESERVE 1s"), dec(1, 5, 5, 0, 0)},
			{words("CL.TOKENBUCKET p 5 1 1s 6 RESERVE 1h"), dec(0, 5, 5, -1, 0)},
			{words("CL.LEAKYBUCKET p 3 1 1s 0"), dec(1, 3, 3, 0, 0)},
			{words("CL.LEAKYBUCKET p 3 1 1s 4"), dec(0, 3, 3, -1, 0)},
			{words("CL.WINDOW p 3 1m 0 FIXED"), dec(1, 3, 3, 0, 0)},
			{words("CL.WINDOW p 3 1m 0"), dec(1, 3, 3, 0, 0)},
			{words("CL.WINDOW p 3 1m 0 LOG"), dec(1, 3, 3, 0, 0)},
			{words("CL.WINDOW p 3 1m 4 SLIDING"), dec(0, 3, 3, -1, 0)},
			{words("CL.ACQUIRE p 2 1m 0"), []any{1, 2, 2, 0, 0, nil}},
			{words("CL.ACQUIRE p 2 1m 3"), []any{0, 2, 2, -1, 0, nil}},
			{words("CL.THROTTLE p 4 1 1s 0"), []any{0, 5, 5, -1, 0}},
			{words("GCRA p 4 1 1 TOKENS 0"), []any{0, 5, 5, -1, 0}},
			{words("CL.ALL 2 TOKENBUCKET p 5 1 1s FIXED q 3 1m COST 0"), []any{1, dec(1, 5, 5, 0, 0), dec(1, 3, 3, 0, 0)}},
			{words("CL.ALL 2 TOKENBUCKET p 5 1 1s FIXED q 3 1m COST 4"), []any{0, dec(1, 5, 1, 0, 4000), dec(0, 3, 3, -1, 0)}},
			{words("EXISTS p q"), 0},
			{words("DBSIZE"), 0},
		})
	})
}

// TestLimiterWrongType: a key holds one kind; every other command kind,
// and a window of another mode, is WRONGTYPE and changes nothing.
func TestLimiterWrongType(t *testing.T) {
	t.Parallel()
	s := start(t)
	c := s.client(t, 3)
	fresh(t, c)
	type kind struct{ key, create, peek, typ string }
	kinds := []kind{
		{"th", "CL.THROTTLE th 4 1 1s", "CL.THROTTLE th 4 1 1s 0", "throttle"},
		{"tb", "CL.TOKENBUCKET tb 5 1 1s", "CL.TOKENBUCKET tb 5 1 1s 0", "tokenbucket"},
		{"lb", "CL.LEAKYBUCKET lb 3 1 1s", "CL.LEAKYBUCKET lb 3 1 1s 0", "leakybucket"},
		{"fx", "CL.WINDOW fx 3 1m FIXED", "CL.WINDOW fx 3 1m 0 FIXED", "window"},
		{"sl", "CL.WINDOW sl 3 1m", "CL.WINDOW sl 3 1m 0", "window"},
		{"lg", "CL.WINDOW lg 3 1m LOG", "CL.WINDOW lg 3 1m 0 LOG", "window"},
		{"cc", "CL.ACQUIRE cc 2 1m", "CL.ACQUIRE cc 2 1m 0", "concurrency"},
	}
	var keys []string
	var peeks [][]any
	for _, k := range kinds {
		do(t, c, words(k.create)...).ints0()
		do(t, c, "TYPE", k.key).equal(k.typ)
		keys, peeks = append(keys, k.key), append(peeks, words(k.peek))
	}
	// Each command with the key it may use; %s is the key.
	cmds := []struct{ cmd, owner string }{
		{"CL.THROTTLE %s 4 1 1s", "th"}, {"CL.THROTTLE %s 4 1 1s 0", "th"}, {"GCRA %s 4 1 1", "th"},
		{"CL.TOKENBUCKET %s 5 1 1s", "tb"}, {"CL.TOKENBUCKET %s 5 1 1s 0 RESERVE 1s", "tb"},
		{"CL.LEAKYBUCKET %s 3 1 1s", "lb"}, {"CL.LEAKYBUCKET %s 3 1 1s 0", "lb"},
		{"CL.WINDOW %s 3 1m FIXED", "fx"}, {"CL.WINDOW %s 3 1m 0 FIXED", "fx"},
		{"CL.WINDOW %s 3 1m SLIDING", "sl"}, {"CL.WINDOW %s 3 1m", "sl"}, {"CL.WINDOW %s 3 1m 0", "sl"},
		{"CL.WINDOW %s 3 1m LOG", "lg"}, {"CL.WINDOW %s 3 1m 0 LOG", "lg"},
		{"CL.ACQUIRE %s 2 1m", "cc"}, {"CL.ACQUIRE %s 2 1m 0", "cc"},
		{"CL.RELEASE %s someid", "cc"}, {"CL.RENEW %s someid 1m", "cc"},
		{"CL.ALL 1 TOKENBUCKET %s 5 1 1s", "tb"}, {"CL.ALL 1 THROTTLE %s 4 1 1s", "th"},
		{"CL.ALL 1 LEAKYBUCKET %s 3 1 1s", "lb"}, {"CL.ALL 1 FIXED %s 3 1m COST 0", "fx"},
		{"CL.ALL 1 SLIDING %s 3 1m COST 0", "sl"}, {"CL.ALL 1 LOG %s 3 1m COST 0", "lg"},
	}
	for _, cm := range cmds {
		for _, k := range kinds {
			if k.key == cm.owner {
				continue
			}
			cmd := words(fmt.Sprintf(cm.cmd, k.key))
			unchanged(t, c, keys, peeks, fmt.Sprint(cmd), func() { do(t, c, cmd...).errIs(wrongType) })
		}
	}
	// SCAN ... TYPE filters by kind.
	for typ, want := range map[string]string{"window": "fx lg sl", "concurrency": "cc", "throttle": "th", "tokenbucket": "tb", "leakybucket": "lb"} {
		var got []string
		for cursor := uint64(0); ; {
			page, next, err := c.ScanType(ctx, cursor, "*", 2, typ).Result()
			if err != nil {
				t.Fatal(err)
			}
			got, cursor = append(got, page...), next
			if cursor == 0 {
				break
			}
		}
		sort.Strings(got)
		if strings.Join(got, " ") != want {
			t.Fatalf("SCAN TYPE %s = %v, want %s", typ, got, want)
		}
	}
}

// TestLimiterErrors is the catalogue of bad input: each row's exact error,
// and no key changes (EXISTS, TYPE, PTTL and a peek before and after).
func TestLimiterErrors(t *testing.T) {
	t.Parallel()
	s := start(t)
	protocols(t, func(t *testing.T, proto int) {
		c := s.client(t, proto)
		fresh(t, c)
		do(t, c, words("CL.TOKENBUCKET etb 5 1 1s 2")...).equal(dec(1, 5, 3, 0, 2000))
		do(t, c, words("CL.LEAKYBUCKET elb 3 1 1s")...).equal(dec(1, 3, 2, 0, 1000))
		do(t, c, words("CL.WINDOW ewin 3 1m FIXED")...).equal(dec(1, 3, 2, 0, 60000))
		id := leaseID(t, c, dec(1, 2, 1, 0, 60000), words("CL.ACQUIRE ecc 2 1m")...)
		keys := []string{"etb", "elb", "ewin", "ecc", "new"}
		peeks := [][]any{words("CL.TOKENBUCKET etb 5 1 1s 0"), words("CL.LEAKYBUCKET elb 3 1 1s 0"),
			words("CL.WINDOW ewin 3 1m 0 FIXED"), words("CL.ACQUIRE ecc 2 1m 0"), nil}
		const notInt, syntax = "ERR value is not an integer or out of range", "ERR syntax error"
		arity := func(name string) string { return "ERR wrong number of arguments for '" + name + "' command" }
		dur := func(x string) string { return "ERR invalid duration '" + x + "'" }
		for _, row := range []struct{ cmd, err string }{
			{"CL.THROTTLE new 1 2000000000 1", "ERR zero rates are not supported"},
			{"GCRA new 1 2000000000 1", "ERR zero rates are not supported"},
			{"CL.ALL 1 THROTTLE new 1 2000000000 1", "ERR zero rates are not supported"},
			{"CL.TOKENBUCKET etb 5 1", arity("cl.tokenbucket")},
			{"CL.TOKENBUCKET etb 5 1 1s 1 RESERVE 1s x", arity("cl.tokenbucket")},
			{"CL.TOKENBUCKET etb 0 1 1s", notInt},
			{"CL.TOKENBUCKET etb -5 1 1s", notInt},
			{"CL.TOKENBUCKET etb five 1 1s", notInt},
			{"CL.TOKENBUCKET etb 5 0 1s", notInt},
			{"CL.TOKENBUCKET etb 5 1.5 1s", notInt},
			{"CL.TOKENBUCKET etb 5 99999999999999999999 1s", notInt},
			{"CL.TOKENBUCKET etb 5 1 1s -1", notInt},
			{"CL.TOKENBUCKET etb 5 1 1s 1.0", notInt},
			{"CL.TOKENBUCKET etb 5 1 0", dur("0")},
			{"CL.TOKENBUCKET etb 5 1 -1s", dur("-1s")},
			{"CL.TOKENBUCKET etb 5 1 1.5s", dur("1.5s")},
			{"CL.TOKENBUCKET etb 5 1 10x", dur("10x")},
			{"CL.TOKENBUCKET etb 5 1 ms", dur("ms")},
			{"CL.TOKENBUCKET etb 5 1 0ms", dur("0ms")},
			{"CL.TOKENBUCKET etb 5 1 106752d", dur("106752d")}, // > 2^63-1 ns
			{"CL.TOKENBUCKET etb 5 1 1s RESERVE", syntax},
			{"CL.TOKENBUCKET etb 5 1 1s 1 RESERVE", syntax},
			{"CL.TOKENBUCKET etb 5 1 1s RESERVE 0", dur("0")},
			{"CL.TOKENBUCKET etb 5 1 1s 1 RESERVE soon", dur("soon")},
			{"CL.TOKENBUCKET etb 5 1 1s 1 WAIT 1s", syntax},
			{"CL.TOKENBUCKET etb 5 1 1s 1 2", syntax},
			{"CL.LEAKYBUCKET elb 3 1", arity("cl.leakybucket")},
			{"CL.LEAKYBUCKET elb 3 1 1s 1 1", arity("cl.leakybucket")},
			{"CL.LEAKYBUCKET elb 0 1 1s", notInt},
			{"CL.LEAKYBUCKET elb 3 -1 1s", notInt},
			{"CL.LEAKYBUCKET elb 3 1 1s x", notInt},
			{"CL.LEAKYBUCKET elb 3 1 1h30m", dur("1h30m")},
			{"CL.WINDOW ewin 3", arity("cl.window")},
			{"CL.WINDOW ewin 3 1m 1 FIXED x", arity("cl.window")},
			{"CL.WINDOW ewin 0 1m FIXED", notInt},
			{"CL.WINDOW ewin 3 1m -1 FIXED", notInt},
			{"CL.WINDOW ewin 3 0 FIXED", dur("0")},
			{"CL.WINDOW ewin 3 1y FIXED", dur("1y")},
			{"CL.WINDOW ewin 3 1m 1 HOPPING", syntax},
			{"CL.WINDOW new 10001 1m LOG", "ERR limit exceeds the maximum for LOG windows (CONFIG GET log-max-limit)"},
			{"CL.ACQUIRE ecc 2", arity("cl.acquire")},
			{"CL.ACQUIRE ecc 2 1m 1 1", arity("cl.acquire")},
			{"CL.ACQUIRE ecc 0 1m", notInt},
			{"CL.ACQUIRE ecc 2 1m -1", notInt},
			{"CL.ACQUIRE ecc 2 forever", dur("forever")},
			{"CL.ACQUIRE ecc 2 0s", dur("0s")},
			{"CL.RELEASE ecc", arity("cl.release")},
			{"CL.RELEASE ecc " + id + " x", arity("cl.release")},
			{"CL.RENEW ecc " + id, arity("cl.renew")},
			{"CL.RENEW ecc " + id + " 0", dur("0")},
			{"CL.RENEW ecc " + id + " -5s", dur("-5s")},
			{"CL.ALL 1 FIXED", arity("cl.all")},
			{"CL.ALL 0 TOKENBUCKET etb 5 1 1s", notInt},
			{"CL.ALL x TOKENBUCKET etb 5 1 1s", notInt},
			{"CL.ALL 2 TOKENBUCKET etb 5 1 1s", syntax},
			{"CL.ALL 9 TOKENBUCKET etb 5 1 1s", syntax},
			{"CL.ALL 1 HOPPING etb 5 1 1s", syntax},
			{"CL.ALL 1 TOKENBUCKET etb 5 1 1s EXTRA", syntax},
			{"CL.ALL 1 TOKENBUCKET etb 5 1 1s COST", syntax},
			{"CL.ALL 1 TOKENBUCKET etb 5 1 1s COST 1 2", syntax},
			{"CL.ALL 1 TOKENBUCKET etb 5 1 1s COST -1", notInt},
			{"CL.ALL 2 TOKENBUCKET etb 5 1 1s FIXED ewin 0 1m", notInt},
			{"CL.ALL 2 TOKENBUCKET etb 5 1 0 FIXED ewin 3 1m", dur("0")},
			{"CL.ALL 2 FIXED ewin 3 1m LEAKYBUCKET elb 3 1 2x", dur("2x")},
			{"CL.ALL 2 FIXED ewin 3 1m LOG new 10001 1m", "ERR limit exceeds the maximum for LOG windows (CONFIG GET log-max-limit)"},
			// THROTTLE rules read their arguments as CL.THROTTLE does.
			{"CL.ALL 2 FIXED ewin 3 1m THROTTLE new 4 1 0", notInt},
			{"CL.ALL 2 TOKENBUCKET etb 5 1 1s TOKENBUCKET etb 5 1 1s", "ERR CL.ALL rules must name distinct keys"},
		} {
			unchanged(t, c, keys, peeks, row.cmd, func() { do(t, c, words(row.cmd)...).errIs(row.err) })
		}
		// The lease is intact after the failed RENEW/RELEASE calls.
		do(t, c, "PTTL", "ecc").equal(60000)
		do(t, c, "CL.RELEASE", "ecc", id).equal(1)
	})
}

// endOfTimeMs is the PTTL of a key whose expiry saturated at 2^63-1 ns,
// seen from t0: ceil((2^63-1 - t0 ns) / 1 ms).
const endOfTimeMs = (math.MaxInt64-t0*1_000_000)/1_000_000 + 1

// TestLimiterHugeDurations: the longest durations the contract accepts
// still limit. A period of 100000 days puts the key's expiry past 2^63 ns
// since the epoch; the key must still hold its state.
func TestLimiterHugeDurations(t *testing.T) {
	t.Parallel()
	s := start(t)
	t.Run("TokenBucketExpiryBeyondInt64", func(t *testing.T) {
		c := s.client(t, 2)
		fresh(t, c)
		// 1 token short at 1 per 100000 d: 8 640 000 000 000 ms to full.
		do(t, c, words("CL.TOKENBUCKET big 1 1 100000d")...).equal(dec(1, 1, 0, 0, 8640000000000))
		do(t, c, "EXISTS", "big").equal(1)
		// The key's expiry saturates at the end of int64 time (2262): PTTL
		// counts down to that instant, not beyond.
		do(t, c, "PTTL", "big").equal(endOfTimeMs)
		do(t, c, words("CL.TOKENBUCKET big 1 1 100000d")...).equal(dec(0, 1, 0, 8640000000000, 8640000000000))
	})
	t.Run("SlidingResetSaturates", func(t *testing.T) {
		c := s.client(t, 2)
		fresh(t, c)
		// A 106751-day sliding window: fresh after the rest of this window
		// and the whole next one, beyond 2^63-1 ns: reset_after saturates,
		// but it must stay positive, equal PTTL, and the key must keep its
		// count.
		first := do(t, c, words("CL.WINDOW huge 5 106751d")...).ints()
		if first[0] != 1 || first[2] != 4 || first[4] <= 0 {
			t.Fatalf("CL.WINDOW huge 5 106751d = %v, want [1 5 4 0 reset>0]", first)
		}
		do(t, c, "PTTL", "huge").equal(endOfTimeMs)
		do(t, c, words("CL.WINDOW huge 5 106751d 0")...).equal(dec(1, 5, 4, 0, first[4]))
	})
}
