package main

// What a Runtime answers: the outcome of a handler (a panic recovered, an
// error), a result encoded in its envelope (_meta, and 2026's resultType
// and cache hints), and the JSON-RPC errors the runtime refuses with.

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
)

// panicError is the error a recovered handler panic becomes.
type panicError struct{ value any }

func (e *panicError) Error() string { return fmt.Sprintf("handler panicked: %v", e.value) }

// runHandler calls fn, turning a panic into a *panicError after logging it
// with its stack.
func runHandler[T any](rt *Runtime, c *methodCall, subject string, fn func() (T, error)) (res T, err error) {
	defer func() {
		if v := recover(); v != nil {
			rt.logger.ErrorContext(c.ctx, "handler panicked", "method", c.req.Method, "subject", subject, "panic", v, "stack", string(debug.Stack()))
			err = &panicError{value: v}
		}
	}()
	return fn()
}

// handlerErrorReply answers a handler's failure for methods whose failures are
// JSON-RPC errors: an *RPCError is sent as is; anything else (a panic
// included) is logged and answered -32603 "Internal error".
func (rt *Runtime) handlerErrorReply(c *methodCall, subject string, err error) Reply {
	if rerr, ok := errors.AsType[*RPCError](err); ok {
		return Reply{Error: rerr}
	}
	var p *panicError
	if !errors.As(err, &p) {
		rt.logger.ErrorContext(c.ctx, "handler failed", "method", c.req.Method, "subject", subject, "err", err)
	}
	return Reply{Error: internalError()}
}

// resultReply encodes v. A failure to encode is logged and answered -32603.
func (rt *Runtime) resultReply(c *methodCall, v any) Reply {
	b, err := marshalJSON(v)
	if err != nil {
		rt.logger.ErrorContext(c.ctx, "encoding a result failed", "method", c.req.Method, "err", err)
		return Reply{Error: internalError()}
	}
	return Reply{Result: b}
}

// envelope returns the envelope fields of a result of c: nothing but the
// handler's _meta in the legacy era; in 2026 resultType "complete", _meta
// with serverInfo merged into the handler's _meta, and for a cacheable
// result ttlMs and cacheScope. handlerMeta, when set, must be a JSON object.
func (rt *Runtime) envelope(c *methodCall, cacheable bool, handlerMeta json.RawMessage) (resultEnvelope, error) {
	if c.era != eraStateless {
		if len(handlerMeta) > 0 && !isJSONObject(handlerMeta) {
			return resultEnvelope{}, errors.New("result _meta is not a JSON object")
		}
		return resultEnvelope{Meta: handlerMeta}, nil
	}
	env := resultEnvelope{ResultType: "complete", Meta: rt.serverInfoMeta}
	if len(handlerMeta) > 0 {
		var merged map[string]json.RawMessage
		if !isJSONObject(handlerMeta) || json.Unmarshal(handlerMeta, &merged) != nil {
			return resultEnvelope{}, errors.New("result _meta is not a JSON object")
		}
		merged[metaKeyServerInfo] = rt.serverInfoJSON
		var err error
		if env.Meta, err = marshalJSON(merged); err != nil {
			return resultEnvelope{}, err
		}
	}
	if cacheable {
		ttl := rt.ttlMs
		env.TTLMs = &ttl
		env.CacheScope = rt.cacheScope
	}
	return env, nil
}

// envelopeReply builds the envelope of c and hands it to build, which returns
// the complete result to encode.
func (rt *Runtime) envelopeReply(c *methodCall, cacheable bool, handlerMeta json.RawMessage, build func(resultEnvelope) any) Reply {
	env, err := rt.envelope(c, cacheable, handlerMeta)
	if err != nil {
		rt.logger.ErrorContext(c.ctx, "building a result failed", "method", c.req.Method, "err", err)
		return Reply{Error: internalError()}
	}
	return rt.resultReply(c, build(env))
}

func invalidParams(msg string) *RPCError {
	return &RPCError{Code: CodeInvalidParams, Message: msg}
}

func methodNotFound(method string) *RPCError {
	return &RPCError{Code: CodeMethodNotFound, Message: "Method not found: " + method}
}

func internalError() *RPCError {
	return &RPCError{Code: CodeInternalError, Message: "Internal error"}
}
