package main

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"
)

// errNoServerRequests is what Peer.Request returns to a 2026-07-28 request:
// that version asks the client with input_required results instead.
var errNoServerRequests = errors.New("mcpstdio: a 2026-07-28 request cannot send server-to-client requests; return an input_required result")

// httpExchange is one POSTed message being served: the executor's job that
// dispatches it and the state of the POST's response. The goroutine of
// runExchange owns every field but those of the worker's side (req, peer,
// result), which it reads only after the job's OutcomeCompleted arrived.
type httpExchange struct {
	h    *HTTPHandler
	sess *httpSession // nil for a stateless message
	msg  *postedMessage
	sub  *Submitter // this exchange's own; set before the job is submitted
	job  job
	// initializes is set for an initialize that creates its session: the
	// session is registered only when it succeeds.
	initializes bool

	calls chan *peerCall // the running request's notifications and requests
	done  chan struct{}  // closed when the exchange ends: its peer fails

	// The worker's side: set before submission, then written by the worker.
	req          Request
	peer         requestPeer
	result       workResult
	handlerSpace handlerRequestSpace

	// The response, owned by runExchange's goroutine.
	sse      *sseWriter
	log      *eventLog // the session stream of an initialize-era response
	attached bool      // the POST's connection still carries the response
	outgoing []string  // ids of its server-to-client requests
}

func (h *HTTPHandler) newExchange(s *httpSession, msg *postedMessage) *httpExchange {
	x := &httpExchange{
		h:     h,
		sess:  s,
		msg:   msg,
		calls: make(chan *peerCall),
		done:  make(chan struct{}),
	}
	x.job.key, x.job.work, x.job.hold = msg.id, x, msg.res
	if msg.res == nil {
		x.job.size = msg.size
	}
	x.peer = requestPeer{calls: x.calls, done: x.done}
	x.req.handlerSpace = &x.handlerSpace
	return x
}

// run is the job's work, on an executor worker.
func (x *httpExchange) run(ctx context.Context) any {
	x.result = serveEnvelope(ctx, x.h.dispatcher, &x.req, x.msg.env, x.msg.id, &x.peer)
	return nil
}

// runExchange serves x on the POST (w, r) until it is answered, cancelled,
// times out, or (a 2026 request) the client closes the response.
//
// The response is application/json when the outcome arrives before any
// notification; otherwise it becomes an SSE stream at the first one. An
// initialize-era stream is kept in the session, so that the client can
// resume it after losing the connection: its request then runs on, and what
// it sends is kept for the resumption. A 2026 request whose client closes
// the response is cancelled, and nothing more is written for it.
func (h *HTTPHandler) runExchange(w http.ResponseWriter, r *http.Request, x *httpExchange) {
	x.sub = h.submitterFor(x.msg)
	defer x.sub.Close()
	defer close(x.done)
	x.sse = newSSEWriter(w, h.opts.WriteTimeout)
	x.attached = true
	x.job.ctx.values = r.Context()
	if h.closing() {
		x.respond(errorFrame(x.msg.id, errShuttingDown))
		return
	}
	if _, err := x.sub.submit(&x.job, h.opts.RequestTimeout); err != nil {
		if !x.expectsAnswer() {
			httpError(w, http.StatusServiceUnavailable, errCapacity.Message)
			return
		}
		rerr := errWorkerFailed
		if errors.Is(err, ErrOverloaded) {
			rerr = errCapacity
		}
		x.respond(errorFrame(x.msg.id, rerr))
		return
	}
	var ended <-chan struct{}
	if x.sess != nil && !x.initializes {
		ended = x.sess.ended
	}
	gone := r.Context().Done()
	for {
		select {
		case o := <-x.sub.Outcomes():
			x.onOutcome(w, r, o)
			return
		case call := <-x.calls:
			x.onCall(call)
			if x.sse.failed && x.log == nil {
				return // the client stopped reading: as if it left
			}
		case <-gone:
			if x.log == nil {
				return // not resumable: the deferred Close cancels the job
			}
			x.attached, gone = false, nil
		case <-ended:
			x.sub.cancelJob(&x.job)
			ended = nil
		case <-h.executor.Done():
			// Closed under us: no outcome will arrive.
			if x.expectsAnswer() {
				x.respond(errorFrame(x.msg.id, errWorkerFailed))
			} else {
				httpError(w, http.StatusServiceUnavailable, errWorkerFailed.Message)
			}
			return
		}
	}
}

// expectsAnswer reports whether the message is a request, answered with a
// response, rather than a notification, answered 202.
func (x *httpExchange) expectsAnswer() bool { return !x.msg.isNotification() }

// onOutcome finishes the exchange.
func (x *httpExchange) onOutcome(w http.ResponseWriter, r *http.Request, o Outcome) {
	if !x.expectsAnswer() {
		w.WriteHeader(http.StatusAccepted) // however it ended: a notification gets no answer
		return
	}
	switch o.Kind {
	case OutcomeCompleted:
		res := x.result
		if res.reply.Listen != nil {
			x.h.serveListen(w, r, x, res.reply.Listen)
			return
		}
		if x.sess != nil && res.reply.Error == nil && frameErrorCode(res.frame) == 0 {
			if rerr := x.sess.applyReply(res.reply, x.h.opts.MaxSubscriptions); rerr != nil {
				x.respond(errorFrame(x.msg.id, rerr))
				return
			}
			if x.initializes && res.reply.Initialized != nil && !x.register() {
				if !x.sse.started {
					writeJSONFrame(w, http.StatusServiceUnavailable, errorFrame(x.msg.id, errSessionCapacity))
					return
				}
				x.respond(errorFrame(x.msg.id, errSessionCapacity))
				return
			}
		}
		x.respond(res.frame)
	case OutcomeTimedOut:
		x.h.opts.Logger.Warn("mcpstdio: request timed out", "method", x.msg.method, "id", x.msg.id)
		x.respond(errorFrame(x.msg.id, errRequestTimedOut))
	case OutcomeFailed:
		x.h.opts.Logger.Error("mcpstdio: request worker failed", "method", x.msg.method, "id", x.msg.id, "panic", o.Panic)
		x.respond(errorFrame(x.msg.id, errWorkerFailed))
	case OutcomeCancelled:
		// Never answered (notifications/cancelled, or the session ended):
		// the stream, when there is one, ends without a response.
		x.endStream()
		if !x.sse.started {
			x.sse.start()
		}
	}
}

// errSessionCapacity refuses an initialize beyond MaxSessions.
var errSessionCapacity = &RPCError{Code: CodeInternalError, Message: "Server session capacity exhausted"}

// register makes the session x initialized live; false when the table is
// full.
func (x *httpExchange) register() bool {
	if !x.h.sessions.add(x.sess) {
		return false
	}
	x.initializes = false
	return true
}

// respond writes the final response frame: as the whole application/json
// answer when nothing was streamed yet, else as the stream's last event.
func (x *httpExchange) respond(frame []byte) {
	if x.sess != nil && !x.initializes {
		x.sse.w.Header().Set(headerSessionID, x.sess.id)
	}
	if !x.sse.started {
		status := http.StatusOK
		if x.sess == nil {
			status = statelessStatus(frameErrorCode(frame))
		}
		x.sse.deadline() // a client that does not read it does not hold it
		writeJSONFrame(x.sse.w, status, frame)
		return
	}
	x.send(frame)
	x.endStream()
	if x.log != nil && x.log.delivered() {
		x.sess.dropStream(x.log) // the client has it all: nothing to resume
	}
}

// send writes one frame on the response stream, starting it if needed. An
// initialize-era stream keeps the frame for a resumption; the write itself
// is skipped once the client left.
func (x *httpExchange) send(frame []byte) {
	if !x.sse.started {
		x.startStream()
	}
	if x.log == nil {
		x.sse.event("", 0, frame)
		x.sse.flush()
		return
	}
	seq := x.log.append(frame)
	if x.attached && x.log.isResumed() {
		x.attached = false
	}
	if x.attached && x.sse.event(x.log.eventID(seq), 0, frame) && x.sse.flush() {
		x.log.markSent(seq)
	}
}

// startStream turns the response into an SSE stream. An initialize-era
// stream gets a stream of the session; in 2025-11-25 its first event is the
// priming event (an id, a retry delay, no data), from which the client can
// resume it.
func (x *httpExchange) startStream() {
	if x.sess != nil {
		x.sse.w.Header().Set(headerSessionID, x.sess.id)
		x.log = x.sess.newStream()
	}
	x.sse.start()
	if x.log != nil && x.req.Session.ProtocolVersion >= ProtocolVersion20251125 {
		seq := x.log.append(nil)
		x.sse.event(x.log.eventID(seq), x.h.opts.SSERetry, nil)
	}
}

// endStream marks an initialize-era stream complete.
func (x *httpExchange) endStream() {
	if x.log != nil {
		x.log.end()
	}
}

// onCall writes a running request's notification, or sends its
// server-to-client request, on the response stream.
func (x *httpExchange) onCall(call *peerCall) {
	if call.frame != nil {
		x.send(call.frame)
		call.reply <- peerReply{}
		return
	}
	if x.sess == nil {
		call.reply <- peerReply{err: errNoServerRequests}
		return
	}
	id := x.sess.addOutgoing(x, call.reply)
	frame, err := requestFrame(id, call.method, call.params)
	if err != nil {
		x.sess.dropOutgoing(id)
		call.reply <- peerReply{err: err}
		return
	}
	x.outgoing = append(x.outgoing, id)
	x.send(frame)
}

// listenerSet is the open 2026 subscriptions/listen streams, each with the
// box its changes are put in.
type listenerSet struct {
	mu    sync.Mutex
	boxes map[*changeBox]struct{} // guarded by mu
}

func (s *listenerSet) init() { s.boxes = make(map[*changeBox]struct{}) }

// add registers a listen stream's box, unless max are open already.
func (s *listenerSet) add(b *changeBox, maxOpen int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.boxes) >= maxOpen {
		return false
	}
	s.boxes[b] = struct{}{}
	return true
}

func (s *listenerSet) remove(b *changeBox) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.boxes, b)
}

// onChange is the dispatcher's change callback: it never blocks. Listen
// streams get the change in their box; sessions on their GET stream.
func (h *HTTPHandler) onChange(change Change) {
	h.listeners.mu.Lock()
	boxes := slices.Collect(maps.Keys(h.listeners.boxes))
	h.listeners.mu.Unlock()
	for _, b := range boxes {
		b.put(change)
	}
	for _, s := range h.sessions.all() {
		s.onChange(change)
	}
}

// serveListen turns a 2026 subscriptions/listen request into its open
// stream: the acknowledgement, then the changes it asked for, until the
// client closes it, the server ends the subscriptions (the final response is
// sent) or the handler closes its streams.
func (h *HTTPHandler) serveListen(w http.ResponseWriter, r *http.Request, x *httpExchange, filter *ListenFilter) {
	id := x.msg.id
	box := newChangeBox()
	if !h.listeners.add(box, h.opts.MaxSubscriptions) {
		x.respond(errorFrame(id, errSubscriptionCapacity))
		return
	}
	defer h.listeners.remove(box)
	params := filter.Notifications
	if params == nil {
		params = json.RawMessage(`{}`)
	}
	ack, err := notificationFrame("notifications/subscriptions/acknowledged", subscriptionParams(`{"notifications":`+string(params), id))
	if err != nil {
		x.respond(errorFrame(id, errWorkerFailed))
		return
	}
	x.send(ack)
	keepAlive := time.NewTicker(h.opts.KeepAlive)
	defer keepAlive.Stop()
	for !x.sse.failed {
		select {
		case <-box.signal:
			for _, change := range box.take() {
				if change.Kind == SubscriptionsEnded {
					x.send(subscriptionEndFrame(id))
					return
				}
				prefix, ok := changeParamsPrefix(change)
				if !ok || !filter.wants(change) {
					continue
				}
				if frame, err := notificationFrame(change.method(), subscriptionParams(prefix, id)); err == nil {
					x.send(frame)
				}
			}
		case <-keepAlive.C:
			x.sse.comment()
		case <-r.Context().Done():
			return
		case <-h.quit:
			return
		}
	}
}
