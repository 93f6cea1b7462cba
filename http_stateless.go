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
// WriteTimeout. What the POST needs is in this one record, which the
// handler reuses for a later POST (takePost, recyclePost) when nothing can
// hold it any more. Owned by the POST's goroutine.
type statelessPost struct {
	sse  sseWriter
	conn connection // the message's connection
	// sub is the connection's submitter, registered (registerSubmitter)
	// only if the connection submits a job: a request an Inline tool
	// serves on this goroutine needs none. client is whose it is.
	sub      submitter
	h        *HTTPHandler
	client   *executorClient
	request  bool // the message is a request, answered with a response
	answered bool // the answer is complete: the POST is done
	// held says something that may outlive the POST holds the record: a
	// worker (the connection registered its submitter), or a session that
	// took the message and the body's reservation (servePost).
	held bool
	// A listen stream's keep-alive ticks and the handler's quit (closed by
	// endStreams); nil for a request.
	keepAlive <-chan time.Time
	quit      <-chan struct{}
	// exec is the room of the message's execution (message.space). It
	// counts as the connection's own (execution.own), so that an inline
	// request's handler gets a side record of what it may keep
	// (inlineSide) and the record is left to be reused.
	exec runtimeExecution
	// res is the body's reservation (readBody). The body has a buffer of its
	// own: a handler may keep its params.
	res reservation
	// frame is the buffer the answer frame of an Inline request is built in
	// (frameLender), kept with the record for the next POST: the answer is
	// copied into net/http's response as it is written.
	frame []byte
}

// takePost returns a zero 2026 POST record: one a POST left (recyclePost),
// else a new one.
func (h *HTTPHandler) takePost() *statelessPost {
	if p, _ := h.posts.Get().(*statelessPost); p != nil {
		return p
	}
	return new(statelessPost)
}

// recyclePost keeps p for a later POST once its POST is answered and its
// body's reservation released, unless something may still hold it: a job
// a worker ran (its connection registered a submitter), a session that
// took its message, a listen stream's registration, or a HandlerRequest
// built in its execution (an inline request's is in its side record).
// Recycling a record saves allocating and clearing its 2 KB on every call,
// which the heap's fresh memory makes cost more than its size suggests.
func (h *HTTPHandler) recyclePost(p *statelessPost) {
	if p.held || p.keepAlive != nil || p.exec.handlerSpace.claimed.Load() {
		return
	}
	frame := p.frame
	*p = statelessPost{}
	p.frame = frame
	h.posts.Put(p)
}

// lendFrame and takeBackFrame make the POST a frameLender: an Inline
// request's answer frame is built in the record's buffer, which is free
// again once the answer is written (answer), before the connection takes it
// back. A buffer over maxPostFrameBytes is not kept: records wait in the
// pool, and most answers are short.
func (p *statelessPost) lendFrame() []byte { return p.frame[:0] }
func (p *statelessPost) takeBackFrame(b []byte) {
	if cap(b) <= maxPostFrameBytes {
		p.frame = b[:0]
	}
}

// maxPostFrameBytes bounds the answer frame buffer a 2026 POST's record
// keeps for reuse.
const maxPostFrameBytes = 4 << 10

// serveStateless serves a 2026-07-28 message in p, the POST's record (zero
// but for its body's room, in): its headers must mirror its
// body, and errors map onto HTTP statuses (statelessStatus). The answer is
// one JSON object, or an SSE stream when the request sends notifications
// before its response. A client that closes the response cancels the
// request.
func (h *HTTPHandler) serveStateless(w http.ResponseWriter, r *http.Request, msg *postedMessage, p *statelessPost) {
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
	p.sse, p.request = newSSEWriter(w, h.opts.WriteTimeout, h.headerValues), msg.isRequest()
	if h.closing() {
		p.answer(nil, errorAnswer(msg.id(), errShuttingDown))
		return
	}
	var listenQuota quota // only a listen stream takes a place in it
	if msg.method == methodSubscriptionsListen {
		listenQuota = h.listens.forClient(h.ClientAddress(r))
	}
	p.h, p.client = h, msg.client // for registerSubmitter
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
	conn.executorDone = h.executor.done
	defer conn.close()
	if msg.method == methodSubscriptionsListen {
		conn.changes = newChangeBox()
		h.changes.add(conn.changes)
		defer h.changes.remove(conn.changes)
		t := time.NewTicker(h.opts.KeepAlive)
		defer t.Stop()
		p.keepAlive = t.C
		p.quit = h.quit // a listen stream ends with endStreams; a request runs to its end
	}
	// Whatever ends the loop (the answer, the client leaving: the deferred
	// close cancels the request; endStreams; the executor closing: its
	// requests were answered), the POST is done.
	p.exec.own = &p.exec
	if err := conn.onMessage(message{env: msg.env, size: msg.size, header: h.messageHeader(r, msg, false), hold: msg.res, space: &p.exec}); err != nil {
		conn.stopped(r.Context(), err, p)
		return
	}
	serveConnection(r.Context(), conn, p)
}

// registerSubmitter registers the connection's submitter when it first
// submits a job (lazySubmitterOutlet).
func (p *statelessPost) registerSubmitter() {
	p.held = true
	p.h.initSubmitterFor(&p.sub, p.client)
}

// The POST is the HTTP side of its connection's owner loop: it takes no
// message after its first; its events are the keep-alive ticks of a listen
// stream, and its input the handler's endStreams, which ends one.

func (p *statelessPost) input() <-chan struct{}   { return p.quit }
func (p *statelessPost) onInput(struct{}) error   { return errConnDone }
func (p *statelessPost) events() <-chan time.Time { return p.keepAlive }
func (p *statelessPost) onEvent(time.Time) error {
	if p.sse.started {
		p.sse.comment()
	}
	return nil
}

// finished ends the loop once the answer is complete or the client stopped
// reading.
func (p *statelessPost) finished() (bool, error) { return p.answered || p.sse.failed, nil }

// idle and drain do nothing: the POST's goroutine writes each frame as the
// connection hands it over.
func (p *statelessPost) idle() error  { return nil }
func (p *statelessPost) drain() error { return nil }

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
func (p *statelessPost) answer(_ route, f finalFrame) error {
	if p.answered {
		return nil
	}
	p.answered = true
	frame := f.frame
	switch {
	case p.sse.started && frame != nil:
		p.sse.events([]streamEvent{{frame: frame}})
	case p.sse.started:
	case frame != nil:
		p.sse.plain(statelessStatus(f.code), frame)
	case p.request:
		p.sse.start() // cancelled: a stream with no event
		p.sse.flush()
	default:
		p.sse.plain(http.StatusAccepted, nil)
	}
	return nil
}
