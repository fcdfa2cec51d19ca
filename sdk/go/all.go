package rlserver

import (
	"context"
	"fmt"
)

// Rule is one limiter applied to one key, for All.
type Rule struct {
	b   *base
	key string
}

// AllDecision is CL.ALL's reply: Allowed only if every rule admitted (then
// every rule consumed; otherwise none did), and each rule's decision.
type AllDecision struct {
	Allowed   bool
	Decisions []Decision
	// Leases holds, for each Concurrency rule that admitted, its lease
	// (nil for other rules and when denied).
	Leases []*Lease
}

// All checks and consumes cost units on every rule atomically (CL.ALL).
// In cluster mode all keys must hash to one slot (use a {hash tag}).
func (c *Client) All(ctx context.Context, cost int64, rules ...Rule) (AllDecision, error) {
	if len(rules) == 0 {
		return AllDecision{}, fmt.Errorf("rlserver: All needs at least one rule")
	}
	args := make([]any, 0, 4+6*len(rules))
	args = append(args, "CL.ALL", len(rules))
	for _, r := range rules {
		args = append(args, r.b.rule, r.key)
		args = append(args, r.b.params...)
	}
	args = append(args, "COST", cost)
	v, err := c.do(ctx, args)
	if err != nil {
		return c.allFallback(ctx, err, cost, rules)
	}
	arr, ok := v.([]any)
	if !ok || len(arr) != len(rules)+1 {
		return AllDecision{}, fmt.Errorf("%w: %v", ErrBadReply, v)
	}
	ad := AllDecision{Allowed: arr[0] == int64(1), Decisions: make([]Decision, len(rules)), Leases: make([]*Lease, len(rules))}
	for i, r := range rules {
		d, err := parseDecision(arr[i+1])
		if err != nil {
			return AllDecision{}, err
		}
		ad.Decisions[i] = d
		if r.b.rule == "ACQUIRE" && d.Allowed {
			ad.Leases[i] = &Lease{c: c, s: r.b.s, key: r.key, n: cost, ID: leaseID(arr[i+1])}
		}
	}
	return ad, nil
}

// allFallback applies the failure policy to All: the local limiter checks
// every rule first and consumes only if all admit, as the server would.
func (c *Client) allFallback(ctx context.Context, err error, cost int64, rules []Rule) (AllDecision, error) {
	first := rules[0]
	if _, ferr := c.fail(ctx, "CL.ALL", first.key, err, first.b.s, 0); ferr != nil {
		return AllDecision{}, ferr
	}
	ad := AllDecision{Allowed: true, Decisions: make([]Decision, len(rules)), Leases: make([]*Lease, len(rules))}
	for i, r := range rules {
		switch c.opts.Failure {
		case FailOpen:
			ad.Decisions[i] = Decision{Allowed: true, Limit: r.b.s.limit, Remaining: r.b.s.limit, Fallback: true}
		case FailClosed:
			ad.Decisions[i] = Decision{Limit: r.b.s.limit, RetryAfter: c.opts.ClosedRetryAfter, ResetAfter: c.opts.ClosedRetryAfter, Fallback: true}
		default:
			ad.Decisions[i] = c.local.take(r.b.s, r.key, cost, true)
		}
		ad.Allowed = ad.Allowed && ad.Decisions[i].Allowed
	}
	if ad.Allowed && c.opts.Failure == FailLocal {
		for i, r := range rules {
			ad.Decisions[i] = c.local.take(r.b.s, r.key, cost, false)
		}
	}
	if ad.Allowed {
		for i, r := range rules {
			if r.b.rule == "ACQUIRE" {
				ad.Leases[i] = &Lease{c: c, s: r.b.s, key: r.key, n: cost}
			}
		}
	}
	return ad, nil
}
