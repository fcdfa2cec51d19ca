// Command rlserver is a rate-limit server that speaks the Redis protocol.
//
// Every flag can also be set by an RLSERVER_<NAME> environment variable
// (upper case, dashes as underscores: RLSERVER_SAVE_INTERVAL=2s); a flag on
// the command line wins over the environment.
package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rlserver/rlserver/clock"
	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/command"
	"github.com/rlserver/rlserver/memlimit"
	"github.com/rlserver/rlserver/repl"
	"github.com/rlserver/rlserver/resp"
	"github.com/rlserver/rlserver/script"
	"github.com/rlserver/rlserver/shard"
)

type options struct {
	bind         string
	port         int
	dir          string
	saveInterval time.Duration
	appendfsync  string
	shards       int
	requirepass  string
	maxmemory    string
	policy       string
	backlog      string
	diskReserve  string
	maxBulk      string
	queryLimit   string
	aclFile      string
	logMaxLimit  int64
	busyReply    int64 // --busy-reply-threshold, ms
	enableDebug  redisBool
	cpuProfile   string
	threads      int
	loops        int
	io           string
	maxclients   int
	timeout      int
	tcpKeepalive int
	protected    string
	backupDir    string

	recoverDamaged bool // --recover-damaged-store

	tlsPort        string
	tlsCert        string
	tlsKey         string
	tlsCA          string
	tlsAuthClients string

	clusterConfig   string
	announceHost    string
	announcePort    int
	clusterEtcd     string
	clusterName     string
	clusterReplicas int
	nodeTimeoutMs   int
	masterUser      string
	masterAuth      string

	replication atomic.Pointer[repl.Node] // set once cluster mode starts; persistence marks its position

	cli cliFlags // --version, --healthcheck, --help (cli.go)
	obs obsFlags // the slow log, the latency monitor, --metrics-addr (observe.go)
	rls rlsFlags // Envoy's rate limit service (rls.go)
}

func main() {
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)
	log.SetPrefix("rlserver ")
	os.Exit(run(os.Args[1:]))
}

func parseOptions(args []string) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("rlserver", flag.ContinueOnError)
	fs.StringVar(&o.bind, "bind", "127.0.0.1", "addresses to listen on, as Redis's bind: separated by spaces, * for every IPv4 address, ::* for every IPv6 one, a leading - for one that may be missing")
	fs.IntVar(&o.port, "port", 6379, "TCP port; 0 picks a free one and logs it")
	fs.StringVar(&o.dir, "dir", "./data", "Pebble directory; '' runs in memory only")
	fs.DurationVar(&o.saveInterval, "save-interval", time.Second, "how often changed keys are flushed to disk")
	fs.StringVar(&o.appendfsync, "appendfsync", "everysec", "fsync policy: always, everysec or no")
	fs.IntVar(&o.shards, "shards", shard.DefaultShards(), "keyspace shards (a power of two)")
	fs.StringVar(&o.requirepass, "requirepass", "", "password required by AUTH / HELLO ... AUTH")
	fs.StringVar(&o.maxmemory, "maxmemory", "0", "memory bound for limiter state (bytes, or 64mb, 1gb); 0 means none")
	fs.StringVar(&o.policy, "maxmemory-policy", "allkeys-lru", "what --maxmemory evicts, by Redis's names: allkeys-lru evicts limiter keys closest to fresh, then values least recently used; noeviction refuses writes with -OOM")
	fs.StringVar(&o.backlog, "repl-backlog-size", "1mb", "cluster mode: the change stream a primary keeps per keyspace shard for replicas that reconnect or lag (bytes, or 1mb, 64mb); a replica further behind takes a full copy")
	fs.StringVar(&o.maxBulk, "proto-max-bulk-len", "1mb", "largest request argument accepted (at least 1mb)")
	fs.StringVar(&o.queryLimit, "client-query-buffer-limit", "1gb", "the most one connection may buffer of an unfinished request (at least 1mb); past it the connection is closed")
	fs.StringVar(&o.aclFile, "aclfile", "", "ACL users file (user <name> <rules>... lines), read at start and by ACL LOAD, written by ACL SAVE")
	fs.StringVar(&o.diskReserve, "disk-reserve", "64mb", "free space kept on --dir's file system: below it (plus twice a flush) nothing is written; a start below it restores read-only and writes once there is room")
	fs.Int64Var(&o.busyReply, "busy-reply-threshold", 5000, "ms a script may run before other clients are answered -BUSY and SCRIPT KILL may stop it; CONFIG SET works")
	fs.Int64Var(&o.busyReply, "lua-time-limit", 5000, "the old name of --busy-reply-threshold, as in Redis")
	fs.BoolVar(&o.recoverDamaged, "recover-damaged-store", false, "start from a store that holds less than its flush record says was flushed (a damaged manifest), or whose record is damaged, with what it holds; the loss is logged")
	fs.Int64Var(&o.logMaxLimit, "log-max-limit", 10000, "largest limit CL.WINDOW ... LOG accepts")
	fs.Var(&o.enableDebug, "enable-debug-command", "enable DEBUG (tests only): yes, no or local (as yes), as Redis; alone it means yes")
	fs.IntVar(&o.threads, "threads", runtime.GOMAXPROCS(0), "OS threads running Go code (GOMAXPROCS); 1 is often fastest when clients share the machine's few cores")
	fs.IntVar(&o.loops, "event-loops", 0, "with --io epoll, event loops serving connections (0: one fewer than --threads, at least one)")
	fs.StringVar(&o.io, "io", defaultIO(), "how connections are served: epoll (event loops, like Redis; Linux only) or goroutines (one per connection)")
	fs.IntVar(&o.maxclients, "maxclients", 10000, "most connections served at once; lowered at start to what the file-descriptor limit holds")
	fs.IntVar(&o.timeout, "timeout", 0, "close a connection idle for this many seconds (0: never)")
	fs.IntVar(&o.tcpKeepalive, "tcp-keepalive", 300, "TCP keep-alive period of client connections, in seconds (0: off)")
	fs.StringVar(&o.protected, "protected-mode", "yes", "yes: with no password set, accept connections only from 127.0.0.1 and ::1")
	fs.StringVar(&o.backupDir, "backup-dir", "", "where CHECKPOINT name writes its copies (default <dir>/backups)")
	fs.StringVar(&o.tlsPort, "tls-port", "", "TCP port for TLS connections (0 picks a free one and logs it); none by default")
	fs.StringVar(&o.tlsCert, "tls-cert-file", "", "the server's TLS certificate (PEM); reloaded on SIGHUP")
	fs.StringVar(&o.tlsKey, "tls-key-file", "", "its private key (PEM); reloaded on SIGHUP")
	fs.StringVar(&o.tlsCA, "tls-ca-cert-file", "", "CA certificates (PEM) that client certificates must chain to")
	fs.StringVar(&o.tlsAuthClients, "tls-auth-clients", "yes", "client certificates: yes (required), optional, or no")
	fs.StringVar(&o.clusterConfig, "cluster-config", "", "cluster mode with a static topology: a JSON file of shards (slot ranges, primary, replicas) and a version; reread on CLUSTER RELOAD and SIGHUP")
	fs.StringVar(&o.announceHost, "announce-host", "", "in cluster mode, the host clients are told to reach this node at (default --bind)")
	fs.IntVar(&o.announcePort, "announce-port", 0, "in cluster mode, the port clients are told (default the bound --port)")
	fs.StringVar(&o.clusterEtcd, "cluster-etcd", "", "cluster mode run by etcd: its v3 endpoints (host:port[,host:port...]); nodes register, elect a coordinator and follow the topology it writes")
	fs.StringVar(&o.clusterName, "cluster-name", "rlserver", "with --cluster-etcd, the cluster's name (its keys live under /rlserver/NAME/)")
	fs.IntVar(&o.clusterReplicas, "cluster-replicas", 1, "with --cluster-etcd, replicas wanted per primary")
	fs.IntVar(&o.nodeTimeoutMs, "cluster-node-timeout", 3000, "with --cluster-etcd, milliseconds (whole seconds, at least 1000) a node that stopped answering etcd keeps its place before it is taken out and its replica promoted")
	fs.StringVar(&o.masterUser, "masteruser", "", "in cluster mode, the ACL user a primary authenticates as to its replicas (default: the default user)")
	fs.StringVar(&o.masterAuth, "masterauth", "", "in cluster mode, the password a primary authenticates with to its replicas (default --requirepass)")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile to this file until shutdown (for benchmarking)")
	o.obs.register(fs)
	o.rls.register(fs)
	// The environment first, so that the command line overrides it.
	var envErr error
	fs.VisitAll(func(f *flag.Flag) {
		name := "RLSERVER_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v, ok := os.LookupEnv(name); ok && envErr == nil {
			if err := f.Value.Set(v); err != nil {
				envErr = fmt.Errorf("%s=%q: %v", name, v, err)
			}
		}
	})
	if envErr != nil {
		return nil, envErr
	}
	o.cli.register(fs) // after the environment: command line only
	if err := fs.Parse(joinBoolValues(fs, joinBindValues(fs, args))); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if o.cli.any() {
		return o, nil // no server starts: its flags need no checks
	}
	if o.shards < 1 || o.shards > shard.MaxShards || o.shards&(o.shards-1) != 0 {
		return nil, fmt.Errorf("--shards must be a power of two between 1 and %d", shard.MaxShards)
	}
	if o.threads < 1 {
		return nil, fmt.Errorf("--threads must be at least 1")
	}
	if o.loops < 0 {
		return nil, fmt.Errorf("--event-loops must be 0 (one fewer than --threads) or more")
	}
	switch o.io {
	case "epoll":
		if runtime.GOOS != "linux" {
			return nil, fmt.Errorf("--io epoll needs Linux; use --io goroutines")
		}
	case "goroutines":
	default:
		return nil, fmt.Errorf("--io must be epoll or goroutines")
	}
	if len(bindAddrs(o.bind)) == 0 {
		return nil, fmt.Errorf("--bind needs at least one address")
	}
	o.bind = strings.Join(strings.Fields(o.bind), " ")
	if o.saveInterval <= 0 {
		return nil, fmt.Errorf("--save-interval must be positive")
	}
	if o.busyReply < 0 {
		return nil, fmt.Errorf("--busy-reply-threshold must be 0 or more milliseconds")
	}
	if o.maxclients < 1 {
		return nil, fmt.Errorf("--maxclients must be at least 1")
	}
	if o.timeout < 0 {
		return nil, fmt.Errorf("--timeout must be 0 (never) or a number of seconds")
	}
	if o.tcpKeepalive < 0 {
		return nil, fmt.Errorf("--tcp-keepalive must be 0 (off) or a number of seconds")
	}
	if o.tlsPort == "0" && o.tlsCert == "" && o.tlsKey == "" {
		o.tlsPort = "" // Redis's tls-port 0 with nothing else: no TLS
	}
	if o.tlsPort != "" {
		if n, err := strconv.Atoi(o.tlsPort); err != nil || n < 0 || n > 65535 {
			return nil, fmt.Errorf("--tls-port must be a port number (0 picks a free one)")
		}
	}
	if o.clusterConfig != "" && o.clusterEtcd != "" {
		return nil, fmt.Errorf("--cluster-config and --cluster-etcd cannot be used together")
	}
	if o.clusterReplicas < 0 {
		return nil, fmt.Errorf("--cluster-replicas must be 0 or more")
	}
	if o.nodeTimeoutMs < 0 {
		return nil, fmt.Errorf("--cluster-node-timeout must be 0 or more milliseconds")
	}
	if o.clusterEtcd != "" {
		// etcd leases count whole seconds: round up, to at least one.
		if ms := max(1000, (o.nodeTimeoutMs+999)/1000*1000); ms != o.nodeTimeoutMs {
			log.Printf("--cluster-node-timeout %d: etcd leases count whole seconds, so %d ms is used", o.nodeTimeoutMs, ms)
			o.nodeTimeoutMs = ms
		}
	}
	if o.clusterConfig != "" {
		if _, err := cluster.ParseFile(o.clusterConfig); err != nil {
			return nil, fmt.Errorf("--cluster-config: %v", err)
		}
	}
	if o.clusterConfig != "" || o.clusterEtcd != "" {
		if o.announceHost == "" {
			if ip := net.ParseIP(o.bind); ip == nil || ip.IsUnspecified() {
				return nil, fmt.Errorf("--announce-host is needed in cluster mode when --bind (%q) is not one address", o.bind)
			}
			o.announceHost = o.bind
		}
	}
	if o.announcePort < 0 || o.announcePort > 65535 {
		return nil, fmt.Errorf("--announce-port must be a port number")
	}
	if o.masterAuth == "" {
		o.masterAuth = o.requirepass
	}
	// Redis reads yes/no and its other names case-insensitively.
	o.protected = strings.ToLower(o.protected)
	o.appendfsync = strings.ToLower(o.appendfsync)
	o.tlsAuthClients = strings.ToLower(o.tlsAuthClients)
	switch o.tlsAuthClients {
	case "yes", "no", "optional":
	default:
		return nil, fmt.Errorf("--tls-auth-clients must be yes, no or optional")
	}
	if o.protected != "yes" && o.protected != "no" {
		return nil, fmt.Errorf("--protected-mode must be yes or no")
	}
	if o.backupDir == "" && o.dir != "" {
		o.backupDir = filepath.Join(o.dir, "backups")
	}
	switch o.appendfsync {
	case "always", "everysec", "no":
	default:
		return nil, fmt.Errorf("--appendfsync must be always, everysec or no")
	}
	if err := o.obs.check(); err != nil {
		return nil, err
	}
	return o, nil
}

// listenAll listens on port at every address of the bind list; port 0
// picks a free port on the first, and the others take the same. An
// optional address ('-') that cannot be bound is skipped, as Redis does.
// first returns the address of the first socket listen made.
func listenAll(bind, port string, listen func(addr string) (first net.Addr, err error)) error {
	// An address that cannot be bound stops the start before any socket
	// listens: a client must never reach a server that is about to exit.
	for _, a := range bindAddrs(bind) {
		if a.optional {
			continue
		}
		pc, err := net.ListenPacket("udp", net.JoinHostPort(a.host, "0"))
		if err != nil {
			return err
		}
		pc.Close()
	}
	bound := false
	for _, a := range bindAddrs(bind) {
		first, err := listen(net.JoinHostPort(a.host, port))
		if err != nil {
			if a.optional {
				log.Printf("bind %s skipped: %v", a.host, err)
				continue
			}
			return err
		}
		if !bound {
			if _, p, err := net.SplitHostPort(first.String()); err == nil {
				port = p
			}
		}
		bound = true
	}
	if !bound {
		return fmt.Errorf("no address of --bind %q could be bound", bind)
	}
	return nil
}

// defaultIO is --io's default: event loops where there are any.
func defaultIO() string {
	if runtime.GOOS == "linux" {
		return "epoll"
	}
	return "goroutines"
}

// eventLoops returns resp.Config.EventLoops for o: --event-loops, or one
// loop fewer than threads (at least one). The thread left over runs what
// works beside the loops (the flusher, the collector, the sweeper); with
// every thread a loop, that work takes the loops' time, and scripts,
// which run one at a time, leave a second loop waiting for the first.
func eventLoops(o *options) int {
	switch {
	case o.io != "epoll":
		return 0
	case o.loops > 0:
		return o.loops
	}
	return max(o.threads-1, 1)
}

// fitsInt64 reports whether the size s is at most 2^63-1 bytes.
func fitsInt64(s string) bool {
	n, ok := command.MemoryValue([]byte(s))
	return ok && n <= 1<<63-1
}

func parseBytes(s string) (int64, error) {
	n, ok := command.ParseMemory([]byte(s))
	if !ok {
		return 0, fmt.Errorf("invalid size %q", s)
	}
	return n, nil
}

func run(args []string) int {
	o, err := parseOptions(args)
	if err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		log.Printf("error: %v", err)
		return 2
	}
	if o.cli.any() {
		return o.cli.run(o)
	}
	maxmem, err := parseBytes(o.maxmemory)
	if err != nil {
		log.Printf("error: --maxmemory: %v", err)
		return 2
	}
	backlog, err := parseBytes(o.backlog)
	if err != nil || backlog < 1 {
		log.Printf("error: --repl-backlog-size must be a size of at least 1 byte")
		return 2
	}
	// As Redis, a backlog under 16kb is raised to it; rlserver keeps one
	// per keyspace shard, so it is also held at 1gb.
	if b := min(max(backlog, 16<<10), 1<<30); b != backlog {
		if backlog > b {
			log.Printf("warning: --repl-backlog-size %s is more than the 1gb kept per keyspace shard: 1gb is used", o.backlog)
		}
		backlog = b
	}
	// Redis 7's bounds, and no relation between the two: a request over
	// either closes the connection or is refused.
	maxBulk, err := parseBytes(o.maxBulk)
	if err != nil || maxBulk < command.MinProtoMaxBulkLen || maxBulk == 1<<63-1 && !fitsInt64(o.maxBulk) {
		log.Printf("error: --proto-max-bulk-len must be a size from 1mb to 9223372036854775807 bytes")
		return 2
	}
	queryLimit, err := parseBytes(o.queryLimit)
	if err != nil || queryLimit < command.MinQueryBufferLimit || queryLimit == 1<<63-1 && !fitsInt64(o.queryLimit) {
		log.Printf("error: --client-query-buffer-limit must be a size from 1mb to 9223372036854775807 bytes")
		return 2
	}
	if err := o.rls.load(); err != nil {
		log.Printf("error: %v", err)
		return 2
	}
	runtime.GOMAXPROCS(o.threads)
	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			log.Printf("error: --cpuprofile: %v", err)
			return 2
		}
		pprof.StartCPUProfile(f)
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}
	clock := clock.New()
	store := shard.New(shard.Options{Shards: o.shards, MaxMemory: maxmem, TrackChanges: o.dir != "", Cluster: o.clusterConfig != "" || o.clusterEtcd != "",
		FeedBytes: int(backlog), Now: clock.Now})

	mserver, err := o.obs.startMetrics()
	if err != nil {
		log.Printf("error: %v", err)
		return 1
	}
	if mserver != nil {
		defer mserver.Close()
	}
	// The Lua engine first: persistence restores its function libraries.
	scripts := script.New()
	p, err := openPersistence(o, store, clock, scripts)
	if err != nil {
		log.Printf("error: %v", err)
		return 1
	}

	done := make(chan bool, 1)
	clusterEnabled := "no"
	if o.clusterConfig != "" || o.clusterEtcd != "" {
		clusterEnabled = "yes"
	}
	cfg := command.Config{
		Scripts:       scripts,
		RequirePass:   o.requirepass,
		ACLFile:       o.aclFile,
		EnableDebug:   o.enableDebug.on,
		LogMaxLimit:   o.logMaxLimit,
		Slowlog:       o.obs.slowlog(),
		ProtectedMode: o.protected == "yes",
		BackupDir:     o.backupDir,
		Settings: map[string]string{
			"bind":                 o.bind,
			"port":                 strconv.Itoa(o.port),
			"dir":                  o.dir,
			"save-interval":        o.saveInterval.String(),
			"appendfsync":          o.appendfsync,
			"shards":               strconv.Itoa(o.shards),
			"enable-debug-command": o.enableDebug.String(),
			"io":                   o.io,
			"threads":              strconv.Itoa(o.threads),
			"tcp-keepalive":        strconv.Itoa(o.tcpKeepalive),
			"backup-dir":           o.backupDir,
			"aclfile":              o.aclFile,
			"tls-port":             o.tlsPort,
			"tls-ca-cert-file":     o.tlsCA,
			"tls-auth-clients":     o.tlsAuthClients,
			"cluster-enabled":      clusterEnabled, // Redis's name

			"cluster-config":       o.clusterConfig,
			"cluster-etcd":         o.clusterEtcd,
			"cluster-name":         o.clusterName,
			"cluster-replicas":     strconv.Itoa(o.clusterReplicas),
			"cluster-node-timeout": strconv.Itoa(o.nodeTimeoutMs),
		},
		OnShutdown: func(save bool) {
			select {
			case done <- save:
			default:
			}
		},
	}
	if p != nil {
		cfg.Persistence = p
	}
	var memLimit memlimit.Tuner
	cfg.OnMaxMemory = memLimit.SetBound
	commands := command.New(cfg, store, clock)
	if !commands.SetMaxMemoryPolicy(o.policy) {
		log.Printf("error: --maxmemory-policy %q: not one of %s", o.policy, strings.Join(command.MaxMemoryPolicies, ", "))
		return 2
	}
	commands.SetMaxMemory(maxmem)
	commands.SetBusyReplyThreshold(o.busyReply)
	if err := commands.LoadACL(); err != nil {
		log.Printf("error: --aclfile: %v", err)
		if p != nil {
			p.Shutdown(false)
		}
		return 2
	}
	if o.aclFile != "" && o.requirepass != "" {
		// Redis takes both and lets the file's users replace the password,
		// leaving a default user the file does not name without one. Here
		// such a default user keeps --requirepass's password.
		if aclFileNamesDefault(o.aclFile) {
			log.Printf("warning: --requirepass is not used: --aclfile %s names the default user, whose rules there win, as in Redis", o.aclFile)
		} else {
			commands.SetRequirePass(o.requirepass)
			log.Printf("warning: --aclfile %s does not name the default user: it takes --requirepass's password (Redis would leave it without one); ACL LOAD would remove it", o.aclFile)
		}
	}
	maxclients, err := fitMaxClients(o)
	if err != nil {
		log.Printf("error: %v", err)
		if p != nil {
			p.Shutdown(false)
		}
		return 1
	}
	keepalive := time.Duration(o.tcpKeepalive) * time.Second
	if keepalive == 0 {
		keepalive = -1 // off
	}
	rcfg := resp.Config{ProtoMaxBulkLen: int(maxBulk), QueryBufferLimit: int(queryLimit), EventLoops: eventLoops(o), MaxClients: maxclients,
		IdleTimeout: time.Duration(o.timeout) * time.Second, TCPKeepAlive: keepalive, Admit: commands.Admit}
	// A flush of persistence and a primary's replication links need turns
	// on a busy loop's thread (see resp.Config.Background): every 200 µs,
	// and more while a flush runs late, so that the loss window stays
	// near its bound however hard the loops are driven.
	rcfg.Background = func() time.Duration {
		if p != nil && p.Flushing() {
			if p.Late() {
				return 50 * time.Microsecond
			}
			return 200 * time.Microsecond
		}
		if n := o.replication.Load(); n != nil && n.Streaming() {
			return 200 * time.Microsecond
		}
		return 0
	}
	srv := resp.New(rcfg, commands)
	var certs *tlsCerts
	if o.tlsPort != "" {
		var tcfg *tls.Config
		if tcfg, certs, err = tlsConfig(o); err == nil {
			commands.SetTLS(certs)
		} else {
			log.Printf("error: %v", err)
			if p != nil {
				p.Shutdown(false)
			}
			return 2
		}
		if err := listenAll(o.bind, o.tlsPort, func(addr string) (net.Addr, error) {
			if err := srv.ListenTLS(addr, tcfg); err != nil {
				return nil, err
			}
			return srv.TLSAddr(), nil
		}); err != nil {
			log.Printf("error: listen (TLS): %v", err)
			if p != nil {
				p.Shutdown(false)
			}
			return 1
		}
		log.Printf("TLS: listening on %s", srv.TLSAddr())
	}
	if err := listenAll(o.bind, strconv.Itoa(o.port), func(addr string) (net.Addr, error) {
		if err := srv.Listen(addr); err != nil {
			return nil, err
		}
		return srv.Addr(), nil
	}); err != nil {
		log.Printf("error: listen: %v", err)
		if p != nil {
			p.Shutdown(false)
		}
		return 1
	}
	stopRLS, err := o.rls.start(o, commands, clock, mserver)
	if err != nil {
		log.Printf("error: %v", err)
		srv.Close(time.Second)
		if p != nil {
			p.Shutdown(false)
		}
		return 2
	}
	var replication *repl.Node
	var stopCluster func()
	if o.clusterConfig != "" || o.clusterEtcd != "" {
		if replication, stopCluster, err = startCluster(o, srv, commands, store, clock, scripts); err != nil {
			log.Printf("error: %v", err)
			srv.Close(time.Second)
			if p != nil {
				p.Shutdown(false)
			}
			return 2
		}
	}
	restored, how := 0, "(in memory only)"
	if p != nil {
		restored, how = p.Restored(), p.RestoreSummary()
	}
	log.Printf("ready: listening on %s, %d keys restored %s, %d shards, dir %q", srv.Addr(), restored, how, store.NumShards(), o.dir)
	if mserver != nil {
		mserver.Attach(commands, srv)
		mserver.Restored()
		log.Printf("metrics: serving http://%s/metrics, /healthz, /readyz", mserver.Addr())
	}

	stopSweep := startSweeper(store, clock, memLimit.Tune)
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve() }()

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		for range hup {
			if st := commands.Cluster(); st != nil {
				reloadTopology(st)
			}
			if certs == nil {
				continue
			}
			if err := certs.load(); err != nil {
				log.Printf("error: SIGHUP: reloading the TLS certificate: %v (the previous one stays)", err)
			} else {
				log.Printf("SIGHUP: TLS certificate reloaded")
			}
		}
	}()
	save := true
	code := 0
	select {
	case s := <-sig:
		log.Printf("received %v: shutting down", s)
	case save = <-done:
		if !save && commands.ScriptBusy() {
			// As Redis: the hard way out of a script that cannot be
			// killed. It holds every key's lock, so nothing more can be
			// flushed; what was flushed before it stays.
			log.Printf("SHUTDOWN NOSAVE while a script runs past busy-reply-threshold: exiting now, without the final flush")
			return 0
		}
		log.Printf("SHUTDOWN: shutting down")
	case err := <-serveErr:
		log.Printf("error: serve: %v", err)
		code = 1
	}
	if stopCluster != nil {
		// Leaving an etcd-run cluster: serve no key from now on, let the
		// replicas acknowledge every change, then give the lease up, so
		// that the replica promoted at once holds every decision made here.
		commands.Cluster().Leave()
		if replication != nil {
			if acked, n := replication.Drain(5 * time.Second); acked < n {
				log.Printf("cluster: leaving with %d of %d replicas holding every change", acked, n)
			}
		}
		stopCluster()
	}
	stopRLS()
	if replication != nil {
		replication.Close()
	}
	srv.Close(5 * time.Second)
	stopSweep()
	if p != nil {
		if err := p.Shutdown(save); err != nil {
			log.Printf("error: final flush: %v", err)
			code = 1
		}
	}
	log.Printf("bye")
	return code
}

// startSweeper runs the active expiry sweep: every 100 ms each shard gets a
// bounded amount of work per lock hold, so a sweep never holds a lock for
// long, and more rounds while a quarter or more of it was removing expired
// keys (as Redis's active expiry repeats while it finds many).
func startSweeper(store *shard.Store, clock *clock.Clock, tune func()) (stop func()) {
	const perShard = 2000
	quit := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				tune() // the memory limit follows what the process holds live
				now := clock.Now()
				for i := 0; i < store.NumShards(); i++ {
					sh := store.Shard(i)
					for round := 0; round < 16; round++ {
						lk := sh.Lock()
						if round == 0 {
							lk.TrimSlabs() // spare pages left unused since the last tick
						}
						removed := lk.Sweep(now, perShard)
						removed += lk.EvictOver(perShard / 8) // back under a lowered --maxmemory while idle
						lk.Unlock()
						runtime.Gosched() // an event loop waiting for this P runs first
						if removed < perShard/4 {
							break
						}
					}
				}
			}
		}
	}()
	return func() { close(quit); <-finished }
}
