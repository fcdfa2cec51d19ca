// Package shard is rlserver's keyspace: limiter states in N shards, each a
// hash index over records kept in pointer-free slabs, under its own mutex.
// It alone reads and writes state.
//
// A key's state is stored as bytes (its compact encoding, see slab.go), not
// as a Go object. A command does not touch it: it hands the keyspace an Op
// (the engine call with its parameters) and the keyspace runs the whole
// read-modify-write under the key's shard lock (View.Update; UpdateAll for
// several keys, all or nothing): it finds the key, decodes the state into
// a scratch state of its own, runs the op, and stores the outcome,
// creating, reviving, keeping until fresh, dropping or evicting. States too
// large to re-encode on every call (long LOG windows, lease sets of more
// than about 8 leases), and the state of a hot key, are kept as Go objects
// ("boxes") the op runs on in place; that too is the keyspace's business.
//
// Ownership and locking: the keyspace owns every record; callers hand it
// ops and keys, never hold a record. Commands go through a View, whose
// methods (Update, UpdateAll, Lookup, Delete, Usage, Keys, Len, Flush)
// lock what they need, or run under EXEC's locks (Store.LockAll); shards
// are locked in index order. Store's methods lock for themselves. What
// needs a shard's lock held (persistence's drain, the sweeper,
// replication's apply, tests) is a method of Locked, the handle
// Shard.Lock returns, so it cannot be called without the lock. Nothing
// here blocks on I/O.
package shard

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/engine"
)

// indexBytes is the index's share of a key's memory, for accounting: 6
// bytes a slot at 55-80% load.
const indexBytes = 9

// maxInline is the largest compact payload kept inline. Larger states are
// boxed: decoding and encoding them on every call would cost more than the
// bytes saved.
const maxInline = 192

// Found is the result of Find: where key is, or where it would go. It is
// valid until the shard changes (a write, Remove, Expire, Sweep...).
type Found struct {
	// Packed, small fields first: a Found is passed by value along the
	// limiters' path.
	OK    bool        // the key has a record (perhaps expired: check Exp)
	Kind  engine.Kind // the record's kind, when OK
	boxed bool        // the state is kept as an object (a box), not inline
	ref   ref
	Exp   int64    // the record's expiry, server-clock Unix ns, when OK
	pos   int      // index slot
	pay   []byte   // the record's payload
	acc   *[3]byte // the record's access stamp (see touch)
}

// Shard is one part of the keyspace. Use it only while holding its lock.
type Shard struct {
	mu      sync.Mutex
	idx     index
	slabs   slabs
	boxes   []engine.State // states kept as objects; nil slots are free
	boxSize []int32        // each box's Size when last stored, for accounting
	bfree   []uint32
	hash    hasher
	sweep   int   // next index slot the active sweep visits
	val     Value // value's: handed to a ValueOp, an interface, it would escape if local
	// persistent counts the records without an expiry (engine.NoExpiry):
	// INFO keyspace's keys less its expires.
	persistent int

	track   bool     // record changes for persistence
	dirty   refQueue // records changed since the last DrainChanges (and stale refs, see DrainChanges)
	ndirty  int      // records flagged dirty
	deleted keyQueue // keys removed since the last DrainChanges
	pbuf    []byte   // payload scratch
	kbuf    []byte   // key scratch (cool)

	// A hot key, one written again within the shard's last HotKeys
	// writes, has its state kept as a box while it stays hot, so calls on
	// it skip decoding and encoding (DecodeCompact, AppendCompact): the op
	// runs on the box, write stores the expiry. When a key gets hot while
	// HotKeys others are, cool stores the least recently written of them
	// inline again. Keys taking turns in one shard (CL.ALL's rules, a few
	// busy tenants) stay hot together.
	lastRef ref                           // the record the last write wrote
	recent  [HotKeys]ref                  // the records the last writes wrote (a ring)
	nrecent uint8                         // the writes recorded in recent (where the next goes)
	hot     [HotKeys]ref                  // the hot keys' records, most recently written first; 0s last
	spare   [engine.MaxKinds]engine.State // per kind: a cooled key's object, reused by the next hot key
	feed    ring                          // the change stream, while someone subscribes (feed.go)
	sc      engine.Scratch                // states to decode records into (see update)
	more    []*engine.Scratch             // further ones, for UpdateAll rules sharing the shard
	rnd     uint64                        // eviction's and LFU's random state (xorshift)
	ahead   evictAhead                    // the next eviction, chosen early (evictSome)
	pool    evictPool                     // eviction's best candidates so far
	noEvict bool                          // UpdateAll is storing several rules: evict after the last
	now     int64                         // the server clock of the command running, for access stamps
	clock   func() int64                  // the server clock, for writes of no command (Options.Now)
	// What eviction removes and how accesses are stamped (access.go),
	// Redis's lfu-log-factor and lfu-decay-time (minutes), and
	// maxmemory-samples (evict.go): atomics, since CONFIG SET sets them
	// inside EXEC, which holds every lock.
	policy           atomic.Uint32
	lfuLog, lfuDecay atomic.Uint32
	samples          atomic.Uint32

	mem     atomic.Int64 // bytes accounted, readable without the lock
	changes atomic.Int64 // writes since the last save
	expired atomic.Int64 // keys removed because their state became fresh
	evicted atomic.Int64 // keys removed by the memory bound
	budget  atomic.Int64 // memory bound for this shard (0: none)
	stuck   atomic.Bool  // over budget, with nothing the policy may evict at the last try

	slotKeys []uint32         // in cluster mode: keys per hash slot of the shard's (slotCount)
	slotBits uint8            // log2 of the shard count: a slot's place in slotKeys is slot >> slotBits
	frozen   *cluster.SlotSet // slots whose keys no command may change (see Store.Freeze)
	// As of the last Unlock (read without the lock): ndirty plus
	// deleted's length, and feed.head. Last, so that the fields the
	// commands use keep their places.
	pending atomic.Int64
	head    atomic.Uint64
	_       [64]byte // keep neighbouring shards' locks off one cache line
}

// Lock locks the shard and returns the handle that the methods needing
// the lock hang on (see Locked).
func (sh *Shard) Lock() Locked {
	sh.mu.Lock()
	return Locked{sh}
}

// Unlock unlocks the shard. It first publishes how many changes wait for
// a drain and where its change stream ends, so that Pending and Heads
// never take a lock: INFO, ROLE and WAIT run inside EXEC, which holds
// every shard's lock.
func (sh *Shard) Unlock() {
	// Stored only when changed: an atomic store is a locked exchange.
	if n := int64(sh.ndirty + sh.deleted.len()); sh.pending.Load() != n {
		sh.pending.Store(n)
	}
	if sh.head.Load() != sh.feed.head {
		sh.head.Store(sh.feed.head)
	}
	sh.mu.Unlock()
}

// TryLock locks the shard if no one holds it, and reports whether it did.
func (sh *Shard) TryLock() bool { return sh.mu.TryLock() }

// prefetchIndex starts loading the index group where the probe for hash h
// starts, so that a lookup soon after hits the cache. A caller warming
// several keys prefetches all their groups first and then all their records
// (prefetchRecord): a prefetch does not wait for its line, so the misses of
// a pass overlap instead of following one another. The caller holds the
// lock (see Store.Warm).
func (sh *Shard) prefetchIndex(h uint64) { sh.idx.prefetchHome(h) }

// prefetchRecord starts loading the record index.guess finds for hash h,
// almost always the key's (see prefetchIndex), and reports whether there
// was one. It reads the index, waiting for it if prefetchIndex's line has
// not come yet; a wrong guess costs nothing but the prefetch. The caller
// holds the lock.
func (sh *Shard) prefetchRecord(h uint64) bool {
	r := sh.idx.guess(h)
	if r == 0 {
		return false
	}
	// Both ends: a record may straddle two lines.
	rec := sh.slabs.get(r)
	prefetch(unsafe.Pointer(&rec[0]))
	prefetch(unsafe.Pointer(&rec[len(rec)-1]))
	return true
}

// lookup looks key (whose Store.Hash is h) up. An expired record is still
// found: update may revive it, others Expire it.
func (sh *Shard) lookup(key []byte, h uint64) Found {
	if sh.idx.size == 0 {
		return Found{pos: -1}
	}
	pos, r, pay := sh.idx.find(&sh.slabs, key, h)
	if r == 0 {
		return Found{pos: pos}
	}
	rec := sh.slabs.get(r)
	return Found{OK: true, Kind: engine.Kind(rec[0] & kindMask), Exp: recExp(rec), boxed: rec[0]&flagBoxed != 0, pos: pos, ref: r, pay: pay,
		acc: (*[3]byte)(rec[9:recFixed])}
}

// live is Find for a key that must be live at now: an expired record is
// removed (lazy expiry) and reported as absent.
func (sh *Shard) live(key []byte, h uint64, now int64) Found {
	f := sh.lookup(key, h)
	if f.OK && f.Exp <= now {
		sh.expire(f)
		return Found{pos: -1}
	}
	return f
}

// boxIndex reads a boxed record's payload: the index of its box.
func boxIndex(payload []byte) int {
	i, _ := binary.Uvarint(payload)
	return int(i)
}

// decodeInto decodes a record's compact payload into st. The shard wrote
// the payload itself, so an error is a bug, not bad input.
func decodeInto(st engine.State, payload []byte, exp int64) {
	if err := st.DecodeCompact(payload, exp); err != nil {
		panic(fmt.Sprintf("shard: a %v state does not decode: %v", st.Kind(), err))
	}
}

// write stores st, the key's state after a call, expiring at exp: it
// creates the record (f not OK), evicting others beyond the memory bound,
// or rewrites it. changed says whether the call may have changed the state;
// an unchanged state with an unchanged expiry writes nothing. kept reports
// that the shard now holds st itself as a box (a state it cannot keep
// inline): st must not be used as scratch again. f must come from Find
// with no change to the shard since.
func (sh *Shard) write(f Found, key []byte, h uint64, st engine.State, exp int64, changed bool) (kept bool) {
	if f.OK && !changed && exp == f.Exp {
		return false
	}
	kept = sh.put(f, key, h, st, exp, true)
	sh.fitBudget()
	return kept
}

// revive is write for an expired record (found OK with Exp <= now) whose
// state was reset to a fresh one and used again: it counts as an expiry
// plus a new key.
func (sh *Shard) revive(f Found, key []byte, h uint64, st engine.State, exp int64) (kept bool) {
	sh.expired.Add(1)
	putAcc(f.acc, sh.freshAccess()) // a new key, as far as its accesses go
	kept = sh.put(f, key, h, st, exp, true)
	sh.fitBudget()
	return kept
}

// remove deletes the record f found (DEL).
func (sh *Shard) remove(f Found) { sh.removeAt(f.pos, f.ref, EventDelete) }

// expire removes the record f found because its state became fresh.
func (sh *Shard) expire(f Found) {
	sh.removeAt(f.pos, f.ref, EventExpire)
	sh.expired.Add(1)
}

// put writes st's record; mark records it as a change.
func (sh *Shard) put(f Found, key []byte, h uint64, st engine.State, exp int64, mark bool) (kept bool) {
	if f.OK && f.Exp == engine.NoExpiry {
		sh.persistent--
		if exp != engine.NoExpiry {
			sh.unstick() // a key a volatile policy may evict
		}
	}
	if exp == engine.NoExpiry {
		sh.persistent++
	}
	kind := st.Kind()
	var old []byte
	oldBox := -1
	if f.OK {
		old = sh.slabs.get(f.ref)
		if f.boxed {
			oldBox = boxIndex(f.pay)
			// A boxed state changed in place stays boxed without encoding
			// it: a hot key's (see hot), and a long LOG window, which
			// would cost O(limit) per call to encode.
			if sh.boxes[oldBox] == st {
				if hot := sh.isHot(f.ref); hot || kind.Object() || st.Size() > maxInline {
					sh.putBox(f, oldBox, key, st, exp, mark, hot)
					return false
				}
			}
		}
	}
	hdr := byte(kind)
	payload := sh.pbuf[:0]
	c, inline := st, true
	hot, owned := false, false // owned: st is the shard's (a spare), not the caller's
	switch {
	case kind.Object():
		inline = false // kept as an object, never hot (see engine.RegisterValue)
	case inline && mark && f.OK && !f.boxed && sh.wroteRecently(f.ref):
		// A key one of the last writes wrote, again: it is hot, keep its
		// state as an object while it stays hot. The object is the one
		// a cooled key of this kind gave back, when there is one (copied
		// through the codec), so that keys taking turns at being hot
		// allocate nothing.
		inline, hot = false, true
		if last := sh.hot[HotKeys-1]; last != 0 {
			sh.cool(last)
		}
		if spare := sh.spare[kind&kindMask]; spare != nil {
			payload = c.AppendCompact(payload, exp)
			decodeInto(spare, payload, exp)
			sh.spare[kind&kindMask] = nil
			st, owned = spare, true
		}
	case inline:
		payload = c.AppendCompact(payload, exp)
		inline = len(payload) <= maxInline
	}
	delta := int64(0)
	if oldBox >= 0 {
		delta -= int64(sh.boxSize[oldBox])
	}
	if inline {
		if oldBox >= 0 {
			if sh.boxes[oldBox] != st {
				recycle(sh.boxes[oldBox])
			}
			sh.freeBox(oldBox)
		}
	} else {
		hdr |= flagBoxed
		i := oldBox
		if i < 0 {
			i = sh.newBox(st)
			kept = !owned
		} else if sh.boxes[i] != st {
			recycle(sh.boxes[i])
			sh.boxes[i] = st
			kept = true
		}
		size := st.Size()
		sh.boxSize[i] = int32(size)
		delta += int64(size)
		payload = binary.AppendUvarint(payload[:0], uint64(i))
	}
	sh.pbuf = payload
	n := recordLen(len(key), len(payload))
	r := f.ref
	var acc uint32 // the access stamp: the record's, or a new key's
	if f.OK {
		acc = recAccess(old)
	} else {
		acc = sh.freshAccess()
	}
	switch {
	case f.OK && f.boxed && !inline && !kept && !owned:
		setRecExp(old, exp) // the same box: key and payload are unchanged
	case f.OK && classFor(n) == r>>classShift && (r>>classShift != bigClass || len(old) == n):
		hdr |= old[0] & flagDirty
		putRecord(old, hdr, exp, acc, key, payload)
	default:
		var rec []byte
		r, rec = sh.slabs.alloc(n)
		putRecord(rec, hdr, exp, acc, key, payload)
		delta += int64(sh.slabs.slotBytes(r))
		if f.OK {
			if old[0]&flagDirty != 0 {
				// Still to be drained: the new record is, in its place.
				rec[0] |= flagDirty
				sh.dirty.push(r)
			}
			delta -= int64(sh.slabs.slotBytes(f.ref))
			sh.slabs.release(f.ref)
			sh.idx.setRef(f.pos, r)
		} else {
			pos := f.pos
			if sh.idx.full() {
				sh.idx.grow(&sh.slabs)
				pos = -1
			}
			if pos < 0 {
				pos, _, _ = sh.idx.find(&sh.slabs, key, h)
			}
			sh.idx.put(pos, h, r)
			delta += indexBytes
			if sh.slotKeys != nil {
				*sh.slotCount(cluster.Slot(key)) += 1
			}
		}
	}
	if delta != 0 {
		sh.mem.Add(delta)
	}
	sh.wrote(f, key, r, mark, hot)
	return kept
}

// putBox is put for a key whose record refers to box i, which st is: a
// hot key's or a long LOG window's state changed in place. Only the
// record's expiry and the box's size are written.
func (sh *Shard) putBox(f Found, i int, key []byte, st engine.State, exp int64, mark, hot bool) {
	if size := int32(st.Size()); size != sh.boxSize[i] {
		sh.mem.Add(int64(size - sh.boxSize[i]))
		sh.boxSize[i] = size
	}
	setRecExp(sh.slabs.get(f.ref), exp)
	sh.wrote(f, key, f.ref, mark, hot)
}

// wrote ends a put of key (found as f) that left its state in record r:
// the change is recorded (when mark), and the write counts towards
// telling hot keys.
func (sh *Shard) wrote(f Found, key []byte, r ref, mark, hot bool) {
	if mark {
		sh.record(EventPut, key, r)
		sh.recent[sh.nrecent%HotKeys] = r
		sh.nrecent++
	}
	sh.lastRef = r
	switch {
	case hot:
		sh.heat(f.ref, r)
	case f.OK && f.boxed:
		sh.unheat(f.ref)
	}
}

// HotKeys is how many keys a shard keeps hot at once, and how many of
// its last writes a write looks back on to tell a hot key.
const HotKeys = 4

// isHot reports whether record r is a hot key's.
func (sh *Shard) isHot(r ref) bool { return r != 0 && slices.Contains(sh.hot[:], r) }

// wroteRecently reports whether one of the shard's last writes wrote
// record r. A ref whose record was freed and reused since may say yes for
// another key: it gets hot a write early, which costs nothing.
func (sh *Shard) wroteRecently(r ref) bool { return r != 0 && slices.Contains(sh.recent[:], r) }

// heat puts record r, a hot key's (formerly at old), first in the hot
// list. The list has room: a key getting hot cooled the last one first.
func (sh *Shard) heat(old, r ref) {
	if sh.hot[0] == old {
		sh.hot[0] = r // the hottest again
		return
	}
	i := 0
	for i < HotKeys-1 && sh.hot[i] != old && sh.hot[i] != 0 {
		i++
	}
	copy(sh.hot[1:i+1], sh.hot[:i])
	sh.hot[0] = r
}

// unheat takes record r off the hot list, if it is there.
func (sh *Shard) unheat(r ref) {
	for i, h := range sh.hot {
		if h == r {
			copy(sh.hot[i:], sh.hot[i+1:])
			sh.hot[HotKeys-1] = 0
			return
		}
	}
}

// cool stores hot record r's state inline again (another key became hot).
// Its record changes form, not content, so it is no change to persist.
func (sh *Shard) cool(r ref) {
	sh.unheat(r)
	rec := sh.slabs.get(r)
	k, pay := recSplit(rec)
	key := append(sh.kbuf[:0], k...) // put may overwrite the record
	sh.kbuf = key
	i := boxIndex(pay)
	obj := sh.boxes[i]
	h := sh.hash.bytes(key)
	sh.put(sh.lookup(key, h), key, h, obj, recExp(rec), false)
	if sh.boxes[i] != obj {
		// Stored inline again: nothing refers to the object any more,
		// so the next hot key of its kind takes it over.
		sh.spare[obj.Kind()&kindMask] = obj
	}
}

func (sh *Shard) newBox(st engine.State) int {
	if k := len(sh.bfree); k > 0 {
		i := sh.bfree[k-1]
		sh.bfree = sh.bfree[:k-1]
		sh.boxes[i] = st
		return int(i)
	}
	sh.boxes = append(sh.boxes, st)
	sh.boxSize = append(sh.boxSize, 0)
	return len(sh.boxes) - 1
}

func (sh *Shard) freeBox(i int) {
	sh.boxes[i], sh.boxSize[i] = nil, 0
	sh.bfree = append(sh.bfree, uint32(i))
}

// recycle gives back the memory of a box the shard drops (see
// engine.Recycler). Only a box nothing else refers to: not one a caller
// still stores, nor one cool hands on as a spare.
func recycle(st engine.State) {
	if r, ok := st.(engine.Recycler); ok {
		r.Recycle()
	}
}

// removeAt deletes the record r in index slot pos, recording why.
func (sh *Shard) removeAt(pos int, r ref, why Event) {
	key, _ := recSplit(sh.slabs.get(r))
	sh.record(why, key, r)
	sh.drop(pos, r)
}

// drop deletes the record r in index slot pos without recording it.
func (sh *Shard) drop(pos int, r ref) {
	rec := sh.slabs.get(r)
	key, payload := recSplit(rec)
	if rec[0]&flagDirty != 0 {
		sh.ndirty-- // gone: the deletion is what a drain writes now
	}
	if sh.slotKeys != nil {
		*sh.slotCount(cluster.Slot(key)) -= 1
	}
	delta := int64(sh.slabs.slotBytes(r) + indexBytes)
	if recExp(rec) == engine.NoExpiry {
		sh.persistent--
	}
	if rec[0]&flagBoxed != 0 {
		i := boxIndex(payload)
		delta += int64(sh.boxSize[i])
		recycle(sh.boxes[i])
		sh.freeBox(i)
		sh.unheat(r)
	}
	sh.slabs.release(r)
	sh.idx.del(&sh.slabs, pos)
	sh.mem.Add(-delta)
	if sh.stuck.Load() && sh.mem.Load() <= sh.budget.Load() {
		sh.stuck.Store(false)
	}
}

// markDirty counts a change and marks record r for the next DrainChanges:
// record's part for a put, and all Redirty does for a flush that failed to
// write r (no new change to stream).
func (sh *Shard) markDirty(r ref) {
	sh.changes.Add(1)
	if !sh.track {
		return
	}
	if rec := sh.slabs.get(r); rec[0]&flagDirty == 0 {
		rec[0] |= flagDirty
		sh.ndirty++
		sh.dirty.push(r)
	}
}

// usage returns the bytes the key f found takes, as the memory bound counts
// them: its record's slot, its share of the index and a boxed state.
func (sh *Shard) usage(f Found) int {
	n := sh.slabs.slotBytes(f.ref) + indexBytes
	if f.boxed {
		n += int(sh.boxSize[boxIndex(f.pay)])
	}
	return n
}

// count returns the number of keys, counting ones that expired but were not
// yet removed.
func (sh *Shard) count() int { return sh.idx.n }

// Item is a key seen by Each: a view valid only during the callback.
type Item struct {
	Key      []byte // aliases the shard's memory: copy it to keep it
	Kind     engine.Kind
	ExpireAt int64
	ref      ref
}

// each calls fn for every live key until fn returns false. fn must not
// change the shard.
func (sh *Shard) each(now int64, fn func(Item) bool) {
	sh.idx.each(func(r ref) bool {
		rec := sh.slabs.get(r)
		if exp := recExp(rec); exp > now {
			k, _ := recSplit(rec)
			return fn(Item{Key: k, Kind: engine.Kind(rec[0] & kindMask), ExpireAt: exp, ref: r})
		}
		return true
	})
}

// state returns the state of the key it (from Each) names, as decodeCopy
// does.
func (sh *Shard) state(it Item) engine.State {
	return sh.decodeCopy(it.ref)
}

// decodeCopy returns record r's state: decoded into a new object, or the
// box itself for a state kept as an object (tests and tools: read it under
// the lock, never change it).
func (sh *Shard) decodeCopy(r ref) engine.State { return sh.stateAt(r, nil) }

// stateAt returns record r's state: its box, or its payload decoded into
// into (a new state of its kind when into is nil).
func (sh *Shard) stateAt(r ref, into engine.State) engine.State {
	rec := sh.slabs.get(r)
	_, payload := recSplit(rec)
	if rec[0]&flagBoxed != 0 {
		return sh.boxes[boxIndex(payload)]
	}
	if into == nil {
		into = engine.Kind(rec[0] & kindMask).New()
	}
	decodeInto(into, payload, recExp(rec))
	return into
}

// clear removes every key (FLUSHDB) and returns how many there were.
func (sh *Shard) clear() int {
	n := sh.idx.n
	sh.recordFlush()
	sh.idx.reset()
	sh.slabs.reset()
	if sh.slotKeys != nil {
		clear(sh.slotKeys)
	}
	sh.boxes, sh.boxSize, sh.bfree = nil, nil, nil
	sh.lastRef, sh.recent, sh.nrecent, sh.hot = 0, [HotKeys]ref{}, 0, [HotKeys]ref{}
	sh.ahead, sh.pool = evictAhead{}, evictPool{}
	sh.stuck.Store(false)
	clear(sh.spare[:])
	sh.dirty.reset()
	sh.ndirty = 0
	sh.persistent = 0
	sh.mem.Store(0)
	return n
}

const minInt64 = -1 << 63

// sweepAhead is how many slots ahead Sweep prefetches records.
const sweepAhead = 8

// sweepExpired does up to budget units of work (a slot visited or a key removed)
// from the index slot where the last sweep stopped, removing keys whose
// state became fresh by now, and returns how many it removed. Slots are
// visited in a cycle, never more than one whole pass per call, so every key
// expired at the start of a pass is gone by its end; callers sweep again at
// once while a good share of the work was removals.
func (sh *Shard) sweepExpired(now int64, budget int) int {
	sh.now = now // the clock evictOver ranks by, next
	if sh.idx.old != nil {
		// Finish a growth under way (expired keys are swept from the
		// new table): an idle server has no lookups to move it along.
		// Moving a slot costs about a quarter of sweeping one.
		sh.idx.migrate(&sh.slabs, 4*budget)
	}
	size := sh.idx.size
	if size == 0 {
		return 0
	}
	i := sh.sweep
	if i >= size {
		i = 0
	}
	removed := 0
	for adv := 0; adv < size && adv+removed < budget; {
		// The records of a run of slots lie anywhere: start loading the one
		// sweepAhead slots on while this one is read (a hint; a removal
		// may shift what lies there).
		j := i + sweepAhead
		if j >= size {
			j %= size
		}
		if sh.idx.tag(j) != 0 {
			prefetch(unsafe.Pointer(&sh.slabs.get(sh.idx.ref(j))[0]))
		}
		if sh.idx.tag(i) != 0 {
			r := sh.idx.ref(i)
			if recExp(sh.slabs.get(r)) <= now {
				sh.removeAt(i, r, EventExpire)
				sh.expired.Add(1)
				removed++
				continue // slot i now holds the next entry of its run, or nothing
			}
		}
		adv++
		if i++; i == size {
			i = 0
		}
	}
	sh.sweep = i
	return removed
}

// Change is one record a flush must write: a live key's encoded state, or
// a deletion (Deleted true, only Key set).
type Change struct {
	Key      []byte // in the buf DrainChanges was given
	Deleted  bool
	Kind     engine.Kind
	ExpireAt int64
	Payload  []byte
}

// drainChanges appends to dst the changes since the previous call, up to
// max entries of the lists (max <= 0: all), oldest first, and forgets
// them; it returns how many entries the lists still hold. Deletions come
// first: the records of the dirty list are drained only once every
// deletion is, so a key deleted then created again ends up present (a put
// drained is the key's state now, after every deletion listed so far). It
// zeroes the shard's changes-since-save count. A change's key and payload
// are in buf, which is returned grown; the payload is the state's compact
// encoding with ref its ExpireAt (the disk format, persist's version-2
// record payload): an inline record's payload is copied as is, a boxed
// state is encoded. The caller holds the lock; no I/O happens here. A
// caller draining large lists takes them in pieces, unlocking in between,
// so that no command waits for the whole of them.
func (sh *Shard) drainChanges(dst []Change, buf []byte, max int) ([]Change, []byte, int) {
	sh.changes.Store(0)
	if max <= 0 {
		max = math.MaxInt
	}
	// A change's slices stay valid when buf grows: they keep the array
	// they were cut from, which nothing writes again.
	for ; max > 0 && sh.deleted.len() > 0; max-- {
		start := len(buf)
		buf = sh.deleted.popTo(buf)
		dst = append(dst, Change{Key: buf[start:len(buf):len(buf)], Deleted: true})
	}
	for max > 0 && sh.deleted.len() == 0 {
		refs := sh.dirty.peek(max)
		if len(refs) == 0 {
			break
		}
		for i, r := range refs {
			// The records are scattered: ask for one a few ahead, so
			// that its cache miss overlaps the work on this one.
			if j := i + drainAhead; j < len(refs) {
				if rec := sh.slabs.lookup(refs[j]); rec != nil {
					prefetch(unsafe.Pointer(&rec[0]))
				}
			}
			// A ref may name a slot freed (and perhaps reused, or its
			// page given back) since it was listed: only a record still
			// flagged dirty is drained, once.
			rec := sh.slabs.lookup(r)
			if rec == nil || rec[0]&flagDirty == 0 {
				continue
			}
			rec[0] &^= flagDirty
			sh.ndirty--
			key, _ := recSplit(rec)
			exp := recExp(rec)
			start := len(buf)
			buf = append(buf, key...)
			p := len(buf)
			buf = append(buf, sh.encoded(rec, exp)...)
			dst = append(dst, Change{Key: buf[start:p:p], Kind: engine.Kind(rec[0] & kindMask), ExpireAt: exp, Payload: buf[p:len(buf):len(buf)]})
		}
		sh.dirty.drop(len(refs))
		max -= len(refs)
	}
	return dst, buf, sh.dirty.len() + sh.deleted.len()
}

// drainAhead is how many records ahead DrainChanges prefetches.
const drainAhead = 8

// A MarkCursor is where MarkAll goes on: a slab slot (slots never move).
type MarkCursor struct {
	class int
	slot  uint32
}

// markAll marks records live at now as changed, for a rewrite of the
// store, visiting up to budget slots from cur on; it reports whether it
// has visited them all. Called again and again from a zero cursor until
// done (unlocking in between), it leaves every key live at the end either
// marked or changed since (and so marked by its put): a record only moves
// to another slot when it is written.
func (sh *Shard) markAll(cur *MarkCursor, now int64, budget int) (done bool) {
	mark := func(r ref, rec []byte) {
		if rec[0] != 0 && rec[0]&flagDirty == 0 && recExp(rec) > now {
			rec[0] |= flagDirty
			sh.ndirty++
			sh.dirty.push(r)
		}
	}
	for ; cur.class < bigClass; cur.class, cur.slot = cur.class+1, 0 {
		c := uint32(cur.class)
		for n := uint32(sh.slabs.slots(c)); cur.slot < n; cur.slot++ {
			if budget--; budget < 0 {
				return false
			}
			r := c<<classShift | cur.slot
			if rec := sh.slabs.lookup(r); rec != nil {
				mark(r, rec)
			}
		}
	}
	for ; int(cur.slot) < len(sh.slabs.big); cur.slot++ {
		if budget--; budget < 0 {
			return false
		}
		if rec := sh.slabs.big[cur.slot]; rec != nil {
			mark(bigClass<<classShift|cur.slot, rec)
		}
	}
	return true
}

// redirty records keys as changed again (a flush that failed to write
// them): a live key's current state will be written by the next
// DrainChanges, a key that is gone will be deleted. The caller holds the
// lock.
func (sh *Shard) redirty(keys []string) {
	for _, k := range keys {
		f := sh.lookup([]byte(k), sh.hash.string(k))
		if f.OK {
			sh.markDirty(f.ref)
		} else if sh.track {
			sh.deleted.push([]byte(k))
			sh.changes.Add(1)
		}
	}
}

// Reserve makes room for about n keys spread over the shards, before a
// restore fills an empty keyspace: growing the index as it fills would
// rehash each key about twice.
func (s *Store) Reserve(n int) {
	per := n/len(s.shards) + n/len(s.shards)/16 + 64 // room for an uneven spread
	for i := range s.shards {
		sh := &s.shards[i]
		sh.Lock()
		sh.idx.reserve(per)
		sh.Unlock()
	}
}

// insert sets key's state, creating or replacing its record, as a change
// (tests and tools; commands go through View.Update).
func (sh *Shard) insert(key []byte, st engine.State, exp int64) {
	h := sh.hash.bytes(key)
	sh.write(sh.lookup(key, h), key, h, st, exp, true)
}

// get returns key's live state, as decodeCopy does, and its expiry (tests and
// tools).
func (sh *Shard) get(key []byte, now int64) (engine.State, int64, bool) {
	f := sh.live(key, sh.hash.bytes(key), now)
	if !f.OK {
		return nil, 0, false
	}
	return sh.decodeCopy(f.ref), f.Exp, true
}

// del removes key if it is live and reports whether it was (tests and
// tools).
func (sh *Shard) del(key []byte, now int64) bool {
	f := sh.live(key, sh.hash.bytes(key), now)
	if f.OK {
		sh.remove(f)
	}
	return f.OK
}

// randN returns a pseudo-random int below n (n > 0).
func (sh *Shard) randN(n int) int {
	x := sh.rnd
	if x == 0 {
		x = sh.hash.seed | 1
	}
	x ^= x << 13
	x ^= x >> 7
	x ^= x << 17
	sh.rnd = x
	return int((x >> 32) * uint64(n) >> 32)
}

// trimSlabs gives back the empty slab pages the shard kept as spares if
// none was used since the last TrimSlabs (the sweep calls it every tick).
func (sh *Shard) trimSlabs() { sh.slabs.trim() }

// Options configures a Store. The zero value is usable.
type Options struct {
	// Shards is the number of shards, rounded up to a power of two (at most
	// 1024). Default: the power of two nearest 4 × GOMAXPROCS.
	Shards int
	// TrackChanges records changed and deleted keys for DrainChanges
	// (persistence on). Default off.
	TrackChanges bool
	// MaxMemory bounds the bytes accounted for limiter state (0: no bound).
	MaxMemory int64
	// FeedBytes bounds each shard's change stream (Store.Subscribe), a
	// ring allocated while someone subscribes. Default DefaultFeedBytes.
	FeedBytes int
	// Seed seeds the key hash, which picks each key's shard and index
	// slot. Default (0): drawn at random. Tests set it, and print it, so
	// that a failure reproduces.
	Seed uint64
	// Cluster places keys by their Redis Cluster hash slot: a slot's keys
	// all live in shard slot mod Shards, which counts them per slot, so
	// that a slot's keys are counted at once and listed (or streamed to
	// another node) from one shard.
	Cluster bool
	// Now is the server clock (Unix ns), read to stamp the keys written
	// by no command, which brings its own instant: restored and
	// replicated ones. Default: the wall clock.
	Now func() int64
}

// MaxShards is the largest shard count; SCAN cursors depend on it.
const MaxShards = 1024

// Store is the keyspace. Its methods are safe for concurrent use; the shards
// it hands out must be locked by the caller.
type Store struct {
	shards  []Shard
	mask    uint64
	hash    hasher
	cluster bool

	feedBytes int
}

// New returns an empty store.
func New(opts Options) *Store {
	n := opts.Shards
	if n <= 0 {
		n = DefaultShards()
	}
	n = min(1<<bits.Len(uint(n-1)), MaxShards)
	seed := opts.Seed
	if seed == 0 {
		seed = randomSeed()
	}
	s := &Store{shards: make([]Shard, n), mask: uint64(n - 1), hash: hasher{seed}, feedBytes: opts.FeedBytes, cluster: opts.Cluster}
	if s.feedBytes <= 0 {
		s.feedBytes = DefaultFeedBytes
	}
	now := opts.Now
	if now == nil {
		now = func() int64 { return time.Now().UnixNano() }
	}
	for i := range s.shards {
		s.shards[i].track = opts.TrackChanges
		s.shards[i].clock = now
		s.shards[i].lfuLog.Store(DefaultLFULogFactor)
		s.shards[i].lfuDecay.Store(DefaultLFUDecayTime)
		s.shards[i].samples.Store(DefaultMaxMemorySamples)
		s.shards[i].hash = s.hash
		s.shards[i].idx.hash = s.hash
		if opts.Cluster {
			// A shard holds the slots whose low bits are its index
			// (Hash): its counts are those slots' only, kept dense, so
			// that counting a new key touches a small array.
			s.shards[i].slotBits = uint8(bits.TrailingZeros(uint(n)))
			s.shards[i].slotKeys = make([]uint32, max(cluster.Slots>>s.shards[i].slotBits, 1))
		}
	}
	s.SetMaxMemory(opts.MaxMemory)
	return s
}

// DefaultShards is the power of two nearest 4 × GOMAXPROCS.
func DefaultShards() int {
	want := 4 * runtime.GOMAXPROCS(0)
	lo := 1 << (bits.Len(uint(want)) - 1)
	if want-lo <= 2*lo-want {
		return lo
	}
	return 2 * lo
}

// SetMaxMemory changes the memory bound (0: none); it applies from the next
// insert.
func (s *Store) SetMaxMemory(bytes int64) {
	per := bytes / int64(len(s.shards))
	if bytes > 0 && per == 0 {
		per = 1
	}
	for i := range s.shards {
		s.shards[i].budget.Store(per)
	}
}

// NumShards returns the shard count, a power of two.
func (s *Store) NumShards() int { return len(s.shards) }

// Hash returns key's hash: it picks the shard (ShardOf) and the key's place
// in it (Find), so a command hashes its key once. In cluster mode its low
// bits, which pick the shard, are the key's slot's (the index uses the
// others).
func (s *Store) Hash(key []byte) uint64 {
	h := s.hash.bytes(key)
	if s.cluster {
		h = h&^s.mask | uint64(cluster.Slot(key))&s.mask
	}
	return h
}

// Seed returns the hash seed (Options.Seed, or the one drawn at random).
func (s *Store) Seed() uint64 { return s.hash.seed }

// ShardIndexOf returns the index of the shard holding the key of hash h.
func (s *Store) ShardIndexOf(h uint64) int { return int(h & s.mask) }

// ShardOf returns the shard holding the key of hash h.
func (s *Store) ShardOf(h uint64) *Shard { return &s.shards[h&s.mask] }

// ShardIndex returns the index of the shard holding key.
func (s *Store) ShardIndex(key []byte) int { return s.ShardIndexOf(s.Hash(key)) }

// Shard returns shard i.
func (s *Store) Shard(i int) *Shard { return &s.shards[i] }

// ShardFor returns the shard holding key.
func (s *Store) ShardFor(key []byte) *Shard { return &s.shards[s.ShardIndex(key)] }

// Stats are keyspace totals, read without locks (so only approximately
// consistent with each other).
type Stats struct {
	Memory, Changes, Expired, Evicted int64
}

// ResetStats zeroes the expired and evicted counters (CONFIG RESETSTAT).
func (s *Store) ResetStats() {
	for i := range s.shards {
		s.shards[i].expired.Store(0)
		s.shards[i].evicted.Store(0)
	}
}

// Pending returns how many keys wait for the next DrainChanges: changed
// ones and removed ones (a key removed and created again within one drain
// counts twice), as of each shard's last unlock. It takes no lock.
func (s *Store) Pending() int {
	n := 0
	for i := range s.shards {
		n += int(s.shards[i].pending.Load())
	}
	return n
}

// Memory returns the bytes the keyspace holds (what --maxmemory bounds).
func (s *Store) Memory() int64 {
	var n int64
	for i := range s.shards {
		n += s.shards[i].mem.Load()
	}
	return n
}

// Stats sums the shards' counters.
func (s *Store) Stats() Stats {
	var st Stats
	for i := range s.shards {
		sh := &s.shards[i]
		st.Memory += sh.mem.Load()
		st.Changes += sh.changes.Load()
		st.Expired += sh.expired.Load()
		st.Evicted += sh.evicted.Load()
	}
	return st
}
