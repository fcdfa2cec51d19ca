package persist

import (
	"bytes"

	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/shard"
)

// The tests change the keyspace the way commands do, through View's
// read-modify-write (Update, Delete), so what the saver sees is what a
// server's changes leave it.

// takeOp takes n from a limiter of kind S with parameters P, as the
// command layer's op does: a take that denies changes nothing.
type takeOp[P any, S interface {
	engine.State
	Take(now int64, p P, n int64) engine.Decision
	Check(now int64, p P, n int64) engine.Decision
}] struct {
	p P
	n int64
}

func (o takeOp[P, S]) Kind() engine.Kind {
	var s S
	return s.Kind()
}

func (o takeOp[P, S]) Run(st engine.State, now int64, commit bool) (engine.Decision, bool, bool) {
	s := st.(S)
	if !commit {
		return s.Check(now, o.p, o.n), false, true
	}
	d := s.Take(now, o.p, o.n)
	return d, d.Allowed && o.n > 0, true
}

// tokenTake takes n tokens of key under p at now.
func tokenTake(keys *shard.Store, key []byte, now int64, p engine.TokenBucketParams, n int64) engine.Decision {
	d, _ := keys.View().Update(key, now, takeOp[engine.TokenBucketParams, *engine.TokenBucket]{p, n})
	return d
}

// liveState returns a copy of key's state and its expiry, and whether it
// is live at now.
func liveState(keys *shard.Store, key []byte, now int64) (st engine.State, exp int64, ok bool) {
	sh := keys.ShardFor(key)
	lk := sh.Lock()
	defer sh.Unlock()
	lk.Each(now, func(it shard.Item) bool {
		if !bytes.Equal(it.Key, key) {
			return true
		}
		st, exp, ok = lk.State(it), it.ExpireAt, true
		return false
	})
	return st, exp, ok
}

// deleteKey removes key if it is live at now, and reports whether it was.
func deleteKey(keys *shard.Store, key []byte, now int64) bool {
	n, _ := keys.View().Delete([][]byte{key}, now)
	return n == 1
}
