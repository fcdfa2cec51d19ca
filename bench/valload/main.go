// valload drives a Redis-protocol server with the value workloads of the
// rate limiters that run on Redis (bench/values.sh runs it against rlserver
// and redis-server alike): concurrent connections, each sending pipelines
// of requests and reading every reply, over random keys. It reports one
// line of key=value pairs: requests per second (a request is one
// workload step: one command, or the INCRBY+EXPIRE pair, or the sliding
// log's four commands), and the p50/p99 of a pipeline's round trip.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:6379", "server address")
	workload := flag.String("workload", "get", "get | set | incr | incrby_expire | setex | slidinglog")
	clients := flag.Int("clients", 50, "connections")
	pipeline := flag.Int("pipeline", 16, "commands per pipeline")
	keys := flag.Int("keys", 100000, "distinct keys (1: a hot key)")
	requests := flag.Int("requests", 1000000, "commands in all")
	flag.Parse()

	steps := map[string]int{"get": 1, "set": 1, "incr": 1, "setex": 1, "incrby_expire": 2, "slidinglog": 4}[*workload]
	if steps == 0 {
		fmt.Fprintln(os.Stderr, "unknown workload", *workload)
		os.Exit(2)
	}
	per := max(1, *pipeline/steps) // requests per pipeline
	// Each workload its own keys, so that they run in any order; GET
	// reads what SET wrote.
	prefix := map[string]string{"get": "str:", "set": "str:", "setex": "str:", "incr": "cnt:", "incrby_expire": "win:", "slidinglog": "log:"}[*workload]
	var left atomic.Int64
	left.Store(int64(*requests / steps))
	var mu sync.Mutex
	var lat []time.Duration
	var wg sync.WaitGroup
	var failed atomic.Bool
	start := time.Now()
	for c := range *clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := net.Dial("tcp", *addr)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				failed.Store(true)
				return
			}
			defer conn.Close()
			rng := rand.New(rand.NewPCG(uint64(c), 7))
			w := bufio.NewWriterSize(conn, 64<<10)
			r := bufio.NewReaderSize(conn, 64<<10)
			var mine []time.Duration
			var buf []byte
			for left.Add(-int64(per)) >= 0 {
				t0 := time.Now()
				buf = buf[:0]
				for range per {
					k := prefix + strconv.Itoa(rng.IntN(*keys))
					now := strconv.FormatInt(time.Now().UnixMicro(), 10)
					switch *workload {
					case "get":
						buf = cmd(buf, "GET", k)
					case "set":
						buf = cmd(buf, "SET", k, "1")
					case "setex":
						buf = cmd(buf, "SET", k, "1", "EX", "60")
					case "incr":
						buf = cmd(buf, "INCR", k)
					case "incrby_expire":
						buf = cmd(buf, "INCRBY", k, "1")
						buf = cmd(buf, "EXPIRE", k, "60")
					case "slidinglog":
						buf = cmd(buf, "ZREMRANGEBYSCORE", k, "-inf", strconv.FormatInt(time.Now().UnixMicro()-60_000_000, 10))
						buf = cmd(buf, "ZADD", k, now, now+strconv.Itoa(rng.IntN(1000)))
						buf = cmd(buf, "ZCARD", k)
						buf = cmd(buf, "PEXPIRE", k, "60000")
					}
				}
				w.Write(buf)
				if err := w.Flush(); err != nil {
					fmt.Fprintln(os.Stderr, err)
					failed.Store(true)
					return
				}
				for range per * steps {
					if err := skipReply(r); err != nil {
						fmt.Fprintln(os.Stderr, err)
						failed.Store(true)
						return
					}
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	el := time.Since(start)
	if failed.Load() || len(lat) == 0 {
		os.Exit(1)
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	done := len(lat) * per
	fmt.Printf("rate=%.0f p50_ms=%.3f p99_ms=%.3f requests=%d\n", float64(done)/el.Seconds(),
		float64(lat[len(lat)/2].Microseconds())/1000, float64(lat[len(lat)*99/100].Microseconds())/1000, done)
}

func cmd(b []byte, args ...string) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(len(args)), 10)
	b = append(b, '\r', '\n')
	for _, a := range args {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(a)), 10)
		b = append(b, '\r', '\n')
		b = append(b, a...)
		b = append(b, '\r', '\n')
	}
	return b
}

// skipReply reads one reply; an error reply is an error.
func skipReply(r *bufio.Reader) error {
	line, err := r.ReadSlice('\n')
	if err != nil {
		return err
	}
	switch line[0] {
	case '-':
		return fmt.Errorf("error reply: %s", line)
	case '$':
		n, _ := strconv.Atoi(string(line[1 : len(line)-2]))
		if n >= 0 {
			_, err = r.Discard(n + 2)
		}
		return err
	case '*':
		n, _ := strconv.Atoi(string(line[1 : len(line)-2]))
		for range n {
			if err := skipReply(r); err != nil {
				return err
			}
		}
	}
	return nil
}
