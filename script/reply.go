package script

import (
	"errors"
	"strconv"
)

// reply is one RESP reply read from a command's output, as redis.call
// returns it to Lua.
type reply struct {
	kind  byte // the RESP type byte: + - : $ * % ~ _ # , ( =
	str   string
	num   int64
	elems []reply // arrays, sets; maps as key, value, key, value
	null  bool
}

var errShort = errors.New("script: truncated reply")

// parseReply reads one reply from b and returns it and the bytes after it.
func parseReply(b []byte) (reply, []byte, error) {
	line, rest, err := readLine(b)
	if err != nil || len(line) == 0 {
		return reply{}, nil, errShort
	}
	r := reply{kind: line[0]}
	body := string(line[1:])
	switch r.kind {
	case '+', '-', '(', ',':
		r.str = body
	case ':':
		if r.num, err = strconv.ParseInt(body, 10, 64); err != nil {
			return reply{}, nil, err
		}
	case '#':
		r.num = 0
		if body == "t" {
			r.num = 1
		}
	case '_':
		r.null = true
	case '$', '=':
		n, err := strconv.Atoi(body)
		if err != nil {
			return reply{}, nil, err
		}
		if n < 0 {
			r.null = true
			return r, rest, nil
		}
		if len(rest) < n+2 {
			return reply{}, nil, errShort
		}
		r.str, rest = string(rest[:n]), rest[n+2:]
	case '*', '~', '%':
		n, err := strconv.Atoi(body)
		if err != nil {
			return reply{}, nil, err
		}
		if n < 0 {
			r.null = true
			return r, rest, nil
		}
		if r.kind == '%' {
			n *= 2
		}
		r.elems = make([]reply, n)
		for i := range r.elems {
			if r.elems[i], rest, err = parseReply(rest); err != nil {
				return reply{}, nil, err
			}
		}
	default:
		return reply{}, nil, errors.New("script: unknown reply type " + strconv.Quote(string(r.kind)))
	}
	return r, rest, nil
}

func readLine(b []byte) (line, rest []byte, err error) {
	for i := 0; i+1 < len(b); i++ {
		if b[i] == '\r' && b[i+1] == '\n' {
			return b[:i], b[i+2:], nil
		}
	}
	return nil, nil, errShort
}
