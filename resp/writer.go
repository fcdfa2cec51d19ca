package resp

import (
	"strings"

	"github.com/tidwall/redcon"
)

// Reply encoding. RESP2 primitives come from redcon's append helpers; the
// RESP3 types (null, map, set, double, boolean, verbatim) are encoded here,
// chosen by the protocol the connection negotiated. The Append functions
// append to a byte slice, for encoders of composite replies; Writer's
// methods append to a connection's reply buffer, flushed once per
// pipelined batch.

// Writer is a connection's reply buffer and the protocol its replies are
// encoded in.
type Writer struct {
	Buf   []byte
	Proto int // 2 or 3: RESP2 until HELLO negotiates RESP3

	block func(gone <-chan struct{}) // see Block
}

// Block makes the running command a blocking one (WAIT): once the replies
// before it are sent, the connection stops being served while fn runs on a
// goroutine of its own; fn appends the command's reply, and serving goes on
// when it returns. fn must not use the connection otherwise. gone is
// closed if the client hangs up meanwhile: fn should then return at once,
// as Redis frees a blocked client that disconnects.
func (w *Writer) Block(fn func(gone <-chan struct{})) { w.block = fn }

func (w *Writer) Int(n int64)          { w.Buf = AppendInt(w.Buf, n) }
func (w *Writer) Bulk(b []byte)        { w.Buf = AppendBulk(w.Buf, b) }
func (w *Writer) BulkString(s string)  { w.Buf = AppendBulkString(w.Buf, s) }
func (w *Writer) Array(n int)          { w.Buf = AppendArray(w.Buf, n) }
func (w *Writer) OK()                  { w.Buf = AppendOK(w.Buf) }
func (w *Writer) Status(s string)      { w.Buf = AppendStatus(w.Buf, s) }
func (w *Writer) Err(msg string)       { w.Buf = AppendErr(w.Buf, msg) }
func (w *Writer) Null()                { w.Buf = AppendNull(w.Buf, w.Proto) }
func (w *Writer) NullArray()           { w.Buf = AppendNullArray(w.Buf, w.Proto) }
func (w *Writer) Map(n int)            { w.Buf = AppendMap(w.Buf, w.Proto, n) }
func (w *Writer) Set(n int)            { w.Buf = AppendSet(w.Buf, w.Proto, n) }
func (w *Writer) Bool(v bool)          { w.Buf = AppendBool(w.Buf, w.Proto, v) }
func (w *Writer) Verbatim(text string) { w.Buf = AppendVerbatim(w.Buf, w.Proto, text) }

// AppendInt appends an integer reply; single digits, the most common
// values in limiter replies, skip the conversion.
func AppendInt(b []byte, n int64) []byte {
	if uint64(n) < 10 {
		return append(b, ':', byte('0'+n), '\r', '\n')
	}
	if n == -1 { // an admitted decision's retry_after
		return append(b, ":-1\r\n"...)
	}
	return appendLine(b, ':', n)
}

func AppendBulk(b []byte, s []byte) []byte       { return redcon.AppendBulk(b, s) }
func AppendBulkString(b []byte, s string) []byte { return redcon.AppendBulkString(b, s) }
func AppendArray(b []byte, n int) []byte {
	if uint(n) < 10 {
		return append(b, '*', byte('0'+n), '\r', '\n')
	}
	return appendLine(b, '*', int64(n))
}

func AppendOK(b []byte) []byte { return append(b, "+OK\r\n"...) }

// AppendStatus appends a simple string (+s). s must not contain CR or LF.
func AppendStatus(b []byte, s string) []byte {
	b = append(b, '+')
	b = append(b, s...)
	return append(b, '\r', '\n')
}

// AppendErr appends an error reply; msg starts with its code ("ERR ...",
// see errors.go). Errors quote what clients sent, so a CR or LF in msg
// becomes a space, as Redis does: it would end the reply early.
func AppendErr(b []byte, msg string) []byte {
	b = append(b, '-')
	start := len(b)
	b = append(b, msg...)
	if strings.ContainsAny(msg, "\r\n") {
		for i, c := range b[start:] {
			if c == '\r' || c == '\n' {
				b[start+i] = ' '
			}
		}
	}
	return append(b, '\r', '\n')
}

func AppendNull(b []byte, proto int) []byte {
	if proto == 3 {
		return append(b, "_\r\n"...)
	}
	return append(b, "$-1\r\n"...)
}

// AppendNullArray appends RESP2's null array (RESP3's null).
func AppendNullArray(b []byte, proto int) []byte {
	if proto == 3 {
		return append(b, "_\r\n"...)
	}
	return append(b, "*-1\r\n"...)
}

// AppendMap starts a map of n pairs (a flat array of 2n in RESP2).
func AppendMap(b []byte, proto, n int) []byte {
	if proto == 3 {
		return appendLine(b, '%', int64(n))
	}
	return AppendArray(b, 2*n)
}

// AppendSet starts a set of n elements (an array in RESP2).
func AppendSet(b []byte, proto, n int) []byte {
	if proto == 3 {
		return appendLine(b, '~', int64(n))
	}
	return AppendArray(b, n)
}

func AppendBool(b []byte, proto int, v bool) []byte {
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

// AppendVerbatim appends text as a RESP3 verbatim string of format "txt"
// (a bulk string in RESP2), as Redis answers INFO and CLIENT INFO.
func AppendVerbatim[T string | []byte](b []byte, proto int, text T) []byte {
	if proto == 3 {
		b = appendLine(b, '=', int64(len(text)+4))
		b = append(b, "txt:"...)
		b = append(b, text...)
		return append(b, '\r', '\n')
	}
	b = appendLine(b, '$', int64(len(text)))
	b = append(b, text...)
	return append(b, '\r', '\n')
}
