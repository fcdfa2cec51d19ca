package resp_test

import (
	"io"
	"log"
	"net"
	"testing"
	"time"

	"github.com/rlserver/rlserver/resp"
)

// blockHandler's connections answer BLOCK with a blocking command that
// waits for its client to hang up, and report on hungUp that it saw it.
type blockHandler struct{ hungUp chan struct{} }

type blockSession struct {
	w      *resp.Writer
	hungUp chan struct{}
}

func (h blockHandler) NewSession(_ *resp.Server, _ resp.ConnInfo, w *resp.Writer) resp.Session {
	return &blockSession{w: w, hungUp: h.hungUp}
}

func (s *blockSession) Prefetch([][]byte, []int) {}
func (s *blockSession) EndBatch()                {}
func (s *blockSession) Authenticated() bool      { return true }
func (s *blockSession) Close()                   {}

func (s *blockSession) Exec(args [][]byte, _ []byte) bool {
	if string(args[0]) != "BLOCK" {
		s.w.OK()
		return false
	}
	s.w.Block(func(gone <-chan struct{}) {
		select {
		case <-gone:
			s.hungUp <- struct{}{}
		case <-time.After(20 * time.Second):
		}
		s.w.OK()
	})
	return false
}

// TestBlockedClientHangsUp: a client that hangs up while its blocking
// command (WAIT) runs is seen leaving, so the command ends and the
// connection is freed, as Redis frees a blocked client that disconnects.
// Before, a WAIT 2 0 with one replica held its connection for good. With
// event loops and with a goroutine per connection; the client closes
// after a request that came while it was blocked, or right away.
func TestBlockedClientHangsUp(t *testing.T) {
	for _, loops := range []int{0, 2} {
		for _, more := range []string{"", "PING\r\n"} {
			h := blockHandler{hungUp: make(chan struct{}, 1)}
			s := resp.New(resp.Config{EventLoops: loops, Logger: log.New(io.Discard, "", 0)}, h)
			if err := s.Listen("127.0.0.1:0"); err != nil {
				t.Fatal(err)
			}
			go s.Serve()
			nc, err := net.Dial("tcp", s.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := nc.Write([]byte("PING\r\nBLOCK\r\n")); err != nil {
				t.Fatal(err)
			}
			ok := make([]byte, 5)
			nc.SetReadDeadline(time.Now().Add(10 * time.Second))
			if _, err := io.ReadFull(nc, ok); err != nil || string(ok) != "+OK\r\n" {
				t.Fatalf("loops %d: %q %v before BLOCK", loops, ok, err)
			}
			if more != "" {
				nc.Write([]byte(more))
			}
			nc.Close()
			select {
			case <-h.hungUp:
			case <-time.After(10 * time.Second):
				t.Fatalf("loops %d, %q sent while blocked: the blocking command did not see its client hang up", loops, more)
			}
			deadline := time.Now().Add(10 * time.Second)
			for s.NumConns() != 0 {
				if time.Now().After(deadline) {
					t.Fatalf("loops %d: %d connections still served after the client hung up", loops, s.NumConns())
				}
				time.Sleep(10 * time.Millisecond)
			}
			s.Close(time.Second)
		}
	}
}
