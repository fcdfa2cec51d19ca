package command

import (
	"crypto/rand"
	"encoding/base64"
	"math"
	mrand "math/rand/v2"
	"time"

	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/resp"
	"github.com/rlserver/rlserver/shard"
)

// statePtr is a pointer to a limiter state type.
type statePtr[T any] interface {
	*T
	engine.State
}

// states are a connection's scratch states, one per kind: a command
// decodes its key's record into one, runs the engine on it and stores it
// back (see shard.Shard.Load and Put), so nothing is allocated per command.
type states struct {
	gcra *engine.GCRA
	tb   *engine.TokenBucket
	lb   *engine.LeakyBucket
	win  *engine.Window // FIXED and SLIDING
	log  *engine.Window // LOG: kept apart so that its ring is reused
	conc *engine.Concurrency
}

// update runs take on key's state (a fresh one if the key does not exist)
// under the key's shard lock, then stores the outcome: the key is created,
// kept until its state is fresh again (Decision.ResetAfter), or dropped.
// ok is false when the key holds another kind of limiter (or, with accept,
// a state that accept refuses): then nothing changes. sp is the
// connection's scratch state of the kind.
//
// Each command passes its own small take closure calling its engine's Take
// directly: a generic helper over a Take method constraint was measured at
// 10-18% more per command (BenchmarkExec), through dictionary calls.
func update[T any, P statePtr[T]](c *Ctx, key []byte, now int64, sp *P, accept func(P) bool, take func(P) (engine.Decision, bool)) (d engine.Decision, ok bool) {
	store := c.Store()
	h := store.Hash(key)
	sh := store.ShardOf(h)
	c.Lock(sh)
	d, ok = updateLocked(sh, key, h, now, sp, accept, take)
	c.Unlock(sh)
	return d, ok
}

// updateLocked is update's body, under the shard lock (no defer on the
// hot path).
func updateLocked[T any, P statePtr[T]](sh *shard.Shard, key []byte, h uint64, now int64, sp *P, accept func(P) bool, take func(P) (engine.Decision, bool)) (d engine.Decision, ok bool) {
	st := *sp
	if st == nil {
		st = new(T)
		*sp = st
	}
	kind := st.Kind()
	f := sh.Find(key, h)
	if f.OK && f.Exp <= now {
		if f.Kind == kind {
			// Its state is a fresh key's: reuse the record in place (keys
			// that come back after expiring are the common case with many
			// keys).
			live := st
			if f.Boxed {
				live = sh.Load(f, st).(P)
			}
			live.Reset()
			d, _ = take(live)
			if d.ResetAfter > 0 {
				keep(sp, sh.Revive(f, key, h, live, expireAt(now, d.ResetAfter)))
			} else {
				sh.Expire(f)
			}
			return d, true
		}
		sh.Expire(f)
		f = sh.Find(key, h)
	}
	if !f.OK {
		st.Reset()
		d, _ = take(st)
		if d.ResetAfter > 0 {
			keep(sp, sh.Put(f, key, h, st, expireAt(now, d.ResetAfter), true))
		}
		return d, true
	}
	if f.Kind != kind {
		return d, false
	}
	live := sh.Load(f, st).(P)
	if accept != nil && !accept(live) {
		return d, false
	}
	d, changed := take(live)
	keep(sp, storeOutcome(sh, f, key, h, live, now, d.ResetAfter, changed))
	return d, true
}

// keep replaces the scratch state *sp after the shard kept it as a box.
func keep[T any, P statePtr[T]](sp *P, kept bool) {
	if kept {
		*sp = new(T)
	}
}

// storeOutcome keeps the key found by f until its state st is fresh again,
// now+reset, or drops it when it already is. A call that changed nothing
// (a peek, a denial) only ever extends the expiry: with other parameters
// than the state was stored under it may report an earlier reset, and
// expiring the key then would forget state that is not fresh under its
// stored parameters. It reports whether the shard kept st as a box.
func storeOutcome(sh *shard.Shard, f shard.Found, key []byte, h uint64, st engine.State, now int64, reset time.Duration, changed bool) (kept bool) {
	exp := expireAt(now, reset)
	if !changed {
		exp = max(exp, f.Exp)
	}
	if exp <= now {
		sh.Remove(f)
		return false
	}
	return sh.Put(f, key, h, st, exp, changed)
}

// expireAt returns now+d, saturating instead of wrapping for huge d.
func expireAt(now int64, d time.Duration) int64 {
	if d > 0 && now > math.MaxInt64-int64(d) {
		return math.MaxInt64
	}
	return now + int64(d)
}

// appendDecision appends the contract's five-integer decision reply.
func appendDecision(b []byte, d engine.Decision) []byte {
	b = resp.AppendArray(b, 5)
	return appendDecisionFields(b, d)
}

func appendDecisionFields(b []byte, d engine.Decision) []byte {
	allowed := int64(0)
	if d.Allowed {
		allowed = 1
	}
	retry := ceilMs(d.RetryAfter)
	if d.RetryAfter == engine.Never {
		retry = -1
	}
	b = resp.AppendInt(b, allowed)
	b = resp.AppendInt(b, d.Limit)
	b = resp.AppendInt(b, d.Remaining)
	b = resp.AppendInt(b, retry)
	return resp.AppendInt(b, ceilMs(d.ResetAfter))
}

// appendThrottle appends redis-cell's reply:
// [limited, limit, remaining, retry_after_s, reset_after_s].
func appendThrottle(b []byte, d engine.Decision) []byte {
	limited, retry := int64(1), cellSeconds(d.RetryAfter)
	if d.Allowed {
		limited, retry = 0, -1
	}
	b = resp.AppendArray(b, 5)
	b = resp.AppendInt(b, limited)
	b = resp.AppendInt(b, d.Limit)
	b = resp.AppendInt(b, d.Remaining)
	b = resp.AppendInt(b, retry)
	return resp.AppendInt(b, cellSeconds(d.ResetAfter))
}

// parseGCRA parses "max_burst count period" at args[0:3], the period with
// periodOf; a bad period answers periodErr(period).
func parseGCRA(c *Ctx, args [][]byte, periodOf func([]byte) (time.Duration, bool), periodErr func([]byte) string) (p engine.GCRAParams, ok bool) {
	if p.MaxBurst, ok = parseCost(args[0]); !ok { // 0 is allowed: a limit of 1
		c.err(resp.ErrNotInt)
		return p, false
	}
	if p.Count, ok = parsePositive(args[1]); !ok {
		c.err(resp.ErrNotInt)
		return p, false
	}
	if p.Period, ok = periodOf(args[2]); !ok {
		c.err(periodErr(args[2]))
		return p, false
	}
	return p, true
}

// replyGCRA runs the GCRA request and answers in redis-cell's form.
func replyGCRA(c *Ctx, key []byte, p engine.GCRAParams, n int64) {
	now := c.Now()
	d, ok := update(c, key, now, &c.st.gcra, nil, func(st *engine.GCRA) (engine.Decision, bool) {
		d := st.Take(now, p, n)
		return d, d.Allowed && n > 0
	})
	if !ok {
		c.err(resp.ErrWrongType)
		return
	}
	c.W.Buf = appendThrottle(c.W.Buf, d)
}

// CL.THROTTLE key max_burst count_per_period period [quantity]
//
// As in redis-cell, every bad number, the period included, answers "not an
// integer".
func cmdThrottle(c *Ctx, args [][]byte) {
	p, ok := parseGCRA(c, args[2:5], parseDuration, func([]byte) string { return resp.ErrNotInt })
	if !ok {
		return
	}
	n := int64(1)
	if len(args) == 6 {
		if n, ok = parseCost(args[5]); !ok {
			c.err(resp.ErrNotInt)
			return
		}
	}
	replyGCRA(c, args[1], p, n)
}

// GCRA key max_burst tokens_per_period period [TOKENS count]
func cmdGCRA(c *Ctx, args [][]byte) {
	p, ok := parseGCRA(c, args[2:5], parseSeconds, resp.ErrInvalidDuration)
	if !ok {
		return
	}
	n := int64(1)
	switch {
	case len(args) == 5:
	case len(args) == 7 && equalFold(args[5], "TOKENS"):
		if n, ok = parseCost(args[6]); !ok {
			c.err(resp.ErrNotInt)
			return
		}
	default:
		c.err(resp.ErrSyntax)
		return
	}
	replyGCRA(c, args[1], p, n)
}

// parseBucket parses "capacity rate period" at args[0:3].
func parseBucket(c *Ctx, args [][]byte) (capacity, rate int64, period time.Duration, ok bool) {
	if capacity, ok = parsePositive(args[0]); !ok {
		c.err(resp.ErrNotInt)
		return
	}
	if rate, ok = parsePositive(args[1]); !ok {
		c.err(resp.ErrNotInt)
		return
	}
	if period, ok = parseDuration(args[2]); !ok {
		c.err(resp.ErrInvalidDuration(args[2]))
	}
	return
}

// CL.TOKENBUCKET key capacity rate period [n] [RESERVE max_wait]
func cmdTokenBucket(c *Ctx, args [][]byte) {
	var p engine.TokenBucketParams
	var ok bool
	if p.Capacity, p.Rate, p.Period, ok = parseBucket(c, args[2:5]); !ok {
		return
	}
	n := int64(1)
	rest := args[5:]
	if len(rest) > 0 && !equalFold(rest[0], "RESERVE") {
		if n, ok = parseCost(rest[0]); !ok {
			c.err(resp.ErrNotInt)
			return
		}
		rest = rest[1:]
	}
	switch {
	case len(rest) == 0:
	case len(rest) == 2 && equalFold(rest[0], "RESERVE"):
		if p.MaxWait, ok = parseDuration(rest[1]); !ok {
			c.err(resp.ErrInvalidDuration(rest[1]))
			return
		}
	default:
		c.err(resp.ErrSyntax)
		return
	}
	now := c.Now()
	d, ok := update(c, args[1], now, &c.st.tb, nil, func(st *engine.TokenBucket) (engine.Decision, bool) {
		d := st.Take(now, p, n)
		return d, d.Allowed && n > 0
	})
	if !ok {
		c.err(resp.ErrWrongType)
		return
	}
	c.W.Buf = appendDecision(c.W.Buf, d)
}

// CL.LEAKYBUCKET key capacity rate period [n]
func cmdLeakyBucket(c *Ctx, args [][]byte) {
	var p engine.LeakyBucketParams
	var ok bool
	if p.Capacity, p.Rate, p.Period, ok = parseBucket(c, args[2:5]); !ok {
		return
	}
	n := int64(1)
	if len(args) == 6 {
		if n, ok = parseCost(args[5]); !ok {
			c.err(resp.ErrNotInt)
			return
		}
	}
	now := c.Now()
	d, ok := update(c, args[1], now, &c.st.lb, nil, func(st *engine.LeakyBucket) (engine.Decision, bool) {
		d := st.Take(now, p, n)
		return d, d.Allowed && n > 0
	})
	if !ok {
		c.err(resp.ErrWrongType)
		return
	}
	c.W.Buf = appendDecision(c.W.Buf, d)
}

func parseWindowMode(b []byte) (engine.WindowMode, bool) {
	switch {
	case equalFold(b, "FIXED"):
		return engine.WindowFixed, true
	case equalFold(b, "SLIDING"):
		return engine.WindowSliding, true
	case equalFold(b, "LOG"):
		return engine.WindowLog, true
	}
	return 0, false
}

// parseWindow parses "limit window" at args[0:2] for mode.
func parseWindow(c *Ctx, args [][]byte, mode engine.WindowMode) (p engine.WindowParams, ok bool) {
	p.Mode = mode
	if p.Limit, ok = parsePositive(args[0]); !ok {
		c.err(resp.ErrNotInt)
		return p, false
	}
	if p.Window, ok = parseDuration(args[1]); !ok {
		c.err(resp.ErrInvalidDuration(args[1]))
		return p, false
	}
	if mode == engine.WindowLog && p.Limit > c.h.logMax.Load() {
		c.err(resp.ErrLogLimit)
		return p, false
	}
	return p, true
}

// CL.WINDOW key limit window [n] [FIXED|SLIDING|LOG]
func cmdWindow(c *Ctx, args [][]byte) {
	mode := engine.WindowSliding
	n := int64(1)
	rest := args[4:]
	var ok bool
	if len(rest) > 0 {
		if m, isMode := parseWindowMode(rest[0]); isMode && len(rest) == 1 {
			mode, rest = m, nil
		} else if n, ok = parseCost(rest[0]); !ok {
			c.err(resp.ErrNotInt)
			return
		} else {
			rest = rest[1:]
		}
	}
	if len(rest) == 1 {
		if mode, ok = parseWindowMode(rest[0]); !ok {
			c.err(resp.ErrSyntax)
			return
		}
	} else if len(rest) > 1 {
		c.err(resp.ErrSyntax)
		return
	}
	p, ok := parseWindow(c, args[2:4], mode)
	if !ok {
		return
	}
	now := c.Now()
	sameMode := func(st *engine.Window) bool { return st.Mode() == 0 || st.Mode() == mode }
	scratch := &c.st.win
	if p.Mode == engine.WindowLog {
		scratch = &c.st.log
	}
	d, ok := update(c, args[1], now, scratch, sameMode, func(st *engine.Window) (engine.Decision, bool) {
		d := st.Take(now, p, n)
		return d, d.Allowed && n > 0
	})
	if !ok {
		c.err(resp.ErrWrongType)
		return
	}
	c.W.Buf = appendDecision(c.W.Buf, d)
}

// newLeaseID writes an unguessable lease id to id: 96 random bits as 16
// base64url characters. The bits come from the connection's ChaCha8 stream
// (a cryptographically strong generator) seeded once from crypto/rand, so
// an id costs no system call and no allocation.
func (c *Ctx) newLeaseID(id *[engine.MaxLeaseIDLen]byte) {
	if c.ids == nil {
		var seed [32]byte
		rand.Read(seed[:])
		c.ids = mrand.NewChaCha8(seed)
	}
	var b [12]byte
	c.ids.Read(b[:])
	base64.RawURLEncoding.Encode(id[:], b[:])
}

// CL.ACQUIRE key limit lease [n]
func cmdAcquire(c *Ctx, args [][]byte) {
	limit, ok := parsePositive(args[2])
	if !ok {
		c.err(resp.ErrNotInt)
		return
	}
	lease, ok := parseDuration(args[3])
	if !ok {
		c.err(resp.ErrInvalidDuration(args[3]))
		return
	}
	n := int64(1)
	if len(args) == 5 {
		if n, ok = parseCost(args[4]); !ok {
			c.err(resp.ErrNotInt)
			return
		}
	}
	var id [engine.MaxLeaseIDLen]byte
	now := c.Now()
	d, ok := update(c, args[1], now, &c.st.conc, nil, func(st *engine.Concurrency) (engine.Decision, bool) {
		// A denied request's id is drawn and dropped: cheaper than
		// asking Check first.
		c.newLeaseID(&id)
		d := st.Take(now, engine.ConcurrencyParams{Limit: limit, Lease: lease, ID: string(id[:])}, n)
		return d, d.Allowed && n > 0 // n == 0 peeks: nothing is stored
	})
	if !ok {
		c.err(resp.ErrWrongType)
		return
	}
	c.W.Array(6)
	c.W.Buf = appendDecisionFields(c.W.Buf, d)
	if d.Allowed && n > 0 {
		c.W.Bulk(id[:])
	} else {
		c.W.Null()
	}
}

// leaseOp runs a RELEASE or RENEW on an existing concurrency key.
func leaseOp(c *Ctx, key []byte, op func(st *engine.Concurrency, now int64) bool) {
	now := c.Now()
	store := c.Store()
	h := store.Hash(key)
	sh := store.ShardOf(h)
	c.Lock(sh)
	defer c.Unlock(sh)
	f := sh.Live(key, h, now)
	if !f.OK {
		c.W.Int(0)
		return
	}
	if f.Kind != engine.KindConcurrency {
		c.err(resp.ErrWrongType)
		return
	}
	if c.st.conc == nil {
		c.st.conc = new(engine.Concurrency)
	}
	st := sh.Load(f, c.st.conc).(*engine.Concurrency)
	if op(st, now) {
		keep(&c.st.conc, storeOutcome(sh, f, key, h, st, now, st.ResetAfter(now), true))
		c.W.Int(1)
		return
	}
	c.W.Int(0)
}

// CL.RELEASE key lease_id
func cmdRelease(c *Ctx, args [][]byte) {
	leaseOp(c, args[1], func(st *engine.Concurrency, now int64) bool { return st.Release(now, string(args[2])) })
}

// CL.RENEW key lease_id lease
func cmdRenew(c *Ctx, args [][]byte) {
	lease, ok := parseDuration(args[3])
	if !ok {
		c.err(resp.ErrInvalidDuration(args[3]))
		return
	}
	leaseOp(c, args[1], func(st *engine.Concurrency, now int64) bool { return st.Renew(now, string(args[2]), lease) })
}
