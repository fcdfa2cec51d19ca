package engine

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// The golden file holds, for each limiter kind, the version-1 encoding of a
// used state (parameters and state, as persisted on disk inside a version-1
// persist record). It was written once by TestGoldenEncodings with
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
			enc, err := appendV1(st, nil)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "%s %d %s\n", name, st.Kind(), hex.EncodeToString(enc))
		}
		if err := os.WriteFile(goldenFile, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	seen := 0
	for _, line := range goldenLines(t, goldenFile) {
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
		st, err := DecodeV1(Kind(kind), enc)
		if err != nil {
			t.Fatalf("%s: DecodeV1: %v", name, err)
		}
		again, _ := appendV1(st, nil)
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

// The v2 golden file holds, for each golden state, its compact encoding (the
// payload of a version-2 persist record) and the ref it was made with. It
// was written once by TestGoldenCompact with ENGINE_WRITE_GOLDEN_V2=1 and
// committed. If this test fails, a change broke the compact format, which
// users have on disk: never regenerate the file to make it pass; add a new
// record version instead (see compact.go).
const goldenV2File = "testdata/golden-v2.txt"

// goldenRef is the ref (the key's expiry) the v2 golden states are encoded
// with.
var goldenRef = map[string]int64{
	"gcra":        goldenT0 + 3e9,
	"tokenbucket": goldenT0 + int64(4*time.Second),
	"leakybucket": goldenT0 + 1500e6,
	"fixed":       goldenT0 + int64(time.Minute),
	"sliding":     goldenT0 + int64(2*time.Minute),
	"log":         goldenT0 + int64(10*time.Second),
	"concurrency": goldenT0 + int64(2*time.Minute),
}

func TestGoldenCompact(t *testing.T) {
	names := []string{"gcra", "tokenbucket", "leakybucket", "fixed", "sliding", "log", "concurrency"}
	if os.Getenv("ENGINE_WRITE_GOLDEN_V2") == "1" {
		var b strings.Builder
		b.WriteString("# name kind ref hex(AppendCompact(ref)), engine state encodings v2: never edit\n")
		for _, name := range names {
			st := goldenStates()[name]
			fmt.Fprintf(&b, "%s %d %d %s\n", name, st.Kind(), goldenRef[name], hex.EncodeToString(st.AppendCompact(nil, goldenRef[name])))
		}
		if err := os.WriteFile(goldenV2File, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	seen := 0
	for _, line := range goldenLines(t, goldenV2File) {
		var name, hx string
		var kind int
		var ref int64
		if _, err := fmt.Sscan(line, &name, &kind, &ref, &hx); err != nil {
			t.Fatalf("golden line %q: %v", line, err)
		}
		enc, err := hex.DecodeString(hx)
		if err != nil {
			t.Fatal(err)
		}
		st := Kind(kind).New()
		if st == nil {
			t.Fatalf("%s: unknown kind %d", name, kind)
		}
		if err := st.DecodeCompact(enc, ref); err != nil {
			t.Fatalf("%s: DecodeCompact: %v", name, err)
		}
		if again := st.AppendCompact(nil, ref); hex.EncodeToString(again) != hx {
			t.Errorf("%s: re-encodes as %x, golden %s", name, again, hx)
		}
		// The golden state made today encodes to the same bytes, and holds
		// what the v1 golden state holds.
		want, ok := goldenStates()[name]
		if !ok {
			t.Fatalf("golden file names unknown state %q", name)
		}
		if got := want.AppendCompact(nil, ref); hex.EncodeToString(got) != hx {
			t.Errorf("%s: the golden state encodes as %x today, golden %s", name, got, hx)
		}
		v1, _ := appendV1(st, nil)
		if w1, _ := appendV1(want, nil); !bytes.Equal(v1, w1) {
			t.Errorf("%s: decodes to the v1 state %x, want %x", name, v1, w1)
		}
		next := goldenNext[name]
		if d := next.ask(st); d != next.want {
			t.Errorf("%s: restored state answers %+v, want %+v", name, d, next.want)
		}
		seen++
	}
	if seen != len(goldenNext) {
		t.Fatalf("golden file holds %d states, want %d", seen, len(goldenNext))
	}
}

// TestGoldenEveryKind fails for a registered kind without a golden
// compact encoding: a new kind's codec is on disk from its first release,
// so it needs its golden entry (a state in goldenStates, its ref in
// goldenRef, its next answer in goldenNext and its line in the v2 file,
// written with ENGINE_WRITE_GOLDEN_V2=1) before it ships.
func TestGoldenEveryKind(t *testing.T) {
	has := map[Kind]bool{}
	for _, line := range goldenLines(t, goldenV2File) {
		var name string
		var kind int
		if _, err := fmt.Sscan(line, &name, &kind); err != nil {
			t.Fatalf("golden line %q: %v", line, err)
		}
		if _, ok := goldenNext[name]; !ok {
			t.Errorf("golden line %q: no goldenNext entry", line)
		}
		has[Kind(kind)] = true
	}
	ks := Kinds()
	if len(ks) == 0 {
		t.Fatal("no kind registered")
	}
	for _, k := range ks {
		if !has[k] {
			t.Errorf("kind %d (%v) has no line in %s", k, k, goldenV2File)
		}
	}
}

// goldenLines returns the lines of a golden file but its comments and
// blank lines.
func goldenLines(t *testing.T, file string) []string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, line := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(line, "#") && line != "" {
			lines = append(lines, line)
		}
	}
	return lines
}
