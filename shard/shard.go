// Package shard is rlserver's keyspace: limiter states in N shards, each a
// map plus an expiry index under its own mutex.
//
// Locking: callers lock a shard (Lock/Unlock) around every use of its
// methods and of the entries it returns; commands touching several shards
// lock them in index order. Nothing here blocks on I/O.
package shard

import (
	"hash/maphash"
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/rlserver/rlserver/engine"
)

// entryOverhead estimates the heap bytes an entry costs besides its key and
// state: the Entry struct, the map slot and the expiry index reference.
const entryOverhead = 96

// Entry is one limiter key. Its fields are guarded by its shard's mutex.
type Entry struct {
	Key   string
	State engine.State
	exp   int64 // absolute expiry, server-clock Unix ns
	filed int64 // expiry bucket this entry is filed in, or notFiled
	size  int32 // bytes accounted for this entry
	dirty bool  // in the shard's dirty list
	dead  bool  // removed from the map
}

// ExpireAt returns the entry's absolute expiry in server-clock Unix ns.
func (e *Entry) ExpireAt() int64 { return e.exp }

// Shard is one part of the keyspace. Use it only while holding its lock.
type Shard struct {
	mu      sync.Mutex
	m       map[string]*Entry
	idx     expiryIndex
	track   bool     // record changes for persistence
	dirty   []*Entry // entries changed since the last DrainChanges
	deleted []string // keys removed since the last DrainChanges

	mem     atomic.Int64 // bytes accounted, readable without the lock
	changes atomic.Int64 // writes since the last save
	expired atomic.Int64 // keys removed because their state became fresh
	evicted atomic.Int64 // keys removed by the memory bound
	budget  atomic.Int64 // memory bound for this shard (0: none)
	_       [64]byte     // keep neighbouring shards' locks off one cache line
}

// Lock locks the shard.
func (sh *Shard) Lock() { sh.mu.Lock() }

// Unlock unlocks the shard.
func (sh *Shard) Unlock() { sh.mu.Unlock() }

// Get returns the live entry for key, or nil. An entry found expired is
// removed (lazy expiry).
func (sh *Shard) Get(key []byte, now int64) *Entry {
	e := sh.m[string(key)]
	if e == nil {
		return nil
	}
	if e.exp <= now {
		sh.Expire(e)
		return nil
	}
	return e
}

// Lookup returns key's entry even if it has expired (then its state is a
// fresh key's): the caller may Revive it in place, saving an allocation and
// two map operations, or Expire it.
func (sh *Shard) Lookup(key []byte) *Entry { return sh.m[string(key)] }

// Expire removes an entry whose state became fresh.
func (sh *Shard) Expire(e *Entry) {
	sh.remove(e)
	sh.expired.Add(1)
}

// Revive gives an expired entry (found by Lookup), whose state the caller
// has reset and used again, the expiry exp, as if it were new.
func (sh *Shard) Revive(e *Entry, exp int64) {
	sh.expired.Add(1)
	sh.Update(e, exp, true)
}

// inlineKey is the longest key stored inside its entry's allocation.
const inlineKey = 24

// block is an Entry allocated together with its state and, when short, its
// key: a lookup then touches one allocation instead of three (the map's key
// comparison, the entry and the state are neighbours in memory), which is
// what random-key workloads wait on.
type block[T any] struct {
	Entry
	state T
	key   [inlineKey]byte
}

// NewEntry returns an entry for key holding a fresh state of type T (P is
// *T), allocated in one piece, for Add.
func NewEntry[T any, P interface {
	*T
	engine.State
}](key []byte) (*Entry, P) {
	b := &block[T]{}
	b.filed = notFiled
	if len(key) <= inlineKey {
		n := copy(b.key[:], key)
		b.Key = unsafe.String(&b.key[0], n)
	} else {
		b.Key = string(key)
	}
	st := P(&b.state)
	b.State = st
	return &b.Entry, st
}

// Insert adds a new entry for key (which must not be live) expiring at exp.
func (sh *Shard) Insert(key []byte, st engine.State, exp int64) *Entry {
	e := &Entry{Key: string(key), State: st, filed: notFiled}
	sh.Add(e, exp)
	return e
}

// Add adds e, made by NewEntry, whose key must not be live, expiring at
// exp.
func (sh *Shard) Add(e *Entry, exp int64) {
	sh.link(e, exp)
	sh.markDirty(e)
	if b := sh.budget.Load(); b > 0 && sh.mem.Load() > b {
		sh.evict(e)
	}
}

// Restore adds an entry loaded from disk: like Insert, but not recorded as a
// change (the disk already holds it) and never evicting.
func (sh *Shard) Restore(key []byte, st engine.State, exp int64) {
	if old := sh.m[string(key)]; old != nil {
		// A key restored twice: the later record wins. The disk holds
		// it, so this is no deletion to record.
		old.dead, old.filed = true, notFiled
		sh.mem.Add(-int64(old.size))
	}
	sh.link(&Entry{Key: string(key), State: st, filed: notFiled}, exp)
}

// link puts e in the map and the expiry index and accounts for it.
func (sh *Shard) link(e *Entry, exp int64) {
	if sh.m == nil {
		sh.m = make(map[string]*Entry)
	}
	e.exp = exp
	sh.m[e.Key] = e
	sh.idx.file(e)
	sh.account(e)
}

// Update records that e's state may have changed (changed) and now expires
// at exp.
func (sh *Shard) Update(e *Entry, exp int64, changed bool) {
	if exp != e.exp {
		e.exp = exp
		sh.idx.file(e)
		changed = true
	}
	if changed {
		sh.account(e)
		sh.markDirty(e)
	}
}

// Remove deletes e from the shard.
func (sh *Shard) Remove(e *Entry) { sh.remove(e) }

// Len returns the number of entries, counting ones that expired but were not
// yet swept.
func (sh *Shard) Len() int { return len(sh.m) }

// Each calls fn for every live entry until fn returns false.
func (sh *Shard) Each(now int64, fn func(*Entry) bool) {
	for _, e := range sh.m {
		if e.exp > now && !fn(e) {
			return
		}
	}
}

// Clear removes every entry (FLUSHDB) and returns how many there were.
func (sh *Shard) Clear() int {
	n := len(sh.m)
	for _, e := range sh.m {
		e.dead = true
		if sh.track {
			sh.deleted = append(sh.deleted, e.Key)
		}
	}
	sh.m = nil
	sh.idx.reset()
	sh.dirty = sh.dirty[:0]
	sh.mem.Store(0)
	sh.changes.Add(int64(n))
	return n
}

// Sweep removes up to budget entries whose state became fresh by now,
// earliest first, and re-files entries whose expiry moved later. It returns
// the work done. The caller holds the lock.
func (sh *Shard) Sweep(now int64, budget int) int {
	return sh.idx.due(now, budget, func(e *Entry) {
		if e.exp <= now {
			sh.remove(e)
			sh.expired.Add(1)
			return
		}
		sh.idx.file(e)
	})
}

// Change is one record a flush must write: a live entry's encoded state, or
// a deletion (Deleted true, only Key set).
type Change struct {
	Key      string
	Deleted  bool
	Kind     engine.Kind
	ExpireAt int64
	Payload  []byte
}

// DrainChanges appends to dst every change since the previous call,
// deletions first (so that a key deleted then created again ends up
// present), forgets them and zeroes the shard's changes-since-save count.
// Payloads are encoded into buf, which is returned grown. The caller holds
// the lock; no I/O happens here.
func (sh *Shard) DrainChanges(dst []Change, buf []byte) ([]Change, []byte, error) {
	sh.changes.Store(0)
	for _, k := range sh.deleted {
		dst = append(dst, Change{Key: k, Deleted: true})
	}
	clear(sh.deleted)
	sh.deleted = sh.deleted[:0]
	for i, e := range sh.dirty {
		sh.dirty[i] = nil
		e.dirty = false
		if e.dead {
			continue
		}
		start := len(buf)
		var err error
		buf, err = e.State.AppendBinary(buf)
		if err != nil {
			return dst, buf, err
		}
		dst = append(dst, Change{Key: e.Key, Kind: e.State.Kind(), ExpireAt: e.exp, Payload: buf[start:len(buf):len(buf)]})
	}
	sh.dirty = sh.dirty[:0]
	return dst, buf, nil
}

// Redirty records keys as changed again (a flush that failed to write
// them): a live key's current state will be written by the next
// DrainChanges, a key that is gone will be deleted. The caller holds the
// lock.
func (sh *Shard) Redirty(keys []string) {
	for _, k := range keys {
		if e := sh.m[k]; e != nil && !e.dead {
			sh.markDirty(e)
		} else if sh.track {
			sh.deleted = append(sh.deleted, k)
			sh.changes.Add(1)
		}
	}
}

func (sh *Shard) remove(e *Entry) {
	if e.dead {
		return
	}
	delete(sh.m, e.Key)
	e.dead = true
	e.filed = notFiled
	sh.mem.Add(-int64(e.size))
	if sh.track {
		sh.deleted = append(sh.deleted, e.Key)
	}
	sh.changes.Add(1)
}

func (sh *Shard) account(e *Entry) {
	size := int32(entryOverhead + len(e.Key) + e.State.Size())
	if size != e.size {
		sh.mem.Add(int64(size - e.size))
		e.size = size
	}
}

func (sh *Shard) markDirty(e *Entry) {
	sh.changes.Add(1)
	if sh.track && !e.dirty {
		e.dirty = true
		sh.dirty = append(sh.dirty, e)
	}
}

// evict removes the entries closest to their fresh state (earliest expiry
// first) until the shard is within its budget, sparing keep.
func (sh *Shard) evict(keep *Entry) {
	var victims []*Entry
	need := sh.mem.Load() - sh.budget.Load()
	sh.idx.earliest(func(e *Entry) bool {
		if e != keep && !e.dead {
			victims = append(victims, e)
			need -= int64(e.size)
		}
		return need > 0
	})
	for _, e := range victims {
		sh.remove(e)
		sh.evicted.Add(1)
	}
}

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
}

// MaxShards is the largest shard count; SCAN cursors depend on it.
const MaxShards = 1024

// Store is the keyspace. Its methods are safe for concurrent use; the shards
// it hands out must be locked by the caller.
type Store struct {
	shards []Shard
	mask   uint64
	seed   maphash.Seed
}

// New returns an empty store.
func New(opts Options) *Store {
	n := opts.Shards
	if n <= 0 {
		n = DefaultShards()
	}
	n = min(1<<bits.Len(uint(n-1)), MaxShards)
	s := &Store{shards: make([]Shard, n), mask: uint64(n - 1), seed: maphash.MakeSeed()}
	for i := range s.shards {
		s.shards[i].track = opts.TrackChanges
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

// ShardIndex returns the index of the shard holding key.
func (s *Store) ShardIndex(key []byte) int {
	return int(maphash.Bytes(s.seed, key) & s.mask)
}

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
