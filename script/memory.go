package script

import (
	"unsafe"

	lua "github.com/yuin/gopher-lua"
)

// Memory is what INFO memory reports of scripting, Redis 7.0's fields.
// gopher-lua has no allocator hook to count a VM's bytes as Redis counts
// Lua's (lua_gc's count): the VM figures are estimates, a fresh VM's
// size (vmBytes) plus the compiled code's (protoBytes). The others are
// exact counts of what they say they count.
type Memory struct {
	// VMEval (used_memory_vm_eval, used_memory_lua) estimates EVAL's VM:
	// vmBytes and the scripts cached, compiled.
	VMEval int64
	// VMFunctions (used_memory_vm_functions) estimates the functions'
	// VM, once the first library made it: vmBytes and the libraries,
	// compiled.
	VMFunctions int64
	// ScriptsEval (used_memory_scripts_eval) counts, per script cached,
	// its body's bytes, its sha1's 40 and scriptEntryBytes, as Redis
	// counts a script's body and entry (rlserver keeps the script
	// compiled, which VMEval counts, not its text).
	ScriptsEval int64
	// Functions (used_memory_functions) counts, per library loaded, its
	// name's and code's bytes and its record's, and per function its
	// name's and description's bytes and its record's.
	Functions int64
	// Scripts (number_of_cached_scripts), Libraries
	// (number_of_libraries) and FunctionCount (number_of_functions).
	Scripts, Libraries, FunctionCount int
}

const (
	// vmBytes is a fresh VM with the sandbox's libraries, as gopher-lua
	// 1.1.2 allocates it (its registry and call stack, mostly).
	vmBytes = 160 << 10
	// scriptEntryBytes is a cached script's record: its entries in the
	// tables that find it, and its compiled function's header.
	scriptEntryBytes = 96
	// mapEntryBytes is a string-keyed map entry holding a pointer.
	mapEntryBytes = 24
)

// Memory returns INFO memory's scripting fields.
func (e *Engine) Memory() Memory {
	e.mu.Lock()
	defer e.mu.Unlock()
	m := Memory{VMEval: vmBytes, Scripts: len(e.scripts)}
	for _, s := range e.scripts {
		m.VMEval += int64(s.compiled)
		m.ScriptsEval += int64(s.body + 40 + scriptEntryBytes)
	}
	if e.funcs != nil {
		m.VMFunctions = vmBytes
	}
	libs := e.libs.Load().libs
	m.Libraries = len(libs)
	for _, l := range libs {
		m.VMFunctions += int64(l.compiled)
		m.Functions += int64(len(l.Name)+len(l.Code)) + int64(unsafe.Sizeof(Library{})) + mapEntryBytes
		for _, f := range l.Functions {
			m.FunctionCount++
			m.Functions += int64(len(f.Name)+len(f.Description)) + int64(unsafe.Sizeof(Function{})) + mapEntryBytes + 8
		}
	}
	return m
}

// protoBytes estimates the bytes compiled code takes: p, the functions
// it defines, their code, constants and debug information.
func protoBytes(p *lua.FunctionProto) int {
	n := int(unsafe.Sizeof(*p)) + int(unsafe.Sizeof(lua.LFunction{})) +
		4*cap(p.Code) + 8*cap(p.DbgSourcePositions) + 8*cap(p.FunctionPrototypes) +
		16*cap(p.Constants) + 16*cap(p.DbgUpvalues) + int(unsafe.Sizeof(lua.DbgCall{}))*cap(p.DbgCalls) +
		(8+int(unsafe.Sizeof(lua.DbgLocalInfo{})))*len(p.DbgLocals)
	for _, c := range p.Constants {
		if s, ok := c.(lua.LString); ok {
			n += 16 + len(s) // its bytes, and its header among the string constants
		}
	}
	for _, l := range p.DbgLocals {
		n += len(l.Name)
	}
	for _, u := range p.DbgUpvalues {
		n += len(u)
	}
	for _, c := range p.DbgCalls {
		n += len(c.Name)
	}
	for _, q := range p.FunctionPrototypes {
		n += protoBytes(q)
	}
	return n
}
