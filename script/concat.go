package script

import (
	"reflect"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/ast"
)

// concatName is the global a script's `a .. b` calls once compiled.
// gopher-lua's own concatenation writes numbers as Go does
// (0.30000000000000004, 9007199254740992); Lua 5.1 writes them with
// %.14g (0.3, 9.007199254741e+15), and scripts build keys and values so.
const concatName = "__rlserver_concat"

var exprType = reflect.TypeFor[ast.Expr]()

// rewriteConcat replaces every concatenation in chunk by a call of
// concatName with the same operands, in the same order.
func rewriteConcat(chunk []ast.Stmt) { rewrite(reflect.ValueOf(chunk)) }

func rewrite(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			rewrite(v.Elem())
		}
	case reflect.Interface:
		if v.IsNil() {
			return
		}
		if c, ok := v.Interface().(*ast.StringConcatOpExpr); ok && v.Type() == exprType && v.CanSet() {
			rewrite(reflect.ValueOf(c).Elem())
			call := &ast.FuncCallExpr{Func: &ast.IdentExpr{Value: concatName}, Args: []ast.Expr{c.Lhs, c.Rhs}, AdjustRet: true}
			call.SetLine(c.Line())
			call.SetLastLine(c.LastLine())
			call.Func.SetLine(c.Line())
			call.Func.SetLastLine(c.LastLine())
			v.Set(reflect.ValueOf(ast.Expr(call)))
			return
		}
		rewrite(v.Elem())
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Field(i); f.CanSet() {
				rewrite(f)
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			rewrite(v.Index(i))
		}
	}
}

// concat is Lua 5.1's concatenation of two values: strings and numbers
// (%.14g) joined, else the operands' __concat metamethod, else an error
// naming the operand that is neither.
func concat(L *lua.LState) int {
	a, b := L.Get(1), L.Get(2)
	as, aok := luaString(a)
	bs, bok := luaString(b)
	if aok && bok {
		L.Push(lua.LString(as + bs))
		return 1
	}
	h := L.GetMetaField(a, "__concat")
	if h == lua.LNil {
		h = L.GetMetaField(b, "__concat")
	}
	if h != lua.LNil {
		L.Push(h)
		L.Push(a)
		L.Push(b)
		L.Call(2, 1)
		return 1
	}
	bad := a
	if aok {
		bad = b
	}
	L.RaiseError("attempt to concatenate a %s value", bad.Type().String())
	return 0
}
