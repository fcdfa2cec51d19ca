package command

import (
	"math"
	"strconv"
	"strings"

	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/resp"
	"github.com/rlserver/rlserver/shard"
	"github.com/rlserver/rlserver/values"
)

// The Redis data commands' plumbing: a handler parses its arguments, then
// hands the keyspace a valueOp whose apply function reads and changes the
// key and writes the reply, under the key's shard lock (the reply may
// alias the state, which is valid there only). Errors found in the
// arguments are answered before; errors that depend on the value (not an
// integer, WRONGTYPE) inside, with the key unchanged.

// valueOp is a connection's reusable shard.ValueOp: the function that
// applies the command, and what it needs, so that a data command
// allocates nothing of its own.
type valueOp struct {
	kind   engine.Kind
	apply  func(o *valueOp, i int, v *shard.Value, now int64) shard.Outcome
	c      *Ctx
	args   [][]byte
	n      int64   // an integer argument or result
	f      float64 // a float argument
	exp    int64   // an expiry argument (see expiry)
	flags  int     // the command's options
	count  int64   // a second integer (a count, a stop index; an expiry's unit)
	expArg []byte  // an expiry option's value (see parseExpireOpt)
	found  bool    // a multi-key or two-step command's running result
}

func (o *valueOp) Kind() engine.Kind { return o.kind }
func (o *valueOp) Apply(i int, v *shard.Value, now int64) shard.Outcome {
	return o.apply(o, i, v, now)
}

// op returns the connection's value op, reset, for a command on kind
// (0: any) applying fn.
func (c *Ctx) op(kind engine.Kind, args [][]byte, fn func(*valueOp, int, *shard.Value, int64) shard.Outcome) *valueOp {
	o := &c.vop
	*o = valueOp{kind: kind, apply: fn, c: c, args: args}
	return o
}

// run runs o on key and answers what stopped it, if anything did.
func (o *valueOp) run(key []byte) {
	if st := o.c.keys().Value(key, o.c.Now(), o); st != shard.Done {
		o.c.notDone(st)
	}
}

// runAll runs o on keys, atomically.
func (o *valueOp) runAll(keys [][]byte) {
	if st := o.c.keys().Values(keys, o.c.Now(), o); st != shard.Done {
		o.c.notDone(st)
	}
}

// str returns v's string state, creating an empty one for a missing key.
func str(v *shard.Value) *values.String {
	if v.State == nil {
		return v.New(values.KindString).(*values.String)
	}
	return v.State.(*values.String)
}

// Expiry options, shared by SET, GETEX and the EXPIRE family.
const (
	optNX = 1 << iota
	optXX
	optGT
	optLT
	optGet
	optKeepTTL
	optPersist
	optExpire // an EX/PX/EXAT/PXAT was given (exp holds it)
	optCH
	optIncr
)

// expiry converts an expiry argument n to the server clock's ns: unit is
// its ms (1000 for seconds), abs says it is a Unix time rather than a
// duration from now. Redis refuses values whose ms overflow, and (except
// for the EXPIRE family, which deletes the key) values ≤ 0. A time from
// now is a whole ms, Redis's resolution: GT and LT compare ms.
func expiry(n, unit int64, abs bool, now int64) (exp int64, ok bool) {
	if n > math.MaxInt64/unit || n < math.MinInt64/unit {
		return 0, false
	}
	ms := n * unit
	if !abs {
		nowMs := now / 1e6
		if ms > 0 && nowMs > math.MaxInt64-ms {
			return 0, false
		}
		ms += nowMs
	}
	return msToNs(ms), true
}

// msToNs converts a Unix time in ms to the clock's ns, saturating where
// ns run out (the year 2262) below NoExpiry.
func msToNs(ms int64) int64 {
	if ms > (engine.NoExpiry-1)/1e6 {
		return engine.NoExpiry - 1
	}
	if ms < math.MinInt64/1_000_000 {
		return math.MinInt64
	}
	return ms * 1e6
}

func errInvalidExpire(cmd string) string { return "ERR invalid expire time in '" + cmd + "' command" }

// parseExpireOpt reads one SET/GETEX expiry option at args[i] (its value
// at args[i+1]) as Redis parses them: the same option may repeat (the last
// one counts), another one is a syntax error; the value is read once every
// option is (expireValue). It reports how many arguments it took (0: not
// an expiry option).
func (o *valueOp) parseExpireOpt(args [][]byte, i int) (took int, errMsg string) {
	var unit int64
	var abs bool
	switch {
	case equalFold(args[i], "EX"):
		unit = 1000
	case equalFold(args[i], "PX"):
		unit = 1
	case equalFold(args[i], "EXAT"):
		unit, abs = 1000, true
	case equalFold(args[i], "PXAT"):
		unit, abs = 1, true
	default:
		return 0, ""
	}
	kind := unit
	if abs {
		kind = -unit
	}
	if o.flags&(optKeepTTL|optPersist) != 0 || o.flags&optExpire != 0 && o.count != kind || i+1 >= len(args) {
		return 1, errSyntax
	}
	o.flags |= optExpire
	o.count, o.expArg = kind, args[i+1]
	return 2, ""
}

// expireValue reads the expiry option's value parseExpireOpt kept: an
// integer above 0 whose ms do not overflow.
func (o *valueOp) expireValue(now int64) string {
	if o.flags&optExpire == 0 {
		return ""
	}
	n, ok := resp.ParseInt(o.expArg)
	if !ok {
		return errNotInt
	}
	exp, ok := expiry(n, max(o.count, -o.count), o.count < 0, now)
	if !ok || n <= 0 {
		return errInvalidExpire(strings.ToLower(string(o.args[0])))
	}
	o.exp = exp
	return ""
}

// bulkString answers a string value, or nil for a missing key.
func (c *Ctx) bulkString(st engine.State) {
	if st == nil {
		c.W.Null()
		return
	}
	c.W.Bulk(st.(*values.String).B)
}

// GET key
func cmdGet(c *Ctx, args [][]byte) {
	c.op(values.KindString, args, func(o *valueOp, _ int, v *shard.Value, _ int64) shard.Outcome {
		o.c.bulkString(v.State)
		return shard.Unchanged
	}).run(args[1])
}

// SET key value [NX|XX] [GET] [EX s|PX ms|EXAT t|PXAT t|KEEPTTL]
func cmdSet(c *Ctx, args [][]byte) {
	o := c.op(0, args, applySet)
	ok := o.expireOpts(args, 3, func(a []byte) bool {
		switch {
		case equalFold(a, "NX") && o.flags&optXX == 0:
			o.flags |= optNX
		case equalFold(a, "XX") && o.flags&optNX == 0:
			o.flags |= optXX
		case equalFold(a, "GET"):
			o.flags |= optGet
		case equalFold(a, "KEEPTTL") && o.flags&optExpire == 0:
			o.flags |= optKeepTTL
		default:
			return false
		}
		return true
	})
	if ok {
		o.run(args[1])
	}
}

// expireOpts reads SET's and GETEX's options from args[from:]: other
// takes the command's own, parseExpireOpt the expiry ones. It answers the
// first error and reports false then.
func (o *valueOp) expireOpts(args [][]byte, from int, other func(a []byte) bool) bool {
	for i := from; i < len(args); i++ {
		if other(args[i]) {
			continue
		}
		took, msg := o.parseExpireOpt(args, i)
		if took == 0 {
			msg = errSyntax
		}
		if msg != "" {
			o.c.err(msg)
			return false
		}
		i += took - 1
	}
	if msg := o.expireValue(o.c.Now()); msg != "" {
		o.c.err(msg)
		return false
	}
	return true
}

func applySet(o *valueOp, _ int, v *shard.Value, _ int64) shard.Outcome {
	get := o.flags&optGet != 0
	if get && v.State != nil && v.State.Kind() != values.KindString {
		o.c.err(errWrongType)
		return shard.Unchanged
	}
	if get {
		o.c.bulkString(v.State)
	}
	if o.flags&optNX != 0 && v.State != nil || o.flags&optXX != 0 && v.State == nil {
		if !get {
			o.c.W.Null()
		}
		return shard.Unchanged
	}
	setString(o, v, o.args[2])
	if !get {
		o.c.W.OK()
	}
	return shard.Changed
}

// setString makes v the string val, with o's expiry (none unless an
// option gave one or KEEPTTL kept it).
func setString(o *valueOp, v *shard.Value, val []byte) {
	keep := o.flags&optKeepTTL != 0 && v.State != nil
	s := v.New(values.KindString).(*values.String)
	s.B = append(s.B, val...)
	switch {
	case o.flags&optExpire != 0:
		v.Exp = o.exp
	case !keep:
		v.Exp = engine.NoExpiry
	}
}

// SETNX key value
func cmdSetNX(c *Ctx, args [][]byte) {
	c.op(0, args, func(o *valueOp, _ int, v *shard.Value, _ int64) shard.Outcome {
		if v.State != nil {
			o.c.W.Int(0)
			return shard.Unchanged
		}
		setString(o, v, o.args[2])
		o.c.W.Int(1)
		return shard.Changed
	}).run(args[1])
}

// SETEX key seconds value and PSETEX key ms value
func cmdSetEx(c *Ctx, args [][]byte) {
	o := c.op(0, args, func(o *valueOp, _ int, v *shard.Value, _ int64) shard.Outcome {
		setString(o, v, o.args[3])
		o.c.W.OK()
		return shard.Changed
	})
	o.flags, o.count, o.expArg = optExpire, 1000, args[2]
	if equalFold(args[0], "PSETEX") {
		o.count = 1
	}
	if msg := o.expireValue(c.Now()); msg != "" {
		c.err(msg)
		return
	}
	o.run(args[1])
}

// GETSET key value
func cmdGetSet(c *Ctx, args [][]byte) {
	c.op(values.KindString, args, func(o *valueOp, _ int, v *shard.Value, _ int64) shard.Outcome {
		o.c.bulkString(v.State)
		setString(o, v, o.args[2])
		return shard.Changed
	}).run(args[1])
}

// GETDEL key
func cmdGetDel(c *Ctx, args [][]byte) {
	c.op(values.KindString, args, func(o *valueOp, _ int, v *shard.Value, _ int64) shard.Outcome {
		o.c.bulkString(v.State)
		if v.State == nil {
			return shard.Unchanged
		}
		return shard.Removed
	}).run(args[1])
}

// GETEX key [EX s|PX ms|EXAT t|PXAT t|PERSIST]
func cmdGetEx(c *Ctx, args [][]byte) {
	o := c.op(values.KindString, args, func(o *valueOp, _ int, v *shard.Value, _ int64) shard.Outcome {
		o.c.bulkString(v.State)
		switch {
		case v.State == nil:
			return shard.Unchanged
		case o.flags&optExpire != 0:
			v.Exp = o.exp
		case o.flags&optPersist != 0 && v.Exp != engine.NoExpiry:
			v.Exp = engine.NoExpiry
		default:
			return shard.Unchanged
		}
		return shard.Changed
	})
	ok := o.expireOpts(args, 2, func(a []byte) bool {
		if equalFold(a, "PERSIST") && o.flags&optExpire == 0 {
			o.flags |= optPersist
			return true
		}
		return false
	})
	if ok {
		o.run(args[1])
	}
}

// MGET key [key ...]
func cmdMGet(c *Ctx, args [][]byte) {
	c.W.Array(len(args) - 1)
	c.op(0, args, func(o *valueOp, _ int, v *shard.Value, _ int64) shard.Outcome {
		if s, ok := v.State.(*values.String); ok {
			o.c.W.Bulk(s.B)
		} else {
			o.c.W.Null()
		}
		return shard.Unchanged
	}).runAll(args[1:])
}

// MSET key value [key value ...]
func cmdMSet(c *Ctx, args [][]byte) {
	if len(args)%2 != 1 {
		c.err(errWrongArgs("mset"))
		return
	}
	keys := c.keyList[:0]
	for i := 1; i < len(args); i += 2 {
		keys = append(keys, args[i])
	}
	c.keyList = keys
	c.op(0, args, func(o *valueOp, i int, v *shard.Value, _ int64) shard.Outcome {
		setString(o, v, o.args[2*i+2])
		return shard.Changed
	}).runAll(keys)
	c.W.OK()
}

// INCR, DECR, INCRBY key n, DECRBY key n
func cmdIncr(c *Ctx, args [][]byte) {
	by := int64(1)
	switch {
	case len(args) == 3:
		n, ok := resp.ParseInt(args[2])
		if !ok {
			c.err(errNotInt)
			return
		}
		by = n
		if equalFold(args[0], "DECRBY") {
			if n == math.MinInt64 {
				c.err("ERR decrement would overflow")
				return
			}
			by = -n
		}
	case equalFold(args[0], "DECR"):
		by = -1
	}
	o := c.op(values.KindString, args, func(o *valueOp, _ int, v *shard.Value, _ int64) shard.Outcome {
		var cur int64
		if v.State != nil {
			n, ok := parseStrInt(v.State.(*values.String).B)
			if !ok {
				o.c.err(errNotInt)
				return shard.Unchanged
			}
			cur = n
		}
		cur, ok := addInt(cur, o.n)
		if !ok {
			o.c.err(errOverflow)
			return shard.Unchanged
		}
		s := str(v)
		s.B = strconv.AppendInt(s.B[:0], cur, 10)
		o.c.W.Int(cur)
		return shard.Changed
	})
	o.n = by
	o.run(args[1])
}

// parseStrInt reads a string value as Redis's string2ll does.
func parseStrInt(b []byte) (int64, bool) { return resp.ParseInt(b) }

// INCRBYFLOAT key increment: the key's type is checked before the
// increment is read, as Redis does.
func cmdIncrByFloat(c *Ctx, args [][]byte) {
	c.op(values.KindString, args, func(o *valueOp, _ int, v *shard.Value, _ int64) shard.Outcome {
		cur := []byte("0")
		if v.State != nil {
			cur = v.State.(*values.String).B
		}
		out, err := values.IncrByFloat(cur, o.args[2])
		if err != nil {
			o.c.err(err.Error())
			return shard.Unchanged
		}
		s := str(v)
		s.B = append(s.B[:0], out...)
		o.c.W.BulkString(out)
		return shard.Changed
	}).run(args[1])
}

const errNotFloat = "ERR value is not a valid float"

// APPEND key value
func cmdAppend(c *Ctx, args [][]byte) {
	c.op(values.KindString, args, func(o *valueOp, _ int, v *shard.Value, _ int64) shard.Outcome {
		s := str(v)
		s.B = append(s.B, o.args[2]...)
		o.c.W.Int(int64(len(s.B)))
		return shard.Changed
	}).run(args[1])
}

const errOverflow = "ERR increment or decrement would overflow"

// addInt returns a+b, or false when it overflows.
func addInt(a, b int64) (int64, bool) {
	if b > 0 && a > math.MaxInt64-b || b < 0 && a < math.MinInt64-b {
		return 0, false
	}
	return a + b, true
}

// STRLEN, HLEN, ZCARD and LLEN key: the size of a value of the command's
// kind (0 for a missing key).
func cmdLen(c *Ctx, args [][]byte) {
	kind := values.KindList
	switch {
	case equalFold(args[0], "STRLEN"):
		kind = values.KindString
	case equalFold(args[0], "HLEN"):
		kind = values.KindHash
	case equalFold(args[0], "ZCARD"):
		kind = values.KindZSet
	}
	c.op(kind, args, func(o *valueOp, _ int, v *shard.Value, _ int64) shard.Outcome {
		n := 0
		if v.State != nil {
			n = values.Len(v.State)
		}
		o.c.W.Int(int64(n))
		return shard.Unchanged
	}).run(args[1])
}
