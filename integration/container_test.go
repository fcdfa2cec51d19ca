package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlserver/rlserver/command"
)

// docker runs the docker CLI and returns its trimmed stdout; a failure
// fails the test with what docker said.
func docker(t *testing.T, args ...string) string {
	t.Helper()
	out, err := dockerErr(args...)
	if err != nil {
		t.Fatalf("docker %s: %v", strings.Join(args, " "), err)
	}
	return out
}

func dockerErr(args ...string) (string, error) {
	c, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(c, "docker", args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%v: %s%s", err, out, stderr.String())
	}
	return strings.TrimSpace(string(out)), nil
}

// requireDocker fails (never skips) when no Docker daemon answers: the
// container test is part of the suite, and scripts/setup.sh installs
// Debian's docker.io and starts dockerd.
func requireDocker(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("docker"); err != nil {
		t.Fatalf("no docker command: run scripts/setup.sh as root (it installs Debian's docker.io and starts dockerd)")
	}
	if _, err := dockerErr("info", "--format", "{{.ServerVersion}}"); err != nil {
		t.Fatalf("no Docker daemon answers (%v): run scripts/setup.sh as root, or start dockerd", err)
	}
}

// TestContainerImage builds the image from the static binary
// (deploy/docker/build-scratch.sh: the Dockerfile's final stage on
// scratch, as no base image can be pulled here) and runs it as a user
// would: a host directory bind-mounted at /data, a password from the
// environment, the port published on 127.0.0.1.
func TestContainerImage(t *testing.T) {
	requireDocker(t)
	id := fmt.Sprintf("%d-%d", os.Getpid(), time.Now().UnixNano()%1e6)
	image := "rlserver-it:" + id
	if out, err := exec.Command("../deploy/docker/build-scratch.sh", image).CombinedOutput(); err != nil {
		t.Fatalf("deploy/docker/build-scratch.sh: %v\n%s", err, out)
	}
	t.Cleanup(func() { dockerErr("rmi", "-f", image) })

	// What the image says of itself.
	var cfg struct {
		Labels      map[string]string
		User        string
		Volumes     map[string]any
		Healthcheck struct{ Test []string }
	}
	if err := json.Unmarshal([]byte(docker(t, "image", "inspect", "--format", "{{json .Config}}", image)), &cfg); err != nil {
		t.Fatal(err)
	}
	if v := cfg.Labels["org.opencontainers.image.version"]; v != command.Version {
		t.Fatalf("label org.opencontainers.image.version = %q, want %q", v, command.Version)
	}
	if got := strings.Join(cfg.Healthcheck.Test, " "); got != "CMD /usr/local/bin/rlserver --healthcheck" {
		t.Fatalf("HEALTHCHECK = %q, want the binary's --healthcheck", got)
	}
	if _, ok := cfg.Volumes["/data"]; !ok || cfg.User != "65532:65532" {
		t.Fatalf("volumes %v, user %q; want /data and 65532:65532", cfg.Volumes, cfg.User)
	}

	// A host directory the image's uid cannot write: exit 1, saying why.
	locked := t.TempDir()
	name := "rlserver-it-" + id
	if out, err := dockerErr("run", "--name", name+"-locked", "-v", locked+":/data", image); err == nil ||
		!strings.Contains(err.Error(), "exit status 1") || !strings.Contains(err.Error(), "permission denied (rlserver runs as uid 65532, gid 65532") {
		t.Fatalf("a /data the user cannot write: %v %s; want exit 1, permission denied and the uid", err, out)
	}
	dockerErr("rm", "-f", name+"-locked")

	// The documented way: the directory belongs to uid 65532 (as root),
	// or the container runs as the directory's owner.
	data := t.TempDir()
	args := []string{"run", "-d", "--name", name, "-p", "127.0.0.1::6379", "-v", data + ":/data",
		"-e", "RLSERVER_REQUIREPASS=s3cret", "--health-interval", "1s"}
	if os.Getuid() == 0 {
		if err := os.Chown(data, 65532, 65532); err != nil {
			t.Fatal(err)
		}
	} else {
		args = append(args, "--user", fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid()))
	}
	docker(t, append(args, image)...)
	t.Cleanup(func() {
		if t.Failed() {
			logs, _ := exec.Command("docker", "logs", name).CombinedOutput()
			t.Logf("container log:\n%s", logs)
		}
		dockerErr("rm", "-f", name)
	})

	// Connects once the server answers PING; the published port may change
	// with each start.
	connect := func() *redis.Client {
		t.Helper()
		addr := docker(t, "port", name, "6379/tcp")
		addr = strings.Split(addr, "\n")[0]
		c := redis.NewClient(&redis.Options{Addr: addr, Password: "s3cret", MaxRetries: -1})
		t.Cleanup(func() { c.Close() })
		eventually(t, "the container to answer PING", func() bool {
			return c.Ping(ctx).Err() == nil
		})
		return c
	}
	c := connect()
	// One token a day: what is taken is still taken after a restart.
	for i := 0; i < 5; i++ {
		do(t, c, "CL.THROTTLE", "k", 100, 1, "1d")
	}
	if got := fmt.Sprint(do(t, c, "CL.THROTTLE", "k", 100, 1, "1d", 0).ints()[:3]); got != "[0 101 96]" {
		t.Fatalf("after 5 decisions: %s, want [0 101 96]", got)
	}
	health := func() string { return docker(t, "inspect", "--format", "{{.State.Health.Status}}", name) }
	eventually(t, "the health status to become healthy", func() bool { return health() == "healthy" })

	// SIGTERM (docker stop): a clean shutdown, exit 0, files owned by the
	// image's user.
	docker(t, "stop", "--time", "30", name)
	if code := docker(t, "inspect", "--format", "{{.State.ExitCode}}", name); code != "0" {
		t.Fatalf("exit code after docker stop (SIGTERM) = %s, want 0", code)
	}
	logs, _ := exec.Command("docker", "logs", name).CombinedOutput()
	if !strings.Contains(string(logs), "received terminated: shutting down") || !strings.Contains(string(logs), "bye") {
		t.Fatalf("no clean shutdown in the log:\n%s", logs)
	}
	if os.Getuid() == 0 {
		entries, err := os.ReadDir(data)
		if err != nil || len(entries) == 0 {
			t.Fatalf("nothing written to the bind-mounted directory: %v", err)
		}
		if owner := fileOwner(t, filepath.Join(data, entries[0].Name())); owner != 65532 {
			t.Fatalf("%s is owned by uid %d, want 65532", entries[0].Name(), owner)
		}
	}

	// Started again: the state is there.
	docker(t, "start", name)
	c = connect()
	if got := fmt.Sprint(do(t, c, "CL.THROTTLE", "k", 100, 1, "1d", 0).ints()[:3]); got != "[0 101 96]" {
		t.Fatalf("after a restart: %s, want [0 101 96]", got)
	}
	eventually(t, "the health status to become healthy again", func() bool { return health() == "healthy" })
}

// fileOwner returns the uid owning path.
func fileOwner(t *testing.T, path string) int {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return int(fi.Sys().(*syscall.Stat_t).Uid)
}

// TestDockerBuildContext: the published Dockerfile's build stage cannot
// run here (its golang base image cannot be pulled), so this sends the
// repository to Docker as that build would, through .dockerignore, and
// builds the server from what arrived: nothing the build needs is left
// out, and the history, node_modules and local data stay out.
func TestDockerBuildContext(t *testing.T) {
	requireDocker(t)
	id := fmt.Sprintf("%d-%d", os.Getpid(), time.Now().UnixNano()%1e6)
	image := "rlserver-it-context:" + id
	build := exec.Command("docker", "build", "-q", "-t", image, "-f", "-", "..")
	build.Stdin = strings.NewReader("FROM scratch\nCOPY . /src\n")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("docker build of the context: %v\n%s", err, out)
	}
	t.Cleanup(func() { dockerErr("rmi", "-f", image) })
	cid := docker(t, "create", image, "none")
	t.Cleanup(func() { dockerErr("rm", "-f", cid) })
	dir := t.TempDir()
	export := exec.Command("sh", "-c", "docker export "+cid+" | tar -x -C "+dir)
	if out, err := export.CombinedOutput(); err != nil {
		t.Fatalf("docker export: %v\n%s", err, out)
	}
	src := filepath.Join(dir, "src")
	for _, gone := range []string{".git", "integration/clients/node/node_modules", "data"} {
		if _, err := os.Stat(filepath.Join(src, gone)); err == nil {
			t.Fatalf("%s is in the build context; .dockerignore should leave it out", gone)
		}
	}
	cmd := exec.Command("go", "build", "-o", filepath.Join(dir, "rlserver"), "./cmd/rlserver")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=readonly")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/rlserver in the build context: %v\n%s", err, out)
	}
}
