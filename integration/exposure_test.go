package integration

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// rawReply writes req on nc and returns the first reply line, and with
// close, whether the server then closed the connection.
func rawReply(t *testing.T, nc net.Conn, req string, close bool) (line string, closed bool) {
	t.Helper()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := nc.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(nc)
	line, err := br.ReadString('\n')
	if err != nil {
		t.Fatalf("reading the reply to %q: %v", req, err)
	}
	if close {
		_, err = br.ReadByte()
		closed = errors.Is(err, io.EOF)
	}
	return strings.TrimRight(line, "\r\n"), closed
}

func bulkHeader(n int) string { return "$" + strconv.Itoa(n) + "\r\n" }

// TestUnauthenticatedLimits: before AUTH, a request of more than 10
// arguments or with an argument over 16 KB is answered Redis's protocol
// error and the connection closed; at the bounds it is only refused
// NOAUTH; after AUTH (even pipelined with it) and without a password
// there is no such bound.
func TestUnauthenticatedLimits(t *testing.T) {
	t.Parallel()
	s := startIn(t, "", "--requirepass", "s3cret")
	if got, closed := rawReply(t, dialRaw(t, s), "*11\r\n", true); got != "-ERR Protocol error: unauthenticated multibulk length" || !closed {
		t.Fatalf("*11 before AUTH = %q (closed %v)", got, closed)
	}
	if got, closed := rawReply(t, dialRaw(t, s), "*2\r\n$4\r\nECHO\r\n"+bulkHeader(16385), true); got != "-ERR Protocol error: unauthenticated bulk length" || !closed {
		t.Fatalf("a 16385-byte argument before AUTH = %q (closed %v)", got, closed)
	}
	atBound := "*10\r\n$6\r\nEXISTS\r\n" + bulkHeader(16384) + strings.Repeat("x", 16384) + "\r\n" + strings.Repeat("$1\r\nx\r\n", 8)
	nc := dialRaw(t, s)
	if got, _ := rawReply(t, nc, atBound, false); got != "-NOAUTH Authentication required." {
		t.Fatalf("10 arguments, one of 16 KB, before AUTH = %q", got)
	}
	big := "*2\r\n$4\r\nECHO\r\n" + bulkHeader(100000) + strings.Repeat("y", 100000) + "\r\n"
	nc.Write([]byte("*2\r\n$4\r\nAUTH\r\n$6\r\ns3cret\r\n" + big))
	br := bufio.NewReader(nc)
	ok, _ := br.ReadString('\n')
	echo, _ := br.ReadString('\n')
	if ok != "+OK\r\n" || echo != "$100000\r\n" {
		t.Fatalf("AUTH pipelined with a 100 KB ECHO = %q, %q", ok, echo)
	}
	open := startIn(t, "")
	eleven := "*11\r\n$4\r\nECHO\r\n" + strings.Repeat("$1\r\nx\r\n", 10)
	if got, _ := rawReply(t, dialRaw(t, open), eleven, false); got != "-ERR wrong number of arguments for 'echo' command" {
		t.Fatalf("*11 without a password = %q", got)
	}
}

// peakRSS returns the peak resident set size of process pid, in bytes.
func peakRSS(t *testing.T, pid int) int64 { return procStatus(t, pid, "VmHWM") }

// TestPreAuthMemory: 100 clients at once each sending a 1 MB request
// before AUTH raise the server's peak RSS by little: the argument is
// refused at its header. The largest request allowed before AUTH (10
// arguments of 16 KB) is answered; one that would need more buffer than
// that (64 KB header lines are allowed) is closed.
func TestPreAuthMemory(t *testing.T) {
	t.Parallel()
	s := startIn(t, "", "--requirepass", "s3cret")
	c := redis.NewClient(&redis.Options{Addr: s.Addr, Password: "s3cret"})
	defer c.Close()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	before := peakRSS(t, s.cmd.Process.Pid)
	send := func(req, want string) {
		var wg sync.WaitGroup
		for range 100 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				nc, err := net.Dial("tcp", s.Addr)
				if err != nil {
					t.Error(err)
					return
				}
				defer nc.Close()
				nc.SetDeadline(time.Now().Add(30 * time.Second))
				nc.Write([]byte(req)) // the server may close early: the write may fail
				if line, _ := bufio.NewReader(nc).ReadString('\n'); line != want+"\r\n" {
					t.Errorf("got %q, want %q", line, want)
				}
			}()
		}
		wg.Wait()
	}
	send("*2\r\n$4\r\nECHO\r\n"+bulkHeader(1<<20)+strings.Repeat("z", 1<<20)+"\r\n", "-ERR Protocol error: unauthenticated bulk length")
	after := peakRSS(t, s.cmd.Process.Pid)
	t.Logf("peak RSS %d MB before, %d MB after 100 x 1 MB requests before AUTH", before>>20, after>>20)
	if grew := after - before; grew > 16<<20 {
		t.Fatalf("peak RSS grew by %d MB (from %d MB to %d MB), want at most 16 MB", grew>>20, before>>20, after>>20)
	}
	send("*10\r\n$6\r\nEXISTS\r\n"+strings.Repeat(bulkHeader(16384)+strings.Repeat("w", 16384)+"\r\n", 9), "-NOAUTH Authentication required.")
	// A header line may take 64 KB before its end shows: after nine 16 KB
	// arguments that would pass the bound, and the connection is closed.
	nc := dialRaw(t, s)
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	nc.Write([]byte("*10\r\n" + strings.Repeat(bulkHeader(16384)+strings.Repeat("w", 16384)+"\r\n", 9) + "$" + strings.Repeat("1", 30000)))
	if b, err := io.ReadAll(nc); len(b) != 0 || err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("a 177 KB unfinished request before AUTH: read %q, %v; want the connection closed without a reply", b, err)
	}
}

// TestQueryBufferLimit: a request needing more buffer than
// --client-query-buffer-limit closes the connection without a reply (as
// Redis); one within it is served; CONFIG GET and SET show and move it.
func TestQueryBufferLimit(t *testing.T) {
	t.Parallel()
	s := startIn(t, "", "--client-query-buffer-limit", "1mb", "--proto-max-bulk-len", "8mb")
	arg := bulkHeader(400000) + strings.Repeat("q", 400000) + "\r\n"
	nc := dialRaw(t, s)
	if got, _ := rawReply(t, nc, "*3\r\n$6\r\nEXISTS\r\n"+arg+arg, false); got != ":0" {
		t.Fatalf("an 800 KB request = %q, want :0", got)
	}
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	nc.Write([]byte("*4\r\n$6\r\nEXISTS\r\n" + arg + arg + arg))
	if b, err := io.ReadAll(nc); len(b) != 0 || err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("a 1.2 MB request: read %q, %v; want the connection closed without a reply", b, err)
	}
	c := s.client(t, 2)
	do(t, c, "CONFIG", "GET", "client-query-buffer-limit").equal([]any{"client-query-buffer-limit", "1048576"})
	do(t, c, "CONFIG", "SET", "client-query-buffer-limit", "2mb").equal("OK")
	do(t, c, "CONFIG", "SET", "client-query-buffer-limit", "1kb").errIs("ERR CONFIG SET failed (possibly related to argument 'client-query-buffer-limit') - argument must be between 1048576 and 9223372036854775807 inclusive")
	nc = dialRaw(t, s)
	if got, _ := rawReply(t, nc, "*4\r\n$6\r\nEXISTS\r\n"+arg+arg+arg, false); got != ":0" {
		t.Fatalf("a 1.2 MB request under a 2 MB limit = %q, want :0", got)
	}
}

// TestACLUsers: users with key patterns and categories, as Redis: allowed
// commands on allowed keys run, others are answered NOPERM and change
// nothing; SETUSER applies to connected clients at once; DELUSER closes
// the user's connections; the default user's password is --requirepass.
func TestACLUsers(t *testing.T) {
	t.Parallel()
	s := startIn(t, "", "--requirepass", "adminpw")
	admin := redis.NewClient(&redis.Options{Addr: s.Addr, Password: "adminpw"})
	defer admin.Close()
	do(t, admin, "ACL", "SETUSER", "app", "on", ">apppw", "~app:*", "+@ratelimit", "+exists").equal("OK")
	do(t, admin, "ACL", "SETUSER", "ro", "on", ">ropw", "allkeys", "+@read", "+@connection", "+acl|whoami").equal("OK")
	do(t, admin, "ACL", "LIST").equal([]any{
		"user app on #" + sha("apppw") + " ~app:* resetchannels -@all +@ratelimit +exists",
		"user default on #" + sha("adminpw") + " ~* &* +@all",
		"user ro on #" + sha("ropw") + " ~* resetchannels -@all +@read +@connection +acl|whoami",
	})
	protocols(t, func(t *testing.T, proto int) {
		app := redis.NewClient(&redis.Options{Addr: s.Addr, Username: "app", Password: "apppw", Protocol: proto})
		defer app.Close()
		do(t, app, "CL.THROTTLE", "app:k", "0", "1", "60").equal([]any{int64(0), int64(1), int64(0), int64(-1), int64(60)})
		do(t, app, "CL.THROTTLE", "other:k", "0", "1", "60").errIs("NOPERM No permissions to access a key")
		do(t, app, "CL.ALL", "2", "THROTTLE", "app:a", "0", "1", "60", "THROTTLE", "other:b", "0", "1", "60").errIs("NOPERM No permissions to access a key")
		do(t, app, "EXISTS", "app:k", "app:a").equal(int64(1))
		do(t, app, "EXISTS", "app:k", "secret").errIs("NOPERM No permissions to access a key")
		do(t, app, "FLUSHALL").errIs("NOPERM User app has no permissions to run the 'flushall' command")
		do(t, app, "CONFIG", "GET", "maxclients").errIs("NOPERM User app has no permissions to run the 'config|get' command")
		do(t, app, "ACL", "WHOAMI").errIs("NOPERM User app has no permissions to run the 'acl|whoami' command")
		do(t, admin, "EXISTS", "other:k", "app:a").equal(int64(0))
		do(t, admin, "DEL", "app:k").equal(int64(1))
	})
	// Changes reach a connected client at once.
	app := redis.NewClient(&redis.Options{Addr: s.Addr, Username: "app", Password: "apppw", PoolSize: 1})
	defer app.Close()
	do(t, app, "EXISTS", "x:1").errIs("NOPERM No permissions to access a key")
	do(t, admin, "ACL", "SETUSER", "app", "~x:*", "-exists").equal("OK")
	do(t, app, "EXISTS", "x:1").errIs("NOPERM User app has no permissions to run the 'exists' command")
	do(t, app, "GCRA", "x:1", "1", "1", "1").equal([]any{int64(0), int64(2), int64(1), int64(-1), int64(1)})
	// Wrong passwords, disabled users, unknown users.
	nc := dialRaw(t, s)
	for _, bad := range []string{"AUTH app wrong", "AUTH nobody apppw", "HELLO 3 AUTH app wrong"} {
		if got, err := roundTrip(nc, bad); got != "-WRONGPASS invalid username-password pair or user is disabled." {
			t.Fatalf("%s = %q, %v", bad, got, err)
		}
	}
	do(t, admin, "ACL", "SETUSER", "ro", "off").equal("OK")
	if got, _ := roundTrip(nc, "AUTH ro ropw"); got != "-WRONGPASS invalid username-password pair or user is disabled." {
		t.Fatalf("AUTH as a disabled user = %q", got)
	}
	do(t, admin, "ACL", "SETUSER", "ro", "on").equal("OK")
	if got, _ := roundTrip(nc, "AUTH ro ropw"); got != "+OK" {
		t.Fatalf("AUTH ro ropw = %q", got)
	}
	if got, _ := roundTrip(nc, "ACL WHOAMI"); got != "$2" {
		t.Fatalf("ACL WHOAMI = %q", got)
	}
	if list := admin.ClientList(ctx).Val(); !strings.Contains(list, " user=ro ") {
		t.Fatalf("CLIENT LIST shows no connection of user ro:\n%s", list)
	}
	// DELUSER closes the user's connections; the default user stays.
	do(t, admin, "ACL", "DELUSER", "ro", "nobody").equal(int64(1))
	if _, err := roundTrip(nc, "PING"); !errors.Is(err, io.EOF) {
		t.Fatalf("PING from a deleted user's connection: %v, want the connection closed", err)
	}
	do(t, admin, "ACL", "DELUSER", "default").errIs("ERR The 'default' user cannot be removed")
	do(t, admin, "ACL", "USERS").equal([]any{"app", "default"})
	// Bad rules change nothing.
	do(t, admin, "ACL", "SETUSER", "app", "+nosuchcommand").errIs("ERR Error in ACL SETUSER modifier '+nosuchcommand': Unknown command or category name in ACL")
	do(t, admin, "ACL", "SETUSER", "app", "off", "+@nosuch").errIs("ERR Error in ACL SETUSER modifier '+@nosuch': Unknown command or category name in ACL")
	do(t, admin, "ACL", "SETUSER", "app", "<nosuch").errIs("ERR Error in ACL SETUSER modifier '<nosuch': The password you are trying to remove from the user does not exist")
	do(t, admin, "ACL", "SETUSER", "app", "bogus").errIs("ERR Error in ACL SETUSER modifier 'bogus': Syntax error")
	do(t, admin, "ACL", "GETUSER", "app").equal(map[any]any{
		"flags": []any{"on"}, "passwords": []any{sha("apppw")}, "commands": "-@all +@ratelimit +exists -exists",
		"keys": "~app:* ~x:*", "channels": "", "selectors": []any{},
	})
	do(t, admin, "ACL", "GETUSER", "nobody").errIs("redis: nil")
	do(t, admin, "ACL", "CAT", "ratelimit").equal([]any{"cl.throttle", "gcra", "cl.tokenbucket", "cl.leakybucket", "cl.window", "cl.acquire", "cl.release", "cl.renew", "cl.all"})
	do(t, admin, "ACL", "SAVE").errIs("ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration.")
}

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// TestACLFile: --aclfile is read at start (its default user's password
// then required), ACL SAVE writes what ACL LOAD reads back, ACL LOAD is
// all or nothing, and a file with an error stops the start with exit 2.
func TestACLFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "users.acl")
	os.WriteFile(file, []byte("# rlserver users\nuser default on >rootpw ~* &* +@all\n\nuser svc on >svcpw ~rl:* +@ratelimit\n"), 0o600)
	s := startIn(t, "", "--aclfile", file)
	if got, _ := roundTrip(dialRaw(t, s), "PING"); got != "-NOAUTH Authentication required." {
		t.Fatalf("PING without AUTH = %q", got)
	}
	admin := redis.NewClient(&redis.Options{Addr: s.Addr, Password: "rootpw"})
	defer admin.Close()
	svc := redis.NewClient(&redis.Options{Addr: s.Addr, Username: "svc", Password: "svcpw", Protocol: 3})
	defer svc.Close()
	do(t, svc, "CL.TOKENBUCKET", "rl:a", "5", "1", "1").equal([]any{int64(1), int64(5), int64(4), int64(0), int64(1000)})
	do(t, svc, "CL.TOKENBUCKET", "other", "5", "1", "1").errIs("NOPERM No permissions to access a key")
	do(t, admin, "ACL", "SETUSER", "ops", "on", ">opspw", "allkeys", "+@admin").equal("OK")
	do(t, admin, "ACL", "SAVE").equal("OK")
	saved, _ := os.ReadFile(file)
	want := "user default on #" + sha("rootpw") + " ~* &* +@all\n" +
		"user ops on #" + sha("opspw") + " ~* resetchannels -@all +@admin\n" +
		"user svc on #" + sha("svcpw") + " ~rl:* resetchannels -@all +@ratelimit\n"
	if string(saved) != want {
		t.Fatalf("ACL SAVE wrote:\n%s\nwant:\n%s", saved, want)
	}
	// A broken file changes nothing.
	os.WriteFile(file, []byte("user svc on >other ~* +@all\nuser x on +nosuch\n"), 0o600)
	do(t, admin, "ACL", "LOAD").errIs("ERR " + file + ":2: Unknown command or category name in ACL. Use ACL SETUSER with '+nosuch' to test it. WARNING: ACL errors detected, no change to the previously active ACL rules was performed")
	do(t, svc, "CL.TOKENBUCKET", "other", "5", "1", "1").errIs("NOPERM No permissions to access a key")
	// A good one replaces the users: svc is gone (its connections closed),
	// and the default user, not named, needs no password again.
	os.WriteFile(file, []byte("user ops on >opspw2 ~* +@all\n"), 0o600)
	do(t, admin, "ACL", "LOAD").equal("OK")
	eventually(t, "svc's connection closed", func() bool { return svc.Do(ctx, "PING").Err() != nil })
	do(t, admin, "ACL", "USERS").equal([]any{"default", "ops"})
	if got, _ := roundTrip(dialRaw(t, s), "PING"); got != "+PONG" {
		t.Fatalf("PING without AUTH after loading a file without the default user = %q", got)
	}
	// At start, a bad file is refused.
	os.WriteFile(file, []byte("user a on +@nosuch\n"), 0o600)
	out, err := serverCommand("--port", "0", "--dir", "", "--aclfile", file).CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(out), "users.acl:1: Unknown command or category name in ACL") {
		t.Fatalf("start with a bad ACL file: %v, want exit 2:\n%s", err, out)
	}
}
