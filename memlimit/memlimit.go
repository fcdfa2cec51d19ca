// Package memlimit tunes the Go runtime's collector: its soft memory limit
// from the server's memory bound (--maxmemory, CONFIG SET maxmemory), and
// its pace (GOGC) so that a small heap is not collected every few
// megabytes allocated.
package memlimit

import (
	"math"
	"os"
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
// at all.
//
// Without a bound or under it, the collector's pace lets garbage reach at
// least Headroom above the live heap (GOGC 100 lets it reach the live
// heap's size): scripts make garbage at every call, and on a live heap of
// a few megabytes the collector would run dozens of times a second. A GOGC
// set in the environment is left as it is. A Tuner is safe for concurrent
// use; its zero value has no bound.
type Tuner struct {
	bound   atomic.Int64
	limited atomic.Bool  // Tune set a limit
	percent atomic.Int64 // the GOGC Tune set last (0: none yet)
}

// Headroom is the least garbage the collector's pace lets the heap gather
// above its live objects.
const Headroom = 32 << 20

// SetBound sets the bound (bytes, 0 none) and tunes at once.
func (t *Tuner) SetBound(n int64) {
	t.bound.Store(n)
	t.Tune()
}

// Tune sets the limit from the bound and what the process holds now, and
// the collector's pace from the live heap; the server calls it a few times
// a second.
func (t *Tuner) Tune() {
	s := []metrics.Sample{
		{Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/released:bytes"},
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/gc/heap/live:bytes"},
		{Name: "/memory/classes/heap/free:bytes"},
	}
	metrics.Read(s)
	live := int64(s[3].Value.Uint64())
	t.pace(live)
	n := t.bound.Load()
	if n <= 0 {
		if t.limited.Swap(false) {
			debug.SetMemoryLimit(math.MaxInt64)
		}
		return
	}
	// Free pages the runtime keeps count against the limit too, so that
	// it returns them to the OS.
	held := int64(s[0].Value.Uint64() - s[1].Value.Uint64() - s[4].Value.Uint64())
	garbage := max(int64(s[2].Value.Uint64())-live, 0)
	debug.SetMemoryLimit(held - garbage + max(n/8, 4<<20))
	t.limited.Store(true)
}

// pace sets GOGC so that the heap may grow by Headroom, or by live (GOGC
// 100) once live is larger, before the next collection. SetGCPercent stops
// the world: only a change of more than an eighth is made.
func (t *Tuner) pace(live int64) {
	if live <= 0 || os.Getenv("GOGC") != "" {
		return
	}
	want := max(Percent(live), 100)
	if old := t.percent.Load(); old != 0 && want > old-old/8 && want < old+old/8 {
		return
	}
	t.percent.Store(want)
	debug.SetGCPercent(int(want))
}

// Percent is the GOGC that lets a heap of live bytes grow by Headroom
// before it is collected.
func Percent(live int64) int64 {
	if live <= 0 {
		return math.MaxInt32
	}
	return min(Headroom*100/live, math.MaxInt32)
}
