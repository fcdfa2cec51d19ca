package command

import (
	"testing"

	"github.com/rlserver/rlserver/resp"
)

// TestCommandReplyCached: COMMAND, built once per protocol and copied
// after, answers each protocol what building it anew gives.
func TestCommandReplyCached(t *testing.T) {
	c, _ := testConn(0)
	fresh := func(proto int) string {
		b := resp.AppendArray(nil, len(c.h.table.cmds))
		for _, cmd := range c.h.table.cmds {
			b = appendCommandInfo(b, proto, cmd)
		}
		return string(b)
	}
	if fresh(2) == fresh(3) {
		t.Fatal("COMMAND's RESP2 and RESP3 replies are alike: this test cannot tell them apart")
	}
	for _, proto := range []int{2, 3, 2, 3} {
		c.W.Proto, c.W.Buf = proto, c.W.Buf[:0]
		c.exec(argsOf("COMMAND"))
		if got := string(c.W.Buf); got != fresh(proto) {
			t.Fatalf("RESP%d: COMMAND answered %d bytes unlike the %d built anew", proto, len(got), len(fresh(proto)))
		}
	}
}
