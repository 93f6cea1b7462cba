package main

import (
	"crypto/rand"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Initialize-era sessions of the HTTP transport (2025-06-18, 2025-11-25).

// maxSessionStreams bounds the ended streams a session keeps for replay.
const maxSessionStreams = 64

// replayBudget bounds the bytes of the SSE events the sessions of one
// handler keep for Last-Event-ID replay: each session's (perSession) and all
// together (total). An event is charged from when it is appended until it is
// dropped; the budget is enforced right after each append, dropping the
// oldest events first (see httpSession.dropOldestEvent), never the event just
// appended, so a session exceeds perSession by at most that one event.
type replayBudget struct {
	perSession, total int64         // read-only
	sessions          *sessionTable // where the total's victims are found; read-only
	used              atomic.Int64  // the bytes kept by all sessions
}

// httpSession is one initialize-era session: what initialize negotiated and
// the state the stdio coordinator keeps per connection. Safe for concurrent
// use: every field after id is guarded by mu.
type httpSession struct {
	id     string        // read-only
	owner  string        // principalBinding of its creator; read-only once registered
	ended  chan struct{} // closed when the session ends (DELETE, expiry, Close)
	budget *replayBudget // read-only
	// retained is the bytes of the events the session's streams keep,
	// changed by eventLog under its lock.
	retained atomic.Int64

	mu          sync.Mutex
	session     Session
	resourceSub map[string]bool          // URIs of resources/subscribe
	inflight    map[string]*httpExchange // running requests by canonical id
	outgoing    map[string]*httpOutgoing // server-to-client requests by canonical id
	outgoingSeq uint64
	streams     map[uint64]*eventLog // the session's SSE streams by number
	order       []uint64             // stream numbers, oldest first
	nextStream  uint64
	standalone  *eventLog // the GET stream of server-initiated messages
	listening   bool      // a GET connection carries standalone
	active      int       // requests and GET connections being served
	lastUsed    time.Time
	done        bool
}

// httpOutgoing is a server-to-client request waiting for the client's
// response, which arrives in a POST of its own.
type httpOutgoing struct {
	x     *httpExchange
	reply chan peerReply
}

func newHTTPSession(id string, budget *replayBudget) *httpSession {
	s := &httpSession{
		id:          id,
		ended:       make(chan struct{}),
		budget:      budget,
		resourceSub: make(map[string]bool),
		inflight:    make(map[string]*httpExchange),
		outgoing:    make(map[string]*httpOutgoing),
		streams:     make(map[uint64]*eventLog),
		lastUsed:    time.Now(),
	}
	s.standalone = s.newStreamLocked()
	return s
}

// newSessionID returns a cryptographically random session id of visible
// ASCII characters.
func newSessionID() string { return rand.Text() }

// newStreamLocked adds a new stream to the session, dropping the oldest
// ended one beyond maxSessionStreams.
func (s *httpSession) newStreamLocked() *eventLog {
	s.nextStream++
	l := newEventLog(s.nextStream, s)
	s.streams[l.stream] = l
	s.order = append(s.order, l.stream)
	if len(s.order) > maxSessionStreams {
		s.dropEndedStreamLocked()
	}
	return l
}

// dropEndedStreamLocked drops the oldest ended stream and the events it
// kept; it reports false when no stream has ended.
func (s *httpSession) dropEndedStreamLocked() bool {
	for i, n := range s.order {
		if old := s.streams[n]; old != s.standalone && old.isEnded() {
			delete(s.streams, n)
			s.order = slices.Delete(s.order, i, i+1)
			old.release()
			return true
		}
	}
	return false
}

// dropOldestEvent frees some of what the session keeps for replay: its
// oldest ended stream, else the oldest event of its oldest stream that keeps
// one, other than event keepSeq of stream keep. It reports false when there
// is nothing to drop.
func (s *httpSession) dropOldestEvent(keep *eventLog, keepSeq uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dropEndedStreamLocked() {
		return true
	}
	for _, n := range s.order {
		l := s.streams[n]
		spare := uint64(0)
		if l == keep {
			spare = keepSeq
		}
		if l.dropOldest(spare) {
			return true
		}
	}
	return false
}

// enforceReplayBudget drops the oldest events kept until the session, and
// then the handler's sessions together, are within the budget; it never
// drops event seq of stream l, just appended. The handler-wide excess is
// taken from the session keeping the most.
func (s *httpSession) enforceReplayBudget(l *eventLog, seq uint64) {
	b := s.budget
	for s.retained.Load() > b.perSession && s.dropOldestEvent(l, seq) {
	}
	for b.used.Load() > b.total {
		victim := b.sessions.keepingMost(s)
		if victim == nil || !victim.dropOldestEvent(l, seq) {
			return
		}
	}
}

// newStream returns a new stream of the session (a POST's response).
func (s *httpSession) newStream() *eventLog {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.newStreamLocked()
}

// dropStream forgets stream l and its events: it can no longer be resumed.
func (s *httpSession) dropStream(l *eventLog) {
	s.mu.Lock()
	delete(s.streams, l.stream)
	s.order = slices.DeleteFunc(s.order, func(n uint64) bool { return n == l.stream })
	s.mu.Unlock()
	l.release()
}

// stream returns the session's stream number n, or nil.
func (s *httpSession) stream(n uint64) *eventLog {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.streams[n]
}

// snapshot returns what a message admitted now carries: the negotiated
// Session.
func (s *httpSession) snapshot() Session {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.session
}

// begin records a request or connection being served; end undoes it.
func (s *httpSession) begin() {
	s.mu.Lock()
	s.active++
	s.lastUsed = time.Now()
	s.mu.Unlock()
}

func (s *httpSession) end() {
	s.mu.Lock()
	s.active--
	s.lastUsed = time.Now()
	s.mu.Unlock()
}

// track registers a running request under its id; it reports false when
// the id is in flight already.
func (s *httpSession) track(x *httpExchange) bool {
	if x.msg.id == "" {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.inflight[x.msg.id]; dup {
		return false
	}
	s.inflight[x.msg.id] = x
	return true
}

// untrack drops a finished request: its id is free and its server-to-client
// requests still waiting fail.
func (s *httpSession) untrack(x *httpExchange) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inflight[x.msg.id] == x {
		delete(s.inflight, x.msg.id)
	}
	for _, id := range x.outgoing {
		if out, ok := s.outgoing[id]; ok {
			delete(s.outgoing, id)
			out.reply <- peerReply{err: ErrRequestEnded}
		}
	}
}

// cancel handles notifications/cancelled: the named running request is
// cancelled; unknown ids, initialize and malformed params are ignored.
func (s *httpSession) cancel(params []byte) {
	id, ok := cancelledID(params)
	if !ok {
		return
	}
	s.mu.Lock()
	x := s.inflight[id]
	s.mu.Unlock()
	if x != nil && x.msg.method != "initialize" {
		x.sub.cancelJob(&x.job)
	}
}

// addOutgoing registers a server-to-client request of x and returns its id.
func (s *httpSession) addOutgoing(x *httpExchange, reply chan peerReply) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.outgoingSeq++
	id := outgoingID(s.outgoingSeq)
	s.outgoing[id] = &httpOutgoing{x: x, reply: reply}
	return id
}

// dropOutgoing forgets the server-to-client request id that could not be
// sent.
func (s *httpSession) dropOutgoing(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.outgoing, id)
}

// onResponse routes the client's response to the server-to-client request
// waiting for it; any other response is dropped.
func (s *httpSession) onResponse(env envelope) {
	id, ok := canonicalID(env.id)
	if !ok {
		return
	}
	s.mu.Lock()
	out, ok := s.outgoing[id]
	delete(s.outgoing, id)
	s.mu.Unlock()
	if ok {
		out.reply <- clientResponse(env)
	}
}

// applyReply records what a successful reply changes in the session, before
// the reply is written, as the stdio coordinator does for its connection. A
// resources/subscribe of a new URI beyond maxSubscriptions is refused: the
// error returned is answered instead of the reply, and nothing changes.
func (s *httpSession) applyReply(r Reply, maxSubscriptions int) *RPCError {
	if r.Subscribe != "" {
		if rerr := subscriptionURIError(r.Subscribe); rerr != nil {
			return rerr
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.Subscribe != "" && !s.resourceSub[r.Subscribe] && len(s.resourceSub) >= maxSubscriptions {
		return errSubscriptionLimit(maxSubscriptions)
	}
	if r.Initialized != nil {
		s.session = *r.Initialized
	}
	if r.LogLevel != "" {
		s.session.LogLevel = r.LogLevel
	}
	if r.Subscribe != "" {
		s.resourceSub[r.Subscribe] = true
	}
	if r.Unsubscribe != "" {
		delete(s.resourceSub, r.Unsubscribe)
	}
	return nil
}

// onChange puts a catalog change on the session's GET stream: list changes
// always, a resource update when the session subscribed to the resource.
func (s *httpSession) onChange(change Change) {
	s.mu.Lock()
	wanted := s.session.ProtocolVersion != "" && !s.done &&
		(change.Kind != ResourceUpdated || s.resourceSub[change.URI])
	standalone := s.standalone
	s.mu.Unlock()
	if !wanted || change.Kind == SubscriptionsEnded {
		return
	}
	prefix, ok := changeParamsPrefix(change)
	if !ok {
		return
	}
	if frame, err := legacyChangeFrame(change, prefix); err == nil {
		standalone.append(frame)
	}
}

// finish ends the session: its streams end and drop what they kept, its
// running requests are cancelled and their server-to-client requests fail.
// Idempotent.
func (s *httpSession) finish() {
	s.mu.Lock()
	if s.done {
		s.mu.Unlock()
		return
	}
	s.done = true
	close(s.ended)
	streams := slices.Collect(maps.Values(s.streams))
	running := slices.Collect(maps.Values(s.inflight))
	s.mu.Unlock()
	for _, l := range streams {
		l.release()
	}
	for _, x := range running {
		x.sub.cancelJob(&x.job)
	}
}

// sessionTable holds the live sessions by id.
type sessionTable struct {
	max  int           // read-only after init
	idle time.Duration // read-only after init

	mu   sync.Mutex
	byID map[string]*httpSession // guarded by mu
}

func (t *sessionTable) init(maxSessions int, idle time.Duration) {
	t.max, t.idle = maxSessions, idle
	t.byID = make(map[string]*httpSession)
}

// begin returns the live session id with one more request or connection
// being served (the caller calls end when it is done), or nil. Counting it
// under the table's lock means it cannot expire in between.
func (t *sessionTable) begin(id string) *httpSession {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.byID[id]
	if s != nil && t.expired(s, time.Now()) {
		delete(t.byID, id)
		go s.finish()
		return nil
	}
	if s != nil {
		s.begin()
	}
	return s
}

// expired reports whether s has been idle for longer than the idle timeout.
func (t *sessionTable) expired(s *httpSession, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.active == 0 && now.Sub(s.lastUsed) > t.idle
}

// add registers s, first ending expired sessions; it reports false when the
// table is full.
func (t *sessionTable) add(s *httpSession) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	for id, old := range t.byID {
		if t.expired(old, now) {
			delete(t.byID, id)
			go old.finish()
		}
	}
	if len(t.byID) >= t.max {
		return false
	}
	t.byID[s.id] = s
	return true
}

// remove ends the session id if owner owns it; it reports whether it was
// live and owned.
func (t *sessionTable) remove(id, owner string) bool {
	t.mu.Lock()
	s := t.byID[id]
	if s != nil && s.owner != owner {
		s = nil
	} else {
		delete(t.byID, id)
	}
	t.mu.Unlock()
	if s != nil {
		s.finish()
	}
	return s != nil
}

// keepingMost returns the session that keeps the most bytes for replay,
// among the live ones and also (when not nil) s, which may not be
// registered yet; nil when none keeps any.
func (t *sessionTable) keepingMost(s *httpSession) *httpSession {
	var most *httpSession
	var bytes int64
	if s != nil {
		most, bytes = s, s.retained.Load()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, c := range t.byID {
		if n := c.retained.Load(); n > bytes {
			most, bytes = c, n
		}
	}
	if bytes <= 0 {
		return nil
	}
	return most
}

// all returns the live sessions.
func (t *sessionTable) all() []*httpSession {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Collect(maps.Values(t.byID))
}

// closeAll ends every session.
func (t *sessionTable) closeAll() {
	t.mu.Lock()
	all := slices.Collect(maps.Values(t.byID))
	clear(t.byID)
	t.mu.Unlock()
	for _, s := range all {
		s.finish()
	}
}

// sessionFor returns the session a POST or GET names, begun (see
// sessionTable.begin: the caller calls its end), answering the request
// itself when there is none: 400 without Mcp-Session-Id, 404 for an unknown
// or ended session, or one another principal created.
func (h *HTTPHandler) sessionFor(w http.ResponseWriter, r *http.Request) *httpSession {
	id := r.Header.Get(headerSessionID)
	if id == "" {
		httpError(w, http.StatusBadRequest, "Bad Request: Mcp-Session-Id header is required")
		return nil
	}
	s := h.sessions.begin(id)
	if s != nil && s.owner != principalBinding(PrincipalFromContext(r.Context())) {
		s.end()
		s = nil
	}
	if s == nil {
		httpError(w, http.StatusNotFound, "Session not found")
		return nil
	}
	return s
}

// checkVersionHeader validates the MCP-Protocol-Version header of a request
// in session s and returns the version it is served at: the negotiated one,
// which an absent header means too. Any other version is refused 400.
func checkVersionHeader(w http.ResponseWriter, r *http.Request, s *httpSession) (string, bool) {
	negotiated := s.snapshot().ProtocolVersion
	if v := r.Header.Get(headerProtocolVersion); v != "" && v != negotiated {
		httpError(w, http.StatusBadRequest, "Bad Request: unsupported MCP-Protocol-Version "+strconv.Quote(v)+" (the session negotiated "+strconv.Quote(negotiated)+")")
		return "", false
	}
	return negotiated, true
}

// serveSessionPost serves a POST of the initialize era: initialize, or a
// message of an existing session.
func (h *HTTPHandler) serveSessionPost(w http.ResponseWriter, r *http.Request, msg *postedMessage) {
	if r.Header.Get(headerSessionID) == "" && msg.method == "initialize" && !msg.isNotification() {
		h.serveInitialize(w, r, msg)
		return
	}
	s := h.sessionFor(w, r)
	if s == nil {
		return
	}
	defer s.end()
	version, ok := checkVersionHeader(w, r, s)
	if !ok {
		return
	}
	w.Header().Set(headerSessionID, s.id)
	switch {
	case msg.isResponse():
		s.onResponse(msg.env)
		w.WriteHeader(http.StatusAccepted)
		return
	case msg.isNotification() && msg.method == "notifications/cancelled":
		s.cancel(msg.env.params)
		w.WriteHeader(http.StatusAccepted)
		return
	}
	x := h.newExchange(s, msg)
	x.req.Session = s.snapshot()
	x.req.SessionID = s.id
	x.req.Header = requestHeader(r)
	x.req.Header[headerProtocolVersion] = version
	if !s.track(x) {
		writeJSONFrame(w, http.StatusOK, errorFrame(msg.id, errDuplicateID))
		return
	}
	defer s.untrack(x)
	h.runExchange(w, r, x)
}

// serveInitialize serves an initialize without a session: a successful one
// creates the session its response names.
func (h *HTTPHandler) serveInitialize(w http.ResponseWriter, r *http.Request, msg *postedMessage) {
	s := newHTTPSession(newSessionID(), &h.replay)
	s.owner = principalBinding(PrincipalFromContext(r.Context()))
	x := h.newExchange(s, msg)
	x.req.SessionID = s.id
	x.req.Header = requestHeader(r)
	delete(x.req.Header, headerProtocolVersion)
	x.initializes = true
	s.begin()
	defer s.end()
	s.track(x)
	defer s.untrack(x)
	h.runExchange(w, r, x)
	if x.initializes {
		s.finish() // never registered: what its stream kept is freed
	}
}

// serveGet opens the session's stream of server-initiated messages, or
// resumes a stream after Last-Event-ID.
func (h *HTTPHandler) serveGet(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get(headerSessionID) == "" {
		w.Header().Set("Allow", "POST")
		httpError(w, http.StatusMethodNotAllowed, "Method Not Allowed: GET needs an Mcp-Session-Id (2026-07-28 has no GET stream)")
		return
	}
	if _, sse := mediaTypes(r.Header.Values("Accept")); !sse {
		httpError(w, http.StatusNotAcceptable, "Not Acceptable: Accept must list text/event-stream")
		return
	}
	s := h.sessionFor(w, r)
	if s == nil {
		return
	}
	defer s.end()
	if _, ok := checkVersionHeader(w, r, s); !ok {
		return
	}
	w.Header().Set(headerSessionID, s.id)
	if last := r.Header.Get(headerLastEventID); last != "" {
		stream, seq, ok := parseEventID(last)
		l := s.stream(stream)
		if !ok || l == nil {
			httpError(w, http.StatusBadRequest, "Bad Request: Last-Event-ID names no stream of this session")
			return
		}
		if why := l.replayable(seq); why != "" {
			httpError(w, http.StatusBadRequest, "Bad Request: Last-Event-ID "+why)
			return
		}
		if l == s.standalone && !s.claimListener() {
			httpError(w, http.StatusConflict, "Conflict: the session's GET stream is open on another connection")
			return
		}
		if l == s.standalone {
			defer s.releaseListener()
		} else {
			l.resume()
		}
		newSSEWriter(w, h.opts.WriteTimeout).follow(l, seq, h.keepAliveFor(l, s), r.Context().Done(), h.quit, s.ended)
		return
	}
	if !s.claimListener() {
		httpError(w, http.StatusConflict, "Conflict: the session's GET stream is open on another connection")
		return
	}
	defer s.releaseListener()
	l := s.standalone
	seq := l.unsent()
	sw := newSSEWriter(w, h.opts.WriteTimeout)
	if s.snapshot().ProtocolVersion >= ProtocolVersion20251125 {
		sw.event(l.eventID(l.append(nil)), h.opts.SSERetry, nil)
	}
	sw.follow(l, seq, h.opts.KeepAlive, r.Context().Done(), h.quit, s.ended)
}

// keepAliveFor is the keep-alive period of a resumed stream: the GET
// stream's, none for a request's stream, which ends with its response.
func (h *HTTPHandler) keepAliveFor(l *eventLog, s *httpSession) time.Duration {
	if l == s.standalone {
		return h.opts.KeepAlive
	}
	return 0
}

// claimListener marks the GET stream as carried by a connection; it reports
// false when another one carries it already.
func (s *httpSession) claimListener() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.listening {
		return false
	}
	s.listening = true
	return true
}

func (s *httpSession) releaseListener() {
	s.mu.Lock()
	s.listening = false
	s.mu.Unlock()
}

// serveDelete ends a session.
func (h *HTTPHandler) serveDelete(w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get(headerSessionID)
	if id == "" {
		w.Header().Set("Allow", "POST")
		httpError(w, http.StatusMethodNotAllowed, "Method Not Allowed: DELETE needs an Mcp-Session-Id (2026-07-28 has no sessions)")
		return
	}
	if !h.sessions.remove(id, principalBinding(PrincipalFromContext(r.Context()))) {
		httpError(w, http.StatusNotFound, "Session not found")
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
