package main

import (
	"context"
	"net/http"
	"sync"
	"time"
)

// The goroutines of the HTTP requests of initialize-era sessions: each hands
// its request to the session's owner and writes what the owner hands back.

// serveSessionPost serves a POST of the initialize era: an initialize, which
// starts a session, or a message of an existing session, named's: the live
// session its Mcp-Session-Id named when it arrived (nil for none). x is the
// POST's record, zero but for its body's room (in).
func (h *HTTPHandler) serveSessionPost(w http.ResponseWriter, r *http.Request, msg *postedMessage, named *httpSession, x *httpExchange) {
	x.streamWriter, x.msg, x.header, x.values, x.version = newStreamWriter(), *msg, h.messageHeader(r, msg, true), h.transportValues(r), firstHeader(r.Header, httpHeaderProtocolVersion)
	msg = &x.msg
	var s *httpSession
	if firstHeader(r.Header, headerSessionID) == "" && msg.method == methodInitialize && msg.isRequest() {
		delete(x.header, headerProtocolVersion) // initialize negotiates the version itself
		if h.closing() {
			writeJSONFrame(w, http.StatusOK, errorFrame(msg.id(), errShuttingDown))
			return
		}
		client, _ := h.sessionClientName(r)
		if s = h.startSession(x, principalBinding(PrincipalFromContext(r.Context())), client, h.clientName(r, nil)); s == nil {
			writeJSONFrame(w, http.StatusServiceUnavailable, errorFrame(msg.id(), errSessionCapacity))
			return
		}
	} else if s = h.namedSession(w, r, named); s == nil {
		return
	}
	if h.closing() && msg.isRequest() {
		w.Header().Set(headerSessionID, s.id)
		writeJSONFrame(w, http.StatusOK, errorFrame(msg.id(), errShuttingDown))
		return
	}
	if !s.post(x) {
		httpError(w, http.StatusNotFound, "Session not found")
		return
	}
	sse := newSSEWriter(w, h.opts.WriteTimeout, h.headerValues)
	s.serveWriter(&x.streamWriter, &sse, r.Context(), 0, x)
}

// sessionFor returns the session a request names, answering the request
// itself when there is none it may use (see namedSession).
func (h *HTTPHandler) sessionFor(w http.ResponseWriter, r *http.Request) *httpSession {
	return h.namedSession(w, r, h.sessions.get(firstHeader(r.Header, headerSessionID)))
}

// namedSession returns s, the live session a request's Mcp-Session-Id names
// (nil for none), answering the request itself when it may not use one:
// 400 without Mcp-Session-Id, 404 for an unknown or ended session, or one
// another principal created (a session belongs to its principal, not to a
// token: a fresh token of the same one keeps it).
func (h *HTTPHandler) namedSession(w http.ResponseWriter, r *http.Request, s *httpSession) *httpSession {
	if firstHeader(r.Header, headerSessionID) == "" {
		httpError(w, http.StatusBadRequest, "Bad Request: Mcp-Session-Id header is required")
		return nil
	}
	if s != nil && s.owner != principalBinding(PrincipalFromContext(r.Context())) {
		s = nil
	}
	if s == nil {
		httpError(w, http.StatusNotFound, "Session not found")
		return nil
	}
	return s
}

// serveGet opens the session's stream of server-initiated messages, or
// resumes a stream after Last-Event-ID.
func (h *HTTPHandler) serveGet(w http.ResponseWriter, r *http.Request) {
	if firstHeader(r.Header, headerSessionID) == "" {
		w.Header().Set("Allow", "POST")
		httpError(w, http.StatusMethodNotAllowed, "Method Not Allowed: GET needs an Mcp-Session-Id (2026-07-28 has no GET stream)")
		return
	}
	if _, sse := mediaTypes(r.Header[headerAccept]); !sse {
		httpError(w, http.StatusNotAcceptable, "Not Acceptable: Accept must list text/event-stream")
		return
	}
	s := h.sessionFor(w, r)
	if s == nil {
		return
	}
	writer := newStreamWriter()
	g := getRequest{w: &writer, lastEventID: r.Header.Get(headerLastEventID), version: firstHeader(r.Header, httpHeaderProtocolVersion), reply: make(chan getVerdict, 1)}
	if !s.control(g) {
		httpError(w, http.StatusNotFound, "Session not found")
		return
	}
	var v getVerdict
	select {
	case v = <-g.reply:
	case <-s.done:
		httpError(w, http.StatusNotFound, "Session not found")
		return
	}
	w.Header().Set(headerSessionID, s.id)
	if v.status != 0 {
		httpError(w, v.status, v.message)
		return
	}
	sseW := newSSEWriter(w, h.opts.WriteTimeout, h.headerValues)
	sse := &sseW
	sse.start()
	if !sse.flush() {
		s.control(writerGone{w: g.w})
		return
	}
	s.serveWriter(g.w, sse, r.Context(), v.keepAlive, nil)
}

// serveDelete ends a session.
func (h *HTTPHandler) serveDelete(w http.ResponseWriter, r *http.Request) {
	if firstHeader(r.Header, headerSessionID) == "" {
		w.Header().Set("Allow", "POST")
		httpError(w, http.StatusMethodNotAllowed, "Method Not Allowed: DELETE needs an Mcp-Session-Id (2026-07-28 has no sessions)")
		return
	}
	s := h.sessionFor(w, r)
	if s == nil {
		return
	}
	if !s.stop() {
		httpError(w, http.StatusNotFound, "Session not found")
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// stop ends the session and waits until it has ended; false when it had
// ended already.
func (s *httpSession) stop() bool {
	req := deleteRequest{reply: make(chan struct{})}
	if !s.control(req) {
		return false
	}
	<-s.done
	return true
}

// serveWriter writes what the session's owner hands w on the response, until
// a final batch, a failed write, the client leaving, the session ending or,
// for a GET (x nil), the handler closing its streams. x is the POST w
// answers; its answer is sent with the session's id, except an initialize's
// refusal. keepAlive > 0 writes a comment after each quiet period of that
// length.
func (s *httpSession) serveWriter(w *streamWriter, sse *sseWriter, ctx context.Context, keepAlive time.Duration, x *httpExchange) {
	var tick <-chan time.Time
	if keepAlive > 0 {
		t := time.NewTicker(keepAlive)
		defer t.Stop()
		tick = t.C
	}
	var quit <-chan struct{}
	if x == nil {
		quit = s.h.quit
	}
	write := func(b streamBatch) bool {
		if x != nil && !(b.plain && x.msg.method == methodInitialize && b.code != 0) {
			sse.w.Header()[headerSessionID] = s.idHeader
		}
		return sse.writeBatch(b)
	}
	for {
		select {
		case <-w.ready:
			b := w.take()
			ok := write(b)
			if b.unreported {
				return
			}
			s.control(writerReport{w: w, x: x, batch: b, ok: ok})
			if b.final || !ok {
				return
			}
		case <-tick:
			if !sse.comment() {
				s.control(writerGone{w: w, x: x})
				return
			}
		case <-ctx.Done():
			s.control(writerGone{w: w, x: x})
			return
		case <-quit:
			s.control(writerGone{w: w, x: x})
			return
		case <-s.done:
			select {
			case <-w.ready: // handed just before the session ended
				write(w.take())
			default:
				if x != nil && !sse.started && !sse.failed {
					sse.start() // the session ended before the answer: a stream with none
				}
			}
			return
		}
	}
}

// changeHub fans a ChangeSource's changes out to the live sessions and the
// boxes of 2026 listen streams. The source calls put from any goroutine
// while sessions and streams come and go, so a mutex guards the set; it is
// never held while a change is put (a box has its own lock), so the two are
// never nested.
type changeHub struct {
	mu    sync.Mutex
	boxes map[changeReceiver]struct{}
}

// changeReceiver takes a change without blocking: a changeBox, or a session,
// which puts it in its box and wakes its owner.
type changeReceiver interface{ put(Change) }

func (c *changeHub) add(b changeReceiver) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.boxes[b] = struct{}{}
}

func (c *changeHub) remove(b changeReceiver) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.boxes, b)
}

// put is the dispatcher's change callback: it never blocks.
func (c *changeHub) put(change Change) {
	c.mu.Lock()
	boxes := make([]changeReceiver, 0, len(c.boxes))
	for b := range c.boxes {
		boxes = append(boxes, b)
	}
	c.mu.Unlock()
	for _, b := range boxes {
		b.put(change)
	}
}

// clientQuota counts what clients without a session of their own hold at
// once (2026-07-28 listen streams): at most perClient per client and total
// in all. A client is its client address (HTTPHandler.ClientAddress). Shared by the
// goroutines of every such request, so a mutex guards it: each call is one
// map operation.
type clientQuota struct {
	perClient, total int // read-only

	mu   sync.Mutex
	used int
	held map[string]int
}

// forClient returns the quota of the client at address (see
// HTTPHandler.ClientAddress), for a connection's listenQuota.
func (q *clientQuota) forClient(address string) quota {
	return clientShare{q: q, client: address}
}

// clientShare is one client's view of a clientQuota.
type clientShare struct {
	q      *clientQuota
	client string
}

func (c clientShare) take() bool {
	q := c.q
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.used >= q.total || q.held[c.client] >= q.perClient {
		return false
	}
	q.used++
	q.held[c.client]++
	return true
}

func (c clientShare) release() {
	q := c.q
	q.mu.Lock()
	defer q.mu.Unlock()
	q.used--
	if q.held[c.client]--; q.held[c.client] <= 0 {
		delete(q.held, c.client)
	}
}
