package integration

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/internal/redistest"
)

// commandRow is what TestCommandCategoriesAgainstRedis compares of a
// COMMAND row: its ACL categories (without '@') and the flags Redis
// derives categories from, each sorted.
type commandRow struct{ cats, flags []string }

// aclFlags are the flags Redis derives ACL categories from.
var aclFlags = []string{"write", "readonly", "admin", "pubsub", "fast", "blocking"}

// commandRows returns COMMAND's rows, subcommands included, by name.
func commandRows(t *testing.T, c *redis.Client) map[string]commandRow {
	t.Helper()
	v, err := c.Do(ctx, "COMMAND").Slice()
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]commandRow)
	var add func(entries []any)
	add = func(entries []any) {
		for _, e := range entries {
			row := e.([]any)
			var r commandRow
			for _, x := range row[2].([]any) {
				if slices.Contains(aclFlags, x.(string)) {
					r.flags = append(r.flags, x.(string))
				}
			}
			for _, x := range row[6].([]any) {
				r.cats = append(r.cats, strings.TrimPrefix(x.(string), "@"))
			}
			slices.Sort(r.flags)
			slices.Sort(r.cats)
			out[row[0].(string)] = r
			if len(row) > 9 {
				add(row[9].([]any))
			}
		}
	}
	add(v)
	return out
}

// TestCommandCategoriesAgainstRedis: every command and subcommand both
// servers have, matched by name, is in Redis 7's ACL categories (and has
// the flags Redis derives categories from), so that ACL rules written for
// Redis grant and deny the same; ACL CAT lists Redis's categories and, per
// category, the commands both have as Redis.
func TestCommandCategoriesAgainstRedis(t *testing.T) {
	t.Parallel()
	ours := start(t).client(t, 2)
	theirs := redis.NewClient(&redis.Options{Addr: redistest.Start(t), Protocol: 2})
	defer theirs.Close()
	got, want := commandRows(t, ours), commandRows(t, theirs)
	var diffs []string
	both := 0
	for name, r := range got {
		w, ok := want[name]
		if ok {
			both++
		}
		if ok && !slices.Equal(r.cats, w.cats) {
			diffs = append(diffs, fmt.Sprintf("%s: %v, redis %v", name, r.cats, w.cats))
		}
		if ok && !slices.Equal(r.flags, w.flags) {
			diffs = append(diffs, fmt.Sprintf("%s: flags %v, redis %v", name, r.flags, w.flags))
		}
	}
	if both < 150 {
		t.Fatalf("only %d commands and subcommands matched by name", both)
	}
	slices.Sort(diffs)
	if len(diffs) > 0 {
		t.Errorf("%d ACL categories or flags differ from Redis's:\n%s", len(diffs), strings.Join(diffs, "\n"))
	}

	// ACL CAT: Redis's categories in its order, then ours (ratelimit).
	cats, err := ours.Do(ctx, "ACL", "CAT").StringSlice()
	if err != nil {
		t.Fatal(err)
	}
	rcats, err := theirs.Do(ctx, "ACL", "CAT").StringSlice()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cats[:min(len(cats), len(rcats))], rcats) {
		t.Errorf("ACL CAT = %v, redis %v", cats, rcats)
	}
	// ACL CAT <category>: the same commands both have (Redis's order is
	// its hash table's, so compared as sets).
	for _, cat := range rcats {
		mine, err := ours.Do(ctx, "ACL", "CAT", strings.ToUpper(cat)).StringSlice()
		if err != nil {
			t.Fatalf("ACL CAT %s: %v", cat, err)
		}
		theirsList, err := theirs.Do(ctx, "ACL", "CAT", strings.ToUpper(cat)).StringSlice()
		if err != nil {
			t.Fatalf("redis ACL CAT %s: %v", cat, err)
		}
		var extra, missing []string
		for _, n := range mine {
			if _, both := want[n]; both && !slices.Contains(theirsList, n) {
				extra = append(extra, n)
			}
		}
		for _, n := range theirsList {
			if _, both := got[n]; both && !slices.Contains(mine, n) {
				missing = append(missing, n)
			}
		}
		if len(extra)+len(missing) > 0 {
			t.Errorf("ACL CAT %s: not in redis's %v, missing %v", cat, extra, missing)
		}
	}
	for _, c := range []*redis.Client{ours, theirs} {
		do(t, c, "ACL", "CAT", "nosuch").errIs("ERR Unknown category 'nosuch'")
	}
}

// TestACLCategoryRulesAgainstRedis: users given Redis's category rules
// may run the same commands on both servers, with the same replies; the
// denials are NOPERM naming the same command (rlserver words them as
// Redis 7.2, redis-server 7.0 otherwise).
func TestACLCategoryRulesAgainstRedis(t *testing.T) {
	t.Parallel()
	ours := start(t)
	theirs := &server{Addr: redistest.Start(t)}
	const same, denied, ok = "same", "denied", "ok"
	steps := []struct {
		args []string
		want string // same: equal replies; denied: NOPERM for args[0]; ok: no error, the same type
	}{
		{[]string{"SET", "k", "v"}, same},
		{[]string{"ACL", "SETUSER", "r", "on", "nopass", "+@read", "~*"}, same},
		{[]string{"ACL", "SETUSER", "a", "on", "nopass", "+@all", "-@admin", "~*"}, same},
		{[]string{"AUTH", "r", "x"}, same},
		{[]string{"EXISTS", "k", "nokey"}, same},
		{[]string{"TTL", "k"}, same},
		{[]string{"PTTL", "k"}, same},
		{[]string{"TYPE", "k"}, same},
		{[]string{"GET", "k"}, same},
		{[]string{"DBSIZE"}, same},
		{[]string{"SET", "k", "w"}, denied},
		{[]string{"DEL", "k"}, denied},
		{[]string{"TIME"}, denied},
		{[]string{"AUTH", "a", "x"}, same},
		{[]string{"TIME"}, ok},
		{[]string{"DBSIZE"}, same},
		{[]string{"INFO", "server"}, ok},
		{[]string{"UNLINK", "nokey"}, same},
		{[]string{"LASTSAVE"}, denied},
		{[]string{"CONFIG", "GET", "maxmemory"}, denied},
		{[]string{"CLIENT", "LIST"}, denied},
		{[]string{"CLIENT", "ID"}, ok},
	}
	a, b := dial(t, ours), dial(t, theirs)
	for _, st := range steps {
		got, want := a.cmd(st.args...).reply(), b.cmd(st.args...).reply()
		switch st.want {
		case same:
			if got != want {
				t.Errorf("%q: %q, redis %q", st.args, got, want)
			}
		case denied:
			name := strings.ToLower(st.args[0])
			if name == "config" || name == "client" {
				name += "|" + strings.ToLower(st.args[1])
			}
			for _, r := range []string{got, want} {
				if !strings.HasPrefix(r, "-NOPERM ") || !strings.Contains(r, "'"+name+"' command") {
					t.Errorf("%q: %q, redis %q; want both NOPERM for %s", st.args, got, want, name)
					break
				}
			}
		case ok:
			if got == "" || want == "" || got[0] != want[0] || got[0] == '-' {
				t.Errorf("%q: %q, redis %q; want both the same kind of reply", st.args, got, want)
			}
		}
	}
}
