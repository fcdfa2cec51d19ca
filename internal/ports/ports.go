// Package ports hands out free loopback ports for the servers tests start
// on a port they must know in advance (cluster topologies, redis-server).
// A port the kernel picks for a listener comes from the ephemeral range,
// which outgoing connections use too: one may take it between the test
// choosing it and its server binding it. These come from below that
// range, and no port is handed out twice by one process.
package ports

import (
	"errors"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
)

// The range ports are drawn from: below Linux's default ephemeral range
// (32768-60999) and above the registered services most machines run.
const lo, hi = 20000, 32000

var (
	mu    sync.Mutex
	given = map[int]bool{}
)

// Free returns a loopback TCP port nothing listens on now.
func Free() (int, error) {
	mu.Lock()
	defer mu.Unlock()
	for range 1000 {
		p := lo + rand.IntN(hi-lo)
		if given[p] {
			continue
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			continue
		}
		l.Close()
		given[p] = true
		return p, nil
	}
	return 0, errors.New("ports: no free port found in 1000 tries")
}
