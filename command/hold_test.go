package command

import (
	"bufio"
	"fmt"
	"io"
	"log"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlserver/rlserver/clock"
	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/resp"
	"github.com/rlserver/rlserver/shard"
)

// holdServer is a node of twoShards's cluster, serving on a free port.
type holdServer struct {
	t     *testing.T
	st    *cluster.State
	store *shard.Store
	addr  string
}

func newHoldServer(t *testing.T, loops int, hold time.Duration) *holdServer {
	t.Helper()
	clock := clock.New()
	clock.Set(1_767_225_600_000_000_000)
	store := shard.New(shard.Options{Seed: hashSeed})
	h := New(Config{MoveHold: hold}, store, clock)
	st := twoShards(t)
	h.SetCluster(st, nil)
	srv := resp.New(resp.Config{Logger: log.New(io.Discard, "", 0), EventLoops: loops}, h)
	if err := srv.Listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	go srv.Serve()
	t.Cleanup(func() { srv.Close(time.Second) })
	return &holdServer{t: t, st: st, store: store, addr: srv.Addr().String()}
}

// holdClient is a raw connection: requests are written as sent, replies
// read one at a time.
type holdClient struct {
	t  *testing.T
	nc net.Conn
	rd *bufio.Reader
}

func (s *holdServer) dial() *holdClient {
	nc, err := net.Dial("tcp", s.addr)
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { nc.Close() })
	return &holdClient{t: s.t, nc: nc, rd: bufio.NewReader(nc)}
}

// send writes the requests, each a space-separated command, in one write.
func (c *holdClient) send(reqs ...string) {
	var b []byte
	for _, r := range reqs {
		_, raw := asRead(argsOf(strings.Fields(r)...))
		b = append(b, raw...)
	}
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatal(err)
	}
}

// reply reads one reply: a line, or an array of lines (bulk strings are
// read as their header line and their data line).
func (c *holdClient) reply() string {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := c.rd.ReadString('\n')
	if err != nil {
		c.t.Fatalf("reading a reply: %v", err)
	}
	switch line[0] {
	case '*':
		n, _ := strconv.Atoi(strings.TrimSpace(line[1:]))
		for range n {
			line += c.reply()
		}
	case '$':
		if n, _ := strconv.Atoi(strings.TrimSpace(line[1:])); n >= 0 {
			data := make([]byte, n+2)
			if _, err := io.ReadFull(c.rd, data); err != nil {
				c.t.Fatal(err)
			}
			line += string(data)
		}
	}
	return line
}

func (c *holdClient) do(req string) string {
	c.t.Helper()
	c.send(req)
	return c.reply()
}

// info returns the value of an INFO field.
func (c *holdClient) info(section, field string) string {
	c.t.Helper()
	text := c.do("INFO " + section)
	for _, l := range strings.Split(text, "\r\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			return v
		}
	}
	c.t.Fatalf("no %s in INFO %s: %q", field, section, text)
	return ""
}

// waitBlocked polls INFO until blocked_clients reads n.
func (c *holdClient) waitBlocked(n int) {
	c.t.Helper()
	want := strconv.Itoa(n)
	for deadline := time.Now().Add(10 * time.Second); c.info("clients", "blocked_clients") != want; {
		if time.Now().After(deadline) {
			c.t.Fatalf("blocked_clients never read %d", n)
		}
		time.Sleep(time.Millisecond)
	}
}

func (s *holdServer) freeze(slot int) *cluster.SlotSet {
	var set cluster.SlotSet
	set.Add([]cluster.Range{{slot, slot}})
	s.store.Freeze(&set)
	return &set
}

// thaw ends a move that was abandoned: the slot is served here again.
func (s *holdServer) thaw(set *cluster.SlotSet) {
	s.store.Thaw(set)
	s.st.SetGate(nil)
}

// A command whose key's slot is being handed to another node (frozen) is
// held, with the connection's later requests behind it, until the move
// ends, then runs again: the decision if the move was abandoned, ASK once
// the slot is handed over. Only after MoveHold does it answer TRYAGAIN;
// inside EXEC it answers TRYAGAIN at once. A held call is counted once.
func TestHeldWhileSlotMoves(t *testing.T) {
	for _, loops := range []int{0, 1} {
		t.Run(fmt.Sprint("loops=", loops), func(t *testing.T) {
			s := newHoldServer(t, loops, time.Minute)
			a, b := s.dial(), s.dial()
			slot := cluster.Slot([]byte("{k}"))

			// Abandoned: the command and the PING behind it get their replies
			// once the slot is served here again.
			set := s.freeze(slot)
			a.send("CL.THROTTLE {k}a 10 10 60", "PING")
			b.waitBlocked(1)
			if list := b.do("CLIENT LIST"); strings.Count(list, " flags=b ") != 1 || !strings.Contains(list, " flags=b db=0 sub=0 psub=0 ssub=0 multi=-1 watch=0 qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=0 tot-mem=0 events=r cmd=cl.throttle ") {
				t.Fatalf("CLIENT LIST shows no blocked CL.THROTTLE: %q", list)
			}
			if got := b.do("CL.THROTTLE b 10 10 60"); got != "*5\r\n:0\r\n:11\r\n:10\r\n:-1\r\n:6\r\n" {
				t.Fatalf("another slot, another client: %q", got)
			}
			s.thaw(set)
			if got := a.reply() + a.reply(); got != "*5\r\n:0\r\n:11\r\n:10\r\n:-1\r\n:6\r\n+PONG\r\n" {
				t.Fatalf("after the thaw: %q", got)
			}
			b.waitBlocked(0)

			// Handed over: ASK, and nothing changed here.
			set = s.freeze(slot)
			a.send("CL.THROTTLE {k}a 10 10 60")
			b.waitBlocked(1)
			var g cluster.Gate
			g.To = cluster.Node{ID: strings.Repeat("b", 40), Host: "127.0.0.1", Port: 7002}
			g.Handed.Add([]cluster.Range{{slot, slot}})
			s.st.SetGate(&g)
			if got, want := a.reply(), fmt.Sprintf("-ASK %d 127.0.0.1:7002\r\n", slot); got != want {
				t.Fatalf("handed over: %q, want %q", got, want)
			}
			s.thaw(set)
			if got := a.do("CL.THROTTLE {k}a 10 10 60"); got != "*5\r\n:0\r\n:11\r\n:9\r\n:-1\r\n:12\r\n" {
				t.Fatalf("after the ASK, the key took one decision only: %q", got)
			}

			// CL.ALL and DEL are held too; EXEC answers TRYAGAIN at once.
			set = s.freeze(slot)
			a.send("CL.ALL 2 THROTTLE {k}a 10 10 60 THROTTLE {k}c 5 5 60", "DEL {k}a")
			b.waitBlocked(1)
			if got := b.do("MULTI") + b.do("CL.THROTTLE {k}d 1 1 60") + b.do("EXEC"); got != "+OK\r\n+QUEUED\r\n*1\r\n-TRYAGAIN Slot being handed to another node, try again\r\n" {
				t.Fatalf("EXEC on a moving slot: %q", got)
			}
			s.thaw(set)
			if got := a.reply(); !strings.HasPrefix(got, "*3\r\n:1\r\n") {
				t.Fatalf("CL.ALL after the thaw: %q", got)
			}
			if got := a.reply(); got != ":1\r\n" {
				t.Fatalf("DEL after the thaw: %q", got)
			}

			// A client that hangs up while held is let go.
			set = s.freeze(slot)
			c := s.dial()
			c.send("CL.THROTTLE {k}a 10 10 60")
			b.waitBlocked(1)
			c.nc.Close()
			b.waitBlocked(0)
			s.thaw(set)

			// Each call counted once: a's two that ran (its ASK is a rejected
			// call), b's and EXEC's (failed); c's, gone, not at all.
			if got := b.info("commandstats", "cmdstat_cl.throttle"); !strings.HasPrefix(got, "calls=4,") || !strings.HasSuffix(got, "rejected_calls=1,failed_calls=1") {
				t.Fatalf("commandstats: %q", got)
			}
		})
	}
}

// A move that does not end within MoveHold: TRYAGAIN, as before the hold,
// but not before MoveHold has passed.
func TestHeldUntilMoveHold(t *testing.T) {
	const hold = 100 * time.Millisecond
	s := newHoldServer(t, 1, hold)
	a := s.dial()
	s.freeze(cluster.Slot([]byte("{k}")))
	began := time.Now()
	if got := a.do("CL.THROTTLE {k}a 10 10 60"); got != "-TRYAGAIN Slot being handed to another node, try again\r\n" {
		t.Fatalf("held past MoveHold: %q", got)
	}
	if held := time.Since(began); held < hold {
		t.Fatalf("TRYAGAIN after %v, before MoveHold (%v)", held, hold)
	}
	if got := a.info("errorstats", "errorstat_TRYAGAIN"); got != "count=1" {
		t.Fatalf("errorstats: %q", got)
	}
}
