package integration

import "testing"

// TestGetKeysAndStandaloneCluster: COMMAND GETKEYS and GETKEYSANDFLAGS
// take keys from the command table's key specs, CL.ALL's included, with
// Redis's errors; a standalone server answers CLUSTER, READONLY, READWRITE
// and ASKING as Redis without cluster support.
func TestGetKeysAndStandaloneCluster(t *testing.T) {
	t.Parallel()
	s := startIn(t, "")
	protocols(t, func(t *testing.T, proto int) {
		c := s.client(t, proto)
		do(t, c, "COMMAND", "GETKEYS", "CL.THROTTLE", "k", "1", "2", "3").equal([]any{"k"})
		do(t, c, "COMMAND", "GETKEYS", "DEL", "a", "b", "c").equal([]any{"a", "b", "c"})
		do(t, c, "COMMAND", "GETKEYS", "CL.ALL", "2", "THROTTLE", "{u}a", "1", "1", "1", "FIXED", "{u}b", "5", "1m").equal([]any{"{u}a", "{u}b"})
		do(t, c, "COMMAND", "GETKEYS", "MEMORY", "USAGE", "k").equal([]any{"k"})
		do(t, c, "COMMAND", "GETKEYS", "NOSUCH", "a").errIs("ERR Invalid command specified")
		do(t, c, "COMMAND", "GETKEYS", "PING", "x").errIs("ERR The command has no key arguments")
		do(t, c, "COMMAND", "GETKEYS", "CONFIG", "GET", "x").errIs("ERR The command has no key arguments")
		do(t, c, "COMMAND", "GETKEYS", "TYPE", "a", "b").errIs("ERR Invalid number of arguments specified for command")
		do(t, c, "COMMAND", "GETKEYS", "TYPE").errIs("ERR wrong number of arguments for 'command|getkeys' command")
		do(t, c, "COMMAND", "GETKEYSANDFLAGS", "CL.TOKENBUCKET", "tb", "5", "1", "1s").equal([]any{[]any{"tb", []any{"RW", "access", "update"}}})
		for _, cmd := range [][]any{{"CLUSTER", "INFO"}, {"CLUSTER", "HELP"}, {"CLUSTER", "KEYSLOT", "foo"}, {"CLUSTER", "SLOTS"}, {"READONLY"}, {"READWRITE"}, {"ASKING"}} {
			do(t, c, cmd...).errIs("ERR This instance has cluster support disabled")
		}
	})
}
