package values

import (
	"bytes"
	"slices"
)

// List is a Redis list: a ring of elements, O(1) at both ends and by
// index, LTRIM in O(removed), LRANGE in O(returned).
type List struct {
	buf   [][]byte // power-of-two size, or nil
	head  int      // index in buf of the first element
	n     int
	bytes int // the elements' bytes, for Size
}

// Len returns how many elements the list has.
func (l *List) Len() int { return l.n }

func (l *List) at(i int) int { return (l.head + i) & (len(l.buf) - 1) }

func (l *List) grow() {
	if l.n < len(l.buf) {
		return
	}
	nb := make([][]byte, max(8, 2*len(l.buf)))
	for i := 0; i < l.n; i++ {
		nb[i] = l.buf[l.at(i)]
	}
	l.buf, l.head = nb, 0
}

// shrink halves the ring when it is mostly empty, so a list that was
// long and was trimmed gives its memory back.
func (l *List) shrink() {
	if len(l.buf) <= 8 || l.n > len(l.buf)/4 {
		return
	}
	size := len(l.buf) / 2
	for size > 8 && l.n <= size/4 {
		size /= 2
	}
	nb := make([][]byte, size)
	for i := 0; i < l.n; i++ {
		nb[i] = l.buf[l.at(i)]
	}
	l.buf, l.head = nb, 0
}

// PushFront adds v before the first element (LPUSH).
func (l *List) PushFront(v []byte) {
	l.grow()
	l.head = (l.head - 1) & (len(l.buf) - 1)
	l.buf[l.head] = v
	l.n++
	l.bytes += len(v)
}

// PushBack adds v after the last element (RPUSH).
func (l *List) PushBack(v []byte) {
	l.grow()
	l.buf[l.at(l.n)] = v
	l.n++
	l.bytes += len(v)
}

// PopFront removes and returns the first element (LPOP).
func (l *List) PopFront() ([]byte, bool) {
	if l.n == 0 {
		return nil, false
	}
	v := l.buf[l.head]
	l.buf[l.head] = nil
	l.head = l.at(1)
	l.n--
	l.bytes -= len(v)
	l.shrink()
	return v, true
}

// PopBack removes and returns the last element (RPOP).
func (l *List) PopBack() ([]byte, bool) {
	if l.n == 0 {
		return nil, false
	}
	i := l.at(l.n - 1)
	v := l.buf[i]
	l.buf[i] = nil
	l.n--
	l.bytes -= len(v)
	l.shrink()
	return v, true
}

// Index returns the element at index i, negative from the end (LINDEX).
func (l *List) Index(i int) ([]byte, bool) {
	if i < 0 {
		i += l.n
	}
	if i < 0 || i >= l.n {
		return nil, false
	}
	return l.buf[l.at(i)], true
}

// Range returns the elements from start to stop, both included, with
// Redis's negative indexes (LRANGE).
func (l *List) Range(dst [][]byte, start, stop int) [][]byte {
	start, stop, ok := Normalize(start, stop, l.n)
	if !ok {
		return dst
	}
	out := slices.Grow(dst, stop-start+1)
	for i := start; i <= stop; i++ {
		out = append(out, l.buf[l.at(i)])
	}
	return out
}

// Trim keeps the elements from start to stop, both included, with
// Redis's negative indexes (LTRIM), in O(elements removed).
func (l *List) Trim(start, stop int) {
	start, stop, ok := Normalize(start, stop, l.n)
	if !ok {
		for l.n > 0 {
			l.PopBack()
		}
		return
	}
	for i := stop + 1; i < l.n; i++ {
		l.bytes -= len(l.buf[l.at(i)])
		l.buf[l.at(i)] = nil
	}
	l.n = stop + 1
	for i := 0; i < start; i++ {
		l.bytes -= len(l.buf[l.at(i)])
		l.buf[l.at(i)] = nil
	}
	l.head = l.at(start)
	l.n -= start
	l.shrink()
}

// Remove removes elements equal to v (LREM): the first count of them from
// the head (count > 0), the last -count from the tail (count < 0), or all
// (count 0); it returns how many.
func (l *List) Remove(count int, v []byte) int {
	kept := make([][]byte, 0, l.n)
	removed := 0
	if count >= 0 {
		for i := 0; i < l.n; i++ {
			e := l.buf[l.at(i)]
			if bytes.Equal(e, v) && (count == 0 || removed < count) {
				removed++
				continue
			}
			kept = append(kept, e)
		}
	} else {
		for i := l.n - 1; i >= 0; i-- {
			e := l.buf[l.at(i)]
			if bytes.Equal(e, v) && removed < -count {
				removed++
				continue
			}
			kept = append(kept, e)
		}
		for i, j := 0, len(kept)-1; i < j; i, j = i+1, j-1 {
			kept[i], kept[j] = kept[j], kept[i]
		}
	}
	if removed == 0 {
		return 0
	}
	clear(l.buf)
	l.head, l.n, l.bytes = 0, 0, 0
	for _, e := range kept {
		l.PushBack(e)
	}
	return removed
}
