package shard

import "container/heap"

// bucketShift sets the expiry index's resolution: 2^26 ns ≈ 67 ms per bucket.
const bucketShift = 26

const notFiled = -1 << 63

// expiryIndex orders entries by expiry coarsely and lazily. An entry is filed
// in the bucket of its expiry; when its expiry moves later (every admitted
// request moves a limiter's reset time) it stays where it is, and the sweep
// re-files it when it reaches that bucket. So the per-command cost is a
// comparison, and each entry is re-filed at most once per bucket it passes.
// An entry whose expiry moves earlier is filed again in the earlier bucket; the
// stale reference left behind is skipped (e.filed no longer names it).
//
// Not safe for concurrent use: the owning shard's mutex guards it.
type expiryIndex struct {
	buckets map[int64][]*Entry
	order   bucketHeap // ids of non-empty buckets, smallest first
}

func (x *expiryIndex) file(e *Entry) {
	b := e.exp >> bucketShift
	if e.filed != notFiled && e.filed <= b {
		return
	}
	if x.buckets == nil {
		x.buckets = make(map[int64][]*Entry)
	}
	list, ok := x.buckets[b]
	if !ok {
		heap.Push(&x.order, b)
	}
	x.buckets[b] = append(list, e)
	e.filed = b
}

// due calls fn for up to budget entries filed in buckets that ended at or
// before now, earliest first, unfiling each; fn re-files or removes it. It
// returns how much budget was used.
func (x *expiryIndex) due(now int64, budget int, fn func(*Entry)) int {
	used := 0
	for used < budget && len(x.order) > 0 {
		b := x.order[0]
		if (b+1)<<bucketShift > now {
			break
		}
		list := x.buckets[b]
		for used < budget && len(list) > 0 {
			e := list[len(list)-1]
			list[len(list)-1] = nil
			list = list[:len(list)-1]
			used++
			if e.filed != b {
				continue // stale: re-filed earlier or removed
			}
			e.filed = notFiled
			fn(e)
		}
		if len(list) == 0 {
			delete(x.buckets, b)
			heap.Pop(&x.order)
		} else {
			x.buckets[b] = list
		}
	}
	return used
}

// earliest calls fn on filed entries in bucket order until fn returns false.
// It does not unfile anything.
func (x *expiryIndex) earliest(fn func(*Entry) bool) {
	ids := append(bucketHeap(nil), x.order...)
	for len(ids) > 0 {
		b := heap.Pop(&ids).(int64)
		for _, e := range x.buckets[b] {
			if e.filed == b && !fn(e) {
				return
			}
		}
	}
}

func (x *expiryIndex) reset() {
	x.buckets = nil
	x.order = nil
}

type bucketHeap []int64

func (h bucketHeap) Len() int           { return len(h) }
func (h bucketHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h bucketHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *bucketHeap) Push(x any)        { *h = append(*h, x.(int64)) }
func (h *bucketHeap) Pop() any {
	old := *h
	v := old[len(old)-1]
	*h = old[:len(old)-1]
	return v
}
