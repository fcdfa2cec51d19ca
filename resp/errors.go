package resp

// Error replies, Redis's texts to the letter; the first word is the code
// clients map on.
const (
	errSyntax      = "ERR syntax error"
	errNotInt      = "ERR value is not an integer or out of range"
	errWrongType   = "WRONGTYPE Operation against a key holding the wrong kind of value"
	errNoAuth      = "NOAUTH Authentication required."
	errWrongPass   = "WRONGPASS invalid username-password pair or user is disabled."
	errNoPassSet   = "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"
	errDBIndex     = "ERR DB index is out of range"
	errNestedMulti = "ERR MULTI calls can not be nested"
	errExecNoMulti = "ERR EXEC without MULTI"
	errDiscardNoMu = "ERR DISCARD without MULTI"
	errExecAbort   = "EXECABORT Transaction discarded because of previous errors."
	errNoProto     = "NOPROTO unsupported protocol version"
	errLogLimit    = "ERR limit exceeds the maximum for LOG windows (CONFIG GET log-max-limit)"
	errAllDistinct = "ERR CL.ALL rules must name distinct keys"
	errDebugOff    = "ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server."
)

func errWrongArgs(name string) string {
	return "ERR wrong number of arguments for '" + name + "' command"
}

func errInvalidDuration(arg []byte) string {
	return "ERR invalid duration '" + string(arg) + "'"
}

// errUnknownCommand is Redis's text, trailing space included.
func errUnknownCommand(args [][]byte) string {
	s := "ERR unknown command '" + trunc(args[0]) + "', with args beginning with: "
	for _, a := range args[1:] {
		s += "'" + trunc(a) + "' "
	}
	return s
}

func errUnknownSubcommand(container string, sub []byte) string {
	return "ERR unknown subcommand '" + trunc(sub) + "'. Try " + upper(container) + " HELP."
}

func trunc(b []byte) string {
	if len(b) > 128 {
		b = b[:128]
	}
	return string(b)
}
