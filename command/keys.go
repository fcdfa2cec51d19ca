package command

import (
	"strconv"
	"unsafe"

	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/resp"
	"github.com/rlserver/rlserver/shard"
)

// EXISTS key [key ...]
func cmdExists(c *Ctx, args [][]byte) {
	var n int64
	keys, now := c.keys(), c.Now()
	for _, k := range args[1:] {
		if _, ok := keys.Lookup(k, now); ok {
			n++
		}
	}
	c.W.Int(n)
}

// TOUCH key [key ...]: EXISTS that stamps each key found as read, for
// OBJECT IDLETIME and FREQ and eviction, as Redis's.
func cmdTouch(c *Ctx, args [][]byte) {
	c.W.Int(int64(c.keys().Touch(args[1:], c.Now())))
}

// DEL key [key ...] and UNLINK key [key ...]
func cmdDel(c *Ctx, args [][]byte) {
	n, st := c.keys().Delete(args[1:], c.Now())
	if st != shard.Done {
		c.notDone(st) // keys of one slot (cluster mode): none was removed
		return
	}
	c.W.Int(int64(n))
}

// TYPE key
func cmdType(c *Ctx, args [][]byte) {
	name := "none"
	if ki, ok := c.keys().Lookup(args[1], c.Now()); ok {
		name = ki.Kind.String()
	}
	c.W.Status(name)
}

// pttl returns the key's time to live in ms rounded up (equal to the
// decision's reset_after_ms), -1 for a key without one, or -2 when it
// does not exist.
func pttl(c *Ctx, key []byte) int64 {
	now := c.Now()
	ki, ok := c.keys().Lookup(key, now)
	switch {
	case !ok:
		return -2
	case ki.Exp == engine.NoExpiry:
		return -1
	}
	return (ki.Exp - now + 999_999) / 1_000_000
}

func cmdPTTL(c *Ctx, args [][]byte) { c.W.Buf = resp.AppendInt(c.W.Buf, pttl(c, args[1])) }

// TTL rounds like Redis: (ms + 500) / 1000.
func cmdTTL(c *Ctx, args [][]byte) {
	ms := pttl(c, args[1])
	if ms > 0 {
		ms = (ms + 500) / 1000
	}
	c.W.Int(ms)
}

// SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]
func cmdScan(c *Ctx, args [][]byte) {
	cursor, err := strconv.ParseUint(string(args[1]), 10, 64)
	if err != nil {
		c.err(errInvalidCursor)
		return
	}
	var pattern []byte
	count := 10
	var kind engine.Kind
	for i := 2; i < len(args); i += 2 {
		if i+1 >= len(args) {
			c.err(errSyntax)
			return
		}
		v := args[i+1]
		switch {
		case equalFold(args[i], "MATCH"):
			pattern = v
		case equalFold(args[i], "COUNT"):
			n, ok := resp.ParseInt(v)
			if !ok {
				c.err(errNotInt)
				return
			}
			if n < 1 {
				c.err(errSyntax)
				return
			}
			count = int(min(n, 1<<20))
		case equalFold(args[i], "TYPE"):
			k, ok := engine.ParseKind(string(v))
			if !ok {
				c.err(errUnknownType(v))
				return
			}
			kind = k
		default:
			c.err(errSyntax)
			return
		}
	}
	now := c.Now()
	next, keys := c.keys().Scan(cursor, count, now, func(it shard.Item) bool {
		return (kind == 0 || it.Kind == kind) && (pattern == nil || globMatch(pattern, unsafe.String(unsafe.SliceData(it.Key), len(it.Key))))
	})
	c.W.Array(2)
	c.W.BulkString(strconv.FormatUint(next, 10))
	c.W.Array(len(keys))
	for _, k := range keys {
		c.W.BulkString(k)
	}
}

// KEYS pattern
func cmdKeys(c *Ctx, args [][]byte) {
	keys := c.keys().Keys(c.Now(), func(it shard.Item) bool {
		return globMatch(args[1], unsafe.String(unsafe.SliceData(it.Key), len(it.Key)))
	})
	c.W.Array(len(keys))
	for _, k := range keys {
		c.W.BulkString(k)
	}
}

// dbsize counts keys in O(shards), as Redis's DBSIZE does (see
// shard.View.Len).
func (c *Ctx) dbsize() int64 { return int64(c.keys().Len()) }

func cmdDBSize(c *Ctx, args [][]byte) { c.W.Buf = resp.AppendInt(c.W.Buf, c.dbsize()) }

// FLUSHDB [ASYNC|SYNC] and FLUSHALL [ASYNC|SYNC]
func cmdFlush(c *Ctx, args [][]byte) {
	if len(args) == 2 && !equalFold(args[1], "ASYNC") && !equalFold(args[1], "SYNC") {
		c.err(errSyntax)
		return
	}
	c.keys().Flush()
	c.W.OK()
}
