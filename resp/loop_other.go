//go:build !linux

package resp

import (
	"errors"
	"net"
)

// Outside Linux there are no event loops: Config.EventLoops must be 0.

type eventLoop struct{}

type fdReader struct{ budget int }

func (s *Server) startLoops(n int) error {
	return errors.New("resp: event loops need Linux; use a goroutine per connection")
}

func (l *eventLoop) adopt(nc net.Conn) (*Conn, error) { panic("unreachable") }
func (l *eventLoop) add(c *Conn)                      {}
func (l *eventLoop) shutdown()                        {}
func (l *eventLoop) kill(c *Conn)                     {}
func (l *eventLoop) lendOut()                         {}
func closeFD(fd int)                                  {}
