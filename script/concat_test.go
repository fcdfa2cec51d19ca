package script

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/yuin/gopher-lua/ast"
	"github.com/yuin/gopher-lua/parse"
)

// TestRewriteConcatEverywhere: no concatenation is left for gopher-lua's
// own (which writes numbers as Go does) wherever it stands: in every
// kind of statement and expression, and in the Lua rate limiters of
// integration/testdata/lua.
func TestRewriteConcatEverywhere(t *testing.T) {
	sources := map[string]string{"positions": `
local a, b = 'a' .. 1, 'b' .. 2
t = {['k' .. 1] = 'v' .. 1, 'p' .. 1}
t['x' .. 1] = 1
f('x' .. 1)(y .. z):m('m' .. 1)
do local c = a .. b end
while a .. b do break end
repeat local r = a .. b until r .. a
if a .. b then x = a .. b elseif b .. a then x = b .. a else x = a .. a end
for i = 1 .. '', 2 .. '', 3 .. '' do x = i .. '' end
for k, v in pairs(a .. b) do x = k .. v end
function g.h:m(p, ...) return p .. self .. ... end
local function l() return -(a .. b), not (a .. b), #(a .. b), (a .. b) + 1, a .. b == b .. a, a .. b and b .. a end
return function() return a .. (b .. (a .. b)) end
`}
	files, _ := filepath.Glob("../integration/testdata/lua/*.lua")
	if len(files) == 0 {
		t.Fatal("no scripts in ../integration/testdata/lua")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sources[filepath.Base(f)] = string(b)
	}
	for name, src := range sources {
		chunk, err := parse.Parse(strings.NewReader(src), name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if n := countConcats(reflect.ValueOf(chunk)); n == 0 && name == "positions" {
			t.Fatal("positions: parsed without concatenations")
		}
		rewriteConcat(chunk)
		if n := countConcats(reflect.ValueOf(chunk)); n != 0 {
			t.Errorf("%s: %d concatenations left after the rewrite", name, n)
		}
	}
}

// countConcats counts the concatenation nodes under v.
func countConcats(v reflect.Value) int {
	n := 0
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return 0
		}
		if _, ok := v.Interface().(*ast.StringConcatOpExpr); ok {
			n++
		}
		n += countConcats(v.Elem())
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				n += countConcats(v.Field(i))
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			n += countConcats(v.Index(i))
		}
	}
	return n
}

// BenchmarkConcat runs a script whose 75 concatenations join locals
// (named to the concatenation for its errors) holding strings and
// numbers: the fast path. Reported per script run.
func BenchmarkConcat(b *testing.B) {
	body := []byte("local k, n, s = KEYS[1], 7, '' for i = 1, 25 do s = k .. ':' .. n .. i end return s")
	e := New()
	sha := SHA1(body)
	keys := [][]byte{[]byte("user:1")}
	var out []byte
	b.ReportAllocs()
	for b.Loop() {
		out = e.Run(out[:0], sha, body, keys, nil, nil, 2)
	}
	if string(out) != "$10\r\nuser:1:725\r\n" {
		b.Fatalf("reply %q", out)
	}
}
