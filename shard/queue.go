package shard

import (
	"encoding/binary"
	"sync"
)

// The change lists (dirty records, deleted keys) are queues of fixed-size
// chunks: they grow without copying, a drained chunk goes back to a small
// shared free list, and a list holds about what is outstanding, not the
// most it ever held. Deleted keys are bytes in the chunks, not a string
// each: eviction's stream of deletions allocates nothing per key.

const (
	chunkBytes = 16 << 10
	chunkRefs  = chunkBytes / 4
	// freeChunks is the most drained chunks of each kind kept for reuse,
	// over all shards.
	freeChunks = 64
)

type refChunk [chunkRefs]ref

type byteChunk [chunkBytes]byte

// chunkPool is a shared free list of drained chunks.
type chunkPool[T any] struct {
	mu   sync.Mutex
	free []*T
}

var (
	refChunks  chunkPool[refChunk]
	byteChunks chunkPool[byteChunk]
)

func (p *chunkPool[T]) get() *T {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.free); n > 0 {
		c := p.free[n-1]
		p.free = p.free[:n-1]
		return c
	}
	return new(T)
}

func (p *chunkPool[T]) put(c *T) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.free) < freeChunks {
		p.free = append(p.free, c)
	}
}

// refQueue is a FIFO of refs.
type refQueue struct {
	chunks []*refChunk
	head   int // next to read, in chunks[0]
	tail   int // next to write, in the last chunk
	n      int
}

func (q *refQueue) len() int { return q.n }

func (q *refQueue) push(r ref) {
	if len(q.chunks) == 0 || q.tail == chunkRefs {
		q.chunks = append(q.chunks, refChunks.get())
		q.tail = 0
	}
	q.chunks[len(q.chunks)-1][q.tail] = r
	q.tail++
	q.n++
}

// peek returns up to max refs from the front without removing them (they
// are contiguous: at most to the end of the first chunk).
func (q *refQueue) peek(max int) []ref {
	if q.n == 0 {
		return nil
	}
	end := chunkRefs
	if len(q.chunks) == 1 {
		end = q.tail
	}
	return q.chunks[0][q.head : q.head+min(end-q.head, max)]
}

// drop removes the n refs at the front (n at most what peek returned).
func (q *refQueue) drop(n int) {
	q.head += n
	q.n -= n
	if q.n == 0 {
		q.reset()
		return
	}
	if q.head == chunkRefs {
		refChunks.put(q.chunks[0])
		q.chunks[0] = nil
		q.chunks = q.chunks[1:]
		q.head = 0
	}
}

// reset empties the queue, giving back its chunks.
func (q *refQueue) reset() {
	for i, c := range q.chunks {
		refChunks.put(c)
		q.chunks[i] = nil
	}
	q.chunks = q.chunks[:0]
	if cap(q.chunks) > 64 {
		q.chunks = nil
	}
	q.head, q.tail, q.n = 0, 0, 0
}

// keyQueue is a FIFO of keys, each stored as its length (uvarint) and
// bytes. A key longer than a chunk has a chunk of its own size, which is
// not reused.
type keyQueue struct {
	chunks [][]byte // each's len is how far it is written
	head   int      // next to read, in chunks[0]
	n      int
}

func (q *keyQueue) len() int { return q.n }

func (q *keyQueue) push(key []byte) {
	need := binary.MaxVarintLen64 + len(key)
	last := len(q.chunks) - 1
	if last < 0 || cap(q.chunks[last])-len(q.chunks[last]) < need {
		var c []byte
		if need <= chunkBytes {
			c = byteChunks.get()[:0]
		} else {
			c = make([]byte, 0, need)
		}
		q.chunks = append(q.chunks, c)
		last++
	}
	c := binary.AppendUvarint(q.chunks[last], uint64(len(key)))
	q.chunks[last] = append(c, key...)
	q.n++
}

// popTo removes the key at the front and appends it to dst.
func (q *keyQueue) popTo(dst []byte) []byte {
	c := q.chunks[0]
	l, w := binary.Uvarint(c[q.head:])
	start := q.head + w
	dst = append(dst, c[start:start+int(l)]...)
	q.head = start + int(l)
	q.n--
	if q.n == 0 {
		q.reset()
	} else if q.head == len(c) {
		q.release(c)
		q.chunks[0] = nil
		q.chunks = q.chunks[1:]
		q.head = 0
	}
	return dst
}

func (q *keyQueue) release(c []byte) {
	if cap(c) == chunkBytes {
		byteChunks.put((*byteChunk)(c[:chunkBytes]))
	}
}

// reset empties the queue, giving back its chunks.
func (q *keyQueue) reset() {
	for i, c := range q.chunks {
		q.release(c)
		q.chunks[i] = nil
	}
	q.chunks = q.chunks[:0]
	if cap(q.chunks) > 64 {
		q.chunks = nil
	}
	q.head, q.n = 0, 0
}
