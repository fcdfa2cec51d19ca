package resp

import (
	"bytes"
	"strings"
	"testing"
)

// BenchmarkReaderPipeline16 parses pipelined batches of 16 CL.TOKENBUCKET
// requests (as redis-benchmark sends them), per request.
func BenchmarkReaderPipeline16(b *testing.B) {
	benchReaderBatch(b, "*5\r\n$14\r\nCL.TOKENBUCKET\r\n$9\r\ntb:012345\r\n$7\r\n1000000\r\n$7\r\n1000000\r\n$1\r\n1\r\n", 5)
}

// BenchmarkReaderPipeline16All is BenchmarkReaderPipeline16 for CL.ALL
// with three rules (16 arguments), as bench/compare.sh's all3 sends it:
// what CL.ALL's longer request costs the reader, per request.
func BenchmarkReaderPipeline16All(b *testing.B) {
	benchReaderBatch(b, "*16\r\n$6\r\nCL.ALL\r\n$1\r\n3\r\n"+
		"$11\r\nTOKENBUCKET\r\n$15\r\nau:000000012345\r\n$7\r\n1000000\r\n$7\r\n1000000\r\n$1\r\n1\r\n"+
		"$8\r\nTHROTTLE\r\n$15\r\nai:000000012345\r\n$7\r\n1000000\r\n$7\r\n1000000\r\n$1\r\n1\r\n"+
		"$5\r\nFIXED\r\n$15\r\nar:000000012345\r\n$10\r\n1000000000\r\n$2\r\n60\r\n", 16)
}

// benchReaderBatch parses batches of 16 copies of req (nargs arguments
// each), reporting per request.
func benchReaderBatch(b *testing.B, req string, nargs int) {
	batch := []byte(strings.Repeat(req, 16))
	src := bytes.NewReader(nil)
	rd := NewReader(src, 0)
	b.ReportAllocs()
	b.SetBytes(int64(len(req)))
	for i := 0; i < b.N; i += 16 {
		src.Reset(batch)
		for j := 0; j < 16; j++ {
			if args, err := rd.Next(); err != nil || len(args) != nargs {
				b.Fatal(err, len(args))
			}
		}
	}
}
