package command

import (
	"math"
	"math/rand"
	"testing"
)

// MemoryValue reads sizes as Redis's memtoull.
func TestMemoryValue(t *testing.T) {
	for _, c := range []struct {
		in string
		n  uint64
		ok bool
	}{
		{"0", 0, true}, {"1", 1, true}, {"010", 10, true}, {"", 0, true}, {"kb", 0, true},
		{"1b", 1, true}, {"1B", 1, true}, {"1k", 1000, true}, {"1K", 1000, true}, {"1kb", 1024, true},
		{"1Kb", 1024, true}, {"1m", 1e6, true}, {"1mb", 1 << 20, true}, {"1MB", 1 << 20, true},
		{"1g", 1e9, true}, {"1gb", 1 << 30, true}, {"10GB", 10 << 30, true},
		{"18446744073709551615", math.MaxUint64, true}, {"99999999999999999999", math.MaxUint64, true},
		{"99999999999gb", math.MaxUint64, true},
		{"-1", 0, false}, {"+1", 0, false}, {" 1", 0, false}, {"1 ", 0, false}, {"1.5gb", 0, false},
		{"1t", 0, false}, {"1tb", 0, false}, {"0x10", 0, false}, {"1kbb", 0, false}, {"mbk", 0, false},
	} {
		if n, ok := MemoryValue([]byte(c.in)); n != c.n && c.ok || ok != c.ok {
			t.Errorf("MemoryValue(%q) = %d, %v; want %d, %v", c.in, n, ok, c.n, c.ok)
		}
	}
}

// redisInt reads integers as Redis's string2ll.
func TestRedisInt(t *testing.T) {
	for _, c := range []struct {
		in string
		n  int64
		ok bool
	}{
		{"0", 0, true}, {"7", 7, true}, {"-7", -7, true}, {"9223372036854775807", math.MaxInt64, true},
		{"-9223372036854775808", math.MinInt64, true},
		{"", 0, false}, {"-", 0, false}, {"007", 0, false}, {"-0", 0, false}, {"+7", 0, false}, {" 7", 0, false},
		{"7 ", 0, false}, {"9223372036854775808", 0, false}, {"1.5", 0, false}, {"1e3", 0, false},
	} {
		if n, ok := redisInt([]byte(c.in)); n != c.n || ok != c.ok {
			t.Errorf("redisInt(%q) = %d, %v; want %d, %v", c.in, n, ok, c.n, c.ok)
		}
	}
}

// cStrtoll reads save's numbers as C's strtoll with the whole input used.
func TestCStrtoll(t *testing.T) {
	for _, c := range []struct {
		in string
		n  int64
		ok bool
	}{
		{"", 0, true}, {"5", 5, true}, {"+5", 5, true}, {"-0", 0, true}, {"007", 7, true}, {"\t5", 5, true},
		{"99999999999999999999", math.MaxInt64, true}, {"-99999999999999999999", math.MinInt64, true},
		{"+", 0, false}, {"-", 0, false}, {"5x", 0, false}, {"5 ", 0, false}, {"\t", 0, false},
	} {
		if n, ok := cStrtoll(c.in); n != c.n || ok != c.ok {
			t.Errorf("cStrtoll(%q) = %d, %v; want %d, %v", c.in, n, ok, c.n, c.ok)
		}
	}
}

// A kept parameter takes what its norm accepts and reads it back in the
// same form; random input never panics, and a value refused has a reason.
func TestKeptParamsNormalise(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	alphabet := []byte("0123456789-+ kmgbKMGByesnoYESNO\t.x")
	for name, k := range keptParams {
		if _, why := k.norm([]byte(k.def)); why != "" {
			t.Errorf("%s: its default %q is refused: %s", name, k.def, why)
		}
		for i := 0; i < 300; i++ {
			v := make([]byte, rng.Intn(12))
			for j := range v {
				v[j] = alphabet[rng.Intn(len(alphabet))]
			}
			s, why := k.norm(v)
			if why != "" {
				continue
			}
			if again, why := k.norm([]byte(s)); why != "" || again != s {
				t.Errorf("%s: %q reads back %q, which reads back %q (%s)", name, v, s, again, why)
			}
		}
	}
	for alias, name := range keptAliases {
		if _, ok := keptParams[name]; !ok {
			t.Errorf("alias %s of unknown %s", alias, name)
		}
		if keptParams[alias].def != keptParams[name].def {
			t.Errorf("%s and %s have different defaults", alias, name)
		}
	}
}

// CONFIG SET maxmemory-samples reaches the keyspace's eviction, which
// starts at Redis's default.
func TestMaxMemorySamplesLive(t *testing.T) {
	c, _ := testConn(0)
	run := c.do
	if got := c.Store().MaxMemorySamples(); got != 5 {
		t.Fatalf("maxmemory-samples starts at %d, want 5", got)
	}
	if got := run("CONFIG", "SET", "maxmemory-samples", "12"); got != "+OK\r\n" {
		t.Fatalf("CONFIG SET maxmemory-samples 12 = %q", got)
	}
	if got := c.Store().MaxMemorySamples(); got != 12 {
		t.Fatalf("after CONFIG SET maxmemory-samples 12 the keyspace samples %d", got)
	}
	if got := run("CONFIG", "GET", "maxmemory-samples"); got != "*2\r\n$17\r\nmaxmemory-samples\r\n$2\r\n12\r\n" {
		t.Fatalf("CONFIG GET maxmemory-samples = %q", got)
	}
}
