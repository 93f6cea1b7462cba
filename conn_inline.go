package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Inline requests: a request its dispatcher says is served without
// blocking (a tools/call of a Tool with Inline set) is run by the
// connection's owner itself, between two events, instead of being handed to
// an executor worker and its outcome handed back. It costs no goroutine
// switch and no wake-up, which is most of what a cheap call costs.
//
// The owner still never waits on anything: an inline handler promises to
// return at once, and what would make it wait is refused instead. It takes
// no worker (MaxConcurrency and the queue do not count it, and it is served
// while every worker is busy), it has no RequestTimeout (nothing could stop
// it) and it cannot be cancelled (the owner reads no message while it runs).
// Its answer is admitted against the byte budget as any answer is.

// inlineDispatcher is a Dispatcher that tells which requests it serves
// without blocking. inlineFor is called by the owner for each request before
// it is submitted, with its method and raw params; it must be cheap and must
// not block. It returns the Dispatcher the owner serves the request with
// (the Runtime serves an Inline tool's calls timed, to log one that blocks),
// or nil: the request goes to a worker.
type inlineDispatcher interface {
	inlineFor(method string, params []byte) Dispatcher
}

// maxInlineNotifications bounds the notifications (progress, log messages)
// an inline handler may send: they wait in its execution until it returns.
const maxInlineNotifications = 16

// ErrInlineRequest is returned by the Peer of an inline request (Tool.Inline)
// to a server-to-client request (sampling, elicitation, roots): its answer
// would have to come through the owner, which is running the handler.
var ErrInlineRequest = errors.New("mcpstdio: an inline tool cannot send requests to the client")

// errInlineNotifications is returned by the Peer of an inline request past
// maxInlineNotifications.
var errInlineNotifications = fmt.Errorf("mcpstdio: an inline tool sends at most %d notifications", maxInlineNotifications)

// inlineSide is what the handler of an inline request can keep past its
// return: its context, its Peer and the space of its HandlerRequest. It is
// allocated apart from the execution when the connection will reuse the
// execution's record for its next message (see connection.recycle), so
// that a handler that kept any of these still finds them as it left them:
// the context cancelled, the HandlerRequest unchanged, the Peer failing
// with ErrRequestEnded.
type inlineSide struct {
	ctx   jobContext
	peer  requestPeer
	notes inlineNotes
	space handlerRequestSpace
	frame frameSpace // the answer frame's buffer, when the outlet lends one
}

// frameLender is an outlet that lends buffers for answer frames and takes
// them back (the stdio coordinator, for its direct writer).
type frameLender interface {
	lendFrame() []byte
	takeBackFrame([]byte)
}

// inlineNotes holds the notification frames an inline handler sent, written
// by the owner before the request's answer. The handler may send from
// goroutines of its own while it runs, hence the lock.
type inlineNotes struct {
	mu     sync.Mutex
	frames [][]byte
	taken  bool // the handler returned: nothing more is kept
}

// add keeps frame for the owner; it fails past maxInlineNotifications and
// once the handler returned.
func (n *inlineNotes) add(frame []byte) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case n.taken:
		return ErrRequestEnded
	case len(n.frames) == maxInlineNotifications:
		return errInlineNotifications
	}
	n.frames = append(n.frames, frame)
	return nil
}

// take returns the frames kept and keeps no more.
func (n *inlineNotes) take() [][]byte {
	n.mu.Lock()
	defer n.mu.Unlock()
	frames := n.frames
	n.frames, n.taken = nil, true
	return frames
}

// ended reports whether the handler returned.
func (n *inlineNotes) ended() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.taken
}

// inlineDispatcherFor returns the Dispatcher that serves ex, admitted and
// ready to submit, without blocking; nil when a worker serves it.
func (c *connection) inlineDispatcherFor(ex *execution) Dispatcher {
	d, ok := c.dispatcher.(inlineDispatcher)
	if !ok || !ex.request || ex.gates {
		return nil
	}
	return d.inlineFor(ex.method, ex.env.params)
}

// runInline runs ex on the owner with d (from inlineDispatcherFor) and
// answers it, after the notifications its handler sent. A panic that
// escapes the dispatcher is answered as a failed worker's would be. An
// execution in a record of the connection's own gives its handler a side
// record (inlineSide) and is recycled once answered.
func (c *connection) runInline(ex *execution, d Dispatcher) error {
	ex.inline = true
	ctx, peer, notes := &ex.job.ctx, &ex.peer, &ex.notes
	var lender frameLender
	var side *inlineSide
	if ex.own != nil {
		side = new(inlineSide)
		side.ctx.values = ex.job.ctx.values
		ctx, peer, notes = &side.ctx, &side.peer, &side.notes
		if ex.req.handlerSpace != nil {
			ex.req.handlerSpace = &side.space
		}
		// A batch member's frame waits in its batch, not in the writer.
		if l, ok := c.out.(frameLender); ok && ex.route == nil {
			lender, side.frame.buf = l, l.lendFrame()
			ex.req.frameSpace = &side.frame
		}
	}
	*peer = requestPeer{calls: c.calls, done: c.done, inline: notes}
	o := jobOutcome{kind: outcomeCompleted}
	func() {
		defer func() {
			if p := recover(); p != nil {
				o = jobOutcome{kind: outcomeFailed, panicValue: p}
			}
		}()
		ex.serve(ctx, d, peer)
	}()
	// From here a Peer kept past the return fails with ErrRequestEnded.
	ctx.cancel(context.Canceled)
	for _, frame := range notes.take() {
		if err := c.send(ex.route, frame, nil); err != nil {
			return err
		}
	}
	err := c.settle(ex, o)
	if lender != nil {
		// The answer is queued (or was replaced by an error): only the
		// writer holds the frame's buffer now.
		lender.takeBackFrame(side.frame.buf)
		side.frame.buf = nil
	}
	c.recycle(ex)
	return err
}

// call is requestPeer.call for an inline request: a notification waits in
// n for the owner, a request to the client fails, and so does anything once
// the handler returned.
func (n *inlineNotes) call(call *peerCall) ([]byte, error) {
	if call.frame == nil {
		if n.ended() {
			return nil, ErrRequestEnded
		}
		return nil, ErrInlineRequest
	}
	return nil, n.add(call.frame)
}
