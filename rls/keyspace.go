package rls

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc/codes"

	"github.com/rlserver/rlserver/resp"
)

// Commands is the adapter between the service and rlserver: it decides
// through the command table, as a client connection would, so that a
// descriptor's key is an ordinary key (persisted, replicated, counted in
// INFO and SLOWLOG, bound by ACLs and --maxmemory) and each algorithm is
// exactly its limiter command. A refund (is_negative_hits) is the internal
// command RLS GIVEBACK, which puts the units back into the limiter's own
// state on the node that owns the key, this one or another.
type Commands struct {
	handler  resp.Handler
	now      func() int64 // the server clock, Unix ns
	password string       // AUTH for new sessions ("" none)

	idle chan *session // sessions not in use

	mu      sync.Mutex
	remotes map[string]*redis.Client // cluster mode: other nodes by address
}

// session is one in-process connection: its reply buffer and its command
// state.
type session struct {
	w    *resp.Writer
	s    resp.Session
	args [][]byte
	num  [6][24]byte
}

// NewCommands returns an adapter running commands through h; now is the
// server clock (Unix ns), password the default user's (--requirepass).
func NewCommands(h resp.Handler, now func() int64, password string, maxIdle int) *Commands {
	return &Commands{handler: h, now: now, password: password, idle: make(chan *session, maxIdle), remotes: map[string]*redis.Client{}}
}

// NowMs returns the server clock (Keyspace).
func (c *Commands) NowMs() int64 { return c.now() / 1e6 }

func (c *Commands) get() (*session, error) {
	select {
	case s := <-c.idle:
		return s, nil
	default:
	}
	w := &resp.Writer{Proto: 2}
	s := &session{w: w}
	s.s = c.handler.NewSession(nil, resp.ConnInfo{ID: -1, Addr: "rls", FD: -1, Loop: -1, Created: time.Now()}, w)
	if c.password != "" {
		s.s.Exec([][]byte{[]byte("AUTH"), []byte(c.password)}, nil)
		s.s.EndBatch()
		if len(w.Buf) > 0 && w.Buf[0] == '-' {
			msg := string(w.Buf[1 : len(w.Buf)-2])
			s.s.Close()
			return nil, errorf(codes.Unavailable, "rls: authenticating: %s", msg)
		}
		w.Buf = w.Buf[:0]
	}
	return s, nil
}

func (c *Commands) put(s *session) {
	select {
	case c.idle <- s:
	default:
		s.s.Close()
	}
}

// Decide runs each call's limiter command in one batch of one session: one
// instant of the server clock for the whole request (Keyspace).
func (c *Commands) Decide(ctx context.Context, calls []Call, out []Decision) error {
	s, err := c.get()
	if err != nil {
		return err
	}
	var moved []int
	var movedTo []string
	for i := range calls {
		call := &calls[i]
		s.build(call)
		s.w.Buf = s.w.Buf[:0]
		s.s.Exec(s.args, nil)
		d, msg := parseDecision(s.w.Buf)
		if msg != "" {
			if addr, ok := movedAddr(msg); ok {
				moved, movedTo = append(moved, i), append(movedTo, addr)
				continue
			}
			s.s.EndBatch()
			c.put(s)
			return keyspaceError(msg)
		}
		out[i] = d
	}
	s.s.EndBatch()
	c.put(s)
	if len(moved) > 0 {
		return c.forward(ctx, calls, out, moved, movedTo)
	}
	return nil
}

// build fills s.args with call's command: the rule's limiter command, or
// for a refund RLS GIVEBACK with the rule as CL.ALL spells it.
func (s *session) build(call *Call) {
	r := call.Rule
	n := 0
	num := func(v int64) []byte {
		b := strconv.AppendInt(s.num[n][:0], v, 10)
		n++
		return b
	}
	window := strconv.AppendInt(s.num[5][:0], r.WindowSeconds(), 10)
	window = append(window, 's')
	if call.Refund {
		s.args = append(s.args[:0], []byte("RLS"), []byte("GIVEBACK"))
		switch r.Algorithm {
		case FixedWindow:
			s.args = append(s.args, []byte("FIXED"), call.Key, num(r.Capacity()), window)
		case SlidingWindow:
			s.args = append(s.args, []byte("SLIDING"), call.Key, num(r.Capacity()), window)
		case TokenBucket:
			s.args = append(s.args, []byte("TOKENBUCKET"), call.Key, num(r.Capacity()), num(int64(r.RequestsPerUnit)), window)
		case GCRA:
			s.args = append(s.args, []byte("THROTTLE"), call.Key, num(r.Capacity()-1), num(int64(r.RequestsPerUnit)), window)
		}
		s.args = append(s.args, num(call.N))
		return
	}
	switch r.Algorithm {
	case FixedWindow, SlidingWindow:
		mode := "FIXED"
		if r.Algorithm == SlidingWindow {
			mode = "SLIDING"
		}
		s.args = append(s.args[:0], []byte("CL.WINDOW"), call.Key, num(r.Capacity()), window, num(call.N), []byte(mode))
	case TokenBucket:
		s.args = append(s.args[:0], []byte("CL.TOKENBUCKET"), call.Key, num(r.Capacity()), num(int64(r.RequestsPerUnit)), window, num(call.N))
	case GCRA:
		// CL.ALL's THROTTLE rule answers the five-integer decision in ms.
		s.args = append(s.args[:0], []byte("CL.ALL"), []byte("1"), []byte("THROTTLE"), call.Key,
			num(r.Capacity()-1), num(int64(r.RequestsPerUnit)), window, []byte("COST"), num(call.N))
	}
}

// parseDecision reads a decision reply (CL.WINDOW's and CL.TOKENBUCKET's
// five integers, or CL.ALL's allowed then the five): its last five
// integers. msg is an error reply's text.
func parseDecision(b []byte) (d Decision, msg string) {
	var ints [6]int64
	k := 0
	for len(b) > 0 {
		end := strings.IndexByte(string(b), '\n')
		if end < 1 {
			break
		}
		line := b[:end-1]
		b = b[end+1:]
		switch line[0] {
		case '-':
			return d, string(line[1:])
		case ':':
			v, err := strconv.ParseInt(string(line[1:]), 10, 64)
			if err != nil || k == len(ints) {
				return d, "ERR rls: unexpected reply"
			}
			ints[k] = v
			k++
		}
	}
	if k < 5 {
		return d, "TRYAGAIN rls: no decision (the key's slot is moving)"
	}
	v := ints[k-5 : k]
	return Decision{Allowed: v[0] == 1, Limit: v[1], Remaining: v[2], RetryAfterMs: v[3], ResetAfterMs: v[4]}, ""
}

// movedAddr reads a MOVED redirection: the node that owns the key.
func movedAddr(msg string) (string, bool) {
	f := strings.Fields(msg)
	if len(f) == 3 && (f[0] == "MOVED") {
		return f[2], true
	}
	return "", false
}

// keyspaceError maps an error reply to a gRPC status.
func keyspaceError(msg string) error {
	code := codes.Internal
	switch strings.SplitN(msg, " ", 2)[0] {
	case "TRYAGAIN", "CLUSTERDOWN", "READONLY", "LOADING", "MOVED", "ASK":
		code = codes.Unavailable
	case "OOM":
		code = codes.ResourceExhausted
	case "WRONGTYPE":
		code = codes.FailedPrecondition
	case "NOAUTH", "NOPERM", "WRONGPASS":
		code = codes.PermissionDenied
	}
	return errorf(code, "rls: %s", msg)
}

// forward asks the nodes that own the moved calls' keys, one pipeline per
// node, in parallel (cluster mode: any node answers any request).
func (c *Commands) forward(ctx context.Context, calls []Call, out []Decision, moved []int, to []string) error {
	byAddr := map[string][]int{}
	for j, i := range moved {
		byAddr[to[j]] = append(byAddr[to[j]], i)
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(byAddr))
	var s session
	argsOf := func(call *Call) []any {
		s.build(call)
		a := make([]any, len(s.args))
		for i, b := range s.args {
			a[i] = string(b)
		}
		return a
	}
	for addr, idx := range byAddr {
		cl := c.remote(addr)
		cmds := make([]*redis.Cmd, len(idx))
		pipe := cl.Pipeline()
		for j, i := range idx {
			cmds[j] = pipe.Do(ctx, argsOf(&calls[i])...)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			pipe.Exec(ctx)
			for j, i := range idx {
				v, err := cmds[j].Result()
				if err != nil {
					errs <- keyspaceError(err.Error())
					return
				}
				d, ok := decisionOf(v)
				if !ok {
					errs <- errorf(codes.Internal, "rls: unexpected reply from %s", addr)
					return
				}
				out[i] = d
			}
		}()
	}
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// decisionOf reads a decision reply as go-redis returns it.
func decisionOf(v any) (Decision, bool) {
	var ints []int64
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case int64:
			ints = append(ints, x)
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	if len(ints) < 5 {
		return Decision{}, false
	}
	x := ints[len(ints)-5:]
	return Decision{Allowed: x[0] == 1, Limit: x[1], Remaining: x[2], RetryAfterMs: x[3], ResetAfterMs: x[4]}, true
}

func (c *Commands) remote(addr string) *redis.Client {
	c.mu.Lock()
	defer c.mu.Unlock()
	cl := c.remotes[addr]
	if cl == nil {
		cl = redis.NewClient(&redis.Options{Addr: addr, Password: c.password, Protocol: 2, MaxRetries: -1})
		c.remotes[addr] = cl
	}
	return cl
}

// Close closes the idle sessions and the connections to other nodes.
func (c *Commands) Close() {
	for {
		select {
		case s := <-c.idle:
			s.s.Close()
			continue
		default:
		}
		break
	}
	c.mu.Lock()
	for _, cl := range c.remotes {
		cl.Close()
	}
	c.mu.Unlock()
}
