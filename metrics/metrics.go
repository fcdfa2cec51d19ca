// Package metrics serves rlserver's Prometheus metrics (/metrics) and its
// health checks (/healthz, /readyz) over HTTP (--metrics-addr).
//
// Every rlserver metric is computed when scraped, from the same counters
// INFO reads (command.Handler.Snapshot, InfoFields): the command path
// updates nothing of Prometheus's, so a scrape costs the server nothing
// between scrapes.
package metrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/rlserver/rlserver/command"
	"github.com/rlserver/rlserver/resp"
)

// Server is the HTTP server of /metrics, /healthz and /readyz. It starts
// before the state is restored, so that /healthz answers and /readyz says
// why it is not ready yet.
type Server struct {
	ln       net.Listener
	hs       *http.Server
	reg      *prometheus.Registry
	src      atomic.Pointer[source]
	restored atomic.Bool
}

type source struct {
	h   *command.Handler
	srv *resp.Server
}

// Listen binds addr (host:port; port 0 picks one) and serves in the
// background. The caller must Close it.
func Listen(addr string) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	reg := prometheus.NewRegistry()
	s := &Server{ln: ln, reg: reg}
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), collector{s})
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		if ok, why := s.ready(); !ok {
			http.Error(w, "not ready: "+why, http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ready" + s.persistenceNote() + "\n"))
	})
	s.hs = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go s.hs.Serve(ln)
	return s, nil
}

// Register adds collectors of other front ends (the Envoy rate limit
// service's) to /metrics.
func (s *Server) Register(c prometheus.Collector) error { return s.reg.Register(c) }

// Addr returns the address served.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Attach gives the metrics their source: the commands and the server
// whose connections they count.
func (s *Server) Attach(h *command.Handler, srv *resp.Server) { s.src.Store(&source{h, srv}) }

// Restored marks the state restored (/readyz may answer ready).
func (s *Server) Restored() { s.restored.Store(true) }

// Close stops serving.
func (s *Server) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := s.hs.Shutdown(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		s.hs.Close()
	}
}

func (s *Server) ready() (bool, string) {
	src := s.src.Load()
	if !s.restored.Load() || src == nil {
		return false, "restoring state"
	}
	return src.h.Ready()
}

// persistenceNote is what /readyz adds to "ready" while persistence fails
// (a full or read-only disk, at start or since): the server decides from
// memory, so it stays ready, and the probe's answer says why writes wait.
func (s *Server) persistenceNote() string {
	src := s.src.Load()
	if src == nil {
		return ""
	}
	f := src.h.InfoFields(src.srv, "persistence")
	if f["rdb_last_bgsave_status"] != "err" || f["rl_persistence_error"] == "" {
		return ""
	}
	return fmt.Sprintf(" (persistence failing since %s, deciding from memory, %s keys waiting: %s)", f["rl_persistence_error_since"], f["rl_keys_pending"], f["rl_persistence_error"])
}

// collector turns the server's statistics into metrics at each scrape.
// It is unchecked (Describe sends nothing): the label values (commands,
// prefixes, error codes, replicas) are known only then.
type collector struct{ s *Server }

func (collector) Describe(chan<- *prometheus.Desc) {}

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc("rlserver_"+name, help, labels, nil)
}

var (
	dDecisions       = desc("decisions_total", "Limiter decisions by command and outcome (allowed, denied).", "command", "outcome")
	dDecisionsPrefix = desc("decisions_by_prefix_total", "Limiter decisions by key prefix (the key up to its first ':'; the first 64 prefixes seen, the rest and keys without ':' as \"other\") and outcome. A CL.ALL decision counts under its first key.", "prefix", "outcome")
	dCalls           = desc("commands_total", "Commands run, by command (INFO commandstats calls; CONFIG RESETSTAT resets it).", "command")
	dFailed          = desc("commands_failed_total", "Commands that ran and answered an error (failed_calls).", "command")
	dRejected        = desc("commands_rejected_total", "Commands refused before running: arity, ACL, cluster redirects (rejected_calls).", "command")
	dDuration        = desc("commands_duration_seconds_total", "Time spent running commands (usec).", "command")
	dLatency         = desc("command_latency_seconds", "Command run time. Pipelined commands share their batch's time equally; @slow commands are timed alone.", "command")
	dErrors          = desc("errors_total", "Error replies by error code (INFO errorstats).", "code")
	dClients         = desc("connected_clients", "Client connections open.")
	dMaxClients      = desc("maxclients", "Most client connections served at once.")
	dConnsReceived   = desc("connections_received_total", "Client connections accepted.")
	dConnsRejected   = desc("rejected_connections_total", "Connections refused over maxclients.")
	dCommandsTotal   = desc("commands_processed_total", "Commands processed (total_commands_processed).")
	dKeys            = desc("keys", "Keys in the keyspace.")
	dDataset         = desc("memory_dataset_bytes", "Memory of limiter state, as --maxmemory counts it.")
	dMemUsed         = desc("memory_used_bytes", "Go heap in use (used_memory).")
	dMaxMemory       = desc("maxmemory_bytes", "The --maxmemory bound (0: none).")
	dEvicted         = desc("evicted_keys_total", "Keys evicted under --maxmemory.")
	dExpired         = desc("expired_keys_total", "Keys removed when fresh again.")
	dPersistOn       = desc("persistence_enabled", "1 when state is persisted (--dir), 0 in memory only.")
	dPersistOK       = desc("persistence_last_flush_ok", "1 when the last flush to disk succeeded, 0 while flushes fail.")
	dLastFlush       = desc("persistence_last_flush_timestamp_seconds", "Unix time of the last successful flush.")
	dFlushDuration   = desc("persistence_last_flush_duration_seconds", "How long the last flush took.")
	dFlushFailures   = desc("persistence_failures_total", "Flushes that failed (disk full, read-only, ...).")
	dPending         = desc("persistence_keys_pending", "Changed keys waiting for a flush.")
	dLossWindow      = desc("persistence_loss_window_seconds", "Longest loss window of the last minute: what a crash could lose.")
	dReplica         = desc("replication_is_replica", "1 on a replica, 0 on a primary.")
	dReplicas        = desc("connected_replicas", "Replicas connected to this primary.")
	dReplOffset      = desc("replication_offset_bytes", "The node's replication offset (master_repl_offset).")
	dReplLagSeconds  = desc("replication_lag_seconds", "On a primary, seconds since each replica's last acknowledgement; on a replica (replica=\"self\"), seconds since its primary's last message.", "replica")
	dReplLagBytes    = desc("replication_lag_bytes", "On a primary, the stream bytes each replica has not acknowledged.", "replica")
	dLinkUp          = desc("replication_master_link_up", "On a replica, 1 while its link to the primary is up and synchronised.")
	dSlowlog         = desc("slowlog_length", "Entries in the slow log.")
	dReady           = desc("ready", "1 when /readyz answers ready.")
)

func (col collector) Collect(ch chan<- prometheus.Metric) {
	s := col.s
	ready := 0.0
	if ok, _ := s.ready(); ok {
		ready = 1
	}
	ch <- prometheus.MustNewConstMetric(dReady, prometheus.GaugeValue, ready)
	src := s.src.Load()
	if src == nil {
		return
	}
	// A sample whose labels cannot be written (not UTF-8) is left out:
	// a scrape never panics.
	send := func(m prometheus.Metric, err error) {
		if err == nil {
			ch <- m
		}
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		send(prometheus.NewConstMetric(d, prometheus.CounterValue, v, labels...))
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		send(prometheus.NewConstMetric(d, prometheus.GaugeValue, v, labels...))
	}
	snap := src.h.Snapshot()
	for i := range snap.Commands {
		cs := &snap.Commands[i]
		if cs.Decides {
			counter(dDecisions, float64(cs.Allowed), cs.Name, "allowed")
			counter(dDecisions, float64(cs.Denied), cs.Name, "denied")
		}
		if cs.Calls == 0 && cs.Failed == 0 && cs.Rejected == 0 {
			continue
		}
		counter(dCalls, float64(cs.Calls), cs.Name)
		counter(dFailed, float64(cs.Failed), cs.Name)
		counter(dRejected, float64(cs.Rejected), cs.Name)
		counter(dDuration, cs.Duration.Seconds(), cs.Name)
		upper, cum := cs.LatencyBuckets()
		buckets := make(map[float64]uint64, len(upper))
		for j, u := range upper {
			buckets[u.Seconds()] = cum[j]
		}
		send(prometheus.NewConstHistogram(dLatency, cum[len(cum)-1], cs.Duration.Seconds(), buckets, cs.Name))
	}
	for _, p := range snap.Prefixes {
		counter(dDecisionsPrefix, float64(p.Allowed), p.Prefix, "allowed")
		counter(dDecisionsPrefix, float64(p.Denied), p.Prefix, "denied")
	}
	for code, n := range snap.Errors {
		counter(dErrors, float64(n), code)
	}
	f := src.h.InfoFields(src.srv, "clients", "memory", "persistence", "stats", "replication", "keyspace")
	num := func(name string) float64 {
		v, _ := strconv.ParseFloat(f[name], 64)
		return v
	}
	gauge(dClients, num("connected_clients"))
	gauge(dMaxClients, num("maxclients"))
	counter(dConnsReceived, num("total_connections_received"))
	counter(dConnsRejected, num("rejected_connections"))
	counter(dCommandsTotal, num("total_commands_processed"))
	keys := 0.0
	if db := f["db0"]; db != "" {
		v, _, _ := strings.Cut(strings.TrimPrefix(db, "keys="), ",")
		keys, _ = strconv.ParseFloat(v, 64)
	}
	gauge(dKeys, keys)
	gauge(dDataset, num("used_memory_dataset"))
	gauge(dMemUsed, num("used_memory"))
	gauge(dMaxMemory, num("maxmemory"))
	counter(dEvicted, num("evicted_keys"))
	counter(dExpired, num("expired_keys"))
	_, persisted := f["rl_last_flush_duration_us"]
	if persisted {
		gauge(dPersistOn, 1)
		ok := 0.0
		if f["rdb_last_bgsave_status"] == "ok" {
			ok = 1
		}
		gauge(dPersistOK, ok)
		gauge(dLastFlush, num("rdb_last_save_time"))
		gauge(dFlushDuration, num("rl_last_flush_duration_us")/1e6)
		counter(dFlushFailures, num("rl_persistence_failures"))
		gauge(dPending, num("rl_keys_pending"))
		gauge(dLossWindow, num("rl_loss_window_ms")/1e3)
	} else {
		gauge(dPersistOn, 0)
	}
	replica := f["role"] == "slave"
	gauge(dReplOffset, num("master_repl_offset"))
	if replica {
		gauge(dReplica, 1)
		gauge(dReplicas, 0)
		up := 0.0
		if f["master_link_status"] == "up" {
			up = 1
		}
		gauge(dLinkUp, up)
		if ago := num("master_last_io_seconds_ago"); ago >= 0 {
			gauge(dReplLagSeconds, ago, "self")
		}
	} else {
		gauge(dReplica, 0)
		gauge(dReplicas, num("connected_slaves"))
		off := num("master_repl_offset")
		for i := 0; ; i++ {
			v, ok := f["slave"+strconv.Itoa(i)]
			if !ok {
				break
			}
			kv := map[string]string{}
			for _, part := range strings.Split(v, ",") {
				k, val, _ := strings.Cut(part, "=")
				kv[k] = val
			}
			name := kv["ip"] + ":" + kv["port"]
			lag, _ := strconv.ParseFloat(kv["lag"], 64)
			roff, _ := strconv.ParseFloat(kv["offset"], 64)
			gauge(dReplLagSeconds, lag, name)
			gauge(dReplLagBytes, max(off-roff, 0), name)
		}
	}
	gauge(dSlowlog, float64(src.h.SlowlogLen()))
}
