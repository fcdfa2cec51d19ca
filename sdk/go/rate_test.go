package rlserver

import (
	"context"
	"testing"
	"time"
)

func TestRateShapedAPI(t *testing.T) {
	srv := startServer(t)
	rdb := srv.client(t)
	setClock(t, rdb, epochMs)
	ctx := context.Background()
	tb := New(rdb, Options{}).TokenBucket(2, 1, time.Second)
	r := tb.For("u")
	if !r.Allow() || !r.AllowN(1) || r.Allow() {
		t.Fatal("Allow, AllowN: want true, true, false on a 2-token bucket")
	}
	if got := r.Tokens(); got != 0 || r.Burst() != 2 {
		t.Errorf("Tokens %v, Burst %d after taking 2 of 2, want 0, 2", got, r.Burst())
	}
	advance(t, rdb, 999)
	if got := r.Tokens(); got != 0 {
		t.Errorf("Tokens %v 999ms later at 1/s, want 0 (whole tokens)", got)
	}
	advance(t, rdb, 1)
	if got := r.Tokens(); got != 1 {
		t.Errorf("Tokens %v 1s later at 1/s, want 1", got)
	}
	if !r.Allow() {
		t.Fatal("the refilled token was denied")
	}
	rv := r.Reserve()
	if !rv.OK() || rv.Delay() != time.Second {
		t.Errorf("Reserve: ok %v delay %v, want true 1s", rv.OK(), rv.Delay())
	}
	if rv := r.ReserveN(3); rv.OK() || rv.Delay() != Never {
		t.Errorf("ReserveN(3) over capacity 2: ok %v delay %v", rv.OK(), rv.Delay())
	}
	// Wait needing more than the deadline allows fails at once and takes nothing.
	dctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	if err := r.Wait(dctx); err == nil {
		t.Error("Wait beyond the deadline succeeded")
	}
	if d, _ := tb.AllowN(ctx, "u", 0); d.ResetAfter != 3*time.Second {
		t.Errorf("after refused Wait: %+v, want the 1s debt only", d)
	}
	if err := r.WaitN(ctx, 3); err == nil {
		t.Error("WaitN over capacity succeeded")
	}
	// Wait with a token due in 30ms (the server's clock is frozen, the
	// reservation's delay is real time on the client).
	fast := New(rdb, Options{}).TokenBucket(1, 1, 30*time.Millisecond).For("f")
	if !fast.Allow() {
		t.Fatal("first token denied")
	}
	start := time.Now()
	if err := fast.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el < 30*time.Millisecond {
		t.Errorf("Wait returned after %v, before the 30ms delay", el)
	}
	// A cancelled wait returns the context's error.
	cctx, ccancel := context.WithCancel(ctx)
	ccancel()
	if err := fast.Wait(cctx); err != context.Canceled {
		t.Errorf("cancelled Wait: %v", err)
	}
}
