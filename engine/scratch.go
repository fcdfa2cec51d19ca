package engine

// Scratch holds reusable states to decode stored records into, one per
// kind, so that a read-modify-write allocates nothing in steady state. LOG
// windows get a state of their own: decoding a FIXED or SLIDING window
// drops the log ring a LOG window reuses. A Scratch is not safe for
// concurrent use; its owner (a keyspace shard) uses it under its lock.
type Scratch struct {
	st  [len(kinds)]State
	log State
}

// For returns the scratch state of kind k to decode payload (a compact
// encoding, nil for a fresh key) into, creating it on first use. It returns
// nil for an unknown kind.
func (s *Scratch) For(k Kind, payload []byte) State {
	if int(k) >= len(s.st) {
		return nil
	}
	p := &s.st[k]
	if k == KindWindow && len(payload) > 0 && WindowMode(payload[0]&3) == WindowLog {
		p = &s.log
	}
	if *p == nil {
		*p = k.New()
	}
	return *p
}

// Forget drops st from the scratch states: its caller keeps it (the
// keyspace stored it as an object), so For must never hand it out again.
func (s *Scratch) Forget(st State) {
	for i := range s.st {
		if s.st[i] == st {
			s.st[i] = nil
		}
	}
	if s.log == st {
		s.log = nil
	}
}
