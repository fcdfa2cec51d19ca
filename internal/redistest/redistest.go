// Package redistest starts Debian's redis-server for differential tests:
// the same requests to it and to rlserver's code, replies compared.
package redistest

import (
	"net"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/ports"
)

// Start runs redis-server on a free loopback port, in memory, until the
// test ends, and returns its address once it accepts connections.
func Start(t testing.TB) string {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatalf("redis-server is not installed (%v): run ./scripts/setup.sh", err)
	}
	p, err := ports.Free()
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(p)
	addr := "127.0.0.1:" + port
	cmd := exec.Command("redis-server", "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", t.TempDir())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for deadline := time.Now().Add(20 * time.Second); ; {
		nc, err := net.Dial("tcp", addr)
		if err == nil {
			nc.Close()
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server does not answer at %s: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond) // polling for the server's port
	}
}
