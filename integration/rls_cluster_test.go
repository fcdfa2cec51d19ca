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
	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/rlserver/rlserver/cluster"
)

// TestRLSCluster: in a cluster, a node answers descriptors whose keys
// other shards own, asking their primaries: the counts are exact, each
// descriptor's key lives on its owner only, and one request with
// descriptors of two other shards is answered whole; a refund reaches the
// owner too, and is exact there for every algorithm
// (clusterRefundsExact).
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
	clusterRefundsExact(t, c, client)
}

// clusterRefundsExact is TestRLSNegativeHitsExact through node 0 for
// descriptors whose keys other primaries own, so that each refund is RLS
// GIVEBACK on the owner: for each algorithm, descriptor a, which took and
// gave back, answers every later request exactly as descriptor b, which
// shared its history but never took; their keys expire together; the
// owner's replica holds the refunded state; and a take refunded on a
// fresh limiter leaves no key. Every node's clock moves together.
func clusterRefundsExact(t *testing.T, c *rlCluster, client pb.RateLimitServiceClient) {
	nodes := make([]*redis.Client, len(c.Nodes))
	for i, n := range c.Nodes {
		nodes[i] = n.client(t, 2)
	}
	advanceAll := func(ms int64) {
		t.Helper()
		for _, n := range nodes {
			advance(t, n, ms)
		}
	}
	// The reference layout: shard i's slots are Nodes[i]'s, its replica
	// Nodes[i+3].
	ownerOf := func(key string) int {
		s := cluster.Slot([]byte(key))
		for i, r := range refShardSlots {
			if s >= r[0] && s <= r[1] {
				return i
			}
		}
		t.Fatalf("slot %d of %s is in no shard", s, key)
		return -1
	}
	ask := func(ds ...*rlv3.RateLimitDescriptor) *pb.RateLimitResponse {
		t.Helper()
		resp, err := client.ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "test", Descriptors: ds})
		if err != nil {
			t.Fatalf("ShouldRateLimit: %v", err)
		}
		return resp
	}
	for _, alg := range refundRules {
		keyOf := func(v string) string { return "rls:test:" + alg.key + "=" + v + ":" + alg.suffix }
		// Values a, b and c whose keys primaries other than node 0 own.
		var vals []string
		for i := 0; len(vals) < 3; i++ {
			if i == 1000 {
				t.Fatalf("%s: no three values of keys node 0 does not own", alg.key)
			}
			if v := fmt.Sprintf("%s-%d", alg.key, i); ownerOf(keyOf(v)) != 0 {
				vals = append(vals, v)
			}
		}
		a, b, fresh := vals[0], vals[1], vals[2]
		cost := func(v string, n uint64) *rlv3.RateLimitDescriptor {
			d := desc(alg.key, v)
			d.HitsAddend = wrapperspb.UInt64(n)
			return d
		}
		both := func(n uint64) *pb.RateLimitResponse {
			t.Helper()
			return ask(cost(a, n), cost(b, n))
		}
		pttl := func(v string) int64 {
			t.Helper()
			ms, err := nodes[ownerOf(keyOf(v))].Do(ctx, "PTTL", keyOf(v)).Int64()
			if err != nil {
				t.Fatalf("PTTL %s: %v", keyOf(v), err)
			}
			return ms
		}
		same := func(what string, resp *pb.RateLimitResponse) {
			t.Helper()
			if x, y := resp.Statuses[0], resp.Statuses[1]; x.Code != y.Code || x.LimitRemaining != y.LimitRemaining ||
				x.DurationUntilReset.AsDuration() != y.DurationUntilReset.AsDuration() {
				t.Fatalf("%s: %s: after the refund %v, never taking %v", alg.key, what, x, y)
			}
			if pa, pb := pttl(a), pttl(b); pa != pb {
				t.Fatalf("%s: %s: PTTL %d, never taking %d", alg.key, what, pa, pb)
			}
		}
		both(1)
		advanceAll(60_200)
		both(1)
		advanceAll(350)
		if resp := ask(cost(a, alg.take)); resp.OverallCode != pb.RateLimitResponse_OK {
			t.Fatalf("%s: the take: %s", alg.key, summary(resp))
		}
		advanceAll(500)
		same("the refund", ask(refund(desc(alg.key, a), alg.take), cost(b, 0)))
		// The refund is a write of the owner's: its replica holds it.
		owner := ownerOf(keyOf(a))
		do(t, nodes[owner], "WAIT", 1, 5000).equal(1)
		r := dial(t, c.Nodes[owner+3])
		r.cmd("READONLY").expect("+OK")
		r.cmd("PTTL", keyOf(a)).expect(fmt.Sprintf(":%d", pttl(a)))
		do(t, nodes[0], "CLUSTER", "COUNTKEYSINSLOT", cluster.Slot([]byte(keyOf(a)))).equal(0)
		for i, step := range []struct {
			advance int64
			n       uint64
		}{{0, 0}, {0, 1}, {250, 1}, {1000, 0}, {20_000, 1}, {37_000, 0}, {0, 1}, {45_000, 1}, {90_000, 0}} {
			advanceAll(step.advance)
			same(fmt.Sprintf("step %d (+%d ms, %d)", i, step.advance, step.n), both(step.n))
		}
		// A take and its refund on a fresh limiter leave no key.
		ask(cost(fresh, alg.take))
		advanceAll(100)
		ask(refund(desc(alg.key, fresh), alg.take))
		do(t, nodes[ownerOf(keyOf(fresh))], "EXISTS", keyOf(fresh)).equal(0)
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
