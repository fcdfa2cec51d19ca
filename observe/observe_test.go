package observe

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rlserver/rlserver/clock"
)

// TestHistogramBuckets: each duration lands in the bucket whose bounds
// hold it, buckets are at most 25% wide, and octaves start at powers of
// two (LATENCY HISTOGRAM and Prometheus sum whole buckets).
func TestHistogramBuckets(t *testing.T) {
	for v := int64(0); v < 1<<41; v = v*9/8 + 1 {
		i := histIndex(v)
		lo := int64(0)
		if i > 0 {
			lo = histUpper(i-1) + 1
		}
		if i < histBuckets-1 && (v < lo || v > histUpper(i)) {
			t.Fatalf("histIndex(%d) = %d, which holds [%d, %d]", v, i, lo, histUpper(i))
		}
		if i > 0 && i < histBuckets-1 && float64(histUpper(i)-lo+1) > 0.25*float64(lo)+1 {
			t.Fatalf("bucket %d [%d, %d] is wider than 25%%", i, lo, histUpper(i))
		}
	}
	for k := 6; k < 40; k++ {
		if i := histIndex(1 << k); i != 1+(k-6)*4 || histUpper(i-1) != 1<<k-1 {
			t.Fatalf("2^%d ns starts bucket %d, want %d", k, i, 1+(k-6)*4)
		}
	}
	if histIndex(1<<62) != histBuckets-1 {
		t.Fatal("a huge duration is not in the last bucket")
	}
}

func TestPercentile(t *testing.T) {
	var s CmdStats
	s.hist[histIndex(1000)] = 98   // ~1 µs
	s.hist[histIndex(50000)] = 1   // ~50 µs
	s.hist[histIndex(3000000)] = 1 // ~3 ms
	for _, c := range []struct {
		p    float64
		want int64
	}{{50, histUpper(histIndex(1000))}, {98, histUpper(histIndex(1000))}, {99, histUpper(histIndex(50000))}, {99.9, histUpper(histIndex(3000000))}, {100, histUpper(histIndex(3000000))}} {
		if got := s.Percentile(c.p); got != c.want {
			t.Errorf("p%v = %d, want %d", c.p, got, c.want)
		}
	}
	us, counts := s.PowersOfTwoUsec()
	if fmt.Sprint(us, counts) != "[1 65 4194] [98 99 100]" {
		t.Errorf("LATENCY HISTOGRAM buckets %v %v", us, counts)
	}
}

// TestPrefixesBounded: prefixes are registered until maxPrefixes, and a
// prefix that cannot be a label value (binary keys) is "other".
func TestPrefixesBounded(t *testing.T) {
	var b Batch
	b.Init(New(nil, nil, clock.New()), nil, nil)
	for _, k := range []string{"\xff\xfe:k", "a\nb:k", "nocolon", ":empty", strings.Repeat("p", maxPrefixLen+1) + ":k"} {
		if i := b.prefixIndex([]byte(k)); i != otherPrefix {
			t.Errorf("prefix of %q = %d, want other", k, i)
		}
	}
	for i := range maxPrefixes + 3 {
		want := i
		if i >= maxPrefixes {
			want = otherPrefix
		}
		k := fmt.Sprintf("p%d:x", i)
		if got := b.prefixIndex([]byte(k)); got != want {
			t.Fatalf("prefix of %q = %d, want %d", k, got, want)
		}
		if got := b.prefixIndex([]byte(k + ":y")); got != want { // cached
			t.Fatalf("prefix of %q again = %d, want %d", k, got, want)
		}
	}
	if got := b.prefixIndex([]byte("p3:z")); got != 3 {
		t.Fatalf("prefix p3 = %d after others, want 3", got)
	}
}
