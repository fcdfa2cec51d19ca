package script

import (
	"errors"
	"strconv"

	lua "github.com/yuin/gopher-lua"

	"github.com/rlserver/rlserver/resp"
)

var errShort = errors.New("script: truncated reply")

// toLua reads one RESP reply from b and returns it converted to Lua as
// Redis's tables say (status and error replies as {ok=} and {err=}
// tables, nulls as false, RESP3's types as Redis 7 converts them), with
// the bytes after it. It builds the Lua values straight from the bytes.
func toLua(L *lua.LState, b []byte) (lua.LValue, []byte, error) {
	line, rest, err := readLine(b)
	if err != nil || len(line) == 0 {
		return nil, nil, errShort
	}
	kind, body := line[0], line[1:]
	switch kind {
	case '+':
		return field(L, "ok", lua.LString(body)), rest, nil
	case '-':
		return field(L, "err", lua.LString(body)), rest, nil
	case '(':
		return field(L, "big_number", lua.LString(body)), rest, nil
	case ',':
		f, _ := strconv.ParseFloat(string(body), 64)
		return field(L, "double", lua.LNumber(f)), rest, nil
	case ':':
		n, ok := resp.ParseInt(body)
		if !ok {
			return nil, nil, errors.New("script: bad integer reply")
		}
		return lua.LNumber(n), rest, nil
	case '#':
		return lua.LBool(string(body) == "t"), rest, nil
	case '_':
		return lua.LNil, rest, nil
	case '$', '=':
		n, ok := resp.ParseInt(body)
		if !ok {
			return nil, nil, errors.New("script: bad bulk length")
		}
		if n < 0 {
			return lua.LFalse, rest, nil
		}
		if int64(len(rest)) < n+2 {
			return nil, nil, errShort
		}
		s, rest := rest[:n], rest[n+2:]
		if kind == '$' {
			return lua.LString(s), rest, nil
		}
		format, text := "txt", s
		if len(s) >= 4 && s[3] == ':' {
			format, text = string(s[:3]), s[4:]
		}
		v := L.CreateTable(0, 2)
		v.RawSetString("format", lua.LString(format))
		v.RawSetString("string", lua.LString(text))
		return field(L, "verbatim_string", v), rest, nil
	case '*', '~', '%':
		n, ok := resp.ParseInt(body)
		if !ok {
			return nil, nil, errors.New("script: bad aggregate length")
		}
		if n < 0 {
			return lua.LFalse, rest, nil
		}
		if n > int64(len(rest)) { // each element takes at least one byte
			return nil, nil, errShort
		}
		var t *lua.LTable
		if kind == '*' {
			t = L.CreateTable(int(n), 0)
		} else {
			t = L.CreateTable(0, int(n))
		}
		for i := int64(0); i < n; i++ {
			var k, v lua.LValue
			if k, rest, err = toLua(L, rest); err != nil {
				return nil, nil, err
			}
			switch kind {
			case '*':
				t.RawSetInt(int(i)+1, k)
				continue
			case '~':
				v = lua.LTrue
			case '%':
				if v, rest, err = toLua(L, rest); err != nil {
					return nil, nil, err
				}
			}
			t.RawSet(k, v)
		}
		switch kind {
		case '~':
			return field(L, "set", t), rest, nil
		case '%':
			return field(L, "map", t), rest, nil
		}
		return t, rest, nil
	}
	return nil, nil, errors.New("script: unknown reply type " + strconv.Quote(string(kind)))
}

// field returns the one-field table {name=v}.
func field(L *lua.LState, name string, v lua.LValue) *lua.LTable {
	t := L.CreateTable(0, 1)
	t.RawSetString(name, v)
	return t
}

func readLine(b []byte) (line, rest []byte, err error) {
	for i := 0; i+1 < len(b); i++ {
		if b[i] == '\r' && b[i+1] == '\n' {
			return b[:i], b[i+2:], nil
		}
	}
	return nil, nil, errShort
}
