package shard

import (
	"math/bits"

	"github.com/rlserver/rlserver/engine"
)

// Rule is one key of an UpdateAll: the caller sets Key and Op; UpdateAll
// sets D. A caller reuses its rules between calls, so that UpdateAll
// allocates nothing.
type Rule struct {
	Key []byte
	Op  Op
	D   engine.Decision // the rule's decision

	h     uint64
	shard int
	slot  int          // which of its shard's multi-key scratches it uses
	st    engine.State // the key's state: live, revived or new
	f     Found
	// revived: the key had expired and st was reset; added: the key is
	// new; boxed: st is the shard's own object, so it is only checked
	// until every rule has admitted, unless it could be saved.
	revived, added, boxed bool
	changed               bool // the take may have changed st
	// saved: a copy of the boxed st from before its take (an
	// engine.Copier), put back if a rule denies; nil: not taken yet.
	saved engine.State
	// refind: find removed an expired record, so f is stale at store
	// time; gen is the shard index's generation after find: when another
	// rule changed the index since (a lookup may move slots while it
	// grows, an insert fills a slot, a delete shifts them), f is found
	// again before the store.
	refind bool
	gen    uint32
}

// UpdateAll runs every rule's op at now, all or nothing: if every rule
// admits (Decision.Allowed), each is taken and stored as Update would;
// otherwise nothing changes anywhere and each rule's D is what it would
// have answered alone. The keys' shards stay locked, in index order, for
// the whole call, so the decision is atomic. Keys must be distinct. A key
// holding another kind (or refused by its op) makes it WrongType, with
// nothing changed.
func (v View) UpdateAll(rules []Rule, now int64) (all bool, status Status) {
	s := v.s
	var set [MaxShards / 64]uint64 // the rules' shards, as a bit set
	held := set[:(len(s.shards)+63)/64]
	for i := range rules {
		r := &rules[i]
		r.h = s.Hash(r.Key)
		r.shard = s.ShardIndexOf(r.h)
		r.slot, r.refind = 0, false
		if held[r.shard/64]&(1<<(r.shard%64)) != 0 {
			for j := range rules[:i] {
				if rules[j].shard == r.shard {
					r.slot++
				}
			}
		}
		held[r.shard/64] |= 1 << (r.shard % 64)
	}
	if !v.held {
		eachBit(held, func(i int) { s.shards[i].Lock() })
	}
	all, status = s.updateAll(rules, now)
	for i := range rules {
		// the states are the shards', valid under their locks only
		rules[i].st, rules[i].saved = nil, nil
	}
	if !v.held {
		eachBitReverse(held, func(i int) { s.shards[i].Unlock() })
	}
	return all, status
}

// eachBit calls fn with every index set in set, in increasing order.
func eachBit(set []uint64, fn func(int)) {
	for w, word := range set {
		for ; word != 0; word &= word - 1 {
			fn(w*64 + bits.TrailingZeros64(word))
		}
	}
}

// eachBitReverse is eachBit in decreasing order.
func eachBitReverse(set []uint64, fn func(int)) {
	for w := len(set) - 1; w >= 0; w-- {
		for word := set[w]; word != 0; {
			b := 63 - bits.LeadingZeros64(word)
			fn(w*64 + b)
			word &^= 1 << b
		}
	}
}

// updateAll is UpdateAll's body, with every rule's shard locked. A rule
// whose state was decoded into scratch is taken on that copy at once. A
// rule whose state is the shard's own object (a hot key, a long LOG) is
// taken at once too when the state can be copied aside first (and is put
// back if a rule denies); otherwise it is only checked, since Check
// returns exactly what Take would. Only if all admit are the checked ones
// taken and every state stored.
func (s *Store) updateAll(rules []Rule, now int64) (all bool, status Status) {
	all = true
	for i := range rules {
		r := &rules[i]
		sh := &s.shards[r.shard]
		if sh.frozen != nil && sh.frozenKey(r.Key) {
			undo(rules[:i])
			return false, Moving
		}
		if !sh.find(r, now) {
			undo(rules[:i])
			return false, WrongType
		}
		r.gen = sh.idx.gen
		if r.boxed {
			if c, ok := r.st.(engine.Copier); ok {
				if save := sh.multiScratch(r.slot).For(r.Op.Kind(), nil); c.CopyTo(save) {
					r.saved = save // nil until now: UpdateAll clears it after every call
				}
			}
		}
		d, changed, ok := r.Op.Run(r.st, now, !r.boxed || r.saved != nil)
		if !ok {
			undo(rules[:i+1])
			return false, WrongType
		}
		r.D, r.changed = d, changed
		all = all && d.Allowed
	}
	if !all {
		undo(rules)
		return false, Done
	}
	// The shard's own objects are taken and stored first: a store in the
	// same shard may cool the hot key and hand its object to the key
	// getting hot, so no object may be used after another rule's store.
	// (Storing one of them never cools another.)
	// Nothing is evicted until every rule is stored: an eviction would
	// move the slots and may drop the records the next rules found.
	for i := range rules {
		s.shards[rules[i].shard].noEvict = true
	}
	for i := range rules {
		if r := &rules[i]; r.boxed {
			if r.saved == nil {
				r.D, r.changed, _ = r.Op.Run(r.st, now, true)
			}
			s.shards[r.shard].storeRule(r, now)
		}
	}
	for i := range rules {
		if r := &rules[i]; !r.boxed {
			s.shards[r.shard].storeRule(r, now)
		}
	}
	for i := range rules {
		sh := &s.shards[rules[i].shard]
		sh.noEvict = false
		sh.fitBudget()
	}
	return true, Done
}

// undo puts back the shard's own objects the rules took at once: nothing
// changes anywhere when a CL.ALL denies or fails.
func undo(rules []Rule) {
	for i := range rules {
		if r := &rules[i]; r.saved != nil {
			r.saved.(engine.Copier).CopyTo(r.st)
		}
	}
}

// find sets the rule's state: the live key's; an expired key's of the
// same kind, reset (revived); or a fresh one (added). It returns false
// when the key holds another kind of limiter.
func (sh *Shard) find(r *Rule, now int64) bool {
	kind := r.Op.Kind()
	r.revived, r.added = false, false
	f := sh.lookup(r.Key, r.h)
	sh.now = now
	r.f, r.boxed = f, f.boxed
	if f.OK && f.Exp <= now {
		if f.Kind == kind {
			r.st, r.revived = sh.fresh(sh.multiScratch(r.slot), f), true
			return true
		}
		sh.expire(f)
		r.f, r.boxed, r.refind = Found{}, false, true
	}
	if !r.f.OK {
		r.st, r.added = sh.multiScratch(r.slot).For(kind, nil), true
		r.st.Reset()
		return true
	}
	if f.Kind != kind {
		return false
	}
	sh.touch(f.acc)
	r.st = sh.load(sh.multiScratch(r.slot), f)
	return true
}

// multiScratch returns the shard's i-th scratch set for UpdateAll: the
// first is the one Update uses, further ones serve further rules on this
// shard.
func (sh *Shard) multiScratch(i int) *engine.Scratch {
	if i == 0 {
		return &sh.sc
	}
	for len(sh.more) < i {
		sh.more = append(sh.more, new(engine.Scratch))
	}
	return sh.more[i-1]
}

// storeRule writes the rule's taken state back.
func (sh *Shard) storeRule(r *Rule, now int64) {
	f := r.f
	if r.refind || r.gen != sh.idx.gen {
		f = sh.lookup(r.Key, r.h)
	}
	kept := false
	switch {
	case r.added:
		if r.D.ResetAfter > 0 {
			kept = sh.write(f, r.Key, r.h, r.st, expireAt(now, r.D.ResetAfter), true)
		}
	case r.revived:
		if r.D.ResetAfter > 0 {
			kept = sh.revive(f, r.Key, r.h, r.st, expireAt(now, r.D.ResetAfter))
		} else {
			sh.expire(f)
		}
	default:
		kept = sh.store(f, r.Key, r.h, r.st, now, r.D.ResetAfter, r.changed)
	}
	if kept {
		sh.multiScratch(r.slot).Forget(r.st)
	}
}
