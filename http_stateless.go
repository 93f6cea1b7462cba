package main

import (
	"net/http"
	"time"
)

// 2026-07-28 over HTTP: every POST carries one request (or notification)
// whose _meta names its version, and belongs to no session. Its message is
// served by a connection of its own (conn.go), which the POST's goroutine
// owns and writes for, as the coordinator does on stdio: the same admission,
// cancellation, outcome and subscription code, with one message and the
// response as its output.

// statelessPost is a 2026 POST being served and the outlet of its
// connection: it writes the answer on the response itself, bounded by
// WriteTimeout. What the POST needs is in this one record, so that serving
// it costs one allocation for them all. Owned by the POST's goroutine.
type statelessPost struct {
	sse      sseWriter
	conn     connection   // the message's connection
	sub      Submitter    // the connection's
	res      *Reservation // the body's bytes, which its answer's join (see postedMessage.holdAnswer)
	request  bool         // the message is a request, answered with a response
	answered bool         // the answer is complete: the POST is done
}

// serveStateless serves a 2026-07-28 message: its headers must mirror its
// body, and errors map onto HTTP statuses (statelessStatus). The answer is
// one JSON object, or an SSE stream when the request sends notifications
// before its response. A client that closes the response cancels the
// request.
func (h *HTTPHandler) serveStateless(w http.ResponseWriter, r *http.Request, msg *postedMessage) {
	if msg.isResponse() {
		writeJSONFrame(w, http.StatusBadRequest, errorFrame("", invalidRequest("a 2026-07-28 client sends no responses")))
		return
	}
	if msg.hasMeta && !msg.isNotification() {
		if rerr := checkMirroredHeaders(h.dispatcher, r.Header, msg); rerr != nil {
			writeJSONFrame(w, http.StatusBadRequest, errorFrame(msg.id(), rerr))
			return
		}
	}
	// msg stays in the caller's frame: the connection copies what it
	// needs of it, and the record keeps only the body's reservation.
	p := &statelessPost{sse: newSSEWriter(w, h.opts.WriteTimeout), res: msg.res, request: msg.isRequest()}
	if h.closing() {
		p.answer(nil, errorFrame(msg.id(), errShuttingDown))
		return
	}
	var listenQuota quota // only a listen stream takes a place in it
	if msg.method == methodSubscriptionsListen {
		listenQuota = h.listens.forClient(r)
	}
	h.initSubmitterFor(&p.sub, msg)
	conn := &p.conn
	conn.init(connConfig{
		dispatcher:       h.dispatcher,
		out:              p,
		sub:              &p.sub,
		log:              h.opts.Logger,
		values:           h.transportValues(r),
		requestTimeout:   h.opts.RequestTimeout,
		transport:        TransportStreamableHTTP,
		maxSubscriptions: h.opts.MaxSubscriptions,
		listenQuota:      listenQuota,
		noClientRequests: true,
		observer:         h.opts.Observer,
	})
	defer conn.close()
	var changes *changeBox
	var keepAlive <-chan time.Time
	if msg.method == methodSubscriptionsListen {
		changes = newChangeBox()
		conn.changes = changes
		h.changes.add(changes)
		defer h.changes.remove(changes)
		t := time.NewTicker(h.opts.KeepAlive)
		defer t.Stop()
		keepAlive = t.C
	}
	if err := conn.onMessage(message{env: msg.env, size: msg.size, header: h.messageHeader(r, msg, false), hold: msg.res}); err != nil {
		return // the executor closed: answered already
	}
	var quit <-chan struct{} // a listen stream ends with CloseStreams; a request runs to its end
	if changes != nil {
		quit = h.quit
	}
	executorDone := h.executor.Done()
	for !p.answered && !p.sse.failed {
		select {
		case o := <-conn.sub.Outcomes():
			conn.onOutcome(o)
		case call := <-conn.calls:
			conn.onPeerCall(call)
		case <-changes.signalOrNil():
			conn.onChanges(changes.take())
		case <-keepAlive:
			if p.sse.started {
				p.sse.comment()
			}
		case <-r.Context().Done():
			return // the client left: the deferred close cancels the request
		case <-quit:
			return
		case <-executorDone:
			conn.onExecutorClosed()
			return
		}
	}
}

// send writes a notification of the request (progress, a log message, a
// listen stream's event) as an SSE event, starting the stream.
func (p *statelessPost) send(_ route, frame []byte, done chan<- peerReply) error {
	ok := p.sse.events([]streamEvent{{frame: frame}})
	if done != nil {
		var err error
		if !ok {
			err = ErrRequestEnded // the client stopped reading: the request ends
		}
		done <- peerReply{err: err}
	}
	return nil
}

// answer writes the response: the whole JSON answer, with the status of its
// error code, when nothing was streamed yet, else the stream's last event.
// A notification is answered 202.
func (p *statelessPost) answer(_ route, frame []byte) error {
	if p.answered {
		return nil
	}
	p.answered = true
	holdAnswer(p.res, frame)
	switch {
	case p.sse.started && frame != nil:
		p.sse.events([]streamEvent{{frame: frame}})
	case p.sse.started:
	case frame != nil:
		p.sse.plain(statelessStatus(frameErrorCode(frame)), frame)
	case p.request:
		p.sse.start() // cancelled: a stream with no event
		p.sse.flush()
	default:
		p.sse.plain(http.StatusAccepted, nil)
	}
	return nil
}

// signalOrNil is the box's signal, nil (never ready) for no box.
func (b *changeBox) signalOrNil() <-chan struct{} {
	if b == nil {
		return nil
	}
	return b.signal
}
