package command

import (
	"math/big"
	"strings"
	"time"

	"github.com/rlserver/rlserver/resp"
)

// Argument parsers. They never touch state: a command parses everything
// first, then runs.

// parsePositive parses a count that must be at least 1.
func parsePositive(b []byte) (int64, bool) {
	n, ok := resp.ParseInt(b)
	return n, ok && n > 0
}

// parseCost parses a request cost n, which may be 0 (a peek).
func parseCost(b []byte) (int64, bool) {
	n, ok := resp.ParseInt(b)
	return n, ok && n >= 0
}

// parseDuration parses an integer with an optional unit suffix (ms, s, m, h,
// d); a bare integer means seconds. Zero, negative, non-integer and
// overflowing values are rejected.
func parseDuration(b []byte) (time.Duration, bool) {
	if len(b) == 0 {
		return 0, false
	}
	unit, num := time.Second, b
	switch b[len(b)-1] {
	case 's':
		num = b[:len(b)-1]
		if len(num) > 0 && num[len(num)-1] == 'm' {
			unit, num = time.Millisecond, num[:len(num)-1]
		}
	case 'm':
		unit, num = time.Minute, b[:len(b)-1]
	case 'h':
		unit, num = time.Hour, b[:len(b)-1]
	case 'd':
		unit, num = 24*time.Hour, b[:len(b)-1]
	}
	v, ok := resp.ParseInt(num)
	if !ok || v <= 0 || v > int64(1<<63-1)/int64(unit) {
		return 0, false
	}
	return time.Duration(v) * unit, true
}

// parseSeconds parses a positive number of seconds as Redis's strtod-based
// parsing takes it ("60", "0.5", ".5", "60.", "1e3", "1.0E7", "+2"), into a
// duration rounded to the nearest nanosecond (GCRA's period). Plain
// decimals with up to nine fractional digits, nearly every request, take a
// fast exact path; hexadecimal, inf and nan are refused.
func parseSeconds(b []byte) (time.Duration, bool) {
	whole, frac := b, []byte(nil)
	for i, ch := range b {
		if ch == '.' {
			whole, frac = b[:i], b[i+1:]
			break
		}
	}
	if len(whole) == 0 && len(frac) == 0 || len(frac) > 9 || (frac != nil && len(frac) == 0) {
		return parseSecondsSlow(b)
	}
	var secs int64
	if len(whole) > 0 {
		var ok bool
		if secs, ok = resp.ParseInt(whole); !ok || secs < 0 || secs > int64(1<<63-1)/int64(time.Second)-1 {
			return parseSecondsSlow(b)
		}
	}
	var ns int64
	for i := 0; i < 9; i++ {
		ns *= 10
		if i < len(frac) {
			ch := frac[i]
			if ch < '0' || ch > '9' {
				return parseSecondsSlow(b)
			}
			ns += int64(ch - '0')
		}
	}
	d := time.Duration(secs)*time.Second + time.Duration(ns)
	return d, d > 0
}

// parseSecondsSlow is parseSeconds for the forms the fast path leaves: an
// optional sign, digits with at most one '.', an optional exponent.
func parseSecondsSlow(b []byte) (time.Duration, bool) {
	i := 0
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		i++
	}
	digits, dot := 0, false
	for ; i < len(b) && (b[i] >= '0' && b[i] <= '9' || b[i] == '.' && !dot); i++ {
		if b[i] == '.' {
			dot = true
		} else {
			digits++
		}
	}
	if digits == 0 {
		return 0, false
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		exp := 0
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
			exp++
		}
		if exp == 0 || exp > 4 {
			return 0, false
		}
	}
	if i != len(b) {
		return 0, false
	}
	text := string(b)
	if strings.HasSuffix(text, ".") || strings.Contains(text, ".e") || strings.Contains(text, ".E") {
		text = strings.Replace(text, ".", "", 1) // "60." is 60; big.Rat wants digits after a '.'
	}
	r, ok := new(big.Rat).SetString(text)
	if !ok || r.Sign() <= 0 {
		return 0, false
	}
	r.Mul(r, big.NewRat(int64(time.Second), 1))
	// Round half up to whole nanoseconds.
	r.Add(r, big.NewRat(1, 2))
	ns := new(big.Int).Quo(r.Num(), r.Denom())
	if !ns.IsInt64() || ns.Int64() <= 0 {
		return 0, false
	}
	return time.Duration(ns.Int64()), true
}

// equalFold reports whether b equals the upper-case ASCII token tok,
// ignoring case.
func equalFold(b []byte, tok string) bool {
	if len(b) != len(tok) {
		return false
	}
	for i := range b {
		ch := b[i]
		if 'a' <= ch && ch <= 'z' {
			ch -= 'a' - 'A'
		}
		if ch != tok[i] {
			return false
		}
	}
	return true
}

// ceilMs converts a duration to whole milliseconds, rounding up (the
// contract's rounding for every ms reply). Negative durations stay -1.
func ceilMs(d time.Duration) int64 {
	if d < 0 {
		return -1
	}
	ms := int64(d / time.Millisecond)
	if d%time.Millisecond != 0 {
		ms++
	}
	return ms
}

// cellSeconds rounds a duration the way redis-cell does: whole seconds, plus
// one if the millisecond part is non-zero (3.000 s -> 3, 3.100 s -> 4).
func cellSeconds(d time.Duration) int64 {
	if d < 0 {
		return -1
	}
	s := int64(d / time.Second)
	if (d%time.Second)/time.Millisecond > 0 {
		s++
	}
	return s
}
