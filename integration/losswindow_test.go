package integration

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestPersistKillUnderCreation: clients create keys as fast as the server
// takes them (pipelines of 256 new keys on four connections) while INFO
// persistence is read; after a kill -9 and a restart, every key
// acknowledged longer ago than the loss bound before the kill is there,
// holding exactly the one token taken from it. The bound is the one the
// README states: the save interval plus the flush under way, which takes
// at most the longest flush INFO showed, plus that flush again for the one
// that began before it (rl_loss_window_ms is that window, measured). The
// flushes keep up: none takes as long as the interval.
func TestPersistKillUnderCreation(t *testing.T) {
	t.Parallel()
	const interval = time.Second
	dir := t.TempDir()
	s := startIn(t, dir, "--save-interval", interval.String())
	c := s.client(t, 3)

	type batch struct {
		conn, first, n int
		acked          time.Time
	}
	var (
		mu      sync.Mutex
		batches []batch
		stop    atomic.Bool
		wg      sync.WaitGroup
	)
	const conns, perPipe = 4, 256
	key := func(conn, i int) string { return fmt.Sprintf("c%d:%d", conn, i) }
	for w := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wc := redis.NewClient(&redis.Options{Addr: s.Addr, Protocol: 3, MaxRetries: -1})
			defer wc.Close()
			for next := 0; !stop.Load(); next += perPipe {
				p := wc.Pipeline()
				for i := range perPipe {
					p.Do(ctx, "CL.TOKENBUCKET", key(w, next+i), 100, 1, "1h")
				}
				if _, err := p.Exec(ctx); err != nil {
					return // the kill
				}
				mu.Lock()
				batches = append(batches, batch{w, next, perPipe, time.Now()})
				mu.Unlock()
			}
		}()
	}

	// Load until a few flushes have run, watching how long they take.
	var longestFlush, window time.Duration
	began := time.Now()
	sample := time.NewTicker(20 * time.Millisecond)
	defer sample.Stop()
	for ; time.Since(began) < 4*interval; <-sample.C {
		f := infoPersistence(t, c)
		var us, ms int64
		fmt.Sscan(f["rl_last_flush_duration_us"], &us)
		fmt.Sscan(f["rl_loss_window_ms"], &ms)
		longestFlush = max(longestFlush, time.Duration(us)*time.Microsecond)
		window = max(window, time.Duration(ms)*time.Millisecond)
	}
	killed := time.Now()
	s.kill()
	stop.Store(true)
	wg.Wait()

	if longestFlush >= interval {
		t.Errorf("a flush took %v, not under the save interval %v: flushes fall behind key creation", longestFlush, interval)
	}
	if window == 0 {
		t.Fatalf("INFO showed no loss window after %v of flushes", time.Since(began))
	}
	bound := interval + 2*longestFlush
	t.Logf("%d batches of %d keys acknowledged; longest flush %v, rl_loss_window_ms up to %v, bound %v", len(batches), perPipe, longestFlush, window, bound)

	s = startIn(t, dir, "--save-interval", interval.String())
	c = s.client(t, 3)
	mustHave, checked := 0, 0
	for _, b := range batches {
		if killed.Sub(b.acked) <= bound {
			continue // may be lost
		}
		mustHave += b.n
		p := c.Pipeline()
		exists := make([]*redis.IntCmd, b.n)
		for i := range b.n {
			exists[i] = p.Exists(ctx, key(b.conn, b.first+i))
		}
		// One key of each batch is asked: it holds the state written.
		state := p.Do(ctx, "CL.TOKENBUCKET", key(b.conn, b.first), 100, 1, "1h", 0)
		if _, err := p.Exec(ctx); err != nil {
			t.Fatal(err)
		}
		for i, e := range exists {
			if e.Val() != 1 {
				t.Fatalf("%s, acknowledged %v before the kill (bound %v), is lost", key(b.conn, b.first+i), killed.Sub(b.acked), bound)
			}
		}
		got, err := state.Int64Slice()
		if err != nil || len(got) != 5 || got[2] != 99 {
			t.Fatalf("%s restored as %v %v, want 99 tokens remaining", key(b.conn, b.first), got, err)
		}
		checked++
	}
	if mustHave == 0 {
		t.Fatalf("no batch was acknowledged more than %v before the kill", bound)
	}
	if restored := infoInt(t, c, "rl_keys_restored"); restored < int64(mustHave) {
		t.Fatalf("%d keys restored, want at least %d", restored, mustHave)
	}
	t.Logf("%d keys acknowledged more than %v before the kill, all restored (%d batches' states checked)", mustHave, bound, checked)
}
