package resp

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
)

// protocolCase is a raw client input and what the reader makes of it: the
// commands before the end or the error, and the ProtocolError text (empty:
// the input ends cleanly or mid-request, Next returns io.EOF).
type protocolCase struct {
	name    string
	in      string
	want    [][]string
	wantErr string
}

var (
	pingMB = "*1\r\n$4\r\nPING\r\n"
	// setX is "SET x" of protocol.tcl, before its broken third argument.
	setX = "*3\r\n$3\r\nSET\r\n$1\r\nx\r\n"
)

func largeMSET() (string, []string) {
	args := []string{"MSET"}
	for range 10000 {
		args = append(args, "k", "v")
	}
	args = append(args, "{k}2", "v2")
	var b strings.Builder
	b.WriteString("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b.WriteString("$" + strconv.Itoa(len(a)) + "\r\n" + a + "\r\n")
	}
	return b.String(), args
}

// tclCases ports every request-side test of Redis's tests/unit/protocol.tcl
// (Redis 7). The reply-side tests (raw protocol response, RESP3 attributes,
// big number / bool / verbatim parsing) and "test argument rewriting - issue
// 9598" (INCRBYFLOAT propagation) exercise no request parsing and are not
// ported here.
func tclCases() []protocolCase {
	mset, msetArgs := largeMSET()
	blpop := "*3\r\n$5\r\nBLPOP\r\n$6\r\nnolist\r\n$1\r\n0\r\n"
	// protocol.tcl's desync loop writes the literal word "payload" (not
	// $payload) until the server hangs up: no newline ever comes.
	payload := strings.Repeat("payload", 10000)
	return []protocolCase{
		{name: "Handle an empty query", in: "\r\n" + pingMB, want: [][]string{cmd("PING")}},
		{name: "Negative multibulk length", in: "*-10\r\n" + pingMB, want: [][]string{cmd("PING")}},
		{name: "Out of range multibulk length", in: "*3000000000\r\n", wantErr: "invalid multibulk length"},
		{name: "Out of range multibulk length (Redis 6)", in: "*20000000\r\n", wantErr: "invalid multibulk length"},
		{name: "Wrong multibulk payload header", in: setX + "fooz\r\n", wantErr: "expected '$', got 'f'"},
		{name: "Negative multibulk payload length", in: setX + "$-10\r\n", wantErr: "invalid bulk length"},
		{name: "Out of range multibulk payload length", in: setX + "$2000000000\r\n", wantErr: "invalid bulk length"},
		{name: "Out of range multibulk payload length (3e9)", in: setX + "$3000000000\r\n", wantErr: "invalid bulk length"},
		{name: "Non-number multibulk payload length", in: setX + "$blabla\r\n", wantErr: "invalid bulk length"},
		{name: "Multi bulk request not followed by bulk arguments", in: "*1\r\nfoo\r\n", wantErr: "expected '$', got 'f'"},
		// The arity error comes from the command table; the reader
		// delivers the arguments.
		{name: "Generic wrong number of args", in: "*4\r\n$4\r\nping\r\n$1\r\nx\r\n$1\r\ny\r\n$1\r\nz\r\n",
			want: [][]string{cmd("ping", "x", "y", "z")}},
		{name: "Unbalanced number of quotes", in: "set \"\"\"test-key\"\"\" test-value\r\nping\r\n",
			wantErr: "unbalanced quotes in request"},
		{name: "Protocol desync regression test #1", in: "\x00" + payload, wantErr: "too big inline request"},
		{name: "Protocol desync regression test #2", in: "*\x00" + payload, wantErr: "too big mbulk count string"},
		{name: "Protocol desync regression test #3", in: "$\x00" + payload, wantErr: "too big inline request"},
		{name: "test large number of args", in: mset, want: [][]string{msetArgs}},
		{name: "Regression for a crash with blocking ops and pipelining", in: blpop + blpop,
			want: [][]string{cmd("BLPOP", "nolist", "0"), cmd("BLPOP", "nolist", "0")}},
	}
}

// boundCases are the bounds and Redis details beyond protocol.tcl.
func boundCases() []protocolCase {
	mb := func(n int) string { return "*1\r\n$" + strconv.Itoa(n) + "\r\n" }
	return []protocolCase{
		{name: "count 2e10", in: "*20000000000\r\n", wantErr: "invalid multibulk length"},
		{name: "count over int64", in: "*99999999999999999999\r\n", wantErr: "invalid multibulk length"},
		{name: "count under int64", in: "*-9223372036854775809\r\n", wantErr: "invalid multibulk length"},
		{name: "count MaxMultibulkLen+1", in: "*1048577\r\n", wantErr: "invalid multibulk length"},
		{name: "count MaxMultibulkLen", in: "*1048576\r\n$1\r\na\r\n"},
		{name: "count empty", in: "*\r\n", wantErr: "invalid multibulk length"},
		{name: "count plus", in: "*+1\r\n", wantErr: "invalid multibulk length"},
		{name: "count leading zero", in: "*01\r\n", wantErr: "invalid multibulk length"},
		{name: "count minus zero", in: "*-0\r\n", wantErr: "invalid multibulk length"},
		{name: "count minus", in: "*-\r\n", wantErr: "invalid multibulk length"},
		{name: "count space", in: "* 1\r\n", wantErr: "invalid multibulk length"},
		{name: "count trailing space", in: "*1 \r\n", wantErr: "invalid multibulk length"},
		{name: "count LF only", in: "*1\n$4\r\nPING\r\n", wantErr: "invalid multibulk length"},
		{name: "count zero", in: "*0\r\n" + pingMB, want: [][]string{cmd("PING")}},
		{name: "bulk 3e9 default max", in: mb(3000000000), wantErr: "invalid bulk length"},
		{name: "bulk max+1", in: mb(1048577), wantErr: "invalid bulk length"},
		{name: "bulk max", in: mb(1048576) + strings.Repeat("b", 1048576) + "\r\n",
			want: [][]string{cmd(strings.Repeat("b", 1048576))}},
		{name: "bulk over int64", in: mb(0)[:5] + "99999999999999999999\r\n", wantErr: "invalid bulk length"},
		{name: "bulk empty", in: "*1\r\n$\r\n", wantErr: "invalid bulk length"},
		{name: "bulk plus", in: "*1\r\n$+1\r\na\r\n", wantErr: "invalid bulk length"},
		{name: "bulk leading zero", in: "*1\r\n$01\r\na\r\n", wantErr: "invalid bulk length"},
		{name: "bulk minus zero", in: "*1\r\n$-0\r\n\r\n", wantErr: "invalid bulk length"},
		{name: "bulk minus one", in: "*1\r\n$-1\r\n", wantErr: "invalid bulk length"},
		{name: "expected $ got *", in: "*1\r\n*1\r\n", wantErr: "expected '$', got '*'"},
		{name: "expected $ got CR", in: "*1\r\n\r\n", wantErr: "expected '$', got ' '"},
		{name: "expected $ got LF", in: "*1\r\n\n\r\n", wantErr: "expected '$', got ' '"},
		{name: "expected $ got 0xff", in: "*1\r\n\xff\r\n", wantErr: "expected '$', got '\xff'"},
		{name: "expected $ needs a whole line", in: "*1\r\nfoo"},
		{name: "expected $ needs a byte after CR", in: "*1\r\nfoo\r"},
		{name: "bad argument after good ones", in: pingMB + setX + "$x\r\n", want: [][]string{cmd("PING")}, wantErr: "invalid bulk length"},
		{name: "unbalanced double quote", in: "ECHO \"abc\r\n", wantErr: "unbalanced quotes in request"},
		{name: "unbalanced single quote", in: "ECHO 'abc\r\n", wantErr: "unbalanced quotes in request"},
		{name: "unbalanced escaped quote", in: "ECHO \"abc\\\"\n", wantErr: "unbalanced quotes in request"},
		{name: "unbalanced escaped single quote", in: "ECHO 'abc\\'\n", wantErr: "unbalanced quotes in request"},
		{name: "closing quote then text", in: "ECHO \"a\"b\n", wantErr: "unbalanced quotes in request"},
		{name: "closing single quote then text", in: "ECHO 'a'b\n", wantErr: "unbalanced quotes in request"},
		{name: "quote with trailing backslash", in: "ECHO \"a\\\n", wantErr: "unbalanced quotes in request"},
		{name: "inline error after commands", in: "PING\nPING\r\n\"\n", want: [][]string{cmd("PING"), cmd("PING")},
			wantErr: "unbalanced quotes in request"},
		// 64 KB header and inline bounds (PROTO_INLINE_MAX_SIZE).
		{name: "inline 64KB line", in: strings.Repeat("a", 65536) + "\n", want: [][]string{cmd(strings.Repeat("a", 65536))}},
		{name: "inline 64KB line CRLF", in: strings.Repeat("a", 65535) + "\r\n", want: [][]string{cmd(strings.Repeat("a", 65535))}},
		{name: "inline 64KB+1 line", in: strings.Repeat("a", 65537) + "\n", wantErr: "too big inline request"},
		{name: "inline 64KB partial", in: strings.Repeat("a", 65536)},
		{name: "inline 64KB blank line", in: strings.Repeat(" ", 65537), wantErr: "too big inline request"},
		{name: "mbulk count 64KB line", in: "*" + strings.Repeat("1", 65535) + "\r\n", wantErr: "invalid multibulk length"},
		{name: "mbulk count 64KB+1", in: "*" + strings.Repeat("1", 65536), wantErr: "too big mbulk count string"},
		{name: "bulk count 64KB line", in: "*1\r\n$" + strings.Repeat("1", 65535) + "\r\n", wantErr: "invalid bulk length"},
		{name: "bulk count 64KB+1", in: "*1\r\n$" + strings.Repeat("1", 65536), wantErr: "too big bulk count string"},
		{name: "bulk count 64KB+1 not $", in: "*1\r\n" + strings.Repeat("x", 65537), wantErr: "too big bulk count string"},
	}
}

func TestProtocol(t *testing.T) {
	for _, tc := range append(tclCases(), boundCases()...) {
		for _, sp := range splitters {
			if sp.name == "bytewise" && len(tc.in) > 200000 {
				continue
			}
			mode := readBuffered
			if sp.name == "whole" {
				mode = readPlain
			}
			for _, mode := range []readMode{mode, readBatch} {
				got, err := readAllBuffered(sp.fn([]byte(tc.in)), 0, mode)
				checkResult(t, tc.name+"/"+sp.name+"/"+mode.String(), got, err, tc.want, tc.wantErr)
			}
		}
		// The reference parser agrees.
		got, msg := refParse([]byte(tc.in), DefaultMaxBulkLen)
		if !reflect.DeepEqual(got, tc.want) || msg != tc.wantErr {
			t.Errorf("%s/refParse: got %.200q, %q", tc.name, got, msg)
		}
	}
}

func checkResult(t *testing.T, name string, got [][]string, err error, want [][]string, wantErr string) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s: got %.200q, want %.200q", name, got, want)
	}
	if wantErr == "" {
		if err != io.EOF {
			t.Errorf("%s: err = %v, want io.EOF", name, err)
		}
		return
	}
	var pe *ProtocolError
	if !errors.As(err, &pe) || pe.Msg != wantErr {
		t.Errorf("%s: err = %#v, want ProtocolError %q", name, err, wantErr)
	}
}

// TestProtocolImmediate checks that out-of-bound counts and lengths fail as
// soon as their header line is in, without waiting for (or reading) more.
func TestProtocolImmediate(t *testing.T) {
	errMore := errors.New("reader asked for more input")
	for _, tc := range []struct{ in, msg string }{
		{"*20000000000\r\n", "invalid multibulk length"},
		{"*1\r\n$3000000000\r\n", "invalid bulk length"},
		{"*1\r\n$1048577\r\n", "invalid bulk length"},
		{"*1048577\r\n", "invalid multibulk length"},
	} {
		r := NewReader(&scriptReader{chunks: [][]byte{[]byte(tc.in)}, err: errMore}, 0)
		_, err := r.Next()
		var pe *ProtocolError
		if !errors.As(err, &pe) || pe.Msg != tc.msg {
			t.Errorf("%q: err = %v, want %q", tc.in, err, tc.msg)
		}
		if len(r.buf) > readerInitBuf {
			t.Errorf("%q: buffer grew to %d", tc.in, len(r.buf))
		}
	}
	// Within bounds the reader waits for the data.
	r := NewReader(&scriptReader{chunks: [][]byte{[]byte("*1\r\n$1048576\r\n")}, err: errMore}, 0)
	if _, err := r.Next(); err != errMore {
		t.Errorf("$1048576: err = %v, want a read", err)
	}
	// A smaller proto-max-bulk-len.
	r = NewReader(strings.NewReader("*1\r\n$11\r\n"), 10)
	if _, err := r.Next(); err == nil || err.Error() != "Protocol error: invalid bulk length" {
		t.Errorf("maxBulkLen 10: err = %v", err)
	}
}

// refParse is a reference parser for the whole input at once, written the
// way Redis's processMultibulkBuffer / processInlineBuffer read, without
// incremental state. It returns the commands and the ProtocolError text, or
// "" when the input ends cleanly or mid-request. It also checks that each
// multibulk command has exactly its announced count of arguments.
func refParse(data []byte, maxBulk int) (cmds [][]string, msg string) {
	// find returns the index of c at or after from, -1 if absent, and
	// whether more than 64 KB are there without it.
	find := func(from int, c byte) (int, bool) {
		for i := from; i < len(data); i++ {
			if data[i] == c {
				return i, false
			}
			if i-from+1 > 64*1024 {
				return -1, true
			}
		}
		return -1, false
	}
	// atoi is string2ll: the canonical decimal form only.
	atoi := func(b []byte) (int64, bool) {
		n, err := strconv.ParseInt(string(b), 10, 64)
		return n, err == nil && strconv.FormatInt(n, 10) == string(b)
	}
	p := 0
	for p < len(data) {
		if data[p] != '*' {
			nl, big := find(p, '\n')
			if big {
				return cmds, "too big inline request"
			}
			if nl < 0 {
				return cmds, ""
			}
			line := data[p:nl]
			if len(line) > 0 && line[len(line)-1] == '\r' {
				line = line[:len(line)-1]
			}
			p = nl + 1
			args, ok := refSplitArgs(line)
			if !ok {
				return cmds, "unbalanced quotes in request"
			}
			if len(args) > 0 {
				cmds = append(cmds, args)
			}
			continue
		}
		nl, big := find(p, '\r')
		if big {
			return cmds, "too big mbulk count string"
		}
		if nl < 0 || nl+1 >= len(data) {
			return cmds, ""
		}
		n, ok := atoi(data[p+1 : nl])
		if !ok || n > MaxMultibulkLen {
			return cmds, "invalid multibulk length"
		}
		p = nl + 2
		if n <= 0 {
			continue
		}
		args := []string{}
		for range n {
			nl, big := find(p, '\r')
			if big {
				return cmds, "too big bulk count string"
			}
			if nl < 0 || nl+1 >= len(data) {
				return cmds, ""
			}
			if c := data[p]; c != '$' {
				if c == '\r' || c == '\n' {
					c = ' '
				}
				return cmds, "expected '$', got '" + string([]byte{c}) + "'"
			}
			l, ok := atoi(data[p+1 : nl])
			if !ok || l < 0 || l > int64(maxBulk) {
				return cmds, "invalid bulk length"
			}
			p = nl + 2
			if int64(len(data)-p) < l+2 {
				return cmds, ""
			}
			args = append(args, string(data[p:p+int(l)]))
			p += int(l) + 2
		}
		if int64(len(args)) != n {
			panic("refParse: argument count differs from the announced count")
		}
		cmds = append(cmds, args)
	}
	return cmds, ""
}

// refSplitArgs is sdssplitargs over a line that may hold NUL bytes.
func refSplitArgs(line []byte) ([]string, bool) {
	at := func(i int) int { // the byte at i, -1 past the end (C's NUL)
		if i < len(line) {
			return int(line[i])
		}
		return -1
	}
	space := func(c int) bool { return c >= 0 && isCSpace(byte(c)) }
	hex := func(c int) bool { return c >= 0 && isHexDigit(byte(c)) }
	var args []string
	p := 0
	for {
		for space(at(p)) {
			p++
		}
		if at(p) < 0 {
			return args, true
		}
		var cur []byte
		inq, insq := false, false
		for done := false; !done; {
			c := at(p)
			switch {
			case inq:
				if c == '\\' && at(p+1) == 'x' && hex(at(p+2)) && hex(at(p+3)) {
					v, _ := strconv.ParseUint(string(line[p+2:p+4]), 16, 8)
					cur = append(cur, byte(v))
					p += 3
				} else if c == '\\' && at(p+1) >= 0 {
					p++
					e := map[byte]byte{'n': '\n', 'r': '\r', 't': '\t', 'b': '\b', 'a': '\a'}[line[p]]
					if e == 0 {
						e = line[p]
					}
					cur = append(cur, e)
				} else if c == '"' {
					if at(p+1) >= 0 && !space(at(p+1)) {
						return nil, false
					}
					done = true
				} else if c < 0 {
					return nil, false
				} else {
					cur = append(cur, byte(c))
				}
			case insq:
				if c == '\\' && at(p+1) == '\'' {
					p++
					cur = append(cur, '\'')
				} else if c == '\'' {
					if at(p+1) >= 0 && !space(at(p+1)) {
						return nil, false
					}
					done = true
				} else if c < 0 {
					return nil, false
				} else {
					cur = append(cur, byte(c))
				}
			default:
				switch c {
				case ' ', '\n', '\r', '\t', -1:
					done = true
				case '"':
					inq = true
				case '\'':
					insq = true
				default:
					cur = append(cur, byte(c))
				}
			}
			if at(p) >= 0 {
				p++
			}
		}
		args = append(args, string(cur))
	}
}

// FuzzReader feeds arbitrary input whole and in several splittings, and
// checks that the reader never panics, agrees with refParse (which checks
// announced argument counts), and never returns more argument bytes or
// arguments than the input holds.
func FuzzReader(f *testing.F) {
	for _, tc := range append(tclCases(), boundCases()...) {
		if len(tc.in) < 4096 {
			f.Add([]byte(tc.in))
		}
	}
	for _, tc := range validCases {
		f.Add([]byte(tc.in))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		const maxBulk = 64 // small, so that the bound is reached
		want, wantErr := refParse(data, maxBulk)
		readers := []struct {
			name string
			rd   io.Reader
			mode readMode
		}{
			{"whole", bytes.NewReader(data), readPlain},
			{"bytewise", iotest.OneByteReader(bytes.NewReader(data)), readBuffered},
			{"chunks", &chunkReader{data: data, sizes: fuzzSizes(data)}, readBuffered},
			{"whole batch", bytes.NewReader(data), readBatch},
			{"chunks batch", &chunkReader{data: data, sizes: fuzzSizes(data)}, readBatch},
		}
		for _, rd := range readers {
			got, err := readAllBuffered(rd.rd, maxBulk, rd.mode)
			checkResult(t, rd.name, got, err, want, wantErr)
			nargs, size := 0, 0
			for _, c := range got {
				if len(c) > MaxMultibulkLen {
					t.Fatalf("%s: %d arguments", rd.name, len(c))
				}
				nargs += len(c)
				for _, a := range c {
					size += len(a)
				}
			}
			if size > len(data) || nargs > (len(data)+1)/2 {
				t.Fatalf("%s: %d arguments, %d bytes from %d input bytes", rd.name, nargs, size, len(data))
			}
		}
	})
}

// fuzzSizes derives read sizes from the input itself.
func fuzzSizes(data []byte) []int {
	sizes := []int{1}
	for i := 0; i < len(data) && i < 16; i++ {
		sizes = append(sizes, int(data[i]%17)+1)
	}
	return sizes
}
