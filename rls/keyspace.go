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
	"github.com/rlserver/rlserver/shard"
)

// Commands is the adapter between the service and rlserver: it decides
// through the command table, as a client connection would, so that a
// descriptor's key is an ordinary key (persisted, replicated, counted in
// INFO and SLOWLOG, bound by ACLs and --maxmemory) and each algorithm is
// exactly its limiter command. A refund is the one exception: there is no
// command that gives units back, so after the rule's command has looked at
// the key (n = 0: the key's slot is this node's, the node takes writes,
// the key holds this limiter) the units are given back on the keyspace
// itself (giveback.go).
type Commands struct {
	handler  resp.Handler
	store    *shard.Store // refunds' keyspace (nil: refunds by refundScript)
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

// NewCommands returns an adapter running commands through h, and refunds
// on store, the keyspace h serves (nil: refunds run refundScript); now is
// the server clock (Unix ns), password the default user's
// (--requirepass).
func NewCommands(h resp.Handler, store *shard.Store, now func() int64, password string, maxIdle int) *Commands {
	return &Commands{handler: h, store: store, now: now, password: password, idle: make(chan *session, maxIdle), remotes: map[string]*redis.Client{}}
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
		native := call.Refund && c.store != nil
		s.build(call, !native)
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
		if native {
			if d, err = c.giveBack(call, c.now()); err != nil {
				s.s.EndBatch()
				c.put(s)
				return err
			}
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

// build fills s.args with call's command. A refund is refundScript when
// script is set, else the rule's command looking (n = 0), which checks the
// key for the give-back that follows.
func (s *session) build(call *Call, script bool) {
	r := call.Rule
	n := 0
	num := func(v int64) []byte {
		b := strconv.AppendInt(s.num[n][:0], v, 10)
		n++
		return b
	}
	window := strconv.AppendInt(s.num[5][:0], r.WindowSeconds(), 10)
	window = append(window, 's')
	cost := call.N
	if call.Refund {
		if script {
			s.args = append(s.args[:0], []byte("EVAL"), refundScript, []byte("1"), call.Key,
				[]byte(r.Algorithm.String()), num(r.Capacity()), num(int64(r.RequestsPerUnit)), window, num(call.N))
			return
		}
		cost = 0
	}
	switch r.Algorithm {
	case FixedWindow, SlidingWindow:
		mode := "FIXED"
		if r.Algorithm == SlidingWindow {
			mode = "SLIDING"
		}
		s.args = append(s.args[:0], []byte("CL.WINDOW"), call.Key, num(r.Capacity()), window, num(cost), []byte(mode))
	case TokenBucket:
		s.args = append(s.args[:0], []byte("CL.TOKENBUCKET"), call.Key, num(r.Capacity()), num(int64(r.RequestsPerUnit)), window, num(cost))
	case GCRA:
		// CL.ALL's THROTTLE rule answers the five-integer decision in ms.
		s.args = append(s.args[:0], []byte("CL.ALL"), []byte("1"), []byte("THROTTLE"), call.Key,
			num(r.Capacity()-1), num(int64(r.RequestsPerUnit)), window, []byte("COST"), num(cost))
	}
}

// refundScript gives ARGV[5] units back to a rule's limiter at KEYS[1]
// (is_negative_hits) on a node whose keyspace this one cannot reach (a
// key another cluster node owns; local keys get the native give-back of
// giveback.go), atomically, with the limiter commands alone: it looks
// (n = 0) to learn the units in use, then, if the refund frees some,
// deletes the key and takes what is left in use on the fresh limiter. The
// key stays an ordinary limiter key with the expiry its command gives it;
// a fresh key stays absent (nothing to give back, nothing created). It
// answers the limiter's decision after the refund.
//
// In use is limit - remaining. For a fixed window that is the window's
// count, so the refund is exact, as envoyproxy/ratelimit's decrement
// floored at 0. For the others remaining is rounded down, so in use is
// rounded up: a token bucket or GCRA forgets the part of a unit already
// refilled, and a sliding window counts the previous window's weight in
// the current one. Never more is given back than asked, and the state
// after a refund never admits more than exact arithmetic would.
var refundScript = []byte(`local alg, cap, rate, win, v = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4], tonumber(ARGV[5])
local function take(n)
  if alg == 'fixed_window' then return redis.call('CL.WINDOW', KEYS[1], cap, win, n, 'FIXED') end
  if alg == 'sliding_window' then return redis.call('CL.WINDOW', KEYS[1], cap, win, n, 'SLIDING') end
  if alg == 'token_bucket' then return redis.call('CL.TOKENBUCKET', KEYS[1], cap, rate, win, n) end
  return redis.call('CL.ALL', 1, 'THROTTLE', KEYS[1], cap - 1, rate, win, 'COST', n)[2]
end
local d = take(0)
local used = d[2] - d[3]
if v <= 0 or used <= 0 then return d end
redis.call('DEL', KEYS[1])
if used > v then return take(used - v) end
return take(0)
`)

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
		s.build(call, true)
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
