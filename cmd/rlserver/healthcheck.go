package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// healthcheckTimeout bounds the whole check: connecting, AUTH and PING.
// An orchestrator's own timeout (Docker's HEALTHCHECK --timeout, a
// Kubernetes probe's timeoutSeconds) is usually longer.
const healthcheckTimeout = 3 * time.Second

// healthcheck is rlserver --healthcheck: it sends PING to the server on
// o's --bind and --port (loopback when --bind is 0.0.0.0 or ::) and
// returns 0 when the answer is PONG, 1 otherwise, saying why on stderr.
// It needs no shell and no redis-cli, so a container HEALTHCHECK or a
// Kubernetes exec probe can run it in an image holding only the binary.
//
// It authenticates as a primary does to its replicas: --masteruser with
// --masterauth when set, else the default user with --requirepass (so
// RLSERVER_REQUIREPASS, set for the server, serves the check too). The
// plain --port is always open beside --tls-port, so it never needs TLS.
func healthcheck(o *options, stdout, stderr io.Writer) int {
	addr, err := healthcheckAddr(o)
	if err != nil {
		fmt.Fprintf(stderr, "rlserver --healthcheck: %v\n", err)
		return 1
	}
	if err := ping(addr, o.masterUser, firstOf(o.masterAuth, o.requirepass)); err != nil {
		fmt.Fprintf(stderr, "rlserver --healthcheck: %s: %v\n", addr, err)
		return 1
	}
	fmt.Fprintf(stdout, "%s: PONG\n", addr)
	return 0
}

// healthcheckAddr is the address the check connects to.
func healthcheckAddr(o *options) (string, error) {
	if o.port == 0 {
		return "", fmt.Errorf("--port 0 picks a port at random: give the port the server listens on")
	}
	host := "127.0.0.1"
	if b := bindAddrs(o.bind); len(b) > 0 {
		host = b[0].host
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		if ip.To4() != nil {
			host = "127.0.0.1"
		} else {
			host = "::1"
		}
	}
	return net.JoinHostPort(host, strconv.Itoa(o.port)), nil
}

func firstOf(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// ping connects to addr, authenticates when pass is set, and sends PING,
// all within healthcheckTimeout. Any reply but +PONG is an error that
// quotes it (-NOAUTH: a password is needed; -DENIED: protected mode).
func ping(addr, user, pass string) error {
	deadline := time.Now().Add(healthcheckTimeout)
	conn, err := net.DialTimeout("tcp", addr, healthcheckTimeout)
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetDeadline(deadline)
	var req []byte
	if pass != "" {
		if user != "" {
			req = appendCommand(req, "AUTH", user, pass)
		} else {
			req = appendCommand(req, "AUTH", pass)
		}
	}
	req = appendCommand(req, "PING")
	if _, err := conn.Write(req); err != nil {
		return err
	}
	r := bufio.NewReader(conn)
	if pass != "" {
		if line, err := readLine(r); err != nil {
			return fmt.Errorf("AUTH: %v", err)
		} else if line != "+OK" {
			return fmt.Errorf("AUTH answered %q", strings.TrimPrefix(line, "-"))
		}
	}
	line, err := readLine(r)
	if err != nil {
		return fmt.Errorf("PING: %v", err)
	}
	if line != "+PONG" {
		if strings.HasPrefix(line, "-NOAUTH") {
			return fmt.Errorf("PING answered %q: give the password with --requirepass or RLSERVER_REQUIREPASS (--masteruser/--masterauth for an ACL user)", line[1:])
		}
		return fmt.Errorf("PING answered %q", strings.TrimPrefix(line, "-"))
	}
	return nil
}

// appendCommand appends args as a RESP array of bulk strings.
func appendCommand(b []byte, args ...string) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(len(args)), 10)
	b = append(b, '\r', '\n')
	for _, a := range args {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(a)), 10)
		b = append(b, '\r', '\n')
		b = append(b, a...)
		b = append(b, '\r', '\n')
	}
	return b
}

// readLine reads one simple reply line (+..., -...), without its CRLF.
func readLine(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		if err == io.EOF {
			return "", fmt.Errorf("connection closed without a reply")
		}
		return "", err
	}
	return strings.TrimRight(line, "\r\n"), nil
}
