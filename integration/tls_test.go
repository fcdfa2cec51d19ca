package integration

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// testPKI is a CA and what it signed, written as PEM files in dir.
type testPKI struct {
	dir    string
	ca     *x509.Certificate
	caKey  *ecdsa.PrivateKey
	caPool *x509.CertPool
}

func newPKI(t *testing.T) *testPKI {
	t.Helper()
	p := &testPKI{dir: t.TempDir()}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	p.ca, _ = x509.ParseCertificate(der)
	p.caKey = key
	p.caPool = x509.NewCertPool()
	p.caPool.AddCert(p.ca)
	p.write(t, "ca.pem", "CERTIFICATE", der)
	return p
}

func (p *testPKI) write(t *testing.T, name, typ string, der []byte) string {
	t.Helper()
	path := filepath.Join(p.dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// issue signs a certificate (serial, for the server at 127.0.0.1 or for a
// client) and writes name.pem and name-key.pem.
func (p *testPKI) issue(t *testing.T, name string, serial int64, client bool) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	if client {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	} else {
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	p.write(t, name+".pem", "CERTIFICATE", der)
	p.write(t, name+"-key.pem", "EC PRIVATE KEY", kder)
	cert, err := tls.LoadX509KeyPair(filepath.Join(p.dir, name+".pem"), filepath.Join(p.dir, name+"-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

var tlsLineRE = regexp.MustCompile(`TLS: listening on (127\.0\.0\.1:\d+)`)

// startTLS starts a server with a TLS port and returns it and that port's
// address.
func startTLS(t *testing.T, p *testPKI, auth string) (*server, string) {
	t.Helper()
	s := startIn(t, "", "--tls-port", "0", "--tls-cert-file", filepath.Join(p.dir, "server.pem"),
		"--tls-key-file", filepath.Join(p.dir, "server-key.pem"), "--tls-ca-cert-file", filepath.Join(p.dir, "ca.pem"),
		"--tls-auth-clients", auth)
	m := tlsLineRE.FindStringSubmatch(s.logs.String())
	if m == nil {
		t.Fatalf("no TLS listening line:\n%s", s.logs)
	}
	return s, m[1]
}

// TestTLS: go-redis and redis-cli --tls reach the TLS port; with
// --tls-auth-clients yes a client without a certificate is refused, with
// optional it is served; SIGHUP loads a new certificate; the plain port
// goes on working.
func TestTLS(t *testing.T) {
	t.Parallel()
	p := newPKI(t)
	p.issue(t, "server", 10, false)
	client := p.issue(t, "client", 20, true)

	s, addr := startTLS(t, p, "yes")
	c := redis.NewClient(&redis.Options{Addr: addr, TLSConfig: &tls.Config{RootCAs: p.caPool, Certificates: []tls.Certificate{client}, MinVersion: tls.VersionTLS12}})
	defer c.Close()
	if got, err := c.Do(ctx, "CL.THROTTLE", "tls", 1, 10, 60).Slice(); err != nil || len(got) != 5 || got[0] != int64(0) {
		t.Fatalf("CL.THROTTLE over TLS = %v, %v", got, err)
	}
	anon := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, TLSConfig: &tls.Config{RootCAs: p.caPool, MinVersion: tls.VersionTLS12}})
	defer anon.Close()
	if err := anon.Ping(ctx).Err(); err == nil {
		t.Fatal("a client without a certificate was served under --tls-auth-clients yes")
	}
	old := &tls.Config{RootCAs: p.caPool, Certificates: []tls.Certificate{client}, MaxVersion: tls.VersionTLS11}
	if nc, err := tls.Dial("tcp", addr, old); err == nil {
		nc.Close()
		t.Fatal("a TLS 1.1 handshake succeeded")
	}
	out, err := exec.Command("redis-cli", "--tls", "--cacert", filepath.Join(p.dir, "ca.pem"), "--cert", filepath.Join(p.dir, "client.pem"),
		"--key", filepath.Join(p.dir, "client-key.pem"), "-h", "127.0.0.1", "-p", strings.Split(addr, ":")[1], "PING").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "PONG" {
		t.Fatalf("redis-cli --tls PING: %v %q", err, out)
	}
	if err := s.client(t, 2).Ping(ctx).Err(); err != nil {
		t.Fatalf("the plain port: %v", err)
	}

	// A new certificate, loaded on SIGHUP.
	p.issue(t, "server", 11, false)
	if err := s.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the new certificate served", func() bool {
		nc, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: p.caPool, Certificates: []tls.Certificate{client}})
		if err != nil {
			return false
		}
		defer nc.Close()
		return nc.ConnectionState().PeerCertificates[0].SerialNumber.Int64() == 11
	})

	// CONFIG SET tls-cert-file / tls-key-file: a new pair served at once;
	// a bad one refused with nothing changed.
	p.issue(t, "renewed", 12, false)
	admin := s.client(t, 2)
	renewed, renewedKey := filepath.Join(p.dir, "renewed.pem"), filepath.Join(p.dir, "renewed-key.pem")
	do(t, admin, "CONFIG", "SET", "tls-cert-file", renewed, "tls-key-file", renewedKey).equal("OK")
	do(t, admin, "CONFIG", "GET", "tls-cert-file").equal([]any{"tls-cert-file", renewed})
	nc, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: p.caPool, Certificates: []tls.Certificate{client}})
	if err != nil || nc.ConnectionState().PeerCertificates[0].SerialNumber.Int64() != 12 {
		t.Fatalf("after CONFIG SET tls-cert-file: %v, want the certificate with serial 12", err)
	}
	nc.Close()
	r := do(t, admin, "CONFIG", "SET", "tls-cert-file", filepath.Join(p.dir, "server.pem"), "maxclients", "77")
	if r.err == nil || !strings.HasPrefix(r.err.Error(), "ERR CONFIG SET failed (possibly related to argument 'tls-cert-file') - Unable to update TLS configuration: ") {
		t.Fatalf("a certificate that does not match the key: %v", r.err)
	}
	do(t, admin, "CONFIG", "GET", "maxclients").equal([]any{"maxclients", "10000"})
	do(t, admin, "CONFIG", "GET", "tls-cert-file").equal([]any{"tls-cert-file", renewed})
	plain := startIn(t, "")
	do(t, plain.client(t, 2), "CONFIG", "SET", "tls-cert-file", renewed).errIs("ERR CONFIG SET failed (possibly related to argument 'tls-cert-file') - TLS is not enabled: start the server with --tls-port")

	_, addr2 := startTLS(t, p, "optional")
	anon2 := redis.NewClient(&redis.Options{Addr: addr2, TLSConfig: &tls.Config{RootCAs: p.caPool, MinVersion: tls.VersionTLS12}})
	defer anon2.Close()
	if err := anon2.Ping(ctx).Err(); err != nil {
		t.Fatalf("a client without a certificate under --tls-auth-clients optional: %v", err)
	}
}

// TestTLSFlagsRefused: TLS flags that cannot work stop the start, exit 2.
func TestTLSFlagsRefused(t *testing.T) {
	t.Parallel()
	p := newPKI(t)
	p.issue(t, "server", 10, false)
	cert, key := filepath.Join(p.dir, "server.pem"), filepath.Join(p.dir, "server-key.pem")
	for _, args := range [][]string{
		{"--tls-port", "0", "--tls-cert-file", cert},
		{"--tls-port", "0", "--tls-cert-file", cert, "--tls-key-file", key}, // auth-clients yes without a CA
		{"--tls-port", "0", "--tls-cert-file", cert, "--tls-key-file", filepath.Join(p.dir, "missing.pem"), "--tls-auth-clients", "no"},
		{"--tls-port", "x"},
		{"--tls-port", "0", "--tls-cert-file", cert, "--tls-key-file", key, "--tls-auth-clients", "maybe"},
	} {
		out, err := serverCommand(append([]string{"--port", "0", "--dir", ""}, args...)...).CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(out), "tls") {
			t.Errorf("%v: %v, want exit 2 naming the TLS flag:\n%s", args, err, out)
		}
	}
}
