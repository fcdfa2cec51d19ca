package values

import (
	"bytes"
	"errors"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unsafe"
)

// Redis's error texts for the numbers and ranges of the value commands.
var (
	ErrNotFloat     = errors.New("ERR value is not a valid float")
	ErrMinMaxFloat  = errors.New("ERR min or max is not a float")
	ErrMinMaxLex    = errors.New("ERR min or max not valid string range item")
	ErrIncrNaNOrInf = errors.New("ERR increment would produce NaN or Infinity")
)

// ParseFloat reads a float as Redis's strtod does for scores and
// increments: decimal, exponent and hexadecimal forms, and inf/-inf/+inf
// in any case; NaN, spaces and trailing bytes are refused.
func ParseFloat(b []byte) (float64, bool) {
	if f, ok := plainDecimal(b); ok {
		return f, true
	}
	if f, ok := infinity(b); ok {
		return f, true
	}
	s, ok := floatSyntax(b)
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !isInf(s) || math.IsNaN(f) || f == 0 && !zero(s) {
		return 0, false // also what overflows or underflows, as strtod's ERANGE
	}
	return f, true
}

// plainDecimal is ParseFloat's fast path for the common form, an optional
// minus and digits with at most one point, read by strconv without copying
// b: both it and strtod round correctly, so they agree. What overflows, or
// underflows to zero, is left to the slow path, which refuses it as
// strtod's ERANGE does.
func plainDecimal(b []byte) (float64, bool) {
	digits, point, nonzero := 0, false, false
	for i, ch := range b {
		switch {
		case '0' <= ch && ch <= '9':
			digits++
			nonzero = nonzero || ch != '0'
		case ch == '.' && !point:
			point = true
		case ch == '-' && i == 0:
		default:
			return 0, false
		}
	}
	if digits == 0 {
		return 0, false
	}
	f, err := strconv.ParseFloat(unsafe.String(unsafe.SliceData(b), len(b)), 64)
	if err != nil || f == 0 && nonzero {
		return 0, false
	}
	return f, true
}

// infinity reads the forms of infinity strtod takes, in any case, without
// copying b: a range's -inf and +inf are as common as numbers.
func infinity(b []byte) (float64, bool) {
	sign := 1.0
	if len(b) > 0 && (b[0] == '+' || b[0] == '-') {
		if b[0] == '-' {
			sign = -1
		}
		b = b[1:]
	}
	if len(b) != 3 && len(b) != 8 {
		return 0, false
	}
	for i, ch := range b {
		if ch|0x20 != "infinity"[i] {
			return 0, false
		}
	}
	return math.Inf(int(sign)), true
}

// zero reports whether the mantissa of a float's text is all zeros.
func zero(s string) bool {
	m := strings.TrimLeft(s, "+-")
	if hex := strings.HasPrefix(m, "0x") || strings.HasPrefix(m, "0X"); hex {
		m, _, _ = strings.Cut(strings.ToLower(m[2:]), "p")
	} else {
		m, _, _ = strings.Cut(strings.ToLower(m), "e")
	}
	return strings.Trim(m, "0.") == ""
}

// floatSyntax checks b's syntax and returns it in the form Go's parsers
// read (a hexadecimal float gets the "p0" exponent Go requires).
func floatSyntax(b []byte) (string, bool) {
	s := string(b)
	if s == "" || strings.TrimSpace(s) != s || strings.ContainsAny(s, "_nN") && !isInf(s) {
		return "", false
	}
	if isInf(s) {
		return s, true
	}
	digits := strings.TrimLeft(s, "+-")
	if len(s)-len(digits) > 1 {
		return "", false
	}
	if strings.HasPrefix(digits, "0x") || strings.HasPrefix(digits, "0X") {
		if !strings.ContainsAny(digits, "pP") {
			s += "p0"
		}
	} else if strings.ContainsAny(digits, "pP") {
		return "", false
	}
	return s, true
}

func isInf(s string) bool {
	switch strings.ToLower(s) {
	case "inf", "+inf", "-inf", "infinity", "+infinity", "-infinity":
		return true
	}
	return false
}

// FormatScore writes a score as Redis 7.0 replies with a double in RESP2
// (printf's %.17g; inf and -inf; a negative zero as 0).
func FormatScore(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case f == 0:
		return "0"
	}
	return strconv.FormatFloat(f, 'g', 17, 64)
}

// IncrByFloat returns the value INCRBYFLOAT stores for the value cur plus
// by, as Redis 7.0 computes and writes it: both read and added in long
// double (a 64-bit mantissa), written with 17 decimals less the trailing
// zeros.
func IncrByFloat(cur, by []byte) (string, error) {
	a, err := longDouble(cur)
	if err != nil {
		return "", err
	}
	b, err := longDouble(by)
	if err != nil {
		return "", err
	}
	if a.IsInf() || b.IsInf() {
		return "", ErrIncrNaNOrInf
	}
	v := new(big.Float).SetPrec(64).SetMode(big.ToNearestEven).Add(a, b)
	if v.MantExp(nil) > 16384 { // past long double's range: infinity
		return "", ErrIncrNaNOrInf
	}
	s := v.Text('f', 17)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	if s == "-0" {
		s = "0"
	}
	return s, nil
}

func longDouble(b []byte) (*big.Float, error) {
	s, ok := floatSyntax(b)
	if !ok {
		return nil, ErrNotFloat
	}
	f, _, err := big.ParseFloat(s, 0, 64, big.ToNearestEven)
	if err != nil {
		return nil, ErrNotFloat
	}
	return f, nil
}

// ParseScoreRange reads ZRANGEBYSCORE's min and max: a float, "(" before
// one for an exclusive end, or an infinity.
func ParseScoreRange(min, max []byte) (ScoreRange, error) {
	var r ScoreRange
	var ok bool
	if r.Min, r.MinEx, ok = scoreEnd(min); !ok {
		return r, ErrMinMaxFloat
	}
	if r.Max, r.MaxEx, ok = scoreEnd(max); !ok {
		return r, ErrMinMaxFloat
	}
	return r, nil
}

// scoreEnd reads one end as Redis's zslParseRange does, with strtod
// alone: leading spaces are skipped, an empty end is 0, and a value out
// of range is the infinity or zero strtod gives.
func scoreEnd(b []byte) (float64, bool, bool) {
	ex := len(b) > 0 && b[0] == '('
	if ex {
		b = b[1:]
	}
	b = bytes.TrimLeft(b, " \t\n\v\f\r")
	if len(b) == 0 {
		return 0, ex, true
	}
	if f, ok := ParseFloat(b); ok {
		return f, ex, true
	}
	s, ok := floatSyntax(b)
	if !ok {
		return 0, ex, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if ne, isNum := err.(*strconv.NumError); isNum && ne.Err == strconv.ErrRange {
		return f, ex, true
	}
	return 0, ex, false
}

// ParseLexRange reads ZRANGEBYLEX's min and max: "[" or "(" before a
// member (inclusive or exclusive), or "-" and "+" for the infinities ("+"
// as min or "-" as max leave the range empty, as in Redis).
func ParseLexRange(min, max []byte) (LexRange, error) {
	var r LexRange
	lo, ok := lexEnd(min)
	if !ok {
		return r, ErrMinMaxLex
	}
	hi, ok := lexEnd(max)
	if !ok {
		return r, ErrMinMaxLex
	}
	switch lo {
	case '-':
		r.MinInf = true
	case '+':
		r.Empty = true
	default:
		r.Min, r.MinEx = min[1:], lo == '('
	}
	switch hi {
	case '+':
		r.MaxInf = true
	case '-':
		r.Empty = true
	default:
		r.Max, r.MaxEx = max[1:], hi == '('
	}
	return r, nil
}

// lexEnd returns the kind of a lex range end: '-', '+', '[' or '('.
func lexEnd(b []byte) (byte, bool) {
	switch {
	case len(b) == 1 && (b[0] == '-' || b[0] == '+'):
		return b[0], true
	case len(b) > 0 && (b[0] == '[' || b[0] == '('):
		return b[0], true
	}
	return 0, false
}
