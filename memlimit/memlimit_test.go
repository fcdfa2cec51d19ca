package memlimit

import (
	"runtime"
	"runtime/debug"
	"testing"
)

// TestPace: on a small live heap the collector's pace lets Headroom of
// garbage gather (GOGC above 100); on a live heap larger than Headroom it
// is GOGC 100; a GOGC from the environment is left alone.
func TestPace(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	var tu Tuner
	runtime.GC()
	tu.Tune()
	small := debug.SetGCPercent(100)
	if small <= 100 || int64(small) != tu.percent.Load() {
		t.Fatalf("small heap: GOGC %d (tuner %d), want above 100", small, tu.percent.Load())
	}
	debug.SetGCPercent(small)

	big := make([]byte, 2*Headroom)
	for i := range big {
		big[i] = byte(i)
	}
	runtime.GC()
	tu.Tune()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("live heap of %d bytes: GOGC %d, want 100", len(big), got)
	}
	runtime.KeepAlive(big)

	t.Setenv("GOGC", "300")
	debug.SetGCPercent(300)
	big = nil
	runtime.GC()
	tu.Tune()
	if got := debug.SetGCPercent(100); got != 300 {
		t.Fatalf("GOGC=300 in the environment: GOGC %d after Tune", got)
	}
	if Percent(Headroom) != 100 || Percent(Headroom/4) != 400 {
		t.Fatalf("Percent(%d) = %d, Percent(%d) = %d", Headroom, Percent(Headroom), Headroom/4, Percent(Headroom/4))
	}
}
