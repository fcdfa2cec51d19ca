package rlserver

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"
)

// MiddlewareOptions configure Middleware.
type MiddlewareOptions struct {
	Limiter Limiter
	// Policy names the quota policy in the RateLimit fields (default "default").
	Policy string
	// Key derives the limited key from the request (client IP, API key,
	// user id); "" lets the request through unlimited. Default: KeyByIP.
	Key func(*http.Request) string
	// KeyPrefix is put before every key, so that two limiters on one
	// server never share one (their state would collide, or answer
	// WRONGTYPE). Default: "rl:<Policy>:<kind>:", kind being the limiter's
	// Kind() ("tokenbucket", "sliding", ...), e.g. "rl:default:tokenbucket:".
	KeyPrefix string
	// RawKeys sends Key's result as it is, without KeyPrefix.
	RawKeys bool
	// Cost is the units a request takes (default 1).
	Cost func(*http.Request) int64
	// XRateLimit also sets X-RateLimit-Limit, -Remaining and -Reset.
	XRateLimit bool
	// Denied answers a denied request after the headers are set (default:
	// 429 with a short text body).
	Denied http.Handler
	// Error answers when the limiter fails and the failure policy is
	// FailError (default: 503).
	Error func(http.ResponseWriter, *http.Request, error)
}

// Middleware limits an http.Handler: each request's key is decided by the
// limiter (a Concurrency limiter holds a lease while the handler runs), the RateLimit and RateLimit-Policy fields
// (draft-ietf-httpapi-ratelimit-headers-11) are set, and a denied request
// gets 429 with Retry-After. It panics if Policy is not a valid
// structured-field string (see SetHeaders).
func Middleware(o MiddlewareOptions) func(http.Handler) http.Handler {
	if o.Policy == "" {
		o.Policy = "default"
	}
	if _, err := sfString(o.Policy); err != nil {
		panic(err)
	}
	if o.RawKeys {
		o.KeyPrefix = ""
	} else if o.KeyPrefix == "" {
		kind := "limiter"
		if k, ok := o.Limiter.(interface{ Kind() string }); ok {
			kind = k.Kind()
		}
		o.KeyPrefix = "rl:" + o.Policy + ":" + kind + ":"
	}
	if o.Key == nil {
		o.Key = KeyByIP
	}
	if o.Denied == nil {
		o.Denied = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "rate limit exceeded", http.StatusTooManyRequests)
		})
	}
	if o.Error == nil {
		o.Error = func(w http.ResponseWriter, _ *http.Request, _ error) {
			http.Error(w, "rate limiter unavailable", http.StatusServiceUnavailable)
		}
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			key := o.Key(r)
			if key == "" {
				next.ServeHTTP(w, r)
				return
			}
			key = o.KeyPrefix + key
			n := int64(1)
			if o.Cost != nil {
				n = o.Cost(r)
			}
			var d Decision
			var err error
			if cc, ok := o.Limiter.(*Concurrency); ok {
				// A concurrency limit holds its lease for the request only.
				var lease *Lease
				lease, d, err = cc.Acquire(r.Context(), key, n)
				if lease != nil {
					defer lease.Release(context.WithoutCancel(r.Context()))
				}
			} else {
				d, err = o.Limiter.Decide(r.Context(), key, n)
			}
			if err != nil {
				o.Error(w, r, err)
				return
			}
			SetHeaders(w.Header(), o.Policy, o.Limiter.Window(), d, o.XRateLimit)
			if !d.Allowed {
				o.Denied.ServeHTTP(w, r)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// sfString serializes s as an RFC 8941 sf-string: "..." holding only
// printable ASCII (0x20-0x7E), with " and \ escaped by a backslash. A
// string with any other byte (control characters, non-ASCII) cannot be one.
func sfString(s string) (string, error) {
	b := make([]byte, 0, len(s)+2)
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c > 0x7e {
			return "", fmt.Errorf("rlserver: policy name %q: an RFC 8941 string holds printable ASCII only (byte %#x at %d)", s, c, i)
		}
		if c == '"' || c == '\\' {
			b = append(b, '\\')
		}
		b = append(b, c)
	}
	return string(append(b, '"')), nil
}

// ceilSeconds rounds a duration up to whole seconds.
func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}

// SetHeaders sets the response fields for decision d under the named policy:
//
//	RateLimit-Policy: "<policy>";q=<limit>;w=<window s>
//	RateLimit: "<policy>";r=<remaining>;t=<reset after s>
//	Retry-After: <retry after s>        (denied, unless it can never succeed)
//	X-RateLimit-Limit/-Remaining/-Reset (if x; Reset in seconds from now)
//
// Seconds are rounded up, so a client never retries early. The policy name
// is an RFC 8941 string: printable ASCII, with " and \ escaped; SetHeaders
// panics on any other character (Middleware refuses such a name at start).
func SetHeaders(h http.Header, policy string, window time.Duration, d Decision, x bool) {
	name, err := sfString(policy)
	if err != nil {
		panic(err)
	}
	reset := strconv.FormatInt(ceilSeconds(d.ResetAfter), 10)
	remaining := strconv.FormatInt(d.Remaining, 10)
	limit := strconv.FormatInt(d.Limit, 10)
	h.Set("RateLimit-Policy", name+";q="+limit+";w="+strconv.FormatInt(max(1, ceilSeconds(window)), 10))
	h.Set("RateLimit", name+";r="+remaining+";t="+reset)
	if !d.Allowed && d.RetryAfter != Never {
		h.Set("Retry-After", strconv.FormatInt(max(1, ceilSeconds(d.RetryAfter)), 10))
	}
	if x {
		h.Set("X-RateLimit-Limit", limit)
		h.Set("X-RateLimit-Remaining", remaining)
		h.Set("X-RateLimit-Reset", reset)
	}
}

// KeyByIP keys requests by the client's IP address (RemoteAddr without the
// port). Behind a proxy, derive the key from the header the proxy sets.
func KeyByIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
