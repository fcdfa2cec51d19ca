// Package clock is the server's clock: Unix-epoch nanoseconds that advance
// monotonically from start, which every limiter decision, expiry and
// persisted instant is measured in. Tests move it through DEBUG CLOCK.
package clock

import (
	"sync/atomic"
	"time"
)

// Clock is the server's clock. Now returns Unix nanoseconds that advance with
// the monotonic clock from the moment the Clock was created: a wall-clock step
// (NTP, VM migration) after start never moves it, yet its readings are
// Unix-epoch based, so state persisted in them survives a restart (the next
// process anchors to the wall clock again).
//
// Tests drive it through DEBUG CLOCK: Set freezes it at an instant, Advance
// moves it forward (frozen or not), Real goes back to real time.
// A Clock is safe for concurrent use.
type Clock struct {
	anchor   time.Time // carries the monotonic reading
	anchorNs int64     // anchor's Unix nanoseconds
	offset   atomic.Int64
	frozen   atomic.Bool
	at       atomic.Int64 // the frozen instant
}

// New returns a clock running in real time.
func New() *Clock {
	now := time.Now()
	return &Clock{anchor: now, anchorNs: now.UnixNano()}
}

// Now returns the current instant in Unix nanoseconds.
func (c *Clock) Now() int64 {
	if c.frozen.Load() {
		return c.at.Load()
	}
	return c.anchorNs + int64(time.Since(c.anchor)) + c.offset.Load()
}

// Mono returns the monotonic nanoseconds elapsed since the clock was
// created, whatever DEBUG CLOCK did: for timing. At(Mono()) equals Now(),
// so that one reading serves both.
func (c *Clock) Mono() int64 { return int64(time.Since(c.anchor)) }

// At returns the instant Now would have returned at the monotonic reading
// mono (see Mono).
func (c *Clock) At(mono int64) int64 {
	if c.frozen.Load() {
		return c.at.Load()
	}
	return c.anchorNs + mono + c.offset.Load()
}

// Wall returns the Unix nanoseconds of the monotonic reading mono, in
// real time (DEBUG CLOCK aside).
func (c *Clock) Wall(mono int64) int64 { return c.anchorNs + mono }

// Set freezes the clock at unixNs.
func (c *Clock) Set(unixNs int64) {
	c.at.Store(unixNs)
	c.frozen.Store(true)
}

// Advance moves the clock forward by d (backwards if d is negative).
func (c *Clock) Advance(d time.Duration) {
	if c.frozen.Load() {
		c.at.Add(int64(d))
		return
	}
	c.offset.Add(int64(d))
}

// Real returns the clock to real time, dropping any offset.
func (c *Clock) Real() {
	c.offset.Store(0)
	c.frozen.Store(false)
}
