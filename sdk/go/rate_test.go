package rlserver

import (
	"context"
	"math"
	"strings"
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

// SetLimit and SetBurst change the parameters of later calls on this Rate
// only; the server keeps the key's tokens across the change.
func TestRateSetLimitSetBurst(t *testing.T) {
	srv := startServer(t)
	rdb := srv.client(t)
	setClock(t, rdb, epochMs)
	tb := New(rdb, Options{}).TokenBucket(2, 1, time.Second)
	r := tb.For("u")
	if !r.Allow() || !r.Allow() || r.Allow() {
		t.Fatal("want true, true, false on a 2-token bucket")
	}
	r.SetLimit(2.5)
	if r.Limit() != 2.5 || tb.For("u").Limit() != 1 || r.Burst() != 2 {
		t.Errorf("Limit %v, the TokenBucket's %v, Burst %d", r.Limit(), tb.For("u").Limit(), r.Burst())
	}
	advance(t, rdb, 400) // 2.5/s × 0.4s: one token (at the old 1/s, none)
	if got := r.Tokens(); got != 1 {
		t.Errorf("Tokens %v 400ms later at 2.5/s, want 1", got)
	}
	if got := tb.For("u").Tokens(); got != 0 {
		t.Errorf("the TokenBucket's own Rate (1/s) sees %v tokens, want 0", got)
	}
	r.SetBurst(5) // the key's one token stays; it refills to 5
	if got := r.Tokens(); got != 1 || r.Burst() != 5 {
		t.Errorf("after SetBurst(5): Tokens %v, Burst %d, want 1, 5", got, r.Burst())
	}
	advance(t, rdb, 1600) // 4 more tokens at 2.5/s
	if got := r.Tokens(); got != 5 {
		t.Errorf("Tokens %v after 1.6s more, want 5", got)
	}
	if !r.Allow() {
		t.Fatal("Allow on 5 tokens")
	}
	r.SetBurst(3) // 4 tokens clamped to 3
	if got := r.Tokens(); got != 3 {
		t.Errorf("after SetBurst(3) on 4 tokens: Tokens %v, want 3", got)
	}
	if rv := r.ReserveN(3); !rv.OK() || rv.Delay() != 0 {
		t.Errorf("ReserveN(3) of 3: ok %v delay %v", rv.OK(), rv.Delay())
	}
	if rv := r.ReserveN(1); !rv.OK() || rv.Delay() != 400*time.Millisecond {
		t.Errorf("ReserveN(1) on an empty bucket at 2.5/s: ok %v delay %v, want 400ms", rv.OK(), rv.Delay())
	}
	// A limit the server cannot take: calls fail, with the server's error.
	r.SetLimit(0)
	if r.Allow() {
		t.Error("Allow with SetLimit(0) admitted")
	}
	if err := r.Wait(context.Background()); err == nil || !strings.Contains(err.Error(), "ERR") {
		t.Errorf("Wait with SetLimit(0): %v", err)
	}
}

func TestRatePerPeriod(t *testing.T) {
	for _, tc := range []struct {
		perSecond float64
		rate      int64
		period    time.Duration
	}{
		{10, 10, time.Second}, {2.5, 25, 10 * time.Second}, {0.3, 3, 10 * time.Second},
		{0.001, 1, 1000 * time.Second}, {1.0 / 3, 333333, 1e6 * time.Second},
		{0, 0, time.Second}, {-1, 0, time.Second}, {math.Inf(1), 0, time.Second}, {math.NaN(), 0, time.Second},
	} {
		if rate, period := ratePerPeriod(tc.perSecond); rate != tc.rate || period != tc.period {
			t.Errorf("%v/s: %d per %v, want %d per %v", tc.perSecond, rate, period, tc.rate, tc.period)
		}
	}
}
