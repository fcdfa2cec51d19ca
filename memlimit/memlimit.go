// Package memlimit sets the Go runtime's soft memory limit from the
// server's memory bound (--maxmemory, CONFIG SET maxmemory).
package memlimit

import (
	"math"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
)

// Tuner follows a memory bound with the runtime's soft memory limit. States
// kept as objects (LOG windows, leases) are garbage once evicted, replaced
// or regrown, and a heap left to double before collecting would hold twice
// the bound: the limit lets garbage and free pages reach an eighth of the
// bound (at least 4 MB) above what the process holds live, whatever that is
// (connections come and go), so the collector runs before that. Keys of
// inline states make almost no garbage, so the collector then rarely runs
// at all. A Tuner is safe for concurrent use; its zero value has no bound.
type Tuner struct {
	bound   atomic.Int64
	limited atomic.Bool // Tune set a limit
}

// SetBound sets the bound (bytes, 0 none) and tunes at once.
func (t *Tuner) SetBound(n int64) {
	t.bound.Store(n)
	t.Tune()
}

// Tune sets the limit from the bound and what the process holds now; the
// server calls it a few times a second.
func (t *Tuner) Tune() {
	n := t.bound.Load()
	if n <= 0 {
		if t.limited.Swap(false) {
			debug.SetMemoryLimit(math.MaxInt64)
		}
		return
	}
	s := []metrics.Sample{
		{Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/released:bytes"},
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/gc/heap/live:bytes"},
		{Name: "/memory/classes/heap/free:bytes"},
	}
	metrics.Read(s)
	// Free pages the runtime keeps count against the limit too, so that
	// it returns them to the OS.
	held := int64(s[0].Value.Uint64() - s[1].Value.Uint64() - s[4].Value.Uint64())
	garbage := max(int64(s[2].Value.Uint64())-int64(s[3].Value.Uint64()), 0)
	debug.SetMemoryLimit(held - garbage + max(n/8, 4<<20))
	t.limited.Store(true)
}
