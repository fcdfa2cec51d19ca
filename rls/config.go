// Package rls serves Envoy's rate limit service
// (envoy.service.ratelimit.v3.RateLimitService) over rlserver's keyspace:
// envoyproxy/ratelimit's configuration files and replies, each descriptor's
// state an ordinary rlserver key decided by the native limiter commands.
package rls

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/protobuf/types/known/structpb"
	"gopkg.in/yaml.v3"
)

// Algorithm is how a rule counts.
type Algorithm uint8

const (
	FixedWindow   Algorithm = iota // envoyproxy/ratelimit's: windows aligned to the Unix epoch
	SlidingWindow                  // CL.WINDOW ... SLIDING
	TokenBucket                    // CL.TOKENBUCKET
	GCRA                           // CL.THROTTLE's GCRA
)

var algorithmNames = []string{"fixed_window", "sliding_window", "token_bucket", "gcra"}

func (a Algorithm) String() string { return algorithmNames[a] }

// unitSeconds are the units' lengths, as envoyproxy/ratelimit's
// UnitToDivider (a month is 30 days, a year 365).
var unitSeconds = map[pb.RateLimitResponse_RateLimit_Unit]int64{
	pb.RateLimitResponse_RateLimit_SECOND: 1,
	pb.RateLimitResponse_RateLimit_MINUTE: 60,
	pb.RateLimitResponse_RateLimit_HOUR:   3600,
	pb.RateLimitResponse_RateLimit_DAY:    86400,
	pb.RateLimitResponse_RateLimit_WEEK:   7 * 86400,
	pb.RateLimitResponse_RateLimit_MONTH:  30 * 86400,
	pb.RateLimitResponse_RateLimit_YEAR:   365 * 86400,
}

// maxWindowSeconds bounds unit × unit_multiplier by the longest duration
// the limiter commands accept (about 106751 days).
const maxWindowSeconds = 106751 * 86400

// Rule is one rate_limit of a configuration (or a request's override).
type Rule struct {
	RequestsPerUnit uint32
	Unit            pb.RateLimitResponse_RateLimit_Unit
	Multiplier      uint32 // unit_multiplier, at least 1
	Algorithm       Algorithm
	Burst           uint32 // token_bucket and gcra: the largest burst (0: RequestsPerUnit)
	Unlimited       bool
	ShadowMode      bool
	QuotaMode       bool
	DetailedMetric  bool
	Name            string
	Replaces        []string
	// Stat is the rule's metric key: the configuration path as
	// envoyproxy/ratelimit names it (domain.key_value.key).
	Stat string
	// Metadata is the descriptor's metadata (nil: none), reported in the
	// response's dynamic metadata when the rule passes. Shared by every
	// request: read only.
	Metadata *structpb.Struct
	// limit is the reply's current_limit, built once.
	limit *pb.RateLimitResponse_RateLimit
}

// WindowSeconds is the rule's window: its unit times its multiplier.
func (r *Rule) WindowSeconds() int64 { return unitSeconds[r.Unit] * int64(r.Multiplier) }

// Window is WindowSeconds as a duration.
func (r *Rule) Window() time.Duration { return time.Duration(r.WindowSeconds()) * time.Second }

// Capacity is the most the rule admits at once.
func (r *Rule) Capacity() int64 {
	if r.Burst > 0 && (r.Algorithm == TokenBucket || r.Algorithm == GCRA) {
		return int64(r.Burst)
	}
	return int64(r.RequestsPerUnit)
}

func (r *Rule) currentLimit() *pb.RateLimitResponse_RateLimit {
	if r.limit != nil {
		return r.limit
	}
	l := &pb.RateLimitResponse_RateLimit{Name: r.Name, RequestsPerUnit: r.RequestsPerUnit, Unit: r.Unit}
	return l
}

// node is one level of a domain's descriptor tree.
type node struct {
	exact   map[[2]string]*node // (key, value)
	keyOnly map[string]*node    // a descriptor with a key and no value: any value
	wild    []wildEntry         // values with '*', in the file's order
	rule    *Rule
	// valueToMetric names the request's value in the metric key;
	// shareThreshold counts every value matching a wildcard as one.
	valueToMetric  bool
	shareThreshold bool
}

type wildEntry struct {
	key     string
	pattern string
	parts   []string // pattern split on '*'
	n       *node
}

func newNode() *node {
	return &node{exact: map[[2]string]*node{}, keyOnly: map[string]*node{}}
}

// Config is a loaded configuration: every file's domains.
type Config struct {
	domains map[string]*node
	Files   []string
}

// Domains returns the number of domains configured.
func (c *Config) Domains() int { return len(c.domains) }

// ConfigError is a configuration refused: the file, the line (0 when the
// file as a whole is at fault) and why.
type ConfigError struct {
	File string
	Line int
	Msg  string
}

func (e *ConfigError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

// LoadConfig reads path, a YAML file or a directory of *.yaml and *.yml
// files (read in name order), into a configuration.
func LoadConfig(path string) (*Config, error) {
	files, err := configFiles(path)
	if err != nil {
		return nil, err
	}
	c := &Config{domains: map[string]*node{}, Files: files}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, &ConfigError{File: f, Msg: err.Error()}
		}
		if err := c.add(f, data); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func configFiles(path string) ([]string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, &ConfigError{File: path, Msg: err.Error()}
	}
	if !st.IsDir() {
		return []string{path}, nil
	}
	ents, err := os.ReadDir(path)
	if err != nil {
		return nil, &ConfigError{File: path, Msg: err.Error()}
	}
	var files []string
	for _, e := range ents {
		n := e.Name()
		if !e.IsDir() && !strings.HasPrefix(n, ".") && (strings.HasSuffix(n, ".yaml") || strings.HasSuffix(n, ".yml")) {
			files = append(files, filepath.Join(path, n))
		}
	}
	sort.Strings(files)
	return files, nil
}

// ParseConfig parses one file's contents (name is for errors).
func ParseConfig(name string, data []byte) (*Config, error) {
	c := &Config{domains: map[string]*node{}, Files: []string{name}}
	if err := c.add(name, data); err != nil {
		return nil, err
	}
	return c, nil
}

// validKeys are the keys envoyproxy/ratelimit accepts anywhere in a file,
// and ours (algorithm, burst, unit_multiplier).
var validKeys = map[string]bool{
	"domain": true, "key": true, "value": true, "descriptors": true, "rate_limit": true,
	"unit": true, "requests_per_unit": true, "unlimited": true, "shadow_mode": true,
	"quota_mode": true, "name": true, "replaces": true, "detailed_metric": true,
	"value_to_metric": true, "share_threshold": true, "metadata": true,
	"algorithm": true, "burst": true, "unit_multiplier": true,
}

// parser reads one file.
type parser struct {
	file string
}

func (p *parser) errf(n *yaml.Node, format string, args ...any) error {
	line := 0
	if n != nil {
		line = n.Line
	}
	return &ConfigError{File: p.file, Line: line, Msg: fmt.Sprintf(format, args...)}
}

func (c *Config) add(name string, data []byte) error {
	p := &parser{file: name}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if err.Error() == "EOF" {
			return &ConfigError{File: name, Msg: "config file cannot have empty domain"}
		}
		return &ConfigError{File: name, Line: yamlErrLine(err), Msg: "error loading config file: " + strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind != yaml.MappingNode {
		return p.errf(root, "error loading config file: the file must be a mapping with domain and descriptors")
	}
	if err := p.validateKeys(root); err != nil {
		return err
	}
	var domain string
	var descs *yaml.Node
	for i := 0; i < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		switch k.Value {
		case "domain":
			s, err := p.str(v)
			if err != nil {
				return err
			}
			domain = s
		case "descriptors":
			descs = v
		}
	}
	if domain == "" {
		return p.errf(root, "config file cannot have empty domain")
	}
	if _, dup := c.domains[domain]; dup {
		return p.errf(root, "duplicate domain '%s' in config file", domain)
	}
	top := newNode()
	if err := p.descriptors(top, domain, descs); err != nil {
		return err
	}
	c.domains[domain] = top
	return nil
}

// yamlErrLine finds "line N" in a YAML error.
func yamlErrLine(err error) int {
	s := err.Error()
	i := strings.Index(s, "line ")
	if i < 0 {
		return 0
	}
	j := i + 5
	for j < len(s) && s[j] >= '0' && s[j] <= '9' {
		j++
	}
	n, _ := strconv.Atoi(s[i+5 : j])
	return n
}

// validateKeys refuses, as envoyproxy/ratelimit does, a key it does not
// know anywhere in the file, a list of anything but mappings, and a value
// of another type than string, integer, boolean or null (metadata is free
// form).
func (p *parser) validateKeys(m *yaml.Node) error {
	for i := 0; i < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.Tag != "!!str" {
			return p.errf(k, "config error, key is not of type string: %v", k.Value)
		}
		if !validKeys[k.Value] {
			return p.errf(k, "config error, unknown key '%s'", k.Value)
		}
		if k.Value == "metadata" {
			continue
		}
		if v.Kind == yaml.AliasNode {
			v = v.Alias
		}
		switch v.Kind {
		case yaml.SequenceNode:
			for _, e := range v.Content {
				if e.Kind == yaml.AliasNode {
					e = e.Alias
				}
				if e.Kind != yaml.MappingNode {
					return p.errf(e, "config error, yaml file contains list of type other than map: %v", e.Value)
				}
				if err := p.validateKeys(e); err != nil {
					return err
				}
			}
		case yaml.MappingNode:
			if err := p.validateKeys(v); err != nil {
				return err
			}
		case yaml.ScalarNode:
			switch v.Tag {
			case "!!str", "!!int", "!!bool", "!!null":
			default:
				return p.errf(v, "error checking config: '%s' is not a string, an integer or a boolean", v.Value)
			}
		default:
			return p.errf(v, "error checking config")
		}
	}
	return nil
}

func (p *parser) str(v *yaml.Node) (string, error) {
	if v.Kind == yaml.AliasNode {
		v = v.Alias
	}
	if v.Kind != yaml.ScalarNode {
		return "", p.errf(v, "error loading config file: expected a string")
	}
	if v.Tag == "!!null" {
		return "", nil
	}
	return v.Value, nil
}

func (p *parser) boolean(v *yaml.Node) (bool, error) {
	var b bool
	if err := v.Decode(&b); err != nil {
		return false, p.errf(v, "error loading config file: '%s' is not a boolean", v.Value)
	}
	return b, nil
}

func (p *parser) uint32(v *yaml.Node) (uint32, error) {
	var n uint32
	if v.Tag == "!!null" {
		return 0, nil
	}
	if err := v.Decode(&n); err != nil {
		return 0, p.errf(v, "error loading config file: '%s' is not an integer from 0 to %d", v.Value, uint32(math.MaxUint32))
	}
	return n, nil
}

// metadata reads a descriptor's metadata, a mapping of anything, as
// envoyproxy/ratelimit converts it to a protobuf Struct (its parseMetadata
// in src/config/config_impl.go): integers and floats are numbers, keys are
// their text, an empty or null mapping is none. Scalars YAML would read as
// something else (timestamps, binary) stay the text written, as its YAML
// library leaves them.
func (p *parser) metadata(v *yaml.Node) (*structpb.Struct, error) {
	if v.Kind == yaml.AliasNode {
		v = v.Alias
	}
	if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
		return nil, nil
	}
	if v.Kind != yaml.MappingNode {
		return nil, p.errf(v, "error parsing metadata: metadata must be a mapping")
	}
	if len(v.Content) == 0 {
		return nil, nil
	}
	val, err := p.metaValue(v, 0)
	if err != nil {
		return nil, err
	}
	return val.GetStructValue(), nil
}

// maxMetadataDepth bounds the nesting of metadata (and so the recursion
// over it, whatever aliases a file plays with).
const maxMetadataDepth = 64

func (p *parser) metaValue(v *yaml.Node, depth int) (*structpb.Value, error) {
	if depth > maxMetadataDepth {
		return nil, p.errf(v, "error parsing metadata: nested more than %d levels", maxMetadataDepth)
	}
	if v.Kind == yaml.AliasNode {
		v = v.Alias
	}
	switch v.Kind {
	case yaml.MappingNode:
		s := &structpb.Struct{Fields: make(map[string]*structpb.Value, len(v.Content)/2)}
		for i := 0; i+1 < len(v.Content); i += 2 {
			k := v.Content[i]
			if k.Kind == yaml.AliasNode {
				k = k.Alias
			}
			if k.Kind != yaml.ScalarNode {
				return nil, p.errf(k, "error parsing metadata: a key must be a scalar")
			}
			e, err := p.metaValue(v.Content[i+1], depth+1)
			if err != nil {
				return nil, err
			}
			s.Fields[k.Value] = e
		}
		return structpb.NewStructValue(s), nil
	case yaml.SequenceNode:
		l := &structpb.ListValue{Values: make([]*structpb.Value, len(v.Content))}
		for i, e := range v.Content {
			x, err := p.metaValue(e, depth+1)
			if err != nil {
				return nil, err
			}
			l.Values[i] = x
		}
		return structpb.NewListValue(l), nil
	case yaml.ScalarNode:
		switch v.Tag {
		case "!!null":
			return structpb.NewNullValue(), nil
		case "!!bool":
			var b bool
			if err := v.Decode(&b); err == nil {
				return structpb.NewBoolValue(b), nil
			}
		case "!!int", "!!float":
			var f float64
			if err := v.Decode(&f); err == nil {
				return structpb.NewNumberValue(f), nil
			}
		}
		return structpb.NewStringValue(v.Value), nil
	}
	return nil, p.errf(v, "error parsing metadata")
}

// wildcard reports whether a value is a wildcard pattern.
func wildcard(v string) bool { return strings.Contains(v, "*") }

func (p *parser) descriptors(parent *node, path string, seq *yaml.Node) error {
	if seq == nil || seq.Tag == "!!null" {
		return nil
	}
	if seq.Kind != yaml.SequenceNode {
		return p.errf(seq, "error loading config file: descriptors must be a list")
	}
	for _, d := range seq.Content {
		if d.Kind == yaml.AliasNode {
			d = d.Alias
		}
		var key, value string
		var rl, children *yaml.Node
		var shadow, quota, detailed, v2m, share bool
		var meta *structpb.Struct
		for i := 0; i < len(d.Content); i += 2 {
			k, v := d.Content[i], d.Content[i+1]
			var err error
			switch k.Value {
			case "key":
				key, err = p.str(v)
			case "value":
				value, err = p.str(v)
			case "rate_limit":
				rl = v
			case "descriptors":
				children = v
			case "shadow_mode":
				shadow, err = p.boolean(v)
			case "quota_mode":
				quota, err = p.boolean(v)
			case "detailed_metric":
				detailed, err = p.boolean(v)
			case "value_to_metric":
				v2m, err = p.boolean(v)
			case "share_threshold":
				share, err = p.boolean(v)
			case "metadata":
				meta, err = p.metadata(v)
			}
			if err != nil {
				return err
			}
		}
		if key == "" {
			return p.errf(d, "descriptor has empty key")
		}
		finalKey := key
		if value != "" {
			finalKey += "_" + value
		}
		full := path + "." + finalKey
		n := newNode()
		n.valueToMetric, n.shareThreshold = v2m, share
		switch {
		case value == "":
			if _, dup := parent.keyOnly[key]; dup {
				return p.errf(d, "duplicate descriptor composite key '%s'", full)
			}
			parent.keyOnly[key] = n
		case wildcard(value):
			for _, w := range parent.wild {
				if w.key == key && w.pattern == value {
					return p.errf(d, "duplicate descriptor composite key '%s'", full)
				}
			}
			parent.wild = append(parent.wild, wildEntry{key: key, pattern: value, parts: strings.Split(value, "*"), n: n})
		default:
			if _, dup := parent.exact[[2]string{key, value}]; dup {
				return p.errf(d, "duplicate descriptor composite key '%s'", full)
			}
			parent.exact[[2]string{key, value}] = n
		}
		if share && !wildcard(value) {
			return p.errf(d, "share_threshold can only be used with wildcard values (containing '*'), but found key '%s'", finalKey)
		}
		if rl != nil && rl.Tag != "!!null" {
			r, err := p.rule(rl)
			if err != nil {
				return err
			}
			r.ShadowMode, r.QuotaMode, r.DetailedMetric, r.Stat = shadow, quota, detailed, full
			r.Metadata = meta
			if !r.Unlimited {
				r.limit = r.currentLimit()
				if r.Multiplier > 1 {
					r.limit.UnitMultiplier = wrapU32(r.Multiplier)
				}
			}
			n.rule = r
		}
		if err := p.descriptors(n, full, children); err != nil {
			return err
		}
	}
	return nil
}

func (p *parser) rule(m *yaml.Node) (*Rule, error) {
	if m.Kind == yaml.AliasNode {
		m = m.Alias
	}
	if m.Kind != yaml.MappingNode {
		return nil, p.errf(m, "error loading config file: rate_limit must be a mapping")
	}
	r := &Rule{Multiplier: 1}
	var unit string
	var unitNode, algNode, burstNode, multNode *yaml.Node
	for i := 0; i < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		var err error
		switch k.Value {
		case "requests_per_unit":
			r.RequestsPerUnit, err = p.uint32(v)
		case "unit":
			unit, err = p.str(v)
			unitNode = v
		case "unlimited":
			r.Unlimited, err = p.boolean(v)
		case "name":
			r.Name, err = p.str(v)
		case "replaces":
			if v.Kind == yaml.AliasNode {
				v = v.Alias
			}
			if v.Kind != yaml.SequenceNode {
				if v.Tag == "!!null" {
					break
				}
				return nil, p.errf(v, "error loading config file: replaces must be a list")
			}
			for _, e := range v.Content {
				name := ""
				if e.Kind == yaml.AliasNode {
					e = e.Alias
				}
				for j := 0; j+1 < len(e.Content); j += 2 {
					if e.Content[j].Value == "name" {
						if name, err = p.str(e.Content[j+1]); err != nil {
							return nil, err
						}
					}
				}
				if name == "" {
					return nil, p.errf(e, "should not have an empty replaces entry")
				}
				r.Replaces = append(r.Replaces, name)
			}
		case "algorithm":
			algNode = v
			var a string
			if a, err = p.str(v); err == nil {
				found := false
				for i, n := range algorithmNames {
					if strings.EqualFold(a, n) {
						r.Algorithm, found = Algorithm(i), true
					}
				}
				if !found {
					err = p.errf(v, "invalid algorithm '%s' (fixed_window, sliding_window, token_bucket or gcra)", a)
				}
			}
		case "burst":
			burstNode = v
			r.Burst, err = p.uint32(v)
		case "unit_multiplier":
			multNode = v
			r.Multiplier, err = p.uint32(v)
		}
		if err != nil {
			return nil, err
		}
	}
	u, ok := pb.RateLimitResponse_RateLimit_Unit_value[strings.ToUpper(unit)]
	validUnit := ok && u != int32(pb.RateLimitResponse_RateLimit_UNKNOWN)
	at := unitNode
	if at == nil {
		at = m
	}
	if r.Unlimited {
		if validUnit {
			return nil, p.errf(at, "should not specify rate limit unit when unlimited")
		}
	} else if !validUnit {
		return nil, p.errf(at, "invalid rate limit unit '%s'", unit)
	}
	r.Unit = pb.RateLimitResponse_RateLimit_Unit(u)
	for _, name := range r.Replaces {
		if name == r.Name {
			return nil, p.errf(m, "replaces should not contain name of same descriptor")
		}
	}
	if multNode != nil && r.Multiplier == 0 {
		return nil, p.errf(multNode, "unit_multiplier must be at least 1")
	}
	if !r.Unlimited && r.WindowSeconds() > maxWindowSeconds {
		return nil, p.errf(multNode, "unit × unit_multiplier exceeds %d days", maxWindowSeconds/86400)
	}
	if burstNode != nil && r.Algorithm != TokenBucket && r.Algorithm != GCRA {
		return nil, p.errf(burstNode, "burst needs algorithm token_bucket or gcra")
	}
	if r.Unlimited && (algNode != nil || burstNode != nil || multNode != nil) {
		n := algNode
		if n == nil {
			n = burstNode
		}
		if n == nil {
			n = multNode
		}
		return nil, p.errf(n, "an unlimited rate_limit takes no algorithm, burst or unit_multiplier")
	}
	return r, nil
}

// wildcardMatch reports whether value matches pattern, split on '*' (each
// '*' matches any run of characters).
func wildcardMatch(parts []string, value string) bool {
	if len(parts) == 1 {
		return parts[0] == value
	}
	first, last := parts[0], parts[len(parts)-1]
	if len(value) < len(first)+len(last) || !strings.HasPrefix(value, first) || !strings.HasSuffix(value, last) {
		return false
	}
	rest := value[len(first) : len(value)-len(last)]
	for _, part := range parts[1 : len(parts)-1] {
		i := strings.Index(rest, part)
		if i < 0 {
			return false
		}
		rest = rest[i+len(part):]
	}
	return true
}

// Entry is one key and value of a request's descriptor.
type Entry struct{ Key, Value string }

// Match is what a descriptor matched: its rule, the values its counter is
// keyed by (a wildcard's pattern where share_threshold counts them as one)
// and its metric key.
type Match struct {
	Rule   *Rule
	Values []string
	Stat   string
}

// Lookup finds the rule of a descriptor as envoyproxy/ratelimit does: each
// entry in turn matches a child of the level above by key and value, else
// by a wildcard value (the file's order), else by key alone; the rule
// applies when it is on the level of the last entry. ok is false when the
// domain or the descriptor matches no rule.
func (c *Config) Lookup(domain string, entries []Entry) (m Match, ok bool) {
	n := c.domains[domain]
	if n == nil {
		return Match{}, false
	}
	var values []string
	var stat strings.Builder
	for i, e := range entries {
		next := n.exact[[2]string{e.Key, e.Value}]
		value := e.Value
		statValue := e.Value
		if next == nil {
			for _, w := range n.wild {
				if w.key == e.Key && wildcardMatch(w.parts, e.Value) {
					next = w.n
					statValue = w.pattern
					if w.n.shareThreshold {
						value = w.pattern
					} else if w.n.valueToMetric {
						statValue = e.Value
					}
					break
				}
			}
		}
		if next == nil {
			next = n.keyOnly[e.Key]
			statValue = ""
			if next != nil && next.valueToMetric {
				statValue = e.Value
			}
		}
		if next == nil {
			return Match{}, false
		}
		if values == nil {
			values = make([]string, len(entries))
			stat.WriteString(domain)
		}
		values[i] = value
		stat.WriteByte('.')
		stat.WriteString(e.Key)
		if statValue != "" {
			stat.WriteByte('_')
			stat.WriteString(statValue)
		}
		if i == len(entries)-1 {
			if next.rule == nil {
				return Match{}, false
			}
			m = Match{Rule: next.rule, Values: values, Stat: next.rule.Stat}
			if next.rule.DetailedMetric {
				m.Stat = detailedStat(domain, entries, values)
			} else if s := stat.String(); s != next.rule.Stat {
				m.Stat = s // value_to_metric
			}
			return m, true
		}
		if len(next.exact) == 0 && len(next.keyOnly) == 0 && len(next.wild) == 0 {
			return Match{}, false
		}
		n = next
	}
	return Match{}, false
}

// HasDomain reports whether domain is configured.
func (c *Config) HasDomain(domain string) bool { return c.domains[domain] != nil }

func detailedStat(domain string, entries []Entry, values []string) string {
	var b strings.Builder
	b.WriteString(domain)
	for i, e := range entries {
		b.WriteByte('.')
		b.WriteString(e.Key)
		if values[i] != "" {
			b.WriteByte('_')
			b.WriteString(values[i])
		}
	}
	return b.String()
}
