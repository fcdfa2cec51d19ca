package resp

import (
	"encoding/binary"
	"math/bits"
	"slices"
)

// ParseInt parses a base-10 int64 the way Redis's string2ll does: optional
// '-', no '+', no leading zeros, no spaces, no overflow. The reader parses
// request headers with it, the commands their integer arguments.
func ParseInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	neg := false
	if b[0] == '-' {
		neg = true
		b = b[1:]
		if len(b) == 0 {
			return 0, false
		}
	}
	if (len(b) > 1 || neg) && b[0] == '0' {
		return 0, false // leading zeros and "-0", as string2ll refuses them
	}
	if len(b) > 19 {
		return 0, false // 20 digits are past the int64 range either way
	}
	var u uint64 // at most 19 digits: no overflow to check per digit
	for _, ch := range b {
		if ch-'0' > 9 {
			return 0, false
		}
		u = u*10 + uint64(ch-'0')
	}
	if neg {
		if u > 1<<63 {
			return 0, false
		}
		return -int64(u), true
	}
	if u > 1<<63-1 {
		return 0, false
	}
	return int64(u), true
}

// appendLine appends prefix, n in decimal and CRLF: an integer reply or an
// aggregate's header. The digits are made eight at a time in one word
// (digits8) and stored whole, not two at a time through strconv and a
// copy: CL.ALL's reply carries 16 integers, most of them 7 to 10 digits
// long. It may write past the returned length (within b's capacity), as
// any later append may.
func appendLine(b []byte, prefix byte, n int64) []byte {
	const room = 32 // prefix, sign, 20 digits, CRLF, and the last store's overhang
	if cap(b)-len(b) < room {
		b = slices.Grow(b, room)
	}
	l := len(b)
	p := b[l : l+room]
	p[0] = prefix
	i, u := 1, uint64(n)
	if n < 0 {
		p[1] = '-'
		i, u = 2, -u
	}
	var low [2]uint64 // the 8-digit groups below the top one, least significant first
	k := 0
	for u >= 1e8 {
		low[k] = u % 1e8
		u /= 1e8
		k++
	}
	d := digits8(u)
	z := 7 // leading zero digits of the top group
	if d != 0 {
		z = bits.TrailingZeros64(d) / 8
	}
	binary.LittleEndian.PutUint64(p[i:], (d|ascii8)>>(8*z))
	i += 8 - z
	for k > 0 {
		k--
		binary.LittleEndian.PutUint64(p[i:], digits8(low[k])|ascii8)
		i += 8
	}
	p[i], p[i+1] = '\r', '\n'
	return b[:l+i+2]
}

const ascii8 = 0x3030303030303030 // '0' in every byte

// digits8 spreads v (< 1e8) into its eight decimal digits, one per byte,
// the most significant in the lowest byte (the first in memory): v splits
// into two 4-digit halves in 32-bit lanes, each into two 2-digit 16-bit
// lanes, each into two digits, dividing by 100 and 10 with multiplications
// exact in these ranges.
func digits8(v uint64) uint64 {
	hi := v / 10000
	x := hi | (v-hi*10000)<<32
	q := (x * 10486 >> 20) & 0x0000007f0000007f
	x = q | (x-q*100)<<16
	q = (x * 103 >> 10) & 0x000f000f000f000f
	return q | (x-q*10)<<8
}
