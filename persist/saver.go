package persist

import (
	"bytes"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rlserver/rlserver/clock"
	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/shard"
)

// Saver connects the keyspace to a Store: it restores the keyspace at start,
// flushes changed and deleted keys every interval, and answers SAVE, BGSAVE,
// LASTSAVE and INFO persistence.
//
// A flush visits the shards one at a time: under the shard's lock it only
// takes the list of changes and encodes them (no I/O); the Pebble batch for
// that shard is written after the lock is released. The command path never
// waits on disk. A batch that fails to write is kept and retried by the next
// flush, so a transient disk error loses nothing that is still in memory.
type Saver struct {
	store    Store
	keys     *shard.Store
	clock    *clock.Clock
	logf     func(string, ...any)
	interval time.Duration

	mu sync.Mutex // one flush at a time

	bgRunning  atomic.Bool
	lastSave   atomic.Int64 // Unix s of the last successful flush
	lastStatus atomic.Bool  // true: the last flush failed
	lastDurUs  atomic.Int64
	restored   int
	skipped    int
	expired    int
	restoreDur time.Duration

	// Persistence failing (a disk fault): decisions go on from memory and
	// changes wait in the keyspace. failure is the error (nil: none),
	// failedAt when it began (Unix s); fault is an error injected by tests
	// (DEBUG DISKFAULT) that Writable answers in place of the store.
	failure  atomic.Pointer[error]
	failedAt atomic.Int64
	failures atomic.Int64 // flushes and syncs that failed, ever
	rewrites atomic.Int64 // rewrites committed
	flushing atomic.Bool  // a flush is under way (Flushing)
	late     atomic.Bool  // the flush under way has run longer than the interval (Late)
	inFlight atomic.Int64 // changes a flush drained that are not durable yet
	stale    atomic.Bool  // the store holds what no live key has (expired while down, or writes lost): rewrite
	lost     atomic.Bool  // a write failed and may have lost what was applied since the last Sync: rewrite
	rwNext   int          // a rewrite under way: the next shard to mark (-1: none); guarded by mu
	window   lossWindow
	fault    atomic.Pointer[error]

	mark   func() func()
	commit func() // the last flush's Mark, run when it is durable; guarded by mu

	// The function libraries, kept beside the keys (nil: none): fnWritten
	// is the version of them the store holds; guarded by mu.
	fns       Functions
	fnWritten uint64

	stop chan struct{}
	done chan struct{}
}

// batch is the records one Apply writes.
type batch struct {
	puts    []Record
	deletes [][]byte
	// toBatch's scratch
	seed maphash.Seed
	last map[uint64]int // key hash -> index of its last change
	hs   []uint64
	hash func(maphash.Seed, []byte) uint64 // nil: maphash.Bytes (tests set a worse one)
}

// SaverOptions configures NewSaver.
type SaverOptions struct {
	// Interval is how often changes are flushed. Default 1s.
	Interval time.Duration
	// Logger receives log lines. Default: discard.
	Logger func(format string, args ...any)
	// Mark, if set, is called as each flush begins; the function it
	// returns (if not nil) is called once that flush, and every change
	// made before Mark, is durable. A replica keeps its replication
	// position this way.
	Mark func() func()
	// Functions, if set, are the function libraries (FUNCTION LOAD):
	// restored at start, and written whole by the flush that follows a
	// change and by every rewrite. Default: none.
	Functions Functions
}

// Functions is state the saver keeps beside the keys: Redis's function
// libraries (package script's Engine), written whole, as FUNCTION DUMP's
// payload, in one record of kind KindFunctions. Its methods must be safe
// for concurrent use.
type Functions interface {
	// FunctionsVersion changes whenever the libraries do.
	FunctionsVersion() uint64
	// DumpFunctions returns the libraries' payload and their version.
	DumpFunctions() (version uint64, payload []byte)
	// ReplaceFunctions makes a payload's libraries the only ones.
	ReplaceFunctions(payload []byte) error
}

// KindFunctions is the kind of the record holding the function libraries:
// never a limiter's or a value's (engine.Kind stops below it). Its key is
// functionsKey, which a key of the keyspace may also be: records are told
// apart by kind (a deletion, which has none, is always a key's).
const KindFunctions uint8 = engine.MaxKinds - 1

var functionsKey = []byte("functions")

// NewSaver restores every record of store that has not expired into keys
// (which must be empty and track changes), then starts flushing every
// interval. The caller must call Shutdown, which also closes store.
func NewSaver(store Store, keys *shard.Store, clock *clock.Clock, opts SaverOptions) (*Saver, error) {
	if opts.Interval <= 0 {
		opts.Interval = time.Second
	}
	if opts.Logger == nil {
		opts.Logger = func(string, ...any) {}
	}
	s := &Saver{store: store, keys: keys, clock: clock, logf: opts.Logger, interval: opts.Interval, mark: opts.Mark,
		fns: opts.Functions, stop: make(chan struct{}), done: make(chan struct{}), rwNext: -1}
	if err := s.restore(); err != nil {
		return nil, err
	}
	s.lastSave.Store(time.Now().Unix())
	// A store opened read-only (its disk full or read-only) is a disk
	// fault from the start: reported now, retried as a running server's.
	if d, ok := store.(interface{ Degraded() error }); ok {
		if err := d.Degraded(); err != nil {
			s.failed(err)
		}
	}
	go s.loop()
	return s, nil
}

func (s *Saver) restore() error {
	began := time.Now()
	now := s.clock.Now()
	s.keys.Reserve(s.store.KeysHint())
	// Two stages: this goroutine reads and decodes the records, another
	// applies them to the keyspace, batches passing between the two.
	full, free := make(chan *restoreBatch, restoreBatches), make(chan *restoreBatch, restoreBatches)
	for range restoreBatches {
		free <- new(restoreBatch)
	}
	applied := make(chan struct{})
	go func() {
		defer close(applied)
		for b := range full {
			b.apply(s.keys)
			free <- b
		}
	}()
	b := <-free
	var fnPayload []byte // the last functions record's
	st, err := s.store.Load(now, func(r Record) error {
		if r.Kind == KindFunctions && !r.Deleted {
			fnPayload = append(fnPayload[:0], r.Payload...)
			return nil
		}
		var state engine.State
		if !r.Deleted {
			var err error
			if state, err = b.decode(r); err != nil {
				return fmt.Errorf("%w: key %q: %v", ErrCorrupt, r.Key, err)
			}
		}
		b.add(r.Key, state, r.ExpireAt)
		if len(b.recs) == restoreBatchLen {
			full <- b
			b = <-free
		}
		return nil
	})
	full <- b
	close(full)
	<-applied
	if err != nil {
		return fmt.Errorf("restoring state: %w", err)
	}
	for _, e := range st.Errors {
		s.logf("skipped a record that cannot be decoded: %v", e)
	}
	if fnPayload != nil && s.fns != nil {
		if err := s.fns.ReplaceFunctions(fnPayload); err != nil {
			// As a record that does not decode: skipped, and dropped by
			// the next rewrite.
			s.logf("skipped the function libraries, which do not load: %v", err)
			st.Skipped++
		}
	}
	if s.fns != nil {
		s.fnWritten = s.fns.FunctionsVersion()
	}
	n := 0
	for i := 0; i < s.keys.NumShards(); i++ {
		sh := s.keys.Shard(i)
		lk := sh.Lock()
		n += lk.Len()
		lk.Unlock()
	}
	s.restored, s.skipped, s.expired = n, st.Skipped, st.Expired
	s.stale.Store(st.Expired > 0)
	s.restoreDur = time.Since(began)
	return nil
}

// A restore hands records from its reading stage to its applying stage in
// batches of restoreBatchLen, restoreBatches of them in flight; the keyspace
// looks them up restorePiece at a time (their cache misses overlap, see
// shard.Store.RestoreBatch).
const (
	restoreBatchLen = 512
	restoreBatches  = 4
	restorePiece    = 32
)

// restoreBatch is records for the keyspace, their keys copied (a Record's
// slices are only valid during Load's callback), and the states of its last
// records that the keyspace copied rather than kept: most are, and decoding
// into them instead of new objects spares a restore most of its allocation.
type restoreBatch struct {
	recs  []shard.Restored
	keys  []byte
	hs    [restorePiece]uint64
	spare [engine.MaxKinds][]engine.State // by kind
}

// decode is decodeState, into a spare state of the record's kind if there
// is one.
func (b *restoreBatch) decode(r Record) (engine.State, error) {
	k := engine.Kind(r.Kind)
	if r.Version != FormatV2 || int(k) >= len(b.spare) || len(b.spare[k]) == 0 {
		return decodeState(r)
	}
	sp := b.spare[k]
	st := sp[len(sp)-1]
	if err := st.DecodeCompact(r.Payload, r.ExpireAt); err != nil {
		return nil, err // st stays spare: a decode that works overwrites all of it
	}
	b.spare[k] = sp[:len(sp)-1]
	return st, nil
}

func (b *restoreBatch) add(key []byte, st engine.State, exp int64) {
	start := len(b.keys)
	b.keys = append(b.keys, key...)
	b.recs = append(b.recs, shard.Restored{Key: b.keys[start:len(b.keys):len(b.keys)], State: st, ExpireAt: exp})
}

func (b *restoreBatch) apply(keys *shard.Store) {
	for i := 0; i < len(b.recs); i += restorePiece {
		keys.RestoreBatch(b.recs[i:min(i+restorePiece, len(b.recs))], b.hs[:])
	}
	for _, r := range b.recs {
		if st := r.State; st != nil && !r.Kept && int(st.Kind()) < len(b.spare) {
			b.spare[st.Kind()] = append(b.spare[st.Kind()], st)
		}
	}
	clear(b.recs)
	b.recs, b.keys = b.recs[:0], b.keys[:0]
}

// decodeState decodes a record's payload by its format version: version 1
// with the frozen engine.DecodeV1, version 2 as the compact encoding of a
// fresh state of its kind, with ref the record's expiry.
func decodeState(r Record) (engine.State, error) {
	k := engine.Kind(r.Kind)
	switch r.Version {
	case FormatV1:
		return engine.DecodeV1(k, r.Payload)
	case FormatV2:
		st := k.New()
		if st == nil {
			return nil, fmt.Errorf("%w: unknown kind %d", engine.ErrCorrupt, k)
		}
		if err := st.DecodeCompact(r.Payload, r.ExpireAt); err != nil {
			return nil, err
		}
		return st, nil
	}
	return nil, fmt.Errorf("%w: unsupported format version %d", engine.ErrCorrupt, r.Version)
}

// Restored returns how many keys start-up restored.
func (s *Saver) Restored() int { return s.restored }

// RestoreSummary describes start-up's restore for the ready log line.
func (s *Saver) RestoreSummary() string {
	return fmt.Sprintf("in %v (%d expired dropped, %d corrupt skipped)", s.restoreDur.Round(time.Millisecond), s.expired, s.skipped)
}

// maxBackoff bounds the wait between two flushes while persistence fails,
// in save intervals.
const maxBackoff = 10

func (s *Saver) loop() {
	defer close(s.done)
	t := time.NewTimer(s.interval)
	defer t.Stop()
	backoff := 1       // intervals to wait after a failure, doubling
	var prev time.Time // when the last flush that worked began
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		began := time.Now()
		// A flush is written (and fsynced, unless appendfsync is no) by
		// the Sync that ends it.
		wrote, err := s.flush(false)
		if err == nil && wrote {
			if err = s.store.Sync(); err != nil {
				s.lose(err)
			}
		}
		if err != nil {
			// Retry with back-off, doubling up to maxBackoff intervals.
			t.Reset(time.Duration(backoff) * s.interval)
			backoff = min(2*backoff, maxBackoff)
			continue
		}
		s.succeeded()
		backoff = 1
		// A crash just before this flush ended would have lost what was
		// acknowledged since the previous one began.
		took := time.Since(began)
		if !prev.IsZero() {
			s.window.note(time.Since(prev))
		}
		prev = began
		// The next flush begins one interval after this one began, less
		// what this one took, so that from the beginning of one flush to
		// the end of the next is about one interval while flushes take
		// under half of it.
		t.Reset(max(0, s.interval-2*took))
	}
}

// lossWindow keeps the longest time from the beginning of a flush to the
// end of the next over the last minute: the most a crash would have lost.
type lossWindow struct {
	mu   sync.Mutex
	at   [60]int64         // per second slot: Unix s it was written in
	max  [60]time.Duration // per second slot: the longest noted then
	last time.Duration
}

func (w *lossWindow) note(d time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now().Unix()
	i := now % int64(len(w.at))
	if w.at[i] != now {
		w.at[i], w.max[i] = now, 0
	}
	w.max[i] = max(w.max[i], d)
	w.last = d
}

// get returns the longest window of the last minute, and the last.
func (w *lossWindow) get() (longest, last time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now().Unix()
	for i, at := range w.at {
		if now-at < int64(len(w.at)) {
			longest = max(longest, w.max[i])
		}
	}
	return longest, w.last
}

// writable asks the store whether a batch of need bytes can be written now
// (an injected fault answers first).
func (s *Saver) writable(need int) error {
	if f := s.fault.Load(); f != nil {
		return *f
	}
	return s.store.Writable(need)
}

// failed notes that persistence fails with err: the status turns to err,
// and the cause is logged once (again only if it changes).
func (s *Saver) failed(err error) {
	s.lastStatus.Store(true)
	s.failures.Add(1)
	prev := s.failure.Swap(&err)
	if prev == nil {
		s.failedAt.Store(time.Now().Unix())
	}
	if prev == nil || !sameCause(*prev, err) {
		s.logf("error: persistence failing, decisions go on from memory and changes wait (retrying with back-off): %v", err)
	}
}

// sameCause reports whether two failures have one cause: the same OS
// error, or the same text when there is none (a free-space figure in the
// text changes from one try to the next; the cause does not).
func sameCause(a, b error) bool {
	var ea, eb syscall.Errno
	if errors.As(a, &ea) && errors.As(b, &eb) {
		return ea == eb
	}
	return a.Error() == b.Error()
}

// lose notes a failed write to the store, which may have lost what was
// applied since the last Sync: the next flush rewrites every key, which
// writes them all again (and leaves out keys deleted meanwhile).
func (s *Saver) lose(err error) {
	s.lost.Store(true)
	s.failed(err)
}

// recovered notes a flush that wrote every waiting change.
func (s *Saver) recovered() {
	if prev := s.failure.Swap(nil); prev != nil {
		s.logf("persistence recovered after %v: the waiting changes are written", time.Since(time.Unix(s.failedAt.Load(), 0)).Round(time.Second))
		s.failedAt.Store(0)
	}
}

// InjectFault makes every flush fail with err, as a disk fault would,
// until InjectFault(nil) (tests, through DEBUG DISKFAULT).
func (s *Saver) InjectFault(err error) {
	if err == nil {
		s.fault.Store(nil)
		return
	}
	s.fault.Store(&err)
}

const (
	// minRewrite is the least the log must hold before a rewrite.
	minRewrite = 4 << 20
	// rewriteSpread is over about how many flushes a rewrite is spread,
	// so that none has to write every key on top of the changes. Not
	// more: the changes the flushes of a rewrite write are part of it,
	// and a restart reads them all.
	rewriteSpread = 2
)

// A flush holds a shard's lock for at most drainPiece changes or markPiece
// records marked for a rewrite at a time, so that a command on the shard
// waits for well under a millisecond. (Variables: tests make them small.)
var drainPiece, markPiece = 512, 8192

// batchBytes is about how much a flush collects, from one shard or
// several, before it writes: half a chunk, so that one write is a short
// piece of work too.
const batchBytes = 32 << 10

// lateFlushSlice is how long a flush that has run longer than the save
// interval runs before it lets the event loops have the P (the pieces
// within are short: no command waits on a shard's lock for long).
const lateFlushSlice = time.Millisecond

// redirty marks the keys of changes a failed write held as changed again.
func (s *Saver) redirty(changes []shard.Change) {
	byShard := map[*shard.Shard][]string{}
	for _, c := range changes {
		sh := s.keys.ShardFor(c.Key)
		byShard[sh] = append(byShard[sh], string(c.Key))
	}
	for sh, keys := range byShard {
		lk := sh.Lock()
		lk.Redirty(keys)
		lk.Unlock()
	}
}

// rewriteDue reports whether the next flush should rewrite every key: the
// log written since the last rewrite has outgrown it, as with Redis's
// auto-aof-rewrite-percentage 100.
func (s *Saver) rewriteDue() bool {
	base, since := s.store.Sizes()
	return s.stale.Load() || since >= max(base, minRewrite)
}

// flush writes every change since the previous flush, in batches, and
// returns whether it wrote anything. A rewrite of the store, once due, is
// spread over rewriteSpread flushes: each marks the keys of its share of
// the shards as changed, and the flush that has marked the last and
// written everything commits it; with finish set this flush marks every
// shard left and commits. A batch that fails to write is not
// kept: its keys are marked changed again, so the next flush writes their
// state as it is then (never an older one over a newer).
func (s *Saver) flush(finish bool) (wrote bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushing.Store(true)
	defer func() {
		s.flushing.Store(false)
		s.late.Store(false)
	}()
	s.inFlight.Store(0) // a failed flush's changes were marked changed again
	if s.mark != nil {
		s.commit = s.mark()
	}
	n := s.keys.NumShards()
	if s.lost.Swap(false) {
		s.rwNext = -1 // a rewrite under way lost its writes too: start over
		s.stale.Store(true)
	}
	rewrite := s.rwNext >= 0 || finish || s.rewriteDue()
	need := s.keys.Pending() * 64
	if rewrite {
		need += int(s.keys.Stats().Memory) / rewriteSpread
	}
	if err := s.writable(need); err != nil {
		// Nothing is drained: the changes wait in the keyspace.
		s.failed(err)
		return false, err
	}
	began := time.Now()
	if rewrite && s.rwNext < 0 {
		if err := s.store.BeginRewrite(); err != nil {
			s.failed(err)
			return false, err
		}
		s.rwNext = 0
	}
	markTo := s.rwNext // shards [rwNext, markTo) are marked now
	if rewrite {
		markTo = n
		if !finish {
			markTo = min(n, s.rwNext+max(1, n/rewriteSpread))
		}
	}
	now := s.clock.Now()
	var changes []shard.Change
	var buf []byte
	var b batch
	// write applies the changes collected so far as one batch. On failure
	// their keys are marked changed again, to be written as they are then.
	write := func() error {
		if len(changes) == 0 {
			return nil
		}
		toBatch(changes, &b)
		err := s.store.Apply(b.puts, b.deletes)
		if err != nil {
			s.redirty(changes) // counted as changes again
			s.inFlight.Store(0)
			s.lost.Store(true)
		} else {
			wrote = true
		}
		changes, buf = changes[:0], buf[:0]
		return err
	}
	// Between pieces the event loops may go first: with --threads 1 they
	// share one P with the flush, which yields (runtime.Gosched) after
	// each piece, so that a request waits at most a piece for it. When the
	// loops are busy, though, a goroutine that yields waits in the
	// runtime's global queue, which a busy P looks at about once in 61
	// turns: yielding after every piece, a flush got a twentieth of the
	// CPU and ran for seconds. So a late flush (Late) runs for a slice of
	// time before it yields again.
	ran := time.Now()
	pause := func() {
		if !s.noteLate(began, ran) || time.Since(ran) >= lateFlushSlice {
			runtime.Gosched()
			ran = time.Now()
		}
	}
	for i := 0; i < n && err == nil; i++ {
		sh := s.keys.Shard(i)
		if i >= s.rwNext && i < markTo {
			var cur shard.MarkCursor
			for done := false; !done; {
				lk := sh.Lock()
				done = lk.MarkAll(&cur, now, markPiece)
				lk.Unlock()
				pause()
			}
		}
		// The entries listed when the drain begins, in pieces (entries
		// listed meanwhile may come along, but the drain ends).
		for todo := math.MaxInt; todo > 0 && err == nil; {
			var left int
			lk := sh.Lock()
			s.inFlight.Add(lk.Changes()) // counted until the flush is durable
			changes, buf, left = lk.DrainChanges(changes, buf, drainPiece)
			lk.Unlock()
			todo = min(left, todo-drainPiece)
			if len(buf) >= batchBytes {
				err = write()
			}
			pause()
		}
	}
	if err == nil {
		err = write()
	}
	// The function libraries, when they changed, and in the flush that
	// commits a rewrite (what it wrote before is dropped).
	if s.fns != nil && err == nil {
		if v := s.fns.FunctionsVersion(); v != s.fnWritten || s.rwNext >= 0 && markTo == n {
			v, payload := s.fns.DumpFunctions()
			if err = s.store.Apply([]Record{{Key: functionsKey, Version: FormatV2, Kind: KindFunctions, Payload: payload}}, nil); err != nil {
				s.lost.Store(true) // the next flush rewrites all
			} else {
				s.fnWritten, wrote = v, true
			}
		}
	}
	if err == nil && s.rwNext >= 0 {
		if s.rwNext = markTo; s.rwNext == n {
			if err = s.store.CommitRewrite(); err == nil {
				s.rewrites.Add(1)
				s.stale.Store(false)
				s.rwNext = -1
			} else {
				s.lost.Store(true)
			}
		}
	}
	s.lastDurUs.Store(time.Since(began).Microseconds())
	if err != nil {
		s.failed(err)
		return wrote, err
	}
	return wrote, nil
}

// Flushing reports whether a flush is under way: the event loops then
// yield their P more often, so that it keeps up (resp.Config.Background).
func (s *Saver) Flushing() bool { return s.flushing.Load() }

// Late reports whether the flush under way has run longer than the save
// interval: the changes it has yet to write are older than the loss
// window's bound allows, and the event loops yield still more often. It
// is one atomic load: the loops ask at every pass.
func (s *Saver) Late() bool { return s.late.Load() }

// noteLate marks the flush that began at began late once it has run
// longer than the save interval by now, and reports whether it is.
func (s *Saver) noteLate(began, now time.Time) bool {
	if s.late.Load() {
		return true
	}
	if now.Sub(began) > s.interval {
		s.late.Store(true)
		return true
	}
	return false
}

// succeeded notes a flush whose writes are as durable as the fsync policy
// makes them (synced, unless the policy is "no"): only then is the status
// ok again and a fault over.
func (s *Saver) succeeded() {
	s.inFlight.Store(0)
	s.mu.Lock()
	commit := s.commit
	s.commit = nil
	s.mu.Unlock()
	if commit != nil {
		commit()
	}
	s.lastStatus.Store(false)
	s.lastSave.Store(time.Now().Unix())
	s.recovered()
}

// toBatch turns changes, oldest first, into a batch of version-2 records
// (a change's payload is the compact encoding with ref its expiry). Only
// each key's last change counts: a key deleted and then created again
// (within one interval, or between two pieces of a drain) is a put, one
// put and then deleted is a deletion. Keys are told apart by a 64-bit hash
// (checked against the key itself), so that eviction's stream of deletions
// costs no allocation per key.
func toBatch(changes []shard.Change, b *batch) {
	b.puts, b.deletes = b.puts[:0], b.deletes[:0]
	dedup := slices.ContainsFunc(changes, func(c shard.Change) bool { return c.Deleted })
	if dedup && !b.lastChanges(changes) {
		// Two keys share a hash: by the keys themselves.
		last := make(map[string]int, len(changes))
		for i, c := range changes {
			last[string(c.Key)] = i
		}
		for i, c := range changes {
			b.hs[i] = uint64(last[string(c.Key)])
		}
	}
	for i, c := range changes {
		if dedup && b.hs[i] != uint64(i) {
			continue
		}
		if c.Deleted {
			b.deletes = append(b.deletes, c.Key)
		} else {
			b.puts = append(b.puts, Record{Key: c.Key, Version: FormatV2, Kind: uint8(c.Kind), ExpireAt: c.ExpireAt, Payload: c.Payload})
		}
	}
}

// lastChanges sets b.hs[i] to the index of the last change of changes[i]'s
// key; it reports false if two keys share a hash (b.hs is then unset).
func (b *batch) lastChanges(changes []shard.Change) bool {
	if b.last == nil {
		b.seed = maphash.MakeSeed()
		b.last = map[uint64]int{}
		if b.hash == nil {
			b.hash = maphash.Bytes
		}
	}
	clear(b.last)
	b.hs = slices.Grow(b.hs[:0], len(changes))[:len(changes)]
	for i, c := range changes {
		h := b.hash(b.seed, c.Key)
		if j, ok := b.last[h]; ok && !bytes.Equal(changes[j].Key, c.Key) {
			return false
		}
		b.last[h] = i
		b.hs[i] = h
	}
	for i, h := range b.hs {
		b.hs[i] = uint64(b.last[h])
	}
	return true
}

// Save flushes every change and syncs the store (SAVE).
func (s *Saver) Save() error { return s.save(false) }

// save flushes (finishing a rewrite, or doing a whole one, with finish
// set) and syncs the store.
func (s *Saver) save(finish bool) error {
	if _, err := s.flush(finish); err != nil {
		return err
	}
	if err := s.store.Sync(); err != nil {
		s.lose(err)
		return err
	}
	s.succeeded()
	return nil
}

// BGSave starts Save in the background (BGSAVE).
func (s *Saver) BGSave() error {
	if !s.bgRunning.CompareAndSwap(false, true) {
		return errors.New("Background save already in progress")
	}
	go func() {
		defer s.bgRunning.Store(false)
		if err := s.Save(); err != nil {
			s.logf("error: BGSAVE: %v", err)
		}
	}()
	return nil
}

// Checkpoint flushes every change, then writes a Pebble checkpoint of the
// store to dir (which must not exist yet).
func (s *Saver) Checkpoint(dir string) error {
	if err := s.Save(); err != nil {
		return err
	}
	return s.store.Checkpoint(dir)
}

// LastSave returns the Unix time (s) of the last successful flush.
func (s *Saver) LastSave() int64 { return s.lastSave.Load() }

// Stats are the flusher's statistics: INFO persistence (Fields) and the
// persistence metrics render from them.
type Stats struct {
	// What a crash now could lose, as Redis's rdb_changes_since_last_save:
	// down to 0 once a flush is durable (not when it begins).
	ChangesSinceSave int64
	SaveInProgress   bool  // a BGSAVE runs
	LastSave         int64 // Unix time (s) of the last successful flush
	Failing          bool  // the last flush failed
	KeysRestored     int
	RestoreDuration  time.Duration
	RecordsSkipped   int // restored records that could not be decoded
	ExpiredAtStart   int // restored records already expired, dropped
	LastFlush        time.Duration
	SaveInterval     time.Duration
	LossWindow       time.Duration // the longest of the last minute
	LastLossWindow   time.Duration // the last flush's
	Rewrites         int64
	Error            string // the last failure, on one line; "" once a flush works
	ErrorSince       int64  // when flushes began failing, Unix s
	KeysPending      int    // changed keys waiting for a flush
	Failures         int64  // flushes that failed
}

// Stats returns the flusher's statistics now.
func (s *Saver) Stats() Stats {
	failure := "" // INFO values are one line
	if f := s.failure.Load(); f != nil {
		failure = strings.ReplaceAll((*f).Error(), "\n", " ")
	}
	longest, last := s.window.get()
	return Stats{
		ChangesSinceSave: s.keys.Stats().Changes + s.inFlight.Load(),
		SaveInProgress:   s.bgRunning.Load(),
		LastSave:         s.lastSave.Load(),
		Failing:          s.lastStatus.Load(),
		KeysRestored:     s.restored,
		RestoreDuration:  s.restoreDur,
		RecordsSkipped:   s.skipped,
		ExpiredAtStart:   s.expired,
		LastFlush:        time.Duration(s.lastDurUs.Load()) * time.Microsecond,
		SaveInterval:     s.interval,
		LossWindow:       longest,
		LastLossWindow:   last,
		Rewrites:         s.rewrites.Load(),
		Error:            failure,
		ErrorSince:       s.failedAt.Load(),
		KeysPending:      s.keys.Pending(),
		Failures:         s.failures.Load(),
	}
}

// Fields returns INFO's persistence fields, Redis's names first.
func (st Stats) Fields() [][2]string {
	i64 := func(n int64) string { return strconv.FormatInt(n, 10) }
	status := "ok"
	if st.Failing {
		status = "err"
	}
	bg := "0"
	if st.SaveInProgress {
		bg = "1"
	}
	return [][2]string{
		{"rdb_changes_since_last_save", i64(st.ChangesSinceSave)},
		{"rdb_bgsave_in_progress", bg},
		{"rdb_last_save_time", i64(st.LastSave)},
		{"rdb_last_bgsave_status", status},
		{"aof_enabled", "0"},
		{"rl_keys_restored", strconv.Itoa(st.KeysRestored)},
		{"rl_restore_duration_ms", i64(st.RestoreDuration.Milliseconds())},
		{"rl_records_skipped", strconv.Itoa(st.RecordsSkipped)},
		{"rl_expired_dropped_at_start", strconv.Itoa(st.ExpiredAtStart)},
		{"rl_last_flush_duration_us", i64(st.LastFlush.Microseconds())},
		{"rl_save_interval_ms", i64(st.SaveInterval.Milliseconds())},
		{"rl_loss_window_ms", i64(st.LossWindow.Milliseconds())},
		{"rl_last_loss_window_ms", i64(st.LastLossWindow.Milliseconds())},
		{"rl_rewrites", i64(st.Rewrites)},
		{"rl_persistence_error", st.Error},
		{"rl_persistence_error_since", i64(st.ErrorSince)},
		{"rl_keys_pending", strconv.Itoa(st.KeysPending)},
		{"rl_persistence_failures", i64(st.Failures)},
	}
}

// Shutdown stops the flush loop, flushes everything if save is true, and
// closes the store.
func (s *Saver) Shutdown(save bool) error {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	<-s.done
	var err error
	if save {
		// A rewrite when there is a log to fold, so that the next start
		// reads each key once.
		_, since := s.store.Sizes()
		s.mu.Lock()
		rewriting := s.rwNext >= 0
		s.mu.Unlock()
		err = s.save(since > 0 || s.stale.Load() || rewriting)
	}
	if cerr := s.store.Close(); err == nil {
		err = cerr
	}
	return err
}
