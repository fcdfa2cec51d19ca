package engine

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// The golden file holds, for each limiter kind, the version-1 encoding of a
// used state (parameters and state, as persisted on disk inside a persist
// record). It was written once by TestGoldenEncodings with
// ENGINE_WRITE_GOLDEN=1 and committed. If this test fails, a change broke
// the state users have on disk: never regenerate the file to make it pass;
// add a new version next to the old one instead.
const goldenFile = "testdata/golden-v1.txt"

// goldenT0 is the instant the golden states were made at (2026-01-01Z).
const goldenT0 = int64(1_767_225_600_000_000_000)

// goldenStates makes the states the golden file holds.
func goldenStates() map[string]State {
	s := time.Second
	g := new(GCRA)
	g.Take(goldenT0, GCRAParams{MaxBurst: 4, Count: 1, Period: s}, 3)
	tb := new(TokenBucket)
	tb.Take(goldenT0, TokenBucketParams{Capacity: 10, Rate: 3, Period: s}, 7)
	tb.Take(goldenT0, TokenBucketParams{Capacity: 10, Rate: 3, Period: s, MaxWait: 5 * s}, 5) // debt
	lb := new(LeakyBucket)
	lb.Take(goldenT0, LeakyBucketParams{Capacity: 5, Rate: 2, Period: s}, 3)
	fx := new(Window)
	fx.Take(goldenT0, WindowParams{Limit: 10, Window: time.Minute, Mode: WindowFixed}, 4)
	sl := new(Window)
	sl.Take(goldenT0-int64(30*s), WindowParams{Limit: 10, Window: time.Minute, Mode: WindowSliding}, 6)
	sl.Take(goldenT0, WindowParams{Limit: 10, Window: time.Minute, Mode: WindowSliding}, 2)
	lg := new(Window)
	lg.Take(goldenT0-int64(5*s), WindowParams{Limit: 5, Window: 10 * s, Mode: WindowLog}, 2)
	lg.Take(goldenT0, WindowParams{Limit: 5, Window: 10 * s, Mode: WindowLog}, 1)
	cc := new(Concurrency)
	cc.Take(goldenT0, ConcurrencyParams{Limit: 3, Lease: time.Minute, ID: "lease-one"}, 1)
	cc.Take(goldenT0, ConcurrencyParams{Limit: 3, Lease: 2 * time.Minute, ID: "lease-two"}, 1)
	return map[string]State{"gcra": g, "tokenbucket": tb, "leakybucket": lb, "fixed": fx, "sliding": sl, "log": lg, "concurrency": cc}
}

// goldenNext is what each restored state must answer 1.5 s after goldenT0.
var goldenNext = map[string]struct {
	ask  func(State) Decision
	want Decision
}{
	"gcra": {func(st State) Decision {
		return st.(*GCRA).Check(goldenT0+1500e6, GCRAParams{MaxBurst: 4, Count: 1, Period: time.Second}, 1)
	}, Decision{Allowed: true, Limit: 5, Remaining: 2, ResetAfter: 2500 * time.Millisecond}},
	"tokenbucket": {func(st State) Decision {
		return st.(*TokenBucket).Check(goldenT0+1500e6, TokenBucketParams{Capacity: 10, Rate: 3, Period: time.Second}, 1)
	}, Decision{Allowed: true, Limit: 10, Remaining: 1, ResetAfter: 2833333334}}, // -2 tokens (debt) + 4.5 refilled - 1; full in 8.5/3 s
	"leakybucket": {func(st State) Decision {
		return st.(*LeakyBucket).Check(goldenT0+1500e6, LeakyBucketParams{Capacity: 5, Rate: 2, Period: time.Second}, 1)
	}, Decision{Allowed: true, Limit: 5, Remaining: 4, ResetAfter: 500 * time.Millisecond}}, // level 3 drained by 3
	"fixed": {func(st State) Decision {
		return st.(*Window).Check(goldenT0+1500e6, WindowParams{Limit: 10, Window: time.Minute, Mode: WindowFixed}, 1)
	}, Decision{Allowed: true, Limit: 10, Remaining: 5, ResetAfter: 58500 * time.Millisecond}},
	"sliding": {func(st State) Decision {
		return st.(*Window).Check(goldenT0+1500e6, WindowParams{Limit: 10, Window: time.Minute, Mode: WindowSliding}, 1)
	}, Decision{Allowed: true, Limit: 10, Remaining: 1, ResetAfter: 118500 * time.Millisecond}}, // 6*58.5/60 + 2 + 1 = 8.85
	"log": {func(st State) Decision {
		return st.(*Window).Check(goldenT0+1500e6, WindowParams{Limit: 5, Window: 10 * time.Second, Mode: WindowLog}, 1)
	}, Decision{Allowed: true, Limit: 5, Remaining: 1, ResetAfter: 10 * time.Second}}, // 2 + 1 in the log, +1 now
	"concurrency": {func(st State) Decision {
		return st.(*Concurrency).Check(goldenT0+1500e6, ConcurrencyParams{Limit: 3}, 1)
	}, Decision{Allowed: true, Limit: 3, Remaining: 0, ResetAfter: 118500 * time.Millisecond}},
}

func TestGoldenEncodings(t *testing.T) {
	if os.Getenv("ENGINE_WRITE_GOLDEN") == "1" {
		var b strings.Builder
		b.WriteString("# name kind hex(AppendBinary), engine state encodings v1: never edit\n")
		for _, name := range []string{"gcra", "tokenbucket", "leakybucket", "fixed", "sliding", "log", "concurrency"} {
			st := goldenStates()[name]
			enc, err := st.AppendBinary(nil)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "%s %d %s\n", name, st.Kind(), hex.EncodeToString(enc))
		}
		if err := os.WriteFile(goldenFile, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Open(goldenFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	seen := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		var name string
		var kind int
		var hx string
		if _, err := fmt.Sscan(line, &name, &kind, &hx); err != nil {
			t.Fatalf("golden line %q: %v", line, err)
		}
		enc, err := hex.DecodeString(hx)
		if err != nil {
			t.Fatal(err)
		}
		st, err := Decode(Kind(kind), enc)
		if err != nil {
			t.Fatalf("%s: Decode: %v", name, err)
		}
		again, _ := st.AppendBinary(nil)
		if hex.EncodeToString(again) != hx {
			t.Errorf("%s: re-encodes as %x, golden %s", name, again, hx)
		}
		next, ok := goldenNext[name]
		if !ok {
			t.Fatalf("golden file names unknown state %q", name)
		}
		if d := next.ask(st); d != next.want {
			t.Errorf("%s: restored state answers %+v, want %+v", name, d, next.want)
		}
		seen++
	}
	if seen != len(goldenNext) {
		t.Fatalf("golden file holds %d states, want %d", seen, len(goldenNext))
	}
}
