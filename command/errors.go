package command

import (
	"strconv"
	"strings"
)

// The error replies of the commands, Redis's texts to the letter; the
// first word is the code clients map on. The wire's own errors (a
// malformed request, too many clients) are resp's.
const (
	errScriptCmd        = "ERR This Redis command is not allowed from script"
	errScriptWrite      = "ERR Write commands are not allowed from read-only scripts."
	errNumKeys          = "ERR Number of keys can't be greater than number of args"
	errNumKeysNeg       = "ERR Number of keys can't be negative"
	errFcallNumKeys     = "ERR Bad number of keys provided"
	errFunctionNotFound = "ERR Function not found"
	errFcallRO          = "ERR Can not execute a script with write flag using *_ro command."
	errNoClusterFlag    = "ERR Can not run script on cluster, 'no-cluster' flag is set."
	errFunctionFlush    = "ERR FUNCTION FLUSH only supports SYNC|ASYNC option"
	errNoLibraryName    = "ERR library name argument was not given"
	errRestorePolicy    = "ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE."
	errSyntax           = "ERR syntax error"
	errNotInt           = "ERR value is not an integer or out of range"
	errWrongType        = "WRONGTYPE Operation against a key holding the wrong kind of value"
	errNoAuth           = "NOAUTH Authentication required."
	errWrongPass        = "WRONGPASS invalid username-password pair or user is disabled."
	errNoPassSet        = "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"
	errDBIndex          = "ERR DB index is out of range"
	errNestedMulti      = "ERR MULTI calls can not be nested"
	errExecNoMulti      = "ERR EXEC without MULTI"
	errDiscardNoMulti   = "ERR DISCARD without MULTI"
	errExecAbort        = "EXECABORT Transaction discarded because of previous errors."
	errNotInMulti       = "ERR Command not allowed inside a transaction"
	errNoProto          = "NOPROTO unsupported protocol version"
	errHelloProto       = "ERR Protocol version is not an integer or out of range"
	errHelloNoAuth      = "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time"
	errNoCaching        = "ERR client-side caching is not supported: rlserver sends no invalidation messages, and limiter state changes with every decision, so it refuses reads asked to be cached (CLIENT CACHING YES); read without caching"
	errTrackingMode     = "ERR rlserver accepts CLIENT TRACKING ON only in OPTIN mode, where nothing is cached unless asked with CLIENT CACHING YES (which it refuses): it sends no invalidation messages"
	errCachingMode      = "ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled"
	errCachingNo        = "ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode."
	errRedirectNoClient = "ERR The client ID you want redirect to does not exist"
	errClientName       = "ERR Client names cannot contain spaces, newlines or special characters."
	errClientID         = "ERR Invalid client ID"
	errInvalidCursor    = "ERR invalid cursor"
	errDebugOff         = "ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server."
	errShutdown         = "ERR Errors trying to SHUTDOWN. Check logs."
	errPersistenceOff   = "ERR persistence is off (--dir '')"
	errSlowlogCount     = "ERR count should be greater than or equal to -1"
	errLogLimit         = "ERR limit exceeds the maximum for LOG windows (CONFIG GET log-max-limit)"
	errAllDistinctKeys  = "ERR CL.ALL rules must name distinct keys"
	errZeroRate         = "ERR zero rates are not supported"
	errDenied           = "DENIED rlserver is running in protected mode because protected mode is enabled and no password is set for the default user. In this mode connections are only accepted from the loopback interface (127.0.0.1, ::1). To accept connections from elsewhere, do one of: 1) set a password with --requirepass (or RLSERVER_REQUIREPASS), or CONFIG SET requirepass from the loopback interface; 2) turn protected mode off with --protected-mode no, or CONFIG SET protected-mode no from the loopback interface, making sure rlserver is not reachable from the internet."
	errCheckpointName   = "ERR CHECKPOINT takes a plain name, the copy's directory under --backup-dir (no '/', no '..')"
	errGiveBackRule     = "ERR RLS GIVEBACK gives back to TOKENBUCKET, THROTTLE, FIXED or SLIDING rules only"
)

// COMMAND GETKEYS's errors, and cluster commands' without cluster mode.
const (
	errInvalidCommand  = "ERR Invalid command specified"
	errNoKeyArgs       = "ERR The command has no key arguments"
	errInvalidArgCount = "ERR Invalid number of arguments specified for command"
	errInvalidArgs     = "ERR Invalid arguments specified for command"
	errClusterDisabled = "ERR This instance has cluster support disabled"
)

// Cluster mode's errors, worded as Redis Cluster's.
const (
	errCrossSlot        = "CROSSSLOT Keys in request don't hash to the same slot"
	errClusterDown      = "CLUSTERDOWN The cluster is down"
	errSlotUnbound      = "CLUSTERDOWN Hash slot not served"
	errReadOnlyReplica  = "READONLY You can't write against a read only replica."
	errInvalidSlot      = "ERR Invalid slot"
	errInvalidSlotCount = "ERR Invalid slot or number of keys"
	errWaitOnReplica    = "ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated."
	errTimeoutNegative  = "ERR timeout is negative"
	errTryAgain         = "TRYAGAIN Slot being handed to another node, try again"
	errNoReplication    = "ERR this node does not replicate (cluster mode with replicas only)"
)

// errAsk sends a client to the node importing slot, for one command
// preceded by ASKING.
func errAsk(slot int, addr string) string { return "ASK " + strconv.Itoa(slot) + " " + addr }

// errMoved redirects a client to the node serving slot.
func errMoved(slot int, addr string) string { return "MOVED " + strconv.Itoa(slot) + " " + addr }

// errConfigReason is CONFIG SET's error for a value it cannot apply.
func errConfigReason(name, reason string) string {
	return "ERR CONFIG SET failed (possibly related to argument '" + name + "') - " + reason
}

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
	return "ERR unknown subcommand '" + trunc(sub) + "'. Try " + strings.ToUpper(container) + " HELP."
}

// errFunctionOption is FUNCTION LOAD's refusal of an option.
func errFunctionOption(opt []byte) string { return "ERR Unknown option given: " + string(opt) }

// errFunctionListArg is FUNCTION LIST's refusal of an argument.
func errFunctionListArg(arg []byte) string { return "ERR Unknown argument " + string(arg) }

// errSubcommandSyntax is a container's refusal of a subcommand's
// arguments (addReplySubcommandSyntaxError): args[1] as sent.
func errSubcommandSyntax(args [][]byte) string {
	return "ERR unknown subcommand or wrong number of arguments for '" + trunc(args[1]) + "'. Try " + strings.ToUpper(string(args[0])) + " HELP."
}

func errHelloOption(opt []byte) string {
	return "ERR Syntax error in HELLO option '" + trunc(opt) + "'"
}

func errUnrecognizedOption(opt []byte) string {
	return "ERR Unrecognized option '" + trunc(opt) + "'"
}

// errClientAttr is CLIENT SETINFO's refusal of a value; attr is upper case.
func errClientAttr(attr string) string {
	return "ERR " + attr + " cannot contain spaces, newlines or special characters."
}

func errUnknownType(name []byte) string {
	return "ERR unknown type name '" + trunc(name) + "'"
}

// errConfigImmutable, errConfigUnknown and errConfigValue are CONFIG SET's
// refusals; name is the parameter in lower case.
func errConfigImmutable(name string) string {
	return "ERR CONFIG SET failed (possibly related to argument '" + name + "') - can't set immutable config"
}

func errConfigUnknown(arg []byte) string {
	return "ERR Unknown option or number of arguments for CONFIG SET - '" + trunc(arg) + "'"
}

func errConfigValue(name string) string {
	return "ERR CONFIG SET failed (possibly related to argument '" + name + "') - argument couldn't be parsed into an integer"
}

// errConfigYesNo is CONFIG SET's error for a bad yes/no value.
func errConfigYesNo(name string) string {
	return "ERR CONFIG SET failed (possibly related to argument '" + name + "') - argument must be 'yes' or 'no'"
}

// errFailed reports an error of the server's own (a failed save or
// checkpoint) as a generic ERR reply.
func errFailed(err error) string { return "ERR " + err.Error() }

func trunc(b []byte) string {
	if len(b) > 128 {
		b = b[:128]
	}
	return string(b)
}
