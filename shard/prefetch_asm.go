//go:build amd64 || arm64

package shard

import "unsafe"

// prefetch asks the CPU to bring the cache line at p into the cache without
// waiting for it (PREFETCHT0, PRFM): unlike a load, it does not hold up the
// instructions after it, so many misses overlap.
//
//go:noescape
func prefetch(p unsafe.Pointer)
