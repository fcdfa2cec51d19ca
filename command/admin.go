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
	// why, when set, gives Redis's reason a value is refused (and
	// replaces bad): "" for a good value.
	why    func(v []byte) string
	hidden bool // CONFIG GET matches it only by its exact name
}

// intParam is a settable integer parameter.
func intParam(get func(c *Ctx) int64, parse func([]byte) (int64, bool), set func(c *Ctx, n int64)) configParam {
	return configParam{get: func(c *Ctx) string { return strconv.FormatInt(get(c), 10) }, parse: parse,
		set: func(c *Ctx, n int64, _ []byte) { set(c, n) }}
}

// rangedParam is a settable integer parameter bounded to [lo, hi], with
// Redis's errors for a value parse refuses and for one outside.
func rangedParam(get func(c *Ctx) int64, parse func([]byte) (int64, bool), lo, hi int64, set func(c *Ctx, n int64)) configParam {
	p := intParam(get, inRange(parse, lo, hi), set)
	p.why = func(v []byte) string {
		if n, ok := parse(v); !ok {
			return "argument couldn't be parsed into an integer"
		} else if n < lo || n > hi {
			return fmt.Sprintf("argument must be between %d and %d inclusive", lo, hi)
		}
		return ""
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
	"maxmemory": memParam(func(c *Ctx) int64 { return c.h.maxMemory.Load() }, 0, -1,
		func(c *Ctx, n int64) { c.h.SetMaxMemory(n) }),
	"proto-max-bulk-len": memParam(func(c *Ctx) int64 { return c.srv.MaxBulkLen() }, MinProtoMaxBulkLen, 1<<63-1,
		func(c *Ctx, n int64) { c.srv.SetMaxBulkLen(n) }),
	"client-query-buffer-limit": memParam(func(c *Ctx) int64 { return c.srv.QueryBufferLimit() }, MinQueryBufferLimit, 1<<63-1,
		func(c *Ctx, n int64) { c.srv.SetQueryBufferLimit(n) }),
	"log-max-limit": intParam(func(c *Ctx) int64 { return c.h.logMax.Load() }, parsePositive,
		func(c *Ctx, n int64) { c.h.logMax.Store(n) }),
	"maxclients": rangedParam(func(c *Ctx) int64 { return c.srv.MaxClients() }, redisInt, 1, 1<<32-1,
		func(c *Ctx, n int64) { c.srv.SetMaxClients(n) }),
	"timeout": rangedParam(func(c *Ctx) int64 { return int64(c.srv.IdleTimeout() / time.Second) }, redisInt, 0, 1<<31-1,
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
	// How long a script that has not written may run (ms, 0: for ever)
	// before it is killed; lua-time-limit is its old name.
	"busy-reply-threshold": scriptThreshold,
	"lua-time-limit":       scriptThreshold,
}

var scriptThreshold = rangedParam(func(c *Ctx) int64 { return c.h.busyReplyMs.Load() }, redisInt, 0, 1<<63-1,
	func(c *Ctx, n int64) { c.h.SetBusyReplyThreshold(n) })

// The least proto-max-bulk-len and client-query-buffer-limit Redis 7
// accepts; neither has an upper bound below 2^63-1, nor a relation to the
// other (a request over either is refused).
const (
	MinProtoMaxBulkLen  = 1 << 20
	MinQueryBufferLimit = 1 << 20
)

// memParam is a settable byte count with Redis's units, within [lo, hi]
// (hi -1: any count, as maxmemory's unsigned range, held at most 2^63-1),
// refused with Redis's reasons.
func memParam(get func(c *Ctx) int64, lo, hi int64, set func(c *Ctx, n int64)) configParam {
	p := intParam(get, func(v []byte) (int64, bool) {
		n, ok := MemoryValue(v)
		if hi < 0 {
			return int64(min(n, 1<<63-1)), ok
		}
		return int64(n), ok && n >= uint64(lo) && n <= uint64(hi)
	}, set)
	p.why = func(v []byte) string {
		n, ok := MemoryValue(v)
		switch {
		case !ok:
			return "argument must be a memory value"
		case hi >= 0 && (n < uint64(lo) || n > uint64(hi)):
			return fmt.Sprintf("argument must be between %d and %d inclusive", lo, hi)
		}
		return ""
	}
	return p
}

// ParseMemory parses a byte count as Redis's memory configuration values
// (see MemoryValue), held at most 2^63-1.
func ParseMemory(v []byte) (int64, bool) {
	n, ok := MemoryValue(v)
	return int64(min(n, 1<<63-1)), ok
}

// MemoryValue parses a byte count as Redis's memtoull, in redis.conf and
// CONFIG SET: decimal digits (leading zeros allowed, none at all being 0)
// then an optional unit, case-insensitive: b; k, m, g, powers of 1000;
// kb, mb, gb, powers of 1024. No sign, space or fraction. Past 2^64-1 it
// saturates.
func MemoryValue(v []byte) (uint64, bool) {
	i := 0
	for i < len(v) && v[i] >= '0' && v[i] <= '9' {
		i++
	}
	if i >= 128 {
		return 0, false
	}
	var mul uint64
	switch u := strings.ToLower(string(v[i:])); u {
	case "", "b":
		mul = 1
	case "k":
		mul = 1000
	case "kb":
		mul = 1 << 10
	case "m":
		mul = 1000 * 1000
	case "mb":
		mul = 1 << 20
	case "g":
		mul = 1000 * 1000 * 1000
	case "gb":
		mul = 1 << 30
	default:
		return 0, false
	}
	var n uint64
	for _, d := range v[:i] {
		if n > (1<<64-1-9)/10 {
			n = 1<<64 - 1
			break
		}
		n = n*10 + uint64(d-'0')
	}
	if n > (1<<64-1)/mul {
		return 1<<64 - 1, true
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
	for n, p := range configParams {
		if !p.hidden {
			names = append(names, n)
		}
	}
	for n := range c.h.cfg.Settings {
		names = append(names, n)
	}
	sort.Strings(names)
	var pairs [][2]string
	seen := map[string]bool{}
	for _, pat := range args[2:] {
		low := []byte(strings.ToLower(string(pat)))
		if !strings.ContainsAny(string(pat), "[*?") {
			// A plain name, hidden ones too, is answered as it was
			// written, as Redis does.
			if v, ok := c.configValue(string(low)); ok && !seen[string(low)] {
				seen[string(low)] = true
				pairs = append(pairs, [2]string{string(pat), v})
			}
			continue
		}
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
		for j := 2; j < i; j += 2 {
			if strings.EqualFold(string(args[j]), name) {
				c.err(errConfigReason(name, "duplicate parameter"))
				return
			}
		}
	}
	for i := 2; i < len(args); i += 2 {
		name := strings.ToLower(string(args[i]))
		p := configParams[name]
		if p.why != nil {
			if why := p.why(args[i+1]); why != "" {
				c.err(errConfigReason(name, why))
				return
			}
		}
		if !parsed(p.parse(args[i+1])) {
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
	if save && c.h.scripts.Busy() {
		// Only SHUTDOWN NOSAVE runs past a busy script, as in Redis.
		c.err(c.h.scripts.BusyError())
		return
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
