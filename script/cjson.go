package script

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strconv"

	lua "github.com/yuin/gopher-lua"
)

// openCjson adds lua-cjson's cjson library as Redis loads it: encode and
// decode, cjson.null; an empty table encodes as an object, numbers with
// %.14g, "/" escaped, excessively sparse arrays and NaN refused.
func openCjson(L *lua.LState) {
	null := L.NewUserData()
	c := L.NewTable()
	c.RawSetString("null", null)
	c.RawSetString("encode", L.NewFunction(func(L *lua.LState) int {
		if L.GetTop() != 1 {
			L.ArgError(1, "expected 1 argument")
		}
		var b bytes.Buffer
		if err := encodeJSON(&b, L.Get(1), null, 0); err != nil {
			L.RaiseError("%s", err.Error())
		}
		L.Push(lua.LString(b.String()))
		return 1
	}))
	c.RawSetString("decode", L.NewFunction(func(L *lua.LState) int {
		s := L.CheckString(1)
		dec := json.NewDecoder(bytes.NewReader([]byte(s)))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			L.RaiseError("Expected value but found invalid token at character 1")
		}
		if dec.More() {
			L.RaiseError("Expected the end but found invalid token at character %d", dec.InputOffset()+1)
		}
		L.Push(toLuaJSON(L, v, null))
		return 1
	}))
	L.Get(lua.GlobalsIndex).(*lua.LTable).RawSetString("cjson", c)
}

func toLuaJSON(L *lua.LState, v any, null *lua.LUserData) lua.LValue {
	switch v := v.(type) {
	case nil:
		return null
	case bool:
		return lua.LBool(v)
	case json.Number:
		f, _ := strconv.ParseFloat(string(v), 64)
		return lua.LNumber(f)
	case string:
		return lua.LString(v)
	case []any:
		t := L.CreateTable(len(v), 0)
		for i, x := range v {
			t.RawSetInt(i+1, toLuaJSON(L, x, null))
		}
		return t
	case map[string]any:
		t := L.CreateTable(0, len(v))
		for k, x := range v {
			t.RawSetString(k, toLuaJSON(L, x, null))
		}
		return t
	}
	return lua.LNil
}

// encodeJSON writes v as lua-cjson encodes it.
func encodeJSON(b *bytes.Buffer, v lua.LValue, null *lua.LUserData, depth int) error {
	if depth > 1000 {
		return errors.New("Cannot serialise, excessive nesting (1001)")
	}
	switch v := v.(type) {
	case *lua.LNilType:
		b.WriteString("null")
	case lua.LBool:
		b.WriteString(strconv.FormatBool(bool(v)))
	case lua.LNumber:
		f := float64(v)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return errors.New("Cannot serialise number: must not be NaN or Inf")
		}
		b.WriteString(strconv.FormatFloat(f, 'g', 14, 64))
	case lua.LString:
		writeJSONString(b, string(v))
	case *lua.LUserData:
		if v != null {
			return errors.New("Cannot serialise userdata: type not supported")
		}
		b.WriteString("null")
	case *lua.LTable:
		n, array, err := arrayLength(v)
		if err != nil {
			return err
		}
		if array && n > 0 {
			b.WriteByte('[')
			for i := 1; i <= n; i++ {
				if i > 1 {
					b.WriteByte(',')
				}
				if err := encodeJSON(b, v.RawGetInt(i), null, depth+1); err != nil {
					return err
				}
			}
			b.WriteByte(']')
			return nil
		}
		b.WriteByte('{')
		first := true
		var ferr error
		v.ForEach(func(k, x lua.LValue) {
			if ferr != nil {
				return
			}
			var key string
			switch k := k.(type) {
			case lua.LString:
				key = string(k)
			case lua.LNumber:
				key = strconv.FormatFloat(float64(k), 'g', 14, 64)
			default:
				ferr = errors.New("Cannot serialise " + k.Type().String() + ": table key must be a number or string")
				return
			}
			if !first {
				b.WriteByte(',')
			}
			first = false
			writeJSONString(b, key)
			b.WriteByte(':')
			ferr = encodeJSON(b, x, null, depth+1)
		})
		if ferr != nil {
			return ferr
		}
		b.WriteByte('}')
	default:
		return errors.New("Cannot serialise " + v.Type().String() + ": type not supported")
	}
	return nil
}

// arrayLength returns the length of t as an array, and whether it is one:
// every key a positive integer, not excessively sparse (lua-cjson's
// defaults: more than 10 and more than twice the keys).
func arrayLength(t *lua.LTable) (int, bool, error) {
	count, max, ok := arrayKeys(t)
	if !ok {
		return 0, false, nil
	}
	if max > 10 && max > 2*count {
		return 0, false, errors.New("Cannot serialise table: excessively sparse array")
	}
	return max, true, nil
}

// arrayKeys reports whether every key of t is a positive integer, with
// how many there are and the largest.
func arrayKeys(t *lua.LTable) (count, max int, ok bool) {
	ok = true
	t.ForEach(func(k, _ lua.LValue) {
		n, isNum := k.(lua.LNumber)
		if !isNum || float64(n) != math.Floor(float64(n)) || n < 1 {
			ok = false
			return
		}
		count++
		max = int(math.Max(float64(max), float64(n)))
	})
	return count, max, ok
}

func writeJSONString(b *bytes.Buffer, s string) {
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '/':
			b.WriteString(`\/`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if c < 0x20 || c == 0x7f {
				b.WriteString(`\u00`)
				b.WriteByte("0123456789abcdef"[c>>4])
				b.WriteByte("0123456789abcdef"[c&15])
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
}
