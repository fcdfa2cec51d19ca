package command

import (
	"math"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Redis 7's parameters that tune what rlserver does its own way
// (encodings, RDB and AOF persistence, replicas):
// CONFIG SET checks a value as Redis does and keeps it, CONFIG GET reads
// it back in Redis's form, and nothing else changes. Clients and Redis's
// own test suite set them before they test, so refusing them would stop
// them for nothing.

// keptParam is one such parameter: its default, read back until it is
// set, and norm, which returns the value Redis would read back, or why
// Redis refuses it.
type keptParam struct {
	def    string
	norm   func(v []byte) (string, string)
	hidden bool // matched by CONFIG GET only by its exact name, as Redis's hidden configs
}

// keptValues holds the values CONFIG SET gave the kept parameters.
type keptValues struct {
	mu sync.Mutex
	m  map[string]string
}

func (k *keptValues) get(name string) (string, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	v, ok := k.m[name]
	return v, ok
}

func (k *keptValues) set(name, v string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil {
		k.m = map[string]string{}
	}
	k.m[name] = v
}

func keptBool(def bool) keptParam {
	return keptParam{def: yesNo(def), norm: func(v []byte) (string, string) {
		n, ok := parseYesNo(v)
		if !ok {
			return "", "argument must be 'yes' or 'no'"
		}
		return yesNo(n == 1), ""
	}}
}

// keptInt is an integer parameter within [lo, hi], parsed as Redis's
// string2ll (no sign but '-', no leading zero, no space).
func keptInt(def, lo, hi int64) keptParam {
	return keptParam{def: strconv.FormatInt(def, 10), norm: func(v []byte) (string, string) {
		n, ok := redisInt(v)
		if !ok {
			return "", "argument couldn't be parsed into an integer"
		}
		if n < lo || n > hi {
			return "", "argument must be between " + strconv.FormatInt(lo, 10) + " and " + strconv.FormatInt(hi, 10) + " inclusive"
		}
		return strconv.FormatInt(n, 10), ""
	}}
}

// keptMemory is a byte count within [0, hi] with Redis's units, read
// back in bytes.
func keptMemory(def, hi int64) keptParam {
	return keptParam{def: strconv.FormatInt(def, 10), norm: func(v []byte) (string, string) {
		n, ok := MemoryValue(v)
		if !ok {
			return "", "argument must be a memory value"
		}
		if n > uint64(hi) {
			return "", "argument must be between 0 and " + strconv.FormatInt(hi, 10) + " inclusive"
		}
		return strconv.FormatUint(n, 10), ""
	}}
}

// keptEnum is one of names, case-insensitive, read back in lower case.
func keptEnum(def string, names ...string) keptParam {
	return keptParam{def: def, norm: func(v []byte) (string, string) {
		for _, n := range names {
			if strings.EqualFold(string(v), n) {
				return n, ""
			}
		}
		return "", "argument(s) must be one of the following: " + strings.Join(names, ", ")
	}}
}

// keptHz is hz: any int, read back clamped to [1, 500] as Redis applies it.
var keptHz = keptParam{def: "10", norm: func(v []byte) (string, string) {
	s, why := keptInt(10, 0, math.MaxInt32).norm(v)
	if why != "" {
		return "", why
	}
	n, _ := strconv.ParseInt(s, 10, 64)
	return strconv.FormatInt(min(max(n, 1), 500), 10), ""
}}

// keptSave is save: "" or pairs of seconds (at least 1) and changes (at
// least 0), each parsed as C's strtoll, read back as Redis prints them.
var keptSave = keptParam{def: "", norm: func(v []byte) (string, string) {
	if len(v) == 0 {
		return "", ""
	}
	parts := strings.Split(string(v), " ")
	if len(parts)%2 != 0 {
		return "", "Invalid save parameters"
	}
	out := make([]string, len(parts))
	for j, p := range parts {
		n, ok := cStrtoll(p)
		if !ok || j%2 == 0 && n < 1 || j%2 == 1 && n < 0 {
			return "", "Invalid save parameters"
		}
		out[j] = strconv.FormatInt(n, 10)
	}
	return strings.Join(out, " "), ""
}}

const (
	maxInt32 = math.MaxInt32
	minInt32 = math.MinInt32
	maxInt64 = math.MaxInt64
)

// keptParams are Redis 7.0's definitions (names, aliases, ranges,
// defaults) of the parameters kept.
var keptParams = map[string]keptParam{
	// Encodings.
	"hash-max-listpack-entries": keptInt(512, 0, maxInt64),
	"hash-max-ziplist-entries":  keptInt(512, 0, maxInt64),
	"hash-max-listpack-value":   keptMemory(64, maxInt64),
	"hash-max-ziplist-value":    keptMemory(64, maxInt64),
	"zset-max-listpack-entries": keptInt(128, 0, maxInt64),
	"zset-max-ziplist-entries":  keptInt(128, 0, maxInt64),
	"zset-max-listpack-value":   keptMemory(64, maxInt64),
	"zset-max-ziplist-value":    keptMemory(64, maxInt64),
	"list-max-listpack-size":    keptInt(-2, minInt32, maxInt32),
	"list-max-ziplist-size":     keptInt(-2, minInt32, maxInt32),
	"list-compress-depth":       keptInt(0, 0, maxInt32),
	"set-max-intset-entries":    keptInt(512, 0, maxInt64),
	"stream-node-max-entries":   keptInt(100, 0, maxInt64),
	"stream-node-max-bytes":     keptMemory(4096, maxInt64),
	"hll-sparse-max-bytes":      keptMemory(3000, maxInt64),
	"activerehashing":           keptBool(true),
	"sanitize-dump-payload":     keptEnum("no", "no", "yes", "clients"),

	// RDB and AOF persistence (rlserver persists through its own store).
	"save":                          keptSave,
	"appendonly":                    keptBool(false),
	"aof-use-rdb-preamble":          keptBool(true),
	"aof-load-truncated":            keptBool(true),
	"aof-timestamp-enabled":         keptBool(false),
	"aof-rewrite-incremental-fsync": keptBool(true),
	"no-appendfsync-on-rewrite":     keptBool(false),
	"auto-aof-rewrite-percentage":   keptInt(100, 0, maxInt32),
	"auto-aof-rewrite-min-size":     keptMemory(64<<20, maxInt64),
	"rdbcompression":                keptBool(true),
	"rdb-save-incremental-fsync":    keptBool(true),
	"rdb-del-sync-files":            keptBool(false),
	"stop-writes-on-bgsave-error":   keptBool(true),
	"rdb-key-save-delay":            {def: "0", norm: keptInt(0, minInt32, maxInt32).norm, hidden: true},
	"key-load-delay":                {def: "0", norm: keptInt(0, minInt32, maxInt32).norm, hidden: true},

	// Freeing, expiry and eviction.
	"lazyfree-lazy-eviction":   keptBool(false),
	"lazyfree-lazy-expire":     keptBool(false),
	"lazyfree-lazy-server-del": keptBool(false),
	"lazyfree-lazy-user-del":   keptBool(false),
	"lazyfree-lazy-user-flush": keptBool(false),
	"active-expire-effort":     keptInt(1, 1, 10),
	"hz":                       keptHz,
	"dynamic-hz":               keptBool(true),

	// Replicas (rlserver's replication is its own).
	"min-replicas-to-write":    keptInt(0, 0, maxInt32),
	"min-slaves-to-write":      keptInt(0, 0, maxInt32),
	"min-replicas-max-lag":     keptInt(10, 0, maxInt32),
	"min-slaves-max-lag":       keptInt(10, 0, maxInt32),
	"replica-serve-stale-data": keptBool(true),
	"slave-serve-stale-data":   keptBool(true),
	"replica-read-only":        keptBool(true),
	"slave-read-only":          keptBool(true),
	"replica-lazy-flush":       keptBool(false),
	"slave-lazy-flush":         keptBool(false),
	"repl-ping-replica-period": keptInt(10, 1, maxInt32),
	"repl-ping-slave-period":   keptInt(10, 1, maxInt32),
	"repl-timeout":             keptInt(60, 1, maxInt32),
	"repl-diskless-sync":       keptBool(true),
	"repl-diskless-sync-delay": keptInt(5, 0, maxInt32),
}

// keptAliases pairs each of Redis's old names with the current one: both
// read and set one value, as in Redis.
var keptAliases = map[string]string{
	"hash-max-ziplist-entries": "hash-max-listpack-entries",
	"hash-max-ziplist-value":   "hash-max-listpack-value",
	"zset-max-ziplist-entries": "zset-max-listpack-entries",
	"zset-max-ziplist-value":   "zset-max-listpack-value",
	"list-max-ziplist-size":    "list-max-listpack-size",
	"min-slaves-to-write":      "min-replicas-to-write",
	"min-slaves-max-lag":       "min-replicas-max-lag",
	"slave-serve-stale-data":   "replica-serve-stale-data",
	"slave-read-only":          "replica-read-only",
	"slave-lazy-flush":         "replica-lazy-flush",
	"repl-ping-slave-period":   "repl-ping-replica-period",
}

func init() {
	for name, k := range keptParams {
		key := name
		if a, ok := keptAliases[name]; ok {
			key = a
		}
		configParams[name] = configParam{
			get: func(c *Ctx) string {
				if v, ok := c.h.kept.get(key); ok {
					return v
				}
				return k.def
			},
			parse: func(v []byte) (int64, bool) {
				_, why := k.norm(v)
				return 0, why == ""
			},
			set: func(c *Ctx, _ int64, v []byte) {
				s, _ := k.norm(v)
				c.h.kept.set(key, s)
			},
			why:    func(v []byte) string { _, why := k.norm(v); return why },
			hidden: k.hidden,
		}
	}
}

// redisInt parses v as Redis's string2ll: an optional '-', then digits
// with no leading zero (but "0" itself), within int64.
func redisInt(v []byte) (int64, bool) {
	if len(v) == 0 || len(v) >= 21 {
		return 0, false
	}
	if len(v) == 1 && v[0] == '0' {
		return 0, true
	}
	s := v
	if s[0] == '-' {
		s = s[1:]
	}
	if len(s) == 0 || s[0] < '1' || s[0] > '9' {
		return 0, false
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil {
		return 0, false
	}
	return n, true
}

// cStrtoll parses s as C's strtoll whose whole input must be used:
// leading white space, a sign, decimal digits, saturating on overflow;
// "" is 0, as there strtoll stops at once on the end of the string.
func cStrtoll(s string) (int64, bool) {
	if s == "" {
		return 0, true
	}
	t := strings.TrimLeft(s, " \t\n\v\f\r")
	neg := false
	if t != "" && (t[0] == '+' || t[0] == '-') {
		neg = t[0] == '-'
		t = t[1:]
	}
	if t == "" {
		return 0, false
	}
	var n uint64
	for i := 0; i < len(t); i++ {
		d := t[i]
		if d < '0' || d > '9' {
			return 0, false
		}
		if n > math.MaxInt64/10 {
			n = math.MaxInt64 + 1 // saturated
		} else {
			n = n*10 + uint64(d-'0')
		}
	}
	switch {
	case neg && n > math.MaxInt64:
		return math.MinInt64, true
	case neg:
		return -int64(n), true
	case n > math.MaxInt64:
		return math.MaxInt64, true
	}
	return int64(n), true
}

// SetBusyReplyThreshold sets busy-reply-threshold (lua-time-limit), in ms,
// from its flag: how long a script runs before other clients get -BUSY.
func (h *Handler) SetBusyReplyThreshold(ms int64) {
	h.busyReplyMs.Store(ms) // read back as set
	h.scripts.SetThreshold(time.Duration(min(ms, 1<<40)) * time.Millisecond)
}

// SetRequirePass gives the default user password p, as CONFIG SET
// requirepass does.
func (h *Handler) SetRequirePass(p string) {
	h.requirePass.Store(&p)
	h.acl.setPassword(p)
}
