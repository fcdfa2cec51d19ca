package command

import (
	"math"
	"strconv"
	"strings"

	"github.com/rlserver/rlserver/resp"
	"github.com/rlserver/rlserver/shard"
	"github.com/rlserver/rlserver/values"
)

// The hash commands.

// hash returns v's hash, creating an empty one for a missing key.
func hash(v *shard.Value) *values.Hash {
	if v.State == nil {
		return v.New(values.KindHash).(*values.Hash)
	}
	return v.State.(*values.Hash)
}

// emptied is the outcome of a command that removed from a value: a value
// left empty is removed, as Redis removes empty hashes, sets and lists.
func emptied(n int) shard.Outcome {
	if n == 0 {
		return shard.Removed
	}
	return shard.Changed
}

// HGET key field
func cmdHGet(c *Ctx, args [][]byte) {
	c.op(values.KindHash, args, func(o *valueOp, _ int, v *shard.Value, _ int64) shard.Outcome {
		if v.State == nil {
			o.c.W.Null()
		} else if val, ok := v.State.(*values.Hash).Get(string(o.args[2])); ok {
			o.c.W.Bulk(val)
		} else {
			o.c.W.Null()
		}
		return shard.Unchanged
	}).run(args[1])
}

// HSET key field value [field value ...] and HMSET
func cmdHSet(c *Ctx, args [][]byte) {
	if len(args)%2 != 0 {
		c.err(errWrongArgs(strings.ToLower(string(args[0]))))
		return
	}
	c.op(values.KindHash, args, func(o *valueOp, _ int, v *shard.Value, _ int64) shard.Outcome {
		h := hash(v)
		n := 0
		for i := 2; i < len(o.args); i += 2 {
			if h.Set(string(o.args[i]), append([]byte(nil), o.args[i+1]...)) {
				n++
			}
		}
		if equalFold(o.args[0], "HMSET") {
			o.c.W.OK()
		} else {
			o.c.W.Int(int64(n))
		}
		return shard.Changed
	}).run(args[1])
}

// HSETNX key field value
func cmdHSetNX(c *Ctx, args [][]byte) {
	c.op(values.KindHash, args, func(o *valueOp, _ int, v *shard.Value, _ int64) shard.Outcome {
		h := hash(v)
		if _, ok := h.Get(string(o.args[2])); ok {
			o.c.W.Int(0)
			return shard.Unchanged
		}
		h.Set(string(o.args[2]), append([]byte(nil), o.args[3]...))
		o.c.W.Int(1)
		return shard.Changed
	}).run(args[1])
}

// HMGET key field [field ...]
func cmdHMGet(c *Ctx, args [][]byte) {
	c.op(values.KindHash, args, func(o *valueOp, _ int, v *shard.Value, _ int64) shard.Outcome {
		o.c.W.Array(len(o.args) - 2)
		for _, f := range o.args[2:] {
			if v.State == nil {
				o.c.W.Null()
			} else if val, ok := v.State.(*values.Hash).Get(string(f)); ok {
				o.c.W.Bulk(val)
			} else {
				o.c.W.Null()
			}
		}
		return shard.Unchanged
	}).run(args[1])
}

// HINCRBY key field increment
func cmdHIncrBy(c *Ctx, args [][]byte) {
	by, ok := resp.ParseInt(args[3])
	if !ok {
		c.err(errNotInt)
		return
	}
	o := c.op(values.KindHash, args, func(o *valueOp, _ int, v *shard.Value, _ int64) shard.Outcome {
		h := hash(v)
		var cur int64
		if val, ok := h.Get(string(o.args[2])); ok {
			n, ok := resp.ParseInt(val)
			if !ok {
				o.c.err("ERR hash value is not an integer")
				return shard.Unchanged
			}
			cur = n
		}
		cur, ok := addInt(cur, o.n)
		if !ok {
			o.c.err(errOverflow)
			return shard.Unchanged
		}
		h.Set(string(o.args[2]), strconv.AppendInt(nil, cur, 10))
		o.c.W.Int(cur)
		return shard.Changed
	})
	o.n = by
	o.run(args[1])
}

// HINCRBYFLOAT key field increment
func cmdHIncrByFloat(c *Ctx, args [][]byte) {
	f, ok := values.ParseFloat(args[3])
	if !ok {
		c.err(errNotFloat)
		return
	}
	if math.IsInf(f, 0) {
		c.err("ERR value is NaN or Infinity")
		return
	}
	c.op(values.KindHash, args, func(o *valueOp, _ int, v *shard.Value, _ int64) shard.Outcome {
		h := hash(v)
		cur := []byte("0")
		if val, ok := h.Get(string(o.args[2])); ok {
			if _, ok := values.ParseFloat(val); !ok {
				o.c.err("ERR hash value is not a float")
				return shard.Unchanged
			}
			cur = val
		}
		out, err := values.IncrByFloat(cur, o.args[3])
		if err != nil {
			if err == values.ErrNotFloat {
				o.c.err("ERR hash value is not a float")
			} else {
				o.c.err(err.Error())
			}
			if h.Len() == 0 {
				return shard.Removed
			}
			return shard.Unchanged
		}
		h.Set(string(o.args[2]), []byte(out))
		o.c.W.BulkString(out)
		return shard.Changed
	}).run(args[1])
}

// HDEL key field [field ...]
func cmdHDel(c *Ctx, args [][]byte) {
	c.op(values.KindHash, args, func(o *valueOp, _ int, v *shard.Value, _ int64) shard.Outcome {
		if v.State == nil {
			o.c.W.Int(0)
			return shard.Unchanged
		}
		h := v.State.(*values.Hash)
		n := 0
		for _, f := range o.args[2:] {
			if h.Del(string(f)) {
				n++
			}
		}
		o.c.W.Int(int64(n))
		if n == 0 {
			return shard.Unchanged
		}
		return emptied(h.Len())
	}).run(args[1])
}

// HGETALL, HKEYS and HVALS key
func cmdHGetAll(c *Ctx, args [][]byte) {
	o := c.op(values.KindHash, args, func(o *valueOp, _ int, v *shard.Value, _ int64) shard.Outcome {
		var h values.Hash
		if v.State != nil {
			h = *v.State.(*values.Hash)
		}
		switch o.flags {
		case 0:
			o.c.W.Map(h.Len())
		default:
			o.c.W.Array(h.Len())
		}
		for i := range h.Len() {
			f, val := h.Field(i)
			if o.flags != 2 {
				o.c.W.BulkString(f)
			}
			if o.flags != 1 {
				o.c.W.Bulk(val)
			}
		}
		return shard.Unchanged
	})
	switch {
	case equalFold(args[0], "HKEYS"):
		o.flags = 1
	case equalFold(args[0], "HVALS"):
		o.flags = 2
	}
	o.run(args[1])
}

// HEXISTS key field
func cmdHExists(c *Ctx, args [][]byte) {
	c.op(values.KindHash, args, func(o *valueOp, _ int, v *shard.Value, _ int64) shard.Outcome {
		n := int64(0)
		if v.State != nil {
			if _, ok := v.State.(*values.Hash).Get(string(o.args[2])); ok {
				n = 1
			}
		}
		o.c.W.Int(n)
		return shard.Unchanged
	}).run(args[1])
}
