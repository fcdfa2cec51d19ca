// Package command is rlserver's commands: the one command table (dispatch,
// arity, COMMAND INFO/DOCS/LIST, ACL categories, key specs), every handler,
// MULTI/EXEC, the connection sessions and prefetching. A resp.Server runs
// requests through its Handler; handlers see a Ctx, not the connection.
package command

import (
	"net"
	"sync/atomic"
	"time"

	"github.com/rlserver/rlserver/clock"
	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/observe"
	"github.com/rlserver/rlserver/persist"
	"github.com/rlserver/rlserver/resp"
	"github.com/rlserver/rlserver/script"
	"github.com/rlserver/rlserver/shard"
)

// Version is rlserver's version, reported in INFO as rlserver_version.
const Version = "0.1.0"

// redisVersion is the Redis version whose behaviour rlserver follows; HELLO
// and INFO report it so that clients gating features on it work unchanged.
// Scripts see it too (redis.REDIS_VERSION).
const redisVersion = script.RedisVersion

// Config is the commands' configuration. The zero value of each field means
// its default.
type Config struct {
	// OnMaxMemory, if set, is told every memory bound applied (at start
	// and by CONFIG SET maxmemory): the runtime's memory limit follows it
	// (package memlimit).
	OnMaxMemory func(n int64)
	// RequirePass is the default user's password ("" none).
	RequirePass string
	// ACLFile is where ACL SAVE writes the users and ACL LOAD reads them
	// ("" none); LoadACL reads it at start.
	ACLFile string
	// EnableDebug enables the DEBUG command (tests only).
	EnableDebug bool
	// LogMaxLimit is the largest limit CL.WINDOW ... LOG accepts. Default 10000.
	LogMaxLimit int64
	// Persistence backs SAVE, BGSAVE, LASTSAVE and INFO persistence; nil
	// means in memory only.
	Persistence Persistence
	// Settings are reported read-only by CONFIG GET (bind, port, dir, ...).
	Settings map[string]string
	// OnShutdown is called by SHUTDOWN after replying is no longer needed;
	// save tells whether to flush first. Default: nothing.
	OnShutdown func(save bool)
	// ProtectedMode refuses connections from other addresses than the
	// loopback's while no password is set (Admit).
	ProtectedMode bool
	// BackupDir is where CHECKPOINT writes its copies.
	BackupDir string
	// TLS is the TLS listener's certificate, which CONFIG SET
	// tls-cert-file / tls-key-file replaces; nil without --tls-port.
	TLS TLSCerts
	// Cluster is the node's cluster state; nil for a standalone server.
	Cluster *cluster.State
	// Replication serves ROLE, WAIT, INFO replication and which replicas
	// CLUSTER SLOTS lists; nil without replication.
	Replication Replication
	// Forget asks an etcd-run cluster's coordinator to remove a node
	// (CLUSTER FORGET); nil with a static topology.
	Forget func(id string) error
	// Force asks an etcd-run cluster's coordinator to promote this
	// replica of a shard that is down (CLUSTER FAILOVER FORCE).
	Force func() error
	// Slowlog configures SLOWLOG and the latency monitor; nil means
	// Redis's defaults.
	Slowlog *SlowlogConfig
	// Scripts is the Lua engine: EVAL's scripts and the function
	// libraries, which persistence and replication keep too. Default: a
	// new engine.
	Scripts *script.Engine
	// MoveHold bounds how long a command whose key's slot is being handed
	// to another node waits for the handover before answering TRYAGAIN
	// (see holdMoving). Default 1 s.
	MoveHold time.Duration
}

// SlowlogConfig is the slow log's and latency monitor's configuration
// (see observe.Config).
type SlowlogConfig = observe.Config

// TLSCerts is the certificate the TLS listener serves.
type TLSCerts interface {
	// Files returns the certificate and key files served.
	Files() (cert, key string)
	// Load reads a certificate and key; apply then serves them.
	Load(cert, key string) (apply func(), err error)
}

// Persistence is what the commands need from the persistence layer.
type Persistence interface {
	// Save flushes every change to disk and syncs it.
	Save() error
	// BGSave starts a flush in the background; it fails if one is running.
	BGSave() error
	// LastSave returns the Unix time (s) of the last successful save.
	LastSave() int64
	// Stats returns the flusher's statistics (INFO persistence, metrics).
	Stats() persist.Stats
	// Checkpoint flushes, then writes a consistent copy of the store to
	// dir (which must not exist yet).
	Checkpoint(dir string) error
	// InjectFault makes every flush fail with err until InjectFault(nil)
	// (DEBUG DISKFAULT, tests only).
	InjectFault(err error)
}

// Handler runs the commands over a shard.Store; it is the resp.Handler of
// the server.
type Handler struct {
	store   *shard.Store
	clock   *clock.Clock
	table   *Table
	cfg     Config
	started time.Time

	requirePass atomic.Pointer[string] // as last set, for CONFIG GET
	acl         *acl
	protected   atomic.Bool
	// Failed AUTHs: the count, and when and at which count the last log
	// line about them was written (authFailed).
	authFailures, authLogged, authLoggedAt atomic.Int64
	logMax                                 atomic.Int64
	maxMemory                              atomic.Int64
	policy                                 atomic.Int32 // --maxmemory-policy, a shard.Policy (maxmemory.go)
	totalCmds                              atomic.Int64 // commands run, published per batch (total_commands_processed)
	obs                                    *observe.Observer
	scripts                                *script.Engine              // EVAL's scripts and Lua VM
	kept                                   keptValues                  // Redis's parameters CONFIG SET keeps (redisconfig.go)
	busyReplyMs                            atomic.Int64                // busy-reply-threshold as set
	server                                 atomic.Pointer[resp.Server] // serving the sessions (the first NewSession's)
}

// New returns the commands over store, reading time from clock.
func New(cfg Config, store *shard.Store, clock *clock.Clock) *Handler {
	if cfg.LogMaxLimit <= 0 {
		cfg.LogMaxLimit = 10000
	}
	if cfg.MoveHold <= 0 {
		cfg.MoveHold = time.Second
	}
	if cfg.Scripts == nil {
		cfg.Scripts = script.New()
	}
	h := &Handler{store: store, clock: clock, cfg: cfg, table: newTable(commandTable()), started: time.Now(), scripts: cfg.Scripts}
	// Past busy-reply-threshold, event loops held by the script (or by a
	// command waiting for its keys) are lent, so that their other
	// clients get -BUSY and can send SCRIPT KILL.
	h.scripts.OnBusy = func() {
		if srv := h.server.Load(); srv != nil {
			srv.LendLoops()
		}
	}
	pass := cfg.RequirePass
	h.requirePass.Store(&pass)
	h.acl = newACL(h.table, cfg.ACLFile)
	if pass != "" {
		h.acl.setPassword(pass)
	}
	h.protected.Store(cfg.ProtectedMode)
	h.logMax.Store(cfg.LogMaxLimit)
	if cfg.Slowlog == nil {
		cfg.Slowlog = &SlowlogConfig{SlowerThan: 10000, MaxLen: 128}
	}
	cmds := make([]*observe.Cmd, len(h.table.all))
	for i, cmd := range h.table.all {
		cmds[i] = &cmd.stat
	}
	h.obs = observe.New(cfg.Slowlog, cmds, clock)
	h.busyReplyMs.Store(h.scripts.Threshold().Milliseconds())
	return h
}

// SetCluster puts the commands in cluster mode; call it before the server
// serves.
func (h *Handler) SetCluster(st *cluster.State, r Replication) {
	h.cfg.Cluster, h.cfg.Replication = st, r
}

// SetForget gives CLUSTER FORGET its way to the coordinator.
func (h *Handler) SetForget(fn func(id string) error) { h.cfg.Forget = fn }

// SetForce gives CLUSTER FAILOVER FORCE its way to the coordinator.
func (h *Handler) SetForce(fn func() error) { h.cfg.Force = fn }

// Cluster returns the cluster state (nil: standalone).
func (h *Handler) Cluster() *cluster.State { return h.cfg.Cluster }

// SetTLS gives CONFIG SET tls-cert-file / tls-key-file the TLS listener's
// certificate; call it before the server serves.
func (h *Handler) SetTLS(t TLSCerts) { h.cfg.TLS = t }

// LoadACL reads the users from Config.ACLFile, if set; a missing or
// invalid file is an error (the server refuses to start).
func (h *Handler) LoadACL() error {
	if h.cfg.ACLFile == "" {
		return nil
	}
	return h.acl.load()
}

// Admit is resp.Config.Admit: protected mode, as Redis's. While it is on
// and no password is set, a connection from anything but 127.0.0.1 or ::1
// is refused with ErrDenied.
func (h *Handler) Admit(remote net.Addr) string {
	if !h.protected.Load() || !h.acl.open() {
		return ""
	}
	if a, ok := remote.(*net.TCPAddr); ok && (a.IP.Equal(net.IPv4(127, 0, 0, 1)) || a.IP.Equal(net.IPv6loopback)) {
		return ""
	}
	return errDenied
}

// NewSession returns the state of a new connection (resp.Handler).
func (h *Handler) NewSession(srv *resp.Server, info resp.ConnInfo, w *resp.Writer) resp.Session {
	return h.newConn(srv, info, w)
}

func (h *Handler) newConn(srv *resp.Server, info resp.ConnInfo, w *resp.Writer) *connection {
	if srv != nil && h.server.Load() == nil {
		h.server.Store(srv)
	}
	s := &Session{info: info}
	s.setUser(h.acl.startUser())
	s.lastSeen.Store(time.Now().UnixNano())
	s.respVer.Store(int32(w.Proto))
	c := &connection{Ctx: Ctx{W: w, sess: s, h: h, srv: srv}}
	c.conn = c
	c.stats.Init(h.obs, h.obs.CountersFor(info.Loop), s.client)
	return c
}

// SetMaxMemory applies a memory bound (bytes, 0 none) as CONFIG SET
// maxmemory would.
func (h *Handler) SetMaxMemory(n int64) {
	h.maxMemory.Store(n)
	if h.noEviction() {
		h.store.SetMaxMemory(0) // refuse writes instead (see outOfMemory)
	} else {
		h.store.SetMaxMemory(n)
	}
	if f := h.cfg.OnMaxMemory; f != nil {
		f(n)
	}
}
