package command

import (
	"unsafe"

	"github.com/rlserver/rlserver/resp"
	"github.com/rlserver/rlserver/shard"
)

// allKeys appends the keys of CL.ALL's rules to keys (KeySpec.Find): the
// rules parseAll would read, as far as their names and counts go.
func allKeys(args, keys [][]byte) [][]byte {
	if len(args) < 2 {
		return keys
	}
	count, ok := parsePositive(args[1])
	rest := args[2:]
	for ; ok && count > 0 && len(rest) > 0; count-- {
		f := ruleFormOf(rest[0])
		if f == nil || len(rest) < 2+f.params {
			break
		}
		keys = append(keys, rest[1])
		rest = rest[2+f.params:]
	}
	return keys
}

// allScratch is a connection's CL.ALL scratch, reused across calls so that
// CL.ALL allocates nothing in steady state: the keyspace's rules and each
// rule's ops.
type allScratch struct {
	rules []shard.Rule
	ops   []ops
	forms []ruleOp

	// The last request parsed, but for its keys: a request that repeats
	// it (one rule set, many keys: the usual case) reuses its ops instead
	// of parsing again. Requests are compared as read (Ctx.raw), in the
	// stretches between their keys. nargs 0: none to reuse.
	same   []byte // its stretches, back to back
	ends   []int  // where each of them ends in same
	keyAt  []int  // where its keys are in args
	nargs  int
	logMax int64 // the LOG bound it was parsed under
}

// parseAll parses CL.ALL's arguments into the connection's rules; on
// error it returns the error reply.
func parseAll(c *Ctx, args [][]byte) string {
	a := &c.all
	logMax := c.h.logMax.Load()
	if a.repeats(args, c.raw, logMax) {
		return a.rekey(c, args)
	}
	a.keyAt, a.nargs = a.keyAt[:0], 0
	if err := parseRules(c, args); err != "" {
		a.keyAt = a.keyAt[:0]
		return err
	}
	a.remember(args, c.raw, logMax)
	return ""
}

// guess reports whether args could be the remembered request but for
// its keys, by their count alone, with its name CL.ALL: then its keys are
// likely at keyAt (a prefetch's guess; repeats tells for sure).
func (a *allScratch) guess(args [][]byte) bool {
	return a.nargs != 0 && len(args) == a.nargs && equalFold(args[0], "CL.ALL")
}

// repeats reports whether the request (args, read as raw) is the
// remembered one but for the keys: every stretch between its keys holds
// the same bytes.
func (a *allScratch) repeats(args [][]byte, raw []byte, logMax int64) bool {
	if a.nargs == 0 || len(args) != a.nargs || logMax != a.logMax {
		return false
	}
	return a.stretches(args, raw, false)
}

// remember keeps what repeats compares a later request with; parseRules
// noted the keys' positions in keyAt. A request not as read (raw nil:
// inline, or queued by MULTI) leaves nothing to reuse.
func (a *allScratch) remember(args [][]byte, raw []byte, logMax int64) {
	a.same, a.ends = a.same[:0], a.ends[:0]
	if a.stretches(args, raw, true) {
		a.nargs, a.logMax = len(args), logMax
	}
}

// stretches walks the stretches of raw between the request's keys (at
// keyAt): from the end of the key before (of the command's name for the
// first) through the two bytes after the argument before the next key,
// where that key's header starts (through raw's end for the last). A
// stretch includes its arguments' length headers, and the reader splits
// the same bytes into the same arguments, so the same stretches mean the
// same arguments. With keep it appends them to same (each ending at ends);
// otherwise it reports whether each equals the one kept. It is false when
// an argument does not lie in raw.
func (a *allScratch) stretches(args [][]byte, raw []byte, keep bool) bool {
	lo, ok := argEnd(raw, args[0])
	from := 0
	for k := 0; ok && k <= len(a.keyAt); k++ {
		hi, next := len(raw), 0
		if k < len(a.keyAt) {
			at := a.keyAt[k]
			var nextOK bool
			hi, ok = argEnd(raw, args[at-1])
			hi += 2
			next, nextOK = argEnd(raw, args[at])
			ok = ok && nextOK
		}
		if !ok || lo > hi || hi > len(raw) {
			return false
		}
		if keep {
			a.same = append(a.same, raw[lo:hi]...)
			a.ends = append(a.ends, len(a.same))
		} else {
			to := a.ends[k]
			if string(raw[lo:hi]) != string(a.same[from:to]) {
				return false
			}
			from = to
		}
		lo = next
	}
	return ok
}

// argEnd returns where arg ends in raw, when it lies in raw.
func argEnd(raw, arg []byte) (int, bool) {
	if raw == nil {
		return 0, false
	}
	off := uintptr(unsafe.Pointer(unsafe.SliceData(arg))) - uintptr(unsafe.Pointer(unsafe.SliceData(raw)))
	if off > uintptr(len(raw)) || uintptr(len(arg)) > uintptr(len(raw))-off {
		return 0, false
	}
	return int(off) + len(arg), true
}

// rekey points the remembered rules at this request's keys, and draws the
// ACQUIRE rules' new lease ids.
func (a *allScratch) rekey(c *Ctx, args [][]byte) string {
	for i, at := range a.keyAt {
		key := args[at]
		for j := range i { // by index: a Rule is large
			if string(a.rules[j].Key) == string(key) {
				return errAllDistinctKeys
			}
		}
		a.rules = a.rules[:i+1]
		a.rules[i].Key = key
		if op, ok := a.forms[i].(*acquireOp); ok {
			c.newLeaseID(&op.id)
		}
	}
	return ""
}

// parseRules parses CL.ALL's arguments into the connection's rules, noting
// where the keys are; on error it returns the error reply.
func parseRules(c *Ctx, args [][]byte) string {
	a := &c.all
	count, ok := parsePositive(args[1])
	if !ok {
		return errNotInt
	}
	rest := args[2:]
	if count > int64(len(rest)) {
		return errSyntax
	}
	if int(count) > len(a.ops) {
		a.ops = make([]ops, count) // before any op is handed out: ops point into it
	}
	a.rules, a.forms = a.rules[:0], a.forms[:0]
	for i := range int(count) {
		if len(rest) == 0 {
			return errSyntax
		}
		f := ruleFormOf(rest[0])
		if f == nil || len(rest) < 2+f.params {
			return errSyntax
		}
		key := rest[1]
		op := a.ops[i].of(f.kind)
		if err := f.parse(c, op, rest[2:2+f.params]); err != "" {
			return err
		}
		for j := range a.rules {
			if string(a.rules[j].Key) == string(key) {
				return errAllDistinctKeys
			}
		}
		// Grown in place, not appended: a Rule is large, and UpdateAll
		// sets all the rest of it.
		if len(a.rules) < cap(a.rules) {
			a.rules = a.rules[:len(a.rules)+1]
		} else {
			a.rules = append(a.rules, shard.Rule{})
		}
		r := &a.rules[len(a.rules)-1]
		r.Key, r.Op = key, op
		a.forms = append(a.forms, op)
		a.keyAt = append(a.keyAt, len(args)-len(rest)+1)
		rest = rest[2+f.params:]
	}
	n := int64(1)
	switch {
	case len(rest) == 0:
	case len(rest) == 2 && equalFold(rest[0], "COST"):
		if n, ok = parseCost(rest[1]); !ok {
			return errNotInt
		}
	default:
		return errSyntax
	}
	for _, op := range a.forms {
		op.setCost(n)
	}
	return ""
}

// CL.ALL numrules rule [rule ...] [COST n]
//
// The keyspace decides every rule, all or nothing, atomically across the
// keys' shards (shard.View.UpdateAll). When a rule denies, each rule's
// decision is what it would have answered alone.
func cmdAll(c *Ctx, args [][]byte) {
	if err := parseAll(c, args); err != "" {
		c.err(err)
		c.clearAll()
		return
	}
	a := &c.all
	all, st := c.keys().UpdateAll(a.rules, c.Now())
	if st != shard.Done {
		c.notDone(st)
		c.clearAll()
		return
	}
	c.decided(all)
	c.W.Array(1 + len(a.rules))
	c.W.Buf = resp.AppendBool(c.W.Buf, 2, all)
	for i := range a.rules {
		c.W.Buf = a.forms[i].appendRule(c.W.Buf, c.W.Proto, a.rules[i].D, all)
	}
	c.clearAll()
}

// clearAll drops the rules' references to the request's arguments.
func (c *Ctx) clearAll() {
	for i := range c.all.rules {
		c.all.rules[i].Key = nil
	}
	c.all.rules = c.all.rules[:0]
}
