package main

// The Streamable HTTP side: sessions of the initialize era, each with a
// child of its own; stateless 2026-07-28 messages, all on one shared child;
// and the rules only HTTP has, which a stdio server never sees: the Host
// and Origin check, Accept and Content-Type, the headers a 2026-07-28
// request mirrors its body in, and the HTTP statuses of 2026-07-28 errors.

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"time"
)

const (
	headerSessionID       = "Mcp-Session-Id"
	headerProtocolVersion = "Mcp-Protocol-Version"
	headerMethod          = "Mcp-Method"
	headerName            = "Mcp-Name"

	// keepAlive is how often an SSE stream that carries nothing gets a
	// comment, so that proxies and clients keep it open.
	keepAlive = 15 * time.Second
	// cancelWait bounds how long the bridge waits for a child to read the
	// cancellation of a request whose client went away.
	cancelWait = 5 * time.Second
)

// initializeEra holds the protocol versions that negotiate in initialize
// and keep a session; any other version a request names is served
// stateless, as 2026-07-28.
var initializeEra = map[string]bool{"2024-11-05": true, "2025-03-26": true, "2025-06-18": true, "2025-11-25": true}

var errClosed = errors.New("the bridge is shutting down")

// bridge is the http.Handler that serves MCP's Streamable HTTP transport
// with stdio server processes.
type bridge struct {
	argv      []string  // the stdio server's command line
	path      string    // the MCP endpoint's URL path
	checkHost bool      // refuse requests whose Host or Origin is not a loopback name
	lim       limits    // per child
	stderr    io.Writer // the children's stderr
	log       *log.Logger

	mu        sync.Mutex // guards what follows
	sessions  map[string]*session
	stateless *child // the child of every stateless message; nil until the first
	closed    bool
}

// session is an initialize-era session: its child, and the protocol
// version its initialize negotiated.
type session struct {
	id      string
	child   *child
	version string
}

func newBridge(argv []string, path string, lim limits, stderr io.Writer, logger *log.Logger) *bridge {
	return &bridge{argv: argv, path: path, lim: lim, stderr: stderr, log: logger, sessions: map[string]*session{}}
}

func (b *bridge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if b.checkHost && !loopbackRequest(r) {
		http.Error(w, "Forbidden: the Host or Origin header names no loopback host", http.StatusForbidden)
		return
	}
	if r.URL.Path != b.path {
		http.NotFound(w, r)
		return
	}
	switch r.Method {
	case http.MethodPost:
		b.servePost(w, r)
	case http.MethodGet:
		b.serveGet(w, r)
	case http.MethodDelete:
		b.serveDelete(w, r)
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
	}
}

// servePost serves one POSTed JSON-RPC message.
func (b *bridge) servePost(w http.ResponseWriter, r *http.Request) {
	if acceptsJSON, acceptsSSE := mediaTypes(r.Header.Values("Accept")); !acceptsJSON || !acceptsSSE {
		http.Error(w, "Not Acceptable: Accept must list application/json and text/event-stream", http.StatusNotAcceptable)
		return
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		http.Error(w, "Unsupported Media Type: Content-Type must be application/json", http.StatusUnsupportedMediaType)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, int64(b.lim.maxMessage)))
	if err != nil {
		if tooLarge := (*http.MaxBytesError)(nil); errors.As(err, &tooLarge) {
			http.Error(w, fmt.Sprintf("Content Too Large: a message may have %d bytes", b.lim.maxMessage), http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "Bad Request: reading the body failed", http.StatusBadRequest)
		return
	}
	if trimmed := strings.TrimSpace(string(body)); strings.HasPrefix(trimmed, "[") {
		writeJSON(w, http.StatusBadRequest, errorLine(nil, codeInvalidRequest, "Invalid Request: the bridge relays no JSON-RPC batches"))
		return
	}
	m, err := parseMessage(body)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, errorLine(nil, codeParseError, "Parse error: "+err.Error()))
		return
	}
	if !m.isRequest() && !m.isNotification() && !m.isResponse() {
		writeJSON(w, http.StatusBadRequest, errorLine(m.id, codeInvalidRequest, "Invalid Request: neither a request, a notification nor a response"))
		return
	}
	if isStateless(r, m) {
		b.serveStateless(w, r, m)
		return
	}
	b.serveSession(w, r, m)
}

// isStateless reports whether m is served as 2026-07-28: its _meta names a
// protocol version, or it names no session, is neither an initialize nor a
// response, and its MCP-Protocol-Version header names no initialize-era
// version.
func isStateless(r *http.Request, m *message) bool {
	if m.hasVersion {
		return true
	}
	if r.Header.Get(headerSessionID) != "" || m.isResponse() || m.method == "initialize" {
		return false
	}
	return !initializeEra[r.Header.Get(headerProtocolVersion)]
}

// serveStateless relays a 2026-07-28 message to the shared child once its
// headers mirror its body.
func (b *bridge) serveStateless(w http.ResponseWriter, r *http.Request, m *message) {
	if m.isResponse() {
		writeJSON(w, http.StatusBadRequest, errorLine(nil, codeInvalidRequest, "Invalid Request: a 2026-07-28 client sends no responses"))
		return
	}
	if m.hasVersion && m.isRequest() {
		if text := mirrorMismatch(r.Header, m); text != "" {
			writeJSON(w, http.StatusBadRequest, errorLine(m.id, codeHeaderMismatch, "Header mismatch: "+text))
			return
		}
	}
	c, err := b.statelessChild()
	if err != nil {
		b.log.Printf("starting the stateless child: %v", err)
		http.Error(w, "Bad Gateway: "+err.Error(), http.StatusBadGateway)
		return
	}
	if m.isNotification() {
		b.notify(w, r, c, m)
		return
	}
	x, err := forward(r.Context(), c, m, b.lim)
	if err != nil {
		http.Error(w, "Bad Gateway: "+err.Error(), http.StatusBadGateway)
		return
	}
	b.relay(w, r, c, x, true)
}

// serveSession serves an initialize-era message: an initialize starts a
// session, anything else needs one.
func (b *bridge) serveSession(w http.ResponseWriter, r *http.Request, m *message) {
	id := r.Header.Get(headerSessionID)
	if id == "" {
		if m.isRequest() && m.method == "initialize" {
			b.initialize(w, r, m)
			return
		}
		http.Error(w, "Bad Request: Mcp-Session-Id header is required", http.StatusBadRequest)
		return
	}
	s := b.session(w, r)
	if s == nil {
		return
	}
	if !m.isRequest() {
		b.notify(w, r, s.child, m)
		return
	}
	x, err := forward(r.Context(), s.child, m, b.lim)
	if err != nil {
		sessionGone(w, err)
		return
	}
	b.relay(w, r, s.child, x, false)
}

// session returns the live session the request names, answering the
// request itself when there is none (404) or when its MCP-Protocol-Version
// header names another version than the session's (400).
func (b *bridge) session(w http.ResponseWriter, r *http.Request) *session {
	id := r.Header.Get(headerSessionID)
	b.mu.Lock()
	s := b.sessions[id]
	b.mu.Unlock()
	if s == nil {
		http.Error(w, "Not Found: no session "+id, http.StatusNotFound)
		return nil
	}
	if v := r.Header.Get(headerProtocolVersion); v != "" && v != s.version {
		http.Error(w, fmt.Sprintf("Bad Request: MCP-Protocol-Version %q is not the session's %q", v, s.version), http.StatusBadRequest)
		return nil
	}
	w.Header().Set(headerSessionID, id)
	return s
}

// sessionGone answers a request of a session whose child went away.
func sessionGone(w http.ResponseWriter, err error) {
	if errors.Is(err, errChildGone) {
		http.Error(w, "Not Found: the session ended (its server process exited)", http.StatusNotFound)
		return
	}
	http.Error(w, "Bad Gateway: "+err.Error(), http.StatusBadGateway)
}

// initialize starts a session: a child of its own, which the initialize
// request is relayed to. The session exists once the child answers it
// without an error; its answer (and whatever the child sent before it)
// then goes back with the session's id.
func (b *bridge) initialize(w http.ResponseWriter, r *http.Request, m *message) {
	if err := b.room(); err != nil {
		writeJSON(w, http.StatusServiceUnavailable, errorLine(m.id, codeInternalError, "Service Unavailable: "+err.Error()))
		return
	}
	id := newSessionID()
	c, err := b.startChild("session " + id[:8])
	if err != nil {
		b.log.Printf("starting a session's child: %v", err)
		http.Error(w, "Bad Gateway: "+err.Error(), http.StatusBadGateway)
		return
	}
	x, err := forward(r.Context(), c, m, b.lim)
	if err != nil {
		go c.stop()
		http.Error(w, "Bad Gateway: "+err.Error(), http.StatusBadGateway)
		return
	}
	var msgs [][]byte
	for {
		queued, final, err := x.box.take()
		msgs = append(msgs, queued...)
		if final {
			break
		}
		if err != nil {
			go c.stop()
			http.Error(w, "Bad Gateway: "+err.Error(), http.StatusBadGateway)
			return
		}
		select {
		case <-x.box.wake:
		case <-r.Context().Done():
			go c.stop()
			return
		}
	}
	answer, err := parseMessage(msgs[len(msgs)-1])
	var result struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if err != nil || answer.hasCode || json.Unmarshal(resultOf(answer.line), &result) != nil || result.ProtocolVersion == "" {
		go c.stop() // no session: the answer goes back without an id
	} else if err := b.publish(&session{id: id, child: c, version: result.ProtocolVersion}); err != nil {
		go c.stop()
		writeJSON(w, http.StatusServiceUnavailable, errorLine(m.id, codeInternalError, "Service Unavailable: "+err.Error()))
		return
	} else {
		w.Header().Set(headerSessionID, id)
	}
	if len(msgs) == 1 {
		writeJSON(w, http.StatusOK, msgs[0])
		return
	}
	startSSE(w).events(msgs)
}

// resultOf returns the result member of a response, nil when it has none.
func resultOf(line []byte) json.RawMessage {
	var response struct {
		Result json.RawMessage `json:"result"`
	}
	json.Unmarshal(line, &response)
	return response.Result
}

// errTooManySessions refuses an initialize while limits.maxSessions
// sessions live.
var errTooManySessions = errors.New("as many sessions live as the bridge allows (-max-sessions); end one with DELETE")

// room returns an error when no session may start now.
func (b *bridge) room() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.closed:
		return errClosed
	case len(b.sessions) >= b.lim.maxSessions:
		return errTooManySessions
	}
	return nil
}

// publish adds s to the session table, and removes it again once its
// child is gone.
func (b *bridge) publish(s *session) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.closed:
		return errClosed
	case len(b.sessions) >= b.lim.maxSessions:
		return errTooManySessions
	}
	b.sessions[s.id] = s
	go func() {
		<-s.child.gone
		b.forget(s)
	}()
	return nil
}

// forget removes s from the session table; it reports whether s was in it.
func (b *bridge) forget(s *session) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.sessions[s.id] != s {
		return false
	}
	delete(b.sessions, s.id)
	return true
}

// statelessChild returns the child of the stateless messages, starting it
// on first use and again after it went away.
func (b *bridge) statelessChild() (*child, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, errClosed
	}
	if b.stateless == nil || b.stateless.isGone() {
		c, err := b.startChild("stateless")
		if err != nil {
			return nil, err
		}
		b.stateless = c
	}
	return b.stateless, nil
}

func (b *bridge) startChild(label string) (*child, error) {
	return startChild(b.argv, label, b.stderr, b.lim, b.log)
}

// close stops every child and refuses what comes after.
func (b *bridge) close() {
	b.mu.Lock()
	b.closed = true
	children := make([]*child, 0, len(b.sessions)+1)
	for _, s := range b.sessions {
		children = append(children, s.child)
	}
	if b.stateless != nil {
		children = append(children, b.stateless)
	}
	b.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range children {
		wg.Go(c.stop)
	}
	wg.Wait()
}

// forward registers the request m with c and writes it to c's stdin.
func forward(ctx context.Context, c *child, m *message, lim limits) (*exchange, error) {
	x := &exchange{clientID: m.id, progress: canonicalID(m.metaProgress), box: newMailbox(lim.maxQueued)}
	if !c.do(func(r *router) { r.register(x) }) {
		return nil, errChildGone
	}
	line := m.line
	if x.rewritten() {
		line = withMember(line, x.wireID, "id")
	}
	if err := c.send(ctx, line); err != nil {
		c.do(func(r *router) { r.unregister(x) })
		return nil, err
	}
	return x, nil
}

// notify relays a notification or a response to c and answers 202. A
// notifications/cancelled names the request by the id the child knows it
// under.
func (b *bridge) notify(w http.ResponseWriter, r *http.Request, c *child, m *message) {
	line := m.line
	if m.method == "notifications/cancelled" && m.requestID != nil {
		var wireID json.RawMessage
		c.do(func(r *router) { wireID = r.wireIDOf(m.requestID) })
		if wireID != nil && canonicalID(wireID) != canonicalID(m.requestID) {
			line = withMember(line, wireID, "params", "requestId")
		}
	}
	if err := c.send(r.Context(), line); err != nil {
		sessionGone(w, err)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

// relay writes what the child sends for the request x as the answer to its
// POST: the answer alone as a JSON body (for a stateless request with the
// status of its error, statelessStatus) unless a message comes before it;
// then an SSE stream of them all. When the client goes away first, x is
// closed, and a stateless request is cancelled, as 2026-07-28 says.
func (b *bridge) relay(w http.ResponseWriter, r *http.Request, c *child, x *exchange, stateless bool) {
	var sse *sseWriter
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	for {
		msgs, final, err := x.box.take()
		if sse == nil && final && len(msgs) == 1 {
			status := http.StatusOK
			if stateless {
				status = statelessStatus(msgs[0])
			}
			writeJSON(w, status, msgs[0])
			return
		}
		if len(msgs) > 0 {
			if sse == nil {
				sse = startSSE(w)
			}
			if !sse.events(msgs) {
				b.abandon(c, x, stateless)
				return
			}
		}
		if final {
			return
		}
		if err != nil {
			if sse == nil {
				sessionGone(w, err)
			}
			return // a stream that ends without its answer
		}
		select {
		case <-x.box.wake:
		case <-tick.C:
			if sse != nil && !sse.comment() {
				b.abandon(c, x, stateless)
				return
			}
		case <-r.Context().Done():
			b.abandon(c, x, stateless)
			return
		}
	}
}

// abandon closes x, whose client went away, and cancels a stateless
// request.
func (b *bridge) abandon(c *child, x *exchange, stateless bool) {
	if !c.do(func(r *router) { r.unregister(x) }) || !stateless {
		return
	}
	cancel, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"method":  "notifications/cancelled",
		"params":  map[string]any{"requestId": x.wireID, "reason": "the client closed the HTTP response"},
	})
	ctx, stop := context.WithTimeout(context.Background(), cancelWait)
	defer stop()
	if err := c.send(ctx, cancel); err != nil && !errors.Is(err, errChildGone) {
		b.log.Printf("%s: cancelling an abandoned request: %v", c.label, err)
	}
}

// serveGet opens a session's stream of the messages that belong to no
// request.
func (b *bridge) serveGet(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get(headerSessionID) == "" {
		w.Header().Set("Allow", "POST")
		http.Error(w, "Method Not Allowed: GET needs an Mcp-Session-Id (2026-07-28 has no GET stream)", http.StatusMethodNotAllowed)
		return
	}
	if _, acceptsSSE := mediaTypes(r.Header.Values("Accept")); !acceptsSSE {
		http.Error(w, "Not Acceptable: Accept must list text/event-stream", http.StatusNotAcceptable)
		return
	}
	s := b.session(w, r)
	if s == nil {
		return
	}
	x := &exchange{get: true, box: newMailbox(b.lim.maxQueued)}
	if !s.child.do(func(r *router) { r.register(x) }) {
		sessionGone(w, errChildGone)
		return
	}
	defer s.child.do(func(r *router) { r.unregister(x) })
	sse := startSSE(w)
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	for {
		msgs, _, err := x.box.take()
		if len(msgs) > 0 && !sse.events(msgs) || err != nil {
			return
		}
		select {
		case <-x.box.wake:
		case <-tick.C:
			if !sse.comment() {
				return
			}
		case <-r.Context().Done():
			return
		}
	}
}

// serveDelete ends a session and its child.
func (b *bridge) serveDelete(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get(headerSessionID) == "" {
		w.Header().Set("Allow", "POST")
		http.Error(w, "Method Not Allowed: DELETE needs an Mcp-Session-Id (2026-07-28 has no sessions)", http.StatusMethodNotAllowed)
		return
	}
	s := b.session(w, r)
	if s == nil {
		return
	}
	if !b.forget(s) {
		http.Error(w, "Not Found: the session ended", http.StatusNotFound)
		return
	}
	s.child.stop()
	w.WriteHeader(http.StatusNoContent)
}

// statelessStatus is the HTTP status of a 2026-07-28 answer: 200 but for the
// errors the transport maps onto HTTP statuses.
func statelessStatus(answer []byte) int {
	m, err := parseMessage(answer)
	if err != nil || !m.hasCode {
		return http.StatusOK
	}
	switch m.code {
	case codeMethodNotFound:
		return http.StatusNotFound
	case codeInvalidParams, codeHeaderMismatch, codeMissingCapability, codeUnsupportedVersion, codeParseError, codeInvalidRequest:
		return http.StatusBadRequest
	case codeInternalError:
		return http.StatusInternalServerError
	}
	return http.StatusOK
}

// mirrorMismatch returns what is wrong with the headers a 2026-07-28
// request mirrors its body in (MCP-Protocol-Version, Mcp-Method, and
// Mcp-Name for the methods that name something), "" when nothing is.
func mirrorMismatch(h http.Header, m *message) string {
	for _, name := range []string{headerProtocolVersion, headerMethod, headerName} {
		if len(h.Values(name)) > 1 {
			return "the " + name + " header appears more than once"
		}
	}
	if text := mirrors(h, headerProtocolVersion, m.version, false); text != "" {
		return text
	}
	if text := mirrors(h, headerMethod, m.method, false); text != "" {
		return text
	}
	var name string
	if m.mirrored == nil || json.Unmarshal(m.mirrored, &name) != nil {
		return "" // absent or not a string: the server refuses the params themselves
	}
	return mirrors(h, headerName, name, true)
}

// mirrors checks that the header name is present and equals want, after
// decoding its =?base64?…?= form when encoded.
func mirrors(h http.Header, name, want string, encoded bool) string {
	values := h.Values(name)
	if len(values) == 0 {
		return "required header " + name + " is missing"
	}
	got := strings.TrimSpace(values[0])
	for i := 0; i < len(got); i++ {
		if c := got[i]; (c < 0x20 || c > 0x7e) && c != '\t' {
			return name + " header value has invalid characters"
		}
	}
	const prefix, suffix = "=?base64?", "?="
	if encoded && len(got) >= len(prefix)+len(suffix) && strings.HasPrefix(got, prefix) && strings.HasSuffix(got, suffix) {
		decoded, err := base64.StdEncoding.Strict().DecodeString(got[len(prefix) : len(got)-len(suffix)])
		if err != nil {
			return name + " header value is not valid Base64"
		}
		got = string(decoded)
	}
	if got != want {
		return fmt.Sprintf("%s header value %q does not match body value %q", name, got, want)
	}
	return ""
}

// mediaTypes reports whether an Accept header's values admit JSON and SSE.
func mediaTypes(accept []string) (acceptsJSON, acceptsSSE bool) {
	for _, value := range accept {
		for _, part := range strings.Split(value, ",") {
			mt, _, _ := strings.Cut(part, ";")
			switch strings.ToLower(strings.TrimSpace(mt)) {
			case "application/json", "application/*":
				acceptsJSON = true
			case "text/event-stream", "text/*":
				acceptsSSE = true
			case "*/*":
				acceptsJSON, acceptsSSE = true, true
			}
		}
	}
	return acceptsJSON, acceptsSSE
}

// loopbackRequest reports whether the request's Host, and its Origin when
// it has one, name loopback hosts: what keeps a web page a DNS rebinding
// points at the bridge from reaching it.
func loopbackRequest(r *http.Request) bool {
	if !isLoopbackHost(r.Host) {
		return false
	}
	if origin := r.Header.Get("Origin"); origin != "" {
		u, err := url.Parse(origin)
		return err == nil && isLoopbackHost(u.Host)
	}
	return true
}

func isLoopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

func newSessionID() string {
	var id [16]byte
	rand.Read(id[:]) // never fails (crypto/rand)
	return hex.EncodeToString(id[:])
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(body)
}

// sseWriter writes an SSE response.
type sseWriter struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

// startSSE sends the headers of an SSE response.
func startSSE(w http.ResponseWriter) *sseWriter {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	s := &sseWriter{w: w, rc: http.NewResponseController(w)}
	s.rc.Flush()
	return s
}

// events writes each message as an event and flushes; false when the
// client is gone.
func (s *sseWriter) events(msgs [][]byte) bool {
	for _, msg := range msgs {
		if _, err := fmt.Fprintf(s.w, "event: message\ndata: %s\n\n", msg); err != nil {
			return false
		}
	}
	return s.rc.Flush() == nil
}

// comment writes a keep-alive comment; false when the client is gone.
func (s *sseWriter) comment() bool {
	if _, err := io.WriteString(s.w, ": keep-alive\n\n"); err != nil {
		return false
	}
	return s.rc.Flush() == nil
}
