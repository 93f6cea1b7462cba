package main

// The observer seam: how telemetry sees the connection core without the core
// naming it. The core calls an Observer, when one is configured
// (Options.Observer, HTTPOptions.Observer), at the few points where an
// operation's fate is decided: a request received, refused, answered,
// cancelled or timed out; a session opened and closed; a server-to-client
// request sent and answered. With no observer each of those points is one
// nil check: no allocation, no lock (TestEchoRoundTripAllocations,
// BenchmarkObserver/none).
//
// Trace context (W3C Trace Context, SEP-414) is parsed here too, because the
// core carries it: a request's span context goes into its handler's context
// (SpanContextFromContext) and its HandlerRequest, and into the params._meta
// of the server's own requests and notifications to the client.
// observer_hooks.go holds the points where the core calls the Observer.

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"time"
)

// SpanContext is the identity of a span as W3C Trace Context carries it: the
// value of a traceparent header, plus tracestate. The zero SpanContext is
// invalid (no span).
type SpanContext struct {
	TraceID    [16]byte
	SpanID     [8]byte
	Flags      byte   // trace-flags; bit 0 is "sampled"
	TraceState string // the tracestate value as received, "" when none
	Remote     bool   // it was propagated from another process
}

// IsValid reports whether s names a span: a trace id and a span id that are
// not all zeros.
func (s SpanContext) IsValid() bool { return s.TraceID != [16]byte{} && s.SpanID != [8]byte{} }

// Sampled reports whether the sampled flag is set.
func (s SpanContext) Sampled() bool { return s.Flags&1 != 0 }

// TraceIDString and SpanIDString are the ids in lower-case hex.
func (s SpanContext) TraceIDString() string { return hex.EncodeToString(s.TraceID[:]) }
func (s SpanContext) SpanIDString() string  { return hex.EncodeToString(s.SpanID[:]) }

// Traceparent is s as a version-00 traceparent value, "" when s is invalid.
func (s SpanContext) Traceparent() string {
	if !s.IsValid() {
		return ""
	}
	var b [55]byte
	copy(b[:], "00-")
	hex.Encode(b[3:35], s.TraceID[:])
	b[35] = '-'
	hex.Encode(b[36:52], s.SpanID[:])
	b[52] = '-'
	hex.Encode(b[53:55], []byte{s.Flags})
	return string(b[:])
}

// ParseTraceparent parses a traceparent value as W3C Trace Context says: a
// version other than ff, a 32-hex-digit trace id and a 16-hex-digit span id
// that are not all zeros, two hex digits of flags, all lower case. Version 00
// has exactly those four fields; a later version may append "-" and more,
// which is ignored. Anything else is not a trace context (false), never an
// error: an invalid value is ignored.
func ParseTraceparent(v string) (SpanContext, bool) {
	var s SpanContext
	if len(v) < 55 || v[2] != '-' || v[35] != '-' || v[52] != '-' {
		return s, false
	}
	version := v[0:2]
	if !isLowerHex(version) || version == "ff" || version == "00" && len(v) != 55 || len(v) > 55 && v[55] != '-' {
		return s, false
	}
	if !isLowerHex(v[3:35]) || !isLowerHex(v[36:52]) || !isLowerHex(v[53:55]) {
		return s, false
	}
	var flags [1]byte
	hex.Decode(s.TraceID[:], []byte(v[3:35]))
	hex.Decode(s.SpanID[:], []byte(v[36:52]))
	hex.Decode(flags[:], []byte(v[53:55]))
	s.Flags, s.Remote = flags[0], true
	return s, s.IsValid()
}

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// Observer sees each operation of the connections it is configured on. Its
// methods are called from the goroutines that own connection state (stdio's
// coordinator, an HTTP session's or POST's goroutine) and from workers, so
// they must be safe for concurrent use, and they must not block: a slow
// observer slows every request. The telemetry files implement it (with an
// OTLP exporter of their own) and so does the OpenTelemetry SDK adapter
// (module mcpstdio/otel).
type Observer interface {
	// StartOperation is called when a request is received, before it is
	// admitted; the span it returns (nil: the request is not observed) is
	// ended exactly once, by End, when the request is answered, refused,
	// cancelled or timed out, or when its connection ends first.
	StartOperation(op *OperationStart) OperationSpan
	// SessionStarted and SessionEnded bracket a stdio connection or an
	// HTTP session (not a 2026-07-28 request over HTTP, which has none).
	SessionStarted(s SessionInfo)
	SessionEnded(s SessionInfo)
}

// OperationStart is what the core knows of a request when it is received.
// Params are the raw params as sent, not yet validated: an observer reads
// them defensively (see TraceContextFromParams).
type OperationStart struct {
	Method    string
	RequestID string // the canonical id text (a JSON string or integer)
	SessionID string // "" for a 2026-07-28 request over HTTP
	// Transport is "" on stdio, TransportStreamableHTTP over HTTP.
	Transport string
	// ProtocolVersion is the version the connection negotiated, "" when
	// none was (a 2026-07-28 request names it in params._meta).
	ProtocolVersion string
	Params          json.RawMessage
	// Values is the context whose values the handler's context carries;
	// over HTTP it carries the POST's client address and traceparent
	// header (see TransportInfoFromContext).
	Values   context.Context
	Received time.Time
}

// OperationOutcome is how an operation ended.
type OperationOutcome int

const (
	// OperationAnswered: a response (result or error) was sent.
	OperationAnswered OperationOutcome = iota
	// OperationRefused: refused before it ran (the executor was full).
	OperationRefused
	// OperationCancelled: the client cancelled it (or its HTTP request
	// went away); nothing was sent.
	OperationCancelled
	// OperationTimedOut: it ran past its deadline; answered -32603.
	OperationTimedOut
	// OperationFailed: its worker failed outside the runtime's recovery.
	OperationFailed
	// OperationAbandoned: its connection ended before it was answered.
	OperationAbandoned
)

// OperationEnd is how an operation ended, for OperationSpan.End.
type OperationEnd struct {
	Outcome OperationOutcome
	// ErrorCode and ErrorMessage are the JSON-RPC error sent (0, "" when
	// none).
	ErrorCode    int
	ErrorMessage string
	// ToolError is set when a tools/call result has isError true.
	ToolError bool
	// RefusedReason names why a refused request was refused ("capacity").
	RefusedReason string
}

// OperationSpan is one observed operation. SpanContext and Context are
// called from the worker that runs the request, End from the connection's
// owner; an implementation must allow that.
type OperationSpan interface {
	// SpanContext is the span's identity: what a handler's context carries
	// and what is propagated to the client. Invalid when not recorded.
	SpanContext() SpanContext
	// Context returns ctx carrying the span the way the observer's tracer
	// expects it (so that user code starts child spans under it).
	Context(ctx context.Context) context.Context
	// StartClient starts the CLIENT span of a server-to-client request
	// (method) made on behalf of this operation; nil: not observed.
	StartClient(method string) OperationSpan
	// StartLinked starts a span that is not a child of this one but linked
	// to it: the run of a task that a task-augmented call created.
	StartLinked(name string) OperationSpan
	// Started is called once, from the executor's worker, when the request
	// starts running there, after its wait in the executor's queue (the
	// span itself started when the request was received): the observer
	// records the start and the wait. It is not called for a request that
	// never ran (refused, or cancelled while queued), and it may run
	// concurrently with End (a request cancelled or timed out as it
	// starts); then either order must be safe, and a Started after End is
	// dropped. It is called before SpanContext and Context.
	Started(at time.Time)
	End(e OperationEnd)
}

// SessionInfo identifies a session for Observer.
type SessionInfo struct {
	ID        string
	Transport string // "" on stdio, TransportStreamableHTTP over HTTP
	Started   time.Time
	// The rest is set for SessionEnded only. ProtocolVersion is the version
	// the session negotiated ("" when it never did); ErrorType is the
	// error.type of a session that ended on an error: output_failed when a
	// write failed or timed out, executor_closed when an injected executor
	// closed under it, _OTHER for anything else; "" when it ended normally
	// (its input ended, the client or the application closed it, or the
	// server's context ended: a shutdown is not the session's failure).
	ProtocolVersion string
	ErrorType       string
}

// sessionErrorType is the error.type of a session whose owner loop ended
// with err: "" for a normal end (its input ended, the client or the
// application closed it, or the server's context ended: a shutdown is not
// the session's failure); output_failed when a write failed or timed out;
// executor_closed when an injected executor closed under it; _OTHER for
// anything else.
func sessionErrorType(err error) string {
	switch {
	case err == nil, errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return ""
	case errors.Is(err, ErrOutputFailed):
		return "output_failed"
	case errors.Is(err, ErrExecutorClosed):
		return "executor_closed"
	}
	return "_OTHER"
}

// TransportInfo is what an HTTP transport knows of a message's carrier that
// the observer needs: the client's address and the POST's traceparent
// header.
type TransportInfo struct {
	ClientAddress string
	Traceparent   string
	Tracestate    string
}

type transportInfoKey struct{}
type operationSpanKey struct{}

// withTransportInfo returns ctx carrying info when obs is set; ctx itself
// (no allocation) when not.
func withTransportInfo(ctx context.Context, obs Observer, info TransportInfo) context.Context {
	if obs == nil {
		return ctx
	}
	return context.WithValue(ctx, transportInfoKey{}, info)
}

// TransportInfoFromContext returns the TransportInfo the HTTP transport put
// in ctx (a handler's context, or OperationStart.Values), and whether there
// is one.
func TransportInfoFromContext(ctx context.Context) (TransportInfo, bool) {
	if ctx == nil {
		return TransportInfo{}, false
	}
	info, ok := ctx.Value(transportInfoKey{}).(TransportInfo)
	return info, ok
}

// SpanContextFromContext returns the span context of the request whose
// handler's context ctx is (or derives from); invalid when none is observed.
func SpanContextFromContext(ctx context.Context) SpanContext {
	if span := operationSpanFromContext(ctx); span != nil {
		return span.SpanContext()
	}
	return SpanContext{}
}

func operationSpanFromContext(ctx context.Context) OperationSpan {
	span, _ := ctx.Value(operationSpanKey{}).(OperationSpan)
	return span
}

// contextWithOperationSpan returns ctx carrying span, as a handler's context
// carries its request's: SpanContextFromContext, the traceparent of the
// server's requests and notifications and the child and linked spans start
// from it.
func contextWithOperationSpan(ctx context.Context, span OperationSpan) context.Context {
	return span.Context(context.WithValue(ctx, operationSpanKey{}, span))
}

// TraceContext is the trace context a request carries in params._meta
// (SEP-414): each field "" when absent.
type TraceContext struct {
	Traceparent, Tracestate, Baggage string
}

// TraceContextFromParams reads traceparent, tracestate and baggage from
// params._meta, in any protocol version. A member that is not a string is
// ignored, as is anything malformed.
func TraceContextFromParams(params []byte) TraceContext {
	var tc TraceContext
	meta, ok := lookupMember(params, "_meta")
	if !ok {
		return tc
	}
	members := newMemberScanner(meta)
	for {
		key, escaped, value, ok := members.next()
		if !ok {
			return tc
		}
		var dst *string
		switch {
		case keyMatches(key, escaped, "traceparent"):
			dst = &tc.Traceparent
		case keyMatches(key, escaped, "tracestate"):
			dst = &tc.Tracestate
		case keyMatches(key, escaped, "baggage"):
			dst = &tc.Baggage
		default:
			continue
		}
		if s, ok := decodeString(value); ok {
			*dst = s
		}
	}
}

// Attribute is a span or metric attribute with a string value.
type Attribute struct{ Key, Value string }

// Conventions returns the span name and attributes OpenTelemetry's MCP
// semantic conventions give the SERVER span of op: the name
// "{mcp.method.name} {target}" (the tool or prompt name; the method alone
// without one), mcp.method.name, jsonrpc.request.id, gen_ai.tool.name and
// gen_ai.operation.name, gen_ai.prompt.name, mcp.resource.uri,
// mcp.protocol.version, mcp.session.id, network.transport (pipe on stdio,
// tcp with network.protocol.name http over HTTP) and client.address. What
// the client chose is read from op.Params defensively: a member that is
// absent or not a string is left out.
func (op *OperationStart) Conventions() (name string, attrs []Attribute) {
	return op.conventions(make([]Attribute, 0, 12), true)
}

// conventions appends op's attributes to attrs, as Conventions does. With
// full false it appends only those a metric of the operation carries (its
// method, tool or prompt, protocol version and transport) and the name is
// the method alone: what a span that is not recorded needs.
func (op *OperationStart) conventions(attrs []Attribute, full bool) (name string, _ []Attribute) {
	name, target := op.Method, ""
	attrs = append(attrs, Attribute{"mcp.method.name", op.Method})
	if full {
		if id, ok := decodeString([]byte(op.RequestID)); ok {
			attrs = append(attrs, Attribute{"jsonrpc.request.id", id})
		} else if op.RequestID != "" {
			attrs = append(attrs, Attribute{"jsonrpc.request.id", op.RequestID})
		}
	}
	switch op.Method {
	case "tools/call":
		if target = stringMember(op.Params, "name"); target != "" {
			attrs = append(attrs, Attribute{"gen_ai.tool.name", target}, Attribute{"gen_ai.operation.name", "execute_tool"})
		}
	case "prompts/get":
		if target = stringMember(op.Params, "name"); target != "" {
			attrs = append(attrs, Attribute{"gen_ai.prompt.name", target})
		}
	case "resources/read", "resources/subscribe", "resources/unsubscribe":
		if !full {
			break // not a metric's attribute
		}
		if uri := stringMember(op.Params, "uri"); uri != "" {
			attrs = append(attrs, Attribute{"mcp.resource.uri", uri})
		}
	}
	if target != "" && full {
		name += " " + target
	}
	version := op.ProtocolVersion
	if version == "" {
		if meta, ok := lookupMember(op.Params, "_meta"); ok {
			version = stringMember(meta, metaKeyProtocolVersion)
		}
	}
	if version != "" {
		attrs = append(attrs, Attribute{"mcp.protocol.version", version})
	}
	if op.SessionID != "" && full {
		attrs = append(attrs, Attribute{"mcp.session.id", op.SessionID})
	}
	if op.Transport == "" {
		attrs = append(attrs, Attribute{"network.transport", "pipe"})
	} else {
		attrs = append(attrs, Attribute{"network.transport", "tcp"}, Attribute{"network.protocol.name", "http"})
		if info, _ := TransportInfoFromContext(op.Values); full && info.ClientAddress != "" {
			attrs = append(attrs, Attribute{"client.address", info.ClientAddress})
		}
	}
	return name, attrs
}

// ErrorType is the error.type of an operation that ended as e, "" when it
// succeeded: the JSON-RPC error code sent; tool_error for a tools/call
// result with isError; timeout, cancelled and connection_closed for an
// operation that was not answered by its handler (a timeout is answered
// -32603, in rpc.response.status_code); _OTHER for a failure without a code.
func (e OperationEnd) ErrorType() string {
	code := ""
	if e.ErrorCode != 0 {
		code = strconv.Itoa(e.ErrorCode)
	}
	switch e.Outcome {
	case OperationAnswered:
		if code == "" && e.ToolError {
			return "tool_error"
		}
		return code
	case OperationTimedOut:
		return "timeout"
	case OperationCancelled:
		return "cancelled"
	case OperationAbandoned:
		return "connection_closed"
	case OperationRefused:
		return code
	}
	if code == "" {
		return "_OTHER"
	}
	return code
}

// stringMember returns the string member name of obj, "" when it is absent
// or not a string.
func stringMember(obj []byte, name string) string {
	raw, ok := lookupMember(obj, name)
	if !ok {
		return ""
	}
	s, _ := decodeString(raw)
	return s
}
