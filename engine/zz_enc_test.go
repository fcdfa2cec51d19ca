package engine

import (
	"testing"
	"time"
)

func BenchmarkZZEncodeLog250(b *testing.B) {
	p := WindowParams{Limit: 5000, Window: time.Hour, Mode: WindowLog}
	var s Window
	now := int64(1_800_000_000_000_000_000)
	for i := range 250 {
		now += int64(i%7+1) * int64(time.Millisecond)
		s.Take(now, p, 1)
	}
	buf := make([]byte, 0, 4096)
	for b.Loop() {
		buf = s.AppendCompact(buf[:0], now+int64(time.Hour))
	}
}
