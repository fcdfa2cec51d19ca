package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/rlserver/rlserver/clock"
	"github.com/rlserver/rlserver/command"
	"github.com/rlserver/rlserver/metrics"
	"github.com/rlserver/rlserver/rls"
)

// rlsFlags are the Envoy rate limit service's flags (package rls).
type rlsFlags struct {
	addr     string
	httpAddr string
	config   string
	headers  string
	tls      string
	shadow   string // --rls-shadow-mode
	quota    string // --rls-quota-mode
	metadata string // --rls-response-dynamic-metadata

	cfg *rls.Config // --rls-config as read at start
}

func (f *rlsFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.addr, "rls-addr", "", "host:port serving Envoy's rate limit service (gRPC envoy.service.ratelimit.v3); off by default")
	fs.StringVar(&f.httpAddr, "rls-http-addr", "", "host:port serving envoyproxy/ratelimit's HTTP API: POST /json and GET /healthcheck; off by default")
	fs.StringVar(&f.config, "rls-config", "", "the rate limit service's configuration: a YAML file, or a directory of *.yaml files, in envoyproxy/ratelimit's format; reread on SIGHUP and when a file changes")
	fs.StringVar(&f.headers, "rls-response-headers", "no", "yes: add RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset to rate limit responses")
	fs.StringVar(&f.shadow, "rls-shadow-mode", "no", "yes: answer every rate limit request OK, even over the limit (each descriptor's status still says so), as envoyproxy/ratelimit's SHADOW_MODE")
	fs.StringVar(&f.quota, "rls-quota-mode", "no", "yes: every descriptor is in quota mode: a request is over the limit only when all its descriptors are, as envoyproxy/ratelimit's QUOTA_MODE")
	fs.StringVar(&f.metadata, "rls-response-dynamic-metadata", "no", "yes: set the response's dynamic metadata (domain, descriptors, hits_addend, the passing rules' metadata), as envoyproxy/ratelimit's RESPONSE_DYNAMIC_METADATA")
	fs.StringVar(&f.tls, "rls-tls", "no", "yes: serve --rls-addr over TLS with the --tls-cert-file, --tls-key-file (and client certificates as --tls-auth-clients, --tls-ca-cert-file)")
}

// load checks the flags and reads the configuration before anything
// starts: an error here exits 2.
func (f *rlsFlags) load() error {
	for name, v := range map[string]string{"--rls-response-headers": f.headers, "--rls-tls": f.tls,
		"--rls-shadow-mode": f.shadow, "--rls-quota-mode": f.quota, "--rls-response-dynamic-metadata": f.metadata} {
		if v != "yes" && v != "no" {
			return fmt.Errorf("%s must be yes or no", name)
		}
	}
	if f.addr == "" && f.httpAddr == "" {
		return nil
	}
	if f.config == "" {
		return nil
	}
	cfg, err := rls.LoadConfig(f.config)
	if err != nil {
		return fmt.Errorf("--rls-config: %v", err)
	}
	f.cfg = cfg
	return nil
}

// start serves the rate limit service over the commands' keyspace, once
// the server is ready; stop is its graceful stop.
func (f *rlsFlags) start(o *options, commands *command.Handler, clock *clock.Clock, m *metrics.Server) (stop func(), err error) {
	if f.addr == "" && f.httpAddr == "" {
		return func() {}, nil
	}
	var tcfg *tls.Config
	var certs *tlsCerts
	if f.tls == "yes" {
		if tcfg, certs, err = tlsConfig(o); err != nil {
			return nil, fmt.Errorf("--rls-tls: %v", err)
		}
		tcfg.NextProtos = []string{"h2"}
	}
	stats := rls.NewStats()
	stats.ConfigLoaded(true)
	if m != nil {
		if err := m.Register(stats); err != nil {
			return nil, err
		}
	}
	ks := rls.NewCommands(commands, clock.Now, o.requirepass, 4*runtime.GOMAXPROCS(0))
	srv, err := rls.Start(rls.Options{
		Addr: f.addr, HTTPAddr: f.httpAddr, ConfigPath: f.config,
		Service: rls.ServiceOptions{
			ResponseHeaders: f.headers == "yes", ShadowMode: f.shadow == "yes",
			QuotaMode: f.quota == "yes", DynamicMetadata: f.metadata == "yes",
		},
		TLS: tcfg, Keyspace: ks, Stats: stats, Logf: log.Printf,
	}, f.cfg)
	if err != nil {
		ks.Close()
		return nil, fmt.Errorf("rls: %v", err)
	}
	if a := srv.Addr(); a != nil {
		log.Printf("rls: serving gRPC envoy.service.ratelimit.v3 on %s", a)
	}
	if a := srv.HTTPAddr(); a != nil {
		log.Printf("rls: serving HTTP /json and /healthcheck on %s", a)
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-hup:
			}
			if f.config != "" {
				srv.Reload("SIGHUP")
			}
			if certs != nil {
				if err := certs.load(); err != nil {
					log.Printf("error: rls: SIGHUP: reloading the TLS certificate: %v (the previous one stays)", err)
				}
			}
		}
	}()
	return func() {
		signal.Stop(hup)
		close(done)
		srv.Stop(5 * time.Second)
		ks.Close()
	}, nil
}
