package command

import (
	"slices"
	"time"

	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/resp"
	"github.com/rlserver/rlserver/shard"
)

// allRule is one parsed rule of CL.ALL.
type allRule struct {
	kind    engine.Kind
	mode    engine.WindowMode
	key     []byte
	h       uint64 // the key's hash
	shard   int
	a, b    int64         // capacity/limit/max_burst, rate/count
	dur     time.Duration // period or window
	state   engine.State  // the key's state: live, revived or new (see find)
	revived bool          // the key had expired; state was reset
	added   bool          // the key is new, not yet in its shard
	scratch *engine.State // where state came from when not a box (see keep)
	f       shard.Found   // what find found, for store (see refind)
	// boxed: state is the shard's own object, not a decoded copy, so it
	// may only be taken once every rule has admitted.
	boxed bool
	// refind: f may be stale at store time, because another rule's find
	// or store worked in the same shard (a lookup may move slots while
	// the index grows; a delete shifts them), or find removed a record.
	refind bool
	d      engine.Decision
}

// allRuleArity maps a CL.ALL rule name to its positional argument count (key
// included).
func allRuleArity(name []byte) (engine.Kind, engine.WindowMode, int, bool) {
	switch {
	case equalFold(name, "TOKENBUCKET"):
		return engine.KindTokenBucket, 0, 4, true
	case equalFold(name, "THROTTLE"):
		return engine.KindThrottle, 0, 4, true
	case equalFold(name, "LEAKYBUCKET"):
		return engine.KindLeakyBucket, 0, 4, true
	case equalFold(name, "FIXED"):
		return engine.KindWindow, engine.WindowFixed, 3, true
	case equalFold(name, "SLIDING"):
		return engine.KindWindow, engine.WindowSliding, 3, true
	case equalFold(name, "LOG"):
		return engine.KindWindow, engine.WindowLog, 3, true
	}
	return 0, 0, 0, false
}

// allKeys appends the keys of CL.ALL's rules to keys (KeySpec.Find): the
// rules parseAll would read, as far as their names and counts go.
func allKeys(args, keys [][]byte) [][]byte {
	if len(args) < 2 {
		return keys
	}
	count, ok := parsePositive(args[1])
	rest := args[2:]
	for ; ok && count > 0 && len(rest) > 0; count-- {
		_, _, arity, known := allRuleArity(rest[0])
		if !known || len(rest) < 1+arity {
			break
		}
		keys = append(keys, rest[1])
		rest = rest[1+arity:]
	}
	return keys
}

// parseAll parses CL.ALL's arguments; on error it has replied.
func parseAll(c *Ctx, args [][]byte) (rules []allRule, n int64, ok bool) {
	count, ok := parsePositive(args[1])
	if !ok {
		c.err(resp.ErrNotInt)
		return nil, 0, false
	}
	n = 1
	rest := args[2:]
	if count > int64(len(rest)) {
		c.err(resp.ErrSyntax)
		return nil, 0, false
	}
	rules = c.allRules[:0] // reused across calls: CL.ALL allocates nothing in steady state
	for i := int64(0); i < count; i++ {
		if len(rest) == 0 {
			c.err(resp.ErrSyntax)
			return nil, 0, false
		}
		kind, mode, arity, known := allRuleArity(rest[0])
		if !known || len(rest) < 1+arity {
			c.err(resp.ErrSyntax)
			return nil, 0, false
		}
		r := allRule{kind: kind, mode: mode, key: rest[1]}
		p := rest[2 : 1+arity]
		switch kind {
		case engine.KindWindow:
			wp, good := parseWindow(c, p, mode)
			if !good {
				return nil, 0, false
			}
			r.a, r.dur = wp.Limit, wp.Window
		case engine.KindThrottle:
			if r.a, ok = parseCost(p[0]); ok { // max_burst may be 0
				if r.b, ok = parsePositive(p[1]); ok {
					r.dur, ok = parseDuration(p[2])
				}
			}
			if !ok {
				c.err(resp.ErrNotInt)
				return nil, 0, false
			}
		default:
			if r.a, r.b, r.dur, ok = parseBucket(c, p); !ok {
				return nil, 0, false
			}
		}
		for _, prev := range rules {
			if string(prev.key) == string(r.key) {
				c.err(resp.ErrAllDistinctKeys)
				return nil, 0, false
			}
		}
		rules = append(rules, r)
		rest = rest[1+arity:]
	}
	switch {
	case len(rest) == 0:
	case len(rest) == 2 && equalFold(rest[0], "COST"):
		if n, ok = parseCost(rest[1]); !ok {
			c.err(resp.ErrNotInt)
			return nil, 0, false
		}
	default:
		c.err(resp.ErrSyntax)
		return nil, 0, false
	}
	return rules, n, true
}

// run asks the rule's limiter for n units: a check (mutating nothing) or a
// take. st must be of the rule's kind.
func (r *allRule) run(st engine.State, now, n int64, take bool) engine.Decision {
	switch s := st.(type) {
	case *engine.GCRA:
		p := engine.GCRAParams{MaxBurst: r.a, Count: r.b, Period: r.dur}
		if take {
			return s.Take(now, p, n)
		}
		return s.Check(now, p, n)
	case *engine.TokenBucket:
		p := engine.TokenBucketParams{Capacity: r.a, Rate: r.b, Period: r.dur}
		if take {
			return s.Take(now, p, n)
		}
		return s.Check(now, p, n)
	case *engine.LeakyBucket:
		p := engine.LeakyBucketParams{Capacity: r.a, Rate: r.b, Period: r.dur}
		if take {
			return s.Take(now, p, n)
		}
		return s.Check(now, p, n)
	case *engine.Window:
		p := engine.WindowParams{Limit: r.a, Window: r.dur, Mode: r.mode}
		if take {
			return s.Take(now, p, n)
		}
		return s.Check(now, p, n)
	}
	panic("command: CL.ALL rule of unknown kind")
}

// sizeRuleScratch makes room for n rules' scratch states, before ruleScratch
// hands out pointers into it: growing it later would leave the pointers of
// earlier rules in the old array, where store's "the shard kept this state"
// (a nil) would be lost, and the next call would decode another key into a
// state the shard owns.
func (c *Ctx) sizeRuleScratch(n int) {
	if len(c.allStates) < n*8 {
		c.allStates = append(c.allStates, make([]engine.State, n*8-len(c.allStates))...)
	}
}

// ruleScratch returns connection scratch for rule i's state (its kind's
// slot, allocated on first use); sizeRuleScratch made room for it.
func (c *Ctx) ruleScratch(i int, kind engine.Kind) *engine.State {
	p := &c.allStates[i*8+int(kind)]
	if *p == nil {
		*p = shard.NewState(kind)
	}
	return p
}

// find sets the rule's state: the live key's; an expired key's of the same
// kind, reset (revived); or a fresh one (added). It returns false when the
// key holds another kind of limiter, or a window of another mode.
func (r *allRule) find(sh *shard.Shard, now int64, scratch *engine.State) bool {
	r.revived, r.added, r.scratch = false, false, scratch
	f := sh.Find(r.key, r.h)
	r.f, r.boxed = f, f.Boxed
	if f.OK && f.Exp <= now {
		if f.Kind == r.kind {
			r.state, r.revived = *scratch, true
			if f.Boxed {
				r.state = sh.Load(f, *scratch)
			}
			r.state.Reset()
			return true
		}
		sh.Expire(f)
		f, r.boxed, r.refind = shard.Found{}, false, true
	}
	if !f.OK {
		r.state, r.added = *scratch, true
		r.state.Reset()
		return true
	}
	if f.Kind != r.kind {
		return false
	}
	r.state = sh.Load(f, *scratch)
	if w, ok := r.state.(*engine.Window); ok && w.Mode() != 0 && w.Mode() != r.mode {
		return false
	}
	return true
}

// store writes the rule's taken state back.
func (r *allRule) store(sh *shard.Shard, now, n int64) {
	f := r.f
	if r.refind {
		f = sh.Find(r.key, r.h)
	}
	kept := false
	switch {
	case r.added:
		if r.d.ResetAfter > 0 {
			kept = sh.Put(f, r.key, r.h, r.state, expireAt(now, r.d.ResetAfter), true)
		}
	case r.revived:
		if r.d.ResetAfter > 0 {
			kept = sh.Revive(f, r.key, r.h, r.state, expireAt(now, r.d.ResetAfter))
		} else {
			sh.Expire(f)
		}
	default:
		kept = storeOutcome(sh, f, r.key, r.h, r.state, now, r.d.ResetAfter, n > 0)
	}
	if kept {
		*r.scratch = nil // the shard holds it now
	}
}

// CL.ALL numrules rule [rule ...] [COST n]
//
// Every rule is decided first without changing the keyspace: a rule whose
// state was decoded into connection scratch is taken on that copy, a rule
// whose state is the shard's own object (a hot key, a long LOG) is only
// checked, since Check returns exactly what Take would. Only if all admit
// are the checked ones taken and every state stored. The shards of all
// keys are locked in index order for the whole command, so the
// all-or-nothing decision is atomic. When a rule denies, each rule's
// decision is what it would have answered alone.
func cmdAll(c *Ctx, args [][]byte) {
	rules, n, ok := parseAll(c, args)
	if !ok {
		return
	}
	store := c.Store()
	defer func() {
		clear(rules) // drop references to states
		c.allRules = rules[:0]
	}()
	idx := c.allIdx[:0]
	for range rules {
		idx = append(idx, 0)
	}
	defer func() { c.allIdx = idx[:0] }()
	for i := range rules {
		rules[i].h = store.Hash(rules[i].key)
		rules[i].shard = store.ShardIndexOf(rules[i].h)
		idx[i] = rules[i].shard
	}
	slices.Sort(idx)
	if idx = slices.Compact(idx); len(idx) < len(rules) {
		// Rules share a shard: one's find or store may move what another
		// found, so every key is found again before its store.
		for i := range rules {
			rules[i].refind = true
		}
	}
	for _, i := range idx {
		c.Lock(store.Shard(i))
	}
	defer func() {
		for j := len(idx) - 1; j >= 0; j-- {
			c.Unlock(store.Shard(idx[j]))
		}
	}()
	now := c.Now()
	all := true
	c.sizeRuleScratch(len(rules))
	for i := range rules {
		r := &rules[i]
		if !r.find(store.Shard(r.shard), now, c.ruleScratch(i, r.kind)) {
			c.err(resp.ErrWrongType)
			return
		}
		r.d = r.run(r.state, now, n, !r.boxed)
		all = all && r.d.Allowed
	}
	if all {
		// The shard's own objects are taken and stored first: a store in
		// the same shard may cool the hot key and hand its object to the
		// key getting hot, so no object may be used after another
		// rule's store. (Storing one of them never cools another.)
		for i := range rules {
			if r := &rules[i]; r.boxed {
				r.d = r.run(r.state, now, n, true)
				r.store(store.Shard(r.shard), now, n)
			}
		}
		for i := range rules {
			if r := &rules[i]; !r.boxed {
				r.store(store.Shard(r.shard), now, n)
			}
		}
	}
	c.W.Array(1 + len(rules))
	c.W.Buf = resp.AppendBool(c.W.Buf, 2, all)
	for i := range rules {
		c.W.Buf = appendDecision(c.W.Buf, rules[i].d)
	}
}
