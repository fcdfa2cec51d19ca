package integration

// Observability: INFO's statistics sections with exact counters and
// Redis's field formats (checked against Debian's redis-server), SLOWLOG
// and LATENCY in Redis's reply shapes, /metrics parsed with Prometheus's
// text parser, /healthz and /readyz.

import (
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/redis/go-redis/v9"
)

// infoLines returns an INFO reply's fields, by name.
func infoLines(info string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(info, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && !strings.HasPrefix(line, "#") {
			out[k] = v
		}
	}
	return out
}

func infoOf(t *testing.T, c *redis.Client, sections ...any) map[string]string {
	t.Helper()
	v, err := c.Do(ctx, append([]any{"INFO"}, sections...)...).Text()
	if err != nil {
		t.Fatalf("INFO %v: %v", sections, err)
	}
	return infoLines(v)
}

// metricsAddr returns the address a server started with --metrics-addr
// 127.0.0.1:0 logged.
func (s *server) metricsAddr(t *testing.T) string {
	t.Helper()
	re := regexp.MustCompile(`metrics: serving http://([0-9.:]+)/metrics`)
	var addr string
	eventually(t, "the metrics address in the log", func() bool {
		if m := re.FindStringSubmatch(s.logs.String()); m != nil {
			addr = m[1]
			return true
		}
		return false
	})
	return addr
}

// scrape fetches and parses /metrics with Prometheus's text parser.
func scrape(t *testing.T, addr string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/metrics: %s", resp.Status)
	}
	var p expfmt.TextParser
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	return fams
}

// sample returns the value of family name's sample with exactly labels.
func sample(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	t.Helper()
	f := fams[name]
	if f == nil {
		t.Fatalf("/metrics lacks %s", name)
	}
next:
	for _, m := range f.Metric {
		if len(m.Label)*2 != len(labels) {
			continue
		}
		for i := 0; i < len(labels); i += 2 {
			found := false
			for _, l := range m.Label {
				if l.GetName() == labels[i] && l.GetValue() == labels[i+1] {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	t.Fatalf("/metrics has no %s%v", name, labels)
	return 0
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestInfoCommandStats: INFO commandstats, errorstats and latencystats
// count exactly what ran, failed and was rejected, one by one and
// pipelined, in Redis's formats; a command that never ran has no line;
// CONFIG RESETSTAT starts them again.
func TestInfoCommandStats(t *testing.T) {
	t.Parallel()
	s := start(t)
	c := redis.NewClient(&redis.Options{Addr: s.Addr, Protocol: 2, DisableIdentity: true})
	t.Cleanup(func() { c.Close() })
	do(t, c, "CONFIG", "RESETSTAT").equal("OK")
	for range 5 {
		do(t, c, "CL.THROTTLE", "user:1", 2, 1, 60).ints()
	}
	pipe := c.Pipeline()
	for range 100 {
		pipe.Do(ctx, "CL.THROTTLE", "user:2", 10, 1, 60)
	}
	pipe.Do(ctx, "PING")
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	do(t, c, "CL.TOKENBUCKET", "user:1", 1, 1, 1).errIs("WRONGTYPE Operation against a key holding the wrong kind of value")
	do(t, c, "CL.THROTTLE", "user:1").errIs("ERR wrong number of arguments for 'cl.throttle' command")
	do(t, c, "NOSUCH").errIs("ERR unknown command 'NOSUCH', with args beginning with: ")
	do(t, c, "CONFIG", "NOSUCH").errIs("ERR unknown subcommand 'NOSUCH'. Try CONFIG HELP.")
	do(t, c, "CONFIG", "GET").errIs("ERR wrong number of arguments for 'config|get' command")

	info := infoOf(t, c, "commandstats")
	delete(info, "cmdstat_hello") // go-redis's handshake, on each connection it opens
	format := regexp.MustCompile(`^calls=(\d+),usec=(\d+),usec_per_call=(\d+\.\d\d),rejected_calls=(\d+),failed_calls=(\d+)$`)
	want := map[string][3]string{ // calls, rejected, failed
		"cmdstat_config|resetstat": {"1", "0", "0"},
		"cmdstat_cl.throttle":      {"105", "1", "0"},
		"cmdstat_ping":             {"1", "0", "0"},
		"cmdstat_cl.tokenbucket":   {"1", "0", "1"},
		"cmdstat_config|get":       {"0", "1", "0"},
	}
	if len(info) != len(want) {
		t.Fatalf("INFO commandstats = %v, want only %v", info, want)
	}
	for name, w := range want {
		m := format.FindStringSubmatch(info[name])
		if m == nil || m[1] != w[0] || m[4] != w[1] || m[5] != w[2] {
			t.Fatalf("%s:%s, want calls=%s rejected_calls=%s failed_calls=%s", name, info[name], w[0], w[1], w[2])
		}
	}
	errs := infoOf(t, c, "errorstats")
	if fmt.Sprint(errs) != "map[errorstat_ERR:count=4 errorstat_WRONGTYPE:count=1]" {
		t.Fatalf("INFO errorstats = %v", errs)
	}
	if n := infoOf(t, c, "stats")["total_error_replies"]; n != "5" {
		t.Fatalf("total_error_replies = %s, want 5", n)
	}
	lat := infoOf(t, c, "latencystats")
	pct := regexp.MustCompile(`^p50=\d+\.\d{3},p99=\d+\.\d{3},p99\.9=\d+\.\d{3}$`)
	for _, name := range []string{"cl.throttle", "ping", "cl.tokenbucket", "config|resetstat", "info"} {
		if v := lat["latency_percentiles_usec_"+name]; !pct.MatchString(v) {
			t.Fatalf("latency_percentiles_usec_%s:%s", name, v)
		}
	}
	if _, ok := lat["latency_percentiles_usec_config|get"]; ok {
		t.Fatalf("a command only rejected has latency percentiles: %v", lat)
	}
	do(t, c, "CONFIG", "SET", "latency-tracking-info-percentiles", "50 99.99").equal("OK")
	if v := infoOf(t, c, "latencystats")["latency_percentiles_usec_ping"]; !regexp.MustCompile(`^p50=\d+\.\d{3},p99\.99=\d+\.\d{3}$`).MatchString(v) {
		t.Fatalf("with percentiles 50 99.99: %s", v)
	}

	// The default sections have no commandstats; all has.
	def := do(t, c, "INFO").val.(string)
	all := do(t, c, "INFO", "all").val.(string)
	for _, sec := range []string{"# Server", "# Clients", "# Memory", "# Persistence", "# Stats", "# Replication", "# CPU", "# Modules", "# Errorstats", "# Cluster", "# Keyspace"} {
		if !strings.Contains(def, sec+"\r\n") || !strings.Contains(all, sec+"\r\n") {
			t.Fatalf("INFO or INFO all lacks %s", sec)
		}
	}
	if strings.Contains(def, "# Commandstats") || !strings.Contains(all, "# Commandstats\r\ncmdstat_") || !strings.Contains(all, "# Latencystats\r\nlatency_percentiles_usec_") {
		t.Fatalf("INFO has commandstats or INFO all has not:\n%s", all)
	}

	do(t, c, "CONFIG", "RESETSTAT").equal("OK")
	if info := infoOf(t, c, "commandstats"); fmt.Sprint(info) != "map[cmdstat_config|resetstat:"+info["cmdstat_config|resetstat"]+"]" ||
		!strings.HasPrefix(info["cmdstat_config|resetstat"], "calls=1,") {
		t.Fatalf("INFO commandstats after CONFIG RESETSTAT = %v", info)
	}
	if errs := infoOf(t, c, "errorstats"); len(errs) != 0 {
		t.Fatalf("INFO errorstats after CONFIG RESETSTAT = %v", errs)
	}
	// A connection that closed still counts.
	other := redis.NewClient(&redis.Options{Addr: s.Addr, Protocol: 2, DisableIdentity: true})
	do(t, other, "CL.THROTTLE", "user:3", 1, 1, 60).ints()
	other.Close()
	eventually(t, "the closed connection's call counted", func() bool {
		return strings.HasPrefix(infoOf(t, c, "commandstats")["cmdstat_cl.throttle"], "calls=1,")
	})
	// A live connection's calls count once however often INFO reads
	// them (each read moves them into the totals), and later ones add.
	live := redis.NewClient(&redis.Options{Addr: s.Addr, Protocol: 2, DisableIdentity: true})
	t.Cleanup(func() { live.Close() })
	pings := func(n int, want string) {
		t.Helper()
		for range n {
			do(t, live, "PING").equal("PONG")
		}
		for range 2 {
			if v := infoOf(t, c, "commandstats")["cmdstat_ping"]; !strings.HasPrefix(v, want) {
				t.Fatalf("cmdstat_ping:%s, want %s...", v, want)
			}
		}
	}
	pings(2, "calls=2,")
	pings(1, "calls=3,")

	// total_commands_processed counts every command once: five PINGs and
	// the INFO calls that read it before.
	total := func() int {
		n, err := strconv.Atoi(infoOf(t, c, "stats")["total_commands_processed"])
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := total()
	for range 5 {
		do(t, live, "PING").equal("PONG")
	}
	polls := 0
	eventually(t, "total_commands_processed to count the PINGs and INFOs", func() bool {
		polls++ // the INFO calls read so far, before this one: polls
		n := total() - before
		if n > 5+polls {
			t.Fatalf("total_commands_processed grew by %d after 5 PINGs and %d INFOs", n, polls)
		}
		return n == 5+polls
	})
}

// TestInfoMatchesRedis: INFO everything has Redis's sections in Redis's
// order, and every field both servers write has the same form (integer,
// float with as many decimals, size like 1.50M, percentage); commandstats,
// errorstats and latencystats lines of the same commands read alike.
func TestInfoMatchesRedis(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatalf("redis-server is not installed (%v): run ./scripts/setup.sh", err)
	}
	port := freePorts(t, 1)[0]
	rs := exec.Command("redis-server", "--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--save", "", "--appendonly", "no", "--dir", t.TempDir())
	if err := rs.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rs.Process.Kill(); rs.Wait() })
	ref := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(port), Protocol: 2, DisableIdentity: true})
	t.Cleanup(func() { ref.Close() })
	eventually(t, "redis-server to answer", func() bool { return ref.Ping(ctx).Err() == nil })
	s := start(t)
	c := redis.NewClient(&redis.Options{Addr: s.Addr, Protocol: 2, DisableIdentity: true})
	t.Cleanup(func() { c.Close() })
	for _, cl := range []*redis.Client{ref, c} {
		do(t, cl, "CONFIG", "RESETSTAT").equal("OK")
		do(t, cl, "PING").equal("PONG")
		do(t, cl, "EXISTS").errIs("ERR wrong number of arguments for 'exists' command")
	}
	do(t, ref, "SET", "k", "v").equal("OK")
	do(t, c, "CL.THROTTLE", "k", 1, 1, 60).ints()

	sections := func(info string) (names []string, fields map[string]string) {
		for _, line := range strings.Split(info, "\r\n") {
			if name, ok := strings.CutPrefix(line, "# "); ok {
				names = append(names, name)
			}
		}
		return names, infoLines(info)
	}
	refNames, refFields := sections(do(t, ref, "INFO", "everything").val.(string))
	ourNames, ourFields := sections(do(t, c, "INFO", "everything").val.(string))
	if strings.Join(refNames, ",") != strings.Join(ourNames, ",") {
		t.Fatalf("INFO everything sections: %v, Redis's %v", ourNames, refNames)
	}
	forms := []struct {
		name string
		re   *regexp.Regexp
	}{
		{"integer", regexp.MustCompile(`^-?\d+$`)},
		{"percentage", regexp.MustCompile(`^\d+\.\d\d%$`)},
		{"size", regexp.MustCompile(`^\d+(\.\d\d)?[BKMGTPE]$`)},
		{"float", regexp.MustCompile(`^-?\d+\.(\d+)$`)},
	}
	form := func(v string) string {
		for _, f := range forms {
			if m := f.re.FindStringSubmatch(v); m != nil {
				if f.name == "float" {
					return fmt.Sprintf("float with %d decimals", len(m[1]))
				}
				return f.name
			}
		}
		return "text"
	}
	// Identifiers and names: text in both, whatever their letters.
	free := map[string]bool{"redis_build_id": true, "redis_git_sha1": true, "os": true, "executable": true, "config_file": true,
		"run_id": true, "master_replid": true, "master_replid2": true, "mem_allocator": true, "multiplexing_api": true}
	common := 0
	for name, v := range ourFields {
		rv, ok := refFields[name]
		if !ok || free[name] {
			continue
		}
		common++
		if strings.HasPrefix(name, "cmdstat_") || strings.HasPrefix(name, "latency_percentiles_usec_") || name == "db0" {
			// key=value lists: the same keys, each value of the same form
			// (db0: Redis 7.4, whose version rlserver reports, adds
			// subexpiry to 7.0's)
			re := regexp.MustCompile(`[0-9.]+`)
			if n := re.ReplaceAllString(v, "N"); n != re.ReplaceAllString(rv, "N") && !(name == "db0" && n == re.ReplaceAllString(rv, "N")+",subexpiry=N") {
				t.Errorf("%s:%s, Redis's %s", name, v, rv)
			}
			continue
		}
		if form(v) != form(rv) {
			t.Errorf("%s:%s (%s), Redis's %s (%s)", name, v, form(v), rv, form(rv))
		}
	}
	for _, name := range []string{"redis_version", "redis_mode", "process_id", "run_id", "tcp_port", "uptime_in_seconds",
		"connected_clients", "maxclients", "blocked_clients", "used_memory", "used_memory_rss", "used_memory_peak", "maxmemory",
		"mem_fragmentation_ratio", "loading", "rdb_last_save_time", "rdb_last_bgsave_status", "rdb_changes_since_last_save",
		"total_connections_received", "total_commands_processed", "instantaneous_ops_per_sec", "rejected_connections",
		"expired_keys", "evicted_keys", "keyspace_hits", "keyspace_misses", "total_error_replies", "role", "connected_slaves",
		"master_repl_offset", "used_cpu_sys", "used_cpu_user", "cmdstat_ping", "errorstat_ERR", "latency_percentiles_usec_ping",
		"cluster_enabled", "db0"} {
		if _, ok := ourFields[name]; !ok {
			t.Errorf("INFO everything lacks %s (Redis: %s)", name, refFields[name])
		}
	}
	if ourFields["errorstat_ERR"] != "count=1" || refFields["errorstat_ERR"] != "count=1" {
		t.Errorf("errorstat_ERR: %s, Redis's %s", ourFields["errorstat_ERR"], refFields["errorstat_ERR"])
	}
	if common < 60 {
		t.Errorf("only %d fields in common with Redis's INFO", common)
	}
}

// TestSlowlogAndLatency: SLOWLOG GET|LEN|RESET and LATENCY
// LATEST|HISTORY|RESET|HISTOGRAM answer in Redis's shapes, with the
// thresholds set by flag and by CONFIG SET.
func TestSlowlogAndLatency(t *testing.T) {
	t.Parallel()
	s := start(t, "--slowlog-log-slower-than", "0", "--slowlog-max-len", "4")
	c := redis.NewClient(&redis.Options{Addr: s.Addr, Protocol: 2, DisableIdentity: true})
	t.Cleanup(func() { c.Close() })
	do(t, c, "CONFIG", "GET", "slowlog-*").equal([]any{"slowlog-log-slower-than", "0", "slowlog-max-len", "4"})
	do(t, c, "SLOWLOG", "RESET").equal("OK")
	do(t, c, "CLIENT", "SETNAME", "tester").equal("OK")
	do(t, c, "CL.THROTTLE", "k", 1, 1, 60).ints()
	do(t, c, "AUTH", "someone", "secret").errIs("WRONGPASS invalid username-password pair or user is disabled.")
	long := strings.Repeat("x", 200)
	do(t, c, "ECHO", long).equal(long)
	do(t, c, "SLOWLOG", "LEN").equal(4) // max-len 4: SLOWLOG RESET is gone
	got, err := c.Do(ctx, "SLOWLOG", "GET").Slice()
	if err != nil || len(got) != 4 {
		t.Fatalf("SLOWLOG GET = %v %v", got, err)
	}
	wantArgs := [][]any{
		{"SLOWLOG", "LEN"},
		{"ECHO", long[:128] + "... (72 more bytes)"},
		{"AUTH", "(redacted)", "(redacted)"},
		{"CL.THROTTLE", "k", "1", "1", "60"},
	}
	var lastID int64 = -1
	for i, e := range got {
		entry := e.([]any)
		if len(entry) != 6 {
			t.Fatalf("entry %d = %v, want 6 fields", i, entry)
		}
		id, at, us := entry[0].(int64), entry[1].(int64), entry[2].(int64)
		if lastID >= 0 && id != lastID-1 || at < time.Now().Unix()-60 || at > time.Now().Unix()+1 || us < 0 {
			t.Fatalf("entry %d = %v (ids newest first, a recent Unix time, µs)", i, entry)
		}
		lastID = id
		if fmt.Sprint(entry[3]) != fmt.Sprint(wantArgs[i]) {
			t.Fatalf("entry %d args = %q, want %q", i, entry[3], wantArgs[i])
		}
		if !strings.HasPrefix(entry[4].(string), "127.0.0.1:") || entry[5] != "tester" {
			t.Fatalf("entry %d client = %v %v", i, entry[4], entry[5])
		}
	}
	one, _ := c.Do(ctx, "SLOWLOG", "GET", 1).Slice()
	if len(one) != 1 || one[0].([]any)[0].(int64) != lastID+4 {
		t.Fatalf("SLOWLOG GET 1 = %v", one) // the newest: SLOWLOG GET itself ran after
	}
	do(t, c, "SLOWLOG", "GET", -2).errIs("ERR count should be greater than or equal to -1")
	do(t, c, "SLOWLOG", "GET", "x").errIs("ERR count should be greater than or equal to -1")
	do(t, c, "CONFIG", "SET", "slowlog-log-slower-than", "-1").equal("OK")
	do(t, c, "SLOWLOG", "RESET").equal("OK")
	do(t, c, "PING").equal("PONG")
	do(t, c, "SLOWLOG", "LEN").equal(0)
	do(t, c, "CONFIG", "SET", "slowlog-log-slower-than", "-2").errIs("ERR CONFIG SET failed (possibly related to argument 'slowlog-log-slower-than') - argument must be between -1 and 9223372036854775807 inclusive")
	// A pipelined batch of fast commands is timed as a whole: one entry
	// (its last command) per batch over the threshold, not one per command.
	do(t, c, "CONFIG", "SET", "slowlog-log-slower-than", "1").equal("OK")
	do(t, c, "SLOWLOG", "RESET").equal("OK")
	pipe := c.Pipeline()
	for i := range 200 {
		pipe.Do(ctx, "CL.THROTTLE", "batch:"+strconv.Itoa(i), 1000, 1, 60)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	batches, _ := c.Do(ctx, "SLOWLOG", "GET", -1).Slice()
	throttles := 0
	for _, e := range batches {
		if args := e.([]any)[3].([]any); args[0] == "CL.THROTTLE" {
			throttles++
			if e.([]any)[2].(int64) < 1 {
				t.Fatalf("a batch entry under the threshold: %v", e)
			}
		}
	}
	if throttles < 1 || throttles > 4 {
		t.Fatalf("200 pipelined commands made %d slow log entries, want one per batch:\n%v", throttles, batches)
	}
	do(t, c, "CONFIG", "SET", "slowlog-log-slower-than", "-1").equal("OK")
	help, _ := c.Do(ctx, "SLOWLOG", "HELP").StringSlice()
	if len(help) == 0 || !strings.HasPrefix(help[0], "SLOWLOG <subcommand>") {
		t.Fatalf("SLOWLOG HELP = %q", help)
	}

	// LATENCY HISTOGRAM: {command: {calls, histogram_usec: {bucket: cumulative calls}}}.
	do(t, c, "CONFIG", "RESETSTAT").equal("OK")
	for range 4 {
		do(t, c, "CL.THROTTLE", "k2", 10, 1, 60).ints()
	}
	for _, proto := range []int{2, 3} {
		cl := redis.NewClient(&redis.Options{Addr: s.Addr, Protocol: proto, DisableIdentity: true})
		v, err := cl.Do(ctx, "LATENCY", "HISTOGRAM", "cl.throttle", "nosuch").Result()
		cl.Close()
		if err != nil {
			t.Fatal(err)
		}
		var name string
		var detail any
		switch m := v.(type) {
		case []any: // RESP2: a flat array
			if len(m) != 2 {
				t.Fatalf("RESP2 LATENCY HISTOGRAM = %v", v)
			}
			name, detail = m[0].(string), m[1]
		case map[any]any:
			if len(m) != 1 {
				t.Fatalf("RESP3 LATENCY HISTOGRAM = %v", v)
			}
			for k, d := range m {
				name, detail = k.(string), d
			}
		}
		if name != "cl.throttle" {
			t.Fatalf("LATENCY HISTOGRAM names %q", name)
		}
		var calls int64
		var buckets []any
		switch d := detail.(type) {
		case []any:
			if len(d) != 4 || d[0] != "calls" || d[2] != "histogram_usec" {
				t.Fatalf("histogram = %v", d)
			}
			calls, buckets = d[1].(int64), d[3].([]any)
		case map[any]any:
			calls = d["calls"].(int64)
			for k, n := range d["histogram_usec"].(map[any]any) {
				buckets = append(buckets, k, n)
			}
		}
		if calls != 4 || len(buckets) == 0 || len(buckets)%2 != 0 {
			t.Fatalf("protocol %d: calls %d, buckets %v", proto, calls, buckets)
		}
		var most int64
		for i := 0; i < len(buckets); i += 2 {
			us := buckets[i].(int64)
			if us&(us-1) != 0 && us != 65 && us != 131 && us != 262 && us != 524 && us < 1000 {
				t.Fatalf("bucket %d µs is not a power of two as Redis writes them", us)
			}
			most = max(most, buckets[i+1].(int64))
		}
		if most != 4 {
			t.Fatalf("protocol %d: the cumulative count reaches %d, want 4: %v", proto, most, buckets)
		}
	}

	// LATENCY LATEST: nothing while the monitor is off; a KEYS over many
	// keys (over 1 ms) is a "command" event once it is on.
	do(t, c, "LATENCY", "LATEST").equal([]any{})
	pipe = c.Pipeline()
	for i := range 100000 {
		pipe.Do(ctx, "CL.THROTTLE", "many:"+strconv.Itoa(i), 10, 1, 60)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	do(t, c, "CONFIG", "SET", "latency-monitor-threshold", 1).equal("OK")
	eventually(t, "a KEYS of 1 ms or more", func() bool {
		c.Do(ctx, "KEYS", "*")
		l, _ := c.Do(ctx, "LATENCY", "LATEST").Slice()
		return len(l) == 1
	})
	l, _ := c.Do(ctx, "LATENCY", "LATEST").Slice()
	e := l[0].([]any)
	if len(e) != 4 || e[0] != "command" || e[2].(int64) < 1 || e[3].(int64) < e[2].(int64) || e[1].(int64) < time.Now().Unix()-60 {
		t.Fatalf("LATENCY LATEST = %v", l)
	}
	h, _ := c.Do(ctx, "LATENCY", "HISTORY", "command").Slice()
	if len(h) == 0 || len(h[0].([]any)) != 2 {
		t.Fatalf("LATENCY HISTORY command = %v", h)
	}
	do(t, c, "LATENCY", "RESET").equal(1)
	do(t, c, "LATENCY", "LATEST").equal([]any{})
}

// TestMetricsEndpoint: /metrics, parsed with Prometheus's text parser,
// counts exactly the decisions made, by command and outcome and by key
// prefix (a bounded number of prefixes, the rest "other"), with the
// connection, persistence and Go process metrics; /healthz and /readyz
// answer.
func TestMetricsEndpoint(t *testing.T) {
	t.Parallel()
	s := start(t, "--metrics-addr", "127.0.0.1:0")
	addr := s.metricsAddr(t)
	c := s.client(t, 2)
	// 7 throttle calls on a burst of 3 (capacity 4): 4 allowed, 3 denied.
	for range 7 {
		do(t, c, "CL.THROTTLE", "user:42", 3, 1, 60).ints()
	}
	pipe := c.Pipeline()
	pipe.Do(ctx, "CL.ALL", 2, "TOKENBUCKET", "api:a", 1, 1, "1s", "FIXED", "ip:b", 1, "1m")
	pipe.Do(ctx, "CL.ALL", 2, "TOKENBUCKET", "api:a", 1, 1, "1s", "FIXED", "ip:b", 1, "1m")
	for i := range 70 {
		pipe.Do(ctx, "CL.WINDOW", fmt.Sprintf("p%d:key", i), 1, "1m", "FIXED") // 70 more prefixes: 62 named, the rest other
		pipe.Do(ctx, "CL.WINDOW", fmt.Sprintf("p%d:key", i), 1, "1m", "FIXED") // denied
	}
	pipe.Do(ctx, "CL.TOKENBUCKET", "nocolon", 5, 1, "1s")
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	fams := scrape(t, addr)
	for _, w := range []struct {
		cmd, outcome string
		n            float64
	}{{"cl.throttle", "allowed", 4}, {"cl.throttle", "denied", 3}, {"cl.window", "allowed", 70}, {"cl.window", "denied", 70},
		{"cl.tokenbucket", "allowed", 1}, {"cl.tokenbucket", "denied", 0}, {"cl.all", "allowed", 1}, {"cl.all", "denied", 1},
		{"cl.leakybucket", "allowed", 0}, {"gcra", "denied", 0}} {
		if got := sample(t, fams, "rlserver_decisions_total", "command", w.cmd, "outcome", w.outcome); got != w.n {
			t.Errorf("rlserver_decisions_total{command=%q,outcome=%q} = %v, want %v", w.cmd, w.outcome, got, w.n)
		}
	}
	prefixes := fams["rlserver_decisions_by_prefix_total"]
	if prefixes == nil || len(prefixes.Metric) != (64+1)*2 {
		t.Fatalf("rlserver_decisions_by_prefix_total has %v series, want 65 prefixes × 2", prefixes)
	}
	for _, w := range []struct {
		prefix, outcome string
		n               float64
	}{{"user", "allowed", 4}, {"user", "denied", 3}, {"api", "allowed", 1}, {"api", "denied", 1}, {"p61", "allowed", 1}, {"p61", "denied", 1}} {
		if got := sample(t, fams, "rlserver_decisions_by_prefix_total", "prefix", w.prefix, "outcome", w.outcome); got != w.n {
			t.Errorf("decisions_by_prefix{%s,%s} = %v, want %v", w.prefix, w.outcome, got, w.n)
		}
	}
	// Named: user, api, p0..p61 (64); other: p62..p69 (8 allowed, 8
	// denied) and the key without ':' (1 allowed).
	if a, d := sample(t, fams, "rlserver_decisions_by_prefix_total", "prefix", "other", "outcome", "allowed"),
		sample(t, fams, "rlserver_decisions_by_prefix_total", "prefix", "other", "outcome", "denied"); a != 9 || d != 8 {
		t.Errorf("decisions_by_prefix{other} = %v allowed, %v denied; want 9, 8", a, d)
	}
	var total float64
	for _, m := range prefixes.Metric {
		total += m.Counter.GetValue()
	}
	if total != 7+140+1+2 {
		t.Errorf("decisions by prefix sum to %v, want %d (as by command)", total, 7+140+1+2)
	}
	if n := sample(t, fams, "rlserver_commands_total", "command", "cl.window"); n != 140 {
		t.Errorf("rlserver_commands_total{cl.window} = %v", n)
	}
	if n := sample(t, fams, "rlserver_command_latency_seconds", "command", "cl.window"); n != 140 {
		t.Errorf("rlserver_command_latency_seconds{cl.window} count = %v", n)
	}
	if n := sample(t, fams, "rlserver_connected_clients"); n < 1 {
		t.Errorf("rlserver_connected_clients = %v", n)
	}
	if n := sample(t, fams, "rlserver_persistence_enabled"); n != 1 {
		t.Errorf("rlserver_persistence_enabled = %v", n)
	}
	if n := sample(t, fams, "rlserver_keys"); n != 1+70+1+2 {
		t.Errorf("rlserver_keys = %v", n)
	}
	for _, name := range []string{"go_goroutines", "process_resident_memory_bytes", "rlserver_persistence_last_flush_timestamp_seconds",
		"rlserver_persistence_last_flush_duration_seconds", "rlserver_persistence_failures_total", "rlserver_replication_is_replica", "rlserver_ready"} {
		if fams[name] == nil {
			t.Errorf("/metrics lacks %s", name)
		}
	}
	if code, body := httpGet(t, "http://"+addr+"/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("/healthz = %d %q", code, body)
	}
	if code, body := httpGet(t, "http://"+addr+"/readyz"); code != 200 || body != "ready\n" {
		t.Errorf("/readyz = %d %q", code, body)
	}
	// Decisions never reset with CONFIG RESETSTAT (Prometheus counters only grow).
	do(t, c, "CONFIG", "RESETSTAT").equal("OK")
	if n := sample(t, scrape(t, addr), "rlserver_decisions_total", "command", "cl.throttle", "outcome", "allowed"); n != 4 {
		t.Errorf("after CONFIG RESETSTAT, allowed throttle decisions = %v, want 4", n)
	}
}
