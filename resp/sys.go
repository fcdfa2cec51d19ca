package resp

import (
	"net"
	"os"
)

func pid() int { return os.Getpid() }

func splitHostPort(addr string) (string, string, error) { return net.SplitHostPort(addr) }
