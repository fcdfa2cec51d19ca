package shard

import "github.com/rlserver/rlserver/engine"

// Restored is one record a restore applies: a key's state loaded from disk
// or, with State nil, the key's deletion.
type Restored struct {
	Key      []byte
	State    engine.State
	ExpireAt int64
	// Kept, set by RestoreBatch: the keyspace holds State itself (a state
	// it keeps as an object); otherwise it copied it, and State is the
	// caller's to reuse.
	Kept bool
}

// RestoreBatch applies recs in order, each as a key loaded from disk: not
// recorded as a change (the disk already holds it) and never evicting; a
// key restored twice keeps the later state, a deletion removes what came
// before. The keys come in no useful order, so each lookup would wait for
// two cache misses in turn (the index line, then the record): every key's
// index line is asked for first, then the record it likely holds, and only
// then are the records applied. hs is scratch of at least len(recs).
func (s *Store) RestoreBatch(recs []Restored, hs []uint64) {
	for i := range s.shards {
		s.shards[i].Lock()
	}
	defer func() {
		for i := range s.shards {
			s.shards[i].Unlock()
		}
	}()
	now := s.shards[0].clock()
	for i := range s.shards {
		s.shards[i].now = now // restored keys are stamped as accessed now
	}
	hs = hs[:len(recs)]
	for i := range recs {
		hs[i] = s.Hash(recs[i].Key)
		s.ShardOf(hs[i]).prefetchIndex(hs[i])
	}
	for _, h := range hs {
		s.ShardOf(h).prefetchRecord(h)
	}
	for i := range recs {
		r := &recs[i]
		sh := s.ShardOf(hs[i])
		f := sh.lookup(r.Key, hs[i])
		switch {
		case r.State != nil:
			r.Kept = sh.put(f, r.Key, hs[i], r.State, r.ExpireAt, false)
		case f.OK:
			sh.drop(f.pos, f.ref)
		}
	}
}
