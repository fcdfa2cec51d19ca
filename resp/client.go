package resp

import (
	"strconv"
	"strings"
	"time"
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

func cmdClientID(c *Conn, args [][]byte) { c.out = appendInt(c.out, c.id) }

func cmdClientSetName(c *Conn, args [][]byte) {
	if !validClientName(args[2]) {
		c.err(ErrClientName)
		return
	}
	c.mu.Lock()
	c.name = string(args[2])
	c.mu.Unlock()
	c.out = appendOK(c.out)
}

func cmdClientGetName(c *Conn, args [][]byte) {
	c.mu.Lock()
	name := c.name
	c.mu.Unlock()
	if name == "" {
		c.out = appendNull(c.out, c.proto)
		return
	}
	c.out = appendBulkStr(c.out, name)
}

// CLIENT SETINFO LIB-NAME|LIB-VER value
func cmdClientSetInfo(c *Conn, args [][]byte) {
	attr := strings.ToUpper(string(args[2]))
	if attr != "LIB-NAME" && attr != "LIB-VER" {
		c.err(ErrUnrecognizedOption(args[2]))
		return
	}
	if !validClientName(args[3]) {
		c.err(ErrClientAttr(attr))
		return
	}
	c.mu.Lock()
	if attr == "LIB-NAME" {
		c.libName = string(args[3])
	} else {
		c.libVer = string(args[3])
	}
	c.mu.Unlock()
	c.out = appendOK(c.out)
}

// describe renders the connection as one CLIENT LIST line (no newline).
func (c *Conn) describe(now time.Time) string {
	c.mu.Lock()
	name, lib, ver := c.name, c.libName, c.libVer
	c.mu.Unlock()
	cmd := "NULL"
	if lc := c.lastCmd.Load(); lc != nil {
		cmd = lc.Name
	}
	idle := now.Sub(time.Unix(0, c.lastSeen.Load())) / time.Second
	var b strings.Builder
	b.WriteString("id=" + strconv.FormatInt(c.id, 10))
	b.WriteString(" addr=" + c.raddr + " laddr=" + c.laddr + " fd=" + strconv.Itoa(c.fdNum) + " name=" + name)
	b.WriteString(" age=" + strconv.FormatInt(int64(now.Sub(c.created)/time.Second), 10))
	b.WriteString(" idle=" + strconv.FormatInt(int64(idle), 10))
	b.WriteString(" flags=N db=0 sub=0 psub=0 ssub=0 multi=-1 watch=0 qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=0 tot-mem=0 events=r")
	b.WriteString(" cmd=" + cmd + " user=default redir=-1 resp=" + strconv.Itoa(int(c.respVer.Load())))
	b.WriteString(" lib-name=" + lib + " lib-ver=" + ver)
	return b.String()
}

func cmdClientInfo(c *Conn, args [][]byte) {
	c.out = appendVerbatim(c.out, c.proto, c.describe(time.Now())+"\n")
}

// CLIENT LIST [TYPE NORMAL] [ID id [id ...]]
func cmdClientList(c *Conn, args [][]byte) {
	var ids map[int64]bool
	for i := 2; i < len(args); i++ {
		switch {
		case equalFold(args[i], "TYPE") && i+1 < len(args):
			if !equalFold(args[i+1], "NORMAL") {
				c.out = appendVerbatim(c.out, c.proto, "")
				return
			}
			i++
		case equalFold(args[i], "ID") && i+1 < len(args):
			ids = map[int64]bool{}
			for i++; i < len(args); i++ {
				id, ok := ParseInt(args[i])
				if !ok || id <= 0 {
					c.err(ErrClientID)
					return
				}
				ids[id] = true
			}
		default:
			c.err(ErrSyntax)
			return
		}
	}
	s := c.srv
	s.mu.Lock()
	conns := make([]*Conn, 0, len(s.conns))
	for other := range s.conns {
		if ids == nil || ids[other.id] {
			conns = append(conns, other)
		}
	}
	s.mu.Unlock()
	now := time.Now()
	var b strings.Builder
	for _, other := range sortConns(conns) {
		b.WriteString(other.describe(now))
		b.WriteByte('\n')
	}
	c.out = appendVerbatim(c.out, c.proto, b.String())
}

func sortConns(cs []*Conn) []*Conn {
	for i := 1; i < len(cs); i++ {
		for j := i; j > 0 && cs[j].id < cs[j-1].id; j-- {
			cs[j], cs[j-1] = cs[j-1], cs[j]
		}
	}
	return cs
}
