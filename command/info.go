package command

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rlserver/rlserver/observe"
)

// INFO [section ...], as Redis 7: no section, or "default", gives the
// default sections; "all" and "everything" every section; otherwise the
// sections named (case-insensitive; unknown names give nothing).
func cmdInfo(c *Ctx, args [][]byte) {
	want := map[string]bool{}
	for _, a := range args[1:] {
		want[strings.ToLower(string(a))] = true
	}
	all := want["all"] || want["everything"]
	def := len(want) == 0 || want["default"]
	var b strings.Builder
	for _, sec := range c.infoSections(func(name string, inDefault bool) bool {
		return all || def && inDefault || want[strings.ToLower(name)]
	}) {
		if b.Len() > 0 {
			b.WriteString("\r\n")
		}
		b.WriteString("# " + sec.name + "\r\n")
		for _, f := range sec.fields {
			b.WriteString(f[0] + ":" + f[1] + "\r\n")
		}
	}
	c.W.Verbatim(b.String())
}

type infoSection struct {
	name   string
	fields [][2]string
}

// runID is INFO's run_id: random, one per process, as Redis's.
var runID = func() string {
	var b [20]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}()

// infoSections returns the sections that pick selects (by name, and
// whether it is one of the default ones), in Redis's order; only those
// are computed.
func (c *Ctx) infoSections(pick func(name string, inDefault bool) bool) []infoSection {
	h := c.h
	var secs []infoSection
	add := func(name string, inDefault bool, fields func() [][2]string) {
		if pick(name, inDefault) {
			secs = append(secs, infoSection{name, fields()})
		}
	}
	i64 := func(n int64) string { return strconv.FormatInt(n, 10) }
	// One snapshot, taken when a section first needs it; the commands'
	// counters and histograms only if a section shows them.
	var snap *observe.Snapshot
	snapshot := func() *observe.Snapshot {
		if snap == nil {
			s := c.snapshot(pick("Commandstats", false) || pick("Latencystats", false))
			snap = &s
		}
		return snap
	}
	add("Server", true, func() [][2]string {
		up := time.Since(h.started)
		port := "0"
		if addr := c.srv.Addr(); addr != nil {
			if _, p, err := net.SplitHostPort(addr.String()); err == nil {
				port = p
			}
		}
		mode := "standalone"
		if h.cfg.Cluster != nil {
			mode = "cluster"
		}
		exe := executable()
		return [][2]string{
			{"redis_version", redisVersion},
			{"redis_git_sha1", "00000000"},
			{"redis_git_dirty", "0"},
			{"redis_build_id", "0"},
			{"redis_mode", mode},
			{"os", osName()},
			{"arch_bits", "64"},
			{"monotonic_clock", "POSIX clock_gettime"},
			{"multiplexing_api", multiplexingAPI()},
			{"process_id", strconv.Itoa(os.Getpid())},
			{"process_supervised", "no"},
			{"run_id", runID},
			{"tcp_port", port},
			{"server_time_usec", i64(h.clock.Now() / 1e3)},
			{"uptime_in_seconds", i64(int64(up / time.Second))},
			{"uptime_in_days", i64(int64(up / (24 * time.Hour)))},
			{"hz", "10"},
			{"configured_hz", "10"},
			{"lru_clock", i64(time.Now().Unix() & (1<<24 - 1))},
			{"executable", exe},
			{"config_file", ""},
			{"io_threads_active", "0"},
			{"rlserver_version", Version},
			{"go_version", runtime.Version()},
			{"shards", strconv.Itoa(h.store.NumShards())},
		}
	})
	add("Clients", true, func() [][2]string {
		return [][2]string{
			{"connected_clients", strconv.Itoa(c.srv.NumConns())},
			{"cluster_connections", "0"},
			{"maxclients", i64(c.srv.MaxClients())},
			{"client_recent_max_input_buffer", "0"},
			{"client_recent_max_output_buffer", "0"},
			{"blocked_clients", i64(c.srv.Blocked())},
			{"tracking_clients", "0"},
			{"clients_in_timeout_table", "0"},
		}
	})
	add("Memory", true, func() [][2]string { return c.memoryInfo() })
	add("Persistence", true, func() [][2]string {
		pers := [][2]string{{"loading", "0"}, {"async_loading", "0"}}
		if h.cfg.Persistence != nil {
			return append(pers, h.cfg.Persistence.Stats().Fields()...)
		}
		return append(pers, [][2]string{
			{"rdb_changes_since_last_save", i64(h.store.Stats().Changes)},
			{"rdb_bgsave_in_progress", "0"},
			{"rdb_last_save_time", i64(h.started.Unix())},
			{"rdb_last_bgsave_status", "ok"},
			{"aof_enabled", "0"},
		}...)
	})
	add("Stats", true, func() [][2]string {
		st := h.store.Stats()
		srv := c.srv.Stats()
		var errs int64
		for _, n := range snapshot().Errors {
			errs += n
		}
		total := c.totalCommands()
		return [][2]string{
			{"total_connections_received", i64(srv.ConnectionsReceived)},
			{"total_commands_processed", i64(total)},
			{"instantaneous_ops_per_sec", i64(h.obs.OpsPerSec(total))},
			{"rejected_connections", i64(srv.RejectedConnections)},
			{"expired_keys", i64(st.Expired)},
			{"evicted_keys", i64(st.Evicted)},
			{"evicted_clients", "0"},
			{"evicted_scripts", i64(h.scripts.Evicted.Load())},
			{"keyspace_hits", "0"},
			{"keyspace_misses", "0"},
			{"pubsub_channels", "0"},
			{"pubsub_patterns", "0"},
			{"latest_fork_usec", "0"},
			{"total_forks", "0"},
			{"unexpected_error_replies", "0"},
			{"total_error_replies", i64(errs)},
			{"acl_access_denied_auth", i64(h.authFailures.Load())},
			{"protocol_errors", i64(srv.ProtocolErrors)},
		}
	})
	add("Replication", true, func() [][2]string {
		f := c.replicationInfo()
		if h.cfg.Replication == nil && h.cfg.Cluster == nil {
			// A standalone server: a primary without replicas, as Redis's.
			f = append(f, [][2]string{{"master_failover_state", "no-failover"}, {"master_replid", runID},
				{"master_replid2", "0000000000000000000000000000000000000000"}, {"master_repl_offset", "0"},
				{"second_repl_offset", "-1"}, {"repl_backlog_active", "0"}, {"repl_backlog_size", "0"},
				{"repl_backlog_first_byte_offset", "0"}, {"repl_backlog_histlen", "0"}}...)
		}
		return f
	})
	add("CPU", true, cpuInfo)
	add("Modules", true, func() [][2]string { return nil })
	add("Commandstats", false, func() [][2]string {
		var out [][2]string
		for _, s := range snapshot().Commands {
			if s.Calls == 0 && s.Failed == 0 && s.Rejected == 0 {
				continue
			}
			us := int64(s.Duration / time.Microsecond)
			per := 0.0
			if s.Calls > 0 {
				per = float64(us) / float64(s.Calls)
			}
			out = append(out, [2]string{"cmdstat_" + s.Name,
				fmt.Sprintf("calls=%d,usec=%d,usec_per_call=%.2f,rejected_calls=%d,failed_calls=%d", s.Calls, us, per, s.Rejected, s.Failed)})
		}
		return out
	})
	add("Errorstats", true, func() [][2]string {
		var out [][2]string
		errs := snapshot().Errors
		for _, code := range sortedErrors(errs) {
			out = append(out, [2]string{"errorstat_" + code, "count=" + i64(errs[code])})
		}
		return out
	})
	add("Latencystats", false, func() [][2]string {
		var out [][2]string
		if !h.obs.Tracking() {
			return nil
		}
		ps := h.obs.Percentiles()
		for i := range snapshot().Commands {
			s := &snapshot().Commands[i]
			if s.Samples() == 0 {
				continue
			}
			var v strings.Builder
			for j, p := range ps {
				if j > 0 {
					v.WriteByte(',')
				}
				fmt.Fprintf(&v, "p%s=%.3f", strconv.FormatFloat(p, 'f', -1, 64), float64(s.Percentile(p))/1000)
			}
			out = append(out, [2]string{"latency_percentiles_usec_" + s.Name, v.String()})
		}
		return out
	})
	add("Cluster", true, func() [][2]string {
		enabled := "0"
		if h.cfg.Cluster != nil {
			enabled = "1"
		}
		return [][2]string{{"cluster_enabled", enabled}}
	})
	add("Keyspace", true, func() [][2]string {
		if keys := c.dbsize(); keys > 0 {
			return [][2]string{{"db0", fmt.Sprintf("keys=%d,expires=%d,avg_ttl=0,subexpiry=0", keys, c.keys().Expiring())}}
		}
		return nil
	})
	return secs
}

// memoryInfo is INFO memory. used_memory is the Go heap's live objects
// (Redis's allocator-reported bytes), used_memory_dataset the limiter
// state --maxmemory bounds, used_memory_rss what the OS reports resident;
// the scripting fields are script.Memory's.
func (c *Ctx) memoryInfo() [][2]string {
	h := c.h
	used, sys := h.heapBytes()
	rss := residentBytes()
	if rss == 0 {
		rss = sys
	}
	peak := h.obs.NotePeak(used)
	dataset := h.store.Stats().Memory
	sysMem := totalSystemMemory()
	frag := 0.0
	if used > 0 {
		frag = float64(rss) / float64(used)
	}
	pct := func(a, b int64) string {
		if b <= 0 {
			return "0.00%"
		}
		return strconv.FormatFloat(100*float64(a)/float64(b), 'f', 2, 64) + "%"
	}
	i64 := func(n int64) string { return strconv.FormatInt(n, 10) }
	maxmem := h.maxMemory.Load()
	sm := h.scripts.Memory()
	return [][2]string{
		{"used_memory", i64(used)},
		{"used_memory_human", humanBytes(used)},
		{"used_memory_rss", i64(rss)},
		{"used_memory_rss_human", humanBytes(rss)},
		{"used_memory_peak", i64(peak)},
		{"used_memory_peak_human", humanBytes(peak)},
		{"used_memory_peak_perc", pct(used, peak)},
		{"used_memory_overhead", i64(max(used-dataset, 0))},
		{"used_memory_startup", "0"},
		{"used_memory_dataset", i64(dataset)},
		{"used_memory_dataset_perc", pct(dataset, used)},
		{"total_system_memory", i64(sysMem)},
		{"total_system_memory_human", humanBytes(sysMem)},
		{"used_memory_lua", i64(sm.VMEval)},
		{"used_memory_vm_eval", i64(sm.VMEval)},
		{"used_memory_lua_human", humanBytes(sm.VMEval)},
		{"used_memory_scripts_eval", i64(sm.ScriptsEval)},
		{"number_of_cached_scripts", strconv.Itoa(sm.Scripts)},
		{"number_of_functions", strconv.Itoa(sm.FunctionCount)},
		{"number_of_libraries", strconv.Itoa(sm.Libraries)},
		{"used_memory_vm_functions", i64(sm.VMFunctions)},
		{"used_memory_vm_total", i64(sm.VMEval + sm.VMFunctions)},
		{"used_memory_vm_total_human", humanBytes(sm.VMEval + sm.VMFunctions)},
		{"used_memory_functions", i64(sm.Functions)},
		{"used_memory_scripts", i64(sm.Functions + sm.ScriptsEval)},
		{"used_memory_scripts_human", humanBytes(sm.Functions + sm.ScriptsEval)},
		{"maxmemory", i64(maxmem)},
		{"maxmemory_human", humanBytes(maxmem)},
		{"maxmemory_policy", h.maxMemoryPolicy().String()},
		{"mem_fragmentation_ratio", strconv.FormatFloat(frag, 'f', 2, 64)},
		{"mem_fragmentation_bytes", i64(rss - used)},
		{"mem_allocator", "go-" + runtime.Version()},
	}
}

// heapBytes returns the Go heap's live objects (ReadMemStats's HeapAlloc)
// and the memory the runtime holds (its Sys). It reads runtime/metrics rather than ReadMemStats, which
// stops the world: INFO polled by monitoring must not pause every client.
func (h *Handler) heapBytes() (used, sys int64) {
	ms := [2]metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/total:bytes"}}
	metrics.Read(ms[:])
	u64 := func(v metrics.Value) int64 {
		if v.Kind() != metrics.KindUint64 {
			return 0 // a runtime without the metric
		}
		return int64(v.Uint64())
	}
	return u64(ms[0].Value), u64(ms[1].Value)
}

// cpuInfo is INFO cpu: the process's CPU time (Go runs the server on
// several threads, so the main thread's figures are the process's).
func cpuInfo() [][2]string {
	var self, children syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children)
	tv := func(t syscall.Timeval) string { return fmt.Sprintf("%d.%06d", t.Sec, t.Usec) }
	return [][2]string{
		{"used_cpu_sys", tv(self.Stime)},
		{"used_cpu_user", tv(self.Utime)},
		{"used_cpu_sys_children", tv(children.Stime)},
		{"used_cpu_user_children", tv(children.Utime)},
		{"used_cpu_sys_main_thread", tv(self.Stime)},
		{"used_cpu_user_main_thread", tv(self.Utime)},
	}
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return strconv.FormatFloat(float64(n)/(1<<30), 'f', 2, 64) + "G"
	case n >= 1<<20:
		return strconv.FormatFloat(float64(n)/(1<<20), 'f', 2, 64) + "M"
	case n >= 1<<10:
		return strconv.FormatFloat(float64(n)/(1<<10), 'f', 2, 64) + "K"
	}
	return strconv.FormatInt(n, 10) + "B"
}

// executable is INFO's executable, read once (a readlink of /proc).
var executable = sync.OnceValue(func() string {
	exe, _ := os.Executable()
	return exe
})
