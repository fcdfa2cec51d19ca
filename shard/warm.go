package shard

import "math/bits"

// Warm starts loading, for each hash in hs, the key's index group and then
// the record it likely holds, so that commands on those keys soon after
// find them in the cache: the loads of a pass do not wait for one another,
// so their misses overlap. It is a hint, never worth a wait: it takes, in
// index order, only the shard locks that are free, warms the keys of
// those shards, and gives the locks back. It reorders hs. Safe for
// concurrent use.
func (s *Store) Warm(hs []uint64) {
	// The shards to lock, in index order, once each: a bit set.
	var want, held [MaxShards / 64]uint64
	for _, h := range hs {
		i := s.ShardIndexOf(h)
		want[i/64] |= 1 << (i % 64)
	}
	for w, set := range want {
		for set != 0 {
			b := set & -set
			set &^= b
			if s.shards[w*64+bits.TrailingZeros64(b)].TryLock() {
				held[w] |= b
			}
		}
	}
	m := 0 // the keys in shards held, first
	for _, h := range hs {
		if i := s.ShardIndexOf(h); held[i/64]&(1<<(i%64)) != 0 {
			hs[m] = h
			m++
		}
	}
	for _, h := range hs[:m] {
		s.ShardOf(h).prefetchIndex(h)
	}
	for _, h := range hs[:m] {
		s.ShardOf(h).prefetchRecord(h)
	}
	for w, set := range held {
		for set != 0 {
			b := set & -set
			set &^= b
			s.shards[w*64+bits.TrailingZeros64(b)].Unlock()
		}
	}
}
