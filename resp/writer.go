package resp

import (
	"strconv"

	"github.com/tidwall/redcon"
)

// Reply encoding. RESP2 primitives come from redcon's append helpers; the
// RESP3 types (null, map, set, double, boolean, verbatim) are encoded here,
// chosen by the protocol the connection negotiated. Every helper appends to
// the connection's output buffer, flushed once per pipelined batch.

// appendInt appends an integer reply; single digits, the most common
// values in limiter replies, skip the conversion.
func appendInt(b []byte, n int64) []byte {
	if n >= 0 && n < 10 {
		return append(b, ':', byte('0'+n), '\r', '\n')
	}
	if n == -1 { // an admitted decision's retry_after
		return append(b, ":-1\r\n"...)
	}
	b = append(b, ':')
	b = strconv.AppendInt(b, n, 10)
	return append(b, '\r', '\n')
}

func appendBulk(b []byte, s []byte) []byte    { return redcon.AppendBulk(b, s) }
func appendBulkStr(b []byte, s string) []byte { return redcon.AppendBulkString(b, s) }
func appendArray(b []byte, n int) []byte {
	if n >= 0 && n < 10 {
		return append(b, '*', byte('0'+n), '\r', '\n')
	}
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(n), 10)
	return append(b, '\r', '\n')
}

func appendOK(b []byte) []byte { return append(b, "+OK\r\n"...) }

// appendStatus appends a simple string (+s). s must not contain CR or LF.
func appendStatus(b []byte, s string) []byte {
	b = append(b, '+')
	b = append(b, s...)
	return append(b, '\r', '\n')
}

// appendErr appends an error reply; msg starts with its code ("ERR ...").
func appendErr(b []byte, msg string) []byte {
	b = append(b, '-')
	b = append(b, msg...)
	return append(b, '\r', '\n')
}

func appendNull(b []byte, proto int) []byte {
	if proto == 3 {
		return append(b, "_\r\n"...)
	}
	return append(b, "$-1\r\n"...)
}

// appendMap starts a map of n pairs (a flat array of 2n in RESP2).
func appendMap(b []byte, proto, n int) []byte {
	if proto == 3 {
		b = append(b, '%')
		b = strconv.AppendInt(b, int64(n), 10)
		return append(b, '\r', '\n')
	}
	return appendArray(b, 2*n)
}

// appendSet starts a set of n elements (an array in RESP2).
func appendSet(b []byte, proto, n int) []byte {
	if proto == 3 {
		b = append(b, '~')
		b = strconv.AppendInt(b, int64(n), 10)
		return append(b, '\r', '\n')
	}
	return appendArray(b, n)
}

func appendBool(b []byte, proto int, v bool) []byte {
	if proto == 3 {
		if v {
			return append(b, "#t\r\n"...)
		}
		return append(b, "#f\r\n"...)
	}
	if v {
		return append(b, ":1\r\n"...)
	}
	return append(b, ":0\r\n"...)
}

// appendVerbatim appends text as a RESP3 verbatim string of format "txt"
// (a bulk string in RESP2), as Redis answers INFO and CLIENT INFO.
func appendVerbatim(b []byte, proto int, text string) []byte {
	if proto == 3 {
		b = append(b, '=')
		b = strconv.AppendInt(b, int64(len(text)+4), 10)
		b = append(b, "\r\ntxt:"...)
		b = append(b, text...)
		return append(b, '\r', '\n')
	}
	return appendBulkStr(b, text)
}
