package resp

// The protocol's own error replies: a malformed request (the reader's
// protocol errors) and a connection over maxclients. Commands' error texts
// live with the commands.
const (
	ErrMaxClients           = "ERR max number of clients reached"
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

// ErrProtocol is the reply to a malformed request, before the server
// closes the connection.
func ErrProtocol(e *ProtocolError) string { return errProtocolPrefix + e.Msg }

// protoExpected is the text for a bulk header that does not start with '$'.
func protoExpected(c byte) string { return protoExpectedDollar + string([]byte{c}) + "'" }
