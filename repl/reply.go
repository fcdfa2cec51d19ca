package repl

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// replyError is an error reply (-ERR ...) from the replica.
type replyError string

func (e replyError) Error() string { return string(e) }

// replyReader reads the RESP2 replies a replica sends its primary: simple
// strings, errors, integers, bulk strings and arrays of them.
type replyReader struct{ r *bufio.Reader }

func newReplyReader(r io.Reader) *replyReader { return &replyReader{bufio.NewReaderSize(r, 16<<10)} }

func (rr *replyReader) line() (string, error) {
	s, err := rr.r.ReadString('\n')
	if err != nil {
		return "", err
	}
	if len(s) < 3 || s[len(s)-2] != '\r' {
		return "", errors.New("replication: malformed reply line")
	}
	return s[:len(s)-2], nil
}

// read returns a reply: a string, a replyError, an int64, nil, or []any.
func (rr *replyReader) read() (any, error) {
	l, err := rr.line()
	if err != nil {
		return nil, err
	}
	switch l[0] {
	case '+':
		return l[1:], nil
	case '-':
		return replyError(l[1:]), nil
	case ':':
		return strconv.ParseInt(l[1:], 10, 64)
	case '$':
		n, err := strconv.Atoi(l[1:])
		if err != nil || n > 1<<20 {
			return nil, fmt.Errorf("replication: bad bulk length %q", l)
		}
		if n < 0 {
			return nil, nil
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(rr.r, b); err != nil {
			return nil, err
		}
		return string(b[:n]), nil
	case '*':
		n, err := strconv.Atoi(l[1:])
		if err != nil || n > 1<<16 {
			return nil, fmt.Errorf("replication: bad array length %q", l)
		}
		if n < 0 {
			return nil, nil
		}
		out := make([]any, n)
		for i := range out {
			if out[i], err = rr.read(); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("replication: unexpected reply %q", l)
}
