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
	"path/filepath"
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
	scriptDir := flag.String("scripts", "integration/testdata/lua", "where the EVALSHA workloads' scripts are")
	flag.Parse()

	steps := map[string]int{"get": 1, "set": 1, "incr": 1, "setex": 1, "incrby_expire": 2, "slidinglog": 4,
		"evalsha_gcra": 1, "evalsha_incr": 1, "evalsha_empty": 1, "native_gcra": 1, "native_window": 1}[*workload]
	if steps == 0 {
		fmt.Fprintln(os.Stderr, "unknown workload", *workload)
		os.Exit(2)
	}
	per := max(1, *pipeline/steps) // requests per pipeline
	// Each workload its own keys, so that they run in any order; GET
	// reads what SET wrote.
	prefix := map[string]string{"get": "str:", "set": "str:", "setex": "str:", "incr": "cnt:", "incrby_expire": "win:", "slidinglog": "log:",
		"evalsha_gcra": "gcra:", "evalsha_incr": "rl:", "evalsha_empty": "none:", "native_gcra": "ngcra:", "native_window": "nwin:"}[*workload]
	// The scripts of the EVALSHA workloads, loaded once.
	sha := ""
	if name, ok := scripts[*workload]; ok {
		src, err := scriptText(*scriptDir, name)
		if err == nil {
			sha, err = load(*addr, src)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
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
					case "evalsha_gcra": // go-redis/redis_rate: burst 100, 10 per second
						buf = cmd(buf, "EVALSHA", sha, "1", k, "100", "10", "1", "1")
					case "evalsha_incr": // rate-limit-redis: a window of a minute
						buf = cmd(buf, "EVALSHA", sha, "1", k, "0", "60000")
					case "evalsha_empty":
						buf = cmd(buf, "EVALSHA", sha, "0")
					case "native_gcra":
						buf = cmd(buf, "GCRA", k, "99", "10", "1")
					case "native_window":
						buf = cmd(buf, "CL.WINDOW", k, "100", "60000", "1", "FIXED")
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

// load sends SCRIPT LOAD src and returns the sha.
func load(addr, src string) (string, error) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if _, err := conn.Write(cmd(nil, "SCRIPT", "LOAD", src)); err != nil {
		return "", err
	}
	r := bufio.NewReader(conn)
	line, err := r.ReadString('\n')
	if err != nil || line[0] != '$' {
		return "", fmt.Errorf("SCRIPT LOAD: %q %v", line, err)
	}
	sha, err := r.ReadString('\n')
	return sha[:len(sha)-2], err
}

// scripts names the EVALSHA workloads' scripts: go-redis/redis_rate's
// GCRA and rate-limit-redis's increment as those libraries send them (the
// files the integration tests run on both servers), and an empty script
// (a script's fixed cost).
var scripts = map[string]string{
	"evalsha_empty": "",
	"evalsha_incr":  "express_fixed_window.lua",
	"evalsha_gcra":  "redis_rate_gcra.lua",
}

// scriptText returns a workload's script, read from dir.
func scriptText(dir, name string) (string, error) {
	if name == "" {
		return "return 1", nil
	}
	b, err := os.ReadFile(filepath.Join(dir, name))
	return string(b), err
}
