package integration

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
)

var (
	plainOnce   sync.Once
	plainBinary string
	plainErr    error
)

// startPlain starts a server built without the race detector, whatever
// the tests run with: memory bounds are measured on what users run (a
// race-instrumented process holds several times its heap in shadow memory).
func startPlain(t *testing.T, dir string, args ...string) *server {
	t.Helper()
	plainOnce.Do(func() {
		if !raceEnabled {
			plainBinary = binary
			return
		}
		plainBinary = filepath.Join(filepath.Dir(binary), "rlserver-plain")
		out, err := exec.Command("go", "build", "-o", plainBinary, "../cmd/rlserver").CombinedOutput()
		if err != nil {
			plainErr = fmt.Errorf("building rlserver without -race: %v\n%s", err, out)
		}
	})
	if plainErr != nil {
		t.Fatal(plainErr)
	}
	full := append([]string{"--port", "0", "--dir", dir, "--enable-debug-command"}, args...)
	s, err := startCmd(t, dir, exec.Command(plainBinary, full...))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func infoField(t *testing.T, c *redis.Client, section, field string) int64 {
	t.Helper()
	for _, line := range strings.Split(c.Info(ctx, section).Val(), "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatalf("INFO %s: %q", field, line)
			}
			return n
		}
	}
	t.Fatalf("INFO %s has no %s", section, field)
	return 0
}

// TestMaxMemoryGrowingKeys: keys that grow after they are created (LOG
// windows filling up) are held to --maxmemory too: the keyspace stays
// under the bound, keys are evicted (INFO evicted_keys), and the process's
// RSS stays within 1.3 x the bound above what it used before the load.
func TestMaxMemoryGrowingKeys(t *testing.T) {
	t.Parallel()
	const bound = 16 << 20
	s := startPlain(t, "", "--maxmemory", "16mb")
	c := s.client(t, 2)
	base := rss(t, s.cmd.Process.Pid)
	// 300 keys each admitting 3000 times, a millisecond apart, into a
	// one-hour LOG window: about 14 MB of logs wanted under an 8 MB bound.
	const keys, per = 400, 2500
	setClock(t, c, t0)
	var round []byte
	round = append(round, "*4\r\n$5\r\nDEBUG\r\n$5\r\nCLOCK\r\n$7\r\nADVANCE\r\n$1\r\n1\r\n"...)
	for k := 0; k < keys; k++ {
		key := "log:" + strconv.Itoa(k)
		round = fmt.Appendf(round, "*6\r\n$9\r\nCL.WINDOW\r\n$%d\r\n%s\r\n$4\r\n5000\r\n$2\r\n1h\r\n$1\r\n1\r\n$3\r\nLOG\r\n", len(key), key)
	}
	nc := dialRaw(t, s)
	go func() {
		w := bufio.NewWriterSize(nc, 1<<16)
		for range per {
			w.Write(round)
		}
		w.WriteString("*2\r\n$4\r\nECHO\r\n$4\r\ndone\r\n")
		w.Flush()
	}()
	// Read the replies until ECHO's: errors would show as '-' lines.
	br := bufio.NewReaderSize(nc, 1<<16)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if line[0] == '-' {
			t.Fatalf("error reply: %q", line)
		}
		if line == "done\r\n" {
			break
		}
	}
	dataset := infoField(t, c, "memory", "used_memory_dataset")
	evicted := infoField(t, c, "stats", "evicted_keys")
	after := rss(t, s.cmd.Process.Pid)
	t.Logf("heap %d KB, runtime %d KB", infoField(t, c, "memory", "used_memory")>>10, infoField(t, c, "memory", "used_memory_rss")>>10)
	t.Logf("dataset %d KB (bound %d KB), %d keys evicted, RSS %d MB before, %d MB after",
		dataset>>10, bound>>10, evicted, base>>20, after>>20)
	if dataset > bound {
		t.Fatalf("used_memory_dataset %d over the bound %d", dataset, bound)
	}
	if evicted == 0 {
		t.Fatal("nothing evicted: the workload did not exceed the bound")
	}
	if after-base > bound*13/10 {
		t.Fatalf("RSS grew by %d MB, over 1.3 x the %d MB bound", (after-base)>>20, bound>>20)
	}
}

// rss returns the resident set size of process pid, in bytes.
func rss(t *testing.T, pid int) int64 { return procStatus(t, pid, "VmRSS") }

// procStatus returns a kB field of /proc/pid/status (VmRSS, VmHWM), in bytes.
func procStatus(t *testing.T, pid int, field string) int64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == field+":" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}
