package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
)

// tlsCerts serves the server's certificate to each handshake, and loads
// it again (SIGHUP, CONFIG SET tls-cert-file) without a restart.
type tlsCerts struct {
	mu                sync.Mutex // guards the file names
	certFile, keyFile string
	cert              atomic.Pointer[tls.Certificate]
}

// load reads the current files again (at start, on SIGHUP).
func (c *tlsCerts) load() error {
	apply, err := c.Load(c.Files())
	if err != nil {
		return fmt.Errorf("--tls-cert-file/--tls-key-file: %w", err)
	}
	apply()
	return nil
}

// Files returns the certificate and key files (command.TLSCerts).
func (c *tlsCerts) Files() (cert, key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.certFile, c.keyFile
}

// Load reads a certificate and key; apply serves them from the next
// handshake on, and makes them the files SIGHUP reloads (command.TLSCerts).
func (c *tlsCerts) Load(certFile, keyFile string) (apply func(), err error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, err
	}
	return func() {
		c.mu.Lock()
		c.certFile, c.keyFile = certFile, keyFile
		c.mu.Unlock()
		c.cert.Store(&cert)
	}, nil
}

// tlsConfig returns the TLS configuration of --tls-port (TLS 1.2 and up),
// and the certificates to reload, or an error naming the flag at fault.
func tlsConfig(o *options) (*tls.Config, *tlsCerts, error) {
	if o.tlsCert == "" || o.tlsKey == "" {
		return nil, nil, fmt.Errorf("--tls-port needs --tls-cert-file and --tls-key-file")
	}
	certs := &tlsCerts{certFile: o.tlsCert, keyFile: o.tlsKey}
	if err := certs.load(); err != nil {
		return nil, nil, err
	}
	cfg := &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return certs.cert.Load(), nil
		},
	}
	switch o.tlsAuthClients {
	case "no":
		cfg.ClientAuth = tls.NoClientCert
	case "optional":
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	case "yes":
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	default:
		return nil, nil, fmt.Errorf("--tls-auth-clients must be yes, no or optional")
	}
	if cfg.ClientAuth != tls.NoClientCert {
		if o.tlsCA == "" {
			return nil, nil, fmt.Errorf("--tls-auth-clients %s needs --tls-ca-cert-file (or --tls-auth-clients no)", o.tlsAuthClients)
		}
		pem, err := os.ReadFile(o.tlsCA)
		if err != nil {
			return nil, nil, fmt.Errorf("--tls-ca-cert-file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, nil, fmt.Errorf("--tls-ca-cert-file %s: no PEM certificate in it", o.tlsCA)
		}
		cfg.ClientCAs = pool
	}
	return cfg, certs, nil
}
