package main

import (
	"errors"
	"fmt"
	"io/fs"
	"log"
	"os"
	"runtime"

	"github.com/rlserver/rlserver/clock"
	"github.com/rlserver/rlserver/persist"
	"github.com/rlserver/rlserver/script"
	"github.com/rlserver/rlserver/shard"
)

// openPersistence opens the Pebble store under o.dir and restores the
// keyspace (and the function libraries, into scripts) from it; with --dir ” it returns nil (in memory only). A
// directory that cannot be opened, is locked by another process, or holds
// less than its flush record says (unless --recover-damaged-store) is an
// error: the server never starts silently empty. A store on a full or
// read-only disk is restored read-only and written once the fault clears.
func openPersistence(o *options, store *shard.Store, clock *clock.Clock, scripts *script.Engine) (*persist.Saver, error) {
	if o.dir == "" {
		return nil, nil
	}
	policy, err := persist.ParseFsyncPolicy(o.appendfsync)
	if err != nil {
		return nil, err
	}
	reserve, err := parseBytes(o.diskReserve)
	if err != nil || reserve <= 0 {
		return nil, fmt.Errorf("--disk-reserve: invalid size %q", o.diskReserve)
	}
	db, err := persist.Open(&persist.Options{Dir: o.dir, Fsync: policy, DiskReserve: reserve, AcceptLoss: o.recoverDamaged, Logger: log.Printf})
	if err != nil {
		if errors.Is(err, fs.ErrPermission) {
			// Most often a host directory mounted into the container,
			// owned by someone else than the image's user.
			return nil, fmt.Errorf("cannot open data directory %q: %w (rlserver runs as uid %d, gid %d: the directory must be writable by them)", o.dir, err, os.Getuid(), os.Getgid())
		}
		return nil, fmt.Errorf("cannot open data directory %q: %w", o.dir, err)
	}
	// The restore runs before any client is served: it may use every core
	// (it reads and applies in two stages) whatever --threads says.
	if n := runtime.NumCPU(); n > runtime.GOMAXPROCS(0) {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(n))
	}
	saver, err := persist.NewSaver(db, store, clock, persist.SaverOptions{
		Interval: o.saveInterval, Logger: log.Printf, Functions: scripts,
		Mark: func() func() {
			if n := o.replication.Load(); n != nil {
				return n.Mark()
			}
			return nil
		},
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("data directory %q: %w", o.dir, err)
	}
	return saver, nil
}
