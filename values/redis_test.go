package values

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/rlserver/rlserver/internal/redistest"
)

// TestNumbersAgainstRedis: scores written back (ZSCORE), INCRBYFLOAT's
// stored values, and the float and range parsers' verdicts and errors are
// redis-server's, for the same inputs.
func TestNumbersAgainstRedis(t *testing.T) {
	ctx := context.Background()
	rc := redis.NewClient(&redis.Options{Addr: redistest.Start(t), Protocol: 2})
	defer rc.Close()
	scores := []string{"0", "1", "-1", "0.1", "1.5", "-2.25", "1e10", "1e20", "1e-5", "123456789012345678",
		"3.0000000000000004", "inf", "-inf", "+inf", "1E3", "0.000001", "7.5e-10", "-0", "0x10", "-0x1.8p1", "0.0e5", "1e-300",
		// The fast paths: microsecond timestamps and longer, many digits
		// after the point, infinity in any case.
		"1764345600123456", "17643456001234567", "-9007199254740993", "123456789012345678901234567890",
		"0.12345678901234567890123", "1.", ".5", "-.5", "00012", "Infinity", "-INFINITY", "+Inf", "iNf",
		"0." + strings.Repeat("0", 320) + "1"}
	for _, s := range scores {
		if err := rc.Do(ctx, "ZADD", "z", s, "m").Err(); err != nil {
			t.Fatalf("redis ZADD %s: %v", s, err)
		}
		want, _ := rc.Do(ctx, "ZSCORE", "z", "m").Text()
		f, ok := ParseFloat([]byte(s))
		if !ok {
			t.Fatalf("ParseFloat(%q) refused what Redis accepts", s)
		}
		if got := FormatScore(f); got != want {
			t.Errorf("score %s: FormatScore = %q, Redis %q", s, got, want)
		}
	}
	for _, s := range []string{"", "abc", "nan", "1 ", " 1", "1x", "1_000", "--1", "1p3", "0x", "1e400", "1e-400", "-1e400",
		"infinit", "infinityy", "-+inf", "inf ", "-", ".", "1" + strings.Repeat("0", 400), "0." + strings.Repeat("0", 400) + "1"} {
		err := rc.Do(ctx, "ZADD", "z", s, "m").Err()
		if _, ok := ParseFloat([]byte(s)); ok || err == nil || err.Error() != ErrNotFloat.Error() {
			t.Errorf("score %q: ParseFloat ok=%v; Redis: %v", s, ok, err)
		}
	}
	incr := [][2]string{{"1e400", "1"}, {"abc", "1"}, {"1", "x"}, {"0x10", "0.5"}, {"10.5", "0.1"}, {"0", "1"}, {"1", "-1"}, {"3", "1.5e3"}, {"5.0e3", "2.0e2"}, {"1", "0.0001"},
		{"-3", "1"}, {"0.1", "0.2"}, {"1000000", "0.5"}}
	for _, c := range incr {
		rc.Do(ctx, "SET", "f", c[0])
		want, rerr := rc.Do(ctx, "INCRBYFLOAT", "f", c[1]).Text()
		if rerr != nil {
			if _, err := IncrByFloat([]byte(c[0]), []byte(c[1])); err == nil || err.Error() != rerr.Error() {
				t.Errorf("INCRBYFLOAT %s by %s: ours %v, Redis %v", c[0], c[1], err, rerr)
			}
			continue
		}
		if got, err := IncrByFloat([]byte(c[0]), []byte(c[1])); err != nil || got != want {
			t.Errorf("INCRBYFLOAT %s by %s: %q %v, Redis %q", c[0], c[1], got, err, want)
		}
	}
	rc.Do(ctx, "SET", "f", "1")
	err := rc.Do(ctx, "INCRBYFLOAT", "f", "inf").Err()
	if _, ierr := IncrByFloat([]byte("1"), []byte("inf")); err == nil || ierr == nil || ierr.Error() != err.Error() {
		t.Errorf("INCRBYFLOAT 1 by inf: ours %v, Redis %v", ierr, err)
	}

	// Ranges: the members Redis returns for each range, and its errors.
	rc.Del(ctx, "z")
	for i := range 10 {
		rc.ZAdd(ctx, "z", redis.Z{Score: float64(i) / 2, Member: fmt.Sprintf("m%d", i)})
	}
	z := NewZSet()
	for i := range 10 {
		z.Add(fmt.Sprintf("m%d", i), float64(i)/2)
	}
	for _, r := range [][2]string{{"1", "2"}, {"(1", "2"}, {"1", "(2"}, {"(1", "(1.5"}, {"-inf", "+inf"}, {"(4.5", "inf"},
		{"2", "1"}, {"abc", "1"}, {"1", "(x"}, {"((1", "2"}} {
		want, rerr := rc.Do(ctx, "ZRANGEBYSCORE", "z", r[0], r[1]).StringSlice()
		sr, err := ParseScoreRange([]byte(r[0]), []byte(r[1]))
		if rerr != nil || err != nil {
			if rerr == nil || err == nil || rerr.Error() != err.Error() {
				t.Errorf("range %v: ours %v, Redis %v", r, err, rerr)
			}
			continue
		}
		var got []string
		for _, m := range z.RangeByScore(nil, sr, false, 0, -1) {
			got = append(got, m.Member)
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("range %v: %v, Redis %v", r, got, want)
		}
	}
	rc.Del(ctx, "l")
	lz := NewZSet()
	for _, m := range []string{"a", "b", "c", "d"} {
		rc.ZAdd(ctx, "l", redis.Z{Member: m})
		lz.Add(m, 0)
	}
	for _, r := range [][2]string{{"-", "+"}, {"[b", "[c"}, {"(b", "+"}, {"+", "-"}, {"-", "-"}, {"+", "+"}, {"[a", "(a"},
		{"b", "c"}, {"[b", "x"}, {"", "+"}} {
		want, rerr := rc.Do(ctx, "ZRANGEBYLEX", "l", r[0], r[1]).StringSlice()
		lr, err := ParseLexRange([]byte(r[0]), []byte(r[1]))
		if rerr != nil || err != nil {
			if rerr == nil || err == nil || rerr.Error() != err.Error() {
				t.Errorf("lex range %v: ours %v, Redis %v", r, err, rerr)
			}
			continue
		}
		var got []string
		for _, m := range lz.RangeByLex(nil, lr, false, 0, -1) {
			got = append(got, m.Member)
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("lex range %v: %v, Redis %v", r, got, want)
		}
	}
}

// TestLexRangeMixedScoresAgainstRedis: a lex range over members of
// different scores has no meaning, but Redis answers it by its walk, and
// so must we: small sets of several score orders, every range end and
// direction, with offsets, compared with redis-server.
func TestLexRangeMixedScoresAgainstRedis(t *testing.T) {
	ctx := context.Background()
	rc := redis.NewClient(&redis.Options{Addr: redistest.Start(t), Protocol: 2})
	defer rc.Close()
	ends := []string{"-", "+", "[a", "(a", "[b", "(b", "[c", "(c", "[d", "[e"}
	for _, order := range []string{"cbad", "dcba", "badc", "acbd", "abcd", "dab"} {
		rc.Del(ctx, "m")
		z := NewZSet()
		for i, m := range order {
			rc.ZAdd(ctx, "m", redis.Z{Score: float64(i), Member: string(m)})
			z.Add(string(m), float64(i))
		}
		for _, min := range ends {
			for _, max := range ends {
				for _, reverse := range []bool{false, true} {
					for offset := range 3 {
						cmd, lo, hi := "ZRANGEBYLEX", min, max
						if reverse {
							cmd, lo, hi = "ZREVRANGEBYLEX", max, min
						}
						want, err := rc.Do(ctx, cmd, "m", lo, hi, "LIMIT", offset, -1).StringSlice()
						if err != nil {
							t.Fatalf("%s m %s %s: %v", cmd, lo, hi, err)
						}
						r, err := ParseLexRange([]byte(min), []byte(max))
						if err != nil {
							t.Fatalf("ParseLexRange(%s, %s): %v", min, max, err)
						}
						var got []string
						for _, m := range z.RangeByLex(nil, r, reverse, offset, -1) {
							got = append(got, m.Member)
						}
						if strings.Join(got, ",") != strings.Join(want, ",") {
							t.Errorf("order %s: %s %s %s LIMIT %d -1: %v, Redis %v", order, cmd, lo, hi, offset, got, want)
						}
					}
				}
			}
		}
	}
}
