package command

import (
	"fmt"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rlserver/rlserver/resp"
)

// configParam is one CONFIG GET/SET parameter. A settable one has parse,
// which CONFIG SET runs on every value before it sets any (so a bad value
// changes nothing), and set, which takes the value and what parse made of
// it.
type configParam struct {
	get   func(c *Ctx) string
	parse func(v []byte) (int64, bool) // nil: immutable
	set   func(c *Ctx, n int64, v []byte)
	bad   func(name string) string // CONFIG SET's error for a bad value; default errConfigValue
}

// intParam is a settable integer parameter.
func intParam(get func(c *Ctx) int64, parse func([]byte) (int64, bool), set func(c *Ctx, n int64)) configParam {
	return configParam{get: func(c *Ctx) string { return strconv.FormatInt(get(c), 10) }, parse: parse,
		set: func(c *Ctx, n int64, _ []byte) { set(c, n) }}
}

// rangedParam is a settable integer parameter bounded to [lo, hi], with
// Redis's error for a value outside.
func rangedParam(get func(c *Ctx) int64, parse func([]byte) (int64, bool), lo, hi int64, set func(c *Ctx, n int64)) configParam {
	p := intParam(get, inRange(parse, lo, hi), set)
	p.bad = func(name string) string {
		return fmt.Sprintf("ERR CONFIG SET failed (possibly related to argument '%s') - argument must be between %d and %d inclusive", name, lo, hi)
	}
	return p
}

// inRange returns parse limited to [lo, hi].
func inRange(parse func([]byte) (int64, bool), lo, hi int64) func([]byte) (int64, bool) {
	return func(v []byte) (int64, bool) {
		n, ok := parse(v)
		return n, ok && n >= lo && n <= hi
	}
}

var configParams = map[string]configParam{
	"maxmemory": intParam(func(c *Ctx) int64 { return c.h.maxMemory.Load() }, ParseMemory,
		func(c *Ctx, n int64) { c.h.SetMaxMemory(n) }),
	"proto-max-bulk-len": intParam(func(c *Ctx) int64 { return c.srv.MaxBulkLen() }, inRange(ParseMemory, 1024, 512<<20),
		func(c *Ctx, n int64) { c.srv.SetMaxBulkLen(n) }),
	"client-query-buffer-limit": rangedParam(func(c *Ctx) int64 { return c.srv.QueryBufferLimit() }, ParseMemory, 1<<20, 1<<40,
		func(c *Ctx, n int64) { c.srv.SetQueryBufferLimit(n) }),
	"log-max-limit": intParam(func(c *Ctx) int64 { return c.h.logMax.Load() }, parsePositive,
		func(c *Ctx, n int64) { c.h.logMax.Store(n) }),
	"maxclients": intParam(func(c *Ctx) int64 { return c.srv.MaxClients() }, parsePositive,
		func(c *Ctx, n int64) { c.srv.SetMaxClients(n) }),
	"timeout": intParam(func(c *Ctx) int64 { return int64(c.srv.IdleTimeout() / time.Second) }, inRange(parseCost, 0, 1<<31),
		func(c *Ctx, n int64) { c.srv.SetIdleTimeout(time.Duration(n) * time.Second) }),
	"protected-mode": {
		get:   func(c *Ctx) string { return yesNo(c.h.protected.Load()) },
		parse: parseYesNo,
		set:   func(c *Ctx, n int64, _ []byte) { c.h.protected.Store(n == 1) },
		bad:   errConfigYesNo,
	},
	"requirepass": {
		get:   func(c *Ctx) string { return *c.h.requirePass.Load() },
		parse: func([]byte) (int64, bool) { return 0, true },
		set: func(c *Ctx, _ int64, v []byte) {
			p := string(v)
			c.h.requirePass.Store(&p)
			c.h.acl.setPassword(p)
		},
	},
	"tls-cert-file": tlsFileParam(true),
	"tls-key-file":  tlsFileParam(false),
	"databases":     {get: func(*Ctx) string { return "1" }},
	"appendonly":    {get: func(*Ctx) string { return "no" }},
	"save":          {get: func(*Ctx) string { return "" }},
	// How long a script that has not written may run (ms, 0: for ever)
	// before it is killed; lua-time-limit is its old name.
	"busy-reply-threshold": scriptThreshold,
	"lua-time-limit":       scriptThreshold,
}

var scriptThreshold = intParam(func(c *Ctx) int64 { return c.h.scripts.Threshold().Milliseconds() }, inRange(parseCost, 0, 1<<40),
	func(c *Ctx, n int64) { c.h.scripts.SetThreshold(time.Duration(n) * time.Millisecond) })

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
	n, ok := resp.ParseInt([]byte(s))
	if !ok || n < 0 || n > (1<<63-1)/mul {
		return 0, false
	}
	return n * mul, true
}

func (c *Ctx) configValue(name string) (string, bool) {
	if p, ok := configParams[name]; ok {
		return p.get(c), true
	}
	v, ok := c.h.cfg.Settings[name]
	return v, ok
}

// CONFIG GET parameter [parameter ...]
func cmdConfigGet(c *Ctx, args [][]byte) {
	names := make([]string, 0, len(configParams)+len(c.h.cfg.Settings))
	for n := range configParams {
		names = append(names, n)
	}
	for n := range c.h.cfg.Settings {
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
				v, _ := c.configValue(n)
				pairs = append(pairs, [2]string{n, v})
			}
		}
	}
	c.W.Map(len(pairs))
	for _, p := range pairs {
		c.W.BulkString(p[0])
		c.W.BulkString(p[1])
	}
}

// CONFIG SET parameter value [parameter value ...]: all or nothing.
func cmdConfigSet(c *Ctx, args [][]byte) {
	if len(args)%2 != 0 {
		c.err(errWrongArgs("config|set"))
		return
	}
	for i := 2; i < len(args); i += 2 {
		name := strings.ToLower(string(args[i]))
		p, ok := configParams[name]
		if !ok {
			if _, ro := c.h.cfg.Settings[name]; ro {
				c.err(errConfigImmutable(name))
				return
			}
			c.err(errConfigUnknown(args[i]))
			return
		}
		if p.parse == nil {
			c.err(errConfigImmutable(name))
			return
		}
	}
	for i := 2; i < len(args); i += 2 {
		name := strings.ToLower(string(args[i]))
		if p := configParams[name]; !parsed(p.parse(args[i+1])) {
			bad := errConfigValue
			if p.bad != nil {
				bad = p.bad
			}
			c.err(bad(name))
			return
		}
	}
	applyTLS, msg := c.tlsFiles(args)
	if msg != "" {
		c.err(msg)
		return
	}
	for i := 2; i < len(args); i += 2 {
		p := configParams[strings.ToLower(string(args[i]))]
		n, _ := p.parse(args[i+1])
		p.set(c, n, args[i+1])
	}
	if applyTLS != nil {
		applyTLS()
	}
	c.W.OK()
}

// tlsFiles loads the certificate and key a CONFIG SET names (tls-cert-file,
// tls-key-file; the other one stays), so that a bad pair fails the whole
// CONFIG SET; apply then serves it. Nil apply: no TLS file is set.
func (c *Ctx) tlsFiles(args [][]byte) (apply func(), msg string) {
	var cert, key string
	touched := ""
	for i := 2; i < len(args); i += 2 {
		switch name := strings.ToLower(string(args[i])); name {
		case "tls-cert-file":
			cert, touched = string(args[i+1]), name
		case "tls-key-file":
			key, touched = string(args[i+1]), name
		}
	}
	if touched == "" {
		return nil, ""
	}
	t := c.h.cfg.TLS
	if t == nil {
		return nil, errConfigReason(touched, "TLS is not enabled: start the server with --tls-port")
	}
	curCert, curKey := t.Files()
	if cert == "" {
		cert = curCert
	}
	if key == "" {
		key = curKey
	}
	apply, err := t.Load(cert, key)
	if err != nil {
		return nil, errConfigReason(touched, "Unable to update TLS configuration: "+err.Error())
	}
	return apply, ""
}

// tlsFileParam is tls-cert-file or tls-key-file: CONFIG SET's tlsFiles
// does the work, so that both change together.
func tlsFileParam(cert bool) configParam {
	return configParam{
		get: func(c *Ctx) string {
			if c.h.cfg.TLS == nil {
				return ""
			}
			certFile, keyFile := c.h.cfg.TLS.Files()
			if cert {
				return certFile
			}
			return keyFile
		},
		parse: func([]byte) (int64, bool) { return 0, true },
		set:   func(*Ctx, int64, []byte) {},
	}
}

// MEMORY PURGE runs a garbage collection and returns freed memory to the
// operating system (Redis asks its allocator to purge dirty pages). The
// keyspace itself lives in slabs that stay allocated for reuse.
func cmdMemoryPurge(c *Ctx, args [][]byte) {
	debug.FreeOSMemory()
	c.W.OK()
}

// MEMORY USAGE key [SAMPLES count]: the bytes the key's record, its share
// of the index and any state kept as an object take (what --maxmemory
// counts), or nil for a missing key. SAMPLES is accepted and ignored, as
// rlserver's values are never sampled.
func cmdMemoryUsage(c *Ctx, args [][]byte) {
	if len(args) != 3 && (len(args) != 5 || !equalFold(args[3], "SAMPLES")) {
		c.err(errSyntax)
		return
	}
	if len(args) == 5 {
		if _, ok := resp.ParseInt(args[4]); !ok {
			c.err(errNotInt)
			return
		}
	}
	n, ok := c.keys().Usage(args[2], c.Now())
	if !ok {
		c.W.Null()
		return
	}
	c.W.Int(int64(n))
}

// CONFIG RESETSTAT zeroes the counters INFO stats reports.
func cmdConfigResetStat(c *Ctx, args [][]byte) {
	c.resetStats()
	c.h.totalCmds.Store(0)
	c.srv.ResetStats()
	c.Store().ResetStats()
	c.W.OK()
}

// totalCommands is the INFO stats total_commands_processed.
func (c *Ctx) totalCommands() int64 { return c.h.totalCmds.Load() }

// DEBUG CLOCK SET unix_ms | ADVANCE ms | REAL | GET
func cmdDebugClock(c *Ctx, args [][]byte) {
	if !c.h.cfg.EnableDebug {
		c.err(errDebugOff)
		return
	}
	op := args[2]
	switch {
	case equalFold(op, "SET") && len(args) == 4:
		ms, ok := resp.ParseInt(args[3])
		if !ok || ms < 0 || ms > (1<<63-1)/int64(1e6) {
			c.err(errNotInt)
			return
		}
		c.h.clock.Set(ms * 1e6)
		c.now = 0
	case equalFold(op, "ADVANCE") && len(args) == 4:
		ms, ok := resp.ParseInt(args[3])
		if !ok || ms > (1<<63-1)/int64(1e6) || ms < -((1<<63-1)/int64(1e6)) {
			c.err(errNotInt)
			return
		}
		c.h.clock.Advance(time.Duration(ms) * time.Millisecond)
		c.now = 0
	case equalFold(op, "REAL") && len(args) == 3:
		c.h.clock.Real()
		c.now = 0
	case equalFold(op, "GET") && len(args) == 3:
		c.W.Int(c.h.clock.Now() / 1e6)
		return
	default:
		c.err(errSyntax)
		return
	}
	c.W.OK()
}

// DEBUG DISKFAULT ENOSPC | EACCES | EROFS | ENOENT | OFF
func cmdDebugDiskFault(c *Ctx, args [][]byte) {
	if !c.h.cfg.EnableDebug {
		c.err(errDebugOff)
		return
	}
	faults := map[string]error{"ENOSPC": syscall.ENOSPC, "EACCES": syscall.EACCES, "EROFS": syscall.EROFS, "ENOENT": syscall.ENOENT, "OFF": nil}
	err, ok := faults[strings.ToUpper(string(args[2]))]
	if !ok {
		c.err(errSyntax)
		return
	}
	p := c.h.cfg.Persistence
	if p == nil {
		c.err(errPersistenceOff)
		return
	}
	if err != nil {
		err = fmt.Errorf("injected fault (DEBUG DISKFAULT): %w", err)
	}
	p.InjectFault(err)
	c.W.OK()
}

func cmdSave(c *Ctx, args [][]byte) {
	if p := c.h.cfg.Persistence; p != nil {
		if err := p.Save(); err != nil {
			c.err(errFailed(err))
			return
		}
	}
	c.W.OK()
}

func cmdBGSave(c *Ctx, args [][]byte) {
	if len(args) == 2 && !equalFold(args[1], "SCHEDULE") {
		c.err(errSyntax)
		return
	}
	if p := c.h.cfg.Persistence; p != nil {
		if err := p.BGSave(); err != nil {
			c.err(errFailed(err))
			return
		}
	}
	c.W.Status("Background saving started")
}

func cmdLastSave(c *Ctx, args [][]byte) {
	t := c.h.started.Unix()
	if p := c.h.cfg.Persistence; p != nil {
		t = p.LastSave()
	}
	c.W.Int(t)
}

// SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE]: on success the connection just
// closes, as with Redis.
func cmdShutdown(c *Ctx, args [][]byte) {
	save := true
	for _, a := range args[1:] {
		switch {
		case equalFold(a, "NOSAVE"):
			save = false
		case equalFold(a, "SAVE"), equalFold(a, "NOW"), equalFold(a, "FORCE"):
		default:
			c.err(errSyntax)
			return
		}
	}
	if p := c.h.cfg.Persistence; save && p != nil {
		if err := p.Save(); err != nil {
			c.err(errShutdown)
			return
		}
	}
	c.sess.quit = true
	if f := c.h.cfg.OnShutdown; f != nil {
		// The final flush happens after every connection has finished, so
		// that nothing acknowledged after the save above is lost.
		go f(save)
	}
}

// CHECKPOINT dir: an rlserver extension; flushes, then writes a consistent
// Pebble checkpoint of the store to dir on the server's filesystem.
func cmdCheckpoint(c *Ctx, args [][]byte) {
	p := c.h.cfg.Persistence
	if p == nil {
		c.err(errPersistenceOff)
		return
	}
	name := string(args[1])
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, `/\`) || strings.ContainsRune(name, 0) {
		c.err(errCheckpointName)
		return
	}
	if err := p.Checkpoint(filepath.Join(c.h.cfg.BackupDir, name)); err != nil {
		c.err(errFailed(err))
		return
	}
	c.W.OK()
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// parsed returns a parse's verdict.
func parsed(_ int64, ok bool) bool { return ok }

// parseYesNo parses a yes/no configuration value, as Redis's CONFIG SET:
// 1 for yes, 0 for no.
func parseYesNo(v []byte) (int64, bool) {
	switch {
	case equalFold(v, "YES"):
		return 1, true
	case equalFold(v, "NO"):
		return 0, true
	}
	return 0, false
}
