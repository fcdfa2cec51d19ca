package resp

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rlserver/rlserver/shard"
)

// configParam is one CONFIG GET/SET parameter.
type configParam struct {
	get func(s *Server) string
	set func(s *Server, v []byte) bool // nil: immutable
}

var configParams = map[string]configParam{
	"maxmemory": {
		get: func(s *Server) string { return strconv.FormatInt(s.maxMemory.Load(), 10) },
		set: func(s *Server, v []byte) bool {
			n, ok := ParseMemory(v)
			if ok {
				s.maxMemory.Store(n)
				s.store.SetMaxMemory(n)
			}
			return ok
		},
	},
	"requirepass": {
		get: func(s *Server) string { return *s.requirePass.Load() },
		set: func(s *Server, v []byte) bool { p := string(v); s.requirePass.Store(&p); return true },
	},
	"proto-max-bulk-len": {
		get: func(s *Server) string { return strconv.FormatInt(s.maxBulk.Load(), 10) },
		set: func(s *Server, v []byte) bool {
			n, ok := ParseMemory(v)
			if ok && n >= 1024 && n <= 512<<20 {
				s.maxBulk.Store(n)
				return true
			}
			return false
		},
	},
	"log-max-limit": {
		get: func(s *Server) string { return strconv.FormatInt(s.logMax.Load(), 10) },
		set: func(s *Server, v []byte) bool {
			n, ok := parsePositive(v)
			if ok {
				s.logMax.Store(n)
			}
			return ok
		},
	},
	"databases":  {get: func(*Server) string { return "1" }},
	"appendonly": {get: func(*Server) string { return "no" }},
	"save":       {get: func(*Server) string { return "" }},
}

// ParseMemory parses a byte count with Redis's optional units, as in
// redis.conf and CONFIG SET: k, m, g are powers of 1000, kb, mb, gb powers
// of 1024, b bytes; case-insensitive.
func ParseMemory(v []byte) (int64, bool) {
	s := strings.ToLower(string(v))
	mul := int64(1)
	for _, u := range []struct {
		suf string
		m   int64
	}{{"gb", 1 << 30}, {"mb", 1 << 20}, {"kb", 1 << 10}, {"g", 1e9}, {"m", 1e6}, {"k", 1e3}, {"b", 1}} {
		if strings.HasSuffix(s, u.suf) {
			s, mul = strings.TrimSuffix(s, u.suf), u.m
			break
		}
	}
	n, ok := ParseInt([]byte(s))
	if !ok || n < 0 || n > (1<<63-1)/mul {
		return 0, false
	}
	return n * mul, true
}

func (s *Server) configValue(name string) (string, bool) {
	if p, ok := configParams[name]; ok {
		return p.get(s), true
	}
	v, ok := s.cfg.Settings[name]
	return v, ok
}

// CONFIG GET parameter [parameter ...]
func cmdConfigGet(c *Conn, args [][]byte) {
	names := make([]string, 0, len(configParams)+len(c.srv.cfg.Settings))
	for n := range configParams {
		names = append(names, n)
	}
	for n := range c.srv.cfg.Settings {
		names = append(names, n)
	}
	sort.Strings(names)
	var pairs [][2]string
	seen := map[string]bool{}
	for _, pat := range args[2:] {
		low := []byte(strings.ToLower(string(pat)))
		for _, n := range names {
			if !seen[n] && globMatch(low, n) {
				seen[n] = true
				v, _ := c.srv.configValue(n)
				pairs = append(pairs, [2]string{n, v})
			}
		}
	}
	c.out = appendMap(c.out, c.proto, len(pairs))
	for _, p := range pairs {
		c.out = appendBulkStr(c.out, p[0])
		c.out = appendBulkStr(c.out, p[1])
	}
}

// CONFIG SET parameter value [parameter value ...]: all or nothing.
func cmdConfigSet(c *Conn, args [][]byte) {
	if len(args)%2 != 0 {
		c.err(ErrWrongArgs("config|set"))
		return
	}
	for i := 2; i < len(args); i += 2 {
		name := strings.ToLower(string(args[i]))
		p, ok := configParams[name]
		if !ok {
			if _, ro := c.srv.cfg.Settings[name]; ro {
				c.err(ErrConfigImmutable(name))
				return
			}
			c.err(ErrConfigUnknown(args[i]))
			return
		}
		if p.set == nil {
			c.err(ErrConfigImmutable(name))
			return
		}
	}
	// Validate every value on a throwaway check first, so a bad value
	// changes nothing.
	for i := 2; i < len(args); i += 2 {
		name := strings.ToLower(string(args[i]))
		if !validConfigValue(name, args[i+1]) {
			c.err(ErrConfigValue(name))
			return
		}
	}
	for i := 2; i < len(args); i += 2 {
		configParams[strings.ToLower(string(args[i]))].set(c.srv, args[i+1])
	}
	c.out = appendOK(c.out)
}

func validConfigValue(name string, v []byte) bool {
	switch name {
	case "maxmemory":
		_, ok := ParseMemory(v)
		return ok
	case "proto-max-bulk-len":
		n, ok := ParseMemory(v)
		return ok && n >= 1024 && n <= 512<<20
	case "log-max-limit":
		_, ok := parsePositive(v)
		return ok
	}
	return true
}

// MEMORY PURGE runs a garbage collection and returns freed memory to the
// operating system (Redis asks its allocator to purge dirty pages). The
// keyspace itself lives in slabs that stay allocated for reuse.
func cmdMemoryPurge(c *Conn, args [][]byte) {
	debug.FreeOSMemory()
	c.out = appendOK(c.out)
}

// MEMORY USAGE key [SAMPLES count]: the bytes the key's record, its share
// of the index and any state kept as an object take (what --maxmemory
// counts), or nil for a missing key. SAMPLES is accepted and ignored, as
// rlserver's values are never sampled.
func cmdMemoryUsage(c *Conn, args [][]byte) {
	if len(args) != 3 && (len(args) != 5 || !equalFold(args[3], "SAMPLES")) {
		c.err(ErrSyntax)
		return
	}
	if len(args) == 5 {
		if _, ok := ParseInt(args[4]); !ok {
			c.err(ErrNotInt)
			return
		}
	}
	n := int64(-1)
	withKey(c, args[2], func(sh *shard.Shard, f shard.Found, _ int64) {
		if f.OK {
			n = int64(sh.Usage(f))
		}
	})
	if n < 0 {
		c.out = appendNull(c.out, c.proto)
		return
	}
	c.out = appendInt(c.out, n)
}

// CONFIG RESETSTAT zeroes the counters INFO stats reports.
func cmdConfigResetStat(c *Conn, args [][]byte) {
	s := c.srv
	s.doneCmds.Store(0)
	s.totConns.Store(0)
	s.rejected.Store(0)
	s.mu.Lock()
	for other := range s.conns {
		other.cmds.Store(0)
	}
	s.mu.Unlock()
	s.store.ResetStats()
	c.out = appendOK(c.out)
}

// INFO [section ...]
func cmdInfo(c *Conn, args [][]byte) {
	want := map[string]bool{}
	for _, a := range args[1:] {
		want[strings.ToLower(string(a))] = true
	}
	all := len(want) == 0 || want["all"] || want["everything"] || want["default"]
	var b strings.Builder
	for _, sec := range c.srv.infoSections(c) {
		if !all && !want[strings.ToLower(sec.name)] {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\r\n")
		}
		b.WriteString("# " + sec.name + "\r\n")
		for _, f := range sec.fields {
			b.WriteString(f[0] + ":" + f[1] + "\r\n")
		}
	}
	c.out = appendVerbatim(c.out, c.proto, b.String())
}

type infoSection struct {
	name   string
	fields [][2]string
}

func (s *Server) infoSections(c *Conn) []infoSection {
	now := time.Now()
	up := now.Sub(s.started)
	st := s.store.Stats()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	i64 := func(n int64) string { return strconv.FormatInt(n, 10) }
	port := "0"
	if s.ln != nil {
		if _, p, err := splitHostPort(s.ln.Addr().String()); err == nil {
			port = p
		}
	}
	keys := c.dbsize()
	secs := []infoSection{
		{"Server", [][2]string{
			{"redis_version", redisVersion},
			{"rlserver_version", Version},
			{"redis_mode", "standalone"},
			{"os", runtime.GOOS + " " + runtime.GOARCH},
			{"arch_bits", "64"},
			{"go_version", runtime.Version()},
			{"process_id", strconv.Itoa(pid())},
			{"tcp_port", port},
			{"server_time_usec", i64(s.clock.Now() / 1e3)},
			{"uptime_in_seconds", i64(int64(up / time.Second))},
			{"uptime_in_days", i64(int64(up / (24 * time.Hour)))},
			{"shards", strconv.Itoa(s.store.NumShards())},
		}},
		{"Clients", [][2]string{
			{"connected_clients", strconv.Itoa(s.numConns())},
			{"blocked_clients", "0"},
		}},
		{"Memory", [][2]string{
			{"used_memory", strconv.FormatUint(ms.HeapAlloc, 10)},
			{"used_memory_human", humanBytes(int64(ms.HeapAlloc))},
			{"used_memory_rss", strconv.FormatUint(ms.Sys, 10)},
			{"used_memory_dataset", i64(st.Memory)},
			{"maxmemory", i64(s.maxMemory.Load())},
			{"maxmemory_policy", "volatile-ttl"},
		}},
	}
	pers := [][2]string{{"loading", "0"}}
	if s.cfg.Persistence != nil {
		pers = append(pers, s.cfg.Persistence.Info()...)
	} else {
		pers = append(pers, [][2]string{
			{"rdb_changes_since_last_save", i64(st.Changes)},
			{"rdb_bgsave_in_progress", "0"},
			{"rdb_last_save_time", i64(s.started.Unix())},
			{"rdb_last_bgsave_status", "ok"},
			{"aof_enabled", "0"},
		}...)
	}
	secs = append(secs, infoSection{"Persistence", pers})
	secs = append(secs, infoSection{"Stats", [][2]string{
		{"total_connections_received", i64(s.totConns.Load())},
		{"total_commands_processed", i64(s.totalCommands())},
		{"rejected_connections", "0"},
		{"protocol_errors", i64(s.rejected.Load())},
		{"expired_keys", i64(st.Expired)},
		{"evicted_keys", i64(st.Evicted)},
	}})
	secs = append(secs, infoSection{"Replication", [][2]string{
		{"role", "master"},
		{"connected_slaves", "0"},
	}})
	ks := [][2]string{}
	if keys > 0 {
		ks = append(ks, [2]string{"db0", fmt.Sprintf("keys=%d,expires=%d,avg_ttl=0,subexpiry=0", keys, keys)})
	}
	secs = append(secs, infoSection{"Keyspace", ks})
	return secs
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

// DEBUG CLOCK SET unix_ms | ADVANCE ms | REAL | GET
func cmdDebugClock(c *Conn, args [][]byte) {
	if !c.srv.cfg.EnableDebug {
		c.err(ErrDebugOff)
		return
	}
	op := args[2]
	switch {
	case equalFold(op, "SET") && len(args) == 4:
		ms, ok := ParseInt(args[3])
		if !ok || ms < 0 || ms > (1<<63-1)/int64(1e6) {
			c.err(ErrNotInt)
			return
		}
		c.srv.clock.Set(ms * 1e6)
		c.batchNow = 0
	case equalFold(op, "ADVANCE") && len(args) == 4:
		ms, ok := ParseInt(args[3])
		if !ok || ms > (1<<63-1)/int64(1e6) || ms < -((1<<63-1)/int64(1e6)) {
			c.err(ErrNotInt)
			return
		}
		c.srv.clock.Advance(time.Duration(ms) * time.Millisecond)
		c.batchNow = 0
	case equalFold(op, "REAL") && len(args) == 3:
		c.srv.clock.Real()
		c.batchNow = 0
	case equalFold(op, "GET") && len(args) == 3:
		c.out = appendInt(c.out, c.srv.clock.Now()/1e6)
		return
	default:
		c.err(ErrSyntax)
		return
	}
	c.out = appendOK(c.out)
}

func cmdSave(c *Conn, args [][]byte) {
	if p := c.srv.cfg.Persistence; p != nil {
		if err := p.Save(); err != nil {
			c.err(ErrFailed(err))
			return
		}
	}
	c.out = appendOK(c.out)
}

func cmdBGSave(c *Conn, args [][]byte) {
	if len(args) == 2 && !equalFold(args[1], "SCHEDULE") {
		c.err(ErrSyntax)
		return
	}
	if p := c.srv.cfg.Persistence; p != nil {
		if err := p.BGSave(); err != nil {
			c.err(ErrFailed(err))
			return
		}
	}
	c.out = appendStatus(c.out, "Background saving started")
}

func cmdLastSave(c *Conn, args [][]byte) {
	t := c.srv.started.Unix()
	if p := c.srv.cfg.Persistence; p != nil {
		t = p.LastSave()
	}
	c.out = appendInt(c.out, t)
}

// SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE]: on success the connection just
// closes, as with Redis.
func cmdShutdown(c *Conn, args [][]byte) {
	save := true
	for _, a := range args[1:] {
		switch {
		case equalFold(a, "NOSAVE"):
			save = false
		case equalFold(a, "SAVE"), equalFold(a, "NOW"), equalFold(a, "FORCE"):
		default:
			c.err(ErrSyntax)
			return
		}
	}
	if p := c.srv.cfg.Persistence; save && p != nil {
		if err := p.Save(); err != nil {
			c.err(ErrShutdown)
			return
		}
	}
	c.quit = true
	if f := c.srv.cfg.OnShutdown; f != nil {
		// The final flush happens after every connection has finished, so
		// that nothing acknowledged after the save above is lost.
		go f(save)
	}
}

// CHECKPOINT dir: an rlserver extension; flushes, then writes a consistent
// Pebble checkpoint of the store to dir on the server's filesystem.
func cmdCheckpoint(c *Conn, args [][]byte) {
	p := c.srv.cfg.Persistence
	if p == nil {
		c.err(ErrPersistenceOff)
		return
	}
	if err := p.Checkpoint(string(args[1])); err != nil {
		c.err(ErrFailed(err))
		return
	}
	c.out = appendOK(c.out)
}
