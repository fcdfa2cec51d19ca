//go:build !amd64 && !arm64

package shard

import "unsafe"

// prefetch does nothing where rlserver has no prefetch instruction for the
// CPU: warming a batch (Store.Warm) is then a no-op.
func prefetch(p unsafe.Pointer) {}
