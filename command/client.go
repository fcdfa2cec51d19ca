package command

import (
	"strings"
	"time"

	"github.com/rlserver/rlserver/resp"
)

// validClientName: printable ASCII without spaces, as Redis requires.
func validClientName(b []byte) bool {
	for _, ch := range b {
		if ch < '!' || ch > '~' {
			return false
		}
	}
	return true
}

func cmdClientID(c *Ctx, args [][]byte) { c.W.Buf = resp.AppendInt(c.W.Buf, c.sess.info.ID) }

func cmdClientSetName(c *Ctx, args [][]byte) {
	if !validClientName(args[2]) {
		c.err(resp.ErrClientName)
		return
	}
	c.sess.setName(string(args[2]))
	c.W.OK()
}

func cmdClientGetName(c *Ctx, args [][]byte) {
	c.sess.mu.Lock()
	name := c.sess.name
	c.sess.mu.Unlock()
	if name == "" {
		c.W.Null()
		return
	}
	c.W.BulkString(name)
}

// CLIENT SETINFO LIB-NAME|LIB-VER value
func cmdClientSetInfo(c *Ctx, args [][]byte) {
	attr := strings.ToUpper(string(args[2]))
	if attr != "LIB-NAME" && attr != "LIB-VER" {
		c.err(resp.ErrUnrecognizedOption(args[2]))
		return
	}
	if !validClientName(args[3]) {
		c.err(resp.ErrClientAttr(attr))
		return
	}
	c.sess.mu.Lock()
	if attr == "LIB-NAME" {
		c.sess.libName = string(args[3])
	} else {
		c.sess.libVer = string(args[3])
	}
	c.sess.mu.Unlock()
	c.W.OK()
}

func cmdClientInfo(c *Ctx, args [][]byte) {
	c.W.Verbatim(c.sess.describe(time.Now()) + "\n")
}

// CLIENT LIST [TYPE NORMAL] [ID id [id ...]]
func cmdClientList(c *Ctx, args [][]byte) {
	var ids map[int64]bool
	for i := 2; i < len(args); i++ {
		switch {
		case equalFold(args[i], "TYPE") && i+1 < len(args):
			if !equalFold(args[i+1], "NORMAL") {
				c.W.Verbatim("")
				return
			}
			i++
		case equalFold(args[i], "ID") && i+1 < len(args):
			ids = map[int64]bool{}
			for i++; i < len(args); i++ {
				id, ok := resp.ParseInt(args[i])
				if !ok || id <= 0 {
					c.err(resp.ErrClientID)
					return
				}
				ids[id] = true
			}
		default:
			c.err(resp.ErrSyntax)
			return
		}
	}
	now := time.Now()
	var b strings.Builder
	for _, other := range c.srv.Clients() {
		if ids == nil || ids[other.ID] {
			b.WriteString(sessionOf(other).describe(now))
			b.WriteByte('\n')
		}
	}
	c.W.Verbatim(b.String())
}
