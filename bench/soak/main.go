// Command soak runs hostile clients against a server: workers open
// connections in a loop, each sends a few hundred random requests (names
// from the command table, arguments drawn from words, numbers and random
// bytes, now and then raw garbage) without reading the replies in order,
// and closes. Then it checks that the server still answers, times how
// long it takes to close what the clients closed, and prints the commands
// that cost the server most (INFO commandstats).
//
//	soak -addr 127.0.0.1:6379 -duration 5m
//
// The seeds are fixed (-seed): a second run sends the same requests. What
// it found: INFO and CLIENT LIST costing time in proportion to the
// connections, and MULTI, INFO, EXEC hanging the server for good.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

var words = strings.Fields("k k1 k2 a b 0 1 2 3 10 100 -1 1s 10ms 1h 60 LOG FIXED SLIDING TOKENBUCKET THROTTLE WINDOW LEAKYBUCKET ACQUIRE GET SET * LIST INFO HELP 1e3 1.5 9223372036854775807 -9223372036854775808 18446744073709551616 NX XX COUNT MATCH TYPE 3 MAXWAIT")

func main() {
	addr := flag.String("addr", "127.0.0.1:6379", "server address")
	dur := flag.Duration("duration", time.Minute, "how long the clients run")
	workers := flag.Int("workers", 16, "clients at once")
	seed := flag.Uint64("seed", 7, "random seed (each worker adds its number)")
	names := flag.String("names", "CL.THROTTLE GCRA CL.TOKENBUCKET CL.LEAKYBUCKET CL.WINDOW CL.ACQUIRE CL.RELEASE CL.RENEW CL.ALL PING ECHO HELLO AUTH SELECT RESET CLIENT MULTI EXEC DISCARD COMMAND INFO TIME DBSIZE ACL CLUSTER READONLY READWRITE ASKING ROLE WAIT CONFIG SLOWLOG LATENCY LASTSAVE MEMORY EXISTS DEL UNLINK TYPE TTL PTTL SCAN KEYS FLUSHDB",
		"command names to draw from")
	drain := flag.Duration("drain", time.Minute, "how long the server may take to close the connections afterwards")
	keep := flag.Int("keep", 1, "connections the server serves when drained: the soak's own, and a replica's link from its primary")
	flag.Parse()
	cmds := strings.Fields(*names)

	var wg sync.WaitGroup
	stop := time.Now().Add(*dur)
	var mu sync.Mutex
	conns, requests := 0, 0
	for w := range *workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(*seed+uint64(w), 7))
			for time.Now().Before(stop) {
				c, err := net.Dial("tcp", *addr)
				if err != nil {
					fmt.Fprintln(os.Stderr, "dial:", err)
					time.Sleep(100 * time.Millisecond)
					continue
				}
				go func() { _, _ = bufio.NewReader(c).WriteTo(discard{}) }()
				bw := bufio.NewWriter(c)
				n := r.IntN(500)
				for range n {
					if r.IntN(50) == 0 {
						_, _ = bw.Write(randomBytes(r, 64))
						continue
					}
					args := []string{cmds[r.IntN(len(cmds))]}
					for range r.IntN(8) {
						args = append(args, arg(r))
					}
					fmt.Fprintf(bw, "*%d\r\n", len(args))
					for _, a := range args {
						fmt.Fprintf(bw, "$%d\r\n%s\r\n", len(a), a)
					}
				}
				_ = bw.Flush()
				time.Sleep(time.Duration(r.IntN(3)) * time.Millisecond)
				c.Close()
				mu.Lock()
				conns, requests = conns+1, requests+n
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	fmt.Printf("%d connections, %d requests in %v\n", conns, requests, *dur)

	// The server must answer (a connection may be refused while it is
	// over maxclients: try again) and close what the clients closed.
	ended := time.Now()
	var ask func(cmd string) (string, error)
	for {
		var clients string
		c, err := net.DialTimeout("tcp", *addr, 10*time.Second)
		if err == nil {
			br := bufio.NewReader(c)
			ask = func(cmd string) (string, error) {
				_ = c.SetDeadline(time.Now().Add(10 * time.Second))
				if _, err := fmt.Fprintf(c, "%s\r\n", cmd); err != nil {
					return "", err
				}
				return readBulk(br)
			}
			var info string
			if info, err = ask("INFO clients"); err == nil {
				clients = field(info, "connected_clients")
			}
		}
		if clients == strconv.Itoa(*keep) {
			defer c.Close()
			break
		}
		if c != nil {
			c.Close()
		}
		if time.Since(ended) > *drain {
			fail("%v after the clients closed their connections: connected_clients %q, %v", *drain, clients, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	fmt.Printf("the server closed every connection %v after the clients\n", time.Since(ended).Round(time.Millisecond))
	all, err := ask("INFO commandstats")
	if err != nil {
		fail("INFO commandstats: %v", err)
	}
	type stat struct {
		name string
		usec int64
		line string
	}
	var stats []stat
	for _, l := range strings.Split(all, "\r\n") {
		name, rest, ok := strings.Cut(strings.TrimPrefix(l, "cmdstat_"), ":")
		if !ok || !strings.HasPrefix(l, "cmdstat_") {
			continue
		}
		usec, _ := strconv.ParseInt(field(strings.ReplaceAll(rest, ",", "\r\n"), "usec"), 10, 64)
		stats = append(stats, stat{name, usec, rest})
	}
	sort.Slice(stats, func(i, j int) bool { return stats[i].usec > stats[j].usec })
	fmt.Println("the commands that cost the server most:")
	for _, s := range stats[:min(8, len(stats))] {
		fmt.Printf("  %-24s %s\n", s.name, s.line)
	}
}

func arg(r *rand.Rand) string {
	switch r.IntN(10) {
	case 0:
		return string(randomBytes(r, 20))
	case 1:
		return strconv.FormatInt(r.Int64()>>r.IntN(63), 10)
	default:
		return words[r.IntN(len(words))]
	}
}

func randomBytes(r *rand.Rand, max int) []byte {
	b := make([]byte, r.IntN(max))
	for i := range b {
		b[i] = byte(r.IntN(256))
	}
	return b
}

// readBulk reads a bulk string reply (INFO's); an error reply is an error.
func readBulk(br *bufio.Reader) (string, error) {
	line, err := br.ReadString('\n')
	if err != nil {
		return "", err
	}
	if !strings.HasPrefix(line, "$") {
		return "", fmt.Errorf("unexpected reply %q", strings.TrimSpace(line))
	}
	n, err := strconv.Atoi(strings.TrimSpace(line[1:]))
	if err != nil || n < 0 {
		return "", fmt.Errorf("bad bulk length %q", line)
	}
	b := make([]byte, n+2)
	if _, err := io.ReadFull(br, b); err != nil {
		return "", err
	}
	return string(b[:n]), nil
}

// field returns the value of name in INFO text ("name:value" lines).
func field(info, name string) string {
	for _, l := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(l, name+":"); ok {
			return v
		}
		if v, ok := strings.CutPrefix(l, name+"="); ok {
			return v
		}
	}
	return ""
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "soak: "+format+"\n", args...)
	os.Exit(1)
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
