package repl

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/shard"
)

// chunkBytes bounds an RLREPL APPLY's payload (whole entries; one larger
// entry goes alone), well under the replica's proto-max-bulk-len.
const chunkBytes = 256 << 10

// idlePoll is how often a link looks at the rings for changes to send (a
// WAIT nudges it at once).
const idlePoll = time.Millisecond

// link is a primary's connection to one replica, redialled until stopped.
type link struct {
	n    *Node
	node cluster.Node
	self cluster.Node // this primary, in the incarnation the link speaks for

	quit    chan struct{}
	wake    chan struct{}
	acked   []atomic.Uint64 // per shard: the position the replica acknowledged
	fnAcked atomic.Uint64   // the function libraries' version the replica acknowledged, plus one (0: none this session)
	online  atomic.Bool     // synchronised: acked is the replica's position
	lastAck atomic.Int64    // Unix ns of the last acknowledgement
	conn    atomic.Pointer[net.Conn]
}

func newLink(n *Node, r cluster.Node, self cluster.Node) *link {
	return &link{n: n, node: r, self: self, quit: make(chan struct{}), wake: make(chan struct{}, 1),
		acked: make([]atomic.Uint64, n.cfg.Store.NumShards())}
}

func (l *link) stop() {
	close(l.quit)
	if c := l.conn.Load(); c != nil {
		(*c).Close()
	}
}

func (l *link) nudge() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// has reports whether the replica acknowledged every shard up to target.
func (l *link) has(target []uint64) bool {
	if !l.online.Load() {
		return false
	}
	for i, t := range target {
		if l.acked[i].Load() < t {
			return false
		}
	}
	return true
}

// hasFunctions reports whether the replica acknowledged the function
// libraries of version v, or a later one.
func (l *link) hasFunctions(v uint64) bool {
	if l.n.cfg.Functions == nil {
		return true
	}
	a := l.fnAcked.Load()
	return a > 0 && a-1 >= v
}

func (l *link) stopped() bool {
	select {
	case <-l.quit:
		return true
	default:
		return false
	}
}

// run keeps the link up: a session, and after it fails a new one after a
// back-off (100 ms doubling to 2 s).
func (l *link) run() {
	backoff := 100 * time.Millisecond
	for !l.stopped() {
		began := time.Now()
		err := l.session()
		l.online.Store(false)
		if l.stopped() {
			return
		}
		l.n.cfg.Logf("replication: link to replica %s (%s): %v", l.node.ID, l.node.Addr(), err)
		if time.Since(began) > 5*time.Second {
			backoff = 100 * time.Millisecond
		}
		select {
		case <-l.quit:
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

// pending is a sent command whose reply is awaited: its acknowledgement
// sets the shard's position (shard -1: none), the function libraries'
// version (fns, plus one; 0: none), or, last, marks the replica
// synchronised.
type pending struct {
	shard  int
	pos    uint64
	fns    uint64
	synced bool
}

// session connects, agrees on where the replica resumes (or gives it a
// full copy), then streams until an error.
func (l *link) session() error {
	nc, err := net.DialTimeout("tcp", l.node.Addr(), 2*time.Second)
	if err != nil {
		return err
	}
	l.conn.Store(&nc)
	defer nc.Close()
	l.n.streaming.Add(1)
	defer l.n.streaming.Add(-1)
	if l.stopped() {
		return errors.New("stopped")
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	w := bufio.NewWriterSize(nc, 64<<10)
	r := newReplyReader(nc)
	store := l.n.cfg.Store
	ns := store.NumShards()

	nc.SetDeadline(time.Now().Add(5 * time.Second))
	if auth := l.n.authArgs(); auth != nil {
		writeCommand(w, auth...)
	}
	writeCommand(w, "RLREPL", "HELLO", l.self.ID, l.n.replid, strconv.Itoa(ns), l.self.Inc())
	if err := w.Flush(); err != nil {
		return err
	}
	if l.n.cfg.Password != "" {
		if v, err := r.read(); err != nil {
			return err
		} else if e, ok := v.(replyError); ok {
			return fmt.Errorf("AUTH: %s", e)
		}
	}
	v, err := r.read()
	if err != nil {
		return err
	}
	if e, ok := v.(replyError); ok {
		return fmt.Errorf("RLREPL HELLO: %s", e)
	}
	have, _ := v.([]any)
	var feed *shard.Feed
	var cont []uint64 // where a replica continues the history this node continues
	if len(have) == 1+ns || len(have) == 1+2*ns {
		pos := make([]uint64, len(have)-1)
		for i := range pos {
			s, _ := have[1+i].(string)
			p, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				return fmt.Errorf("RLREPL HELLO: bad position %q", s)
			}
			pos[i] = p
		}
		replid, _ := have[0].(string)
		upto := pos[:ns]
		if len(pos) == 2*ns {
			upto = pos[ns:]
		}
		// This node's own stream, or the history it continues since its
		// promotion (the replica then switches to this node's, CONTINUE).
		at, own := pos[:ns], replid == l.n.replid
		if !own {
			at = l.n.continueAt(replid, pos[:ns], upto)
		}
		if at != nil {
			if feed = store.SubscribeAt(at); feed != nil {
				for i, p := range at {
					l.acked[i].Store(p)
				}
				if own {
					l.online.Store(true)
					l.n.notify()
					l.n.cfg.Logf("replication: replica %s (%s) resumes from offset %d", l.node.ID, l.node.Addr(), sum(at))
				} else {
					cont = at
					l.n.cfg.Logf("replication: replica %s (%s) continues history %s from this node's offset %d", l.node.ID, l.node.Addr(), replid, sum(at))
				}
			}
		}
	}
	nc.SetDeadline(time.Time{})

	acks := make(chan pending, 4096)
	readErr := make(chan error, 1)
	go func() { readErr <- l.readAcks(r, acks) }()
	send := func(p pending, args ...[]byte) error {
		select {
		case acks <- p:
		case err := <-readErr:
			return err
		case <-l.quit:
			return errors.New("stopped")
		}
		writeBulks(w, args...)
		return nil
	}
	var buf []byte
	// The function libraries, sent whole at the beginning of the session
	// and whenever they change.
	l.fnAcked.Store(0)
	var fnSent uint64 // the version sent, plus one (0: none yet)
	sendFunctions := func() error {
		fns := l.n.cfg.Functions
		if fns == nil || fnSent > 0 && fns.FunctionsVersion() == fnSent-1 {
			return nil
		}
		v, payload := fns.DumpFunctions()
		fnSent = v + 1
		// In pieces of chunkBytes, under the replica's proto-max-bulk-len;
		// the last applies them.
		for len(payload) > chunkBytes {
			if err := send(pending{shard: -1}, []byte("RLREPL"), []byte("FUNCTIONS"), []byte("MORE"), payload[:chunkBytes]); err != nil {
				return err
			}
			payload = payload[chunkBytes:]
		}
		return send(pending{shard: -1, fns: v + 1}, []byte("RLREPL"), []byte("FUNCTIONS"), []byte("LAST"), payload)
	}
	if cont != nil {
		args := [][]byte{[]byte("RLREPL"), []byte("CONTINUE"), []byte(l.n.replid)}
		for _, p := range cont {
			args = append(args, []byte(strconv.FormatUint(p, 10)))
		}
		if err := send(pending{shard: -1, synced: true}, args...); err != nil {
			feed.Close()
			return err
		}
	}
	if feed == nil {
		feed = store.Subscribe()
		began := time.Now()
		if err := send(pending{shard: -1}, []byte("RLREPL"), []byte("FULL"), []byte(l.n.replid), []byte(strconv.Itoa(ns))); err != nil {
			feed.Close()
			return err
		}
		keys := 0
		for i := 0; i < ns; i++ {
			var pos uint64
			buf, pos = feed.SnapshotRaw(i, l.n.cfg.Clock.Now(), buf[:0])
			n, err := l.sendChunks(send, i, pos, buf)
			if err != nil {
				feed.Close()
				return err
			}
			keys += n
		}
		if err := sendFunctions(); err != nil {
			feed.Close()
			return err
		}
		if err := send(pending{shard: -1, synced: true}, []byte("RLREPL"), []byte("SYNCED")); err != nil {
			feed.Close()
			return err
		}
		if err := w.Flush(); err != nil {
			feed.Close()
			return err
		}
		l.n.cfg.Logf("replication: full copy of %d keys sent to replica %s (%s) in %v", keys, l.node.ID, l.node.Addr(), time.Since(began).Round(time.Millisecond))
	}
	defer feed.Close()
	idle := time.NewTimer(idlePoll)
	defer idle.Stop()
	lastSend := time.Now()
	for {
		passBegan := time.Now()
		sent := false
		if err := sendFunctions(); err != nil {
			return err
		}
		for i := 0; i < ns; i++ {
			var pos uint64
			var err error
			buf, pos, err = feed.ReadRaw(i, buf[:0])
			if err != nil {
				return fmt.Errorf("shard %d: %w", i, err)
			}
			if len(buf) == 0 {
				continue
			}
			if _, err := l.sendChunks(send, i, pos, buf); err != nil {
				return err
			}
			sent = true
		}
		if sent {
			lastSend = time.Now()
		} else if time.Since(lastSend) >= time.Second {
			// A keep-alive (an empty piece): its acknowledgement says the
			// replica is there, and the replica knows its primary is.
			if err := send(pending{shard: -1}, []byte("RLREPL"), []byte("APPLY"), []byte("0"), []byte("-1"), nil); err != nil {
				return err
			}
			lastSend = time.Now()
		}
		if err := w.Flush(); err != nil {
			return err
		}
		// One pass a poll period at most: the changes of a busy primary
		// go in a few large writes instead of many small ones (a WAIT
		// nudges the link at once).
		idle.Reset(max(idlePoll-time.Since(passBegan), 0))
		select {
		case <-l.quit:
			return errors.New("stopped")
		case err := <-readErr:
			return err
		case <-l.wake:
		case <-idle.C:
		}
	}
}

// sendChunks sends shard i's stream bytes b, which end at position pos,
// as RLREPL APPLY commands of whole entries; the last one carries the
// position. It returns how many entries it sent.
func (l *link) sendChunks(send func(pending, ...[]byte) error, i int, pos uint64, b []byte) (int, error) {
	si := []byte(strconv.Itoa(i))
	entries := 0
	for first := true; first || len(b) > 0; first = false {
		n := 0
		for n < len(b) && (n == 0 || n+entrySize(b[n:]) <= chunkBytes) {
			n += entrySize(b[n:])
			entries++
		}
		p := pending{shard: -1}
		at := []byte("-1")
		if n == len(b) {
			p = pending{shard: i, pos: pos}
			at = []byte(strconv.FormatUint(pos, 10))
		}
		if err := send(p, []byte("RLREPL"), []byte("APPLY"), si, at, b[:n]); err != nil {
			return entries, err
		}
		b = b[n:]
	}
	return entries, nil
}

// entrySize is the size of the stream entry b starts with.
func entrySize(b []byte) int {
	return 4 + int(uint32(b[0])|uint32(b[1])<<8|uint32(b[2])<<16|uint32(b[3])<<24)
}

// readAcks reads the replica's replies in order: each +OK acknowledges
// the command sent in that place.
func (l *link) readAcks(r *replyReader, acks <-chan pending) error {
	for {
		v, err := r.read()
		if err != nil {
			return err
		}
		if e, ok := v.(replyError); ok {
			return fmt.Errorf("replica refused: %s", e)
		}
		p := <-acks
		if p.shard >= 0 {
			l.acked[p.shard].Store(p.pos)
		}
		if p.fns > 0 {
			l.fnAcked.Store(p.fns)
		}
		if p.synced {
			l.online.Store(true)
		}
		l.lastAck.Store(time.Now().UnixNano())
		if len(acks) == 0 || p.synced {
			l.n.notify()
		}
	}
}

// authArgs is the AUTH command a node sends the nodes it streams to
// (replicas, importing primaries), or nil without a password.
func (n *Node) authArgs() []string {
	switch {
	case n.cfg.Password == "":
		return nil
	case n.cfg.User == "":
		return []string{"AUTH", n.cfg.Password}
	}
	return []string{"AUTH", n.cfg.User, n.cfg.Password}
}

func sum(pos []uint64) int64 {
	var s int64
	for _, p := range pos {
		s += int64(p)
	}
	return s
}

func writeCommand(w *bufio.Writer, args ...string) {
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	writeBulks(w, b...)
}

func writeBulks(w *bufio.Writer, args ...[]byte) {
	w.WriteString("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		w.WriteString("$" + strconv.Itoa(len(a)) + "\r\n")
		w.Write(a)
		w.WriteString("\r\n")
	}
}
