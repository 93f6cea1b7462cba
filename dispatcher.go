package main

import (
	"context"
	"encoding/json"
	"strings"
)

// A Dispatcher serves the messages a transport admits. It is the seam between
// the transport (framing, admission, cancellation, output) and the protocol
// (dialects, the runtime of tools, resources and prompts).
//
// Dispatch runs on an executor worker, concurrently with other calls. It must
// return when ctx is done (cancellation, deadline, transport failure); a late
// return is discarded. It never writes to the output itself. For a
// notification (req.ID == nil) the reply is discarded. A panic in Dispatch is
// recovered by the executor and answered -32603 "Request worker failed".
type Dispatcher interface {
	Dispatch(ctx context.Context, req *Request) Reply
}

// fastPathDispatcher is the one internal interface through which a transport
// learns that its dispatcher (a Runtime of this package) shares work with it
// beyond the Dispatcher contract: the transport allocates the dispatcher's
// per-request record with the request (Request.handlerSpace), and the
// dispatcher may build the response frame along with its result
// (Reply.frame, which builtFrame checks before it is used). Another
// Dispatcher loses only the allocations these save.
type fastPathDispatcher interface {
	Dispatcher
	fillsRequestSpace()
}

// DispatcherFunc adapts a function to the Dispatcher interface.
type DispatcherFunc func(ctx context.Context, req *Request) Reply

// Dispatch calls f(ctx, req).
func (f DispatcherFunc) Dispatch(ctx context.Context, req *Request) Reply { return f(ctx, req) }

// Request is one admitted JSON-RPC request or notification whose envelope is
// valid. Its fields are read-only for the dispatcher.
type Request struct {
	Method string
	// ID is the canonical JSON text of the request id (a string or an integer);
	// nil for a notification.
	ID json.RawMessage
	// Params is the raw "params" object, or nil when the message had none.
	Params json.RawMessage
	// Header holds the request headers the transport synthesized, keyed by
	// lower-case name, as an HTTP request would carry them
	// ("mcp-protocol-version" once a connection ran initialize). Nil when none.
	// Over HTTP it holds every header of the POST (the first value of each,
	// trimmed), and in a session the negotiated version when the POST did
	// not name it; for a *Runtime without middleware the HTTP transport
	// leaves out the headers the Runtime does not read, never for another
	// Dispatcher or for a Runtime's middleware (Runtime.Use).
	Header map[string]string
	// Session is a snapshot, taken when the message was admitted, of what the
	// connection negotiated with initialize.
	Session Session
	// SessionID identifies the connection the message arrived on: a stdio
	// connection, or the HTTP session its Mcp-Session-Id names (for an
	// initialize over HTTP, the session it creates if it succeeds). It is
	// random, unique within the process, and the same for every message of
	// the connection; "" for a 2026-07-28 request over HTTP, which belongs to
	// no session. State a server keeps for a client (tasks, say) can be
	// scoped by it.
	SessionID string
	// Transport is TransportStreamableHTTP for a message that arrived over
	// Streamable HTTP; "" for stdio and for a Request built by anyone else.
	// initialize negotiates only a version the transport carries
	// (2024-11-05 predates Streamable HTTP).
	Transport string
	// Peer reaches the client while the request runs; nil where there is no
	// client (a Dispatch called directly, or a notification).
	Peer Peer
	// SpanContext is the request's span (observer.go) when the transport
	// has an Observer; invalid otherwise.
	SpanContext SpanContext

	// validParams is Params as the transport validated it (strict JSON, an
	// object) when it admitted the request; nil for a Request built by
	// anyone else. See paramsValidated.
	validParams json.RawMessage
	// handlerSpace, when the transport provides it, holds the
	// HandlerRequest the runtime builds for this request, so that it costs
	// no allocation of its own. See newHandlerRequest.
	handlerSpace *handlerRequestSpace
	// frameSpace, when the transport provides it, lends a buffer for the
	// answer's frame (see startResultFrame).
	frameSpace *frameSpace
	// answers, when the transport provides it, admits the bytes of an
	// answer before the dispatcher builds it (claimAnswer); nil: an
	// answer is admitted only once it is built.
	answers answerClaimer
}

// answerClaimer admits an answer's bytes against the transport's byte
// budget before the answer is built: claimAnswer reports whether n bytes
// fit (and counts them until the answer is written) as its message's bytes
// were admitted; when they do not, the request is answered with the
// overload error. Safe to call from the request's handler goroutine.
type answerClaimer interface {
	claimAnswer(n int) bool
}

// claimAnswer reports whether the answer of n bytes the dispatcher is about
// to build for r may be built (see answerClaimer); true when the transport
// does not admit answers ahead. A dispatcher that gets false answers the
// request with errCapacity instead, so that an answer that does not fit is
// never built.
func (r *Request) claimAnswer(n int) bool {
	return r.answers == nil || r.answers.claimAnswer(n)
}

// paramsValidated reports whether Params are the very bytes the transport
// validated. A copy of the Request whose Params were replaced does not
// qualify: its params are validated again.
func (r *Request) paramsValidated() bool {
	return len(r.Params) > 0 && len(r.validParams) == len(r.Params) && &r.validParams[0] == &r.Params[0]
}

// Peer is a running request's link to the client, provided by the transport.
// Its methods are safe for concurrent use and fail, on every transport alike,
// with ErrRequestEnded once the request has been answered, cancelled or timed
// out, and with ErrClosed when the connection ended while the request ran.
type Peer interface {
	// Notify writes a server-to-client notification as part of this
	// request's output, so it precedes the request's response. params is a
	// JSON object or nil; anything else is refused with an error matching
	// ErrInvalidNotification and nothing is written. It blocks until the
	// frame is written: a slow client slows the handler (backpressure),
	// never the transport.
	Notify(ctx context.Context, method string, params json.RawMessage) error
	// Request sends a server-to-client request (initialize era) with an id
	// the server chooses, and blocks until the client's response arrives,
	// ctx ends, or the connection ends. A JSON-RPC error response is returned
	// as an *RPCError. params is a JSON object or nil, as for Notify.
	Request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
}

// HeaderValue returns the value of the named header, matched
// case-insensitively, or "" when absent.
func (r *Request) HeaderValue(name string) string {
	if v, ok := r.Header[name]; ok {
		return v
	}
	return r.Header[strings.ToLower(name)]
}

// Session is what an initialize-era connection negotiated. The zero value
// means initialize has not succeeded on the connection.
type Session struct {
	ProtocolVersion    string
	ClientInfo         json.RawMessage
	ClientCapabilities json.RawMessage
	// LogLevel is the minimum level of notifications/message set with
	// logging/setLevel; "" until the client set one.
	LogLevel string
}

// Reply is the dispatcher's answer to a request: either Result (compact,
// valid JSON) or Error. Result's bytes are read-only
// once returned: a dispatcher that wraps another may replace Result, never
// modify it in place.
type Reply struct {
	Result json.RawMessage
	Error  *RPCError
	// Initialized, set on the successful reply to initialize, is recorded by
	// the coordinator as the connection's Session before the reply is written,
	// so every later message carries it.
	Initialized *Session
	// LogLevel, set on the successful reply to logging/setLevel, becomes the
	// connection's Session.LogLevel before the reply is written.
	LogLevel string
	// Subscribe and Unsubscribe, set on the successful reply to
	// resources/subscribe and resources/unsubscribe, add the URI to or remove
	// it from the connection's subscriptions (initialize era).
	Subscribe, Unsubscribe string
	// Listen, set on the successful reply to subscriptions/listen (2026),
	// turns the request into an open subscription: the transport keeps its id
	// in flight, writes notifications/subscriptions/acknowledged instead of a
	// response, then forwards the requested changes until the client cancels
	// it or the connection ends.
	Listen *ListenFilter

	// frame, set by the runtime's result paths that produce final bytes
	// (startResultFrame, framedResult), is the complete response frame of
	// Result, which it holds: the transport writes it as is, without copying
	// Result again, when Result still refers to exactly those bytes (see
	// builtFrame); otherwise the frame is built from Result.
	frame []byte
}

// RPCError is a JSON-RPC error object. Message is sent to the client as is:
// never put an internal cause in it.
type RPCError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

func (e *RPCError) Error() string { return e.Message }

// JSON-RPC and MCP error codes.
const (
	CodeParseError         = -32700
	CodeInvalidRequest     = -32600
	CodeMethodNotFound     = -32601
	CodeInvalidParams      = -32602
	CodeInternalError      = -32603
	CodeResourceNotFound   = -32002
	CodeMissingCapability  = -32021
	CodeUnsupportedVersion = -32022
)
