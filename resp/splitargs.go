package resp

// SplitArgs splits line into arguments as Redis's sdssplitargs does (the
// rules of inline requests: quotes, escapes, spaces); line is not changed.
// It reports false on unbalanced quotes.
func SplitArgs(line []byte) ([][]byte, bool) {
	return sdsSplitArgs(append([]byte(nil), line...), nil)
}
