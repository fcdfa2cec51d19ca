package shard

import (
	"github.com/rlserver/rlserver/engine"
)

// The Redis values' path (package values' kinds, and the key commands
// that apply to every kind, such as EXPIRE and RENAME): a data command
// hands the keyspace a ValueOp, which reads and changes the key's state
// and expiry in place under the shard lock; the keyspace finds, decodes,
// expires lazily, stores, removes and records the change, as it does for
// limiters.

// Value is what a ValueOp sees of its key: its state (nil when the key
// does not exist or has expired) and its expiry (engine.NoExpiry: none).
// The state is the shard's: valid during Apply only.
type Value struct {
	State engine.State
	Exp   int64
	sh    *Shard
	ref   ref  // the key's record (0: none)
	peek  bool // leave the access stamp (Peek)
}

// New makes v hold a fresh (empty) state of kind k, replacing the one it
// held, and returns it. A reply that needs the old state must be written
// before: the fresh state may be the same scratch object, reset.
func (v *Value) New(k engine.Kind) engine.State {
	st := v.sh.sc.For(k, nil)
	st.Reset()
	v.State = st
	return st
}

// Outcome is what a ValueOp did to its key.
type Outcome uint8

const (
	// Unchanged: nothing to store.
	Unchanged Outcome = iota
	// Changed: store Value's State with its Exp (an Exp not after now
	// deletes the key, as Redis's EXPIRE with a time in the past).
	Changed
	// Removed: delete the key (a value emptied, DEL-like commands).
	Removed
)

// ValueOp is a data command's read-modify-write on one key (the i-th of
// the call's keys).
type ValueOp interface {
	// Kind is the kind of state the op works on: a live key of another
	// kind is WrongType, with nothing run. 0: any kind.
	Kind() engine.Kind
	Apply(i int, v *Value, now int64) Outcome
}

// Value runs op on key at now under its shard's lock.
func (v View) Value(key []byte, now int64, op ValueOp) Status {
	h := v.hash(key)
	sh := v.s.ShardOf(h)
	v.lock(sh)
	st := sh.value(key, h, now, op, 0)
	v.unlock(sh)
	return st
}

// hash is key's Store.Hash, from the slot the view knows when it knows
// key's (see WithSlot).
func (v View) hash(key []byte) uint64 {
	if v.slotKey != nil && len(key) > 0 && &key[0] == v.slotKey {
		return v.s.hash.bytes(key)&^v.s.mask | uint64(v.slot)&v.s.mask
	}
	return v.s.Hash(key)
}

// Values runs op on each of keys in turn, with all their shards locked
// for the whole call (in index order), so that the call is atomic (MSET,
// MGET, RENAME). A frozen slot stops it before anything runs (Moving); a
// key of the wrong kind stops it there (WrongType: the keys before it ran).
func (v View) Values(keys [][]byte, now int64, op ValueOp) Status {
	s := v.s
	var set [MaxShards / 64]uint64
	held := set[:(len(s.shards)+63)/64]
	var hs [16]uint64
	h := hs[:0]
	for _, k := range keys {
		x := s.Hash(k)
		h = append(h, x)
		i := s.ShardIndexOf(x)
		held[i/64] |= 1 << (i % 64)
	}
	if !v.held {
		eachBit(held, func(i int) { s.shards[i].Lock() })
		defer eachBitReverse(held, func(i int) { s.shards[i].Unlock() })
	}
	for i, k := range keys {
		if sh := s.ShardOf(h[i]); sh.frozen != nil && sh.frozenKey(k) {
			return Moving
		}
	}
	for i, k := range keys {
		if st := s.ShardOf(h[i]).value(k, h[i], now, op, i); st != Done {
			return st
		}
	}
	return Done
}

// value is Value's body under the shard lock.
func (sh *Shard) value(key []byte, h uint64, now int64, op ValueOp, i int) Status {
	if sh.frozen != nil && sh.frozenKey(key) {
		return Moving
	}
	f := sh.live(key, h, now)
	sh.now = now
	v := &sh.val
	*v = Value{Exp: engine.NoExpiry, sh: sh}
	if f.OK {
		if k := op.Kind(); k != 0 && f.Kind != k {
			return WrongType
		}
		v.State, v.Exp, v.ref = sh.load(&sh.sc, f), f.Exp, f.ref
	}
	out := op.Apply(i, v, now)
	if f.OK && !v.peek {
		sh.touch(f.acc) // before a write, which keeps the stamp
	}
	switch out {
	case Changed:
		if v.State == nil || v.Exp <= now {
			if f.OK {
				sh.remove(f)
			}
			return Done
		}
		sh.keep(v.State, sh.write(f, key, h, v.State, v.Exp, true))
	case Removed:
		if f.OK {
			sh.remove(f)
		}
	}
	return Done
}

// Rename moves src's state and expiry to dst, replacing dst (RENAME), or
// only when dst does not exist (nx; RENAMENX). It reports whether src
// existed and whether it moved. Both shards stay locked for the call.
func (v View) Rename(src, dst []byte, now int64, nx bool) (found, moved bool, status Status) {
	s := v.s
	hs, hd := s.Hash(src), s.Hash(dst)
	a, b := s.ShardIndexOf(hs), s.ShardIndexOf(hd)
	if !v.held {
		lo, hi := min(a, b), max(a, b)
		s.shards[lo].Lock()
		defer s.shards[lo].Unlock()
		if hi != lo {
			s.shards[hi].Lock()
			defer s.shards[hi].Unlock()
		}
	}
	ss, sd := &s.shards[a], &s.shards[b]
	if ss.frozen != nil && ss.frozenKey(src) || sd.frozen != nil && sd.frozenKey(dst) {
		return false, false, Moving
	}
	fs := ss.live(src, hs, now)
	if !fs.OK {
		return false, false, Done
	}
	ss.now, sd.now = now, now
	ss.touch(fs.acc)
	if string(src) == string(dst) {
		return true, !nx, Done
	}
	acc := getAcc(fs.acc) // dst is src's object, as in Redis
	// A copy through the codec: the source's state may be its shard's
	// scratch or box, which the destination must not share.
	exp := fs.Exp
	st := fs.Kind.New()
	ss.pbuf = ss.load(&ss.sc, fs).AppendCompact(ss.pbuf[:0], exp)
	decodeInto(st, ss.pbuf, exp)
	fd := sd.live(dst, hd, now)
	if nx && fd.OK {
		return true, false, Done
	}
	sd.write(fd, dst, hd, st, exp, true)
	if rec := sd.slabs.lookup(sd.lastRef); rec != nil {
		setRecAccess(rec, acc)
	}
	// The write may have moved records of the source's shard (the same
	// shard, growing): find the source again.
	fs = ss.lookup(src, hs)
	if fs.OK {
		ss.remove(fs)
	}
	return true, true, Done
}
