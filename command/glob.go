package command

// globMatch reports whether str matches the glob pattern with Redis's
// stringmatchlen rules: * ? [abc] [^abc] [a-z] and \ escapes, case-sensitive.
func globMatch(pattern []byte, str string) bool {
	return globMatchDepth(pattern, str, 0)
}

func globMatchDepth(p []byte, s string, depth int) bool {
	if depth > 1000 {
		return false // pathological patterns: Redis bounds the recursion too
	}
	for len(p) > 0 {
		switch p[0] {
		case '*':
			for len(p) > 1 && p[1] == '*' {
				p = p[1:]
			}
			if len(p) == 1 {
				return true
			}
			for i := 0; i <= len(s); i++ {
				if globMatchDepth(p[1:], s[i:], depth+1) {
					return true
				}
			}
			return false
		case '?':
			if len(s) == 0 {
				return false
			}
			s = s[1:]
		case '[':
			if len(s) == 0 {
				return false
			}
			p = p[1:]
			not := len(p) > 0 && p[0] == '^'
			if not {
				p = p[1:]
			}
			match := false
			for len(p) > 0 && p[0] != ']' {
				switch {
				case p[0] == '\\' && len(p) >= 2:
					p = p[1:]
					if p[0] == s[0] {
						match = true
					}
				case len(p) >= 3 && p[1] == '-':
					lo, hi := p[0], p[2]
					if lo > hi {
						lo, hi = hi, lo
					}
					if s[0] >= lo && s[0] <= hi {
						match = true
					}
					p = p[2:]
				default:
					if p[0] == s[0] {
						match = true
					}
				}
				p = p[1:]
			}
			if len(p) == 0 {
				return false // unterminated class matches nothing, as in Redis 7.4
			}
			if not {
				match = !match
			}
			if !match {
				return false
			}
			s = s[1:]
		case '\\':
			if len(p) >= 2 {
				p = p[1:]
			}
			fallthrough
		default:
			if len(s) == 0 || p[0] != s[0] {
				return false
			}
			s = s[1:]
		}
		p = p[1:]
	}
	return len(s) == 0
}
