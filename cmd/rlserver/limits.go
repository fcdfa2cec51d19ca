package main

import (
	"fmt"
	"log"
	"syscall"

	"github.com/rlserver/rlserver/persist"
)

// reservedFDs is what the server keeps out of its file-descriptor limit
// for itself (the listener, event loops, logs), as Redis keeps 32.
const reservedFDs = 32

// fitMaxClients returns --maxclients, lowered (and logged) when the
// process's file-descriptor limit, raised as far as the hard limit
// allows, cannot hold that many connections plus the server's and the
// store's own files, as Redis does.
func fitMaxClients(o *options) (int, error) {
	reserved := reservedFDs
	if o.dir != "" {
		reserved += persist.MaxOpenFiles
	}
	want := uint64(o.maxclients + reserved)
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return o.maxclients, nil // no limit to read: trust the flag
	}
	if rl.Cur < want && rl.Cur < rl.Max {
		raised := rl
		raised.Cur = min(want, rl.Max)
		if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised) == nil {
			rl = raised
		}
	}
	if rl.Cur >= want {
		return o.maxclients, nil
	}
	if rl.Cur <= uint64(reserved) {
		return 0, fmt.Errorf("the file-descriptor limit (ulimit -n) is %d, too low: the server needs %d for itself and its store, plus one per client", rl.Cur, reserved)
	}
	n := int(rl.Cur) - reserved
	log.Printf("warning: --maxclients %d needs %d file descriptors but the limit (ulimit -n) is %d: maxclients lowered to %d; raise ulimit -n for more", o.maxclients, want, rl.Cur, n)
	return n, nil
}
