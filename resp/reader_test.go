package resp

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
	"unsafe"
)

// readMode is how a test drives a Reader.
type readMode int

const (
	readPlain    readMode = iota // Next only
	readBuffered                 // Ready after each command, as the server calls it
	readBatch                    // batch mode (EnableBatch, Batch) and Ready, as the server runs
)

var readModes = []readMode{readPlain, readBuffered, readBatch}

func (m readMode) String() string { return [...]string{"plain", "buffered", "batch"}[m] }

func strs(args [][]byte) []string {
	s := make([]string, len(args))
	for i, a := range args {
		s[i] = string(a)
	}
	return s
}

// readAllBuffered reads commands from rd until Next fails and returns them
// with the error, driving the reader as mode says. In batch mode it also
// checks, as the server uses it, that Batch shows exactly the requests Next
// then returns, in order, and a new queue only once the previous one is
// used up.
func readAllBuffered(rd io.Reader, maxBulkLen int, mode readMode) ([][]string, error) {
	r := NewReader(rd, maxBulkLen)
	if mode == readBatch {
		r.EnableBatch()
	}
	var shown [][]string // shown by Batch, not yet returned by Next
	showBatch := func() error {
		args, counts := r.Batch()
		if counts == nil {
			return nil
		}
		if len(shown) > 0 {
			return fmt.Errorf("Batch showed a new queue with %q still to return", shown)
		}
		for _, n := range counts {
			shown = append(shown, strs(args[:n]))
			args = args[n:]
		}
		return nil
	}
	var cmds [][]string
	for {
		args, err := r.Next()
		if err := showBatch(); err != nil {
			return cmds, err
		}
		if err != nil {
			if len(shown) > 0 {
				return cmds, fmt.Errorf("Batch showed %q, Next never returned them", shown)
			}
			return cmds, err
		}
		if len(args) == 0 {
			return cmds, errors.New("Next returned no arguments and no error")
		}
		cmd := strs(args)
		if mode == readBatch {
			if len(shown) == 0 || !reflect.DeepEqual(shown[0], cmd) {
				return cmds, fmt.Errorf("Next returned %q, Batch showed %q", cmd, shown)
			}
			shown = shown[1:]
		} else if a, n := r.Batch(); a != nil || n != nil {
			return cmds, fmt.Errorf("Batch showed %q outside batch mode", a)
		}
		cmds = append(cmds, cmd)
		if mode != readPlain {
			r.Ready() // after using args: Ready parses ahead, as Next does
		}
	}
}

// chunkReader returns data in reads of varying sizes taken from sizes.
type chunkReader struct {
	data  []byte
	sizes []int
	i     int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := c.sizes[c.i%len(c.sizes)]
	c.i++
	n = min(n, len(p), len(c.data))
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

// scriptReader returns its chunks one Read each, then err (io.EOF if nil).
type scriptReader struct {
	chunks [][]byte
	err    error
}

func (s *scriptReader) Read(p []byte) (int, error) {
	if len(s.chunks) == 0 {
		if s.err != nil {
			return 0, s.err
		}
		return 0, io.EOF
	}
	n := copy(p, s.chunks[0])
	if s.chunks[0] = s.chunks[0][n:]; len(s.chunks[0]) == 0 {
		s.chunks = s.chunks[1:]
	}
	return n, nil
}

// splitters feed the same input whole, one byte at a time, in halves and in
// odd-sized chunks, to check that results do not depend on read boundaries.
var splitters = []struct {
	name string
	fn   func([]byte) io.Reader
}{
	{"whole", func(b []byte) io.Reader { return bytes.NewReader(b) }},
	{"bytewise", func(b []byte) io.Reader { return iotest.OneByteReader(bytes.NewReader(b)) }},
	{"half", func(b []byte) io.Reader { return iotest.HalfReader(bytes.NewReader(b)) }},
	{"dataerr", func(b []byte) io.Reader { return iotest.DataErrReader(bytes.NewReader(b)) }},
	{"chunks", func(b []byte) io.Reader { return &chunkReader{data: b, sizes: []int{3, 1, 7, 2, 13, 5}} }},
}

func cmd(args ...string) []string { return args }

var validCases = []struct {
	name string
	in   string
	want [][]string
}{
	{"multibulk", "*1\r\n$4\r\nPING\r\n", [][]string{cmd("PING")}},
	{"multibulk args", "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nvalue\r\n", [][]string{cmd("SET", "k", "value")}},
	{"binary safe", "*2\r\n$3\r\nGET\r\n$8\r\na\r\nb\x00c\r\n\r\n", [][]string{cmd("GET", "a\r\nb\x00c\r\n")}},
	{"bulk of CRLFs", "*1\r\n$4\r\n\r\n\r\n\r\n", [][]string{cmd("\r\n\r\n")}},
	{"empty bulk", "*2\r\n$4\r\nECHO\r\n$0\r\n\r\n", [][]string{cmd("ECHO", "")}},
	{"throttle", "*5\r\n$11\r\nCL.THROTTLE\r\n$3\r\nkey\r\n$2\r\n15\r\n$2\r\n30\r\n$2\r\n60\r\n",
		[][]string{cmd("CL.THROTTLE", "key", "15", "30", "60")}},
	{"pipelined", "*1\r\n$4\r\nPING\r\n*2\r\n$3\r\nGET\r\n$1\r\na\r\n*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\n",
		[][]string{cmd("PING"), cmd("GET", "a"), cmd("ECHO", "hi")}},
	{"inline", "PING\r\n", [][]string{cmd("PING")}},
	{"inline LF", "PING\n", [][]string{cmd("PING")}},
	{"inline spaces", "  SET  k \t v  \r\n", [][]string{cmd("SET", "k", "v")}},
	{"inline pipelined", "PING\r\nGET a\nECHO b\r\n", [][]string{cmd("PING"), cmd("GET", "a"), cmd("ECHO", "b")}},
	{"inline double quotes", `SET "a key" "a value"` + "\r\n", [][]string{cmd("SET", "a key", "a value")}},
	{"inline single quotes", `SET 'a key' 'it\'s'` + "\r\n", [][]string{cmd("SET", "a key", "it's")}},
	{"inline escapes", `ECHO "\x41\x7a\n\r\t\b\a\\\"\q"` + "\n", [][]string{cmd("ECHO", "Az\n\r\t\b\a\\\"q")}},
	{"inline bad hex is literal", `ECHO "\xZZ" "\x4"` + "\n", [][]string{cmd("ECHO", "xZZ", "x4")}},
	{"inline single quotes literal", `ECHO 'a\nb"c'` + "\n", [][]string{cmd("ECHO", `a\nb"c`)}},
	{"inline empty quoted", `ECHO "" ''` + "\n", [][]string{cmd("ECHO", "", "")}},
	{"inline quote mid token", `ECHO foo"bar baz" x'y'` + "\n", [][]string{cmd("ECHO", "foobar baz", "xy")}},
	{"inline quote then tab", "ECHO \"a\"\t'b'\x0bc\r\n", [][]string{cmd("ECHO", "a", "b", "c")}},
	{"inline CR in line", "a\rb\r\n", [][]string{cmd("a", "b")}},
	{"inline CR CR LF", "PING\r\r\n", [][]string{cmd("PING")}},
	{"inline VT FF inside token", "\x0b\x0cPING a\x0bb\r\n", [][]string{cmd("PING", "a\x0bb")}},
	{"inline NUL is a byte", "\x00a b\x00\r\n", [][]string{cmd("\x00a", "b\x00")}},
	{"inline binary", "ECHO \xff\xfe\n", [][]string{cmd("ECHO", "\xff\xfe")}},
	{"mixed", "PING\r\n*2\r\n$4\r\nECHO\r\n$1\r\nx\r\nECHO y\n", [][]string{cmd("PING"), cmd("ECHO", "x"), cmd("ECHO", "y")}},
	{"empty requests skipped", "*0\r\n*-1\r\n\r\n\n   \r\n\t\n*-10\r\nPING\r\n*0\r\n\r\n", [][]string{cmd("PING")}},
	{"only empty requests", "\r\n*0\r\n", nil},
	{"nothing", "", nil},
	{"min int64 count is empty", "*-9223372036854775808\r\nPING\n", [][]string{cmd("PING")}},
	// Redis skips the byte after a header's '\r' and the two bytes after
	// bulk data without checking them.
	{"lenient terminators", "*2\rX$4\r-PINGxy$1\rZa!!", [][]string{cmd("PING", "a")}},
	{"partial request at EOF", "*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nPI", [][]string{cmd("PING")}},
	{"inline without newline at EOF", "PING\r\nPING", [][]string{cmd("PING")}},
}

func TestReaderValid(t *testing.T) {
	for _, tc := range validCases {
		for _, sp := range splitters {
			for _, mode := range readModes {
				got, err := readAllBuffered(sp.fn([]byte(tc.in)), 0, mode)
				if err != io.EOF {
					t.Errorf("%s/%s/%v: err = %v, want io.EOF", tc.name, sp.name, mode, err)
				}
				if !reflect.DeepEqual(got, tc.want) {
					t.Errorf("%s/%s/%v: got %q, want %q", tc.name, sp.name, mode, got, tc.want)
				}
			}
		}
	}
}

func TestReaderArgsCapped(t *testing.T) {
	// Appending to an argument must not overwrite the next one.
	r := NewReader(strings.NewReader("*2\r\n$1\r\na\r\n$1\r\nb\r\nECHO \"x\" y\n"), 0)
	for range 2 {
		args, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		for i, a := range args {
			if len(a) != cap(a) {
				t.Errorf("arg %d %q: cap %d", i, a, cap(a))
			}
		}
	}
}

// TestReaderRaw: Raw is a multibulk request's bytes as read, which its
// arguments alias, in batch mode and not, whole or split over reads; an
// inline request has none.
func TestReaderRaw(t *testing.T) {
	reqs := []string{
		"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n",
		"PING x\r\n",
		"*1\r\n$4\r\nPING\r\n",
		"*2\r\n$4\r\nECHO\r\n$12\r\nhello\r\nthere\r\n",
	}
	in := strings.Join(reqs, "")
	for _, batch := range []bool{false, true} {
		for _, split := range []int{len(in), 7, 1} {
			s := &scriptReader{}
			for i := 0; i < len(in); i += split {
				s.chunks = append(s.chunks, []byte(in[i:min(i+split, len(in))]))
			}
			r := NewReader(s, 0)
			if batch {
				r.EnableBatch()
			}
			for i, req := range reqs {
				args, err := r.Next()
				if err != nil {
					t.Fatalf("batch %v split %d: Next %d: %v", batch, split, i, err)
				}
				raw := r.Raw()
				if req[0] != '*' {
					if raw != nil {
						t.Errorf("batch %v split %d: inline request %q has raw %q", batch, split, req, raw)
					}
					continue
				}
				if string(raw) != req {
					t.Errorf("batch %v split %d: Raw = %q, want %q", batch, split, raw, req)
				}
				for j, a := range args {
					if !aliases(raw, a) {
						t.Errorf("batch %v split %d: request %d arg %d %q is not in its raw bytes", batch, split, i, j, a)
					}
				}
			}
		}
	}
}

// aliases reports whether a lies within b's bytes.
func aliases(b, a []byte) bool {
	for i := 0; i+len(a) <= len(b); i++ {
		if &b[i] == unsafe.SliceData(a) {
			return string(b[i:i+len(a)]) == string(a)
		}
	}
	return false
}

func TestReaderReadyAfterNext(t *testing.T) {
	ping := "*1\r\n$4\r\nPING\r\n"
	tests := []struct {
		name   string
		chunks []string
		want   []bool // Ready after each Next
		batch  bool   // batch mode
	}{
		{"batch", []string{ping + ping + ping}, []bool{true, true, false}, false},
		{"two batches", []string{ping + ping, ping}, []bool{true, false, false}, false},
		{"partial next", []string{ping + "*1\r\n$4\r\nPI", "NG\r\n"}, []bool{false, false}, false},
		{"inline batch", []string{"PING\r\nPING\n"}, []bool{true, false}, false},
		{"trailing blank line", []string{"PING\r\n\r\n"}, []bool{false}, false},
		{"trailing empty multibulk", []string{ping + "*0\r\n*-1\r\n \n"}, []bool{false}, false},
		{"blank then command", []string{ping + "\r\n" + ping}, []bool{true, false}, false},
		{"partial blank line", []string{ping + "  "}, []bool{false}, false},
	}
	for _, tc := range tests {
		tc.name, tc.batch = tc.name+" (batch mode)", true
		tests = append(tests, tc)
	}
	for _, tc := range tests {
		s := &scriptReader{}
		for _, c := range tc.chunks {
			s.chunks = append(s.chunks, []byte(c))
		}
		r := NewReader(s, 0)
		if tc.batch {
			r.EnableBatch()
		}
		if r.Ready() {
			t.Errorf("%s: Ready before any read", tc.name)
		}
		for i, want := range tc.want {
			args, err := r.Next()
			if err != nil || len(args) != 1 || string(args[0]) != "PING" {
				t.Fatalf("%s: Next %d = %q, %v", tc.name, i, args, err)
			}
			if got := r.Ready(); got != want {
				t.Errorf("%s: Ready after %d = %v, want %v", tc.name, i, got, want)
			}
		}
		if _, err := r.Next(); err != io.EOF {
			t.Errorf("%s: final err %v", tc.name, err)
		}
	}
}

func TestReaderIOErrors(t *testing.T) {
	errTimeout := errors.New("timeout")
	// A read error is returned, then reading resumes where it stopped.
	s := &scriptReader{chunks: [][]byte{[]byte("*1\r\n$4\r\nPI")}, err: errTimeout}
	r := NewReader(s, 0)
	if _, err := r.Next(); err != errTimeout {
		t.Fatalf("err = %v, want timeout", err)
	}
	s.chunks, s.err = [][]byte{[]byte("NG\r\n")}, nil
	if args, err := r.Next(); err != nil || len(args) != 1 || string(args[0]) != "PING" {
		t.Fatalf("after timeout: %q, %v", args, err)
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("err = %v, want EOF", err)
	}

	// A reader that never makes progress.
	r = NewReader(iotest.ErrReader(nil), 0)
	if _, err := r.Next(); err != io.ErrNoProgress {
		t.Fatalf("err = %v, want ErrNoProgress", err)
	}
}

func TestReaderProtocolErrorSticky(t *testing.T) {
	for _, batch := range []bool{false, true} {
		testReaderProtocolErrorSticky(t, batch)
	}
}

func testReaderProtocolErrorSticky(t *testing.T, batch bool) {
	r := NewReader(strings.NewReader("PING\r\n*x\r\nPING\r\n"), 0)
	if batch {
		r.EnableBatch()
	}
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	if !r.Ready() {
		t.Fatal("Ready = false with a protocol error next")
	}
	for range 2 {
		_, err := r.Next()
		var pe *ProtocolError
		if !errors.As(err, &pe) || pe.Msg != "invalid multibulk length" {
			t.Fatalf("err = %v", err)
		}
		if err.Error() != "Protocol error: invalid multibulk length" {
			t.Fatalf("Error() = %q", err.Error())
		}
	}
}

func TestReaderLargeBulk(t *testing.T) {
	for _, batch := range []bool{false, true} {
		testReaderLargeBulk(t, batch)
	}
}

func testReaderLargeBulk(t *testing.T, batch bool) {
	// A bulk of exactly maxBulkLen, fed in small reads: the buffer grows
	// to what the request needs, not to twice that.
	const n = 1 << 20
	in := "*2\r\n$3\r\nSET\r\n$1048576\r\n" + strings.Repeat("v", n) + "\r\nPING\r\n"
	r := NewReader(&chunkReader{data: []byte(in), sizes: []int{1000, 1, 4093}}, 0)
	if batch {
		r.EnableBatch()
	}
	args, err := r.Next()
	if err != nil || len(args) != 2 || len(args[1]) != n {
		t.Fatalf("got %d args, err %v", len(args), err)
	}
	if len(r.buf) > n+64 {
		t.Errorf("buffer grew to %d for a %d-byte request", len(r.buf), n+23)
	}
	big := r.buf
	if args, err = r.Next(); err != nil || string(args[0]) != "PING" {
		t.Fatalf("got %q, %v", args, err)
	}
	// Once consumed, the large buffer is dropped, and no argument slice
	// kept for reuse still holds on to it.
	if _, err := r.Next(); err != io.EOF {
		t.Fatal(err)
	}
	if len(r.buf) > readerKeepBuf {
		t.Errorf("idle buffer kept at %d bytes", len(r.buf))
	}
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(big)))
	for i, a := range append(r.args[:cap(r.args)], r.ahead[:cap(r.ahead)]...) {
		if p := uintptr(unsafe.Pointer(unsafe.SliceData(a))); a != nil && p >= lo && p < lo+uintptr(len(big)) {
			t.Errorf("batch %v: kept argument slice %d still points into the dropped buffer", batch, i)
		}
	}
}

func TestReaderNoAllocFromAnnouncedLengths(t *testing.T) {
	// A huge announced bulk with only a few bytes behind it.
	r := NewReader(strings.NewReader("*1\r\n$1048576\r\n0123456789"), 0)
	if _, err := r.Next(); err != io.EOF {
		t.Fatal(err)
	}
	if len(r.buf) > readerInitBuf {
		t.Errorf("buffer %d bytes for 24 bytes received", len(r.buf))
	}
	// A huge announced count with a single argument behind it.
	r = NewReader(strings.NewReader("*1048576\r\n$1\r\na\r\n"), 0)
	if _, err := r.Next(); err != io.EOF {
		t.Fatal(err)
	}
	if cap(r.spans) > 16 {
		t.Errorf("argument slice cap %d for 1 argument received", cap(r.spans))
	}
	if r.Ready() {
		t.Error("Ready = true inside a partial request")
	}
}

func TestReaderHugeMaxBulkLen(t *testing.T) {
	for _, in := range []string{"*1\r\n$9223372036854775807\r\nabc", "*1\r\n$1000000000000\r\nabc"} {
		r := NewReader(strings.NewReader(in), math.MaxInt)
		if _, err := r.Next(); err == nil {
			t.Errorf("%q: no error", in)
		}
		if len(r.buf) > readerInitBuf {
			t.Errorf("%q: buffer grew to %d", in, len(r.buf))
		}
	}
}

func TestReaderQueryBufferLimit(t *testing.T) {
	in := "*2\r\n$3\r\nSET\r\n$100000\r\n" + strings.Repeat("v", 100000) + "\r\n"
	r := NewReader(strings.NewReader(in), 0)
	r.maxQuery = 1 << 16
	if _, err := r.Next(); err != ErrQueryBufferLimit {
		t.Fatalf("err = %v, want ErrQueryBufferLimit", err)
	}
	r = NewReader(strings.NewReader(in), 0)
	r.maxQuery = 1 << 17
	if args, err := r.Next(); err != nil || len(args[1]) != 100000 {
		t.Fatalf("under the limit: %d args, %v", len(args), err)
	}
}

// repeatReader returns data on every Read, like a client that keeps sending
// the same pipelined batch.
type repeatReader struct{ data []byte }

func (r *repeatReader) Read(p []byte) (int, error) { return copy(p, r.data), nil }

func throttleBatch(n int) []byte {
	return bytes.Repeat([]byte("*5\r\n$11\r\nCL.THROTTLE\r\n$3\r\nkey\r\n$2\r\n15\r\n$2\r\n30\r\n$2\r\n60\r\n"), n)
}

func TestReaderZeroAllocs(t *testing.T) {
	for i, batch := range [][]byte{throttleBatch(16), bytes.Repeat([]byte("CL.THROTTLE key 15 30 60\r\n"), 16), throttleBatch(16)} {
		r := NewReader(&repeatReader{batch}, 0)
		if i == 2 { // batch mode, as the server reads
			r.EnableBatch()
		}
		allocs := testing.AllocsPerRun(100, func() {
			for range 16 {
				args, err := r.Next()
				if err != nil || len(args) != 5 {
					t.Fatalf("got %q, %v", args, err)
				}
				r.Ready()
			}
			if r.Ready() {
				t.Fatal("batch not consumed")
			}
		})
		if allocs != 0 {
			t.Errorf("%d allocs per batch of 16, want 0", int(allocs))
		}
	}
}

// BenchmarkReaderPipeline reads batches of 16 pipelined
// CL.THROTTLE key 15 30 60 requests, one Read per batch; one op is a batch.
func BenchmarkReaderPipeline(b *testing.B) {
	batch := throttleBatch(16)
	r := NewReader(&repeatReader{batch}, 0)
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	for b.Loop() {
		for {
			args, err := r.Next()
			if err != nil || len(args) != 5 {
				b.Fatalf("got %q, %v", args, err)
			}
			if !r.Ready() {
				break
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*16), "ns/cmd")
}

// BenchmarkReaderInlinePipeline is BenchmarkReaderPipeline with inline
// requests.
func BenchmarkReaderInlinePipeline(b *testing.B) {
	batch := bytes.Repeat([]byte("CL.THROTTLE key 15 30 60\r\n"), 16)
	r := NewReader(&repeatReader{batch}, 0)
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	for b.Loop() {
		for {
			if _, err := r.Next(); err != nil {
				b.Fatal(err)
			}
			if !r.Ready() {
				break
			}
		}
	}
}

// TestReaderReady: Ready reports a complete buffered request without
// reading, keeps it for Next, and is false on a partial one.
func TestReaderReady(t *testing.T) {
	r := NewReader(strings.NewReader("PING\r\n*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\n*1\r\n$4\r\nPI"), 0)
	args, err := r.Next()
	if err != nil || len(args) != 1 || string(args[0]) != "PING" {
		t.Fatalf("Next = %q, %v", args, err)
	}
	if !r.Ready() || !r.Ready() {
		t.Fatal("Ready = false with ECHO hi buffered")
	}
	args, err = r.Next()
	if err != nil || len(args) != 2 || string(args[1]) != "hi" {
		t.Fatalf("Next after Ready = %q, %v", args, err)
	}
	if r.Ready() {
		t.Fatal("Ready = true with only a partial request buffered")
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("Next on the partial request at EOF = %v, want io.EOF", err)
	}
}
