package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// ErrRequestEnded is returned by a Peer whose request has already been
// answered, cancelled or timed out: nothing is written for it any more.
var ErrRequestEnded = errors.New("mcpstdio: request already ended")

// ErrNoClientInput is returned by Peer.Request once the client's input has
// ended: no response can arrive.
var ErrNoClientInput = errors.New("mcpstdio: client input ended; no response can arrive")

// requestPeer is the Peer of one running request. It only passes calls to
// the owner of the request's connection, which decides, in its own goroutine,
// whether the request is still live. On every transport alike, a call made
// after the request was answered, cancelled or timed out fails with
// ErrRequestEnded, and one that finds the connection ended while the
// request was still running (the output failed, Serve's context ended, the
// HTTP session ended) fails with ErrClosed.
type requestPeer struct {
	calls chan<- *peerCall
	done  <-chan struct{} // closed when the connection ends
	ex    *execution      // identity only: never read outside the owner; nil for an inline request
	// inline keeps the notifications of an inline request (conn_inline.go),
	// nil for any other: its calls never reach the owner.
	inline *inlineNotes
}

// peerCall is a notification frame to write, or a server-to-client request
// to send, on behalf of a running request or (ex nil, a notification only)
// of the application's Notify. The owner replies exactly once.
type peerCall struct {
	ex     *execution // nil for Notify
	frame  []byte     // a notification; nil for a request
	method string     // a request's method and params
	params json.RawMessage
	reply  chan peerReply // buffered: the owner never waits on the caller
}

type peerReply struct {
	result json.RawMessage
	err    error
}

func (p *requestPeer) Notify(ctx context.Context, method string, params json.RawMessage) error {
	if !isObjectParams(params) {
		return fmt.Errorf("%w: params of %s must be a JSON object", ErrInvalidNotification, method)
	}
	params = withTraceparentFromContext(ctx, params)
	frame, err := notificationFrame(method, params)
	if err != nil {
		return err
	}
	_, err = p.call(ctx, &peerCall{ex: p.ex, frame: frame})
	return err
}

func (p *requestPeer) Request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	if !isObjectParams(params) {
		return nil, fmt.Errorf("mcpstdio: params of the %s request must be a JSON object", method)
	}
	params, span := startClientRequest(ctx, method, params)
	result, err := p.call(ctx, &peerCall{ex: p.ex, method: method, params: params})
	endClientRequest(span, result, err)
	return result, err
}

func (p *requestPeer) call(ctx context.Context, call *peerCall) (json.RawMessage, error) {
	if p.inline != nil {
		return p.inline.call(call)
	}
	if p.ex.ended.Load() {
		return nil, ErrRequestEnded
	}
	call.reply = make(chan peerReply, 1)
	select {
	case p.calls <- call:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-p.done:
		return nil, p.closedError()
	}
	select {
	case r := <-call.reply:
		return r.result, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-p.done:
		return nil, p.closedError()
	}
}

// closedError is a call's error once the connection ended: ErrRequestEnded
// when the request had ended before, ErrClosed when the end of the
// connection cut it.
func (p *requestPeer) closedError() error {
	if p.ex.ended.Load() {
		return ErrRequestEnded
	}
	return ErrClosed
}

// isObjectParams reports whether params is nil or a valid JSON object: any
// other value would put a frame on the wire that is not the promised one.
func isObjectParams(params json.RawMessage) bool {
	return params == nil || json.Valid(params) && isJSONObject(params)
}

// outgoingRequest is a server-to-client request waiting for the client.
type outgoingRequest struct {
	ex    *execution
	reply chan peerReply
}

// requestFrame returns the frame of a server-to-client request.
func requestFrame(id, method string, params json.RawMessage) ([]byte, error) {
	m, err := marshalJSON(method)
	if err != nil {
		return nil, err
	}
	frame := appendEnvelopeStart(make([]byte, 0, len(params)+len(m)+len(id)+48), id)
	frame = append(frame, `,"method":`...)
	frame = append(frame, m...)
	if params != nil {
		frame = append(frame, `,"params":`...)
		frame = appendASCII(frame, params)
	}
	return append(frame, "}\n"...), nil
}

// clientResponse turns the client's response to a server-to-client request
// into the reply its handler waits for.
func clientResponse(env envelope) peerReply {
	if env.errorV == nil {
		return peerReply{result: json.RawMessage(env.result)}
	}
	var e RPCError
	if err := json.Unmarshal(env.errorV, &e); err != nil {
		return peerReply{err: &RPCError{Code: CodeInternalError, Message: "malformed error response from the client"}}
	}
	return peerReply{err: &e}
}

// outgoingID returns the canonical id of the n-th server-to-client request.
// Client ids never route to it: only responses are matched against it.
func outgoingID(n uint64) string { return `"mcpstdio-` + strconv.FormatUint(n, 10) + `"` }
