package resp

import (
	"strconv"
	"unsafe"

	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/shard"
)

// withKey runs fn on what Live finds for key under its shard lock: f.OK
// only for a live key.
func withKey(c *Conn, key []byte, fn func(sh *shard.Shard, f shard.Found, now int64)) {
	now := c.now()
	store := c.srv.store
	h := store.Hash(key)
	sh := store.ShardOf(h)
	c.lock(sh)
	fn(sh, sh.Live(key, h, now), now)
	c.unlock(sh)
}

// EXISTS key [key ...]
func cmdExists(c *Conn, args [][]byte) {
	var n int64
	for _, k := range args[1:] {
		withKey(c, k, func(_ *shard.Shard, f shard.Found, _ int64) {
			if f.OK {
				n++
			}
		})
	}
	c.out = appendInt(c.out, n)
}

// DEL key [key ...] and UNLINK key [key ...]
func cmdDel(c *Conn, args [][]byte) {
	var n int64
	for _, k := range args[1:] {
		withKey(c, k, func(sh *shard.Shard, f shard.Found, _ int64) {
			if f.OK {
				sh.Remove(f)
				n++
			}
		})
	}
	c.out = appendInt(c.out, n)
}

// TYPE key
func cmdType(c *Conn, args [][]byte) {
	name := "none"
	withKey(c, args[1], func(_ *shard.Shard, f shard.Found, _ int64) {
		if f.OK {
			name = f.Kind.String()
		}
	})
	c.out = appendStatus(c.out, name)
}

// pttl returns the key's time to live in ms rounded up (equal to the
// decision's reset_after_ms), or -2 when it does not exist.
func pttl(c *Conn, key []byte) int64 {
	ms := int64(-2)
	withKey(c, key, func(_ *shard.Shard, f shard.Found, now int64) {
		if f.OK {
			ms = (f.Exp - now + 999_999) / 1_000_000
		}
	})
	return ms
}

func cmdPTTL(c *Conn, args [][]byte) { c.out = appendInt(c.out, pttl(c, args[1])) }

// TTL rounds like Redis: (ms + 500) / 1000.
func cmdTTL(c *Conn, args [][]byte) {
	ms := pttl(c, args[1])
	if ms >= 0 {
		ms = (ms + 500) / 1000
	}
	c.out = appendInt(c.out, ms)
}

// SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]
func cmdScan(c *Conn, args [][]byte) {
	cursor, err := strconv.ParseUint(string(args[1]), 10, 64)
	if err != nil {
		c.err(ErrInvalidCursor)
		return
	}
	var pattern []byte
	count := 10
	var kind engine.Kind
	for i := 2; i < len(args); i += 2 {
		if i+1 >= len(args) {
			c.err(ErrSyntax)
			return
		}
		v := args[i+1]
		switch {
		case equalFold(args[i], "MATCH"):
			pattern = v
		case equalFold(args[i], "COUNT"):
			n, ok := ParseInt(v)
			if !ok {
				c.err(ErrNotInt)
				return
			}
			if n < 1 {
				c.err(ErrSyntax)
				return
			}
			count = int(min(n, 1<<20))
		case equalFold(args[i], "TYPE"):
			k, ok := engine.ParseKind(string(v))
			if !ok {
				c.err(ErrUnknownType(v))
				return
			}
			kind = k
		default:
			c.err(ErrSyntax)
			return
		}
	}
	now := c.now()
	next, keys := c.srv.store.Scan(cursor, count, now, c.inExec, func(it shard.Item) bool {
		return (kind == 0 || it.Kind == kind) && (pattern == nil || globMatch(pattern, unsafe.String(unsafe.SliceData(it.Key), len(it.Key))))
	})
	c.out = appendArray(c.out, 2)
	c.out = appendBulkStr(c.out, strconv.FormatUint(next, 10))
	c.out = appendArray(c.out, len(keys))
	for _, k := range keys {
		c.out = appendBulkStr(c.out, k)
	}
}

// KEYS pattern
func cmdKeys(c *Conn, args [][]byte) {
	now := c.now()
	var keys []string
	store := c.srv.store
	for i := 0; i < store.NumShards(); i++ {
		sh := store.Shard(i)
		c.lock(sh)
		sh.Each(now, func(it shard.Item) bool {
			if k := unsafe.String(unsafe.SliceData(it.Key), len(it.Key)); globMatch(args[1], k) {
				keys = append(keys, string(it.Key))
			}
			return true
		})
		c.unlock(sh)
	}
	c.out = appendArray(c.out, len(keys))
	for _, k := range keys {
		c.out = appendBulkStr(c.out, k)
	}
}

// dbsize counts keys in O(shards), as Redis's DBSIZE does: like Redis, it
// includes keys whose state became fresh but that neither an access nor
// the active sweep has removed yet.
func (c *Conn) dbsize() int64 {
	var n int64
	store := c.srv.store
	for i := 0; i < store.NumShards(); i++ {
		sh := store.Shard(i)
		c.lock(sh)
		n += int64(sh.Len())
		c.unlock(sh)
	}
	return n
}

func cmdDBSize(c *Conn, args [][]byte) { c.out = appendInt(c.out, c.dbsize()) }

// FLUSHDB [ASYNC|SYNC] and FLUSHALL [ASYNC|SYNC]
func cmdFlush(c *Conn, args [][]byte) {
	if len(args) == 2 && !equalFold(args[1], "ASYNC") && !equalFold(args[1], "SYNC") {
		c.err(ErrSyntax)
		return
	}
	store := c.srv.store
	for i := 0; i < store.NumShards(); i++ {
		sh := store.Shard(i)
		c.lock(sh)
		sh.Clear()
		c.unlock(sh)
	}
	c.out = appendOK(c.out)
}
