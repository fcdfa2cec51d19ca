package command

import (
	"crypto/rand"
	"encoding/base64"
	mrand "math/rand/v2"
	"time"

	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/resp"
	"github.com/rlserver/rlserver/shard"
)

// The limiter registry: one entry per kind of limiter, saying how the
// command layer drives it. The kind's algorithm, state, codec, TYPE name
// and constructor are its file in engine/; here are its op (the engine
// call the keyspace runs under the key's shard lock, see shard.Op), the
// parsing of its parameters, and its CL.ALL rule forms. Adding a kind is
// one engine file and one entry in limiterKinds: takeOp fits a kind whose
// state has Take and Check; one that needs more (CL.ACQUIRE's lease ids)
// brings an op type of its own. TestLimiterRegistry fails for an engine
// kind without an entry.

// limiterKind is one registry entry.
type limiterKind struct {
	kind engine.Kind
	// newOp makes the op a connection fills in for this kind, for its
	// command and for each CL.ALL rule; it is made once and reused.
	newOp func() ruleOp
	rules []ruleForm // its CL.ALL rule forms
}

// ruleForm is one CL.ALL rule: NAME key params..., every rule asked for
// the command's cost.
type ruleForm struct {
	name   string // upper case
	params int    // positional parameters after the key
	// parse reads the parameters into op, made by its entry's newOp, and
	// returns the error reply, or "".
	parse func(c *Ctx, op ruleOp, p [][]byte) string
	kind  engine.Kind // its entry's kind (set from the entry)
}

// The ops of the kinds whose state has Take and Check.
type (
	gcraOp        = takeOp[engine.GCRAParams, *engine.GCRA]
	tokenBucketOp = takeOp[engine.TokenBucketParams, *engine.TokenBucket]
	leakyBucketOp = takeOp[engine.LeakyBucketParams, *engine.LeakyBucket]
)

var limiterKinds = []limiterKind{
	{engine.KindTokenBucket, func() ruleOp { return new(tokenBucketOp) }, []ruleForm{{name: "TOKENBUCKET", params: 3, parse: func(c *Ctx, op ruleOp, p [][]byte) string {
		o := op.(*tokenBucketOp)
		err := parseBucket(p, &o.p.Capacity, &o.p.Rate, &o.p.Period)
		o.p.MaxWait = 0
		return err
	}}}},
	{engine.KindThrottle, func() ruleOp { return new(gcraOp) }, []ruleForm{{name: "THROTTLE", params: 3, parse: func(c *Ctx, op ruleOp, p [][]byte) string {
		return parseGCRA(p, &op.(*gcraOp).p, parseDuration, func([]byte) string { return errNotInt })
	}}}},
	{engine.KindLeakyBucket, func() ruleOp { return new(leakyBucketOp) }, []ruleForm{{name: "LEAKYBUCKET", params: 3, parse: func(c *Ctx, op ruleOp, p [][]byte) string {
		o := op.(*leakyBucketOp)
		return parseBucket(p, &o.p.Capacity, &o.p.Rate, &o.p.Period)
	}}}},
	{engine.KindWindow, func() ruleOp { return new(windowOp) }, []ruleForm{
		{name: "FIXED", params: 2, parse: windowRule(engine.WindowFixed)},
		{name: "SLIDING", params: 2, parse: windowRule(engine.WindowSliding)},
		{name: "LOG", params: 2, parse: windowRule(engine.WindowLog)},
	}},
	{engine.KindConcurrency, func() ruleOp { return new(acquireOp) }, []ruleForm{{name: "ACQUIRE", params: 2, parse: func(c *Ctx, op ruleOp, p [][]byte) string {
		o := op.(*acquireOp)
		if err := parseAcquire(p, o); err != "" {
			return err
		}
		c.newLeaseID(&o.id)
		return ""
	}}}},
}

func windowRule(mode engine.WindowMode) func(c *Ctx, op ruleOp, p [][]byte) string {
	return func(c *Ctx, op ruleOp, p [][]byte) string {
		return parseWindow(c, p, mode, &op.(*windowOp).p)
	}
}

// limiterOf is the registry by kind.
var limiterOf = func() (by [engine.MaxKinds]*limiterKind) {
	for i := range limiterKinds {
		lk := &limiterKinds[i]
		if by[lk.kind] != nil {
			panic("command: two registry entries for one kind")
		}
		by[lk.kind] = lk
	}
	return by
}()

// ruleFormOf finds the CL.ALL rule form called name. It runs for every
// rule of a CL.ALL that is parsed, not repeated (in the key spec, then in
// the parse): a form is compared only when its length and first letter
// match.
func ruleFormOf(name []byte) *ruleForm {
	if len(name) == 0 {
		return nil
	}
	const upper = ^byte('a' - 'A') // clears a letter's case bit
	first := name[0] & upper
	for _, f := range ruleForms {
		if len(f.name) == len(name) && f.name[0]&upper == first && equalFold(name, f.name) {
			return f
		}
	}
	return nil
}

// ruleForms are every kind's CL.ALL rule forms.
var ruleForms = func() []*ruleForm {
	var all []*ruleForm
	for i := range limiterKinds {
		for j := range limiterKinds[i].rules {
			f := &limiterKinds[i].rules[j]
			f.kind = limiterKinds[i].kind
			all = append(all, f)
		}
	}
	return all
}()

// ruleOp is an op CL.ALL can hold: its cost is set after parsing (COST
// comes last), and it writes its rule's decision.
type ruleOp interface {
	shard.Op
	setCost(n int64)
	// appendRule appends the rule's decision; taken says the rule's units
	// were taken (the whole CL.ALL admitted, n > 0).
	appendRule(b []byte, proto int, d engine.Decision, taken bool) []byte
}

// ops are a connection's reusable ops, one per kind, each made by its
// registry entry on first use: a command fills one in and hands it to the
// keyspace, so that nothing is allocated per command.
type ops struct {
	byKind [engine.MaxKinds]ruleOp
	lease  leaseOp // CL.RELEASE's and CL.RENEW's
}

// of returns the op of kind k (a kind with a registry entry).
func (o *ops) of(k engine.Kind) ruleOp {
	if op := o.byKind[k]; op != nil {
		return op
	}
	op := limiterOf[k].newOp()
	o.byKind[k] = op
	return op
}

// limiter is what a kind's state offers its op: a take and a check of n
// units under parameters P (every kind but CL.ACQUIRE's, which draws a
// lease id, uses takeOp).
type limiter[P any] interface {
	engine.State
	Take(now int64, p P, n int64) engine.Decision
	Check(now int64, p P, n int64) engine.Decision
}

// takeOp takes or checks n units of a state S under parameters p, as the
// shard.Op contract says: a take changes the state when it admits n > 0.
type takeOp[P any, S limiter[P]] struct {
	p P
	n int64
}

// Kind returns S's kind (a kind's Kind method reads no field, so a nil S
// answers).
func (o *takeOp[P, S]) Kind() engine.Kind {
	var s S
	return s.Kind()
}
func (o *takeOp[P, S]) setCost(n int64) { o.n = n }
func (o *takeOp[P, S]) Run(st engine.State, now int64, commit bool) (engine.Decision, bool, bool) {
	s := st.(S)
	if !commit {
		return s.Check(now, o.p, o.n), false, true
	}
	d := s.Take(now, o.p, o.n)
	return d, d.Allowed && o.n > 0, true
}
func (o *takeOp[P, S]) appendRule(b []byte, _ int, d engine.Decision, _ bool) []byte {
	return appendDecision(b, d)
}

// windowOp refuses a window of another mode: a window key keeps the mode
// it was created with.
type windowOp struct {
	p engine.WindowParams
	n int64
}

func (o *windowOp) Kind() engine.Kind { return engine.KindWindow }
func (o *windowOp) setCost(n int64)   { o.n = n }
func (o *windowOp) Run(st engine.State, now int64, commit bool) (engine.Decision, bool, bool) {
	s := st.(*engine.Window)
	if m := s.Mode(); m != 0 && m != o.p.Mode {
		return engine.Decision{}, false, false
	}
	if !commit {
		return s.Check(now, o.p, o.n), false, true
	}
	d := s.Take(now, o.p, o.n)
	return d, d.Allowed && o.n > 0, true
}
func (o *windowOp) appendRule(b []byte, _ int, d engine.Decision, _ bool) []byte {
	return appendDecision(b, d)
}

// acquireOp takes a lease under the id drawn for it before it runs (a
// denied request's id is drawn and dropped: cheaper than asking first).
type acquireOp struct {
	limit int64
	lease time.Duration
	n     int64
	id    [engine.MaxLeaseIDLen]byte
}

func (o *acquireOp) Kind() engine.Kind { return engine.KindConcurrency }
func (o *acquireOp) setCost(n int64)   { o.n = n }
func (o *acquireOp) Run(st engine.State, now int64, commit bool) (engine.Decision, bool, bool) {
	s := st.(*engine.Concurrency)
	p := engine.ConcurrencyParams{Limit: o.limit, Lease: o.lease, ID: string(o.id[:])}
	if !commit {
		return s.Check(now, p, o.n), false, true
	}
	d := s.Take(now, p, o.n)
	return d, d.Allowed && o.n > 0, true // n == 0 peeks: nothing is stored
}

// appendRule appends CL.ACQUIRE's six-element reply: the decision, then
// the lease id when a lease was taken, else nil.
func (o *acquireOp) appendRule(b []byte, proto int, d engine.Decision, taken bool) []byte {
	b = resp.AppendArray(b, 6)
	b = appendDecisionFields(b, d)
	if taken && d.Allowed && o.n > 0 {
		return resp.AppendBulk(b, o.id[:])
	}
	return resp.AppendNull(b, proto)
}

// leaseOp releases or renews a lease of a live concurrency key: its
// decision is Allowed when the lease was found, with the key's new reset.
type leaseOp struct {
	id    []byte
	renew bool // renew for lease; else release
	lease time.Duration
}

func (o *leaseOp) Kind() engine.Kind { return engine.KindConcurrency }
func (o *leaseOp) Run(st engine.State, now int64, commit bool) (engine.Decision, bool, bool) {
	s := st.(*engine.Concurrency)
	var ok bool
	if o.renew {
		ok = s.Renew(now, string(o.id), o.lease)
	} else {
		ok = s.Release(now, string(o.id))
	}
	if !ok {
		return engine.Decision{}, false, true
	}
	return engine.Decision{Allowed: true, ResetAfter: s.ResetAfter(now)}, true, true
}

// reply answers a single-key command's update: the decision in the form
// fmt appends, or WRONGTYPE.
func (c *Ctx) reply(d engine.Decision, st shard.Status, form func([]byte, engine.Decision) []byte) {
	if st != shard.Done {
		c.notDone(st)
		return
	}
	c.decided(d.Allowed)
	c.W.Buf = form(c.W.Buf, d)
}

// notDone answers an update that did not run: WRONGTYPE; or, for a key
// whose slot is being handed to another node, nothing yet: the command
// is held until the handover ends (holdMoving); inside EXEC, TRYAGAIN.
func (c *Ctx) notDone(st shard.Status) {
	if st == shard.Moving {
		if c.inExec || c.h.cfg.Cluster == nil {
			c.err(errTryAgain)
		} else {
			c.moving = true
		}
		return
	}
	c.err(errWrongType)
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

// parseGCRA parses "max_burst count period" at p[0:3], the period with
// periodOf; a bad period answers periodErr(period).
func parseGCRA(p [][]byte, q *engine.GCRAParams, periodOf func([]byte) (time.Duration, bool), periodErr func([]byte) string) string {
	var ok bool
	if q.MaxBurst, ok = parseCost(p[0]); !ok { // 0 is allowed: a limit of 1
		return errNotInt
	}
	if q.Count, ok = parsePositive(p[1]); !ok {
		return errNotInt
	}
	if q.Period, ok = periodOf(p[2]); !ok {
		return periodErr(p[2])
	}
	// More than one token per nanosecond: the emission interval would be
	// 0 and the limit none (redis-cell refuses it with this error too).
	if int64(q.Period)/q.Count == 0 {
		return errZeroRate
	}
	return ""
}

// parseBucket parses "capacity rate period" at p[0:3].
func parseBucket(p [][]byte, capacity, rate *int64, period *time.Duration) string {
	var ok bool
	if *capacity, ok = parsePositive(p[0]); !ok {
		return errNotInt
	}
	if *rate, ok = parsePositive(p[1]); !ok {
		return errNotInt
	}
	if *period, ok = parseDuration(p[2]); !ok {
		return errInvalidDuration(p[2])
	}
	return ""
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

// parseWindow parses "limit window" at p[0:2] for mode.
func parseWindow(c *Ctx, p [][]byte, mode engine.WindowMode, q *engine.WindowParams) string {
	var ok bool
	q.Mode = mode
	if q.Limit, ok = parsePositive(p[0]); !ok {
		return errNotInt
	}
	if q.Window, ok = parseDuration(p[1]); !ok {
		return errInvalidDuration(p[1])
	}
	if mode == engine.WindowLog && q.Limit > c.h.logMax.Load() {
		return errLogLimit
	}
	return ""
}

// parseAcquire parses "limit lease" at p[0:2].
func parseAcquire(p [][]byte, o *acquireOp) string {
	var ok bool
	if o.limit, ok = parsePositive(p[0]); !ok {
		return errNotInt
	}
	if o.lease, ok = parseDuration(p[1]); !ok {
		return errInvalidDuration(p[1])
	}
	return ""
}

// throttle runs a GCRA request and answers in redis-cell's form.
func (c *Ctx) throttle(key []byte, n int64) {
	o := c.ops.of(engine.KindThrottle).(*gcraOp)
	o.n = n
	d, st := c.keys().Update(key, c.Now(), o)
	c.reply(d, st, appendThrottle)
}

// CL.THROTTLE key max_burst count_per_period period [quantity]
//
// As in redis-cell, every bad number, the period included, answers "not an
// integer".
func cmdThrottle(c *Ctx, args [][]byte) {
	if err := parseGCRA(args[2:5], &c.ops.of(engine.KindThrottle).(*gcraOp).p, parseDuration, func([]byte) string { return errNotInt }); err != "" {
		c.err(err)
		return
	}
	n := int64(1)
	if len(args) == 6 {
		var ok bool
		if n, ok = parseCost(args[5]); !ok {
			c.err(errNotInt)
			return
		}
	}
	c.throttle(args[1], n)
}

// GCRA key max_burst tokens_per_period period [TOKENS count]
func cmdGCRA(c *Ctx, args [][]byte) {
	if err := parseGCRA(args[2:5], &c.ops.of(engine.KindThrottle).(*gcraOp).p, parseSeconds, errInvalidDuration); err != "" {
		c.err(err)
		return
	}
	n := int64(1)
	switch {
	case len(args) == 5:
	case len(args) == 7 && equalFold(args[5], "TOKENS"):
		var ok bool
		if n, ok = parseCost(args[6]); !ok {
			c.err(errNotInt)
			return
		}
	default:
		c.err(errSyntax)
		return
	}
	c.throttle(args[1], n)
}

// CL.TOKENBUCKET key capacity rate period [n] [RESERVE max_wait]
func cmdTokenBucket(c *Ctx, args [][]byte) {
	o := c.ops.of(engine.KindTokenBucket).(*tokenBucketOp)
	if err := parseBucket(args[2:5], &o.p.Capacity, &o.p.Rate, &o.p.Period); err != "" {
		c.err(err)
		return
	}
	o.n, o.p.MaxWait = 1, 0
	rest := args[5:]
	var ok bool
	if len(rest) > 0 && !equalFold(rest[0], "RESERVE") {
		if o.n, ok = parseCost(rest[0]); !ok {
			c.err(errNotInt)
			return
		}
		rest = rest[1:]
	}
	switch {
	case len(rest) == 0:
	case len(rest) == 2 && equalFold(rest[0], "RESERVE"):
		if o.p.MaxWait, ok = parseDuration(rest[1]); !ok {
			c.err(errInvalidDuration(rest[1]))
			return
		}
	default:
		c.err(errSyntax)
		return
	}
	d, st := c.keys().Update(args[1], c.Now(), o)
	c.reply(d, st, appendDecision)
}

// CL.LEAKYBUCKET key capacity rate period [n]
func cmdLeakyBucket(c *Ctx, args [][]byte) {
	o := c.ops.of(engine.KindLeakyBucket).(*leakyBucketOp)
	if err := parseBucket(args[2:5], &o.p.Capacity, &o.p.Rate, &o.p.Period); err != "" {
		c.err(err)
		return
	}
	o.n = 1
	if len(args) == 6 {
		var ok bool
		if o.n, ok = parseCost(args[5]); !ok {
			c.err(errNotInt)
			return
		}
	}
	d, st := c.keys().Update(args[1], c.Now(), o)
	c.reply(d, st, appendDecision)
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
			c.err(errNotInt)
			return
		} else {
			rest = rest[1:]
		}
	}
	if len(rest) == 1 {
		if mode, ok = parseWindowMode(rest[0]); !ok {
			c.err(errSyntax)
			return
		}
	} else if len(rest) > 1 {
		c.err(errSyntax)
		return
	}
	o := c.ops.of(engine.KindWindow).(*windowOp)
	if err := parseWindow(c, args[2:4], mode, &o.p); err != "" {
		c.err(err)
		return
	}
	o.n = n
	d, st := c.keys().Update(args[1], c.Now(), o)
	c.reply(d, st, appendDecision)
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
	o := c.ops.of(engine.KindConcurrency).(*acquireOp)
	if err := parseAcquire(args[2:4], o); err != "" {
		c.err(err)
		return
	}
	o.n = 1
	if len(args) == 5 {
		var ok bool
		if o.n, ok = parseCost(args[4]); !ok {
			c.err(errNotInt)
			return
		}
	}
	c.newLeaseID(&o.id)
	d, st := c.keys().Update(args[1], c.Now(), o)
	if st != shard.Done {
		c.notDone(st)
		return
	}
	c.decided(d.Allowed)
	c.W.Buf = o.appendRule(c.W.Buf, c.W.Proto, d, true)
}

// lease runs a RELEASE or RENEW on a live concurrency key: 1 if the lease
// was found, 0 if it or the key was not.
func (c *Ctx) lease(key, id []byte, renew bool, lease time.Duration) {
	o := &c.ops.lease
	o.id, o.renew, o.lease = id, renew, lease
	d, st := c.keys().UpdateLive(key, c.Now(), o)
	o.id = nil
	switch {
	case st == shard.WrongType || st == shard.Moving:
		c.notDone(st)
	case st == shard.Done && d.Allowed:
		c.W.Int(1)
	default:
		c.W.Int(0)
	}
}

// CL.RELEASE key lease_id
func cmdRelease(c *Ctx, args [][]byte) { c.lease(args[1], args[2], false, 0) }

// CL.RENEW key lease_id lease
func cmdRenew(c *Ctx, args [][]byte) {
	lease, ok := parseDuration(args[3])
	if !ok {
		c.err(errInvalidDuration(args[3]))
		return
	}
	c.lease(args[1], args[2], true, lease)
}
