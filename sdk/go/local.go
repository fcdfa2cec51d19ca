package rlserver

import (
	"sync"
	"time"
)

// localStore holds the in-process fallback state (FailLocal): a token
// bucket per limiter and key, of the limiter's limit refilled over its
// window, and a count of locally held leases. It is approximate by design
// (per process, not shared) and only answers while the server is away.
type localStore struct {
	mu      sync.Mutex
	now     func() time.Time
	buckets map[string]*localBucket
	held    map[string]int64
}

type localBucket struct {
	tokens float64
	at     time.Time
}

// maxLocalKeys bounds the fallback state; full buckets are dropped past it.
const maxLocalKeys = 100_000

func newLocalStore(now func() time.Time) *localStore {
	return &localStore{now: now, buckets: map[string]*localBucket{}, held: map[string]int64{}}
}

// take decides n units for key under s; peek decides without consuming.
func (ls *localStore) take(s spec, key string, n int64, peek bool) Decision {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	now := ls.now()
	id := s.id + "\x00" + key
	b := ls.buckets[id]
	if b == nil {
		if len(ls.buckets) >= maxLocalKeys {
			ls.prune(s, now)
		}
		b = &localBucket{tokens: float64(s.limit), at: now}
		ls.buckets[id] = b
	}
	perUnit := float64(s.window) / float64(s.limit)
	if el := now.Sub(b.at); el > 0 {
		b.tokens = min(float64(s.limit), b.tokens+float64(el)/perUnit)
	}
	b.at = now
	d := Decision{Limit: s.limit, Fallback: true}
	switch {
	case n > s.limit:
		d.RetryAfter = Never
	case b.tokens >= float64(n):
		d.Allowed = true
		if !peek {
			b.tokens -= float64(n)
		}
	default:
		d.RetryAfter = time.Duration((float64(n) - b.tokens) * perUnit)
	}
	d.Remaining = int64(b.tokens)
	d.ResetAfter = time.Duration((float64(s.limit) - b.tokens) * perUnit)
	return d
}

// prune drops buckets that have refilled, which a fresh one equals.
func (ls *localStore) prune(s spec, now time.Time) {
	for id, b := range ls.buckets {
		if now.Sub(b.at) >= s.window {
			delete(ls.buckets, id)
		}
	}
}

// acquire takes n of limit local lease units for key; release gives them back.
func (ls *localStore) acquire(s spec, key string, n int64) bool {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	id := s.id + "\x00" + key
	if ls.held[id]+n > s.limit {
		return false
	}
	ls.held[id] += n
	return true
}

func (ls *localStore) release(s spec, key string, n int64) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	id := s.id + "\x00" + key
	if ls.held[id] -= n; ls.held[id] <= 0 {
		delete(ls.held, id)
	}
}
