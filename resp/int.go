package resp

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
