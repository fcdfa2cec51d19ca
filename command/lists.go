package command

import (
	"github.com/rlserver/rlserver/resp"
	"github.com/rlserver/rlserver/shard"
	"github.com/rlserver/rlserver/values"
	"strings"
)

// The list commands.

// LPUSH and RPUSH key element [element ...]
func cmdPush(c *Ctx, args [][]byte) {
	o := c.op(values.KindList, args, func(o *valueOp, _ int, v *shard.Value, _ int64) shard.Outcome {
		var l *values.List
		if v.State == nil {
			l = v.New(values.KindList).(*values.List)
		} else {
			l = v.State.(*values.List)
		}
		for _, e := range o.args[2:] {
			e = append([]byte(nil), e...)
			if o.found {
				l.PushFront(e)
			} else {
				l.PushBack(e)
			}
		}
		o.c.W.Int(int64(l.Len()))
		return shard.Changed
	})
	o.found = equalFold(args[0], "LPUSH")
	o.run(args[1])
}

// LPOP and RPOP key [count]
func cmdPop(c *Ctx, args [][]byte) {
	o := c.op(values.KindList, args, func(o *valueOp, _ int, v *shard.Value, _ int64) shard.Outcome {
		front := o.flags == 1
		counted := o.count >= 0
		if v.State == nil {
			if counted {
				o.c.W.NullArray()
			} else {
				o.c.W.Null()
			}
			return shard.Unchanged
		}
		l := v.State.(*values.List)
		n := int64(1)
		if counted {
			n = min(o.count, int64(l.Len()))
			o.c.W.Array(int(n))
		}
		for range n {
			var e []byte
			if front {
				e, _ = l.PopFront()
			} else {
				e, _ = l.PopBack()
			}
			o.c.W.Bulk(e)
		}
		if n == 0 {
			return shard.Unchanged
		}
		return emptied(l.Len())
	})
	if equalFold(args[0], "LPOP") {
		o.flags = 1
	}
	o.count = -1
	if len(args) > 3 {
		c.err(errWrongArgs(strings.ToLower(string(args[0]))))
		return
	}
	if len(args) == 3 {
		n, ok := resp.ParseInt(args[2])
		if !ok || n < 0 {
			c.err(errNotPositive)
			return
		}
		o.count = n
	}
	o.run(args[1])
}

// LINDEX key index: the key is looked up before the index is read, as
// Redis does (a missing key answers nil whatever the index).
func cmdLIndex(c *Ctx, args [][]byte) {
	c.op(values.KindList, args, func(o *valueOp, _ int, v *shard.Value, _ int64) shard.Outcome {
		if v.State != nil {
			i, ok := resp.ParseInt(o.args[2])
			if !ok {
				o.c.err(errNotInt)
				return shard.Unchanged
			}
			if e, ok := v.State.(*values.List).Index(int(clampInt(i))); ok {
				o.c.W.Bulk(e)
				return shard.Unchanged
			}
		}
		o.c.W.Null()
		return shard.Unchanged
	}).run(args[1])
}

// parseRange reads LRANGE's and LTRIM's start and stop.
func parseRange(c *Ctx, args [][]byte, o *valueOp) bool {
	a, ok1 := resp.ParseInt(args[2])
	b, ok2 := resp.ParseInt(args[3])
	if !ok1 || !ok2 {
		c.err(errNotInt)
		return false
	}
	o.n, o.count = clampInt(a), clampInt(b)
	return true
}

// clampInt bounds an index to what an int addresses on every platform.
func clampInt(n int64) int64 { return max(min(n, 1<<40), -1<<40) }

// LRANGE key start stop
func cmdLRange(c *Ctx, args [][]byte) {
	o := c.op(values.KindList, args, func(o *valueOp, _ int, v *shard.Value, _ int64) shard.Outcome {
		if v.State == nil {
			o.c.W.Array(0)
			return shard.Unchanged
		}
		es := v.State.(*values.List).Range(o.c.elems[:0], int(o.n), int(o.count))
		o.c.W.Array(len(es))
		for _, e := range es {
			o.c.W.Bulk(e)
		}
		clear(es)
		o.c.elems = es[:0]
		return shard.Unchanged
	})
	if parseRange(c, args, o) {
		o.run(args[1])
	}
}

// LTRIM key start stop
func cmdLTrim(c *Ctx, args [][]byte) {
	o := c.op(values.KindList, args, func(o *valueOp, _ int, v *shard.Value, _ int64) shard.Outcome {
		o.c.W.OK()
		if v.State == nil {
			return shard.Unchanged
		}
		l := v.State.(*values.List)
		before := l.Len()
		l.Trim(int(o.n), int(o.count))
		if l.Len() == before {
			return shard.Unchanged
		}
		return emptied(l.Len())
	})
	if parseRange(c, args, o) {
		o.run(args[1])
	}
}

// LREM key count element
func cmdLRem(c *Ctx, args [][]byte) {
	n, ok := resp.ParseInt(args[2])
	if !ok {
		c.err(errNotInt)
		return
	}
	o := c.op(values.KindList, args, func(o *valueOp, _ int, v *shard.Value, _ int64) shard.Outcome {
		if v.State == nil {
			o.c.W.Int(0)
			return shard.Unchanged
		}
		l := v.State.(*values.List)
		removed := l.Remove(int(o.n), o.args[3])
		o.c.W.Int(int64(removed))
		if removed == 0 {
			return shard.Unchanged
		}
		return emptied(l.Len())
	})
	o.n = clampInt(n)
	o.run(args[1])
}
