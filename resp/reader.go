package resp

import (
	"bytes"
	"errors"
	"io"
)

// MaxMultibulkLen is the largest argument count a multibulk request may
// announce (`*1048576`); a larger count is an "invalid multibulk length".
const MaxMultibulkLen = 1024 * 1024

// DefaultMaxBulkLen is the bulk length bound NewReader uses when given a
// non-positive maxBulkLen (proto-max-bulk-len).
const DefaultMaxBulkLen = 1024 * 1024

// MaxQueryBufferLen bounds the bytes a single request may occupy in the read
// buffer, like Redis's client-query-buffer-limit (1 GB). Past it Next returns
// ErrQueryBufferLimit.
const MaxQueryBufferLen = 1 << 30

// ErrQueryBufferLimit is returned by Next when one request needs more than
// MaxQueryBufferLen bytes of buffer. Redis closes such a client without a
// reply; the caller should do the same.
var ErrQueryBufferLimit = errors.New("resp: request exceeds the max query buffer length")

// ProtocolError reports a malformed request. The connection cannot be
// resynchronised after it: the caller replies "-ERR " + Error() and closes.
type ProtocolError struct {
	Msg string // Redis's text, e.g. "invalid bulk length"
}

// Error returns "Protocol error: " + Msg, as in Redis's error reply.
func (e *ProtocolError) Error() string { return errProtocolPrefix[len("ERR "):] + e.Msg }

const (
	// protoInlineMaxSize is Redis's PROTO_INLINE_MAX_SIZE: how many bytes
	// may be buffered for an inline request or a multibulk/bulk header line
	// before its terminator shows up.
	protoInlineMaxSize = 64 * 1024
	// readerInitBuf is the read buffer's initial size.
	readerInitBuf = 4096
	// readerKeepBuf and readerKeepArgs bound what an idle Reader keeps after
	// a large request; larger buffers are dropped once fully consumed.
	readerKeepBuf  = 64 * 1024
	readerKeepArgs = 1024
	// readerMaxEmptyReads is how many (0, nil) reads in a row Next tolerates.
	readerMaxEmptyReads = 100
)

// argSpan locates a parsed bulk argument relative to the request's start.
type argSpan struct{ start, end int }

// Reader reads client requests (RESP multibulk or inline) from a connection.
// It follows Redis 7's processMultibulkBuffer and processInlineBuffer: same
// accepted inputs, same error texts, same bounds (except MaxMultibulkLen,
// which Redis 7 raised to INT_MAX). It never allocates from an announced
// length: the buffer only grows when it is full of received bytes, at most
// doubling, and the argument slice grows as arguments arrive. In steady
// state (pipelined small requests) Next does not allocate.
//
// Deliberate differences from Redis: NUL bytes are ordinary bytes (Redis's
// strchr-based line search stops at them and waits for 64 KB), and the 64 KB
// line bounds are applied independently of how the input was split into
// reads (Redis checks them per read call).
type Reader struct {
	rd         io.Reader
	maxBulkLen int
	maxQuery   int
	// guard applies Redis's limits for unauthenticated clients: at most
	// 10 arguments of at most 16 KB each, and no parsing ahead (a
	// pipelined AUTH must run before the requests after it are parsed).
	guard bool

	buf  []byte
	r, w int // buf[r:w] is buffered and not yet consumed

	// State of a partially received request, offsets relative to r.
	multi   bool      // the multibulk header has been parsed
	pos     int       // next byte to parse
	remain  int       // arguments still to come
	bulkLen int       // length of the current bulk, -1 before its header
	scan    int       // bytes after pos already searched for a line terminator
	spans   []argSpan // arguments received so far
	args    [][]byte
	raw     []byte // the bytes of the multibulk request in args; nil: inline
	cur     []byte // the raw bytes of the request Next returned last

	perr  error // sticky protocol error
	ioErr error // read error that came with data, returned once
	ready bool  // Ready parsed a complete request: args holds it for Next

	// Batch mode (see EnableBatch): Next and Ready parse every complete
	// request buffered (up to aheadMax) into a queue at once, which Batch
	// shows once before its requests are used (the server prefetches
	// their keys). ahead holds the queued requests' arguments back to
	// back, aheadN each one's count; aheadAt and aheadArg locate the next
	// one to hand out; fresh says Batch has not shown the queue yet.
	batch    bool
	fresh    bool
	ahead    [][]byte
	aheadN   []int
	aheadRaw [][]byte // each queued request's raw bytes
	aheadAt  int
	aheadArg int
}

// aheadMax bounds the requests batch mode queues at once; the rest of a
// larger batch is queued when these are used up.
const aheadMax = 64

// NewReader returns a Reader reading requests from rd. maxBulkLen is
// proto-max-bulk-len, the largest accepted bulk argument; a non-positive
// value means DefaultMaxBulkLen.
func NewReader(rd io.Reader, maxBulkLen int) *Reader {
	if maxBulkLen <= 0 {
		maxBulkLen = DefaultMaxBulkLen
	}
	// Keep length arithmetic far from overflow; such bulks hit
	// MaxQueryBufferLen anyway.
	maxBulkLen = min(maxBulkLen, 1<<50)
	return &Reader{rd: rd, maxBulkLen: maxBulkLen, maxQuery: MaxQueryBufferLen, bulkLen: -1}
}

// Unauthenticated bounds, as Redis's since CVE-2021-32675.
const (
	unauthMaxArgs    = 10
	unauthMaxBulkLen = 16 * 1024
	// unauthMaxQuery bounds an unauthenticated connection's buffer: room
	// for the largest request the bounds above allow (and the largest
	// inline one), not for 64 KB header lines before each argument.
	unauthMaxQuery = unauthMaxArgs*(unauthMaxBulkLen+32) + 32
)

// SetGuard turns the unauthenticated request limits on or off; the server
// sets it after each request from the session's authentication state.
func (r *Reader) SetGuard(on bool) { r.guard = on }

// SetLimits sets proto-max-bulk-len and client-query-buffer-limit for the
// requests not yet started.
func (r *Reader) SetLimits(maxBulkLen, maxQuery int) {
	if maxBulkLen > 0 {
		r.maxBulkLen = min(maxBulkLen, 1<<50)
	}
	if maxQuery > 0 {
		r.maxQuery = maxQuery
	}
}

// EnableBatch puts the reader in batch mode: Next and Ready queue every
// complete request buffered (up to 64) at once, and Batch shows each new
// queue.
func (r *Reader) EnableBatch() { r.batch = true }

// Batch returns, once, the requests batch mode queued last: their
// arguments back to back, and each one's count; nil when no queue was made
// since the previous call. Called right after the Next that returned the
// queue's first request, it shows that request and the ones the following
// Next calls will return, in order. The slices are valid as long as the
// arguments Next returns.
func (r *Reader) Batch() (args [][]byte, counts []int) {
	if !r.fresh {
		return nil, nil
	}
	r.fresh = false
	return r.ahead, r.aheadN
}

// Raw returns the bytes of the request Next returned last, from its '*'
// through the two bytes after its last argument, when it was a multibulk
// request (nil for an inline one): its arguments alias it. It stays valid
// as long as they do.
func (r *Reader) Raw() []byte { return r.cur }

// Next returns the next command's arguments. The slices alias the reader's
// buffer and stay valid only until the next call. Empty requests (`*0`,
// `*-10`, blank inline lines) are skipped, as Redis does. On malformed input
// it returns a *ProtocolError (the caller replies "-ERR Protocol error: <Msg>"
// and closes), and keeps returning it; I/O errors (io.EOF etc.) are returned
// as is, and a later call reads again.
func (r *Reader) Next() (args [][]byte, err error) {
	if r.ready {
		r.ready = false
		r.cur = r.raw
		return r.args, nil
	}
	if args, ok := r.pop(); ok {
		return args, nil
	}
	if r.perr != nil {
		return nil, r.perr
	}
	if r.r == r.w && !r.multi {
		r.r, r.w = 0, 0
		if len(r.buf) > readerKeepBuf {
			r.buf = nil
			// The argument slices kept for reuse still point into it,
			// past their lengths: let it go.
			clear(r.args[:cap(r.args)])
			clear(r.ahead[:cap(r.ahead)])
			clear(r.aheadRaw[:cap(r.aheadRaw)])
			r.raw, r.cur = nil, nil
		}
		if cap(r.args) > readerKeepArgs {
			r.args, r.spans = nil, nil
		}
		if cap(r.ahead) > readerKeepArgs {
			r.ahead = nil
		}
		if cap(r.aheadRaw) > readerKeepArgs {
			r.aheadRaw = nil
		}
	}
	for {
		if r.batch {
			r.parseAhead()
			if args, ok := r.pop(); ok {
				return args, nil
			}
			if r.perr != nil {
				return nil, r.perr
			}
		} else {
			done, err := r.parse()
			if err != nil {
				r.perr = err
				return nil, err
			}
			if done {
				if len(r.args) > 0 {
					r.cur = r.raw
					return r.args, nil
				}
				continue // empty request
			}
		}
		if err := r.fill(); err != nil {
			return nil, err
		}
	}
}

// parseAhead queues the complete requests buffered, at most aheadMax, for
// Batch to show. The queue must be empty: the slices it held alias
// the buffer, which only fill moves, and fill only runs once they are used.
// A protocol error ends the queue, and Next returns it after the requests
// before it, as it would without batch mode.
func (r *Reader) parseAhead() {
	r.ahead, r.aheadN, r.aheadRaw, r.aheadAt, r.aheadArg = r.ahead[:0], r.aheadN[:0], r.aheadRaw[:0], 0, 0
	limit := aheadMax
	if r.guard {
		limit = 1
	}
	for len(r.aheadN) < limit && r.perr == nil {
		done, err := r.parse()
		if err != nil {
			r.perr = err
		}
		if !done {
			break
		}
		if len(r.args) > 0 { // else an empty request, skipped
			r.ahead = append(r.ahead, r.args...)
			r.aheadN = append(r.aheadN, len(r.args))
			r.aheadRaw = append(r.aheadRaw, r.raw)
		}
	}
	r.fresh = len(r.aheadN) > 0
}

// pop hands out the next queued request, if any.
func (r *Reader) pop() ([][]byte, bool) {
	if r.aheadAt == len(r.aheadN) {
		return nil, false
	}
	n := r.aheadN[r.aheadAt]
	args := r.ahead[r.aheadArg : r.aheadArg+n : r.aheadArg+n]
	r.cur = r.aheadRaw[r.aheadAt]
	r.aheadAt++
	r.aheadArg += n
	return args, true
}

// Ready reports, without reading, whether Next will return at once: a
// complete request (or a protocol error) is buffered. The server keeps
// executing a pipelined batch while it is true, and sends the batch's
// replies (and releases what the batch holds) before Next may block on a
// partial request, as Redis does. Like Next, it invalidates the arguments
// the previous Next returned.
func (r *Reader) Ready() bool {
	if r.ready || r.perr != nil || r.aheadAt < len(r.aheadN) {
		return true
	}
	if r.batch {
		r.parseAhead()
		return r.aheadAt < len(r.aheadN) || r.perr != nil
	}
	for {
		done, err := r.parse()
		if err != nil {
			r.perr = err
			return true
		}
		if !done {
			return false
		}
		if len(r.args) > 0 {
			r.ready = true
			return true
		}
	}
}

// parse parses what is buffered of the request at r.r. It reports done with
// r.args set (empty for an empty request) and r.r moved past the request, or
// not done when more input is needed.
func (r *Reader) parse() (done bool, err error) {
	if r.r == r.w {
		return false, nil
	}
	if !r.multi {
		if r.buf[r.r] != '*' {
			return r.parseInline()
		}
		n, i, ok := shortHeader(r.buf[r.r:r.w])
		if !ok {
			var err error
			i, err = r.findLine('\r', protoBigMultibulk)
			if err != nil || i < 0 || r.r+i+1 >= r.w {
				return false, err // Redis also wants one byte after '\r'
			}
			n, ok = ParseInt(r.buf[r.r+1 : r.r+i])
		}
		if !ok || n > MaxMultibulkLen {
			return false, &ProtocolError{protoMultibulkLen}
		}
		if r.guard && n > unauthMaxArgs {
			return false, &ProtocolError{protoUnauthMultibulkLen}
		}
		r.scan = 0
		r.args = r.args[:0]
		if n <= 0 {
			r.r += i + 2
			return true, nil
		}
		r.multi = true
		r.pos = i + 2
		r.remain = int(n)
		r.bulkLen = -1
		r.spans = r.spans[:0]
	}
	for r.remain > 0 {
		start := r.r + r.pos
		if r.bulkLen < 0 {
			if n, i, ok := shortHeader(r.buf[start:r.w]); ok && r.buf[start] == '$' && n <= int64(r.maxBulkLen) {
				r.scan = 0
				r.pos += i + 2
				start += i + 2
				r.bulkLen = int(n)
				goto data
			}
			i, err := r.findLine('\r', protoBigBulkCount)
			if err != nil || i < 0 || start+i+1 >= r.w {
				return false, err
			}
			if c := r.buf[start]; c != '$' {
				if c == '\r' || c == '\n' {
					c = ' ' // as addReplyErrorFormat does
				}
				return false, &ProtocolError{protoExpected(c)}
			}
			n, ok := ParseInt(r.buf[start+1 : start+i])
			if !ok || n < 0 || n > int64(r.maxBulkLen) {
				return false, &ProtocolError{protoBulkLen}
			}
			if r.guard && n > unauthMaxBulkLen {
				return false, &ProtocolError{protoUnauthBulkLen}
			}
			r.scan = 0
			r.pos += i + 2
			start += i + 2
			r.bulkLen = int(n)
		}
	data:
		// Like Redis, the two bytes after the bulk data are skipped
		// without checking that they are "\r\n".
		if r.w-start < r.bulkLen+2 {
			return false, nil
		}
		r.spans = append(r.spans, argSpan{r.pos, r.pos + r.bulkLen})
		r.pos += r.bulkLen + 2
		r.bulkLen = -1
		r.remain--
	}
	base := r.buf[r.r:]
	for _, s := range r.spans {
		r.args = append(r.args, base[s.start:s.end:s.end])
	}
	r.raw = base[:r.pos:r.pos]
	r.r += r.pos
	r.pos = 0
	r.multi = false
	return true, nil
}

// shortHeader parses the common header line: a type byte, then one or two
// digits without a leading zero, then "\r" and one more byte (Redis wants
// one byte after the '\r' before it takes a line). It returns the number
// and the index of the '\r', as findLine would, or false for anything else,
// which the general path then handles (and gets the same answer for). It
// saves the line search on nearly every header of a pipeline.
func shortHeader(b []byte) (n int64, cr int, ok bool) {
	if len(b) < 4 {
		return 0, 0, false
	}
	d0, d1 := b[1]-'0', b[2]-'0'
	switch {
	case d0 <= 9 && b[2] == '\r':
		return int64(d0), 2, true
	case d0 >= 1 && d0 <= 9 && d1 <= 9 && len(b) >= 5 && b[3] == '\r':
		return int64(d0)*10 + int64(d1), 3, true
	}
	return 0, 0, false
}

// parseInline parses an inline request: one line split like sdssplitargs.
func (r *Reader) parseInline() (done bool, err error) {
	i, err := r.findLine('\n', protoBigInline)
	if err != nil || i < 0 {
		return false, err
	}
	r.scan = 0
	line := r.buf[r.r : r.r+i]
	if i > 0 && line[i-1] == '\r' {
		line = line[:i-1]
	}
	r.r += i + 1
	args, ok := sdsSplitArgs(line, r.args[:0])
	r.args, r.raw = args, nil
	if !ok {
		return false, &ProtocolError{protoQuotes}
	}
	return true, nil
}

// findLine searches the line starting at r.r+r.pos for c and returns its
// index relative to the line start, or -1 if more input is needed. Like
// Redis, it fails with a ProtocolError of text tooBig once more than
// protoInlineMaxSize bytes are buffered without c.
func (r *Reader) findLine(c byte, tooBig string) (int, error) {
	start := r.r + r.pos
	end := r.w
	if end-start > protoInlineMaxSize+1 {
		end = start + protoInlineMaxSize + 1
	}
	if i := bytes.IndexByte(r.buf[start+r.scan:end], c); i >= 0 {
		r.scan += i // a '\r' may still lack its following byte
		return r.scan, nil
	}
	if end-start > protoInlineMaxSize {
		return -1, &ProtocolError{tooBig}
	}
	r.scan = end - start
	return -1, nil
}

// fill reads more input after the buffered bytes, compacting and growing
// the buffer as needed.
func (r *Reader) fill() error {
	if err := r.ioErr; err != nil {
		r.ioErr = nil
		return err
	}
	if r.r > 0 {
		r.w = copy(r.buf, r.buf[r.r:r.w])
		r.r = 0
	}
	if r.w == len(r.buf) {
		if err := r.grow(); err != nil {
			return err
		}
	}
	for range readerMaxEmptyReads {
		n, err := r.rd.Read(r.buf[r.w:])
		if n < 0 || n > len(r.buf)-r.w {
			return errors.New("resp: reader returned invalid count from Read")
		}
		r.w += n
		if err != nil {
			if n > 0 {
				r.ioErr = err
				return nil
			}
			return err
		}
		if n > 0 {
			return nil
		}
	}
	return io.ErrNoProgress
}

// grow enlarges the full buffer: it doubles, but never past what the
// current bulk argument still needs nor past maxQuery.
func (r *Reader) grow() error {
	if len(r.buf) == 0 {
		r.buf = make([]byte, min(readerInitBuf, r.maxQuery))
		return nil
	}
	limit := r.maxQuery
	if r.guard {
		limit = min(limit, unauthMaxQuery)
	}
	if len(r.buf) >= limit {
		return ErrQueryBufferLimit
	}
	n := 2 * len(r.buf)
	if r.multi && r.bulkLen >= 0 {
		if need := r.pos + r.bulkLen + 2; need > len(r.buf) && need < n {
			n = need
		}
	}
	if n > limit {
		n = limit
	}
	buf := make([]byte, n)
	copy(buf, r.buf[:r.w])
	r.buf = buf
	return nil
}

// isCSpace is C's isspace in the "C" locale.
func isCSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

func isHexDigit(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func hexDigitVal(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}

// sdsSplitArgs splits an inline request line like Redis's sdssplitargs and
// appends the arguments to args. Quoted arguments are unescaped in place:
// the arguments alias line, whose bytes are overwritten. It reports false
// on unbalanced quotes.
func sdsSplitArgs(line []byte, args [][]byte) ([][]byte, bool) {
	n, p := len(line), 0
	for {
		for p < n && isCSpace(line[p]) {
			p++
		}
		if p == n {
			return args, true
		}
		start, w := p, p // the argument is written to line[start:w], w <= p
		inq, insq := false, false
		for done := false; !done; {
			switch {
			case inq:
				switch {
				case p == n:
					return args, false // unterminated quotes
				case line[p] == '\\' && p+3 < n && line[p+1] == 'x' && isHexDigit(line[p+2]) && isHexDigit(line[p+3]):
					line[w] = hexDigitVal(line[p+2])<<4 | hexDigitVal(line[p+3])
					w++
					p += 3
				case line[p] == '\\' && p+1 < n:
					p++
					c := line[p]
					switch c {
					case 'n':
						c = '\n'
					case 'r':
						c = '\r'
					case 't':
						c = '\t'
					case 'b':
						c = '\b'
					case 'a':
						c = '\a'
					}
					line[w] = c
					w++
				case line[p] == '"':
					// The closing quote must be followed by a space or
					// nothing at all.
					if p+1 < n && !isCSpace(line[p+1]) {
						return args, false
					}
					done = true
				default:
					line[w] = line[p]
					w++
				}
			case insq:
				switch {
				case p == n:
					return args, false
				case line[p] == '\\' && p+1 < n && line[p+1] == '\'':
					p++
					line[w] = '\''
					w++
				case line[p] == '\'':
					if p+1 < n && !isCSpace(line[p+1]) {
						return args, false
					}
					done = true
				default:
					line[w] = line[p]
					w++
				}
			default:
				if p == n {
					done = true
					break
				}
				switch c := line[p]; c {
				case ' ', '\n', '\r', '\t':
					done = true
				case '"':
					inq = true
				case '\'':
					insq = true
				default:
					line[w] = c
					w++
				}
			}
			if p < n {
				p++
			}
		}
		args = append(args, line[start:w:w])
	}
}
