package shard

import "github.com/rlserver/rlserver/engine"

// The keyspace's generic key commands (EXISTS, TOUCH, TYPE, TTL, DEL,
// MEMORY USAGE, KEYS, DBSIZE, FLUSHALL): each takes the locks it needs
// through the view, like Update.

// KeyInfo is what the keyspace tells of a live key.
type KeyInfo struct {
	Kind engine.Kind
	Exp  int64 // its expiry: server-clock ns
}

// withLive runs fn on what live finds for key under its shard's lock: f.OK
// only for a key live at now (an expired record found is removed).
func (v View) withLive(key []byte, now int64, fn func(sh *Shard, f Found)) {
	h := v.s.Hash(key)
	sh := v.s.ShardOf(h)
	v.lock(sh)
	fn(sh, sh.live(key, h, now))
	v.unlock(sh)
}

// Lookup returns key's kind and expiry, and whether it is live at now.
func (v View) Lookup(key []byte, now int64) (KeyInfo, bool) {
	var ki KeyInfo
	var ok bool
	v.withLive(key, now, func(_ *Shard, f Found) {
		ki, ok = KeyInfo{Kind: f.Kind, Exp: f.Exp}, f.OK
	})
	return ki, ok
}

// Touch stamps the live ones of keys as accessed at now, as a read does
// (TOUCH), and returns how many were live: a key given twice counts
// twice.
func (v View) Touch(keys [][]byte, now int64) int {
	n := 0
	for _, k := range keys {
		v.withLive(k, now, func(sh *Shard, f Found) {
			if f.OK {
				sh.now = now
				sh.touch(f.acc)
				n++
			}
		})
	}
	return n
}

// usage returns the bytes key's record, its share of the index and any
// state kept as an object take (what the memory bound counts), and false
// for a key not live at now.
func (v View) Usage(key []byte, now int64) (int, bool) {
	n, ok := 0, false
	v.withLive(key, now, func(sh *Shard, f Found) {
		if f.OK {
			n, ok = sh.usage(f), true
		}
	})
	return n, ok
}

// Delete removes the live ones of keys and returns how many it removed.
// A key whose slot is frozen (cluster mode, see Store.Freeze) stops it:
// that key and the ones after it stay, and the status is Moving. (The
// keys of one cluster-mode command share a slot, so then none was
// removed.)
func (v View) Delete(keys [][]byte, now int64) (int, Status) {
	n, st := 0, Done
	for _, k := range keys {
		v.withLive(k, now, func(sh *Shard, f Found) {
			if st == Moving || sh.frozenKey(k) {
				st = Moving
				return
			}
			if f.OK {
				sh.remove(f)
				n++
			}
		})
	}
	return n, st
}

// Keys returns, copied, the keys live at now that match reports true for,
// a shard at a time.
func (v View) Keys(now int64, match func(Item) bool) []string {
	var keys []string
	for i := range v.s.shards {
		sh := &v.s.shards[i]
		v.lock(sh)
		sh.each(now, func(it Item) bool {
			if match(it) {
				keys = append(keys, string(it.Key))
			}
			return true
		})
		v.unlock(sh)
	}
	return keys
}

// Len counts the keys in O(shards), including, as Redis's DBSIZE does,
// ones whose state became fresh that neither an access nor the active
// sweep has removed yet.
func (v View) Len() int {
	n := 0
	for i := range v.s.shards {
		sh := &v.s.shards[i]
		v.lock(sh)
		n += sh.idx.n
		v.unlock(sh)
	}
	return n
}

// Expiring counts the keys that have an expiry (INFO keyspace's expires):
// every limiter key, and the values given a TTL.
func (v View) Expiring() int {
	n := 0
	for i := range v.s.shards {
		sh := &v.s.shards[i]
		v.lock(sh)
		n += sh.idx.n - sh.persistent
		v.unlock(sh)
	}
	return n
}

// Flush removes every key, a shard at a time (FLUSHALL).
func (v View) Flush() {
	for i := range v.s.shards {
		sh := &v.s.shards[i]
		v.lock(sh)
		sh.clear()
		v.unlock(sh)
	}
}
