// Command paced loads a server at a fixed rate: pipelines go out on a
// schedule, each connection's every conns*pipeline/rate, so that another
// client's latency measured meanwhile (a separate process: redis-benchmark
// -c 1) is what the server makes of that rate, not a saturating load
// generator's queue (a closed loop of 50 clients x 16 requests keeps 800
// requests waiting, whatever the server does). It prints the rate reached
// and how many pipelines left over a period late.
//
//	paced -addr 127.0.0.1:6379 -rate 200000 -n 3000000 -cmd 'CL.TOKENBUCKET i:__rand_int__ 100 1 1h'
//
// __rand_int__ in -cmd is a random number below -r, zero-padded to 12
// digits as redis-benchmark writes it.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:6379", "server address")
	rate := flag.Int("rate", 100000, "load requests a second")
	n := flag.Int64("n", 1000000, "load requests in all")
	conns := flag.Int("conns", 50, "load connections")
	pipeline := flag.Int("pipeline", 16, "requests per pipeline")
	keyspace := flag.Int64("r", 100000000, "__rand_int__ draws below this")
	cmd := flag.String("cmd", "CL.TOKENBUCKET i:__rand_int__ 100 1 1h", "load command")
	flag.Parse()
	words := strings.Fields(*cmd)

	var sent, late atomic.Int64
	every := time.Duration(float64(time.Second) * float64(*conns**pipeline) / float64(*rate))
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
			next := began.Add(time.Duration(rnd.Int64N(int64(every))))
			br := bufio.NewReaderSize(nc, 64<<10)
			var out []byte
			for sent.Add(int64(*pipeline)) <= *n {
				if d := time.Until(next); d > 0 {
					time.Sleep(d) // the schedule: an open loop
				} else if d < -every {
					late.Add(1)
				}
				next = next.Add(every)
				out = out[:0]
				for range *pipeline {
					out = appendCommand(out, words, rnd.Int64N(*keyspace))
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
	fmt.Printf("%.0f requests/s, %d pipelines late\n", float64(*n)/elapsed.Seconds(), late.Load())
}

// appendCommand appends words as a RESP command, __rand_int__ in them
// replaced by r zero-padded to 12 digits.
func appendCommand(b []byte, words []string, r int64) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(len(words)), 10)
	b = append(b, "\r\n"...)
	var num [12]byte
	for i := len(num) - 1; i >= 0; i-- {
		num[i] = byte('0' + r%10)
		r /= 10
	}
	for _, w := range words {
		w = strings.ReplaceAll(w, "__rand_int__", string(num[:]))
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(w)), 10)
		b = append(b, "\r\n"...)
		b = append(b, w...)
		b = append(b, "\r\n"...)
	}
	return b
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
		k, err := strconv.Atoi(string(line[1 : len(line)-2]))
		if err != nil {
			return err
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
