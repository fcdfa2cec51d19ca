package rls

import (
	"time"

	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/shard"
)

// Refunds (is_negative_hits) on a key this node holds are the engine's
// give-back (engine's GiveBack methods), run by the keyspace under the
// key's shard lock as one read-modify-write: the units come back to the
// limiter's own state, which keeps its window or refill time, so a refund
// of n right after a take of n leaves the limiter as if the take had not
// happened, for every algorithm (where an algorithm cannot be exact, its
// GiveBack says so). The keyspace records the change for persistence and
// replicas as it does a take's. A refund never creates a key.

// giveBackOp gives n units back to rule's limiter at a key (shard.Op).
type giveBackOp struct {
	rule *Rule
	n    int64
}

// Kind is the kind of the rule's limiter state.
func (o *giveBackOp) Kind() engine.Kind {
	switch o.rule.Algorithm {
	case TokenBucket:
		return engine.KindTokenBucket
	case GCRA:
		return engine.KindThrottle
	}
	return engine.KindWindow
}

// Run gives the units back (commit), or answers the peek a give-back
// would be compared with (not commit). A window of another mode than the
// rule's is refused (WRONGTYPE), as CL.WINDOW refuses it.
func (o *giveBackOp) Run(st engine.State, now int64, commit bool) (d engine.Decision, changed, ok bool) {
	r := o.rule
	n := o.n
	if !commit {
		n = 0
	}
	switch s := st.(type) {
	case *engine.TokenBucket:
		d = s.GiveBack(now, engine.TokenBucketParams{Capacity: r.Capacity(), Rate: int64(r.RequestsPerUnit), Period: r.Window()}, n)
	case *engine.GCRA:
		d = s.GiveBack(now, engine.GCRAParams{MaxBurst: r.Capacity() - 1, Count: int64(r.RequestsPerUnit), Period: r.Window()}, n)
	case *engine.Window:
		mode := engine.WindowFixed
		if r.Algorithm == SlidingWindow {
			mode = engine.WindowSliding
		}
		if m := s.Mode(); m != 0 && m != mode {
			return d, false, false
		}
		d = s.GiveBack(now, engine.WindowParams{Limit: r.Capacity(), Window: r.Window(), Mode: mode}, n)
	default:
		return d, false, false
	}
	return d, n > 0, true
}

// giveBack runs a refund call on the local keyspace at now.
func (c *Commands) giveBack(call *Call, now int64) (Decision, error) {
	op := giveBackOp{rule: call.Rule, n: call.N}
	d, st := c.store.View().UpdateLive(call.Key, now, &op)
	switch st {
	case shard.Done:
	case shard.Absent:
		// No live key: a fresh limiter, nothing to give back.
		d, _, _ = op.Run(op.Kind().New(), now, false)
	case shard.WrongType:
		return Decision{}, keyspaceError("WRONGTYPE Operation against a key holding the wrong kind of value")
	default: // Moving
		return Decision{}, keyspaceError("TRYAGAIN rls: the key's slot is moving")
	}
	return Decision{Allowed: d.Allowed, Limit: d.Limit, Remaining: d.Remaining,
		RetryAfterMs: ceilMs(d.RetryAfter), ResetAfterMs: ceilMs(d.ResetAfter)}, nil
}

// ceilMs is a duration in whole ms rounded up, as the limiter commands
// answer it; negative (engine.Never) is -1.
func ceilMs(d time.Duration) int64 {
	if d < 0 {
		return -1
	}
	ms := int64(d / time.Millisecond)
	if d%time.Millisecond != 0 {
		ms++
	}
	return ms
}
