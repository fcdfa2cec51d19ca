package command

import (
	"strings"
	"testing"
	"time"

	"github.com/rlserver/rlserver/clock"
	"github.com/rlserver/rlserver/persist"
	"github.com/rlserver/rlserver/shard"
)

// TestEveryCommandInExec runs every command and subcommand of the table,
// with a few argument lists each, inside MULTI and EXEC. EXEC holds every
// shard's lock while its commands run, so a command reaching a shard's
// lock by another path than the connection's view (INFO's persistence
// section did, through Store.Pending) blocks its event loop and then the
// whole server, for good. Standalone with persistence, and in cluster
// mode (CLUSTER COUNTKEYSINSLOT and GETKEYSINSLOT did too).
func TestEveryCommandInExec(t *testing.T) {
	for _, mode := range []string{"persistence", "cluster"} {
		t.Run(mode, func(t *testing.T) {
			clock := clock.New()
			clock.Set(1_767_225_600_000_000_000)
			store := shard.New(shard.Options{Shards: 4, Seed: 1, TrackChanges: mode == "persistence", Cluster: mode == "cluster"})
			cfg := Config{EnableDebug: true, BackupDir: t.TempDir()}
			if mode == "persistence" {
				db, err := persist.Open(&persist.Options{Dir: t.TempDir()})
				if err != nil {
					t.Fatal(err)
				}
				saver, err := persist.NewSaver(db, store, clock, persist.SaverOptions{Interval: time.Hour})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { saver.Shutdown(false) })
				cfg.Persistence = saver
			}
			h := New(cfg, store, clock)
			if mode == "cluster" {
				h.SetCluster(twoShards(t), nil)
			}
			c := newTestConn(h)
			var reqs [][]string
			for _, cmd := range h.table.all {
				if cmd.Subs != nil || cmd.Name == "shutdown" {
					continue // a container answers for its subcommands; SHUTDOWN would stop the test
				}
				for _, fill := range []string{"0", "k", "*"} {
					reqs = append(reqs, requestFor(cmd, fill))
				}
			}
			// And requests whose arguments get further than the fills do.
			reqs = append(reqs, [][]string{
				{"INFO", "everything"}, {"INFO", "persistence", "keyspace", "memory"},
				{"CONFIG", "SET", "maxmemory", "64mb"}, {"CONFIG", "SET", "maxmemory", "0"}, {"CONFIG", "RESETSTAT"},
				{"CLUSTER", "COUNTKEYSINSLOT", "7629"}, {"CLUSTER", "GETKEYSINSLOT", "7629", "10"},
				{"SCAN", "0", "COUNT", "100"}, {"KEYS", "*"}, {"MEMORY", "USAGE", "k"}, {"DEL", "a", "b"},
				{"CL.ALL", "2", "THROTTLE", "k", "10", "10", "60", "TOKENBUCKET", "a", "10", "1", "1s"},
				{"CL.ACQUIRE", "lease", "2", "1s"}, {"BGSAVE"}, {"LASTSAVE"}, {"WAIT", "0", "0"},
				{"DEBUG", "CLOCK", "ADVANCE", "1000"}, {"FLUSHALL"}, {"FLUSHDB", "ASYNC"},
			}...)
			ran := 0
			for _, req := range reqs {
				done := make(chan string, 1)
				go func() {
					// Keys in the shards, one of them in this
					// node's slots ("k") in cluster mode.
					for _, k := range []string{"k", "a", "b", "c", "d", "e"} {
						c.exec(argsOf("CL.THROTTLE", k, "10", "10", "60"))
					}
					c.W.Buf = c.W.Buf[:0]
					c.exec(argsOf("MULTI"))
					c.exec(argsOf(req...))
					c.exec(argsOf("EXEC"))
					done <- string(c.W.Buf)
				}()
				select {
				case out := <-done:
					if !strings.HasPrefix(out, "+OK\r\n") {
						t.Fatalf("MULTI, %q, EXEC answered %q", req, out)
					}
					ran++
				case <-time.After(10 * time.Second):
					t.Fatalf("MULTI, %q, EXEC has not returned after 10 s: the command takes a shard lock EXEC holds", req)
				}
			}
			if ran < 3*60 {
				t.Fatalf("ran %d requests, want one per command and argument fill and more", ran)
			}
		})
	}
}

// requestFor returns a request for cmd with as many arguments as its arity
// asks, each fill: "container sub fill..." for a subcommand.
func requestFor(cmd *Command, fill string) []string {
	req := strings.Split(cmd.Name, "|")
	n := cmd.Arity
	if n < 0 {
		n = -n
	}
	for len(req) < n {
		req = append(req, fill)
	}
	return req
}
