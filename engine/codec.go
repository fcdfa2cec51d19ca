package engine

import "fmt"

// Decode restores a state of kind k from the bytes its AppendBinary wrote
// (parameters and state; the kind byte is stored beside them by the
// caller). Unknown kinds and unreadable bytes return an error wrapping
// ErrCorrupt.
func Decode(k Kind, b []byte) (State, error) {
	var (
		st  State
		err error
	)
	switch k {
	case KindThrottle:
		st, err = decodeGCRA(b)
	case KindTokenBucket:
		st, err = decodeTokenBucket(b)
	case KindLeakyBucket:
		st, err = decodeLeakyBucket(b)
	case KindWindow:
		st, err = decodeWindow(b)
	case KindConcurrency:
		st, err = decodeConcurrency(b)
	default:
		return nil, fmt.Errorf("%w: unknown kind %d", ErrCorrupt, k)
	}
	if err != nil {
		return nil, err
	}
	return st, nil
}
