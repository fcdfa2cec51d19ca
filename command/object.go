package command

import (
	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/resp"
	"github.com/rlserver/rlserver/shard"
	"github.com/rlserver/rlserver/values"
	"strconv"
)

// OBJECT ENCODING|REFCOUNT|IDLETIME|FREQ key: what Redis's clients and
// test suite read of a key's representation. rlserver has one
// representation per kind; ENCODING names the one Redis 7.0 would use for
// the same value under the thresholds CONFIG SET gave (Redis also never
// converts a value back; the value's current size decides here).

// thresholds are the limits of Redis's compact encodings, as CONFIG SET
// last gave them (hash-max-listpack-*, zset-max-listpack-*).
type thresholds struct{ hashEntries, hashValue, zsetEntries, zsetValue int }

func (h *Handler) thresholds() thresholds {
	get := func(name string) int {
		v, ok := h.kept.get(name)
		if !ok {
			v = keptParams[name].def
		}
		n, _ := strconv.Atoi(v)
		return n
	}
	return thresholds{get("hash-max-listpack-entries"), get("hash-max-listpack-value"),
		get("zset-max-listpack-entries"), get("zset-max-listpack-value")}
}

// encoding names st's Redis encoding under the thresholds t.
func encoding(st engine.State, t thresholds) string {
	switch st := st.(type) {
	case *values.String:
		if _, ok := resp.ParseInt(st.B); ok {
			return "int"
		}
		if len(st.B) <= 44 {
			return "embstr"
		}
		return "raw"
	case *values.Hash:
		if st.Len() > t.hashEntries {
			return "hashtable"
		}
		for i := range st.Len() {
			f, v := st.Field(i)
			if len(f) > t.hashValue || len(v) > t.hashValue {
				return "hashtable"
			}
		}
		return "listpack"
	case *values.ZSet:
		if st.Len() > t.zsetEntries {
			return "skiplist"
		}
		for _, m := range st.Range(nil, 0, st.Len()-1, false) {
			if len(m.Member) > t.zsetValue {
				return "skiplist"
			}
		}
		return "listpack"
	case *values.List:
		return "quicklist"
	}
	return "raw" // a limiter's state
}

// OBJECT ENCODING|REFCOUNT|IDLETIME|FREQ key. OBJECT inspects the key
// without touching it, as Redis's LOOKUP_NOTOUCH: its idle time and
// access counter stay as they were.
func cmdObject(c *Ctx, args [][]byte) {
	c.op(0, args, func(o *valueOp, _ int, v *shard.Value, _ int64) shard.Outcome {
		v.Peek()
		switch {
		case v.State == nil:
			o.c.W.Null()
		case equalFold(o.args[1], "ENCODING"):
			o.c.W.BulkString(encoding(v.State, o.c.h.thresholds()))
		case equalFold(o.args[1], "REFCOUNT"):
			o.c.W.Int(1)
		case equalFold(o.args[1], "IDLETIME"):
			objectIdle(o.c, v)
		default:
			objectFreq(o.c, v)
		}
		return shard.Unchanged
	}).run(args[2])
}

func objectCommand() *Command {
	s := func(name, summary string, run func(*Ctx, [][]byte)) *Command {
		return &Command{Name: "object|" + name, Arity: 3, Flags: []string{"readonly"}, ACL: []string{"keyspace"},
			Keys: KeySpec{First: 2, Last: 2, Step: 1, Flags: []string{"RO"}}, Group: "generic", Since: "2.2.3",
			Complexity: "O(1)", Summary: summary, Args: []Arg{argKey("key")}, Run: run}
	}
	return container("object", "generic", "A container for object introspection commands.",
		s("encoding", "Returns the internal encoding of a Redis object.", cmdObject),
		s("refcount", "Returns the reference count of a value of a key.", cmdObject),
		s("idletime", "Returns the time since the last access to a Redis object.", cmdObject),
		s("freq", "Returns the logarithmic access frequency counter of a Redis object.", cmdObject),
	)
}
