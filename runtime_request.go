package main

// The request a handler is given (HandlerRequest): what it learns of the
// request, binding its arguments, the client's capabilities, and where the
// runtime builds it without allocating.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"
	"sync/atomic"
)

// HandlerRequest is what a tool, prompt, resource or completion handler
// learns about the request it serves. Handlers must not modify it.
type HandlerRequest struct {
	// Method is the protocol method, e.g. "tools/call".
	Method string
	// ProtocolVersion is the version the request is served under.
	ProtocolVersion string
	// ClientInfo and ClientCapabilities are the client's Implementation and
	// capabilities objects: from initialize in the legacy era, from the
	// request's _meta in 2026-07-28. ClientInfo is nil when the client sent
	// none.
	ClientInfo         json.RawMessage
	ClientCapabilities json.RawMessage
	// Meta is the request's params._meta as sent, nil when absent.
	Meta json.RawMessage
	// SessionID identifies the connection or HTTP session the request
	// arrived on ("" for a 2026-07-28 request over HTTP); see
	// Request.SessionID.
	SessionID string
	// Principal is whom the request's access token speaks for (see
	// PrincipalFromContext); nil when the request carries none.
	Principal *Principal
	// SpanContext is the request's span when the transport has an Observer
	// (invalid otherwise); the handler's context carries it too
	// (SpanContextFromContext), for child spans.
	SpanContext SpanContext
	// Name is the tool or prompt name (for a completion, the prompt name).
	Name string
	// URI is the resource URI being read (for a completion, the template).
	URI string
	// Arguments is the arguments object of tools/call or prompts/get ({}
	// when the request had none).
	Arguments json.RawMessage
	// ask is the asking state of a tools/call, prompts/get or
	// resources/read (ask.go), inline so that it costs no allocation;
	// ask.enabled is false for other methods.
	ask askState
	// Variables are the values a resource template's variables matched,
	// percent-decoded; nil for a static resource.
	Variables map[string]string

	// validArguments is Arguments as Dispatch validated them (strict JSON,
	// see decodeEnvelope); nil for a HandlerRequest built outside
	// Dispatch. See argumentsValidated.
	validArguments json.RawMessage

	rt            *Runtime        // nil for a HandlerRequest built outside Dispatch
	peer          Peer            // nil when there is no client to reach
	task          handlerTask     // a tools/call that may become a task; else nil
	progressToken json.RawMessage // the request's _meta.progressToken, nil when absent
	logThreshold  string          // see Runtime.logThreshold
	progress      progressState
}

// Bind decodes Arguments into v, a non-nil pointer, as encoding/json does
// except that a member binds only to the field whose json name (or Go name,
// when untagged) is exactly its key, case included; members that match no
// field are ignored (bind.go has the details). A value that does not fit
// gives an *ArgumentError whose message names the argument, such as
// `Invalid arguments: "ms" must be an integer`; the detail goes to the
// runtime's Logger at debug level. A tool handler returns that error as is:
// the client sees a result with isError true and that message.
func (r *HandlerRequest) Bind(v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		err := &ArgumentError{Problem: "cannot be bound", cause: fmt.Sprintf("Bind needs a non-nil pointer, got %T", v)}
		r.logBindFailure(err)
		return err
	}
	var plans *planCache
	if r.rt != nil {
		plans = &r.rt.plans
	}
	args, b := r.Arguments, binder{validated: r.argumentsValidated()}
	if !b.validated {
		args = bytes.TrimRight(args[skipJSONSpace(args, 0):], " \t\r\n")
		if len(args) > 0 && !json.Valid(args) {
			err := &ArgumentError{Problem: "must be a JSON object", cause: "Arguments is not valid JSON text"}
			r.logBindFailure(err)
			return err
		}
	}
	return r.bindValue(args, rv.Elem(), plans.planFor(rv.Type().Elem()), b)
}

// setArguments sets Arguments to args, a JSON object Dispatch validated
// (strict JSON, see decodeEnvelope, without surrounding whitespace).
func (r *HandlerRequest) setArguments(args json.RawMessage) {
	r.Arguments, r.validArguments = args, args
}

// argumentsValidated reports whether Arguments are the very bytes
// setArguments was given, so that binding them need not check them again.
// Arguments a handler replaced do not qualify.
func (r *HandlerRequest) argumentsValidated() bool {
	return len(r.Arguments) > 0 && len(r.validArguments) == len(r.Arguments) && &r.validArguments[0] == &r.Arguments[0]
}

// bindValue binds args, validated JSON text without surrounding whitespace,
// to v following p, with b's rules; empty args are {}. A failure is logged
// and returned as an *ArgumentError.
func (r *HandlerRequest) bindValue(args json.RawMessage, v reflect.Value, p *typePlan, b binder) error {
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	if err := b.bind(args, v, p); err != nil {
		r.logBindFailure(err)
		return err
	}
	return nil
}

func (r *HandlerRequest) logBindFailure(err *ArgumentError) {
	r.logger().DebugContext(r.logContext(), "arguments did not bind", "method", r.Method, "name", r.Name, "argument", err.Path, "problem", err.Problem, "cause", err.cause)
}

// logContext is a context carrying the request's span context, for the
// records logged on its behalf where the handler's context is not at hand
// (Bind has none): a TraceLogHandler adds its trace_id and span_id.
func (r *HandlerRequest) logContext() context.Context {
	return contextWithSpanContext(context.Background(), r.SpanContext)
}

// logger returns the runtime's logger, or one that discards.
func (r *HandlerRequest) logger() *slog.Logger {
	if r.rt == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.rt.logger
}

// HasClientCapability reports whether the client declared the named
// top-level capability (e.g. "sampling", "elicitation", "roots") as an
// object.
func (r *HandlerRequest) HasClientCapability(name string) bool {
	var caps map[string]json.RawMessage
	if json.Unmarshal(r.ClientCapabilities, &caps) != nil {
		return false
	}
	return isJSONObject(caps[name])
}

// RequireClientCapability returns nil when the client declared the named
// capability, else an *RPCError -32021 whose data.requiredCapabilities names
// it. A handler returns that error as is to refuse the request.
func (r *HandlerRequest) RequireClientCapability(name string) error {
	if r.HasClientCapability(name) {
		return nil
	}
	return &RPCError{
		Code:    CodeMissingCapability,
		Message: "Missing required client capability: " + name,
		Data:    map[string]any{"requiredCapabilities": map[string]struct{}{name: {}}},
	}
}

// handlerRequestSpace is room for one HandlerRequest, kept with a message's
// other per-message state. It is used at most once: the first Dispatch of the
// Request that refers to it claims it, and a HandlerRequest built there is
// never reused, so a handler may keep it as it may keep one it was given
// fresh.
type handlerRequestSpace struct {
	claimed atomic.Bool
	req     HandlerRequest
}

// newHandlerRequest returns a zero HandlerRequest: the one in req's
// handlerSpace the first time, a new one afterwards (a Request dispatched
// twice, or a copy of it) and when there is none.
func (req *Request) newHandlerRequest() *HandlerRequest {
	if s := req.handlerSpace; s != nil && s.claimed.CompareAndSwap(false, true) {
		return &s.req
	}
	return new(HandlerRequest)
}

// handlerRequest starts the HandlerRequest of c. It sets the fields one by
// one on the zero HandlerRequest: assigning a whole one would copy all of it.
func (c *methodCall) handlerRequest() *HandlerRequest {
	r := c.req.newHandlerRequest()
	r.Method, r.ProtocolVersion = c.req.Method, c.version
	r.ClientInfo, r.ClientCapabilities, r.Meta = c.clientInfo, c.clientCapabilities, c.meta
	r.peer, r.progressToken, r.logThreshold = c.req.Peer, c.progressToken, c.logThreshold
	r.rt, r.SessionID, r.Principal = c.rt, c.req.SessionID, c.principal
	r.SpanContext = c.req.SpanContext
	return r
}
