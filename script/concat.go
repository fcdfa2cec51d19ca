package script

import (
	"strings"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/ast"
)

// concatName is the global a script's `a .. b` calls once compiled.
// gopher-lua's own concatenation writes numbers as Go does
// (0.30000000000000004, 9007199254740992); Lua 5.1 writes them with
// %.14g (0.3, 9.007199254741e+15), and scripts build keys and values so.
const concatName = "__rlserver_concat"

// rewriteConcat replaces every concatenation in chunk by a call of
// concatName with the same operands, in the same order, and, when either
// operand is a variable Lua 5.1 would name in its error, a third argument
// naming both (see operandName): a constant, read only on the error path.
func rewriteConcat(chunk []ast.Stmt) {
	r := &rewriter{fn: &funcScope{}}
	r.block(chunk)
}

// funcScope is a function being walked: its active locals, innermost
// last, and the function it is nested in.
type funcScope struct {
	parent *funcScope
	locals []string
}

// rewriter walks a chunk with its scopes, as gopher-lua's compiler
// resolves names: a local of the function, one of an enclosing function
// (an upvalue), or a global.
type rewriter struct{ fn *funcScope }

func (r *rewriter) declare(names ...string) { r.fn.locals = append(r.fn.locals, names...) }

// block walks stmts as a block: the locals it declares end with it.
func (r *rewriter) block(stmts []ast.Stmt) {
	n := len(r.fn.locals)
	for _, s := range stmts {
		r.stmt(s)
	}
	r.fn.locals = r.fn.locals[:n]
}

func (r *rewriter) stmt(s ast.Stmt) {
	switch s := s.(type) {
	case *ast.AssignStmt:
		r.exprs(s.Lhs)
		r.exprs(s.Rhs)
	case *ast.LocalAssignStmt:
		// gopher-lua, as `local function f`, makes `local f = function`
		// see f inside.
		if len(s.Names) == 1 && len(s.Exprs) == 1 {
			if _, ok := s.Exprs[0].(*ast.FunctionExpr); ok {
				r.declare(s.Names[0])
				r.expr(&s.Exprs[0])
				return
			}
		}
		r.exprs(s.Exprs)
		r.declare(s.Names...)
	case *ast.FuncCallStmt:
		r.expr(&s.Expr)
	case *ast.DoBlockStmt:
		r.block(s.Stmts)
	case *ast.WhileStmt:
		r.expr(&s.Condition)
		r.block(s.Stmts)
	case *ast.RepeatStmt:
		n := len(r.fn.locals) // the condition sees the body's locals
		for _, st := range s.Stmts {
			r.stmt(st)
		}
		r.expr(&s.Condition)
		r.fn.locals = r.fn.locals[:n]
	case *ast.IfStmt:
		r.expr(&s.Condition)
		r.block(s.Then)
		r.block(s.Else)
	case *ast.NumberForStmt:
		r.expr(&s.Init)
		r.expr(&s.Limit)
		if s.Step != nil {
			r.expr(&s.Step)
		}
		n := len(r.fn.locals)
		r.declare(s.Name)
		r.block(s.Stmts)
		r.fn.locals = r.fn.locals[:n]
	case *ast.GenericForStmt:
		r.exprs(s.Exprs)
		n := len(r.fn.locals)
		r.declare(s.Names...)
		r.block(s.Stmts)
		r.fn.locals = r.fn.locals[:n]
	case *ast.FuncDefStmt:
		r.function(s.Func, s.Name.Func == nil) // a method (t:m) has self
	case *ast.ReturnStmt:
		r.exprs(s.Exprs)
	}
}

func (r *rewriter) exprs(es []ast.Expr) {
	for i := range es {
		r.expr(&es[i])
	}
}

// expr walks the expression *e, replacing it if it is a concatenation.
func (r *rewriter) expr(e *ast.Expr) {
	switch x := (*e).(type) {
	case *ast.StringConcatOpExpr:
		r.expr(&x.Lhs)
		r.expr(&x.Rhs)
		// An operand is one value: a call's or ...'s further ones must
		// not reach the call as a third argument.
		switch rhs := x.Rhs.(type) {
		case *ast.FuncCallExpr:
			rhs.AdjustRet = true
		case *ast.Comma3Expr:
			rhs.AdjustRet = true
		}
		// Lua 5.1 gives the concatenation the line its right operand
		// ends on, where its errors are then raised.
		line := lastLine(x)
		args := []ast.Expr{x.Lhs, x.Rhs}
		if a, b := r.operandName(x.Lhs), r.operandName(x.Rhs); a != "" || b != "" {
			names := &ast.StringExpr{Value: a + "\x00" + b}
			names.SetLine(line)
			args = append(args, names)
		}
		call := &ast.FuncCallExpr{Func: &ast.IdentExpr{Value: concatName}, Args: args, AdjustRet: true}
		call.SetLine(line)
		call.Func.SetLine(line)
		*e = call
	case *ast.AttrGetExpr:
		r.expr(&x.Object)
		r.expr(&x.Key)
	case *ast.TableExpr:
		for _, f := range x.Fields {
			if f.Key != nil {
				r.expr(&f.Key)
			}
			r.expr(&f.Value)
		}
	case *ast.FuncCallExpr:
		if x.Func != nil {
			r.expr(&x.Func)
		}
		if x.Receiver != nil {
			r.expr(&x.Receiver)
		}
		r.exprs(x.Args)
	case *ast.LogicalOpExpr:
		r.expr(&x.Lhs)
		r.expr(&x.Rhs)
	case *ast.RelationalOpExpr:
		r.expr(&x.Lhs)
		r.expr(&x.Rhs)
	case *ast.ArithmeticOpExpr:
		r.expr(&x.Lhs)
		r.expr(&x.Rhs)
	case *ast.UnaryMinusOpExpr:
		r.expr(&x.Expr)
	case *ast.UnaryNotOpExpr:
		r.expr(&x.Expr)
	case *ast.UnaryLenOpExpr:
		r.expr(&x.Expr)
	case *ast.FunctionExpr:
		r.function(x, false)
	}
}

// function walks a function's body in a scope of its own: self (a
// method), its parameters, and arg when it takes ... (Lua 5.1's
// LUA_COMPAT_VARARG, as gopher-lua's CompatVarArg).
func (r *rewriter) function(f *ast.FunctionExpr, method bool) {
	r.fn = &funcScope{parent: r.fn}
	if method {
		r.declare("self")
	}
	if f.ParList != nil {
		r.declare(f.ParList.Names...)
		if f.ParList.HasVargs && lua.CompatVarArg {
			r.declare("arg")
		}
	}
	r.block(f.Stmts)
	r.fn = r.fn.parent
}

// lastLine is the line e's last token is on, as far as the AST tells
// (it does not keep where a call's arguments or a table constructor end).
func lastLine(e ast.Expr) int {
	n := max(e.Line(), e.LastLine())
	switch x := e.(type) {
	case *ast.StringConcatOpExpr:
		n = max(n, lastLine(x.Rhs))
	case *ast.ArithmeticOpExpr:
		n = max(n, lastLine(x.Rhs))
	case *ast.RelationalOpExpr:
		n = max(n, lastLine(x.Rhs))
	case *ast.LogicalOpExpr:
		n = max(n, lastLine(x.Rhs))
	case *ast.UnaryMinusOpExpr:
		n = max(n, lastLine(x.Expr))
	case *ast.UnaryNotOpExpr:
		n = max(n, lastLine(x.Expr))
	case *ast.UnaryLenOpExpr:
		n = max(n, lastLine(x.Expr))
	case *ast.AttrGetExpr:
		n = max(n, lastLine(x.Key))
	case *ast.FuncCallExpr:
		if len(x.Args) > 0 {
			n = max(n, lastLine(x.Args[len(x.Args)-1]))
		}
	case *ast.TableExpr:
		if len(x.Fields) > 0 {
			n = max(n, lastLine(x.Fields[len(x.Fields)-1].Value))
		}
	}
	return n
}

// operandName is how Lua 5.1 names an operand in a type error
// (ldebug.c's getobjname): "local 'x'", "upvalue 'x'", "global 'x'",
// "field 'x'" (for t.x or t['x']; "field '?'" for any other key), or ""
// for an expression it cannot name (a constant, a call, an operation).
func (r *rewriter) operandName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.IdentExpr:
		return r.resolve(x.Value) + " '" + string(cString([]byte(x.Value))) + "'"
	case *ast.AttrGetExpr:
		if k, ok := x.Key.(*ast.StringExpr); ok {
			return "field '" + string(cString([]byte(k.Value))) + "'"
		}
		return "field '?'"
	}
	return ""
}

// resolve returns whether name is, where the walk is, a local, an
// upvalue or a global.
func (r *rewriter) resolve(name string) string {
	for f := r.fn; f != nil; f = f.parent {
		for i := len(f.locals) - 1; i >= 0; i-- {
			if f.locals[i] == name {
				if f == r.fn {
					return "local"
				}
				return "upvalue"
			}
		}
	}
	return "global"
}

// concat is Lua 5.1's concatenation of two values: strings and numbers
// (%.14g) joined, else the operands' __concat metamethod, else an error
// naming the operand that is neither, the first unless it is a string or
// a number, as Lua's luaG_concaterror (a third argument, when the rewrite
// gave one, names the operands).
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
	names, _ := L.Get(3).(lua.LString)
	first, second, _ := strings.Cut(string(names), "\x00")
	bad, name := a, first
	if aok {
		bad, name = b, second
	}
	if name != "" {
		L.RaiseError("%s", "attempt to concatenate "+name+" (a "+bad.Type().String()+" value)")
	}
	L.RaiseError("attempt to concatenate a %s value", bad.Type().String())
	return 0
}
