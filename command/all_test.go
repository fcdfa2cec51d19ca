package command

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/resp"
	"github.com/rlserver/rlserver/shard"
)

// cmdAllReference is CL.ALL at its plainest: every state a private copy
// (no connection scratch, no object of the shard's),
// every rule checked, then, if all admit, every rule taken and its key
// found again before its store.
// TestAllAgainstReference holds cmdAll, which takes decoded copies at once
// and finds keys again only when rules share a shard, to it.
func cmdAllReference(c *Ctx, args [][]byte) {
	rules, n, ok := parseAll(c, args)
	if !ok {
		return
	}
	store := c.Store()
	for i := 0; i < store.NumShards(); i++ {
		store.Shard(i).Lock()
		defer store.Shard(i).Unlock()
	}
	now := c.Now()
	all := true
	for i := range rules {
		r := &rules[i]
		r.h = store.Hash(r.key)
		r.shard = store.ShardIndexOf(r.h)
		scratch := shard.NewState(r.kind) // fresh: no connection scratch
		if !r.find(store.Shard(r.shard), now, &scratch) {
			c.err(resp.ErrWrongType)
			return
		}
		if r.boxed {
			// A private copy of the shard's object: nothing another
			// rule's store does to the shard's objects can touch it.
			cp := shard.NewState(r.kind)
			if err := cp.(engine.Compact).DecodeCompact(r.state.(engine.Compact).AppendCompact(nil, now), now); err != nil {
				panic(err)
			}
			r.state = cp
		}
		r.d = r.run(r.state, now, n, false)
		all = all && r.d.Allowed
	}
	if all {
		for i := range rules {
			r := &rules[i]
			r.d = r.run(r.state, now, n, true)
			r.refind = true
			r.store(store.Shard(r.shard), now, n)
		}
	}
	c.W.Array(1 + len(rules))
	c.W.Buf = resp.AppendBool(c.W.Buf, 2, all)
	for i := range rules {
		c.W.Buf = appendDecision(c.W.Buf, rules[i].d)
	}
	clear(rules)
	c.allRules = rules[:0]
}

// TestAllAgainstReference runs random CL.ALL calls, mixed with single-key
// calls (a key called twice in a row is hot: its state is the shard's own
// object), on a server and on a reference server, with the clock moving so
// that keys expire and keys of one kind expire into another. Every reply,
// and after every step every key's TYPE and PTTL, must be the same (that
// found the bug TestLimiterAllHotKey pins, which the replies alone showed
// only hundreds of steps later). ALL_SEED=n replays a seed (with one shard
// exactly: the shards a key falls in follow the store's random hash seed),
// ALL_TRACE=1 logs every step. Few shards
// make rules share one often; small limits make rules deny often.
func TestAllAgainstReference(t *testing.T) {
	for _, shards := range []int{1, 2, 8} {
		t.Run(fmt.Sprintf("shards=%d", shards), func(t *testing.T) {
			seed := uint64(time.Now().UnixNano())
			if v, err := strconv.ParseUint(os.Getenv("ALL_SEED"), 10, 64); err == nil {
				seed = v // reproduce a failure
			}
			rng := rand.New(rand.NewPCG(seed, uint64(shards)))
			a, clockA := testConn(shards)
			b, clockB := testConn(shards)
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
			run := func(c *Ctx, cmd string, ref bool) string {
				args := bytes.Fields([]byte(cmd))
				c.W.Buf = c.W.Buf[:0]
				if ref && string(args[0]) == "CL.ALL" {
					c.sess.batchCmd++
					cmdAllReference(c, args)
				} else {
					c.exec(args)
				}
				c.EndBatch()
				return string(c.W.Buf)
			}
			var last string
			for step := 0; step < 20000; step++ {
				if step%50 == 0 {
					// New connections now and then: their scratch starts
					// empty and grows with the rule counts they see.
					a = newTestCtx(a.h)
					b = newTestCtx(b.h)
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
				} else {
					n := 1 + rng.IntN(4)
					var rules []string
					for _, i := range rng.Perm(len(keys))[:n] {
						kind := home[i]
						if rng.IntN(10) == 0 {
							kind = home[rng.IntN(len(home))] // perhaps another kind: WRONGTYPE, or it replaces an expired key
						}
						rules = append(rules, kind+" "+keys[i]+" "+params(kind))
					}
					cmd = fmt.Sprintf("CL.ALL %d %s", n, strings.Join(rules, " "))
					if rng.IntN(3) == 0 {
						cmd += fmt.Sprintf(" COST %d", rng.IntN(4))
					}
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
					if sa, sb := stateOf(a, k), stateOf(b, k); sa != sb {
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
	sh.Lock()
	defer sh.Unlock()
	f := sh.Find([]byte(key), h)
	if !f.OK || f.Exp <= c.h.clock.Now() {
		return "nothing" // an expired record's content does not matter
	}
	st := sh.Load(f, shard.NewState(f.Kind))
	return fmt.Sprintf("%v exp %d %x", f.Kind, f.Exp, st.(engine.Compact).AppendCompact(nil, f.Exp))
}
