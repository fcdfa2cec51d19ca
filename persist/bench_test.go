package persist

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkFlushAndRestore1M writes 1,000,000 records (13-byte keys, 40-byte
// payloads) in Applies of 10,000, closes the store, reopens it and loads
// everything back. Run it once: go test -run '^$' -bench FlushAndRestore1M
// -benchtime=1x ./persist. It reports write-s (the Applies plus Close),
// restore-s (Open plus Load) and disk-MB (the directory's apparent size
// after Close).
func BenchmarkFlushAndRestore1M(b *testing.B) {
	const total, batch, payloadLen = 1_000_000, 10_000, 40
	rng := rand.New(rand.NewPCG(1, 2))
	puts := make([]Record, batch)
	keys := make([]byte, batch*13)
	payloads := make([]byte, batch*payloadLen)
	for b.Loop() {
		dir := filepath.Join(b.TempDir(), "db")
		start := time.Now()
		s, err := Open(&Options{Dir: dir})
		if err != nil {
			b.Fatal(err)
		}
		for n := 0; n < total; n += batch {
			for i := range puts {
				k := keys[i*13 : (i+1)*13 : (i+1)*13]
				copy(k, fmt.Appendf(k[:0], "user:%08d", n+i))
				p := payloads[i*payloadLen : (i+1)*payloadLen]
				for j := 0; j < payloadLen; j += 8 {
					binary.LittleEndian.PutUint64(p[j:], rng.Uint64()>>uint(rng.IntN(40)))
				}
				puts[i] = Record{Key: k, Version: FormatV2, Kind: uint8(1 + i%5), ExpireAt: int64(2e18) + int64(n+i), Payload: p}
			}
			if err := s.Apply(puts, nil); err != nil {
				b.Fatal(err)
			}
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		write := time.Since(start)
		size := dirSize(b, dir)

		start = time.Now()
		s, err = Open(&Options{Dir: dir})
		if err != nil {
			b.Fatal(err)
		}
		var payloadBytes int
		st, err := s.Load(1e18, func(r Record) error {
			payloadBytes += len(r.Payload)
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		restore := time.Since(start)
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		if st.Loaded != total || payloadBytes != total*payloadLen {
			b.Fatalf("loaded %d records, %d payload bytes; want %d, %d", st.Loaded, payloadBytes, total, total*payloadLen)
		}
		b.ReportMetric(write.Seconds(), "write-s")
		b.ReportMetric(restore.Seconds(), "restore-s")
		b.ReportMetric(float64(size)/1e6, "disk-MB")
	}
}

// dirSize sums the apparent sizes of the files in dir (not du's allocated
// blocks: Pebble preallocates its WAL).
func dirSize(b *testing.B, dir string) int64 {
	ents, err := os.ReadDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	var n int64
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil {
			b.Fatal(err)
		}
		n += fi.Size()
	}
	return n
}
