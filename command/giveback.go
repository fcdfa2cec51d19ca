package command

import (
	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/shard"
)

// RLS GIVEBACK: Envoy's rate limit service's refunds (is_negative_hits,
// package rls), on whichever node owns the key. A refund puts units back
// into the limiter's own state (the engine's GiveBack), keeping its window,
// refill and expiry, so that a refund of n right after a take of n leaves
// the limiter as if the take had not happened. It is a command of the
// table, not a call on the keyspace, so that a refund is routed (MOVED,
// ASK, a replica's refusal), checked by ACL and held while its slot moves
// as any write; the keyspace persists and replicates its change as a
// take's. It is @admin: units given back are units an application could
// take again, so no client limited to @ratelimit may give them.

// rlsContainer is RLS, the rate limit service's internal commands.
func rlsContainer() *Command {
	c := container("rls", "server", "Envoy's rate limit service between its nodes (internal).",
		&Command{Name: "rls|giveback", Arity: -7, MaxArgs: 8,
			Flags:      []string{"write", "admin", "noscript", "fast"},
			Keys:       KeySpec{First: 3, Last: 3, Step: 1, Flags: []string{"RW", "ACCESS", "UPDATE"}},
			Complexity: "O(1)",
			Summary:    "Gives n units back to the limiter at a key, never creating it: the decision after the refund.",
			Args: []Arg{oneof("rule", token("TOKENBUCKET"), token("THROTTLE"), token("FIXED"), token("SLIDING")),
				argKey("key"), many(argStr("param")), argInt("n")},
			Run: cmdRLSGiveBack},
	)
	c.Since = "0.1.0"
	for _, s := range c.Subs {
		s.Since, s.Group = "0.1.0", "server"
	}
	return c
}

// RLS GIVEBACK rule key params... n
//
// rule and params are a CL.ALL rule's (TOKENBUCKET capacity rate period,
// THROTTLE max_burst count period, FIXED or SLIDING limit window), the
// forms whose state can take units back. The reply is the five-integer
// decision a look (n = 0) answers after the refund; a key that does not
// exist (nothing to give back) answers a fresh limiter's and stays absent.
func cmdRLSGiveBack(c *Ctx, args [][]byte) {
	f := ruleFormOf(args[2])
	if f == nil || !givesBack(f) {
		c.err(errGiveBackRule)
		return
	}
	if len(args) != 5+f.params {
		c.err(errWrongArgs("rls|giveback"))
		return
	}
	rule := c.ops.of(f.kind)
	if err := f.parse(c, rule, args[4:4+f.params]); err != "" {
		c.err(err)
		return
	}
	n, ok := parseCost(args[len(args)-1])
	if !ok {
		c.err(errNotInt)
		return
	}
	op := giveBackOp{rule: rule, n: n}
	now := c.Now()
	d, st := c.keys().UpdateLive(args[3], now, &op)
	switch st {
	case shard.Done:
	case shard.Absent:
		d, _, _ = op.Run(op.Kind().New(), now, false)
	default:
		c.notDone(st)
		return
	}
	c.W.Buf = appendDecision(c.W.Buf, d)
}

// givesBack reports whether rule form f's state has a give-back: a token
// bucket, GCRA, and the counting windows (a LOG window keeps entries, not
// counts).
func givesBack(f *ruleForm) bool {
	switch f.kind {
	case engine.KindTokenBucket, engine.KindThrottle:
		return true
	case engine.KindWindow:
		return f.name == "FIXED" || f.name == "SLIDING"
	}
	return false
}

// giveBackOp gives n units back to the state of the kind rule (a parsed
// op of a form givesBack accepts) runs on, under rule's parameters
// (shard.Op).
type giveBackOp struct {
	rule ruleOp
	n    int64
}

func (o *giveBackOp) Kind() engine.Kind { return o.rule.Kind() }

// Run gives the units back (commit), or answers the look a give-back is
// compared with (not commit). A window of another mode than the rule's is
// refused (WRONGTYPE), as CL.WINDOW refuses it.
func (o *giveBackOp) Run(st engine.State, now int64, commit bool) (d engine.Decision, changed, ok bool) {
	n := o.n
	if !commit {
		n = 0
	}
	switch r := o.rule.(type) {
	case *tokenBucketOp:
		d = st.(*engine.TokenBucket).GiveBack(now, r.p, n)
	case *gcraOp:
		d = st.(*engine.GCRA).GiveBack(now, r.p, n)
	case *windowOp:
		s := st.(*engine.Window)
		if m := s.Mode(); m != 0 && m != r.p.Mode {
			return d, false, false
		}
		d = s.GiveBack(now, r.p, n)
	default:
		return d, false, false
	}
	return d, n > 0, true
}
