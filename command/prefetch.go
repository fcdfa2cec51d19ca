package command

// Prefetching. A pipelined batch of commands on keys spread over a large
// keyspace pays, per command, two cache misses one after the other: the
// index group, then the record the group points to. When the reader
// queues several requests at once (batch mode, see resp.Reader.Batch), the
// server shows them to Prefetch, and warm has the keyspace load all their
// keys' index groups, then all their records, before the first request
// runs (shard.Store.Warm): the loads of a pass do not depend on one
// another, so their misses overlap. BenchmarkBatch with keys=100000 shows
// the gain; with keys=1, the cost.

// warmMax bounds the keys one batch warms.
const warmMax = 64

// warmPrev is how many of a request's keys are compared with the previous
// request's in their places.
const warmPrev = 4

// warm prefetches the keys of a batch of parsed requests (the reader's queue:
// args back to back, counts each request's; see requestKeys for which
// keys), each once, through shard.Store.Warm, which takes only the shard
// locks that are free (a prefetch is a hint, not worth a wait).
func (c *connection) warm(args [][]byte, counts []int) {
	if len(counts) < 2 || c.sess.user == nil || c.sess.inMulti {
		return // one request (pipeline 1) runs at once: nothing to overlap
	}
	var hs [warmMax]uint64
	// A key the same as the previous request's in its place (hot keys, a
	// CL.ALL's rules on hot keys), or as the key before it, is warmed once.
	var prev [warmPrev]uint64
	var last uint64
	n, requests := 0, 0
	for _, argc := range counts {
		keys := c.requestKeys(args[:argc])
		args = args[argc:]
		if len(keys) == 0 {
			continue
		}
		requests++
		for j, key := range keys[:min(len(keys), warmMax-n)] {
			h := c.Store().Hash(key)
			again := h == last
			if j < warmPrev {
				again = again || h == prev[j]
				prev[j] = h
			}
			last = h
			if !again {
				hs[n] = h
				n++
			}
		}
		if n == warmMax {
			break
		}
	}
	if requests < 2 || n == 0 {
		return // one request runs at once: warming it first gains nothing
	}
	c.Store().Warm(hs[:n])
}

// requestKeys returns the keys of a request by its command's key spec in the
// table (Command.keysOf, as ACL checks and COMMAND GETKEYS find them), or
// for a CL.ALL shaped as the connection's last one, where that one had
// them (a guess: see allScratch.guess). The slice is the connection's
// scratch, valid until the next call.
func (c *connection) requestKeys(args [][]byte) [][]byte {
	cmd := c.command(args[0])
	keys := c.warmKeys[:0]
	switch {
	case cmd == nil:
	case cmd.Keys.Movable && c.all.guess(args):
		// A CL.ALL with as many arguments as the last one this connection
		// ran: its keys are guessed where that one's were, without parsing
		// its rules. A wrong guess only warms the wrong lines.
		for _, at := range c.all.keyAt {
			keys = append(keys, args[at])
		}
	default:
		keys = cmd.keysOf(args, keys)
	}
	if cap(keys) <= warmMax {
		c.warmKeys = keys[:0] // keep what grew, unless a huge request grew it
	}
	return keys
}
