package values

import (
	"slices"

	"github.com/rlserver/rlserver/engine"
)

// The value kinds, numbered after the limiter kinds (engine's 1-5). The
// numbers are persisted: they never change.
const (
	KindString engine.Kind = 6
	KindHash   engine.Kind = 7
	KindZSet   engine.Kind = 8
	KindList   engine.Kind = 9
)

func init() {
	// Strings are kept inline, as limiter states are; the collections as
	// objects, changed in place.
	engine.RegisterValue(KindString, "string", false, func() engine.State { return new(String) })
	engine.RegisterValue(KindHash, "hash", true, func() engine.State { return new(Hash) })
	engine.RegisterValue(KindZSet, "zset", true, func() engine.State { return NewZSet() })
	engine.RegisterValue(KindList, "list", true, func() engine.State { return new(List) })
}

// String is a Redis string: its bytes (integers are kept as their
// decimal text, which is also what Redis replies with).
type String struct{ B []byte }

func (s *String) Kind() engine.Kind                      { return KindString }
func (s *String) AppendCompact(b []byte, _ int64) []byte { return append(b, s.B...) }
func (s *String) DecodeCompact(b []byte, _ int64) error  { s.B = append(s.B[:0], b...); return nil }
func (s *String) Size() int                              { return cap(s.B) }
func (s *String) Reset()                                 { s.B = s.B[:0] }
func (l *List) Kind() engine.Kind                        { return KindList }
func (z *ZSet) Kind() engine.Kind                        { return KindZSet }
func (h *Hash) Kind() engine.Kind                        { return KindHash }

// Reset empties the list, keeping its ring for reuse.
func (l *List) Reset() {
	clear(l.buf)
	l.head, l.n, l.bytes = 0, 0, 0
}

// Hash is a Redis hash: fields in the order they were added (the order
// Redis replies in for the small hashes rate limiters keep), found through
// a map once there are more than a few.
type Hash struct {
	fields []string
	vals   [][]byte
	index  map[string]int // field → position, when len(fields) > hashScan
	bytes  int
}

// hashScan is the most fields looked up by a scan instead of the map.
const hashScan = 16

// Len returns the number of fields.
func (h *Hash) Len() int { return len(h.fields) }

// Field returns the i-th field and its value, in order.
func (h *Hash) Field(i int) (string, []byte) { return h.fields[i], h.vals[i] }

func (h *Hash) find(f string) int {
	if h.index != nil {
		if i, ok := h.index[f]; ok {
			return i
		}
		return -1
	}
	return slices.Index(h.fields, f)
}

// Get returns field f's value.
func (h *Hash) Get(f string) ([]byte, bool) {
	if i := h.find(f); i >= 0 {
		return h.vals[i], true
	}
	return nil, false
}

// Set sets field f to v (v is kept, not copied); it reports whether f is
// new.
func (h *Hash) Set(f string, v []byte) bool {
	if i := h.find(f); i >= 0 {
		h.bytes += len(v) - len(h.vals[i])
		h.vals[i] = v
		return false
	}
	h.fields = append(h.fields, f)
	h.vals = append(h.vals, v)
	h.bytes += len(f) + len(v)
	if h.index != nil {
		h.index[f] = len(h.fields) - 1
	} else if len(h.fields) > hashScan {
		h.index = make(map[string]int, 2*len(h.fields))
		for i, f := range h.fields {
			h.index[f] = i
		}
	}
	return true
}

// Del removes field f; it reports whether it was there. Small hashes keep
// their order, as Redis's listpacks do; large ones move the last field
// into the gap.
func (h *Hash) Del(f string) bool {
	i := h.find(f)
	if i < 0 {
		return false
	}
	h.bytes -= len(f) + len(h.vals[i])
	last := len(h.fields) - 1
	if h.index == nil {
		h.fields = slices.Delete(h.fields, i, i+1)
		h.vals = slices.Delete(h.vals, i, i+1)
		return true
	}
	delete(h.index, f)
	if i != last {
		h.fields[i], h.vals[i] = h.fields[last], h.vals[last]
		h.index[h.fields[i]] = i
	}
	h.fields[last], h.vals[last] = "", nil
	h.fields, h.vals = h.fields[:last], h.vals[:last]
	return true
}

// Reset empties the hash, keeping its slices for reuse.
func (h *Hash) Reset() {
	clear(h.fields)
	clear(h.vals)
	h.fields, h.vals, h.index, h.bytes = h.fields[:0], h.vals[:0], nil, 0
}

// Len returns the size of a value: a string's bytes, a collection's
// elements.
func Len(st engine.State) int {
	switch st := st.(type) {
	case *String:
		return len(st.B)
	case *Hash:
		return st.Len()
	case *ZSet:
		return st.Len()
	case *List:
		return st.Len()
	}
	return 0
}
