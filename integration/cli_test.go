package integration

import (
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/rlserver/rlserver/command"
)

// cli runs the binary with args (and extra environment variables) to its
// end and returns its stdout, stderr and exit code.
func cli(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := serverCommand(args...)
	cmd.Env = append(withoutRLServerVars(cmd.Env), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("rlserver %v: %v", args, err)
	}
	return out.String(), errOut.String(), cmd.ProcessState.ExitCode()
}

// cleanEnv is the test's environment without RLSERVER_* variables, so
// that one set where the tests run changes nothing.
func cleanEnv() []string { return withoutRLServerVars(nil) }

// withoutRLServerVars returns env (the test's environment when nil)
// without RLSERVER_* variables.
func withoutRLServerVars(env []string) []string {
	if env == nil {
		env = os.Environ()
	}
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "RLSERVER_") {
			out = append(out, kv)
		}
	}
	return out
}

func TestCLIVersion(t *testing.T) {
	stdout, stderr, code := cli(t, nil, "--version")
	want := regexp.MustCompile(`^rlserver ` + regexp.QuoteMeta(command.Version) + ` \((commit [0-9a-f]{12}(-dirty)?, )?go1\.\d+[^ ]* [a-z0-9]+/[a-z0-9]+\)\n$`)
	if code != 0 || !want.MatchString(stdout) || stderr != "" {
		t.Fatalf("--version: exit %d, stdout %q, stderr %q; want exit 0 and a line matching %s", code, stdout, stderr, want)
	}
	// The environment never turns the server into something else.
	if _, _, code := cli(t, []string{"RLSERVER_VERSION=true", "RLSERVER_PORT=x"}, "--version"); code != 2 {
		t.Fatalf("--version with RLSERVER_PORT=x: exit %d, want 2 (the bad variable is reported)", code)
	}
}

func TestCLIHelp(t *testing.T) {
	for _, arg := range []string{"--help", "-h"} {
		stdout, stderr, code := cli(t, nil, arg)
		if code != 0 || stderr != "" {
			t.Fatalf("%s: exit %d, stderr %q; want exit 0 and nothing on stderr", arg, code, stderr)
		}
		for _, want := range []string{"Usage:", "rlserver --version", "rlserver --healthcheck",
			"RLSERVER_PORT", "RLSERVER_REQUIREPASS", "RLSERVER_DIR", "RLSERVER_CLUSTER_ETCD", "RLSERVER_TLS_PORT"} {
			if !strings.Contains(stdout, want) {
				t.Fatalf("%s does not mention %q:\n%s", arg, want, stdout)
			}
		}
		// Every flag listed names its variable beside it.
		flagLine := regexp.MustCompile(`(?m)^  --([a-z0-9-]+)( \S+)? +(\S+)$`)
		lines := flagLine.FindAllStringSubmatch(stdout, -1)
		if len(lines) < 30 {
			t.Fatalf("%s lists %d flags, want them all:\n%s", arg, len(lines), stdout)
		}
		for _, m := range lines {
			if want := "RLSERVER_" + strings.ToUpper(strings.ReplaceAll(m[1], "-", "_")); m[3] != want {
				t.Fatalf("%s: --%s names %s, want %s", arg, m[1], m[3], want)
			}
		}
	}
}

func TestCLIFlagErrorPrintedOnce(t *testing.T) {
	for _, c := range []struct {
		args []string
		env  []string
		want string
	}{
		{args: []string{"--no-such-flag"}, want: "flag provided but not defined: -no-such-flag"},
		{args: []string{"--port", "abc"}, want: `invalid value "abc" for flag -port`},
		{args: []string{"--shards", "3"}, want: "--shards must be a power of two"},
		{args: []string{"stray"}, want: `unexpected argument "stray"`},
		{env: []string{"RLSERVER_TIMEOUT=soon"}, want: `RLSERVER_TIMEOUT="soon"`},
	} {
		stdout, stderr, code := cli(t, c.env, c.args...)
		if code != 2 {
			t.Fatalf("%v %v: exit %d, want 2\n%s", c.env, c.args, code, stderr)
		}
		if n := strings.Count(stderr, c.want); n != 1 {
			t.Fatalf("%v %v: stderr says %q %d times, want once:\n%s", c.env, c.args, c.want, n, stderr)
		}
		if lines := strings.Count(stderr, "\n"); lines != 1 || strings.Contains(stderr, "Usage") || stdout != "" {
			t.Fatalf("%v %v: want one line on stderr and nothing on stdout, got stdout %q, stderr:\n%s", c.env, c.args, stdout, stderr)
		}
	}
}

func TestCLIHealthcheck(t *testing.T) {
	s := start(t, "--requirepass", "s3cret")
	check := func(env []string, args ...string) (string, string, int) {
		t.Helper()
		return cli(t, env, append([]string{"--healthcheck", "--port", s.Port}, args...)...)
	}
	expect := func(what string, wantCode int, wantOut string, env []string, args ...string) {
		t.Helper()
		stdout, stderr, code := check(env, args...)
		out := stdout
		if wantCode != 0 {
			out = stderr
		}
		if code != wantCode || !strings.Contains(out, wantOut) {
			t.Fatalf("%s: exit %d, stdout %q, stderr %q; want exit %d and %q", what, code, stdout, stderr, wantCode, wantOut)
		}
	}
	expect("no password", 1, `PING answered "NOAUTH Authentication required."`, nil)
	expect("a wrong password", 1, `AUTH answered "WRONGPASS`, nil, "--requirepass", "nope")
	expect("--requirepass", 0, s.Addr+": PONG", nil, "--requirepass", "s3cret")
	// The variable the server reads serves the check too.
	expect("RLSERVER_REQUIREPASS", 0, s.Addr+": PONG", []string{"RLSERVER_REQUIREPASS=s3cret"})
	// --bind 0.0.0.0 (the container's) checks over loopback.
	expect("--bind 0.0.0.0", 0, s.Addr+": PONG", []string{"RLSERVER_BIND=0.0.0.0", "RLSERVER_REQUIREPASS=s3cret"})
	// An ACL user that may only PING, as a primary authenticates to replicas.
	c := s.client(t, 2)
	do(t, c, "AUTH", "s3cret").equal("OK")
	do(t, c, "ACL", "SETUSER", "probe", "on", ">p", "+ping").equal("OK")
	expect("--masteruser", 0, s.Addr+": PONG", []string{"RLSERVER_REQUIREPASS=s3cret"}, "--masteruser", "probe", "--masterauth", "p")
	expect("--port 0", 1, "--port 0 picks a port at random", nil, "--port", "0")

	// RLSERVER_HEALTHCHECK does not turn a server into a check: it serves.
	cmd := serverCommand("--port", "0", "--dir", "")
	cmd.Env = append(withoutRLServerVars(cmd.Env), "RLSERVER_HEALTHCHECK=true", "RLSERVER_VERSION=true")
	other, err := startCmd(t, "", cmd)
	if err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := cli(t, nil, "--healthcheck", "--port", other.Port)
	if code != 0 || stdout != other.Addr+": PONG\n" {
		t.Fatalf("healthcheck of a server without a password: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}

	// Nothing listening: exit 1, whatever the reason, said on stderr.
	s.kill()
	expect("a stopped server", 1, "connection refused", nil, "--requirepass", "s3cret")
}
