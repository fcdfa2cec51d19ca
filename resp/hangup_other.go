//go:build !linux

package resp

import "net"

// watchHangup: elsewhere, a client hanging up during a blocking command is
// seen when the command returns.
func watchHangup(net.Conn) (gone <-chan struct{}, stop func()) {
	return make(chan struct{}), func() {}
}
