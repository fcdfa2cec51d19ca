package command

import (
	"strings"

	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/resp"
	"github.com/rlserver/rlserver/shard"
)

// The key commands that set or read a key's expiry, and RENAME: they apply
// to every kind. A limiter key given a TTL keeps its own rule too: its
// next decision sets the expiry to when it is fresh again.

// EXPIRE key seconds [NX|XX|GT|LT], PEXPIRE, EXPIREAT, PEXPIREAT
func cmdExpire(c *Ctx, args [][]byte) {
	unit, abs := int64(1000), false
	switch {
	case equalFold(args[0], "PEXPIRE"):
		unit = 1
	case equalFold(args[0], "EXPIREAT"):
		abs = true
	case equalFold(args[0], "PEXPIREAT"):
		unit, abs = 1, true
	}
	o := c.op(0, args, applyExpire)
	for _, a := range args[3:] {
		f := optionFlag(a, optNX|optXX|optGT|optLT)
		if f == 0 {
			c.err("ERR Unsupported option " + string(a))
			return
		}
		o.flags |= f
	}
	if o.flags&optNX != 0 && o.flags&(optXX|optGT|optLT) != 0 {
		c.err("ERR NX and XX, GT or LT options at the same time are not compatible")
		return
	}
	if o.flags&optGT != 0 && o.flags&optLT != 0 {
		c.err("ERR GT and LT options at the same time are not compatible")
		return
	}
	n, ok := resp.ParseInt(args[2])
	if !ok {
		c.err(errNotInt)
		return
	}
	exp, ok := expiry(n, unit, abs, c.Now())
	if !ok {
		c.err(errInvalidExpire(strings.ToLower(string(args[0]))))
		return
	}
	o.exp = exp
	o.run(args[1])
}

func applyExpire(o *valueOp, _ int, v *shard.Value, _ int64) shard.Outcome {
	has := v.Exp != engine.NoExpiry
	ok := v.State != nil
	switch {
	case !ok:
	case o.flags&optNX != 0:
		ok = !has
	case o.flags&optXX != 0 && !has:
		ok = false
	case o.flags&optGT != 0:
		ok = has && o.exp > v.Exp
	case o.flags&optLT != 0:
		ok = !has || o.exp < v.Exp
	}
	if !ok {
		o.c.W.Int(0)
		return shard.Unchanged
	}
	o.c.W.Int(1)
	v.Exp = o.exp
	return shard.Changed
}

// PERSIST key
func cmdPersist(c *Ctx, args [][]byte) {
	c.op(0, args, func(o *valueOp, _ int, v *shard.Value, _ int64) shard.Outcome {
		if v.State == nil || v.Exp == engine.NoExpiry {
			o.c.W.Int(0)
			return shard.Unchanged
		}
		v.Exp = engine.NoExpiry
		o.c.W.Int(1)
		return shard.Changed
	}).run(args[1])
}

// EXPIRETIME key and PEXPIRETIME key: the Unix time of the expiry, -1
// without one, -2 for a missing key.
func cmdExpireTime(c *Ctx, args [][]byte) {
	div := int64(1e9)
	if equalFold(args[0], "PEXPIRETIME") {
		div = 1e6
	}
	ki, ok := c.keys().Lookup(args[1], c.Now())
	switch {
	case !ok:
		c.W.Int(-2)
	case ki.Exp == engine.NoExpiry:
		c.W.Int(-1)
	default:
		c.W.Int(ki.Exp / div)
	}
}

// RENAME key newkey and RENAMENX key newkey
func cmdRename(c *Ctx, args [][]byte) {
	nx := equalFold(args[0], "RENAMENX")
	found, moved, st := c.keys().Rename(args[1], args[2], c.Now(), nx)
	switch {
	case st != shard.Done:
		c.notDone(st)
	case !found:
		c.err("ERR no such key")
	case !nx:
		c.W.OK()
	case moved:
		c.W.Int(1)
	default:
		c.W.Int(0)
	}
}

// optionTokens are the tokens of the EXPIRE family's and ZADD's options.
var optionTokens = []struct {
	tok  string
	flag int
}{{"NX", optNX}, {"XX", optXX}, {"GT", optGT}, {"LT", optLT}, {"CH", optCH}, {"INCR", optIncr}}

// optionFlag returns the option flag a names among allowed, or 0.
func optionFlag(a []byte, allowed int) int {
	for _, t := range optionTokens {
		if t.flag&allowed != 0 && equalFold(a, t.tok) {
			return t.flag
		}
	}
	return 0
}
