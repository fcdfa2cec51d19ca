package command

import (
	"bytes"
	"fmt"
	"strconv"
	"testing"
)

// FuzzExec: any requests, each named from the command table, get one
// well-formed reply each and never panic the server. Each line of the
// input is a request: its first byte picks the command, the rest are its
// arguments, split at spaces. Commands that stop the process or wait
// (SHUTDOWN, DEBUG) are left out.
func FuzzExec(f *testing.F) { fuzzExec(f, false) }

// FuzzExecCluster is FuzzExec in cluster mode, where a command's keys are
// found (and CL.ALL's rules parsed) to route it before it runs: this node
// serves half the slots, another the rest.
func FuzzExecCluster(f *testing.F) { fuzzExec(f, true) }

func fuzzExec(f *testing.F, clustered bool) {
	var names []string
	for _, c := range commandTable() {
		switch c.Name {
		case "shutdown", "debug":
			continue
		}
		names = append(names, c.Name)
	}
	pick := func(name string) byte {
		for i, n := range names {
			if n == name {
				return byte(i)
			}
		}
		panic(name)
	}
	for _, seed := range [][]string{
		{"cl.throttle k 10 5 60", "cl.throttle k 10 5 60 3"},
		{"cl.all 2 TOKENBUCKET a 5 1 1s WINDOW b 3 10s LOG", "type a", "pttl b"},
		{"cl.acquire l 3 10s", "cl.renew l x 5s", "cl.release l x"},
		{"multi", "gcra g 5 10 60", "cl.window w 3 1s SLIDING", "exec"},
		{"hello 3", "config get *", "info all", "scan 0 MATCH * COUNT 5"},
		{"cl.leakybucket q 10 2 1s 3", "del q", "exists q"},
		{"client setname x", "client list", "acl whoami", "acl setuser u on >p ~k* +@ratelimit"},
	} {
		var in []byte
		for _, line := range seed {
			name, rest, _ := bytes.Cut([]byte(line), []byte(" "))
			in = append(append(append(in, pick(string(name))), rest...), '\n')
		}
		f.Add(in)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		c, _ := seededConn(2, 1)
		if clustered {
			c.h.SetCluster(twoShards(t), nil)
		}
		var sent []string
		for _, line := range bytes.Split(in, []byte("\n")) {
			if len(line) == 0 {
				continue
			}
			args := [][]byte{[]byte(names[int(line[0])%len(names)])}
			if len(line) > 1 {
				args = append(args, bytes.Split(line[1:], []byte(" "))...)
			}
			sent = append(sent, fmt.Sprintf("%q", args))
			c.W.Buf = c.W.Buf[:0]
			c.exec(args)
			c.EndBatch()
			rest, err := skipReply(c.W.Buf)
			if err == nil && len(rest) > 0 {
				err = fmt.Errorf("%q after the reply", rest)
			}
			if err != nil {
				t.Fatalf("after %v: reply %q: %v", sent, c.W.Buf, err)
			}
			if c.sess.quit {
				return
			}
		}
	})
}

// skipReply returns what follows the first RESP2 or RESP3 reply in b.
func skipReply(b []byte) ([]byte, error) {
	line, rest, ok := bytes.Cut(b, []byte("\r\n"))
	if !ok || len(line) == 0 {
		return nil, fmt.Errorf("no complete reply line")
	}
	body := line[1:]
	count := func() (int, error) {
		n, err := strconv.Atoi(string(body))
		if err != nil || n < -1 {
			return 0, fmt.Errorf("bad length %q", body)
		}
		return n, nil
	}
	switch line[0] {
	case '+', '-', ':', '_', ',', '#', '(':
		if bytes.ContainsAny(body, "\r\n") {
			return nil, fmt.Errorf("line %q", line)
		}
		return rest, nil
	case '$', '!', '=':
		n, err := count()
		if err != nil || n == -1 {
			return rest, err
		}
		if len(rest) < n+2 || string(rest[n:n+2]) != "\r\n" {
			return nil, fmt.Errorf("bulk of %d not terminated", n)
		}
		return rest[n+2:], nil
	case '*', '~', '>', '%', '|':
		n, err := count()
		if err != nil || n == -1 {
			return rest, err
		}
		if line[0] == '%' || line[0] == '|' {
			n *= 2
		}
		for range n {
			if rest, err = skipReply(rest); err != nil {
				return nil, err
			}
		}
		if line[0] == '|' { // an attribute precedes the reply it annotates
			return skipReply(rest)
		}
		return rest, nil
	}
	return nil, fmt.Errorf("unknown type %q", line[0])
}
