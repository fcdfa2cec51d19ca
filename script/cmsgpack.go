package script

import (
	"encoding/binary"
	"errors"
	"math"

	lua "github.com/yuin/gopher-lua"
)

// openCmsgpack adds lua-cmsgpack's cmsgpack library as Redis loads it:
// pack, unpack, unpack_one and unpack_limit of MessagePack.
func openCmsgpack(L *lua.LState) {
	t := L.NewTable()
	t.RawSetString("pack", L.NewFunction(msgpackPack))
	t.RawSetString("unpack", L.NewFunction(func(L *lua.LState) int { return msgpackUnpack(L, 0, 0) }))
	t.RawSetString("unpack_one", L.NewFunction(func(L *lua.LState) int { return msgpackUnpack(L, 1, L.OptInt(2, 0)) }))
	t.RawSetString("unpack_limit", L.NewFunction(func(L *lua.LState) int { return msgpackUnpack(L, L.CheckInt(2), L.OptInt(3, 0)) }))
	L.Get(lua.GlobalsIndex).(*lua.LTable).RawSetString("cmsgpack", t)
}

// msgpackMaxNesting is lua-cmsgpack's: deeper tables pack as nil.
const msgpackMaxNesting = 16

func msgpackPack(L *lua.LState) int {
	n := L.GetTop()
	if n == 0 {
		L.RaiseError("MessagePack pack needs input.")
	}
	var b []byte
	for i := 1; i <= n; i++ {
		b = packValue(b, L.Get(i), 0)
	}
	L.Push(lua.LString(b))
	return 1
}

func packValue(b []byte, v lua.LValue, level int) []byte {
	switch v := v.(type) {
	case lua.LBool:
		if v {
			return append(b, 0xc3)
		}
		return append(b, 0xc2)
	case lua.LNumber:
		f := float64(v)
		if f == math.Trunc(f) && f >= math.MinInt64 && f < math.MaxInt64 && !math.IsInf(f, 0) {
			return packInt(b, int64(f))
		}
		if float64(float32(f)) == f {
			return binary.BigEndian.AppendUint32(append(b, 0xca), math.Float32bits(float32(f)))
		}
		return binary.BigEndian.AppendUint64(append(b, 0xcb), math.Float64bits(f))
	case lua.LString:
		n := len(v)
		switch {
		case n < 32:
			b = append(b, 0xa0|byte(n))
		case n <= 0xff:
			b = append(b, 0xd9, byte(n))
		case n <= 0xffff:
			b = binary.BigEndian.AppendUint16(append(b, 0xda), uint16(n))
		default:
			b = binary.BigEndian.AppendUint32(append(b, 0xdb), uint32(n))
		}
		return append(b, v...)
	case *lua.LTable:
		if level >= msgpackMaxNesting {
			return append(b, 0xc0)
		}
		if n, ok := isArray(v); ok {
			b = packLen(b, n, 0x90, 0xdc, 0xdd)
			for i := 1; i <= n; i++ {
				b = packValue(b, v.RawGetInt(i), level+1)
			}
			return b
		}
		count := 0
		v.ForEach(func(lua.LValue, lua.LValue) { count++ })
		b = packLen(b, count, 0x80, 0xde, 0xdf)
		v.ForEach(func(k, x lua.LValue) {
			b = packValue(b, k, level+1)
			b = packValue(b, x, level+1)
		})
		return b
	}
	return append(b, 0xc0)
}

func packLen(b []byte, n int, fix, b16, b32 byte) []byte {
	switch {
	case n < 16:
		return append(b, fix|byte(n))
	case n <= 0xffff:
		return binary.BigEndian.AppendUint16(append(b, b16), uint16(n))
	}
	return binary.BigEndian.AppendUint32(append(b, b32), uint32(n))
}

func packInt(b []byte, n int64) []byte {
	if n >= 0 {
		switch {
		case n <= 127:
			return append(b, byte(n))
		case n <= 0xff:
			return append(b, 0xcc, byte(n))
		case n <= 0xffff:
			return binary.BigEndian.AppendUint16(append(b, 0xcd), uint16(n))
		case n <= 0xffffffff:
			return binary.BigEndian.AppendUint32(append(b, 0xce), uint32(n))
		}
		return binary.BigEndian.AppendUint64(append(b, 0xcf), uint64(n))
	}
	switch {
	case n >= -32:
		return append(b, byte(int8(n)))
	case n >= -128:
		return append(b, 0xd0, byte(int8(n)))
	case n >= -32768:
		return binary.BigEndian.AppendUint16(append(b, 0xd1), uint16(int16(n)))
	case n >= -2147483648:
		return binary.BigEndian.AppendUint32(append(b, 0xd2), uint32(int32(n)))
	}
	return binary.BigEndian.AppendUint64(append(b, 0xd3), uint64(n))
}

// isArray reports whether t's keys are exactly 1..n, as lua-cmsgpack's
// table_is_an_array.
func isArray(t *lua.LTable) (int, bool) {
	count, max, ok := arrayKeys(t)
	return count, ok && max == count
}

var errMsgpackShort = errors.New("Missing bytes in input.")

// msgpackUnpack decodes up to limit objects (0: all) from the string
// argument, starting at offset; unpack_one and unpack_limit first return
// the offset after them (-1 at the end).
func msgpackUnpack(L *lua.LState, limit, offset int) int {
	s := L.CheckString(1)
	if offset < 0 || offset > len(s) {
		L.RaiseError("Start offset %d greater than input length %d.", offset, len(s))
	}
	b := []byte(s[offset:])
	var vals []lua.LValue
	for len(b) > 0 && (limit == 0 || len(vals) < limit) {
		v, rest, err := unpackValue(L, b)
		if err != nil {
			L.RaiseError("%s", err.Error())
		}
		vals = append(vals, v)
		b = rest
	}
	if limit > 0 {
		next := -1
		if len(b) > 0 {
			next = len(s) - len(b)
		}
		L.Push(lua.LNumber(next))
	}
	for _, v := range vals {
		L.Push(v)
	}
	if limit > 0 {
		return len(vals) + 1
	}
	return len(vals)
}

func unpackValue(L *lua.LState, b []byte) (lua.LValue, []byte, error) {
	need := func(n int) error {
		if len(b) < n {
			return errMsgpackShort
		}
		return nil
	}
	c := b[0]
	b = b[1:]
	u := func(n int) (uint64, error) {
		if err := need(n); err != nil {
			return 0, err
		}
		var v uint64
		for i := 0; i < n; i++ {
			v = v<<8 | uint64(b[i])
		}
		b = b[n:]
		return v, nil
	}
	str := func(n int) (lua.LValue, []byte, error) {
		if err := need(n); err != nil {
			return nil, nil, err
		}
		return lua.LString(b[:n]), b[n:], nil
	}
	seq := func(n int, isMap bool) (lua.LValue, []byte, error) {
		t := L.NewTable()
		for i := 1; i <= n; i++ {
			var k, v lua.LValue = lua.LNumber(i), nil
			var err error
			if isMap {
				if len(b) == 0 {
					return nil, nil, errMsgpackShort
				}
				if k, b, err = unpackValue(L, b); err != nil {
					return nil, nil, err
				}
			}
			if len(b) == 0 {
				return nil, nil, errMsgpackShort
			}
			if v, b, err = unpackValue(L, b); err != nil {
				return nil, nil, err
			}
			if k != lua.LNil {
				t.RawSet(k, v)
			}
		}
		return t, b, nil
	}
	switch {
	case c <= 0x7f:
		return lua.LNumber(c), b, nil
	case c >= 0xe0:
		return lua.LNumber(int8(c)), b, nil
	case c&0xf0 == 0x80:
		return seq(int(c&0x0f), true)
	case c&0xf0 == 0x90:
		return seq(int(c&0x0f), false)
	case c&0xe0 == 0xa0:
		return str(int(c & 0x1f))
	}
	var v uint64
	var err error
	switch c {
	case 0xc0:
		return lua.LNil, b, nil
	case 0xc2:
		return lua.LFalse, b, nil
	case 0xc3:
		return lua.LTrue, b, nil
	case 0xca:
		v, err = u(4)
		return lua.LNumber(math.Float32frombits(uint32(v))), b, err
	case 0xcb:
		v, err = u(8)
		return lua.LNumber(math.Float64frombits(v)), b, err
	case 0xcc, 0xcd, 0xce, 0xcf:
		v, err = u(1 << (c - 0xcc))
		return lua.LNumber(v), b, err
	case 0xd0:
		v, err = u(1)
		return lua.LNumber(int8(v)), b, err
	case 0xd1:
		v, err = u(2)
		return lua.LNumber(int16(v)), b, err
	case 0xd2:
		v, err = u(4)
		return lua.LNumber(int32(v)), b, err
	case 0xd3:
		v, err = u(8)
		return lua.LNumber(int64(v)), b, err
	case 0xd9, 0xc4:
		if v, err = u(1); err != nil {
			return nil, nil, err
		}
		return str(int(v))
	case 0xda, 0xc5:
		if v, err = u(2); err != nil {
			return nil, nil, err
		}
		return str(int(v))
	case 0xdb, 0xc6:
		if v, err = u(4); err != nil {
			return nil, nil, err
		}
		return str(int(v))
	case 0xdc, 0xdd:
		if v, err = u(2 << (c - 0xdc)); err != nil {
			return nil, nil, err
		}
		return seq(int(v), false)
	case 0xde, 0xdf:
		if v, err = u(2 << (c - 0xde)); err != nil {
			return nil, nil, err
		}
		return seq(int(v), true)
	}
	return nil, nil, errors.New("Bad data format in input.")
}
