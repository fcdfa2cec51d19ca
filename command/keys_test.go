package command

import (
	"testing"
	"time"
)

// TestTouch: TOUCH counts the keys that exist, a key given twice twice,
// and stamps limiter keys and values as a read does: OBJECT IDLETIME
// restarts from 0, OBJECT FREQ rises by one per touch (lfu-log-factor
// 0); OBJECT and EXISTS leave the stamps.
func TestTouch(t *testing.T) {
	c, clock := testConn(0)
	run := c.do
	steps := []struct {
		advance time.Duration
		req     []string
		want    string
	}{
		{0, []string{"CL.THROTTLE", "lim", "5", "1", "3600"}, "*5\r\n:0\r\n:6\r\n:5\r\n:-1\r\n:3600\r\n"},
		{0, []string{"SET", "v", "x"}, "+OK\r\n"},
		{10 * time.Second, []string{"OBJECT", "IDLETIME", "lim"}, ":10\r\n"},
		{0, []string{"EXISTS", "lim", "v"}, ":2\r\n"},
		{0, []string{"OBJECT", "IDLETIME", "v"}, ":10\r\n"},
		{0, []string{"TOUCH", "lim", "nokey", "v", "lim"}, ":3\r\n"},
		{0, []string{"OBJECT", "IDLETIME", "lim"}, ":0\r\n"},
		{0, []string{"OBJECT", "IDLETIME", "v"}, ":0\r\n"},
		{0, []string{"TOUCH", "nokey"}, ":0\r\n"},
		{0, []string{"TOUCH"}, "-ERR wrong number of arguments for 'touch' command\r\n"},
		{0, []string{"CONFIG", "SET", "maxmemory-policy", "allkeys-lfu"}, "+OK\r\n"},
		{0, []string{"CONFIG", "SET", "lfu-log-factor", "0"}, "+OK\r\n"},
		{0, []string{"SET", "f", "x"}, "+OK\r\n"},
		{0, []string{"OBJECT", "FREQ", "f"}, ":5\r\n"},
		{0, []string{"TOUCH", "f", "f"}, ":2\r\n"},
		{0, []string{"OBJECT", "FREQ", "f"}, ":7\r\n"},
	}
	for i, s := range steps {
		clock.Advance(s.advance)
		if got := run(s.req...); got != s.want {
			t.Errorf("step %d: %q = %q, want %q", i, s.req, got, s.want)
		}
	}
}
