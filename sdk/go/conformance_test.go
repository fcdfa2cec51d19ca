package rlserver

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The shared conformance cases (sdk/conformance/cases.json, described in
// its README) run through the typed limiters against a real server.
// go test -run Conformance -update rewrites the expectations from what the
// server answers: review the diff against docs before committing it.
var update = flag.Bool("update", false, "rewrite sdk/conformance/cases.json from the server's answers")

const casesPath = "../conformance/cases.json"

type confFile struct {
	Format      int        `json:"format"`
	StartUnixMs int64      `json:"start_unix_ms"`
	Policy      string     `json:"policy"`
	Cases       []confCase `json:"cases"`
}

type confCase struct {
	Name  string     `json:"name"`
	Steps []confStep `json:"steps"`
}

type confStep struct {
	AdvanceMs *int64            `json:"advance_ms,omitempty"`
	Command   []string          `json:"command,omitempty"`
	Decision  []int64           `json:"decision,omitempty"`
	Lease     *bool             `json:"lease,omitempty"`
	All       *confAll          `json:"all,omitempty"`
	Reply     any               `json:"reply,omitempty"`
	Error     string            `json:"error,omitempty"`
	Headers   map[string]string `json:"headers,omitempty"`
}

type confAll struct {
	Allowed   int64     `json:"allowed"`
	Decisions [][]int64 `json:"decisions"`
}

// headerNames are the fields a step's "headers" lists; one not listed must be absent.
var headerNames = []string{"RateLimit", "RateLimit-Policy", "Retry-After", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"}

func decisionInts(d Decision) []int64 {
	a := int64(0)
	if d.Allowed {
		a = 1
	}
	ms := func(x time.Duration) int64 {
		if x == Never {
			return -1
		}
		return int64(x / time.Millisecond)
	}
	return []int64{a, d.Limit, d.Remaining, ms(d.RetryAfter), ms(d.ResetAfter)}
}

// parseDur reads the contract's durations: a bare integer is seconds.
func parseDur(t *testing.T, s string) time.Duration {
	for _, u := range []struct {
		suf string
		d   time.Duration
	}{{"ms", time.Millisecond}, {"s", time.Second}, {"m", time.Minute}, {"h", time.Hour}, {"d", 24 * time.Hour}} {
		if n, err := strconv.ParseInt(strings.TrimSuffix(s, u.suf), 10, 64); err == nil && strings.HasSuffix(s, u.suf) {
			return time.Duration(n) * u.d
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("bad duration %q", s)
	}
	return time.Duration(n) * time.Second
}

func atoi(t *testing.T, s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("bad integer %q", s)
	}
	return n
}

// ruleOf builds a typed limiter from a CL.ALL rule's words, returning it
// and how many words it took.
func ruleOf(t *testing.T, c *Client, w []string) (Rule, int) {
	switch strings.ToUpper(w[0]) {
	case "TOKENBUCKET":
		return c.TokenBucket(atoi(t, w[2]), atoi(t, w[3]), parseDur(t, w[4])).Rule(w[1]), 5
	case "THROTTLE":
		return c.Throttle(atoi(t, w[2]), atoi(t, w[3]), parseDur(t, w[4])).Rule(w[1]), 5
	case "LEAKYBUCKET":
		return c.LeakyBucket(atoi(t, w[2]), atoi(t, w[3]), parseDur(t, w[4])).Rule(w[1]), 5
	case "FIXED", "SLIDING", "LOG":
		return c.Window(WindowMode(strings.ToUpper(w[0])), atoi(t, w[2]), parseDur(t, w[3])).Rule(w[1]), 4
	case "ACQUIRE":
		return c.Concurrency(atoi(t, w[2]), parseDur(t, w[3])).Rule(w[1]), 4
	}
	t.Fatalf("unknown rule %q", w[0])
	return Rule{}, 0
}

// runStep sends one command through the SDK and fills got with the outcome,
// in the file's form.
func runStep(t *testing.T, ctx context.Context, c *Client, policy string, cmd []string, lease *string) (got confStep) {
	got.Command = cmd
	opt := func(i int, def int64) int64 {
		if i < len(cmd) {
			return atoi(t, cmd[i])
		}
		return def
	}
	var d Decision
	var lim Limiter
	var err error
	switch name := strings.ToUpper(cmd[0]); name {
	case "CL.TOKENBUCKET":
		tb := c.TokenBucket(atoi(t, cmd[2]), atoi(t, cmd[3]), parseDur(t, cmd[4]))
		lim = tb
		if len(cmd) > 7 && strings.EqualFold(cmd[6], "RESERVE") {
			d, err = tb.ReserveN(ctx, cmd[1], atoi(t, cmd[5]), parseDur(t, cmd[7]))
		} else {
			d, err = tb.AllowN(ctx, cmd[1], opt(5, 1))
		}
	case "CL.LEAKYBUCKET":
		lb := c.LeakyBucket(atoi(t, cmd[2]), atoi(t, cmd[3]), parseDur(t, cmd[4]))
		lim = lb
		d, err = lb.AllowN(ctx, cmd[1], opt(5, 1))
	case "CL.WINDOW":
		mode := Sliding
		if len(cmd) > 5 {
			mode = WindowMode(strings.ToUpper(cmd[5]))
		}
		wl := c.Window(mode, atoi(t, cmd[2]), parseDur(t, cmd[3]))
		lim = wl
		d, err = wl.AllowN(ctx, cmd[1], opt(4, 1))
	case "CL.ACQUIRE":
		cl := c.Concurrency(atoi(t, cmd[2]), parseDur(t, cmd[3]))
		lim = cl
		var le *Lease
		le, d, err = cl.Acquire(ctx, cmd[1], opt(4, 1))
		has := le != nil
		got.Lease = &has
		if has {
			*lease = le.ID
		}
	case "CL.ALL":
		nr := int(atoi(t, cmd[1]))
		var rules []Rule
		w := cmd[2:]
		for range nr {
			r, k := ruleOf(t, c, w)
			rules = append(rules, r)
			w = w[k:]
		}
		cost := int64(1)
		if len(w) == 2 && strings.EqualFold(w[0], "COST") {
			cost = atoi(t, w[1])
		}
		ad, err := c.All(ctx, cost, rules...)
		if err != nil {
			got.Error = strings.Fields(err.Error())[0]
			return got
		}
		got.All = &confAll{Decisions: [][]int64{}}
		if ad.Allowed {
			got.All.Allowed = 1
		}
		for i, d := range ad.Decisions {
			got.All.Decisions = append(got.All.Decisions, decisionInts(d))
			if ad.Leases[i] != nil {
				*lease = ad.Leases[i].ID
			}
		}
		return got
	case "CL.RELEASE", "CL.RENEW":
		le := &Lease{ID: *lease, c: c, key: cmd[1]}
		var ok bool
		if name == "CL.RELEASE" {
			ok, err = le.Release(ctx)
		} else {
			ok, err = le.Renew(ctx, parseDur(t, cmd[3]))
		}
		if err == nil {
			got.Reply = map[bool]int64{true: 1, false: 0}[ok]
		}
	default: // CL.THROTTLE and GCRA: their own reply, checked as is
		args := make([]any, len(cmd))
		for i, a := range cmd {
			args[i] = a
		}
		var v any
		v, err = c.Redis().Do(ctx, args...).Result()
		got.Reply = v
	}
	if err != nil {
		got.Error = strings.Fields(err.Error())[0]
		got.Reply, got.Lease = nil, nil
		return got
	}
	if lim != nil {
		got.Decision = decisionInts(d)
		h := http.Header{}
		SetHeaders(h, policy, lim.Window(), d, true)
		got.Headers = map[string]string{}
		for _, n := range headerNames {
			if v := h.Get(n); v != "" {
				got.Headers[n] = v
			}
		}
	}
	return got
}

// normalise makes a step comparable: JSON numbers and go-redis int64s alike.
func normalise(t *testing.T, s confStep) string {
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestConformance(t *testing.T) {
	raw, err := os.ReadFile(casesPath)
	if err != nil {
		t.Fatal(err)
	}
	var f confFile
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	if f.Format != 1 || len(f.Cases) == 0 {
		t.Fatalf("unexpected cases file: format %d, %d cases", f.Format, len(f.Cases))
	}
	srv := startServer(t)
	rdb := srv.client(t)
	c := New(rdb, Options{})
	ctx := context.Background()
	for ci := range f.Cases {
		cs := &f.Cases[ci]
		t.Run(cs.Name, func(t *testing.T) {
			if err := rdb.FlushAll(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			setClock(t, rdb, f.StartUnixMs)
			lease := ""
			for si := range cs.Steps {
				st := &cs.Steps[si]
				if st.AdvanceMs != nil {
					advance(t, rdb, *st.AdvanceMs)
					continue
				}
				cmd := make([]string, len(st.Command))
				for i, a := range st.Command {
					cmd[i] = strings.ReplaceAll(a, "$lease", lease)
				}
				got := runStep(t, ctx, c, f.Policy, cmd, &lease)
				got.Command = st.Command
				if *update {
					*st = got
					continue
				}
				if g, w := normalise(t, got), normalise(t, *st); g != w {
					t.Errorf("step %d:\n got %s\nwant %s", si, g, w)
				}
			}
		})
	}
	if *update {
		writeCases(t, f)
	}
}

// writeCases writes the file with one step per line, for readable diffs.
func writeCases(t *testing.T, f confFile) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "{\n \"format\": %d,\n \"start_unix_ms\": %d,\n \"policy\": %q,\n \"cases\": [\n", f.Format, f.StartUnixMs, f.Policy)
	for ci, cs := range f.Cases {
		name, _ := json.Marshal(cs.Name)
		fmt.Fprintf(&b, "  {\"name\": %s, \"steps\": [\n", name)
		for si, st := range cs.Steps {
			line, err := json.Marshal(st)
			if err != nil {
				t.Fatal(err)
			}
			sep := ","
			if si == len(cs.Steps)-1 {
				sep = ""
			}
			fmt.Fprintf(&b, "   %s%s\n", line, sep)
		}
		sep := ","
		if ci == len(f.Cases)-1 {
			sep = ""
		}
		fmt.Fprintf(&b, "  ]}%s\n", sep)
	}
	b.WriteString(" ]\n}\n")
	if err := os.WriteFile(casesPath, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
