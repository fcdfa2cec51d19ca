package integration

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/rlserver/rlserver/cluster"
)

// TestRLSCluster: in a cluster, a node answers descriptors whose keys
// other shards own, asking their primaries: the counts are exact, each
// descriptor's key lives on its owner only, and one request with
// descriptors of two other shards is answered whole; a refund reaches the
// owner too.
func TestRLSCluster(t *testing.T) {
	config := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(config, []byte(rlsConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	c := startRLCluster(t, "--rls-addr", "127.0.0.1:0", "--rls-config", config)
	for _, n := range c.Nodes {
		setClock(t, n.client(t, 2), t0+500)
	}
	// Node 0 (a primary) answers for addresses whose keys are elsewhere.
	m := rlsGRPCRE.FindStringSubmatch(c.Nodes[0].logs.String())
	if m == nil {
		t.Fatalf("node 0 serves no rate limit service:\n%s", c.Nodes[0].logs)
	}
	conn, err := grpc.NewClient(m[1], grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := pb.NewRateLimitServiceClient(conn)
	ask := func(ds ...string) *pb.RateLimitResponse {
		t.Helper()
		req := &pb.RateLimitRequest{Domain: "test"}
		for _, ip := range ds {
			req.Descriptors = append(req.Descriptors, desc("remote_address", ip))
		}
		resp, err := client.ShouldRateLimit(context.Background(), req)
		if err != nil {
			t.Fatalf("ShouldRateLimit %v: %v", ds, err)
		}
		return resp
	}
	key := func(ip string) string { return "rls:test:remote_address=" + ip + ":fixed_window/60s" }
	// Two addresses whose keys two other primaries own.
	var ips []string
	var owners []int
	for i := 0; len(ips) < 2 && i < 1000; i++ {
		ip := fmt.Sprintf("10.1.%d.%d", i/250, i%250)
		o := c.primaryOf(t, 0, cluster.Slot([]byte(key(ip))))
		if o != 0 && (len(owners) == 0 || o != owners[0]) {
			ips, owners = append(ips, ip), append(owners, o)
		}
	}
	if len(ips) < 2 {
		t.Fatal("no addresses on two other shards")
	}
	expectSummary(t, ask(ips[0]), "OK OK/2/60")
	expectSummary(t, ask(ips[0]), "OK OK/1/60")
	expectSummary(t, ask(ips[0], ips[1]), "OK OK/0/60 OK/2/60")
	expectSummary(t, ask(ips[0], ips[1]), "OVER_LIMIT OVER_LIMIT/0/60 OK/1/60")
	// A refund (is_negative_hits) of a key another primary owns.
	back, err := client.ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "test",
		Descriptors: []*rlv3.RateLimitDescriptor{refund(desc("remote_address", ips[0]), 1)}})
	if err != nil {
		t.Fatal(err)
	}
	expectSummary(t, back, "OK OK/1/60")
	expectSummary(t, ask(ips[0]), "OK OK/0/60")
	expectSummary(t, ask(ips[0]), "OVER_LIMIT OVER_LIMIT/0/60")
	for i, ip := range ips {
		do(t, c.Nodes[owners[i]].client(t, 2), "TYPE", key(ip)).equal("window")
		do(t, c.Nodes[0].client(t, 2), "CLUSTER", "COUNTKEYSINSLOT", cluster.Slot([]byte(key(ip)))).equal(0)
	}
}

// TestRLSTLS: with --rls-tls yes the rate limit service speaks gRPC over
// TLS with the server's certificate, requiring a client certificate as
// --tls-auth-clients says: a client trusting the CA and presenting its
// certificate gets exact decisions; one without a certificate, and a
// plaintext one, get none.
func TestRLSTLS(t *testing.T) {
	p := newPKI(t)
	p.issue(t, "server", 10, false)
	clientCert := p.issue(t, "client", 11, true)
	config := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(config, []byte(rlsConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startIn(t, "", "--tls-port", "0", "--tls-cert-file", filepath.Join(p.dir, "server.pem"),
		"--tls-key-file", filepath.Join(p.dir, "server-key.pem"), "--tls-ca-cert-file", filepath.Join(p.dir, "ca.pem"),
		"--tls-auth-clients", "yes", "--rls-addr", "127.0.0.1:0", "--rls-tls", "yes", "--rls-config", config)
	m := rlsGRPCRE.FindStringSubmatch(s.logs.String())
	if m == nil {
		t.Fatalf("no rate limit service:\n%s", s.logs)
	}
	setClock(t, s.client(t, 2), t0+500)
	call := func(creds credentials.TransportCredentials) (*pb.RateLimitResponse, error) {
		conn, err := grpc.NewClient(m[1], grpc.WithTransportCredentials(creds))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return pb.NewRateLimitServiceClient(conn).ShouldRateLimit(ctx,
			&pb.RateLimitRequest{Domain: "test", Descriptors: []*rlv3.RateLimitDescriptor{desc("remote_address", "10.9.9.9")}})
	}
	good := credentials.NewTLS(&tls.Config{RootCAs: p.caPool, Certificates: []tls.Certificate{clientCert}})
	for _, want := range []string{"OK OK/2/60", "OK OK/1/60"} {
		resp, err := call(good)
		if err != nil {
			t.Fatalf("with a client certificate: %v", err)
		}
		if got := summary(resp); got != want {
			t.Fatalf("with a client certificate: %q, want %q", got, want)
		}
	}
	if _, err := call(credentials.NewTLS(&tls.Config{RootCAs: p.caPool})); err == nil {
		t.Fatal("a client without a certificate was answered")
	}
	if _, err := call(insecure.NewCredentials()); err == nil {
		t.Fatal("a plaintext client was answered")
	}
}
