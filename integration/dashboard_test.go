package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/rlserver/rlserver/cluster"
)

// dashboardQueries returns every PromQL query of a Grafana dashboard: the
// panels' targets (rows' nested panels too) and the template variables'.
func dashboardQueries(t *testing.T, file string) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels     []json.RawMessage `json:"panels"`
		Templating struct {
			List []struct {
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	var out []string
	var walk func(raw []json.RawMessage)
	walk = func(raw []json.RawMessage) {
		for _, r := range raw {
			var p struct {
				Targets []struct {
					Expr string `json:"expr"`
				} `json:"targets"`
				Panels []json.RawMessage `json:"panels"`
			}
			if err := json.Unmarshal(r, &p); err != nil {
				t.Fatal(err)
			}
			for _, tg := range p.Targets {
				out = append(out, tg.Expr)
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		switch q := v.Query.(type) {
		case string:
			out = append(out, q)
		case map[string]any:
			out = append(out, fmt.Sprint(q["query"]))
		}
	}
	return out
}

var (
	promStrings   = regexp.MustCompile(`"(\\.|[^"\\])*"`)
	promMatchers  = regexp.MustCompile(`\{[^}]*\}|\[[^\]]*\]`)
	promGrouping  = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	promLabelVals = regexp.MustCompile(`label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*,[^)]*\)`)
	promNumbers   = regexp.MustCompile(`\b[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?[a-zA-Z]*`) // 0.99, 1e3, 5m
	promIdent     = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*(\s*\()?`)
	promKeywords  = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
		"bool": true, "and": true, "or": true, "unless": true, "offset": true, "inf": true, "nan": true}
)

// metricNames returns the metric names a PromQL query selects: what is
// left once strings, label matchers, ranges, grouping clauses, function
// names, numbers, durations and keywords are taken out.
func metricNames(q string) []string {
	q = promStrings.ReplaceAllString(q, `""`)
	q = promLabelVals.ReplaceAllString(q, "$1")
	q = promMatchers.ReplaceAllString(q, " ")
	q = promGrouping.ReplaceAllString(q, " ")
	q = promNumbers.ReplaceAllString(q, " ")
	var names []string
	for _, m := range promIdent.FindAllString(q, -1) {
		if strings.HasSuffix(m, "(") || promKeywords[strings.ToLower(m)] {
			continue // a function call or a keyword
		}
		names = append(names, m)
	}
	return names
}

func TestMetricNamesOfQueries(t *testing.T) {
	for q, want := range map[string]string{
		`sum by (command, outcome) (rate(rlserver_decisions_total{instance=~"$instance"}[$__rate_interval]))`: "rlserver_decisions_total",
		`histogram_quantile(0.99, sum by (le) (rate(a_bucket{x="}"}[5m]))) / on (instance) group_left b > 0`:  "a_bucket b",
		`label_values(rlserver_ready, instance)`: "rlserver_ready",
		`time() - rlserver_persistence_last_flush_timestamp_seconds{instance=~"$instance"} and ignoring(job) c offset 5m`: "rlserver_persistence_last_flush_timestamp_seconds c",
	} {
		if got := strings.Join(metricNames(q), " "); got != want {
			t.Errorf("metricNames(%s) = %q, want %q", q, got, want)
		}
	}
}

// TestGrafanaDashboard: every query of deploy/grafana/rlserver.json names
// a metric that rlserver exports, as scraped from a primary and its
// replica with persistence on (so that the replication and persistence
// metrics are there) after a decision.
func TestGrafanaDashboard(t *testing.T) {
	t.Parallel()
	queries := dashboardQueries(t, filepath.Join("..", "deploy", "grafana", "rlserver.json"))
	used := map[string][]string{}
	for _, q := range queries {
		for _, n := range metricNames(q) {
			used[n] = append(used[n], q)
		}
	}
	if len(queries) < 20 || len(used) < 15 {
		t.Fatalf("the dashboard has %d queries naming %d metrics: too few to be the dashboard", len(queries), len(used))
	}

	dir := t.TempDir()
	ports := freePorts(t, 2)
	node := func(i int) cluster.Node {
		return cluster.Node{ID: fmt.Sprintf("%040x", 0xd0+i), Host: "127.0.0.1", Port: ports[i]}
	}
	topo := cluster.Topology{Version: 1, Shards: []cluster.Shard{{Slots: []cluster.Range{{0, 16383}}, Primary: node(0), Replicas: []cluster.Node{node(1)}}}}
	b, err := json.Marshal(topo)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "topology.json")
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	var nodes [2]*server
	for i := range nodes {
		d := filepath.Join(dir, "node"+strconv.Itoa(i))
		s, err := startCmd(t, d, serverCommand("--port", strconv.Itoa(ports[i]), "--dir", d, "--cluster-config", file, "--metrics-addr", "127.0.0.1:0"))
		if err != nil {
			t.Fatal(err)
		}
		nodes[i] = s
	}
	primary := nodes[0].client(t, 2)
	eventually(t, "the replica to be synchronised", func() bool {
		role, err := primary.Do(ctx, "ROLE").Slice()
		if err != nil || len(role) < 3 {
			return false
		}
		reps, _ := role[2].([]any)
		return len(reps) == 1
	})
	do(t, primary, "CL.THROTTLE", "user:1", 1, 1, 60).ints()
	do(t, primary, "CL.TOKENBUCKET", "user:1", 1, 1, 1).errIs("WRONGTYPE Operation against a key holding the wrong kind of value") // errors_total

	exported := map[string]bool{}
	for _, n := range nodes {
		addr := n.metricsAddr(t)
		eventually(t, "/readyz on "+n.Addr, func() bool {
			code, _ := httpGet(t, "http://"+addr+"/readyz")
			return code == 200
		})
		for name, f := range scrape(t, addr) {
			exported[name] = true
			if f.GetType().String() == "HISTOGRAM" {
				exported[name+"_bucket"], exported[name+"_sum"], exported[name+"_count"] = true, true, true
			}
			if f.GetType().String() == "SUMMARY" {
				exported[name+"_sum"], exported[name+"_count"] = true, true
			}
		}
	}
	var names []string
	for n := range used {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if !exported[n] {
			t.Errorf("the dashboard queries %s, which rlserver does not export: %q", n, used[n])
		}
	}
}
