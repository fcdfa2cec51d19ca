package script

import (
	"fmt"
	"testing"
	"unsafe"
)

// TestMemory: the scripts cached count their bodies, sha1s and entries,
// exactly, and their compiled code in EVAL's VM estimate, until SCRIPT
// FLUSH or EVAL's bound forgets them; the libraries count their names,
// code and functions' names and descriptions, exactly, and their
// compiled code in the functions' VM estimate, until FUNCTION FLUSH.
func TestMemory(t *testing.T) {
	e := New()
	m := e.Memory()
	if m != (Memory{VMEval: vmBytes}) {
		t.Fatalf("a new engine: %+v", m)
	}
	a, b := []byte("return 1"), []byte("#!lua flags=no-writes\nreturn 'two'")
	e.Load(a)
	e.Run(nil, SHA1(b), b, nil, nil, nil, 2)
	e.Run(nil, SHA1(b), b, nil, nil, nil, 2) // once cached, counted once
	m = e.Memory()
	if want := int64(len(a) + len(b) + 2*(40+scriptEntryBytes)); m.ScriptsEval != want || m.Scripts != 2 {
		t.Errorf("two scripts: used_memory_scripts_eval %d, want %d; %d scripts", m.ScriptsEval, want, m.Scripts)
	}
	if m.VMEval <= vmBytes+int64(len(a)+len(b)) {
		t.Errorf("two scripts: used_memory_vm_eval %d, not above a fresh VM's %d and their bodies", m.VMEval, vmBytes)
	}
	e.Flush()
	if m = e.Memory(); m.ScriptsEval != 0 || m.VMEval != vmBytes || m.Scripts != 0 {
		t.Errorf("after SCRIPT FLUSH: %+v", m)
	}
	for i := range MaxEvalScripts + 3 {
		body := []byte(fmt.Sprintf("return %04d", i))
		e.Run(nil, SHA1(body), body, nil, nil, nil, 2)
	}
	if m, want := e.Memory(), int64(MaxEvalScripts*(11+40+scriptEntryBytes)); m.ScriptsEval != want {
		t.Errorf("past EVAL's bound: used_memory_scripts_eval %d, want %d", m.ScriptsEval, want)
	}
	e.Flush()

	lib := "#!lua name=mylib\nredis.register_function{function_name='fn', callback=function() return 1 end, description='desc'}\n" +
		"redis.register_function('other', function() return 2 end)"
	if _, err := e.LoadLibrary([]byte(lib), false); err != nil {
		t.Fatal(err)
	}
	m = e.Memory()
	lr, fr := int64(unsafe.Sizeof(Library{}))+mapEntryBytes, int64(unsafe.Sizeof(Function{}))+mapEntryBytes+8
	if want := int64(len("mylib")+len(lib)+len("fn")+len("desc")+len("other")) + lr + 2*fr; m.Functions != want {
		t.Errorf("a library: used_memory_functions %d, want %d", m.Functions, want)
	}
	if m.Libraries != 1 || m.FunctionCount != 2 || m.VMFunctions <= vmBytes+int64(len(lib)) {
		t.Errorf("a library: %+v", m)
	}
	e.FlushFunctions()
	if m = e.Memory(); m.Functions != 0 || m.VMFunctions != vmBytes || m.Libraries != 0 || m.FunctionCount != 0 {
		t.Errorf("after FUNCTION FLUSH: %+v", m)
	}
}
