package main

// A POST to the endpoint: its one JSON-RPC message read, classified (a
// request, a notification, a response, a batch; stateless 2026-07-28 or of
// a session) and handed to the session or the stateless path, with the
// header map the Dispatcher sees.

import (
	"encoding/json"
	"net/http"
	"strings"
)

// servePost serves one JSON-RPC message POSTed to the endpoint.
func (h *HTTPHandler) servePost(w http.ResponseWriter, r *http.Request) {
	acceptJSON, acceptSSE := mediaTypes(r.Header[headerAccept])
	if !acceptJSON || !acceptSSE {
		httpError(w, http.StatusNotAcceptable, "Not Acceptable: Accept must list application/json and text/event-stream")
		return
	}
	// The session the POST names, looked up once: its client, then its
	// message's owner. nil when it names none, or none that is live.
	sessionID := firstHeader(r.Header, headerSessionID)
	var session *httpSession
	if sessionID != "" {
		session = h.sessions.get(sessionID)
	}
	client := h.clients.acquire(h.clientName(r, session))
	defer h.clients.release(client)
	// The record of the POST's route, taken before the body is read so that
	// the body's reservation (and in a session the body, when short) lives
	// in it: a session's exchange when the POST names a session, else a
	// 2026 POST's record, reused once the POST is answered (recyclePost,
	// deferred first so that it runs last). Where the message turns out to
	// go the other way (an initialize, a 2026 message posted with a session
	// id), its route takes its own.
	var post *statelessPost
	var exchange *httpExchange
	var body []byte
	var res *reservation
	var ok bool
	if sessionID != "" {
		exchange = new(httpExchange)
		body, res, ok = h.readBody(w, r, client.client, &exchange.in.res, exchange.in.body[:])
	} else {
		post = h.takePost()
		defer h.recyclePost(post)
		body, res, ok = h.readBody(w, r, client.client, &post.res, nil)
	}
	if !ok {
		return
	}
	defer res.release() // after the answer: the message served holds the body until then
	env, err := decodeEnvelope(body)
	switch {
	case err != nil:
		writeJSONFrame(w, http.StatusBadRequest, errorFrame("", errParseFrame))
		return
	case env.kind == kindArray && sessionID == "":
		writeJSONFrame(w, http.StatusBadRequest, errorFrame("", errBatchRefused))
		return
	case env.kind != kindObject && env.kind != kindArray:
		writeJSONFrame(w, http.StatusBadRequest, errorFrame("", errInvalidRequest))
		return
	}
	// msg stays in this frame: the route that serves it copies it into the
	// record it keeps for the POST.
	var msg postedMessage
	msg.read(env)
	msg.size, msg.raw = len(body), body
	msg.client, msg.res = client.client, res
	if h.auth != nil && !h.auth.allowMessage(w, r, &msg) {
		return
	}
	h.drain.messages.begin() // until it is answered: Shutdown waits for it
	defer h.drain.messages.end()
	if msg.stateless(r) {
		if post == nil {
			post = h.takePost()
			defer h.recyclePost(post)
		}
		h.serveStateless(w, r, &msg, post)
		return
	}
	if exchange == nil {
		exchange = new(httpExchange)
	}
	if post != nil {
		post.held = true // the session holds the body's reservation, which is in post
	}
	h.serveSessionPost(w, r, &msg, session, exchange)
}

// postedMessage is a decoded POST body and what routing reads of it.
type postedMessage struct {
	env      envelope
	raw      []byte          // the body: a batch's members are split from it
	size     int             // the body's length, the job's size for the executor when res is nil
	client   *executorClient // whose share the body and the job count against; nil: a client of its own
	res      *reservation    // the body's bytes, which the job holds; nil: counted by size
	method   string
	methodOK bool
	// metaVersion is the JSON text of params._meta's protocol version, nil
	// when absent; hasMeta says whether it is present.
	metaVersion json.RawMessage
	hasMeta     bool
	// mirrored is the JSON text of the params member the Mcp-Name header
	// mirrors (mirroredMember), arguments that of a tools/call's arguments;
	// nil when absent.
	mirrored, arguments json.RawMessage
}

// read fills m from env, a decoded POST body, in one pass over its params.
func (m *postedMessage) read(env envelope) {
	m.env = env
	m.method, m.methodOK = decodeMethod(env.method)
	if env.params == nil || env.params[0] != '{' {
		return
	}
	mirrored := mirroredMember(m.method)
	members := newMemberScanner(env.params)
	for {
		key, escaped, value, ok := members.next()
		switch {
		case !ok:
			return
		case keyMatches(key, escaped, "_meta"):
			if isJSONObject(value) {
				m.metaVersion, m.hasMeta = lookupMember(value, metaKeyProtocolVersion)
			}
		case mirrored != "" && keyMatches(key, escaped, mirrored):
			m.mirrored = value
		case m.method == methodToolsCall && keyMatches(key, escaped, "arguments"):
			m.arguments = value
		}
	}
}

// id returns the message's canonical id, "" when it has none or one that is not
// tracked (docs/explanation/contract.md, "The per-line pipeline"): what an
// answer the transport writes itself echoes.
func (m *postedMessage) id() string {
	if m.env.id == nil {
		return ""
	}
	id, _ := canonicalID(m.env.id)
	return id
}

// isResponse reports whether the message is a response to a
// server-to-client request (envelope.isResponse).
func (m *postedMessage) isResponse() bool { return m.env.isResponse() }

// isNotification reports whether the message is a notification
// (envelope.isNotification).
func (m *postedMessage) isNotification() bool { return m.env.isNotification(m.methodOK) }

// isRequest reports whether the message is a request, answered with a
// response (an invalid one too), rather than a notification or a response,
// answered 202.
func (m *postedMessage) isRequest() bool {
	return m.env.kind != kindArray && !m.isResponse() && !m.isNotification()
}

// errBatchRefused answers a JSON-RPC batch outside a 2025-03-26 session.
var errBatchRefused = invalidRequest("JSON-RPC batches are not supported")

// stateless reports whether the message is served as 2026-07-28: its _meta
// names a protocol version, or it belongs to no session (no Mcp-Session-Id)
// and is neither initialize nor a response and does not name an
// initialize-era version in its header.
func (m *postedMessage) stateless(r *http.Request) bool {
	if m.hasMeta {
		return true
	}
	if firstHeader(r.Header, headerSessionID) != "" || m.isResponse() || m.method == methodInitialize {
		return false
	}
	v := firstHeader(r.Header, httpHeaderProtocolVersion)
	return v == "" || isStatelessVersion(v) || !isKnownProtocolVersion(v)
}

// messageHeader returns the Request.Header of msg, which r carried: every
// header of r (requestHeader), except where no one reads them. The Runtime
// reads only mcp-protocol-version (Request.HeaderValue, in its dialect
// resolution), and only for a request whose _meta names no version; in a
// session it then gets what the connection synthesizes, the negotiated
// version, which is what the request carries too (another is refused
// before) or what the connection puts in the request's map. So when the
// dispatcher is the Runtime itself, without middleware, a 2026 message
// whose _meta names its version, and a session's message other than an
// initialize or a batch, carry no copy of the headers: copying them was a
// tenth of the allocations of a call. Any other Dispatcher, one that wraps
// or embeds a Runtime included, and a Runtime's middleware (Runtime.Use),
// get every header.
func (h *HTTPHandler) messageHeader(r *http.Request, msg *postedMessage, inSession bool) map[string]string {
	if h.runtime != nil && !h.runtime.usesMiddleware() {
		switch {
		case !inSession && msg.hasMeta:
			return nil
		case inSession && msg.env.kind == kindObject && msg.method != methodInitialize:
			return nil
		}
	}
	return requestHeader(r)
}

// requestHeader returns the request's headers as a Request carries them:
// lower-case names, the first value of each.
func requestHeader(r *http.Request) map[string]string {
	header := make(map[string]string, len(r.Header))
	for name, values := range r.Header {
		if len(values) > 0 {
			header[strings.ToLower(name)] = strings.TrimSpace(values[0])
		}
	}
	return header
}
