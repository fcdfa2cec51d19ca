package engine

import (
	"math/bits"
	"time"
)

// This file holds the exact integer arithmetic shared by the bucket-shaped
// algorithms (GCRA, token bucket, leaky bucket).
//
// All three keep one quantity, the backlog, in token·nanoseconds:
//
//	backlog = (capacity − tokens) × period = (time until full) × rate
//
// A bucket refilling at rate tokens per period gains rate/period tokens per
// nanosecond, so the backlog drains by exactly rate per nanosecond, and a
// request of n units adds exactly n × period. Both are integers: no emission
// interval (period/rate, usually fractional) is ever rounded, so there is no
// drift however many calls land in between, and floor(tokens) never exceeds
// the capacity. Products of two int64s need up to 126 bits, so the backlog is
// a 128-bit unsigned integer; every operation saturates instead of wrapping.
// Durations handed out are rounded up to whole nanoseconds (a caller who
// waits that long is always served, a key never expires early).

// u128 is an unsigned 128-bit integer.
type u128 struct{ hi, lo uint64 }

var maxU128 = u128{^uint64(0), ^uint64(0)}

// mul64 returns a×b exactly.
func mul64(a, b uint64) u128 {
	hi, lo := bits.Mul64(a, b)
	return u128{hi, lo}
}

func (x u128) isZero() bool { return x.hi == 0 && x.lo == 0 }

// cmp returns -1, 0 or +1 as x is less than, equal to or greater than y.
func (x u128) cmp(y u128) int {
	switch {
	case x.hi < y.hi:
		return -1
	case x.hi > y.hi:
		return 1
	case x.lo < y.lo:
		return -1
	case x.lo > y.lo:
		return 1
	}
	return 0
}

// add returns x+y, saturating at the maximum.
func (x u128) add(y u128) u128 {
	lo, c := bits.Add64(x.lo, y.lo, 0)
	hi, c := bits.Add64(x.hi, y.hi, c)
	if c != 0 {
		return maxU128
	}
	return u128{hi, lo}
}

// sub returns x−y, saturating at zero.
func (x u128) sub(y u128) u128 {
	lo, b := bits.Sub64(x.lo, y.lo, 0)
	hi, b := bits.Sub64(x.hi, y.hi, b)
	if b != 0 {
		return u128{}
	}
	return u128{hi, lo}
}

// divmod returns x/d and x%d for d > 0.
func (x u128) divmod(d uint64) (u128, uint64) {
	qhi := x.hi / d
	r := x.hi % d
	qlo, r := bits.Div64(r, x.lo, d)
	return u128{qhi, qlo}, r
}

// mulSat returns x×m, saturating at the maximum.
func (x u128) mulSat(m uint64) u128 {
	h1, l1 := bits.Mul64(x.hi, m)
	if h1 != 0 {
		return maxU128
	}
	h2, l2 := bits.Mul64(x.lo, m)
	hi, c := bits.Add64(l1, h2, 0)
	if c != 0 {
		return maxU128
	}
	return u128{hi, l2}
}

// mulDiv returns x×a/b for b > 0, rounded up if ceil is set and down
// otherwise, saturating at the maximum. It splits x = q×b + r so that no
// intermediate needs more than 128 bits: x×a/b = q×a + r×a/b with r < b.
func (x u128) mulDiv(a, b uint64, ceil bool) u128 {
	q, r := x.divmod(b)
	hi, lo := bits.Mul64(r, a)
	f, rem := bits.Div64(hi, lo, b) // hi < b since r < b
	if ceil && rem != 0 {
		f++ // f < a, cannot overflow
	}
	return q.mulSat(a).add(u128{0, f})
}

// ceilDiv returns ⌈x/d⌉ for d > 0.
func (x u128) ceilDiv(d uint64) u128 {
	q, r := x.divmod(d)
	if r != 0 {
		q = q.add(u128{0, 1})
	}
	return q
}

// int64Sat returns x as an int64, saturating at maxInt64.
func (x u128) int64Sat() int64 {
	if x.hi != 0 || x.lo > uint64(maxInt64) {
		return maxInt64
	}
	return int64(x.lo)
}

// durCeil returns ⌈x/rate⌉ nanoseconds: the time a backlog x needs to drain
// at rate token·ns per ns, saturating at the largest Duration.
func durCeil(x u128, rate int64) time.Duration {
	return time.Duration(x.ceilDiv(uint64(rate)).int64Sat())
}

// tokensFloor returns ⌊(full − backlog)/period⌋, the whole tokens available,
// or 0 if the backlog exceeds full (a bucket in debt).
func tokensFloor(full, backlog u128, period int64) int64 {
	if backlog.cmp(full) >= 0 {
		return 0
	}
	q, _ := full.sub(backlog).divmod(uint64(period))
	return q.int64Sat()
}

// carried returns the stored backlog b.s converted from the scale it was
// stored under (from) to the new parameters' (to), rounding the wait up,
// and clamped to full: new parameters apply from the last update.
func (b backlog) carried(from, to int64, full u128) u128 {
	back := b.s
	if !back.isZero() && from != to {
		if from > 0 {
			back = back.mulDiv(uint64(to), uint64(from), true)
		} else {
			back = u128{} // only a corrupt state gets here: start fresh
		}
	}
	if back.cmp(full) > 0 {
		back = full
	}
	return back
}

// backlog is the mutable part of every bucket-shaped state.
type backlog struct {
	last int64 // ns: the server time of the last update
	s    u128  // token·ns: (capacity − tokens) × period, see the file comment
}

// drain returns the effective time and the backlog at now of a backlog
// that was s at the last update of b (s is b.s, possibly converted to new
// parameters) and drains by rate per nanosecond. Time going backwards
// (now < last) is clamped on purpose: it counts as no time elapsed, so a
// clock step never grants tokens, and the effective time is last. A fresh
// state (b.s zero) has nothing to protect, so now is taken as is.
func (b backlog) drain(now int64, s u128, rate int64) (int64, u128) {
	if b.s.isZero() {
		return now, s
	}
	if now < b.last {
		now = b.last
	}
	elapsed := uint64(now) - uint64(b.last) // exact even if the difference overflows int64
	return now, s.sub(mul64(elapsed, uint64(rate)))
}

// allPositive reports whether every value is > 0.
func allPositive(vs ...int64) bool {
	for _, v := range vs {
		if v <= 0 {
			return false
		}
	}
	return true
}
