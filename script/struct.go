package script

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// openStruct adds Roberto Ierusalimschy's struct library as Redis loads
// it (lua_struct.c): pack, unpack and size of binary records, the
// formats Redisson's rate limiter uses among them.
func openStruct(L *lua.LState) {
	t := L.NewTable()
	t.RawSetString("pack", L.NewFunction(structPack))
	t.RawSetString("unpack", L.NewFunction(structUnpack))
	t.RawSetString("size", L.NewFunction(structSize))
	L.Get(lua.GlobalsIndex).(*lua.LTable).RawSetString("struct", t)
}

// structFormat walks a format: order and alignment options, then items.
type structFormat struct {
	f      string
	i      int
	little bool
	align  int
}

// item returns the next item's option and size (0: none left).
func (s *structFormat) item(L *lua.LState, fn string) (byte, int, bool) {
	for s.i < len(s.f) {
		c := s.f[s.i]
		s.i++
		switch c {
		case ' ':
		case '>':
			s.little = false
		case '<', '=':
			s.little = true
		case '!':
			s.align = s.number(8)
		case 'b', 'B', 'x':
			return c, 1, true
		case 'h', 'H':
			return c, 2, true
		case 'l', 'L', 'T':
			return c, 8, true
		case 'f':
			return c, 4, true
		case 'd':
			return c, 8, true
		case 's':
			return c, 0, true
		case 'c':
			return c, s.number(1), true
		case 'i', 'I':
			n := s.number(4)
			if n < 1 || n > 8 {
				L.RaiseError("integral size %d is larger than limit of 8", n)
			}
			return c, n, true
		default:
			L.RaiseError("invalid format option '%c'", c)
		}
	}
	return 0, 0, false
}

// number reads a size after an option (def when none).
func (s *structFormat) number(def int) int {
	if s.i >= len(s.f) || s.f[s.i] < '0' || s.f[s.i] > '9' {
		return def
	}
	n := 0
	for s.i < len(s.f) && s.f[s.i] >= '0' && s.f[s.i] <= '9' {
		n = n*10 + int(s.f[s.i]-'0')
		s.i++
	}
	return n
}

// pad returns the padding that aligns an item of size at offset.
func (s *structFormat) pad(c byte, size, offset int) int {
	if c == 'c' || c == 's' || c == 'x' || size <= 1 {
		return 0
	}
	a := min(size, s.align)
	if a <= 1 || a&(a-1) != 0 {
		return 0
	}
	return (a - offset&(a-1)) & (a - 1)
}

func structPack(L *lua.LState) int {
	f := &structFormat{f: L.CheckString(1), little: true, align: 1}
	var b []byte
	arg := 2
	for {
		c, size, ok := f.item(L, "pack")
		if !ok {
			break
		}
		b = append(b, make([]byte, f.pad(c, size, len(b)))...)
		switch c {
		case 'x':
			b = append(b, 0)
			continue
		case 'b', 'B', 'h', 'H', 'l', 'L', 'T', 'i', 'I':
			n := float64(checkNumber(L, arg, "pack"))
			var v uint64
			if n < 0 {
				v = uint64(int64(n))
			} else {
				v = uint64(n)
			}
			b = appendInt(b, v, size, f.little)
		case 'f':
			b = appendInt(b, uint64(math.Float32bits(float32(checkNumber(L, arg, "pack")))), 4, f.little)
		case 'd':
			b = appendInt(b, math.Float64bits(float64(checkNumber(L, arg, "pack"))), 8, f.little)
		case 'c', 's':
			str := checkString(L, arg, "pack")
			if c == 's' {
				b = append(append(b, str...), 0)
				break
			}
			if size == 0 {
				size = len(str)
			}
			if len(str) < size {
				L.RaiseError("bad argument #%d to 'pack' (string too short)", arg)
			}
			b = append(b, str[:size]...)
		}
		arg++
	}
	L.Push(lua.LString(b))
	return 1
}

func appendInt(b []byte, v uint64, size int, little bool) []byte {
	var w [8]byte
	binary.LittleEndian.PutUint64(w[:], v)
	if little {
		return append(b, w[:size]...)
	}
	for i := size - 1; i >= 0; i-- {
		b = append(b, w[i])
	}
	return b
}

func readInt(b []byte, size int, little, signed bool) float64 {
	var v uint64
	for i := 0; i < size; i++ {
		k := i
		if !little {
			k = size - 1 - i
		}
		v |= uint64(b[k]) << (8 * i)
	}
	if signed && size < 8 && v&(1<<(8*size-1)) != 0 {
		v |= ^uint64(0) << (8 * size)
	}
	if signed {
		return float64(int64(v))
	}
	return float64(v)
}

func structUnpack(L *lua.LState) int {
	f := &structFormat{f: L.CheckString(1), little: true, align: 1}
	data := checkString(L, 2, "unpack")
	pos := L.OptInt(3, 1) - 1
	if pos < 0 || pos > len(data) {
		L.RaiseError("bad argument #3 to 'unpack' (offset must be 1 or greater)")
	}
	n := 0
	need := func(size int) {
		if pos+size > len(data) {
			L.RaiseError("bad argument #2 to 'unpack' (data string too short)")
		}
	}
	for {
		c, size, ok := f.item(L, "unpack")
		if !ok {
			break
		}
		pos += f.pad(c, size, pos)
		switch c {
		case 'x':
			pos++
			continue
		case 'b', 'B', 'h', 'H', 'l', 'L', 'T', 'i', 'I':
			need(size)
			signed := c == 'b' || c == 'h' || c == 'l' || c == 'i'
			L.Push(lua.LNumber(readInt([]byte(data[pos:pos+size]), size, f.little, signed)))
		case 'f':
			need(4)
			L.Push(lua.LNumber(math.Float32frombits(uint32(readInt([]byte(data[pos:pos+4]), 4, f.little, false)))))
		case 'd':
			need(8)
			L.Push(lua.LNumber(math.Float64frombits(uint64(readInt([]byte(data[pos:pos+8]), 8, f.little, false)))))
		case 'c':
			if size == 0 {
				if n == 0 || L.Get(-1).Type() != lua.LTNumber {
					L.RaiseError("format 'c0' needs a previous size")
				}
				size = int(L.Get(-1).(lua.LNumber))
				L.Pop(1)
				n--
			}
			need(size)
			L.Push(lua.LString(data[pos : pos+size]))
		case 's':
			end := strings.IndexByte(data[pos:], 0)
			if end < 0 {
				L.RaiseError("unfinished string in data")
			}
			L.Push(lua.LString(data[pos : pos+end]))
			size = end + 1
		}
		pos += size
		n++
	}
	L.Push(lua.LNumber(pos + 1))
	return n + 1
}

func structSize(L *lua.LState) int {
	f := &structFormat{f: L.CheckString(1), little: true, align: 1}
	total := 0
	for {
		c, size, ok := f.item(L, "size")
		if !ok {
			break
		}
		if c == 's' {
			L.RaiseError("bad argument #1 to 'size' (option 's' has no fixed size)")
		}
		if c == 'c' && size == 0 {
			L.RaiseError("bad argument #1 to 'size' (option 'c0' has no fixed size)")
		}
		total += f.pad(c, size, total) + size
	}
	L.Push(lua.LNumber(total))
	return 1
}

// checkNumber and checkString are Lua's luaL_check* with its wording.
func checkNumber(L *lua.LState, i int, fn string) lua.LNumber {
	switch v := L.Get(i).(type) {
	case lua.LNumber:
		return v
	case lua.LString:
		if n, err := parseNumber(string(v)); err == nil {
			return n
		}
	}
	L.RaiseError("bad argument #%d to '%s' (number expected, got %s)", i, fn, typeName(L.Get(i)))
	return 0
}

func checkString(L *lua.LState, i int, fn string) string {
	switch v := L.Get(i).(type) {
	case lua.LString:
		return string(v)
	case lua.LNumber:
		return lua.LVAsString(v)
	}
	L.RaiseError("bad argument #%d to '%s' (string expected, got %s)", i, fn, typeName(L.Get(i)))
	return ""
}

func typeName(v lua.LValue) string { return v.Type().String() }

func parseNumber(s string) (lua.LNumber, error) {
	var f float64
	_, err := fmt.Sscan(strings.TrimSpace(s), &f)
	return lua.LNumber(f), err
}
