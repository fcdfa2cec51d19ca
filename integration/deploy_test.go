package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rlserver/rlserver/command"
)

// The files under deploy/ are checked against each other, the Dockerfile
// and the binary's own flags: a flag renamed, a Service renamed or a
// volume dropped fails here. (No Kubernetes API server runs here; what
// one would add is schema validation.)

// yamlDocs reads every document of a YAML file, through Debian's PyYAML
// (scripts/setup.sh installs python3-yaml) rather than a Go dependency
// taken only for this, and returns them as JSON.
func yamlDocs(t *testing.T, path string) []json.RawMessage {
	t.Helper()
	out, err := exec.Command("/usr/bin/python3", "-c",
		"import json, sys, yaml; json.dump([d for d in yaml.safe_load_all(open(sys.argv[1])) if d is not None], sys.stdout)",
		path).Output()
	if err != nil {
		msg := err.Error()
		if ee, ok := err.(*exec.ExitError); ok {
			msg += ": " + string(ee.Stderr)
		}
		t.Fatalf("%s is not valid YAML, or PyYAML is missing (scripts/setup.sh installs python3-yaml): %s", path, msg)
	}
	var docs []json.RawMessage
	if err := json.Unmarshal(out, &docs); err != nil {
		t.Fatal(err)
	}
	return docs
}

// flagsOf returns the value of each --flag in args (flags given as
// "--name value" pairs).
func flagsOf(t *testing.T, args []string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for i := 0; i < len(args); i++ {
		if !strings.HasPrefix(args[i], "--") || i+1 == len(args) {
			t.Fatalf("arguments %q: want --flag value pairs", args)
		}
		m[args[i]] = args[i+1]
		i++
	}
	return m
}

// knownFlags checks that every flag named is one the binary lists.
func knownFlags(t *testing.T, where string, flags map[string]string) {
	t.Helper()
	help, _, _ := cli(t, nil, "--help")
	for f := range flags {
		if !regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(f) + `\b`).MatchString(help) {
			t.Fatalf("%s passes %s, which rlserver --help does not list", where, f)
		}
	}
}

// k8sObject holds the fields of the manifests that the checks read.
type k8sObject struct {
	APIVersion string `json:"apiVersion"`
	Kind       string
	Metadata   struct{ Name string }
	Spec       struct {
		ClusterIP                string `json:"clusterIP"`
		PublishNotReadyAddresses bool   `json:"publishNotReadyAddresses"`
		Selector                 json.RawMessage
		Ports                    []struct{ Port int }
		ServiceName              string `json:"serviceName"`
		Replicas                 int
		MaxUnavailable           any `json:"maxUnavailable"`
		Template                 struct {
			Metadata struct{ Labels map[string]string }
			Spec     struct {
				SecurityContext struct {
					RunAsUser int `json:"runAsUser"`
					FSGroup   int `json:"fsGroup"`
				} `json:"securityContext"`
				Containers []k8sContainer
			}
		}
		VolumeClaimTemplates []struct{ Metadata struct{ Name string } } `json:"volumeClaimTemplates"`
	}
}

type k8sContainer struct {
	Image   string
	Command []string
	Args    []string
	Env     []struct {
		Name      string
		ValueFrom struct {
			FieldRef     struct{ FieldPath string } `json:"fieldRef"`
			SecretKeyRef struct{ Name, Key string } `json:"secretKeyRef"`
		} `json:"valueFrom"`
	}
	VolumeMounts []struct {
		Name      string
		MountPath string `json:"mountPath"`
	} `json:"volumeMounts"`
	Ports []struct {
		Name          string
		ContainerPort int `json:"containerPort"`
	}
	StartupProbe   *k8sProbe `json:"startupProbe"`
	ReadinessProbe *k8sProbe `json:"readinessProbe"`
	LivenessProbe  *k8sProbe `json:"livenessProbe"`
}

type k8sProbe struct {
	Exec    struct{ Command []string }
	HTTPGet struct {
		Path string
		Port any // a number or a port's name
	} `json:"httpGet"`
}

// port returns the number of a probe's port, given by number or name.
func (c k8sContainer) port(p any) string {
	if name, ok := p.(string); ok {
		for _, cp := range c.Ports {
			if cp.Name == name {
				return strconv.Itoa(cp.ContainerPort)
			}
		}
		return ""
	}
	return fmt.Sprint(p)
}

// selects reports whether a selector (a Service's map, or matchLabels)
// matches labels.
func selects(t *testing.T, raw json.RawMessage, labels map[string]string) bool {
	t.Helper()
	var sel struct {
		MatchLabels map[string]string `json:"matchLabels"`
	}
	var plain map[string]string
	if json.Unmarshal(raw, &sel) == nil && sel.MatchLabels != nil {
		plain = sel.MatchLabels
	} else if err := json.Unmarshal(raw, &plain); err != nil {
		t.Fatalf("selector %s: %v", raw, err)
	}
	if len(plain) == 0 {
		return false
	}
	for k, v := range plain {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func k8sObjects(t *testing.T, path string) map[string]k8sObject {
	t.Helper()
	objs := map[string]k8sObject{}
	for _, raw := range yamlDocs(t, path) {
		var o k8sObject
		if err := json.Unmarshal(raw, &o); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if o.APIVersion == "" || o.Kind == "" || o.Metadata.Name == "" {
			t.Fatalf("%s: a document without apiVersion, kind or metadata.name: %s", path, raw)
		}
		objs[o.Kind+"/"+o.Metadata.Name] = o
	}
	return objs
}

func TestDeployKubernetes(t *testing.T) {
	dir := "../deploy/kubernetes"
	rl := k8sObjects(t, filepath.Join(dir, "rlserver.yaml"))
	etcd := k8sObjects(t, filepath.Join(dir, "etcd.yaml"))
	get := func(objs map[string]k8sObject, key string) k8sObject {
		t.Helper()
		o, ok := objs[key]
		if !ok {
			t.Fatalf("no %s in %s", key, dir)
		}
		return o
	}

	sts := get(rl, "StatefulSet/rlserver")
	headless := get(rl, "Service/"+sts.Spec.ServiceName)
	if headless.Spec.ClusterIP != "None" || !headless.Spec.PublishNotReadyAddresses {
		t.Fatalf("the StatefulSet's Service %s must be headless and publish pods not ready yet", headless.Metadata.Name)
	}
	labels := sts.Spec.Template.Metadata.Labels
	for _, key := range []string{"Service/" + sts.Spec.ServiceName, "Service/rlserver", "PodDisruptionBudget/rlserver"} {
		if !selects(t, get(rl, key).Spec.Selector, labels) {
			t.Fatalf("%s does not select the StatefulSet's pods (%v)", key, labels)
		}
	}
	if !selects(t, sts.Spec.Selector, labels) {
		t.Fatalf("the StatefulSet's selector does not match its pods")
	}
	if maxUnavailable := get(rl, "PodDisruptionBudget/rlserver").Spec.MaxUnavailable; maxUnavailable != float64(1) {
		t.Fatalf("PodDisruptionBudget maxUnavailable = %v, want 1", maxUnavailable)
	}
	if sts.Spec.Replicas != 6 || len(sts.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("StatefulSet: %d replicas, %d containers; want 6 and 1", sts.Spec.Replicas, len(sts.Spec.Template.Spec.Containers))
	}
	c := sts.Spec.Template.Spec.Containers[0]
	flags := flagsOf(t, c.Args)
	knownFlags(t, "rlserver.yaml", flags)

	// One volume per pod, mounted where --dir points.
	if len(sts.Spec.VolumeClaimTemplates) != 1 {
		t.Fatalf("want one volumeClaimTemplate, got %d", len(sts.Spec.VolumeClaimTemplates))
	}
	claim := sts.Spec.VolumeClaimTemplates[0].Metadata.Name
	mounted := false
	for _, m := range c.VolumeMounts {
		mounted = mounted || (m.Name == claim && m.MountPath == flags["--dir"])
	}
	if !mounted || flags["--dir"] == "" {
		t.Fatalf("--dir %q is not the mount of the claim %q: %+v", flags["--dir"], claim, c.VolumeMounts)
	}

	// Each pod announces its name under the headless Service.
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.ValueFrom.FieldRef.FieldPath
		if e.Name == "RLSERVER_REQUIREPASS" && e.ValueFrom.SecretKeyRef.Name == "" {
			t.Fatalf("RLSERVER_REQUIREPASS must come from a Secret")
		}
	}
	if env["POD_NAME"] != "metadata.name" || env["POD_NAMESPACE"] != "metadata.namespace" {
		t.Fatalf("POD_NAME and POD_NAMESPACE must come from the pod's metadata: %v", env)
	}
	if _, ok := env["RLSERVER_REQUIREPASS"]; !ok {
		t.Fatalf("no RLSERVER_REQUIREPASS: nodes need a password to reach each other in protected mode")
	}
	if want := "$(POD_NAME)." + headless.Metadata.Name + ".$(POD_NAMESPACE).svc."; !strings.HasPrefix(flags["--announce-host"], want) {
		t.Fatalf("--announce-host %q, want %s...", flags["--announce-host"], want)
	}
	if flags["--cluster-replicas"] != "1" || flags["--bind"] != "0.0.0.0" {
		t.Fatalf("--cluster-replicas %q, --bind %q; want 1 and 0.0.0.0", flags["--cluster-replicas"], flags["--bind"])
	}

	// The etcd endpoints are the etcd StatefulSet's pods.
	etcdSts := get(etcd, "StatefulSet/etcd")
	etcdSvc := get(etcd, "Service/"+etcdSts.Spec.ServiceName)
	if etcdSvc.Spec.ClusterIP != "None" {
		t.Fatalf("etcd's Service must be headless")
	}
	endpoints := strings.Split(flags["--cluster-etcd"], ",")
	if len(endpoints) != etcdSts.Spec.Replicas {
		t.Fatalf("--cluster-etcd %q names %d endpoints, etcd has %d members", flags["--cluster-etcd"], len(endpoints), etcdSts.Spec.Replicas)
	}
	for i, ep := range endpoints {
		if want := "etcd-" + strconv.Itoa(i) + "." + etcdSvc.Metadata.Name + ":2379"; ep != want {
			t.Fatalf("--cluster-etcd endpoint %d = %q, want %q", i, ep, want)
		}
	}
	etcdArgs := strings.Join(etcdSts.Spec.Template.Spec.Containers[0].Command, " ")
	for i := 0; i < etcdSts.Spec.Replicas; i++ {
		if member := "etcd-" + strconv.Itoa(i) + "=http://etcd-" + strconv.Itoa(i) + "." + etcdSvc.Metadata.Name + "."; !strings.Contains(etcdArgs, member) {
			t.Fatalf("etcd's --initial-cluster does not name %s...: %s", member, etcdArgs)
		}
	}
	if get(etcd, "PodDisruptionBudget/etcd").Spec.MaxUnavailable != float64(1) {
		t.Fatalf("etcd's PodDisruptionBudget must allow one member down at most")
	}

	// Probes run the binary's health check at the image's path, as the
	// image's user.
	entry := dockerfileLine(t, "../Dockerfile", "ENTRYPOINT")
	var entrypoint []string
	if err := json.Unmarshal([]byte(entry), &entrypoint); err != nil || len(entrypoint) != 1 {
		t.Fatalf("Dockerfile ENTRYPOINT %s: want one path", entry)
	}
	for name, p := range map[string]*k8sProbe{"startup": c.StartupProbe, "liveness": c.LivenessProbe} {
		if p == nil || !slices.Equal(p.Exec.Command, []string{entrypoint[0], "--healthcheck"}) {
			t.Fatalf("%s probe %+v, want exec %s --healthcheck", name, p, entrypoint[0])
		}
	}
	// Readiness is /readyz on the port --metrics-addr serves.
	_, metricsPort, _ := strings.Cut(flags["--metrics-addr"], ":")
	ready := c.ReadinessProbe
	if ready == nil || ready.HTTPGet.Path != "/readyz" || c.port(ready.HTTPGet.Port) != metricsPort {
		t.Fatalf("readiness probe %+v, want GET /readyz on --metrics-addr's port %s", ready, metricsPort)
	}
	if user := dockerfileLine(t, "../Dockerfile", "USER"); user != "65532:65532" ||
		sts.Spec.Template.Spec.SecurityContext.RunAsUser != 65532 || sts.Spec.Template.Spec.SecurityContext.FSGroup != 65532 {
		t.Fatalf("runAsUser %d, fsGroup %d, Dockerfile USER %s: want the image's 65532",
			sts.Spec.Template.Spec.SecurityContext.RunAsUser, sts.Spec.Template.Spec.SecurityContext.FSGroup, user)
	}

	// kustomization.yaml applies every manifest.
	var kust struct{ Resources []string }
	if err := json.Unmarshal(yamlDocs(t, filepath.Join(dir, "kustomization.yaml"))[0], &kust); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	var want []string
	for _, f := range files {
		if b := filepath.Base(f); b != "kustomization.yaml" {
			want = append(want, b)
		}
	}
	slices.Sort(kust.Resources)
	if !slices.Equal(kust.Resources, want) {
		t.Fatalf("kustomization.yaml lists %v, want %v", kust.Resources, want)
	}
}

// dockerfileLine returns the arguments of the last instruction named
// instr in a Dockerfile (the final stage's).
func dockerfileLine(t *testing.T, path, instr string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got string
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, instr+" "); ok {
			got = strings.TrimSpace(rest)
		}
	}
	if got == "" {
		t.Fatalf("%s has no %s", path, instr)
	}
	return got
}

// TestDockerfilesAgree: the scratch image the tests build and run is the
// published Dockerfile's final stage; every instruction that shapes the
// running container is the same in both, and the version label defaults
// to the binary's version.
func TestDockerfilesAgree(t *testing.T) {
	final := func(path string) []string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		// Instructions of the last stage, continuation lines joined.
		text := strings.ReplaceAll(string(b), "\\\n", " ")
		var out []string
		for _, line := range strings.Split(text, "\n") {
			line = strings.Join(strings.Fields(line), " ")
			if strings.HasPrefix(line, "FROM ") {
				out = nil
			}
			for _, instr := range []string{"ARG", "LABEL", "ENV", "VOLUME", "EXPOSE", "USER", "HEALTHCHECK", "ENTRYPOINT", "CMD"} {
				if strings.HasPrefix(line, instr+" ") {
					out = append(out, line)
				}
			}
		}
		return out
	}
	published, scratch := final("../Dockerfile"), final("../deploy/docker/Dockerfile.scratch")
	if !slices.Equal(published, scratch) {
		t.Fatalf("the final stages differ:\nDockerfile:\n  %s\nDockerfile.scratch:\n  %s",
			strings.Join(published, "\n  "), strings.Join(scratch, "\n  "))
	}
	if !slices.Contains(published, "ARG VERSION="+command.Version) {
		t.Fatalf("the Dockerfile's ARG VERSION default is not %s: %q", command.Version, published)
	}
}

// composeCommand returns how to run Compose here: the docker compose
// plugin, or the docker-compose program (Debian's docker-compose, which
// scripts/setup.sh installs).
func composeCommand(t *testing.T) []string {
	t.Helper()
	if exec.Command("docker", "compose", "version").Run() == nil {
		return []string{"docker", "compose"}
	}
	if _, err := exec.LookPath("docker-compose"); err == nil {
		return []string{"docker-compose"}
	}
	t.Fatalf("neither docker compose nor docker-compose: run scripts/setup.sh as root (it installs Debian's docker-compose)")
	return nil
}

const composeFile = "../deploy/compose/docker-compose.yml"

// compose runs Compose on composeFile (and more files) with env added.
func compose(t *testing.T, env []string, args ...string) (string, error) {
	t.Helper()
	cc := composeCommand(t)
	cmd := exec.Command(cc[0], append(cc[1:], args...)...)
	cmd.Env = append(cleanEnv(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// composeService is what the checks read of a service in the resolved
// configuration (docker compose config).
type composeService struct {
	Image       string
	Build       struct{ Context string }
	Command     []string
	Environment map[string]string
	Volumes     []json.RawMessage
	DependsOn   map[string]struct{ Condition string } `json:"depends_on"`
	Profiles    []string
}

func TestDeployCompose(t *testing.T) {
	// The password is required: nodes reach each other in protected mode.
	if out, err := compose(t, nil, "-f", composeFile, "config", "-q"); err == nil || !strings.Contains(out, "set RLSERVER_REQUIREPASS") {
		t.Fatalf("config without RLSERVER_REQUIREPASS: %v %s; want an error asking for it", err, out)
	}
	out, err := compose(t, []string{"RLSERVER_REQUIREPASS=s3cret"}, "-f", composeFile, "config")
	if err != nil {
		t.Fatalf("docker compose config: %v\n%s", err, out)
	}
	resolved := filepath.Join(t.TempDir(), "resolved.yml")
	if err := os.WriteFile(resolved, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	var cfg struct{ Services map[string]composeService }
	if err := json.Unmarshal(yamlDocs(t, resolved)[0], &cfg); err != nil {
		t.Fatal(err)
	}
	if _, ok := cfg.Services["etcd"]; !ok {
		t.Fatalf("no etcd service")
	}
	repo, _ := filepath.Abs("..")
	names := map[string]bool{}
	volumes := map[string]bool{}
	for i := 1; i <= 6; i++ {
		name := "rlserver-" + strconv.Itoa(i)
		s, ok := cfg.Services[name]
		if !ok {
			t.Fatalf("no service %s", name)
		}
		if s.Build.Context != repo {
			t.Fatalf("%s builds %q, want the repository (%s)", name, s.Build.Context, repo)
		}
		if s.Environment["RLSERVER_REQUIREPASS"] != "s3cret" || s.DependsOn["etcd"].Condition != "service_healthy" {
			t.Fatalf("%s: environment %v, depends_on %v; want the password and a healthy etcd", name, s.Environment, s.DependsOn)
		}
		flags := flagsOf(t, s.Command)
		knownFlags(t, name, flags)
		if flags["--announce-host"] != name || flags["--cluster-etcd"] != "etcd:2379" ||
			flags["--cluster-replicas"] != "1" || flags["--cluster-name"] == "" || flags["--dir"] != "/data" {
			t.Fatalf("%s: flags %v; want --announce-host %s, --cluster-etcd etcd:2379, --cluster-replicas 1, a --cluster-name, --dir /data", name, flags, name)
		}
		names[flags["--cluster-name"]] = true
		if len(s.Volumes) != 1 {
			t.Fatalf("%s: volumes %s, want one at /data", name, s.Volumes)
		}
		var short string
		var long struct{ Source, Target string }
		if json.Unmarshal(s.Volumes[0], &short) == nil {
			src, target, _ := strings.Cut(short, ":")
			long.Source, long.Target = src, strings.Split(target, ":")[0]
		} else if err := json.Unmarshal(s.Volumes[0], &long); err != nil {
			t.Fatal(err)
		}
		if long.Target != "/data" || volumes[long.Source] {
			t.Fatalf("%s: volume %s at %s; want its own volume at /data", name, long.Source, long.Target)
		}
		volumes[long.Source] = true
	}
	if len(names) != 1 {
		t.Fatalf("the nodes name %d clusters, want one: %v", len(names), names)
	}
}
