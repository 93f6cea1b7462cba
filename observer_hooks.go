package main

// Where the core calls its Observer (observer.go): a connection's requests
// and session, the server's own requests to the client, and operations
// linked to a request (a task's run).

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// startOperation starts the span of ex, a request about to be submitted
// (one held behind an initialize is submitted, and so observed, once the
// initialize is answered, with the version it negotiated), when the
// connection has an observer.
func (c *connection) startOperation(ex *execution) {
	if c.observer == nil || !ex.request {
		return
	}
	ex.span = c.observer.StartOperation(&OperationStart{
		Method: ex.method, RequestID: ex.id, SessionID: c.sessionID, Transport: c.transport,
		ProtocolVersion: c.session.ProtocolVersion, Params: ex.env.params, Values: ex.job.ctx.values, Received: time.Now(),
	})
}

// observeRefused gives a request the connection refuses before it becomes
// an execution (a duplicate in-flight id) a span of its own, ended at once
// as refused with rpcErr and reason, when the connection has an observer.
// values is the message's own context of values, nil for the connection's.
func (c *connection) observeRefused(method, id string, params json.RawMessage, values context.Context, rpcErr *RPCError, reason string) {
	if c.observer == nil {
		return
	}
	if values == nil {
		values = c.values
	}
	span := c.observer.StartOperation(&OperationStart{
		Method: method, RequestID: id, SessionID: c.sessionID, Transport: c.transport,
		ProtocolVersion: c.session.ProtocolVersion, Params: params, Values: values, Received: time.Now(),
	})
	if span != nil {
		span.End(OperationEnd{Outcome: OperationRefused, ErrorCode: rpcErr.Code, ErrorMessage: rpcErr.Message, RefusedReason: reason})
	}
}

// endOperation ends ex's span, if it has one, with e.
func (ex *execution) endOperation(e OperationEnd) {
	if ex.span == nil || ex.spanEnded {
		return
	}
	ex.spanEnded = true
	ex.span.End(e)
}

// endAnswered ends ex's span with the answer its worker built.
func (ex *execution) endAnswered(res *workResult) {
	if ex.span == nil || ex.spanEnded {
		return
	}
	e := OperationEnd{Outcome: OperationAnswered}
	switch {
	case res.reply.Error != nil:
		e.ErrorCode, e.ErrorMessage = res.reply.Error.Code, res.reply.Error.Message
	case res.reply.Result != nil:
		if v, ok := lookupMember(res.reply.Result, "isError"); ok && string(v) == "true" {
			e.ToolError = true
		}
	case res.answer.code != 0: // an envelope error, which has no reply
		e.ErrorCode = res.answer.code
	}
	ex.endOperation(e)
}

// observedContext is the context ex's handler runs with: ctx carrying ex's
// span when it has one, ctx itself when not. It runs on the executor's
// worker as the job starts (execution.execute), so it tells the span that
// the request has started running, after its queue wait; it also puts the
// span context in ex.req for the HandlerRequest.
func (ex *execution) observedContext(ctx context.Context) context.Context {
	if ex.span == nil {
		return ctx
	}
	ex.span.Started(time.Now())
	ex.req.SpanContext = ex.span.SpanContext()
	return contextWithOperationSpan(ctx, ex.span)
}

// sessionStarted and sessionEnded tell the observer about a connection that
// is a session (it has an id).
func (c *connection) sessionStarted() {
	if c.observer == nil || c.sessionID == "" {
		return
	}
	c.sessionStart = time.Now()
	c.observer.SessionStarted(SessionInfo{ID: c.sessionID, Transport: c.transport, Started: c.sessionStart})
}

func (c *connection) sessionEnded() {
	if c.observer == nil || c.sessionID == "" {
		return
	}
	c.observer.SessionEnded(SessionInfo{ID: c.sessionID, Transport: c.transport, Started: c.sessionStart,
		ProtocolVersion: c.session.ProtocolVersion, ErrorType: sessionErrorType(c.endErr)})
}

// abandonOperations ends the spans of the requests still admitted when the
// connection closes.
func (c *connection) abandonOperations() {
	if c.observer == nil {
		return
	}
	for ex := range c.byID.all() {
		ex.endOperation(OperationEnd{Outcome: OperationAbandoned})
	}
	for _, ex := range c.untracked {
		ex.endOperation(OperationEnd{Outcome: OperationAbandoned})
	}
	for _, ex := range c.held {
		ex.endOperation(OperationEnd{Outcome: OperationAbandoned})
	}
}

// startClientRequest starts the CLIENT span of a server-to-client request
// that a handler running under ctx makes, and returns params with the
// traceparent to propagate in their _meta. Without an observed span it
// returns params as they are and a nil span.
func startClientRequest(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, OperationSpan) {
	parent := operationSpanFromContext(ctx)
	if parent == nil {
		return params, nil
	}
	span := parent.StartClient(method)
	sc := parent.SpanContext()
	if span != nil {
		sc = span.SpanContext()
	}
	return withTraceparent(params, sc), span
}

// endClientRequest ends the span startClientRequest returned, if any.
func endClientRequest(span OperationSpan, result json.RawMessage, err error) {
	if span == nil {
		return
	}
	e := OperationEnd{Outcome: OperationAnswered}
	var rpcErr *RPCError
	switch {
	case err == nil:
	case asRPCError(err, &rpcErr):
		e.ErrorCode, e.ErrorMessage = rpcErr.Code, rpcErr.Message
	default:
		e.Outcome, e.ErrorMessage = OperationFailed, err.Error()
	}
	span.End(e)
}

// withTraceparentFromContext returns params with the traceparent of the span
// ctx carries in their _meta: what a notification a handler sends carries.
func withTraceparentFromContext(ctx context.Context, params json.RawMessage) json.RawMessage {
	span := operationSpanFromContext(ctx)
	if span == nil {
		return params
	}
	return withTraceparent(params, span.SpanContext())
}

// withTraceparent returns params, a JSON object or nil, with
// _meta.traceparent (and tracestate, when sc has one) set to sc's, unless
// _meta has a traceparent already. An invalid sc changes nothing.
func withTraceparent(params json.RawMessage, sc SpanContext) json.RawMessage {
	if !sc.IsValid() {
		return params
	}
	if params == nil {
		params = json.RawMessage(`{}`)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(params, &obj); err != nil || obj == nil {
		return params
	}
	meta := map[string]json.RawMessage{}
	if raw, ok := obj["_meta"]; ok {
		if err := json.Unmarshal(raw, &meta); err != nil || meta == nil {
			return params
		}
	}
	if _, ok := meta["traceparent"]; ok {
		return params
	}
	meta["traceparent"], _ = json.Marshal(sc.Traceparent())
	if sc.TraceState != "" {
		meta["tracestate"], _ = json.Marshal(sc.TraceState)
	}
	obj["_meta"], _ = json.Marshal(meta)
	out, err := json.Marshal(obj)
	if err != nil {
		return params
	}
	return out
}

// asRPCError reports whether err is (or wraps) an *RPCError, the client's
// error response to a server-to-client request.
func asRPCError(err error, target **RPCError) bool { return errors.As(err, target) }

// startLinkedOperation starts, when ctx carries an observed request's span,
// a span named "{what} {target}" linked to it (a task's run, which outlives
// the request), and returns ctx carrying the new span. Without one it
// returns ctx and nil.
func startLinkedOperation(ctx context.Context, what, target string) (context.Context, OperationSpan) {
	parent := operationSpanFromContext(ctx)
	if parent == nil {
		return ctx, nil
	}
	span := parent.StartLinked(what + " " + target)
	if span == nil {
		return ctx, nil
	}
	return contextWithOperationSpan(ctx, span), span
}

// endLinkedOperation ends the span startLinkedOperation returned, if any:
// failed when err is set, a tool error when toolError.
func endLinkedOperation(span OperationSpan, toolError bool, err error) {
	if span == nil {
		return
	}
	e := OperationEnd{Outcome: OperationAnswered, ToolError: toolError}
	if err != nil {
		e.Outcome, e.ErrorMessage = OperationFailed, err.Error()
	}
	span.End(e)
}
