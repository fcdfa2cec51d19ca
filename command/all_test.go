package command

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/resp"
	"github.com/rlserver/rlserver/shard"
)

// cmdAllReference is CL.ALL at its plainest, through the keyspace's
// single-key calls only: every rule checked on its own (a live key through
// a check-only op that stores nothing, an absent one on a fresh state),
// then, if all admit, every rule run as its single-key command would.
// TestAllAgainstReference holds cmdAll, which the keyspace runs as one
// atomic call taking decoded copies at once, to it.
func cmdAllReference(c *Ctx, args [][]byte) {
	if err := parseAll(c, args); err != "" {
		c.err(err)
		return
	}
	a := &c.all
	keys, now := c.keys(), c.Now()
	all := true
	for i := range a.rules {
		r := &a.rules[i]
		chk := &checkOp{op: r.Op}
		_, st := keys.UpdateLive(r.Key, now, chk)
		switch st {
		case shard.WrongType:
			c.err(errWrongType)
			return
		case shard.Absent:
			chk.d, _, _ = r.Op.Run(r.Op.Kind().New(), now, false)
		}
		r.D = chk.d
		all = all && r.D.Allowed
	}
	if all {
		for i := range a.rules {
			r := &a.rules[i]
			r.D, _ = keys.Update(r.Key, now, r.Op)
		}
	}
	c.W.Array(1 + len(a.rules))
	c.W.Buf = resp.AppendBool(c.W.Buf, 2, all)
	for i := range a.rules {
		c.W.Buf = a.forms[i].appendRule(c.W.Buf, c.W.Proto, a.rules[i].D, all)
	}
	c.clearAll()
}

// checkOp runs op's check and keeps its decision, answering the keyspace
// "nothing changed, fresh now" so that it stores nothing.
type checkOp struct {
	op shard.Op
	d  engine.Decision
}

func (o *checkOp) Kind() engine.Kind { return o.op.Kind() }
func (o *checkOp) Run(st engine.State, now int64, _ bool) (engine.Decision, bool, bool) {
	d, _, ok := o.op.Run(st, now, false)
	o.d = d
	return engine.Decision{}, false, ok
}

// TestAllAgainstReference runs random CL.ALL calls, mixed with single-key
// calls (a key called twice in a row is hot: its state is the shard's own
// object), on a server and on a reference server, with the clock moving so
// that keys expire and keys of one kind expire into another. Every reply,
// and after every step every key's TYPE and PTTL, must be the same (that
// found the bug TestLimiterAllHotKey pins, which the replies alone showed
// only hundreds of steps later). ALL_SEED=n replays a seed exactly (it
// seeds the stores' key hash too), ALL_TRACE=1 logs every step. Few shards
// make rules share one often; small limits make rules deny often.
func TestAllAgainstReference(t *testing.T) {
	for _, shards := range []int{1, 2, 8} {
		t.Run(fmt.Sprintf("shards=%d", shards), func(t *testing.T) {
			seed := uint64(time.Now().UnixNano())
			if v, err := strconv.ParseUint(os.Getenv("ALL_SEED"), 10, 64); err == nil {
				seed = v // reproduce a failure
			}
			t.Logf("ALL_SEED=%d", seed)
			rng := rand.New(rand.NewPCG(seed, uint64(shards)))
			a, clockA := seededConn(shards, seed)
			b, clockB := seededConn(shards, seed)
			keys := []string{"k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7"}
			home := []string{"TOKENBUCKET", "THROTTLE", "LEAKYBUCKET", "FIXED", "SLIDING", "LOG", "TOKENBUCKET", "LOG"}
			single := map[string]string{
				"TOKENBUCKET": "CL.TOKENBUCKET %s %s", "THROTTLE": "CL.THROTTLE %s %s",
				"LEAKYBUCKET": "CL.LEAKYBUCKET %s %s", "FIXED": "CL.WINDOW %s %s FIXED",
				"SLIDING": "CL.WINDOW %s %s SLIDING", "LOG": "CL.WINDOW %s %s LOG",
			}
			params := func(kind string) string {
				switch kind {
				case "TOKENBUCKET", "LEAKYBUCKET":
					return fmt.Sprintf("%d 1 %dms", 1+rng.IntN(5), 200+rng.IntN(800))
				case "THROTTLE":
					return fmt.Sprintf("%d 1 %dms", rng.IntN(4), 200+rng.IntN(800))
				}
				limit := 1 + rng.IntN(5)
				if kind == "LOG" && rng.IntN(4) == 0 {
					limit = 40 // a long LOG is kept as an object (boxed)
				}
				return fmt.Sprintf("%d %dms", limit, 500+rng.IntN(2000))
			}
			run := func(c *connection, cmd string, ref bool) string {
				args := bytes.Fields([]byte(cmd))
				c.W.Buf = c.W.Buf[:0]
				switch {
				case ref && string(args[0]) == "CL.ALL":
					c.sess.batchCmd++
					cmdAllReference(&c.Ctx, args)
				case rng.IntN(4) != 0: // as read, as the server runs it
					c.Exec(asRead(args))
				default:
					c.exec(args)
				}
				c.EndBatch()
				return string(c.W.Buf)
			}
			var last, lastCost string
			var lastAll []string // the last new rule set, a %s for each key
			for step := 0; step < 20000; step++ {
				if step%50 == 0 {
					// New connections now and then: their scratch starts
					// empty and grows with the rule counts they see.
					a = newTestConn(a.h)
					b = newTestConn(b.h)
				}
				var cmd string
				if rng.IntN(3) == 0 {
					i := rng.IntN(len(keys))
					if last != "" && rng.IntN(2) == 0 {
						cmd = last // the same key again: it gets hot
					} else {
						cmd = fmt.Sprintf(single[home[i]], keys[i], params(home[i]))
					}
					last = cmd
				} else if lastAll != nil && rng.IntN(3) == 0 {
					// The last rule set on other keys: a connection reuses
					// its parsed rules.
					perm := rng.Perm(len(keys))
					var rules []string
					for j, r := range lastAll {
						rules = append(rules, fmt.Sprintf(r, keys[perm[j]]))
					}
					cmd = fmt.Sprintf("CL.ALL %d %s%s", len(rules), strings.Join(rules, " "), lastCost)
				} else {
					n := 1 + rng.IntN(4)
					var rules []string
					lastAll = lastAll[:0]
					for _, i := range rng.Perm(len(keys))[:n] {
						kind := home[i]
						if rng.IntN(10) == 0 {
							kind = home[rng.IntN(len(home))] // perhaps another kind: WRONGTYPE, or it replaces an expired key
						}
						p := params(kind)
						rules = append(rules, kind+" "+keys[i]+" "+p)
						lastAll = append(lastAll, kind+" %s "+p)
					}
					lastCost = ""
					if rng.IntN(3) == 0 {
						lastCost = fmt.Sprintf(" COST %d", rng.IntN(4))
					}
					cmd = fmt.Sprintf("CL.ALL %d %s%s", n, strings.Join(rules, " "), lastCost)
				}
				got, want := run(a, cmd, false), run(b, cmd, true)
				if os.Getenv("ALL_TRACE") != "" {
					t.Logf("%d %s -> %q", step, cmd, got)
				}
				if got != want {
					t.Fatalf("seed %d, step %d: %s\n got %q\nwant %q", seed, step, cmd, got, want)
				}
				// Every key's state the same on both, whether replies show
				// it or not.
				for _, k := range keys {
					if sa, sb := stateOf(&a.Ctx, k), stateOf(&b.Ctx, k); sa != sb {
						t.Fatalf("seed %d, step %d: %s\nthen %s holds %s, reference %s", seed, step, cmd, k, sa, sb)
					}
				}
				if rng.IntN(4) == 0 {
					d := time.Duration(rng.IntN(1500)) * time.Millisecond
					clockA.Advance(d)
					clockB.Advance(d)
				}
			}
		})
	}
}

// stateOf describes key's live record, whatever form the shard keeps it in:
// its kind, expiry and the compact encoding of its state.
func stateOf(c *Ctx, key string) string {
	store := c.Store()
	h := store.Hash([]byte(key))
	sh := store.ShardOf(h)
	lk := sh.Lock()
	defer sh.Unlock()
	f := lk.Find([]byte(key), h)
	if !f.OK || f.Exp <= c.h.clock.Now() {
		return "nothing" // an expired record's content does not matter
	}
	out := "nothing"
	lk.Each(c.h.clock.Now(), func(it shard.Item) bool {
		if string(it.Key) != key {
			return true
		}
		out = fmt.Sprintf("%v exp %d %x", f.Kind, it.ExpireAt, lk.State(it).AppendCompact(nil, it.ExpireAt))
		return false
	})
	return out
}

// TestAllAcquireRule: CL.ALL holds an ACQUIRE rule, whose decision is
// CL.ACQUIRE's six-element reply: the lease id when the whole call admitted
// and the lease was taken (a real lease, which CL.RELEASE returns), nil
// otherwise, with nothing held.
func TestAllAcquireRule(t *testing.T) {
	c, _ := testConn(0)
	run := c.do
	got := run("CL.ALL", "2", "ACQUIRE", "exports", "2", "30s", "FIXED", "ip", "1", "1m")
	const head = "*3\r\n:1\r\n*6\r\n:1\r\n:2\r\n:1\r\n:0\r\n:30000\r\n$16\r\n"
	if !strings.HasPrefix(got, head) || len(got) != len(head)+16+2+len("*5\r\n:1\r\n:1\r\n:0\r\n:0\r\n:60000\r\n") {
		t.Fatalf("admitted CL.ALL with ACQUIRE = %q", got)
	}
	id := got[len(head) : len(head)+16]
	if !strings.HasSuffix(got, "*5\r\n:1\r\n:1\r\n:0\r\n:0\r\n:60000\r\n") {
		t.Fatalf("FIXED rule's decision in %q", got)
	}
	// The window is used up: nothing is taken, the ACQUIRE rule shows what
	// it alone would answer, without an id.
	want := "*3\r\n:0\r\n*6\r\n:1\r\n:2\r\n:0\r\n:0\r\n:30000\r\n$-1\r\n*5\r\n:0\r\n:1\r\n:0\r\n:60000\r\n:60000\r\n"
	if got := run("CL.ALL", "2", "ACQUIRE", "exports", "2", "30s", "FIXED", "ip", "1", "1m"); got != want {
		t.Fatalf("denied CL.ALL with ACQUIRE = %q\nwant %q", got, want)
	}
	if got := run("CL.ACQUIRE", "exports", "2", "30s", "0"); got != "*6\r\n:1\r\n:2\r\n:1\r\n:0\r\n:30000\r\n$-1\r\n" {
		t.Fatalf("peek after the denied call = %q: a lease was held for it", got)
	}
	if got := run("CL.RELEASE", "exports", id); got != ":1\r\n" {
		t.Fatalf("CL.RELEASE of the CL.ALL lease = %q", got)
	}
	if got := run("CL.ALL", "1", "ACQUIRE", "ip", "2", "30s"); got != "-"+errWrongType+"\r\n" {
		t.Fatalf("ACQUIRE rule on a window key = %q", got)
	}
	if got := run("CL.ALL", "1", "ACQUIRE", "x", "0", "30s"); got != "-"+errNotInt+"\r\n" {
		t.Fatalf("ACQUIRE rule with limit 0 = %q", got)
	}
	if got := run("CL.ALL", "1", "ACQUIRE", "x", "1", "soon"); got != "-"+errInvalidDuration([]byte("soon"))+"\r\n" {
		t.Fatalf("ACQUIRE rule with a bad lease = %q", got)
	}
}

// TestAllRepeatedRules: a connection reuses the rules of its last CL.ALL
// when a request repeats them but for the keys. Replies match those of
// connections that parse every request afresh, whatever changes between
// calls: the keys, a parameter, the rule count, the cost, the keys
// becoming equal, and the LOG bound (CONFIG SET log-max-limit).
func TestAllRepeatedRules(t *testing.T) {
	a, clockA := seededConn(2, 7)
	b, clockB := seededConn(2, 7)
	run := func(c *connection, cmd string) string {
		c.W.Buf = c.W.Buf[:0]
		if c == a {
			c.Exec(asRead(argsOf(strings.Fields(cmd)...))) // as the server reads it
		} else {
			c.exec(argsOf(strings.Fields(cmd)...))
		}
		c.EndBatch()
		return string(c.W.Buf)
	}
	steps := []string{
		"CL.ALL 2 TOKENBUCKET u1 3 1 1s FIXED ip1 5 1m",
		"CL.ALL 2 TOKENBUCKET u2 3 1 1s FIXED ip1 5 1m",
		"CL.ALL 2 TOKENBUCKET user-000000002 3 1 1s FIXED ip1 5 1m",
		"CL.ALL 2 TOKENBUCKET u2 4 1 1s FIXED ip1 5 1m",
		"CL.ALL 2 TOKENBUCKET u2 4 1 1s FIXED ip1 50 1m",
		"CL.ALL 2 TOKENBUCKET u2 4 1 1s FIXED ip1 50 1h",
		"CL.ALL 2 TOKENBUCKET u1 3 1 1s FIXED ip2 5 1m",
		"CL.ALL 2 TOKENBUCKET u1 3 1 1s FIXED ip2 5 1m COST 2",
		"CL.ALL 2 TOKENBUCKET u1 3 1 1s FIXED ip2 5 1m COST 2",
		"CL.ALL 2 TOKENBUCKET u1 2 1 1s FIXED ip2 5 1m",
		"CL.ALL 2 TOKENBUCKET u1 2 1 1s FIXED u1 5 1m",
		"CL.ALL 2 TOKENBUCKET u3 2 1 1s FIXED ip3 5 1m",
		"CL.ALL 2 TOKENBUCKET u3 2 1 1s FIXED ip3 5 1m",
		"CL.ALL 2 TOKENBUCKET u3 2 1 1s LOG ip4 5 1m",
		"CONFIG SET log-max-limit 4",
		"CL.ALL 2 TOKENBUCKET u3 2 1 1s LOG ip5 5 1m",
		"CONFIG SET log-max-limit 10000",
		"CL.ALL 2 TOKENBUCKET u3 2 1 1s LOG ip5 5 1m",
		"CL.ALL 1 TOKENBUCKET u3 2 1 1s",
		"CL.ALL 1 FIXED u3 2 1s",
		"CL.ALL 1 TOKENBUCKET u4 2 1 1s",
	}
	for i, cmd := range steps {
		fresh := newTestConn(b.h)
		got, want := run(a, cmd), run(fresh, cmd)
		if got != want {
			t.Fatalf("step %d: %s\n got %q\nwant %q (parsed afresh)", i, cmd, got, want)
		}
		clockA.Advance(100 * time.Millisecond)
		clockB.Advance(100 * time.Millisecond)
	}
	// What is reused: the rules of a request as read, for a request with
	// the same bytes between its keys; nothing for one not as read.
	parse := func(cmd string) ([][]byte, []byte) {
		args, raw := asRead(argsOf(strings.Fields(cmd)...))
		a.raw = raw
		defer func() { a.raw = nil }()
		if err := parseAll(&a.Ctx, args); err != "" {
			t.Fatalf("%s: %s", cmd, err)
		}
		return args, raw
	}
	logMax := a.h.logMax.Load()
	parse("CL.ALL 2 TOKENBUCKET u1 3 1 1s FIXED ip1 5 1m")
	for cmd, want := range map[string]bool{
		"CL.ALL 2 TOKENBUCKET other-user 3 1 1s FIXED 10.0.0.1 5 1m": true,
		"CL.ALL 2 TOKENBUCKET u1 4 1 1s FIXED ip1 5 1m":              false,
		"CL.ALL 2 TOKENBUCKET u1 3 1 1s FIXED ip1 5 1h":              false,
		"CL.ALL 2 TOKENBUCKET u1 3 1 1s SLIDING ip1 5 1m":            false,
		"CL.ALL 2 TOKENBUCKET u1 3 1 1s FIXED ip1 5 1m COST 1":       false,
	} {
		args, raw := asRead(argsOf(strings.Fields(cmd)...))
		if got := a.all.repeats(args, raw, logMax); got != want {
			t.Errorf("%s: repeats = %v, want %v", cmd, got, want)
		}
		if a.all.repeats(args, nil, logMax) {
			t.Errorf("%s: repeats with no raw bytes", cmd)
		}
	}
	// An argument holding what looks like the next one's header.
	parse("CL.ALL 1 FIXED k 5 1m")
	args, raw := asRead([][]byte{[]byte("CL.ALL"), []byte("1"), []byte("FIXED"), []byte("k"), []byte("5\r\n$2\r\n1m"), []byte("1m")})
	if a.all.repeats(args, raw, logMax) {
		t.Error("repeats across a changed argument split")
	}
	// An argument bounding a stretch (the name, a key, the one before a
	// key) that does not lie in raw repeats nothing.
	parse("CL.ALL 1 FIXED k 5 1m")
	args, raw = asRead(argsOf(strings.Fields("CL.ALL 1 FIXED k 5 1m")...))
	if !a.all.repeats(args, raw, logMax) {
		t.Error("the same request does not repeat")
	}
	for _, i := range []int{0, 2, 3} {
		moved := slices.Clone(args)
		moved[i] = slices.Clone(args[i])
		if a.all.repeats(moved, raw, logMax) {
			t.Errorf("repeats with argument %d not in the request's bytes", i)
		}
	}
	parse("CL.ALL 1 FIXED k 5 1m")
	a.exec(argsOf(strings.Fields("CL.ALL 1 FIXED k 5 1m")...)) // not as read
	if a.all.nargs != 0 {
		t.Error("a request not as read left rules to reuse")
	}

	// ACQUIRE rules draw a new lease id on every call, reused rules or not.
	first := run(a, "CL.ALL 1 ACQUIRE sem 5 1m")
	second := run(a, "CL.ALL 1 ACQUIRE sem 5 1m")
	if first[len(first)-18:] == second[len(second)-18:] || !strings.Contains(second, "$16\r\n") {
		t.Fatalf("repeated ACQUIRE rule: %q then %q", first, second)
	}
}

// TestLimiterRegistry: every CL.ALL rule form parses its documented
// parameters into an op of its entry's kind, and every engine kind has an
// entry.
func TestLimiterRegistry(t *testing.T) {
	c, _ := testConn(0)
	params := map[int][]string{2: {"5", "1m"}, 3: {"5", "1", "1m"}}
	seen := map[engine.Kind]bool{}
	for _, lk := range limiterKinds {
		seen[lk.kind] = true
		for j := range lk.rules {
			f := &lk.rules[j]
			var o ops
			op := o.of(f.kind)
			if err := f.parse(&c.Ctx, op, argsOf(params[f.params]...)); err != "" {
				t.Fatalf("%s %v: %q", f.name, params[f.params], err)
			}
			if op.Kind() != lk.kind {
				t.Errorf("%s makes a %v op in the %v entry", f.name, op.Kind(), lk.kind)
			}
			if ruleFormOf([]byte(strings.ToLower(f.name))) != f {
				t.Errorf("%s is not found by its name", f.name)
			}
		}
	}
	for _, k := range engine.Kinds() {
		if !seen[k] && !k.IsValue() {
			t.Errorf("engine kind %v has no registry entry", k)
		}
	}
}
