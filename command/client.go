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
		c.err(errClientName)
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
		c.err(errUnrecognizedOption(args[2]))
		return
	}
	if !validClientName(args[3]) {
		c.err(errClientAttr(attr))
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
	c.sess.lastCmd.Store(c.sess.last) // cmd= shows this command, as Redis
	c.W.Buf = resp.AppendVerbatim(c.W.Buf, c.W.Proto, append(c.sess.appendDescription(nil, time.Now(), false), '\n'))
}

// CLIENT LIST [TYPE NORMAL] [ID id [id ...]]
func cmdClientList(c *Ctx, args [][]byte) {
	c.sess.lastCmd.Store(c.sess.last) // the caller's cmd= shows this command, as Redis
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
					c.err(errClientID)
					return
				}
				ids[id] = true
			}
		default:
			c.err(errSyntax)
			return
		}
	}
	now := time.Now()
	clients := c.srv.Clients()
	b := make([]byte, 0, len(clients)*360) // a line is about 300 bytes
	for _, other := range clients {
		if ids == nil || ids[other.ID] {
			b = append(sessionOf(other).appendDescription(b, now, other.Blocked), '\n')
		}
	}
	c.W.Buf = resp.AppendVerbatim(c.W.Buf, c.W.Proto, b)
}

// CLIENT TRACKING ON|OFF [REDIRECT id] [PREFIX p ...] [BCAST] [OPTIN]
// [OPTOUT] [NOLOOP]. rlserver sends no invalidation messages, so it takes
// tracking only in OPTIN mode, where nothing is cached unless a read is
// asked to be (CLIENT CACHING YES), and refuses such reads: clients that
// turn tracking on at connect (rueidis) work, and never cache a reply.
func cmdClientTracking(c *Ctx, args [][]byte) {
	var on bool
	switch {
	case equalFold(args[2], "ON"):
		on = true
	case equalFold(args[2], "OFF"):
	default:
		c.err(errSyntax)
		return
	}
	optin, other := false, false
	var redirect int64
	for i := 3; i < len(args); i++ {
		switch {
		case equalFold(args[i], "OPTIN"):
			optin = true
		case equalFold(args[i], "NOLOOP"):
		case equalFold(args[i], "OPTOUT"), equalFold(args[i], "BCAST"):
			other = true
		case equalFold(args[i], "PREFIX") && i+1 < len(args):
			other = true
			i++
		case equalFold(args[i], "REDIRECT") && i+1 < len(args):
			id, ok := resp.ParseInt(args[i+1])
			if !ok {
				c.err(errNotInt)
				return
			}
			if !c.clientExists(id) {
				c.err(errRedirectNoClient)
				return
			}
			redirect = id
			i++
		default:
			c.err(errSyntax)
			return
		}
	}
	if !on {
		c.sess.tracking, c.sess.redirect, c.sess.caching = false, 0, false
		c.W.OK()
		return
	}
	if !optin || other {
		c.err(errTrackingMode)
		return
	}
	c.sess.tracking, c.sess.redirect = true, redirect
	c.W.OK()
}

// CLIENT CACHING YES|NO
func cmdClientCaching(c *Ctx, args [][]byte) {
	switch {
	case !c.sess.tracking:
		c.err(errCachingMode)
	case equalFold(args[2], "YES"):
		c.sess.caching = true
		c.W.OK()
	case equalFold(args[2], "NO"):
		c.err(errCachingNo)
	default:
		c.err(errSyntax)
	}
}

// CLIENT GETREDIR: -1 without tracking, else the redirect's id (0: none).
func cmdClientGetRedir(c *Ctx, args [][]byte) {
	if !c.sess.tracking {
		c.W.Int(-1)
		return
	}
	c.W.Int(c.sess.redirect)
}

// clientExists reports whether a connection with this id is served.
func (c *Ctx) clientExists(id int64) bool {
	for _, cl := range c.srv.Clients() {
		if cl.ID == id {
			return true
		}
	}
	return false
}
