package rlserver

import (
	"context"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Each fenced block of README.md is checked here (the endpoint example by
// TestReadmeExampleIsCompiled): a README that drifts from the code fails.

// The README's blocks, in order.
const (
	blockCheckout = iota
	blockEndpoint
	blockDecision
	blockCluster
	blockSetLimit
	blockHeaders
	blockTests
)

// readmeBlocks returns every fenced block of README.md with its fence line.
func readmeBlocks(t *testing.T) (fences, blocks []string) {
	t.Helper()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	rest := string(readme)
	for {
		i := strings.Index(rest, "\n```")
		if i < 0 {
			return fences, blocks
		}
		rest = rest[i+1:]
		eol := strings.Index(rest, "\n")
		end := strings.Index(rest[eol+1:], "```")
		if end < 0 {
			t.Fatal("README.md: unclosed block")
		}
		fences = append(fences, rest[:eol])
		blocks = append(blocks, rest[eol+1:eol+1+end])
		rest = rest[eol+1+end+3:]
	}
}

// Every block is one this file (or TestReadmeExampleIsCompiled) checks:
// a new block needs a check.
func TestReadmeBlocksAreAllChecked(t *testing.T) {
	fences, blocks := readmeBlocks(t)
	var got []string
	for i, f := range fences {
		first, _, _ := strings.Cut(blocks[i], "\n")
		got = append(got, f+" "+first)
	}
	want := []string{
		"```sh git clone https://github.com/rlserver/rlserver /path/to/rlserver",                            // TestReadmeDependOnACheckout
		"```go rdb := redis.NewUniversalClient(&redis.UniversalOptions{",                                    // TestReadmeExampleIsCompiled
		"```go type Decision struct {",                                                                      // TestReadmeDecisionIsTheType
		"```go rdb := redis.NewUniversalClient(&redis.UniversalOptions{",                                    // TestReadmeClusterClient
		"```go r := tb.For(\"user:42\")",                                                                    // TestReadmeSetLimit
		"``` RateLimit-Policy: \"default\";q=20;w=2         limit, and the window: time from empty to full", // TestReadmeHeaderFields
		"```sh cd sdk/go && go vet ./... && go test -race -count=1 -timeout 5m ./...",                       // TestReadmeTestCommand
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("README.md's blocks\n%s\nwant (each with its test)\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// The "depend on a checkout" instructions, followed in a throwaway
// application module (the README's endpoint example as its main package)
// with this checkout as /path/to/rlserver: the application builds, and its
// go.mod keeps the Go version it had (the SDK does not force a newer one).
func TestReadmeDependOnACheckout(t *testing.T) {
	_, blocks := readmeBlocks(t)
	lines := strings.Split(strings.TrimSuffix(blocks[blockCheckout], "\n"), "\n")
	if lines[0] != "git clone https://github.com/rlserver/rlserver /path/to/rlserver" || lines[1] != "cd your-app" {
		t.Fatalf("the block starts %q", lines[:2])
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	sdk, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(sdk), "\ngo 1.26.0\n") {
		t.Errorf("sdk/go/go.mod's go line is not the README's \"go 1.26.0\"")
	}
	dir := t.TempDir()
	app := filepath.Join(dir, "your-app")
	if err := os.Mkdir(app, 0o755); err != nil {
		t.Fatal(err)
	}
	main, err := os.ReadFile("example/main.go")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(app, "main.go"), main, 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	run := func(dir, script string) {
		t.Helper()
		cmd := exec.Command("sh", "-ec", script)
		cmd.Dir, cmd.Env = dir, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", script, err, out)
		}
	}
	run(app, "go mod init example.com/app && go mod edit -go=1.26.0")
	// The block after the clone, run from the directory holding your-app.
	run(dir, strings.ReplaceAll(strings.Join(lines[1:], "\n"), "/path/to/rlserver", root))
	run(app, "go build -o app .")
	mod, err := os.ReadFile(filepath.Join(app, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\ngo 1.26.0\n", "github.com/rlserver/rlserver/sdk/go v0.0.0",
		"replace github.com/rlserver/rlserver/sdk/go => " + root + "/sdk/go\n"} {
		if !strings.Contains(string(mod), want) {
			t.Errorf("the application's go.mod lacks %q:\n%s", want, mod)
		}
	}
}

// The README's Decision is the type's fields (names and types, in order).
func TestReadmeDecisionIsTheType(t *testing.T) {
	_, blocks := readmeBlocks(t)
	fields := func(src string) string {
		f, err := parser.ParseFile(token.NewFileSet(), "", src, 0)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok || ts.Name.Name != "Decision" {
				return true
			}
			for _, fl := range ts.Type.(*ast.StructType).Fields.List {
				for _, name := range fl.Names {
					b.WriteString(name.Name + " ")
					printer.Fprint(&b, token.NewFileSet(), fl.Type)
					b.WriteString("\n")
				}
			}
			return false
		})
		return b.String()
	}
	src, err := os.ReadFile("decision.go")
	if err != nil {
		t.Fatal(err)
	}
	readme, code := fields("package p\n"+blocks[blockDecision]), fields(string(src))
	if readme == "" || readme != code {
		t.Errorf("README's Decision\n%s\ndecision.go's\n%s", readme, code)
	}
}

// readmeClusterClient is the README's Redis Cluster set-up
// (TestReadmeClusterClient holds them equal).
func readmeClusterClient() redis.UniversalClient {
	rdb := redis.NewUniversalClient(&redis.UniversalOptions{
		Addrs:                 []string{"10.0.0.1:6379", "10.0.0.2:6379"}, // any nodes; more than one address makes a ClusterClient
		ContextTimeoutEnabled: true, DialerRetries: 1, MaxRetries: -1,
	})
	return rdb
}

// The Redis Cluster block is readmeClusterClient's code, and it does make a
// ClusterClient (the hash-tag rule itself is TestCluster's: All with a tag,
// CROSSSLOT without).
func TestReadmeClusterClient(t *testing.T) {
	_, blocks := readmeBlocks(t)
	assertIndentedIn(t, blocks[blockCluster], "readme_test.go")
	rdb := readmeClusterClient()
	defer rdb.Close()
	if _, ok := rdb.(*redis.ClusterClient); !ok {
		t.Errorf("the README's options make a %T", rdb)
	}
}

// readmeSetLimit is the README's SetLimit/SetBurst block (TestReadmeSetLimit
// holds them equal).
func readmeSetLimit(tb *TokenBucket) *Rate {
	r := tb.For("user:42")
	r.SetLimit(2.5) // 2.5 tokens a second from the next call (sent as 25 per 10s)
	r.SetBurst(40)  // a bucket of 40 tokens from the next call
	return r
}

// The SetLimit block is readmeSetLimit's code; run, the key's calls carry
// the new parameters (the server's reply has the new limit, and a key that
// held 1 of 2 tokens keeps it, then refills at 2.5/s).
func TestReadmeSetLimit(t *testing.T) {
	_, blocks := readmeBlocks(t)
	assertIndentedIn(t, blocks[blockSetLimit], "readme_test.go")
	srv := startServer(t)
	rdb := srv.client(t)
	setClock(t, rdb, epochMs)
	tb := New(rdb, Options{}).TokenBucket(2, 1, time.Second)
	if !tb.For("user:42").Allow() {
		t.Fatal("first token denied")
	}
	r := readmeSetLimit(tb)
	if r.Limit() != 2.5 || r.Burst() != 40 || r.Tokens() != 1 {
		t.Errorf("Limit %v, Burst %d, Tokens %v, want 2.5, 40, 1", r.Limit(), r.Burst(), r.Tokens())
	}
	advance(t, rdb, 400)
	d, err := r.bucket().AllowN(context.Background(), "user:42", 0)
	if err != nil || d.Limit != 40 || d.Remaining != 2 || d.ResetAfter != 15200*time.Millisecond {
		t.Errorf("peek 400ms later: %+v %v, want limit 40, 2 left, full in 15.2s", d, err)
	}
}

// The header block's values are what the middleware sends for the
// README's endpoint limiter (bursts of 20, 10/s) after two requests, and on
// the 429.
func TestReadmeHeaderFields(t *testing.T) {
	_, blocks := readmeBlocks(t)
	value := map[string]string{}
	for _, l := range strings.Split(strings.TrimSuffix(blocks[blockHeaders], "\n"), "\n") {
		name, rest, _ := strings.Cut(l, ": ")
		v, _, _ := strings.Cut(rest, " ")
		value[name] = v
	}
	srv := startServer(t)
	rdb := srv.client(t)
	setClock(t, rdb, epochMs)
	c := New(rdb, Options{})
	h := Middleware(MiddlewareOptions{Limiter: c.TokenBucket(20, 10, time.Second), XRateLimit: true})(
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	var rec *httptest.ResponseRecorder
	serve := func() {
		rec = httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	}
	serve()
	serve()
	if rec.Code != 200 || rec.Header().Get("RateLimit-Policy") != value["RateLimit-Policy"] || rec.Header().Get("RateLimit") != value["RateLimit"] {
		t.Errorf("second request: %d, %q", rec.Code, rec.Header())
	}
	if !strings.Contains(blocks[blockHeaders], "\nX-RateLimit-Limit/-Remaining/-Reset          with XRateLimit: true\n") || rec.Header().Get("X-RateLimit-Limit") != "20" ||
		rec.Header().Get("X-RateLimit-Remaining") != "18" || rec.Header().Get("X-RateLimit-Reset") != "1" {
		t.Errorf("X-RateLimit fields: %q", rec.Header())
	}
	for range 18 {
		serve()
	}
	serve()
	if rec.Code != 429 || rec.Header().Get("Retry-After") != value["Retry-After"] {
		t.Errorf("21st request: %d, %q", rec.Code, rec.Header())
	}
}

// The README's test command is the one scripts/test.sh runs.
func TestReadmeTestCommand(t *testing.T) {
	_, blocks := readmeBlocks(t)
	script, err := os.ReadFile("../../scripts/test.sh")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(script), "("+strings.TrimSuffix(blocks[blockTests], "\n")+")\n") {
		t.Errorf("scripts/test.sh does not run %q", blocks[blockTests])
	}
}

// assertIndentedIn checks that block, indented one tab, is in file.
func assertIndentedIn(t *testing.T, block, file string) {
	t.Helper()
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var indented []string
	for _, l := range strings.Split(strings.TrimSuffix(block, "\n"), "\n") {
		if l != "" {
			l = "\t" + l
		}
		indented = append(indented, l)
	}
	if !strings.Contains(string(src), strings.Join(indented, "\n")+"\n") {
		t.Errorf("this README block is not in %s:\n%s", file, block)
	}
}
