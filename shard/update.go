package shard

import (
	"time"

	"github.com/rlserver/rlserver/engine"
)

// Op is one engine call on a key's state: the command layer's half of a
// read-modify-write the keyspace runs under the key's shard lock (Update,
// UpdateAll). It decides; the keyspace finds, decodes, revives, stores,
// expires and evicts.
type Op interface {
	// Kind is the kind of state the op runs on: a key holding another
	// kind is left alone (WrongType).
	Kind() engine.Kind
	// Run decides on st, a state of Kind (the key's, or a fresh one when
	// the key is new or had expired), at now: a take when commit is true,
	// a check that leaves st unchanged when false (it must answer what the
	// take would). changed reports that st may have changed and must be
	// stored. ok false refuses st (a window of another mode): st must be
	// unchanged, and the key is left alone (WrongType).
	Run(st engine.State, now int64, commit bool) (d engine.Decision, changed, ok bool)
}

// Status is how an update ended.
type Status uint8

const (
	// Done: the op ran; its decision is the reply.
	Done Status = iota
	// WrongType: the key holds another kind of limiter (or the op refused
	// its state); nothing changed.
	WrongType
	// Absent: UpdateLive found no live key; nothing ran.
	Absent
	// Moving: the key's slot is being handed to another node (cluster
	// mode, see Store.Freeze); nothing ran.
	Moving
)

// View is the keyspace as one command sees it. Its methods take the shard
// locks they need, unless the view holds every lock already (EXEC, see
// Store.LockAll), so that the commands of a transaction run atomically
// together.
type View struct {
	s    *Store
	held bool

	// A key whose slot the caller already computed (cluster mode, see
	// WithSlot): its hash needs no second CRC16.
	slotKey *byte
	slot    int
}

// WithSlot returns v knowing that key (this very slice) is in slot, so
// that updating it does not compute the slot again.
func (v View) WithSlot(key []byte, slot int) View {
	if len(key) > 0 {
		v.slotKey, v.slot = &key[0], slot
	}
	return v
}

// View returns a view that locks per call.
func (s *Store) View() View { return View{s: s} }

// LockAll takes every shard's lock, in index order, and returns a view
// that holds them, until UnlockAll.
func (s *Store) LockAll() View {
	for i := range s.shards {
		s.shards[i].Lock()
	}
	return View{s: s, held: true}
}

// UnlockAll releases the locks LockAll took.
func (v View) UnlockAll() {
	for i := len(v.s.shards) - 1; i >= 0; i-- {
		v.s.shards[i].Unlock()
	}
}

// Store returns the keyspace the view is of.
func (v View) Store() *Store { return v.s }

// lock locks sh unless the view holds every lock.
func (v View) lock(sh *Shard) {
	if !v.held {
		sh.mu.Lock()
	}
}

// unlock unlocks sh unless the view holds every lock.
func (v View) unlock(sh *Shard) {
	if !v.held {
		sh.Unlock()
	}
}

// Update runs op on key's state at now and stores the outcome: a new key
// is created, an expired one revived, a key is kept until its state is
// fresh again (the decision's ResetAfter) or dropped when it is.
func (v View) Update(key []byte, now int64, op Op) (engine.Decision, Status) {
	return v.update(key, now, op, false)
}

// UpdateLive is Update for a key that must exist and be live: it never
// creates one (Absent), and the op's decision only stores the state when
// it reports a change.
func (v View) UpdateLive(key []byte, now int64, op Op) (engine.Decision, Status) {
	return v.update(key, now, op, true)
}

func (v View) update(key []byte, now int64, op Op, live bool) (engine.Decision, Status) {
	var h uint64
	if v.slotKey != nil && len(key) > 0 && &key[0] == v.slotKey {
		h = v.s.hash.bytes(key)&^v.s.mask | uint64(v.slot)&v.s.mask
	} else {
		h = v.s.Hash(key)
	}
	sh := v.s.ShardOf(h)
	v.lock(sh)
	d, st := sh.update(key, h, now, op, live)
	v.unlock(sh)
	return d, st
}

// update is Update's body under the shard lock (no defer on the hot path).
func (sh *Shard) update(key []byte, h uint64, now int64, op Op, live bool) (d engine.Decision, status Status) {
	if sh.frozen != nil && sh.frozenKey(key) {
		return d, Moving
	}
	kind := op.Kind()
	f := sh.lookup(key, h)
	sh.now = now
	if f.OK && f.Exp <= now {
		if f.Kind == kind && !live {
			// Its state is a fresh key's: reuse the record in place (keys
			// that come back after expiring are the common case with many
			// keys).
			st := sh.fresh(&sh.sc, f)
			d, _, _ = op.Run(st, now, true)
			if d.ResetAfter > 0 {
				sh.keep(st, sh.revive(f, key, h, st, expireAt(now, d.ResetAfter)))
			} else {
				sh.expire(f)
			}
			return d, Done
		}
		sh.expire(f)
		f = sh.lookup(key, h)
	}
	if !f.OK {
		if live {
			return d, Absent
		}
		st := sh.sc.For(kind, nil)
		st.Reset()
		d, _, _ = op.Run(st, now, true)
		if d.ResetAfter > 0 {
			sh.keep(st, sh.write(f, key, h, st, expireAt(now, d.ResetAfter), true))
		}
		return d, Done
	}
	if f.Kind != kind {
		return d, WrongType
	}
	if sh.pol().lfu() { // touch, inlined for the common case
		sh.touchLFU(f.acc)
	} else {
		sh.touchLRU(f.acc)
	}
	st := sh.load(&sh.sc, f)
	d, changed, ok := op.Run(st, now, true)
	if !ok {
		return d, WrongType
	}
	sh.keep(st, sh.store(f, key, h, st, now, d.ResetAfter, changed))
	return d, Done
}

// load returns the state of the record f found: its box, or its payload
// decoded into sc's scratch state for it.
func (sh *Shard) load(sc *engine.Scratch, f Found) engine.State {
	if f.boxed {
		return sh.boxes[boxIndex(f.pay)]
	}
	st := sc.For(f.Kind, f.pay)
	decodeInto(st, f.pay, f.Exp)
	return st
}

// fresh returns a fresh state to revive the expired record f with: its box,
// reset, or the scratch state of sc its payload would decode into, reset;
// the expired state is never decoded.
func (sh *Shard) fresh(sc *engine.Scratch, f Found) engine.State {
	var st engine.State
	if f.boxed {
		st = sh.boxes[boxIndex(f.pay)]
	} else {
		st = sc.For(f.Kind, f.pay)
	}
	st.Reset()
	return st
}

// keep forgets the scratch state st once put kept it as a box.
func (sh *Shard) keep(st engine.State, kept bool) {
	if kept {
		sh.sc.Forget(st)
	}
}

// store keeps the key f found until its state st is fresh again,
// now+reset, or drops it when it already is. A call that changed nothing
// (a peek, a denial) only ever extends the expiry: with other parameters
// than the state was stored under it may report an earlier reset, and
// expiring the key then would forget state that is not fresh under its
// stored parameters. It reports whether put kept st as a box.
func (sh *Shard) store(f Found, key []byte, h uint64, st engine.State, now int64, reset time.Duration, changed bool) (kept bool) {
	exp := expireAt(now, reset)
	if !changed {
		exp = max(exp, f.Exp)
	}
	if exp <= now {
		sh.remove(f)
		return false
	}
	return sh.write(f, key, h, st, exp, changed)
}

// expireAt returns now+d, saturating instead of wrapping for huge d (a
// limiter key always has an expiry: below NoExpiry).
func expireAt(now int64, d time.Duration) int64 {
	if d > 0 && now > engine.NoExpiry-1-int64(d) {
		return engine.NoExpiry - 1 // the last instant: NoExpiry means none
	}
	return now + int64(d)
}
