package rls

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
)

// TestConfigErrors: each configuration envoyproxy/ratelimit refuses is
// refused, naming the file and the line.
func TestConfigErrors(t *testing.T) {
	cases := []struct{ name, yaml, want string }{
		{"empty domain", "descriptors: []\n", "f.yaml:1: config file cannot have empty domain"},
		{"empty file", "", "f.yaml: config file cannot have empty domain"},
		{"yaml syntax", "domain: a\ndescriptors:\n  - key: [\n", "f.yaml:3: error loading config file: line 3: did not find expected node content"},
		{"unknown key", "domain: a\ndescriptors:\n  - key: k\n    colour: blue\n", "f.yaml:4: config error, unknown key 'colour'"},
		{"unknown key in rate_limit", "domain: a\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: second\n      requests_per_second: 1\n",
			"f.yaml:6: config error, unknown key 'requests_per_second'"},
		{"key not a string", "domain: a\n1: x\n", "f.yaml:2: config error, key is not of type string: 1"},
		{"list of scalars", "domain: a\ndescriptors:\n  - k\n", "f.yaml:3: config error, yaml file contains list of type other than map: k"},
		{"float", "domain: a\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: second\n      requests_per_unit: 1.5\n",
			"f.yaml:6: error checking config"},
		{"negative", "domain: a\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: second\n      requests_per_unit: -1\n",
			"f.yaml:6: error loading config file: '-1' is not an integer"},
		{"empty key", "domain: a\ndescriptors:\n  - value: v\n", "f.yaml:3: descriptor has empty key"},
		{"duplicate", "domain: a\ndescriptors:\n  - key: k\n    value: v\n  - key: k\n    value: v\n", "f.yaml:5: duplicate descriptor composite key 'a.k_v'"},
		{"duplicate key only", "domain: a\ndescriptors:\n  - key: k\n  - key: k\n", "f.yaml:4: duplicate descriptor composite key 'a.k'"},
		{"duplicate nested", "domain: a\ndescriptors:\n  - key: k\n    descriptors:\n      - key: n\n      - key: n\n", "f.yaml:6: duplicate descriptor composite key 'a.k.n'"},
		{"bad unit", "domain: a\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: fortnight\n      requests_per_unit: 1\n", "f.yaml:5: invalid rate limit unit 'fortnight'"},
		{"no unit", "domain: a\ndescriptors:\n  - key: k\n    rate_limit:\n      requests_per_unit: 1\n", "f.yaml:5: invalid rate limit unit ''"},
		{"unknown unit", "domain: a\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: unknown\n      requests_per_unit: 1\n", "f.yaml:5: invalid rate limit unit 'unknown'"},
		{"unlimited with unit", "domain: a\ndescriptors:\n  - key: k\n    rate_limit:\n      unlimited: true\n      unit: second\n", "f.yaml:6: should not specify rate limit unit when unlimited"},
		{"replaces itself", "domain: a\ndescriptors:\n  - key: k\n    rate_limit:\n      name: n\n      unit: second\n      requests_per_unit: 1\n      replaces:\n        - name: n\n",
			"f.yaml:5: replaces should not contain name of same descriptor"},
		{"empty replaces", "domain: a\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: second\n      requests_per_unit: 1\n      replaces:\n        - name: \"\"\n",
			"f.yaml:8: should not have an empty replaces entry"},
		{"share_threshold without wildcard", "domain: a\ndescriptors:\n  - key: k\n    value: v\n    share_threshold: true\n",
			"f.yaml:3: share_threshold can only be used with wildcard values (containing '*'), but found key 'k_v'"},
		{"bad boolean", "domain: a\ndescriptors:\n  - key: k\n    shadow_mode: maybe\n", "f.yaml:4: error loading config file: 'maybe' is not a boolean"},
		// Ours: the algorithms' keys.
		{"bad algorithm", "domain: a\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: second\n      requests_per_unit: 1\n      algorithm: leaky\n", "f.yaml:7: invalid algorithm 'leaky'"},
		{"burst on a window", "domain: a\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: second\n      requests_per_unit: 1\n      burst: 5\n", "f.yaml:7: burst needs algorithm token_bucket or gcra"},
		{"zero multiplier", "domain: a\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: second\n      requests_per_unit: 1\n      unit_multiplier: 0\n", "f.yaml:7: unit_multiplier must be at least 1"},
		{"window too long", "domain: a\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: year\n      requests_per_unit: 1\n      unit_multiplier: 1000\n", "f.yaml:7: unit × unit_multiplier exceeds"},
		{"unlimited with algorithm", "domain: a\ndescriptors:\n  - key: k\n    rate_limit:\n      unlimited: true\n      algorithm: gcra\n", "f.yaml:6: an unlimited rate_limit takes no algorithm"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseConfig("f.yaml", []byte(c.yaml))
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("err %v, want a ConfigError", err)
			}
			if !strings.HasPrefix(err.Error(), c.want) {
				t.Fatalf("err %q, want %q", err, c.want)
			}
		})
	}
}

// fullConfig uses every key envoyproxy/ratelimit accepts, and ours.
const fullConfig = `domain: full
descriptors:
  - key: remote_address
    detailed_metric: true
    rate_limit:
      unit: second
      requests_per_unit: 10
  - key: path
    value: /a/*/c
    value_to_metric: true
    rate_limit:
      unit: minute
      requests_per_unit: 5
  - key: path
    value: /shared*
    share_threshold: true
    rate_limit:
      unit: hour
      requests_per_unit: 7
  - key: quota
    quota_mode: true
    metadata:
      anything: [1, 2.5, {nested: true}]
    rate_limit:
      unit: day
      requests_per_unit: 100
  - key: bucket
    shadow_mode: true
    rate_limit:
      name: b
      unit: week
      requests_per_unit: 3
      algorithm: token_bucket
      burst: 9
      unit_multiplier: 2
      replaces:
        - name: other
  - key: free
    rate_limit:
      unlimited: true
  - key: parent
    value: p
    descriptors:
      - key: child
        rate_limit:
          unit: month
          requests_per_unit: 1
      - key: child
        value: special
        rate_limit:
          unit: year
          requests_per_unit: 2
  - key: zero
    rate_limit:
      unit: second
      requests_per_unit: 0
  - key: noval
`

func mustParse(t *testing.T, y string) *Config {
	t.Helper()
	c, err := ParseConfig("f.yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func entries(kv ...string) []Entry {
	var e []Entry
	for i := 0; i < len(kv); i += 2 {
		e = append(e, Entry{kv[i], kv[i+1]})
	}
	return e
}

func TestConfigAcceptsEveryKey(t *testing.T) {
	c := mustParse(t, fullConfig)
	m, ok := c.Lookup("full", entries("bucket", "x"))
	if !ok {
		t.Fatal("bucket unmatched")
	}
	r := m.Rule
	if r.Algorithm != TokenBucket || r.Burst != 9 || r.Multiplier != 2 || r.Unit != pb.RateLimitResponse_RateLimit_WEEK ||
		!r.ShadowMode || r.Name != "b" || len(r.Replaces) != 1 || r.Replaces[0] != "other" || r.Capacity() != 9 || r.WindowSeconds() != 14*86400 {
		t.Fatalf("bucket rule %+v", r)
	}
	if m.Stat != "full.bucket" {
		t.Fatalf("stat %q", m.Stat)
	}
	if m, _ := c.Lookup("full", entries("quota", "q")); !m.Rule.QuotaMode || m.Rule.Unit != pb.RateLimitResponse_RateLimit_DAY {
		t.Fatalf("quota rule %+v", m.Rule)
	}
	if m, _ := c.Lookup("full", entries("free", "x")); !m.Rule.Unlimited {
		t.Fatalf("free rule %+v", m.Rule)
	}
	if m, _ := c.Lookup("full", entries("zero", "x")); m.Rule.RequestsPerUnit != 0 {
		t.Fatalf("zero rule %+v", m.Rule)
	}
}

func TestConfigLookup(t *testing.T) {
	c := mustParse(t, fullConfig)
	cases := []struct {
		entries      []Entry
		ok           bool
		rps          uint32
		values, stat string
	}{
		{entries("remote_address", "1.2.3.4"), true, 10, "1.2.3.4", "full.remote_address_1.2.3.4"}, // detailed_metric
		{entries("path", "/a/b/c"), true, 5, "/a/b/c", "full.path_/a/b/c"},                         // value_to_metric
		{entries("path", "/a/c"), false, 0, "", ""},
		{entries("path", "/shared/1"), true, 7, "/shared*", "full.path_/shared*"}, // share_threshold: one counter
		{entries("parent", "p", "child", "any"), true, 1, "p,any", "full.parent_p.child"},
		{entries("parent", "p", "child", "special"), true, 2, "p,special", "full.parent_p.child_special"},
		{entries("parent", "p"), false, 0, "", ""},
		{entries("parent", "q", "child", "x"), false, 0, "", ""},
		{entries("remote_address", "1", "more", "x"), false, 0, "", ""},
		{entries("noval", "x"), false, 0, "", ""},
		{entries("unknown", "x"), false, 0, "", ""},
	}
	for _, k := range cases {
		m, ok := c.Lookup("full", k.entries)
		if ok != k.ok {
			t.Fatalf("%v: matched %v", k.entries, ok)
		}
		if !ok {
			continue
		}
		if m.Rule.RequestsPerUnit != k.rps || strings.Join(m.Values, ",") != k.values || m.Stat != k.stat {
			t.Fatalf("%v: rps %d values %q stat %q", k.entries, m.Rule.RequestsPerUnit, m.Values, m.Stat)
		}
	}
	if _, ok := c.Lookup("other", entries("remote_address", "1")); ok {
		t.Fatal("unknown domain matched")
	}
}

// TestConfigUnderscoreNoCollision: envoyproxy/ratelimit joins key and
// value with '_'; here key a_b with value c and key a with value b_c are
// two descriptors.
func TestConfigUnderscoreNoCollision(t *testing.T) {
	c := mustParse(t, "domain: d\ndescriptors:\n  - key: a_b\n    value: c\n    rate_limit: {unit: second, requests_per_unit: 1}\n  - key: a\n    value: b_c\n    rate_limit: {unit: second, requests_per_unit: 2}\n")
	m1, _ := c.Lookup("d", entries("a_b", "c"))
	m2, _ := c.Lookup("d", entries("a", "b_c"))
	if m1.Rule.RequestsPerUnit != 1 || m2.Rule.RequestsPerUnit != 2 {
		t.Fatalf("rules %d %d", m1.Rule.RequestsPerUnit, m2.Rule.RequestsPerUnit)
	}
	k1 := string(appendKey(nil, "d", entries("a_b", "c"), m1.Values, m1.Rule))
	k2 := string(appendKey(nil, "d", entries("a", "b_c"), m2.Values, m2.Rule))
	if k1 != "rls:d:a_b=c:fixed_window/1s" || k2 != "rls:d:a=b_c:fixed_window/1s" {
		t.Fatalf("keys %q %q", k1, k2)
	}
}

func TestKeyEscaping(t *testing.T) {
	r := &Rule{Unit: pb.RateLimitResponse_RateLimit_MINUTE, Multiplier: 5, Algorithm: SlidingWindow}
	got := string(appendKey(nil, "d:x", entries("k=1", "v:{t}% \n"), []string{"v:{t}% \n"}, r))
	if got != "rls:d%3Ax:k%3D1=v%3A%7Bt%7D%25%20%0A:sliding_window/300s" {
		t.Fatalf("key %q", got)
	}
}

func TestLoadConfigDirectory(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.yaml"), []byte("domain: one\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1}\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "b.yml"), []byte("domain: two\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not yaml: ["), 0o644)
	c, err := LoadConfig(dir)
	if err != nil || c.Domains() != 2 || len(c.Files) != 2 {
		t.Fatalf("%v %+v", err, c)
	}
	os.WriteFile(filepath.Join(dir, "c.yaml"), []byte("domain: one\n"), 0o644)
	_, err = LoadConfig(dir)
	if err == nil || err.Error() != filepath.Join(dir, "c.yaml")+":1: duplicate domain 'one' in config file" {
		t.Fatalf("err %v", err)
	}
}

func TestWildcardMatch(t *testing.T) {
	for _, c := range []struct {
		pattern, value string
		want           bool
	}{
		{"foo*", "foo", true}, {"foo*", "foobar", true}, {"foo*", "fo", false},
		{"*bar", "xbar", true}, {"a*b*c", "aXbYc", true}, {"a*b*c", "acb", false},
		{"a*a", "a", false}, {"*", "", true}, {"ab", "ab", true},
	} {
		if got := wildcardMatch(strings.Split(c.pattern, "*"), c.value); got != c.want {
			t.Errorf("%q ~ %q = %v", c.pattern, c.value, got)
		}
	}
}

// TestDeployConfig: the configuration shipped in deploy/envoy loads.
func TestDeployConfig(t *testing.T) {
	c, err := LoadConfig("../deploy/envoy/ratelimit.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m, ok := c.Lookup("edge", entries("header_match", "login", "user", "u1"))
	if !ok || m.Rule.Algorithm != SlidingWindow || m.Rule.WindowSeconds() != 30 {
		t.Fatalf("login rule %+v %v", m.Rule, ok)
	}
}
