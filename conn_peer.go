package main

// The server-to-client side of a connection (conn.go): its handlers' Peer
// calls and the application's Notify, and the client's responses to the
// server's requests; on its owner goroutine.

import (
	"errors"
	"slices"
)

// onPeerCall writes a running request's notification or an application's
// (Notify), or sends a running request's server-to-client request, unless
// the request has ended.
func (c *connection) onPeerCall(call *peerCall) error {
	switch {
	case call.ex != nil && !call.ex.live:
		call.reply <- peerReply{err: ErrRequestEnded}
		return nil
	case call.frame != nil:
		return c.send(call.ex.routeOrNil(), call.frame, call.reply)
	case c.noClientRequests:
		call.reply <- peerReply{err: errNoClientRequests}
		return nil
	case c.inputEnded:
		call.reply <- peerReply{err: ErrNoClientInput}
		return nil
	}
	c.outgoingSeq++
	id := outgoingID(c.outgoingSeq)
	frame, err := requestFrame(id, call.method, call.params)
	if err != nil {
		call.reply <- peerReply{err: err}
		return nil
	}
	if c.outgoing == nil {
		c.outgoing = make(map[string]*outgoingRequest)
	}
	c.outgoing[id] = &outgoingRequest{ex: call.ex, reply: call.reply}
	call.ex.outgoing = append(call.ex.outgoing, id)
	return c.send(call.ex.route, frame, nil)
}

// routeOrNil is ex's route, nil for no execution (an application's Notify).
func (ex *execution) routeOrNil() route {
	if ex == nil {
		return nil
	}
	return ex.route
}

// errNoClientRequests is what Peer.Request returns where the client's
// response has no way back (2026-07-28 over HTTP): that version asks the
// client with input_required results instead.
var errNoClientRequests = errors.New("mcpstdio: a 2026-07-28 request cannot send server-to-client requests; return an input_required result")

// onClientResponse routes the client's response to the server-to-client
// request waiting for it; any other response is dropped.
func (c *connection) onClientResponse(env envelope) {
	id, ok := canonicalID(env.id)
	if !ok {
		return
	}
	out, ok := c.outgoing[id]
	if !ok {
		return
	}
	delete(c.outgoing, id)
	out.ex.outgoing = slices.DeleteFunc(out.ex.outgoing, func(s string) bool { return s == id })
	out.reply <- clientResponse(env)
}
