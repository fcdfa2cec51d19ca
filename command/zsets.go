package command

import (
	"math"

	"github.com/rlserver/rlserver/resp"
	"github.com/rlserver/rlserver/shard"
	"github.com/rlserver/rlserver/values"
)

// The sorted set commands.

// zset returns v's sorted set, creating an empty one for a missing key.
func zset(v *shard.Value) *values.ZSet {
	if v.State == nil {
		return v.New(values.KindZSet).(*values.ZSet)
	}
	return v.State.(*values.ZSet)
}

// double answers a score as Redis's addReplyDouble: a bulk string in
// RESP2, a double in RESP3, both formatted with %.17g.
func (c *Ctx) double(f float64) {
	if c.W.Proto < 3 {
		c.W.BulkString(values.FormatScore(f))
		return
	}
	c.W.Buf = append(append(append(c.W.Buf, ','), values.FormatScore(f)...), '\r', '\n')
}

// members answers ms, with their scores when withScores (in RESP3 each
// member and score a pair of its own, as Redis 7).
func (c *Ctx) members(ms []values.Member, withScores bool) {
	switch {
	case !withScores:
		c.W.Array(len(ms))
	case c.W.Proto >= 3:
		c.W.Array(len(ms))
	default:
		c.W.Array(2 * len(ms))
	}
	for _, m := range ms {
		if withScores && c.W.Proto >= 3 {
			c.W.Array(2)
		}
		c.W.BulkString(m.Member)
		if withScores {
			c.double(m.Score)
		}
	}
}

const errNaNScore = "ERR resulting score is not a number (NaN)"

// ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member [score member ...]
func cmdZAdd(c *Ctx, args [][]byte) {
	o := c.op(values.KindZSet, args, applyZAdd)
	i := 2
	for ; i < len(args); i++ {
		f := optionFlag(args[i], optNX|optXX|optGT|optLT|optCH|optIncr)
		if f == 0 {
			break
		}
		o.flags |= f
	}
	n := len(args) - i
	switch {
	case n == 0 || n%2 != 0:
		c.err(errSyntax)
		return
	case o.flags&optIncr != 0 && n > 2:
		c.err("ERR INCR option supports a single increment-element pair")
		return
	case o.flags&optNX != 0 && o.flags&optXX != 0:
		c.err("ERR XX and NX options at the same time are not compatible")
		return
	case o.flags&optGT != 0 && o.flags&(optNX|optLT) != 0 || o.flags&optLT != 0 && o.flags&optNX != 0:
		c.err("ERR GT, LT, and/or NX options at the same time are not compatible")
		return
	}
	for j := i; j < len(args); j += 2 {
		if _, ok := values.ParseFloat(args[j]); !ok {
			c.err(errNotFloat)
			return
		}
	}
	o.count = int64(i)
	o.run(args[1])
}

func applyZAdd(o *valueOp, _ int, v *shard.Value, _ int64) shard.Outcome {
	incr := o.flags&optIncr != 0
	if v.State == nil && o.flags&optXX != 0 {
		if incr {
			o.c.W.Null()
		} else {
			o.c.W.Int(0)
		}
		return shard.Unchanged
	}
	z := zset(v)
	added, updated, processed := 0, 0, false
	var score float64
	for j := int(o.count); j < len(o.args); j += 2 {
		score, _ = values.ParseFloat(o.args[j])
		m := string(o.args[j+1])
		cur, exists := z.Score(m)
		if incr && exists {
			score += cur
			if math.IsNaN(score) {
				o.c.err(errNaNScore)
				return shard.Unchanged
			}
		}
		switch {
		case exists && o.flags&optNX != 0, !exists && o.flags&optXX != 0:
			continue
		case exists && (o.flags&optGT != 0 && score <= cur || o.flags&optLT != 0 && score >= cur):
			continue
		}
		processed = true
		if z.Add(m, score) {
			added++
		} else if score != cur {
			updated++
		}
	}
	switch {
	case !incr && o.flags&optCH != 0:
		o.c.W.Int(int64(added + updated))
	case !incr:
		o.c.W.Int(int64(added))
	case processed:
		o.c.double(score)
	default:
		o.c.W.Null()
	}
	if added+updated == 0 {
		if z.Len() == 0 {
			return shard.Removed
		}
		return shard.Unchanged
	}
	return shard.Changed
}

// ZINCRBY key increment member
func cmdZIncrBy(c *Ctx, args [][]byte) {
	by, ok := values.ParseFloat(args[2])
	if !ok {
		c.err(errNotFloat)
		return
	}
	o := c.op(values.KindZSet, args, func(o *valueOp, _ int, v *shard.Value, _ int64) shard.Outcome {
		z := zset(v)
		m := string(o.args[3])
		cur, _ := z.Score(m)
		score := cur + o.f
		if math.IsNaN(score) {
			o.c.err(errNaNScore)
			return emptied(z.Len())
		}
		z.Add(m, score)
		o.c.double(score)
		return shard.Changed
	})
	o.f = by
	o.run(args[1])
}

// ZREM key member [member ...]
func cmdZRem(c *Ctx, args [][]byte) {
	c.op(values.KindZSet, args, func(o *valueOp, _ int, v *shard.Value, _ int64) shard.Outcome {
		if v.State == nil {
			o.c.W.Int(0)
			return shard.Unchanged
		}
		z := v.State.(*values.ZSet)
		n := 0
		for _, m := range o.args[2:] {
			if z.Remove(string(m)) {
				n++
			}
		}
		o.c.W.Int(int64(n))
		if n == 0 {
			return shard.Unchanged
		}
		return emptied(z.Len())
	}).run(args[1])
}

// ZSCORE key member
func cmdZScore(c *Ctx, args [][]byte) {
	c.op(values.KindZSet, args, func(o *valueOp, _ int, v *shard.Value, _ int64) shard.Outcome {
		if v.State != nil {
			if s, ok := v.State.(*values.ZSet).Score(string(o.args[2])); ok {
				o.c.double(s)
				return shard.Unchanged
			}
		}
		o.c.W.Null()
		return shard.Unchanged
	}).run(args[1])
}

// zrange is a parsed ZRANGE family request.
type zrange struct {
	by         int // 0 rank, 1 score, 2 lex
	rev        bool
	withScores bool
	limit      bool
	offset     int
	count      int
	start      int64
	stop       int64
	score      values.ScoreRange
	lex        values.LexRange
}

const (
	byRank = iota
	byScore
	byLex
)

// parseZRange parses min and max (in the order given, max first with rev
// for scores and lex) and the options from args[opts:].
func parseZRange(args [][]byte, min, max []byte, opts int, generic bool, r *zrange) string {
	r.count = -1
	for i := opts; i < len(args); i++ {
		a := args[i]
		switch {
		case equalFold(a, "WITHSCORES"):
			r.withScores = true
		case equalFold(a, "LIMIT") && i+2 < len(args):
			off, ok1 := resp.ParseInt(args[i+1])
			cnt, ok2 := resp.ParseInt(args[i+2])
			if !ok1 || !ok2 {
				return errNotInt
			}
			// Redis refuses LIMIT with ranks only when its count is not -1.
			r.limit, r.offset, r.count = cnt != -1, int(max64(off, math.MinInt32)), int(max64(cnt, -1))
			i += 2
		case generic && r.by == byRank && equalFold(a, "BYSCORE"):
			r.by = byScore
		case generic && r.by == byRank && equalFold(a, "BYLEX"):
			r.by = byLex
		case generic && !r.rev && equalFold(a, "REV"):
			r.rev = true
		default:
			return errSyntax
		}
	}
	if r.limit && r.by == byRank {
		return "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX"
	}
	if r.withScores && r.by == byLex {
		return "ERR syntax error, WITHSCORES not supported in combination with BYLEX"
	}
	if r.rev && r.by != byRank {
		min, max = max, min
	}
	switch r.by {
	case byRank:
		a, ok1 := resp.ParseInt(min)
		b, ok2 := resp.ParseInt(max)
		if !ok1 || !ok2 {
			return errNotInt
		}
		r.start, r.stop = a, b
	case byScore:
		sr, err := values.ParseScoreRange(min, max)
		if err != nil {
			return err.Error()
		}
		r.score = sr
	case byLex:
		lr, err := values.ParseLexRange(min, max)
		if err != nil {
			return err.Error()
		}
		r.lex = lr
	}
	return ""
}

func max64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

// ZRANGE key start stop [BYSCORE|BYLEX] [REV] [LIMIT offset count]
// [WITHSCORES], ZRANGEBYSCORE key min max [WITHSCORES] [LIMIT offset
// count] and ZREVRANGEBYSCORE key max min ...
func cmdZRange(c *Ctx, args [][]byte) {
	r := &c.zr
	*r = zrange{}
	switch {
	case equalFold(args[0], "ZRANGEBYSCORE"):
		r.by = byScore
	case equalFold(args[0], "ZREVRANGEBYSCORE"):
		r.by, r.rev = byScore, true
	case equalFold(args[0], "ZRANGEBYLEX"):
		r.by = byLex
	case equalFold(args[0], "ZREVRANGEBYLEX"):
		r.by, r.rev = byLex, true
	case equalFold(args[0], "ZREVRANGE"):
		r.rev = true
	}
	generic := equalFold(args[0], "ZRANGE")
	if msg := parseZRange(args, args[2], args[3], 4, generic, r); msg != "" {
		c.err(msg)
		return
	}
	c.op(values.KindZSet, args, func(o *valueOp, _ int, v *shard.Value, _ int64) shard.Outcome {
		r := &o.c.zr
		if v.State == nil {
			o.c.W.Array(0)
			return shard.Unchanged
		}
		z := v.State.(*values.ZSet)
		ms := o.c.zmembers[:0]
		switch r.by {
		case byRank:
			if a, b, ok := values.Normalize(int(r.start), int(r.stop), z.Len()); ok {
				ms = z.Range(ms, a, b, r.rev)
			}
		case byScore:
			if r.offset >= 0 {
				ms = z.RangeByScore(ms, r.score, r.rev, r.offset, r.count)
			}
		case byLex:
			if r.offset >= 0 {
				ms = z.RangeByLex(ms, r.lex, r.rev, r.offset, r.count)
			}
		}
		o.c.members(ms, r.withScores)
		clear(ms)
		o.c.zmembers = ms[:0]
		return shard.Unchanged
	}).run(args[1])
}

// ZCOUNT key min max
func cmdZCount(c *Ctx, args [][]byte) {
	sr, err := values.ParseScoreRange(args[2], args[3])
	if err != nil {
		c.err(err.Error())
		return
	}
	c.zr.score = sr
	c.op(values.KindZSet, args, func(o *valueOp, _ int, v *shard.Value, _ int64) shard.Outcome {
		n := 0
		if v.State != nil {
			n = v.State.(*values.ZSet).Count(o.c.zr.score)
		}
		o.c.W.Int(int64(n))
		return shard.Unchanged
	}).run(args[1])
}

// ZREMRANGEBYSCORE key min max and ZREMRANGEBYRANK key start stop
func cmdZRemRange(c *Ctx, args [][]byte) {
	r := &c.zr
	*r = zrange{by: byScore}
	if equalFold(args[0], "ZREMRANGEBYRANK") {
		r.by = byRank
	}
	if msg := parseZRange(args, args[2], args[3], len(args), false, r); msg != "" {
		c.err(msg)
		return
	}
	c.op(values.KindZSet, args, func(o *valueOp, _ int, v *shard.Value, _ int64) shard.Outcome {
		r := &o.c.zr
		if v.State == nil {
			o.c.W.Int(0)
			return shard.Unchanged
		}
		z := v.State.(*values.ZSet)
		n := 0
		if r.by == byScore {
			n = z.RemoveRangeByScore(r.score)
		} else if a, b, ok := values.Normalize(int(r.start), int(r.stop), z.Len()); ok {
			n = z.RemoveRangeByRank(a, b)
		}
		o.c.W.Int(int64(n))
		if n == 0 {
			return shard.Unchanged
		}
		return emptied(z.Len())
	}).run(args[1])
}

const errNotPositive = "ERR value is out of range, must be positive"

// ZPOPMIN key [count]
func cmdZPopMin(c *Ctx, args [][]byte) {
	o := c.op(values.KindZSet, args, func(o *valueOp, _ int, v *shard.Value, _ int64) shard.Outcome {
		if v.State == nil || o.n == 0 {
			o.c.W.Array(0)
			return shard.Unchanged
		}
		z := v.State.(*values.ZSet)
		ms := z.PopMin(int(min(o.n, int64(z.Len()))))
		if len(ms) == 0 { // an empty set restored or received: never kept otherwise
			o.c.W.Array(0)
			return shard.Removed
		}
		if !o.found { // no count: one flat pair in both protocols
			o.c.W.Array(2)
			o.c.W.BulkString(ms[0].Member)
			o.c.double(ms[0].Score)
		} else {
			o.c.members(ms, true)
		}
		return emptied(z.Len())
	})
	o.n = 1
	if len(args) > 3 {
		c.err(errSyntax)
		return
	}
	if len(args) == 3 {
		n, ok := resp.ParseInt(args[2])
		if !ok || n < 0 {
			c.err(errNotPositive)
			return
		}
		o.n, o.found = n, true
	}
	o.run(args[1])
}

// ZRANK key member and ZREVRANK key member
func cmdZRank(c *Ctx, args [][]byte) {
	o := c.op(values.KindZSet, args, func(o *valueOp, _ int, v *shard.Value, _ int64) shard.Outcome {
		if v.State != nil {
			if r, ok := v.State.(*values.ZSet).Rank(string(o.args[2]), o.found); ok {
				o.c.W.Int(int64(r))
				return shard.Unchanged
			}
		}
		o.c.W.Null()
		return shard.Unchanged
	})
	o.found = equalFold(args[0], "ZREVRANK")
	o.run(args[1])
}
