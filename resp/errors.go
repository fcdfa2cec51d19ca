package resp

import (
	"strconv"
	"strings"
)

// Every error reply rlserver sends, Redis's texts to the letter; the first
// word is the code clients map on. They live here, in the protocol package,
// because error replies are part of the wire: the reader's protocol errors
// need them, resp must not depend on the command package, and the command
// package already depends on resp for its reply writer, so both use this
// one file without a further package.
const (
	ErrSyntax               = "ERR syntax error"
	ErrNotInt               = "ERR value is not an integer or out of range"
	ErrWrongType            = "WRONGTYPE Operation against a key holding the wrong kind of value"
	ErrNoAuth               = "NOAUTH Authentication required."
	ErrWrongPass            = "WRONGPASS invalid username-password pair or user is disabled."
	ErrNoPassSet            = "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"
	ErrDBIndex              = "ERR DB index is out of range"
	ErrNestedMulti          = "ERR MULTI calls can not be nested"
	ErrExecNoMulti          = "ERR EXEC without MULTI"
	ErrDiscardNoMulti       = "ERR DISCARD without MULTI"
	ErrExecAbort            = "EXECABORT Transaction discarded because of previous errors."
	ErrNotInMulti           = "ERR Command not allowed inside a transaction"
	ErrNoProto              = "NOPROTO unsupported protocol version"
	ErrHelloProto           = "ERR Protocol version is not an integer or out of range"
	ErrHelloNoAuth          = "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time"
	ErrNoCaching            = "ERR client-side caching is not supported: rlserver sends no invalidation messages, and limiter state changes with every decision, so it refuses reads asked to be cached (CLIENT CACHING YES); read without caching"
	ErrTrackingMode         = "ERR rlserver accepts CLIENT TRACKING ON only in OPTIN mode, where nothing is cached unless asked with CLIENT CACHING YES (which it refuses): it sends no invalidation messages"
	ErrCachingMode          = "ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled"
	ErrCachingNo            = "ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode."
	ErrRedirectNoClient     = "ERR The client ID you want redirect to does not exist"
	ErrClientName           = "ERR Client names cannot contain spaces, newlines or special characters."
	ErrClientID             = "ERR Invalid client ID"
	ErrInvalidCursor        = "ERR invalid cursor"
	ErrDebugOff             = "ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server."
	ErrShutdown             = "ERR Errors trying to SHUTDOWN. Check logs."
	ErrPersistenceOff       = "ERR persistence is off (--dir '')"
	ErrSlowlogCount         = "ERR count should be greater than or equal to -1"
	ErrLogLimit             = "ERR limit exceeds the maximum for LOG windows (CONFIG GET log-max-limit)"
	ErrAllDistinctKeys      = "ERR CL.ALL rules must name distinct keys"
	ErrMaxClients           = "ERR max number of clients reached"
	ErrZeroRate             = "ERR zero rates are not supported"
	ErrDenied               = "DENIED rlserver is running in protected mode because protected mode is enabled and no password is set for the default user. In this mode connections are only accepted from the loopback interface (127.0.0.1, ::1). To accept connections from elsewhere, do one of: 1) set a password with --requirepass (or RLSERVER_REQUIREPASS), or CONFIG SET requirepass from the loopback interface; 2) turn protected mode off with --protected-mode no, or CONFIG SET protected-mode no from the loopback interface, making sure rlserver is not reachable from the internet."
	ErrCheckpointName       = "ERR CHECKPOINT takes a plain name, the copy's directory under --backup-dir (no '/', no '..')"
	errProtocolPrefix       = "ERR Protocol error: "
	protoMultibulkLen       = "invalid multibulk length"
	protoBulkLen            = "invalid bulk length"
	protoUnauthMultibulkLen = "unauthenticated multibulk length"
	protoUnauthBulkLen      = "unauthenticated bulk length"
	protoQuotes             = "unbalanced quotes in request"
	protoBigInline          = "too big inline request"
	protoBigMultibulk       = "too big mbulk count string"
	protoBigBulkCount       = "too big bulk count string"
	protoExpectedDollar     = "expected '$', got '"
)

// COMMAND GETKEYS's errors, and cluster commands' without cluster mode.
const (
	ErrInvalidCommand  = "ERR Invalid command specified"
	ErrNoKeyArgs       = "ERR The command has no key arguments"
	ErrInvalidArgCount = "ERR Invalid number of arguments specified for command"
	ErrInvalidArgs     = "ERR Invalid arguments specified for command"
	ErrClusterDisabled = "ERR This instance has cluster support disabled"
)

// Cluster mode's errors, worded as Redis Cluster's.
const (
	ErrCrossSlot        = "CROSSSLOT Keys in request don't hash to the same slot"
	ErrClusterDown      = "CLUSTERDOWN The cluster is down"
	ErrSlotUnbound      = "CLUSTERDOWN Hash slot not served"
	ErrReadOnlyReplica  = "READONLY You can't write against a read only replica."
	ErrInvalidSlot      = "ERR Invalid slot"
	ErrInvalidSlotCount = "ERR Invalid slot or number of keys"
	ErrWaitOnReplica    = "ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated."
	ErrTimeoutNegative  = "ERR timeout is negative"
	ErrTryAgain         = "TRYAGAIN Slot being handed to another node, try again"
)

// ErrAsk sends a client to the node importing slot, for one command
// preceded by ASKING.
func ErrAsk(slot int, addr string) string { return "ASK " + strconv.Itoa(slot) + " " + addr }

// ErrMoved redirects a client to the node serving slot.
func ErrMoved(slot int, addr string) string { return "MOVED " + strconv.Itoa(slot) + " " + addr }

// ErrConfigReason is CONFIG SET's error for a value it cannot apply.
func ErrConfigReason(name, reason string) string {
	return "ERR CONFIG SET failed (possibly related to argument '" + name + "') - " + reason
}

// ErrProtocol is the reply to a malformed request, before the server
// closes the connection.
func ErrProtocol(e *ProtocolError) string { return errProtocolPrefix + e.Msg }

// protoExpected is the text for a bulk header that does not start with '$'.
func protoExpected(c byte) string { return protoExpectedDollar + string([]byte{c}) + "'" }

func ErrWrongArgs(name string) string {
	return "ERR wrong number of arguments for '" + name + "' command"
}

func ErrInvalidDuration(arg []byte) string {
	return "ERR invalid duration '" + string(arg) + "'"
}

// ErrUnknownCommand is Redis's text, trailing space included.
func ErrUnknownCommand(args [][]byte) string {
	s := "ERR unknown command '" + trunc(args[0]) + "', with args beginning with: "
	for _, a := range args[1:] {
		s += "'" + trunc(a) + "' "
	}
	return s
}

func ErrUnknownSubcommand(container string, sub []byte) string {
	return "ERR unknown subcommand '" + trunc(sub) + "'. Try " + strings.ToUpper(container) + " HELP."
}

func ErrHelloOption(opt []byte) string {
	return "ERR Syntax error in HELLO option '" + trunc(opt) + "'"
}

func ErrUnrecognizedOption(opt []byte) string {
	return "ERR Unrecognized option '" + trunc(opt) + "'"
}

// ErrClientAttr is CLIENT SETINFO's refusal of a value; attr is upper case.
func ErrClientAttr(attr string) string {
	return "ERR " + attr + " cannot contain spaces, newlines or special characters."
}

func ErrUnknownType(name []byte) string {
	return "ERR unknown type name '" + trunc(name) + "'"
}

// ErrConfigImmutable, ErrConfigUnknown and ErrConfigValue are CONFIG SET's
// refusals; name is the parameter in lower case.
func ErrConfigImmutable(name string) string {
	return "ERR CONFIG SET failed (possibly related to argument '" + name + "') - can't set immutable config"
}

func ErrConfigUnknown(arg []byte) string {
	return "ERR Unknown option or number of arguments for CONFIG SET - '" + trunc(arg) + "'"
}

func ErrConfigValue(name string) string {
	return "ERR CONFIG SET failed (possibly related to argument '" + name + "') - argument couldn't be parsed into an integer"
}

// ErrConfigYesNo is CONFIG SET's error for a bad yes/no value.
func ErrConfigYesNo(name string) string {
	return "ERR CONFIG SET failed (possibly related to argument '" + name + "') - argument must be 'yes' or 'no'"
}

// ErrFailed reports an error of the server's own (a failed save or
// checkpoint) as a generic ERR reply.
func ErrFailed(err error) string { return "ERR " + err.Error() }

func trunc(b []byte) string {
	if len(b) > 128 {
		b = b[:128]
	}
	return string(b)
}
