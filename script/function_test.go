package script

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestCRC64: Redis's CRC-64 of its test vector (crc64.c's test).
func TestCRC64(t *testing.T) {
	if got := redisCRC64([]byte("123456789")); got != 0xe9c6d914c4b8d9ca {
		t.Fatalf("crc64(123456789) = %#x, want 0xe9c6d914c4b8d9ca", got)
	}
}

// TestLZF: what lzfCompress makes, lzfDecompress restores, for text,
// repetitive and random inputs of many lengths; truncated or damaged
// input is refused, never read past.
func TestLZF(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	inputs := [][]byte{
		[]byte(strings.Repeat("a", 300)),
		[]byte(strings.Repeat("redis.register_function('f', function() return 1 end)\n", 40)),
	}
	for n := 21; n < 3000; n += 37 {
		b := make([]byte, n)
		for i := range b {
			b[i] = "abcd #!\n"[r.IntN(8)]
		}
		inputs = append(inputs, b)
		rnd := make([]byte, n)
		for i := range rnd {
			rnd[i] = byte(r.Uint32())
		}
		inputs = append(inputs, rnd)
	}
	for i, in := range inputs {
		out := make([]byte, len(in)-4)
		n := lzfCompress(in, out)
		if n == 0 {
			continue // incompressible: stored verbatim
		}
		got := make([]byte, len(in))
		if !lzfDecompress(out[:n], got) || !bytes.Equal(got, in) {
			t.Fatalf("input %d (%d bytes): the round trip differs", i, len(in))
		}
		for cut := 0; cut < n; cut += 1 + n/10 {
			lzfDecompress(out[:cut], got) // must not panic
		}
		if lzfDecompress(out[:n], make([]byte, len(in)-1)) {
			t.Fatalf("input %d: decompressed into a buffer too short", i)
		}
	}
}

// TestDumpAgainstRedis: FUNCTION DUMP's payload is redis-server's, byte
// for byte (the LZF compression included), for libraries of many sizes;
// the payload of Redis restores to the same code.
func TestDumpAgainstRedis(t *testing.T) {
	redis := dialer(t)(2)
	r := rand.New(rand.NewPCG(3, 4))
	words := []string{"local", "x", "=", "redis.call('GET', keys[1])", "return", "end", "if", "then", "args[1]", "tonumber"}
	for i := range 100 {
		var b strings.Builder
		fmt.Fprintf(&b, "#!lua name=lib%d\nredis.register_function('f%d', function(keys, args)\n", i, i)
		for j := range i * i {
			if j%8 == 0 {
				b.WriteString("\n--") // the words are a comment: the code compiles
			}
			b.WriteString(" " + words[r.IntN(len(words))])
		}
		b.WriteString("\nreturn 1 end)")
		if i%2 == 0 {
			b.WriteString("\n-- " + strings.Repeat("z", i))
		}
		code := b.String()
		redis.cmd("FUNCTION", "FLUSH")
		if got := string(redis.cmd("FUNCTION", "LOAD", code)); !strings.HasPrefix(got, "$") {
			t.Fatalf("redis-server refused library %d: %q", i, got)
		}
		want := string(redis.cmd("FUNCTION", "DUMP"))
		got := string(resp2Bulk(appendDump(nil, [][]byte{[]byte(code)})))
		if got != want {
			t.Fatalf("library %d (%d bytes): payload\n%q\nwant\n%q", i, len(code), got, want)
		}
		codes, err := parseDump([]byte(want[strings.Index(want, "\r\n")+2 : len(want)-2]))
		if err != nil || len(codes) != 1 || string(codes[0]) != code {
			t.Fatalf("library %d: Redis's payload parses to %q, %v", i, codes, err)
		}
	}
}

func resp2Bulk(b []byte) []byte {
	return append(fmt.Appendf(nil, "$%d\r\n", len(b)), append(b, "\r\n"...)...)
}

// payload builds a FUNCTION DUMP payload of raw entries (type byte and
// RDB string), version v.
func payload(v uint16, entries ...[]byte) []byte {
	var p []byte
	for _, e := range entries {
		p = append(p, e...)
	}
	p = binary.LittleEndian.AppendUint16(p, v)
	return binary.LittleEndian.AppendUint64(p, redisCRC64(p))
}

// TestParseDumpRefuses: a payload that is short, of a newer RDB version,
// whose checksum is wrong, with an entry not a function, in the pre-GA
// format, or a string that runs past the end, is refused with Redis's
// error, and restores nothing.
func TestParseDumpRefuses(t *testing.T) {
	good := appendRDBString([]byte{rdbOpFunction2}, []byte("#!lua name=a\nredis.register_function('a', function() end)"))
	bad := payload(rdbVersion, good)
	bad[3] ^= 1
	for _, c := range []struct {
		p    []byte
		want string
	}{
		{[]byte("short"), "ERR DUMP payload version or checksum are wrong"},
		{payload(rdbMaxVersion+1, good), "ERR DUMP payload version or checksum are wrong"},
		{bad, "ERR DUMP payload version or checksum are wrong"},
		{payload(rdbVersion, []byte{0, 1, 'x'}), "ERR given type is not a function"},
		{payload(rdbVersion, []byte{rdbOpFunctionPreGA, 1, 'x'}), "ERR Failed loading engine name"},
		{payload(rdbVersion, []byte{rdbOpFunction2, 0x3f, 'x'}), "ERR Failed loading library payload"},
		{payload(rdbVersion, []byte{rdbOpFunction2, 0xc3, 2, 50, 1, 'x'}), "ERR Failed loading library payload"},
		{payload(rdbVersion, []byte{rdbOpFunction2, 0xc5}), "ERR Failed loading library payload"},
		{payload(rdbVersion, []byte{rdbOpFunction2, 0xc3, 1, 0x80, 0x7f, 0xff, 0xff, 0xff, 0xe0}), "ERR Failed loading library payload"},
	} {
		e := New()
		if err := e.RestoreFunctions(c.p, RestoreAppend); err == nil || err.Error() != c.want {
			t.Errorf("payload %q: %v, want %s", c.p, err, c.want)
		}
		if libs, _ := e.FunctionCounts(); libs != 0 {
			t.Errorf("payload %q restored %d libraries", c.p, libs)
		}
	}
	// An integer-encoded string is read (then refused as a library).
	e := New()
	if err := e.RestoreFunctions(payload(rdbVersion, []byte{rdbOpFunction2, 0xc0, 7}), RestoreAppend); err == nil || err.Error() != "ERR Missing library metadata" {
		t.Errorf("integer-encoded library: %v", err)
	}
	// The pre-GA format of Redis 7.0's release candidates.
	preGA := []byte{rdbOpFunctionPreGA, 3, 'p', 'r', 'e', 3, 'L', 'U', 'A', 1, 2, 'd', 'd'}
	preGA = appendRDBString(preGA, []byte("\nredis.register_function('pre', function() return 1 end)"))
	if err := e.RestoreFunctions(payload(rdbVersion, preGA), RestoreAppend); err != nil || e.Function([]byte("pre")) == nil {
		t.Errorf("a pre-GA payload: %v", err)
	}
	// Versions up to Redis 7.4's are read.
	if err := e.RestoreFunctions(payload(rdbMaxVersion, good), RestoreAppend); err != nil {
		t.Errorf("a version %d payload: %v", rdbMaxVersion, err)
	}
}

// TestRestorePolicies: APPEND refuses a library already loaded, REPLACE
// replaces it, FLUSH leaves only the payload's; a refused restore
// changes nothing; every change moves the version, a refused one not.
func TestRestorePolicies(t *testing.T) {
	e := New()
	lib := func(name, fn string) []byte {
		return []byte(fmt.Sprintf("#!lua name=%s\nredis.register_function('%s', function() return '%s' end)", name, fn, name))
	}
	mustLoad := func(code []byte) {
		t.Helper()
		if _, err := e.LoadLibrary(code, false); err != nil {
			t.Fatal(err)
		}
	}
	mustLoad(lib("a", "fa"))
	mustLoad(lib("b", "fb"))
	v0, dump := e.DumpFunctions()
	other := New()
	if err := other.ReplaceFunctions(dump); err != nil {
		t.Fatal(err)
	}
	if _, d := other.DumpFunctions(); !bytes.Equal(d, dump) {
		t.Fatalf("a restored engine dumps otherwise")
	}
	if err := e.RestoreFunctions(dump, RestoreAppend); err == nil || err.Error() != "ERR Library a already exists" {
		t.Fatalf("APPEND over a loaded library: %v", err)
	}
	if e.FunctionsVersion() != v0 {
		t.Fatal("a refused restore moved the version")
	}
	if err := e.RestoreFunctions(dump, RestoreReplace); err != nil {
		t.Fatal(err)
	}
	// A payload whose function another library has: refused, nothing changed.
	_, clash := func() (uint64, []byte) {
		x := New()
		x.LoadLibrary(lib("c", "FA"), false)
		return x.DumpFunctions()
	}()
	if err := e.RestoreFunctions(clash, RestoreAppend); err == nil || err.Error() != "ERR Function FA already exists" {
		t.Fatalf("a clashing function: %v", err)
	}
	if n, _ := e.FunctionCounts(); n != 2 {
		t.Fatalf("%d libraries after a refused restore, want 2", n)
	}
	if err := e.RestoreFunctions(clash, RestoreFlush); err != nil {
		t.Fatal(err)
	}
	if libs := e.Libraries(); len(libs) != 1 || libs[0].Name != "c" || e.Function([]byte("fa")) == nil || e.Function([]byte("fb")) != nil {
		t.Fatalf("after FLUSH: %v", libs)
	}
	if e.FunctionsVersion() <= v0 {
		t.Fatal("the version did not move")
	}
}

// FuzzRestoreFunctions: no payload, checksummed or not, makes RESTORE
// panic; one refused changes nothing.
func FuzzRestoreFunctions(f *testing.F) {
	code := []byte("#!lua name=a\nredis.register_function('a', function() return 1 end)")
	f.Add(appendDump(nil, [][]byte{code}))
	f.Add(appendRDBString([]byte{rdbOpFunction2}, code))
	f.Add([]byte{rdbOpFunctionPreGA, 1, 'a', 3, 'L', 'U', 'A', 0, 0x40, 0x01})
	f.Add([]byte{rdbOpFunction2, 0xc3, 0x05, 0x20, 0x00, 'a', 0x20, 0x00})
	f.Fuzz(func(t *testing.T, b []byte) {
		e := New()
		if _, err := e.LoadLibrary([]byte("#!lua name=keep\nredis.register_function('keep', function() end)"), false); err != nil {
			t.Fatal(err)
		}
		for _, p := range [][]byte{b, payload(rdbVersion, b)} {
			if err := e.RestoreFunctions(p, RestoreAppend); err != nil && e.Function([]byte("keep")) == nil {
				t.Fatalf("a refused restore removed a library: %v", err)
			}
		}
	})
}

// FuzzLoadLibrary: no code makes FUNCTION LOAD panic.
func FuzzLoadLibrary(f *testing.F) {
	for _, s := range []string{"#!lua name=a\nredis.register_function('a', function() end)", "#!lua name=\"a\nb", "#!", "#!lua name=x\n\x00",
		"#!lua name=x\nredis.register_function{function_name='f', callback=function() end, flags={'no-writes', 3}}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, code []byte) {
		e := New()
		e.LoadLibrary(code, false)
		e.LoadLibrary(code, true)
	})
}
