package resp

import (
	"math/bits"

	"github.com/rlserver/rlserver/shard"
)

// Prefetching. A pipelined batch of commands on keys spread over a large
// keyspace pays, per command, two cache misses one after the other: the
// index group, then the record the group points to (22% of the server's CPU
// on 100,000 random keys, against 2% on one hot key). When a read brings
// several requests, warm reads all their keys' index groups, then all
// their records, before the first request runs: the loads of a pass do not
// depend on one another, so their misses overlap. On 100,000 live random
// keys (CL.WINDOW SLIDING, P16) it cut the server's CPU per request by about
// a fifth (alternating servers; see BENCHMARKS.md).

// warmMax bounds the keys one read warms.
const warmMax = 64

// warm touches the keys of each complete request at the start of buf
// (unparsed input, starting at a request boundary; see requestKeys for
// which keys). It holds the locks of
// the shards it reads, taking them in index order and only when free (a
// touch is a hint, not worth a wait), so it never races with a writer.
func (c *Conn) warm(buf []byte) {
	if !c.authed || c.inMulti {
		return
	}
	var hs [warmMax]uint64
	var last []byte
	n, requests := 0, 0
	for n < warmMax {
		keys, size := requestKeys(buf, c)
		if len(keys) == 0 {
			break // no request, or one without keys (PING): not worth reading on
		}
		buf = buf[size:]
		if requests++; requests == 1 && len(buf) == 0 {
			return // one request (pipeline 1) runs at once: nothing to overlap
		}
		for _, key := range keys[:min(len(keys), warmMax-n)] {
			if string(key) == string(last) {
				continue // the previous key again (a hot key is warmed once)
			}
			hs[n] = c.srv.store.Hash(key)
			n++
			last = key
		}
	}
	if requests < 2 || n == 0 {
		return // one request runs at once: warming it first gains nothing
	}
	store := c.srv.store
	// The shards to lock, in index order, once each: a bit set over at
	// most shard.MaxShards shards.
	var want, held [shard.MaxShards / 64]uint64
	for _, h := range hs[:n] {
		i := store.ShardIndexOf(h)
		want[i/64] |= 1 << (i % 64)
	}
	for w, set := range want {
		for set != 0 {
			b := set & -set
			set &^= b
			i := w*64 + bits.TrailingZeros64(b)
			if store.Shard(i).TryLock() {
				held[w] |= b
			}
		}
	}
	var sum byte
	for _, h := range hs[:n] {
		if i := store.ShardIndexOf(h); held[i/64]&(1<<(i%64)) != 0 {
			sum += store.Shard(i).TouchIndex(h)
		}
	}
	for _, h := range hs[:n] {
		if i := store.ShardIndexOf(h); held[i/64]&(1<<(i%64)) != 0 {
			sum += store.Shard(i).TouchRecord(h)
		}
	}
	for w, set := range held {
		for set != 0 {
			b := set & -set
			set &^= b
			store.Shard(w*64 + bits.TrailingZeros64(b)).Unlock()
		}
	}
	c.warmSink += sum
}

// requestKeys parses the multibulk request at the start of b just far
// enough to find its keys, by its command's key spec in the table: the
// first key, or all of them for a command whose keys are found by parsing
// (CL.ALL). size is the request's length, 0 when b does not start with a
// complete, well-formed multibulk request of at most warmArgs arguments
// (the reader, not this, reports errors). The slices alias b and the
// connection's scratch, until the next call.
func requestKeys(b []byte, c *Conn) (keys [][]byte, size int) {
	if len(b) == 0 || b[0] != '*' {
		return nil, 0
	}
	argc, i, ok := warmNumber(b, 1)
	if !ok || argc < 1 || argc > warmArgs {
		return nil, 0
	}
	if c.warmArgs == nil {
		c.warmArgs = make([][]byte, warmArgs)
		c.warmKeys = make([][]byte, 0, warmArgs)
	}
	args := c.warmArgs[:argc]
	for a := range args {
		if i >= len(b) || b[i] != '$' {
			return nil, 0
		}
		l, j, ok := warmNumber(b, i+1)
		if !ok || l > len(b)-j-2 {
			return nil, 0
		}
		args[a] = b[j : j+l]
		i = j + l + 2
	}
	// Pipelines repeat one command: exec's last lookup first.
	cmd := c.lastName
	if cmd == nil || string(args[0]) != string(c.lastNameBuf[:c.lastNameLen]) {
		cmd = c.srv.table.lookup(args[0], &c.scratch)
	}
	keys = c.warmKeys[:0]
	switch {
	case cmd == nil:
	case cmd.Keys.Find != nil:
		keys = cmd.Keys.Find(args, keys) // at most argc keys: within the scratch's capacity
	case !cmd.Keys.Movable && cmd.Keys.First > 0 && cmd.Keys.First < argc:
		keys = append(keys, args[cmd.Keys.First])
	}
	return keys, i
}

// warmArgs bounds the arguments of a request warm reads (CL.ALL with 3
// rules has 17).
const warmArgs = 64

// warmNumber parses the decimal number at b[i:] up to its CRLF (at most 9
// digits), returning it and the index after the CRLF.
func warmNumber(b []byte, i int) (n, next int, ok bool) {
	start := i
	for ; i < len(b) && b[i] != '\r'; i++ {
		if b[i] < '0' || b[i] > '9' || i-start >= 9 {
			return 0, 0, false
		}
		n = n*10 + int(b[i]-'0')
	}
	if i == start || i+1 >= len(b) || b[i+1] != '\n' {
		return 0, 0, false
	}
	return n, i + 2, true
}
