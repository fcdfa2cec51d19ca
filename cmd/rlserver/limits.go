package main

import (
	"fmt"
	"log"
	"math"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/rlserver/rlserver/persist"
)

// reservedFDs is what the server keeps out of its file-descriptor limit
// for itself (the listener, event loops, logs), as Redis keeps 32.
const reservedFDs = 32

// fitMaxClients returns --maxclients, lowered (and logged) when the
// process's file-descriptor limit cannot hold that many connections plus
// the server's own files, as Redis's adjustOpenFilesLimit does: it tries
// to raise the limit to what is wanted, then to 16 less each time, down to
// the current limit, and lowers maxclients to what it got minus 32. With
// --dir the store's files are wanted too, but a limit too small for them
// lowers maxclients no further than Redis would: they share the 32 and any
// client slots unused (an accept that finds no descriptor is retried).
func fitMaxClients(o *options) (int, error) {
	store := 0
	if o.dir != "" {
		store = persist.MaxOpenFiles
	}
	want := uint64(o.maxclients + reservedFDs + store)
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return o.maxclients, nil // no limit to read: trust the flag
	}
	if rl.Cur >= want {
		return o.maxclients, nil
	}
	got := rl.Cur
	// The values the kernel refuses anyway are skipped, so that a huge
	// --maxclients does not cost millions of refused calls: no limit
	// passes fs.nr_open, and only root may pass the hard limit.
	ceiling := nrOpen()
	if syscall.Geteuid() != 0 {
		ceiling = min(ceiling, rl.Max)
	}
	start := want
	if start > ceiling {
		start -= (start - ceiling + 15) / 16 * 16
	}
	for best := start; best > rl.Cur; best -= 16 {
		raised := syscall.Rlimit{Cur: best, Max: max(rl.Max, best)}
		if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised) == nil {
			got = best
			break
		}
		if best < 16 {
			break
		}
	}
	if got >= want {
		return o.maxclients, nil
	}
	if got <= reservedFDs {
		return 0, fmt.Errorf("the file-descriptor limit (ulimit -n) is %d, too low: the server needs %d for itself, plus one per client", got, reservedFDs)
	}
	n := min(o.maxclients, int(got)-reservedFDs)
	if n < o.maxclients {
		log.Printf("warning: --maxclients %d needs %d file descriptors but the limit (ulimit -n) is %d: maxclients lowered to %d, as Redis does; raise ulimit -n for more", o.maxclients, want, got, n)
	} else {
		log.Printf("warning: the file-descriptor limit (ulimit -n) is %d: --maxclients %d and the store's %d files may not all fit; raise ulimit -n to %d", got, o.maxclients, store, want)
	}
	return n, nil
}

// nrOpen returns the kernel's bound on any file-descriptor limit
// (/proc/sys/fs/nr_open), or the largest value when it cannot be read.
func nrOpen() uint64 {
	b, err := os.ReadFile("/proc/sys/fs/nr_open")
	if err != nil {
		return math.MaxUint64
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return math.MaxUint64
	}
	return n
}
