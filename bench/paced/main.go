// Command paced loads a server at a fixed rate: pipelines go out on a
// schedule, each connection's every conns*pipeline/rate, so that another
// client's latency measured meanwhile (a separate process: redis-benchmark
// -c 1) is what the server makes of that rate, not a saturating load
// generator's queue (a closed loop of 50 clients x 16 requests keeps 800
// requests waiting, whatever the server does). It prints the rate reached,
// how many pipelines left over a period late, and its own CPU per request.
//
//	paced -addr 127.0.0.1:6379 -rate 200000 -n 3000000 -cmd 'CL.TOKENBUCKET i:__rand_int__ 100 1 1h'
//
// __rand_int__ in -cmd is a random number below -r, zero-padded to 12
// digits as redis-benchmark writes it. -rate 0 sends as fast as the
// server answers. A pipeline is rendered once per connection and only its
// numbers are rewritten, and replies are skipped without allocating, so
// that the generator leaves the machine's cores to the server.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

const placeholder = "__rand_int__"

func main() {
	addr := flag.String("addr", "127.0.0.1:6379", "server address")
	rate := flag.Int("rate", 100000, "load requests a second (0: as fast as the server answers)")
	n := flag.Int64("n", 1000000, "load requests in all")
	conns := flag.Int("conns", 50, "load connections")
	pipeline := flag.Int("pipeline", 16, "requests per pipeline")
	keyspace := flag.Int64("r", 100000000, "__rand_int__ draws below this")
	cmd := flag.String("cmd", "CL.TOKENBUCKET i:__rand_int__ 100 1 1h", "load command")
	flag.Parse()
	if *rate < 0 || *conns < 1 || *pipeline < 1 || *keyspace < 1 {
		fmt.Fprintln(os.Stderr, "paced: -rate must be ≥ 0, -conns, -pipeline and -r ≥ 1")
		os.Exit(2)
	}
	req, holes := render(strings.Fields(*cmd))

	var sent, late atomic.Int64
	var every time.Duration
	if *rate > 0 {
		every = time.Duration(float64(time.Second) * float64(*conns**pipeline) / float64(*rate))
	}
	cpu0 := cpuTime()
	began := time.Now()
	var wg sync.WaitGroup
	for c := range *conns {
		nc, err := net.Dial("tcp", *addr)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer nc.Close()
			rnd := rand.New(rand.NewPCG(uint64(c), uint64(began.UnixNano())))
			next := began
			if every > 0 {
				next = began.Add(time.Duration(rnd.Int64N(int64(every))))
			}
			br := bufio.NewReaderSize(nc, 64<<10)
			out := bytes.Repeat(req, *pipeline)
			for sent.Add(int64(*pipeline)) <= *n {
				if every > 0 {
					if d := time.Until(next); d > 0 {
						time.Sleep(d) // the schedule: an open loop
					} else if d < -every {
						late.Add(1)
					}
					next = next.Add(every)
				}
				for i := range *pipeline {
					r := rnd.Int64N(*keyspace)
					for _, h := range holes {
						putDigits(out[i*len(req)+h:][:len(placeholder)], r)
					}
				}
				if _, err := nc.Write(out); err != nil {
					fmt.Fprintln(os.Stderr, "load:", err)
					os.Exit(1)
				}
				for range *pipeline {
					if err := skipReply(br); err != nil {
						fmt.Fprintln(os.Stderr, "load:", err)
						os.Exit(1)
					}
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(began)
	fmt.Printf("%.0f requests/s, %d pipelines late, %.3f µs of load-generator CPU a request\n",
		float64(*n)/elapsed.Seconds(), late.Load(), float64(cpuTime()-cpu0)/float64(*n)/1e3)
}

// render returns words as one RESP command, __rand_int__ in them kept as
// is, and the offsets of each __rand_int__ in it (12 bytes each, the width
// of the numbers put there).
func render(words []string) ([]byte, []int) {
	b := append([]byte{'*'}, strconv.Itoa(len(words))...)
	b = append(b, "\r\n"...)
	var holes []int
	for _, w := range words {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(w)), 10)
		b = append(b, "\r\n"...)
		for at := 0; ; {
			i := strings.Index(w[at:], placeholder)
			if i < 0 {
				break
			}
			holes = append(holes, len(b)+at+i)
			at += i + len(placeholder)
		}
		b = append(b, w...)
		b = append(b, "\r\n"...)
	}
	return b, holes
}

// putDigits writes r into b zero-padded to len(b) digits.
func putDigits(b []byte, r int64) {
	for i := len(b) - 1; i >= 0; i-- {
		b[i] = byte('0' + r%10)
		r /= 10
	}
}

// skipReply reads one RESP2 reply; an error reply is an error.
func skipReply(br *bufio.Reader) error {
	line, err := br.ReadSlice('\n')
	if err != nil {
		return err
	}
	if len(line) < 3 {
		return fmt.Errorf("bad reply line %q", line)
	}
	switch line[0] {
	case '+', ':':
		return nil
	case '-':
		return fmt.Errorf("server: %s", strings.TrimSpace(string(line)))
	case '$', '*':
		k, ok := atoi(line[1 : len(line)-2])
		if !ok {
			return fmt.Errorf("bad reply line %q", line)
		}
		if line[0] == '$' {
			if k >= 0 {
				_, err = br.Discard(k + 2)
			}
			return err
		}
		for range k {
			if err := skipReply(br); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("bad reply line %q", line)
}

// atoi parses a reply's length, -1 included.
func atoi(b []byte) (int, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 10 {
		return 0, false
	}
	k := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		k = k*10 + int(c-'0')
	}
	if neg {
		k = -k
	}
	return k, true
}

// cpuTime is the process's user and system CPU time so far, in ns.
func cpuTime() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
