package rls

import "strconv"

// Keys: each rule's state for one descriptor is the rlserver key
//
//	rls:<domain>:<key>=<value>:...:<algorithm>/<window>s
//
// for example rls:api:remote_address=10.0.0.1:path=%2Fv1:fixed_window/60s.
// ':', '=', '%', the hash-tag braces and control bytes inside a domain,
// key or value are percent-encoded, so that no two descriptors share a key
// (envoyproxy/ratelimit joins them with '_': a_b=c and a=b_c collide) and a
// value cannot pick a cluster slot with a hash tag. The rule's algorithm
// and window are part of the key: limits of different units on one
// descriptor count apart, and a change of algorithm starts afresh instead
// of meeting a key of another kind. SCAN MATCH rls:<domain>:* lists a
// domain's keys.

const hexDigits = "0123456789ABCDEF"

func appendEscaped(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c <= ' ' || c == 0x7f || c == '%' || c == ':' || c == '=' || c == '{' || c == '}':
			b = append(b, '%', hexDigits[c>>4], hexDigits[c&15])
		default:
			b = append(b, c)
		}
	}
	return b
}

// appendKey appends the key of rule r for a descriptor of domain whose
// entries have keys from entries and the counted values.
func appendKey(b []byte, domain string, entries []Entry, values []string, r *Rule) []byte {
	b = append(b, "rls:"...)
	b = appendEscaped(b, domain)
	for i, e := range entries {
		b = append(b, ':')
		b = appendEscaped(b, e.Key)
		b = append(b, '=')
		b = appendEscaped(b, values[i])
	}
	b = append(b, ':')
	b = append(b, r.Algorithm.String()...)
	b = append(b, '/')
	b = strconv.AppendInt(b, r.WindowSeconds(), 10)
	b = append(b, 's')
	return b
}
