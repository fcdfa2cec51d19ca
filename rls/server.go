package rls

import (
	"context"
	"crypto/sha256"
	"crypto/tls"

	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
)

// Options configure a Server.
type Options struct {
	Addr       string         // gRPC host:port ("" none)
	HTTPAddr   string         // POST /json and GET /healthcheck ("" none)
	ConfigPath string         // --rls-config ("" serves no limit)
	Service    ServiceOptions // the global settings (zero: all off)
	TLS        *tls.Config    // gRPC over TLS when set
	Keyspace   Keyspace
	Stats      *Stats
	// Logf logs a line (log.Printf).
	Logf func(format string, args ...any)
	// Poll is how often the configuration files are checked for changes
	// (default 1 s).
	Poll time.Duration
}

// streamWorkers is how many goroutines serve gRPC streams.
const streamWorkers = 256

// Server is the rate limit service's gRPC and HTTP front ends.
type Server struct {
	opts   Options
	svc    *Service
	grpc   *grpc.Server
	health *health.Server
	http   *http.Server
	lns    []net.Listener
	stop   chan struct{}
	wg     sync.WaitGroup

	reloadMu sync.Mutex
	sum      [32]byte // the files' contents as last loaded
	stopping sync.Once
	down     chan struct{} // closed when stopping: /healthcheck fails
}

// healthService is the name the gRPC health service reports besides "".
const healthService = "envoy.service.ratelimit.v3.RateLimitService"

// Start serves the configuration cfg (loaded by the caller, so that a bad
// file stops the start) on the addresses of opts.
func Start(opts Options, cfg *Config) (*Server, error) {
	if opts.Poll == 0 {
		opts.Poll = time.Second
	}
	if cfg == nil {
		cfg = &Config{domains: map[string]*node{}}
	}
	s := &Server{opts: opts, stop: make(chan struct{}), down: make(chan struct{})}
	s.svc = NewService(opts.Keyspace, cfg, opts.Stats, opts.Service)
	if opts.ConfigPath != "" {
		s.sum, _ = fingerprint(opts.ConfigPath)
	}
	if opts.Addr != "" {
		ln, err := net.Listen("tcp", opts.Addr)
		if err != nil {
			return nil, err
		}
		s.lns = append(s.lns, ln)
		// Workers serve the streams: a goroutine per request grows its
		// stack anew, through the handler's depth, every time. A stream
		// waits in its worker for its message, so there are as many
		// workers as requests Envoy fleets commonly have in flight; past
		// that grpc starts goroutines again.
		gopts := []grpc.ServerOption{grpc.NumStreamWorkers(streamWorkers)}
		if opts.TLS != nil {
			gopts = append(gopts, grpc.Creds(credentials.NewTLS(opts.TLS)))
		}
		s.grpc = grpc.NewServer(gopts...)
		pb.RegisterRateLimitServiceServer(s.grpc, s.svc)
		s.health = health.NewServer()
		s.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
		s.health.SetServingStatus(healthService, healthpb.HealthCheckResponse_SERVING)
		healthpb.RegisterHealthServer(s.grpc, s.health)
		s.wg.Add(1)
		go func() { defer s.wg.Done(); s.grpc.Serve(ln) }()
	}
	if opts.HTTPAddr != "" {
		ln, err := net.Listen("tcp", opts.HTTPAddr)
		if err != nil {
			s.closeListeners()
			return nil, err
		}
		s.lns = append(s.lns, ln)
		mux := http.NewServeMux()
		mux.HandleFunc("/json", s.serveJSON)
		mux.HandleFunc("/healthcheck", s.serveHealth)
		s.http = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		s.wg.Add(1)
		go func() { defer s.wg.Done(); s.http.Serve(ln) }()
	}
	if opts.ConfigPath != "" {
		s.wg.Add(1)
		go s.watch()
	}
	return s, nil
}

func (s *Server) closeListeners() {
	for _, ln := range s.lns {
		ln.Close()
	}
}

// Addr is the gRPC address served (nil without one).
func (s *Server) Addr() net.Addr {
	if s.opts.Addr == "" {
		return nil
	}
	return s.lns[0].Addr()
}

// HTTPAddr is the HTTP address served (nil without one).
func (s *Server) HTTPAddr() net.Addr {
	if s.opts.HTTPAddr == "" {
		return nil
	}
	return s.lns[len(s.lns)-1].Addr()
}

// Service returns the service answering requests.
func (s *Server) Service() *Service { return s.svc }

// Reload reads the configuration again (SIGHUP, a file change); a bad file
// is logged and the configuration in force kept.
func (s *Server) Reload(why string) {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	sum, _ := fingerprint(s.opts.ConfigPath)
	s.sum = sum
	cfg, err := LoadConfig(s.opts.ConfigPath)
	s.opts.Stats.ConfigLoaded(err == nil)
	if err != nil {
		s.opts.Logf("error: rls: %s: %v (the previous configuration stays)", why, err)
		return
	}
	s.svc.SetConfig(cfg)
	s.opts.Logf("rls: %s: configuration reloaded, %d domains from %d files", why, cfg.Domains(), len(cfg.Files))
}

// watch reloads when the files' contents change. It compares contents, not
// times: a Kubernetes ConfigMap swaps a symbolic link and keeps the times.
func (s *Server) watch() {
	defer s.wg.Done()
	t := time.NewTicker(s.opts.Poll)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		sum, err := fingerprint(s.opts.ConfigPath)
		s.reloadMu.Lock()
		changed := err == nil && sum != s.sum
		s.reloadMu.Unlock()
		if changed {
			s.Reload("file change")
		}
	}
}

// fingerprint hashes the configuration files' names and contents.
func fingerprint(path string) ([32]byte, error) {
	files, err := configFiles(path)
	if err != nil {
		return [32]byte{}, err
	}
	h := sha256.New()
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return [32]byte{}, err
		}
		io.WriteString(h, f)
		h.Write([]byte{0})
		h.Write(data)
		h.Write([]byte{0})
	}
	var sum [32]byte
	copy(sum[:], h.Sum(nil))
	return sum, nil
}

// Stop fails the health checks, then lets the requests being answered
// finish (at most timeout) and closes.
func (s *Server) Stop(timeout time.Duration) {
	s.stopping.Do(func() {
		close(s.down)
		close(s.stop)
		if s.health != nil {
			s.health.Shutdown() // NOT_SERVING for every service
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		if s.grpc != nil {
			done := make(chan struct{})
			go func() { s.grpc.GracefulStop(); close(done) }()
			select {
			case <-done:
			case <-ctx.Done():
				s.grpc.Stop()
			}
		}
		if s.http != nil {
			if err := s.http.Shutdown(ctx); err != nil {
				s.http.Close()
			}
		}
		s.wg.Wait()
	})
}

// serveJSON is envoyproxy/ratelimit's POST /json: the request and the
// response as protobuf JSON; 200 when OK, 429 when over the limit, 400
// for a bad request.
func (s *Server) serveJSON(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		http.Error(w, http.StatusText(http.StatusMethodNotAllowed), http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	if err != nil {
		http.Error(w, http.StatusText(http.StatusBadRequest), http.StatusBadRequest)
		return
	}
	var req pb.RateLimitRequest
	if err := protojson.Unmarshal(body, &req); err != nil {
		http.Error(w, "bad request: "+err.Error(), http.StatusBadRequest)
		return
	}
	resp, err := s.svc.ShouldRateLimit(r.Context(), &req)
	if err != nil {
		code := http.StatusBadRequest
		if c := status.Code(err); c != codes.InvalidArgument {
			code = http.StatusServiceUnavailable
		}
		http.Error(w, status.Convert(err).Message(), code)
		return
	}
	out, err := protojson.Marshal(resp)
	if err != nil {
		http.Error(w, http.StatusText(http.StatusInternalServerError), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if resp.OverallCode == pb.RateLimitResponse_OVER_LIMIT {
		w.WriteHeader(http.StatusTooManyRequests)
	}
	w.Write(out)
}

// serveHealth is GET /healthcheck: OK, or 500 once stopping.
func (s *Server) serveHealth(w http.ResponseWriter, r *http.Request) {
	select {
	case <-s.down:
		w.WriteHeader(http.StatusInternalServerError)
	default:
		w.Write([]byte("OK"))
	}
}
