package script

import (
	"math"
	"math/bits"

	lua "github.com/yuin/gopher-lua"
)

// openBit adds LuaBitOp's bit library as Redis loads it: operations on
// 32-bit integers, results as signed numbers.
func openBit(L *lua.LState) {
	tobit := func(L *lua.LState, i int) uint32 {
		// LuaBitOp normalises with the 2^52+2^51 trick: rounded to the
		// nearest (even) integer, modulo 2^32.
		f := math.RoundToEven(float64(L.CheckNumber(i)))
		return uint32(int64(math.Mod(f, 1<<32)))
	}
	ret := func(L *lua.LState, v uint32) int {
		L.Push(lua.LNumber(int32(v)))
		return 1
	}
	fold := func(op func(a, b uint32) uint32) lua.LGFunction {
		return func(L *lua.LState) int {
			v := tobit(L, 1)
			for i := 2; i <= L.GetTop(); i++ {
				v = op(v, tobit(L, i))
			}
			return ret(L, v)
		}
	}
	shift := func(op func(a uint32, n uint) uint32) lua.LGFunction {
		return func(L *lua.LState) int { return ret(L, op(tobit(L, 1), uint(tobit(L, 2)&31))) }
	}
	b := L.NewTable()
	for name, fn := range map[string]lua.LGFunction{
		"tobit":   func(L *lua.LState) int { return ret(L, tobit(L, 1)) },
		"bnot":    func(L *lua.LState) int { return ret(L, ^tobit(L, 1)) },
		"band":    fold(func(a, b uint32) uint32 { return a & b }),
		"bor":     fold(func(a, b uint32) uint32 { return a | b }),
		"bxor":    fold(func(a, b uint32) uint32 { return a ^ b }),
		"lshift":  shift(func(a uint32, n uint) uint32 { return a << n }),
		"rshift":  shift(func(a uint32, n uint) uint32 { return a >> n }),
		"arshift": shift(func(a uint32, n uint) uint32 { return uint32(int32(a) >> n) }),
		"rol":     shift(func(a uint32, n uint) uint32 { return bits.RotateLeft32(a, int(n)) }),
		"ror":     shift(func(a uint32, n uint) uint32 { return bits.RotateLeft32(a, -int(n)) }),
		"bswap":   func(L *lua.LState) int { return ret(L, bits.ReverseBytes32(tobit(L, 1))) },
		"tohex": func(L *lua.LState) int {
			v := tobit(L, 1)
			n := int32(8)
			if L.GetTop() >= 2 {
				n = int32(tobit(L, 2))
			}
			digits := "0123456789abcdef"
			if n < 0 {
				n, digits = -n, "0123456789ABCDEF"
			}
			n = min(n, 8)
			out := make([]byte, n)
			for i := n - 1; i >= 0; i-- {
				out[i] = digits[v&15]
				v >>= 4
			}
			L.Push(lua.LString(out))
			return 1
		},
	} {
		b.RawSetString(name, L.NewFunction(fn))
	}
	L.Get(lua.GlobalsIndex).(*lua.LTable).RawSetString("bit", b)
}
