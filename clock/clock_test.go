package clock

import (
	"testing"
	"time"
)

func TestClock(t *testing.T) {
	c := New()
	if d := c.Now() - time.Now().UnixNano(); d > int64(time.Second) || d < -int64(time.Second) {
		t.Fatalf("real clock off by %v", time.Duration(d))
	}
	c.Set(1000)
	c.Advance(500)
	if c.Now() != 1500 {
		t.Fatalf("frozen clock = %d, want 1500", c.Now())
	}
	c.Real()
	if d := c.Now() - time.Now().UnixNano(); d > int64(time.Second) || d < -int64(time.Second) {
		t.Fatalf("clock after Real off by %v", time.Duration(d))
	}
}
