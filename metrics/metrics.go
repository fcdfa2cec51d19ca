// Package metrics serves rlserver's Prometheus metrics (/metrics) and its
// health checks (/healthz, /readyz) over HTTP (--metrics-addr).
//
// Every rlserver metric is computed when scraped, from the typed
// statistics INFO renders too (command.Handler's Snapshot, Stats,
// PersistenceStats and ReplicationStats): the command path
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
	st, ok := src.h.PersistenceStats()
	if !ok || !st.Failing || st.Error == "" {
		return ""
	}
	return fmt.Sprintf(" (persistence failing since %d, deciding from memory, %d keys waiting: %s)", st.ErrorSince, st.KeysPending, st.Error)
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
	st := src.h.Stats(src.srv)
	gauge(dClients, float64(st.Clients))
	gauge(dMaxClients, float64(st.MaxClients))
	counter(dConnsReceived, float64(st.ConnectionsReceived))
	counter(dConnsRejected, float64(st.RejectedConnections))
	counter(dCommandsTotal, float64(st.CommandsProcessed))
	gauge(dKeys, float64(st.Keys))
	gauge(dDataset, float64(st.Keyspace.Memory))
	gauge(dMemUsed, float64(st.UsedMemory))
	gauge(dMaxMemory, float64(st.MaxMemory))
	counter(dEvicted, float64(st.Keyspace.Evicted))
	counter(dExpired, float64(st.Keyspace.Expired))
	if ps, persisted := src.h.PersistenceStats(); persisted {
		gauge(dPersistOn, 1)
		ok := 0.0
		if !ps.Failing {
			ok = 1
		}
		gauge(dPersistOK, ok)
		gauge(dLastFlush, float64(ps.LastSave))
		// Whole µs and ms, as INFO shows them, in seconds.
		gauge(dFlushDuration, float64(ps.LastFlush.Microseconds())/1e6)
		counter(dFlushFailures, float64(ps.Failures))
		gauge(dPending, float64(ps.KeysPending))
		gauge(dLossWindow, float64(ps.LossWindow.Milliseconds())/1e3)
	} else {
		gauge(dPersistOn, 0)
	}
	rs := src.h.ReplicationStats()
	gauge(dReplOffset, float64(rs.Offset))
	if rs.Replica {
		gauge(dReplica, 1)
		gauge(dReplicas, 0)
		up := 0.0
		if rs.LinkUp {
			up = 1
		}
		gauge(dLinkUp, up)
		if rs.LastIOAgo >= 0 {
			gauge(dReplLagSeconds, float64(rs.LastIOAgo), "self")
		}
	} else {
		gauge(dReplica, 0)
		gauge(dReplicas, float64(len(rs.Replicas)))
		for _, r := range rs.Replicas {
			name := r.Host + ":" + strconv.Itoa(r.Port)
			gauge(dReplLagSeconds, float64(r.Lag), name)
			gauge(dReplLagBytes, max(float64(rs.Offset)-float64(r.Offset), 0), name)
		}
	}
	gauge(dSlowlog, float64(src.h.SlowlogLen()))
}
