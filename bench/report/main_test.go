package main

import (
	"strings"
	"testing"
)

func rounds(rps ...float64) map[int]sample {
	m := map[int]sample{}
	for i, r := range rps {
		m[i+1] = sample{rps: r}
	}
	return m
}

func TestReach(t *testing.T) {
	for _, tc := range []struct {
		name           string
		factor         float64
		need, ceil, rl map[int]sample
		want           string
	}{
		// 8 × the Lua median 150k = 1.2M against a ceiling whose best round is 1.1M.
		{"above the ceiling", 8, rounds(140e3, 150e3, 160e3), rounds(1.0e6, 1.1e6, 1.05e6), rounds(0.9e6), "needs 1,200,000 ops/s, 1.09× the ceiling (1,100,000, the best round of the ceiling server or of rlserver): OUT OF REACH"},
		{"within 5%", 8, rounds(150e3), rounds(1.25e6), rounds(1.2e6), "0.96× the ceiling (1,250,000, the best round of the ceiling server or of rlserver): at the ceiling"},
		{"below", 8, rounds(100e3), rounds(1.25e6), rounds(0.7e6), "0.64× the ceiling (1,250,000, the best round of the ceiling server or of rlserver): within reach"},
		// The ceiling's rounds all came out below rlserver's: rlserver's best is the bound.
		{"rlserver's round is the bound", 8, rounds(160e3), rounds(1.0e6, 1.05e6), rounds(1.2e6, 1.3e6), "0.98× the ceiling (1,300,000, the best round of the ceiling server or of rlserver): at the ceiling"},
		{"no ceiling measured", 8, rounds(150e3), nil, rounds(1.2e6), ""},
	} {
		got := reach(tc.factor, tc.need, tc.ceil, tc.rl)
		if (tc.want == "") != (got == "") || !strings.HasSuffix(got, tc.want) {
			t.Errorf("%s: reach = %q, want it to end in %q", tc.name, got, tc.want)
		}
	}
}

// TestNearIncr: a workload is compared with the INCR runs made right after
// its own when there are any, else with the INCR workload's.
func TestNearIncr(t *testing.T) {
	runs := map[key]map[int]sample{
		{16, "hot", "incr", "redis"}: rounds(1.7e6),
		{16, "hot", "gcra", "incr"}:  rounds(1.6e6),
	}
	if got, want := nearIncr(runs, 16, "hot", "gcra"), (key{16, "hot", "gcra", "incr"}); got != want {
		t.Errorf("gcra: %v, want %v", got, want)
	}
	if got, want := nearIncr(runs, 16, "hot", "fixed"), (key{16, "hot", "incr", "redis"}); got != want {
		t.Errorf("fixed (no INCR runs of its own): %v, want %v", got, want)
	}
}

// TestAllCPU: CL.ALL's CPU per call against the mean of its rules'
// single-key commands, round by round, the median of the ratios.
func TestAllCPU(t *testing.T) {
	cpu := func(v ...float64) map[int]sample {
		m := map[int]sample{}
		for i, c := range v {
			m[i+1] = sample{rps: 1, cpu: c}
		}
		return m
	}
	runs := map[key]map[int]sample{
		{16, "hot", "all3", "rl"}:          cpu(3.0, 2.1, 2.4),
		{16, "hot", "tokenbucket", "rl"}:   cpu(1.4, 1.5, 1.5),
		{16, "hot", "gcra", "rl"}:          cpu(1.5, 1.4, 1.5),
		{16, "hot", "fixed", "rl"}:         cpu(1.6, 1.3, 1.5),
		{16, "hot", "all3", "ceil"}:        cpu(1.2, 1.2, 1.2),
		{16, "hot", "tokenbucket", "ceil"}: cpu(1.0, 1.0, 1.0),
		{16, "hot", "gcra", "ceil"}:        cpu(1.0, 1.0, 1.0),
		{16, "hot", "fixed", "ceil"}:       cpu(1.0, 1.0, 1.0),
	}
	// Rounds: 3.0/1.5 = 2.0, 2.1/1.4 = 1.5, 2.4/1.5 = 1.6.
	want := "- FAIL P16 hot all3: CL.ALL server CPU / its rules' single-key commands' 1.60× (target ≤ 1.5×; the ceiling server's, doing no work: 1.20×)"
	if got := allCPU(runs, 16, "hot"); got != want {
		t.Errorf("allCPU = %q, want %q", got, want)
	}
	runs[key{16, "hot", "all3", "rl"}] = cpu(2.1, 2.1, 2.1)
	if got := allCPU(runs, 16, "hot"); !strings.HasPrefix(got, "- PASS") {
		t.Errorf("allCPU = %q, want a pass", got)
	}
	// A round without one of the single-key commands is left out; no
	// round left, no check.
	delete(runs, key{16, "hot", "gcra", "rl"})
	if got := allCPU(runs, 16, "hot"); got != "" {
		t.Errorf("allCPU = %q without gcra runs, want none", got)
	}
}
