package persist

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
)

// MemStore is a Store that keeps records in memory, encoded exactly as
// PebbleStore stores them, so it has the same semantics (corrupt values,
// expiry, ordering) without a disk. It serves --dir "" and tests of other
// packages. It is safe for concurrent use. The zero value is not usable:
// call NewMemStore.
type MemStore struct {
	mu     sync.RWMutex
	m      map[string][]byte // limiter key -> stored value; values are never mutated
	closed bool
	// A rewrite under way: the keys applied since BeginRewrite (nil: none).
	rewrite     map[string]bool
	base, since int64 // Sizes
}

var _ Store = (*MemStore)(nil)

// NewMemStore returns an empty MemStore. Close releases its memory.
func NewMemStore() *MemStore { return &MemStore{m: make(map[string][]byte)} }

// Len returns how many records the store holds (expired ones included until
// Load drops them).
func (s *MemStore) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.m)
}

// Apply implements Store.
func (s *MemStore) Apply(puts []Record, deletes [][]byte) error {
	for i := range puts {
		if err := checkRecord(&puts[i]); err != nil {
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	for i := range puts {
		v := appendValue(nil, &puts[i])
		s.m[string(puts[i].Key)] = v
		s.since += int64(len(puts[i].Key) + len(v))
		if s.rewrite != nil {
			s.rewrite[string(puts[i].Key)] = true
		}
	}
	for _, k := range deletes {
		delete(s.m, string(k))
		s.since += int64(len(k))
		if s.rewrite != nil {
			delete(s.rewrite, string(k))
		}
	}
	return nil
}

// BeginRewrite implements Store.
func (s *MemStore) BeginRewrite() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	s.rewrite, s.since = make(map[string]bool), 0
	return nil
}

// CommitRewrite implements Store: the keys not applied since BeginRewrite
// go.
func (s *MemStore) CommitRewrite() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if s.rewrite == nil {
		return errors.New("persist: CommitRewrite without BeginRewrite")
	}
	for k := range s.m {
		if !s.rewrite[k] {
			delete(s.m, k)
		}
	}
	s.rewrite, s.base, s.since = nil, s.since, 0
	return nil
}

// KeysHint implements Store.
func (s *MemStore) KeysHint() int { return s.Len() }

// Sizes implements Store.
func (s *MemStore) Sizes() (rewrite, since int64) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.base, s.since
}

// Writable implements Store: memory takes any write while the store is
// open.
func (s *MemStore) Writable(int) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	return nil
}

// Sync implements Store; there is nothing to make durable.
func (s *MemStore) Sync() error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	return nil
}

type memEntry struct {
	key   string
	value []byte
}

// snapshot returns the records sorted by key. The values are shared, which
// is safe because they are never mutated.
func (s *MemStore) snapshot() ([]memEntry, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, ErrClosed
	}
	ents := make([]memEntry, 0, len(s.m))
	for k, v := range s.m {
		ents = append(ents, memEntry{k, v})
	}
	slices.SortFunc(ents, func(a, b memEntry) int {
		switch {
		case a.key < b.key:
			return -1
		case a.key > b.key:
			return 1
		}
		return 0
	})
	return ents, nil
}

// Load implements Store. fn runs without the store's lock held, on a
// snapshot taken when Load starts, in key order (each key once).
func (s *MemStore) Load(now int64, fn func(Record) error) (LoadStats, error) {
	var st LoadStats
	ents, err := s.snapshot()
	if err != nil {
		return st, err
	}
	var key []byte
	for _, e := range ents {
		key = appendKey(key[:0], []byte(e.key))
		r, derr := decodeRecord(key, e.value)
		if err := loadStep(&st, now, r, derr, fn); err != nil {
			return st, err
		}
	}
	return st, nil
}

// Checkpoint implements Store by writing the records to a new Pebble store
// in dir, which must not exist yet; Open reads it back.
func (s *MemStore) Checkpoint(dir string) error {
	ents, err := s.snapshot()
	if err != nil {
		return err
	}
	if _, err := os.Stat(dir); err == nil || !os.IsNotExist(err) {
		if err == nil {
			err = os.ErrExist
		}
		return fmt.Errorf("persist: checkpoint %s: %w", dir, err)
	}
	ps, err := Open(&Options{Dir: dir, Fsync: FsyncNo})
	if err != nil {
		return fmt.Errorf("persist: checkpoint: %w", err)
	}
	const chunk = 10_000
	var puts []Record
	for i, e := range ents {
		// Stored values were validated by Apply, but a test may have put a
		// corrupt one: copy it verbatim, as a Pebble checkpoint would.
		if r, derr := decodeRecord(appendKey(nil, []byte(e.key)), e.value); derr == nil {
			puts = append(puts, r)
		} else if err = ps.putRaw(appendKey(nil, []byte(e.key)), e.value); err != nil {
			break
		}
		if len(puts) == chunk || i == len(ents)-1 {
			if err = ps.Apply(puts, nil); err != nil {
				break
			}
			puts = puts[:0]
		}
	}
	if err == nil {
		err = ps.Sync()
	}
	if cerr := ps.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("persist: checkpoint %s: %w", dir, err)
	}
	return nil
}

// Close implements Store and drops the records.
func (s *MemStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.m = nil
	return nil
}

// putRaw stores an already encoded key/value pair verbatim (see
// PebbleStore.putRaw). Keys outside the record keyspace are ignored, as Load
// would ignore them.
func (s *MemStore) putRaw(key, value []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if len(key) > 0 && key[0] == prefixRecord {
		s.m[string(key[1:])] = slices.Clone(value)
	}
	return nil
}
