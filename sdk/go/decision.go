// Package rlserver is the Go SDK of rlserver: typed limiters over go-redis,
// a failure policy for when the server cannot be reached, an x/time/rate
// shaped API, and net/http middleware emitting the IETF RateLimit fields.
package rlserver

import (
	"errors"
	"fmt"
	"time"
)

// Never is the RetryAfter of a request that can never be admitted (its cost
// exceeds the limit): the server's -1.
const Never time.Duration = -1

// Decision is the server's five-integer decision reply, typed.
type Decision struct {
	Allowed    bool          // admitted (and consumed)
	Limit      int64         // the most that could ever be admitted at once
	Remaining  int64         // units that could be admitted right now
	RetryAfter time.Duration // denied: wait before retrying (Never: cannot succeed); admitted: delay before acting (reservations, leaky bucket)
	ResetAfter time.Duration // until the key is back to its fresh state
	// Fallback is true when the failure policy decided because the server
	// could not be reached (fail-open, fail-closed or the local limiter).
	Fallback bool
}

// ErrLimited is returned by the scoped and waiting forms when the limiter
// denies the request.
var ErrLimited = errors.New("rlserver: rate limited")

// ErrBadReply means the server answered something that is not a decision.
var ErrBadReply = errors.New("rlserver: unexpected reply")

func msDuration(ms int64) time.Duration {
	if ms < 0 {
		return Never
	}
	return time.Duration(ms) * time.Millisecond
}

// parseDecision reads the first five integers of a decision array.
func parseDecision(v any) (Decision, error) {
	arr, ok := v.([]any)
	if !ok || len(arr) < 5 {
		return Decision{}, fmt.Errorf("%w: %v", ErrBadReply, v)
	}
	var f [5]int64
	for i := range f {
		n, ok := arr[i].(int64)
		if !ok {
			return Decision{}, fmt.Errorf("%w: %v", ErrBadReply, v)
		}
		f[i] = n
	}
	return Decision{
		Allowed:    f[0] == 1,
		Limit:      f[1],
		Remaining:  f[2],
		RetryAfter: msDuration(f[3]),
		ResetAfter: msDuration(f[4]),
	}, nil
}
