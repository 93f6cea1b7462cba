package main

import (
	"context"
	"crypto/rand"
	"errors"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Initialize-era sessions of the HTTP transport (2025-06-18, 2025-11-25).
//
// A session is a connection (conn.go) whose owner is the session's own
// goroutine (loop), exactly as the coordinator owns a stdio connection: the
// goroutines of HTTP requests never touch its state. A POST hands its
// message to the owner and then writes the answer the owner hands back; a GET
// asks the owner for a stream to carry and writes what it hands; a DELETE
// asks it to end. The owner never waits on a client: what a connection is
// slow to take stays in the stream's events, which are bounded (see
// replayBudget).

// maxSessionStreams bounds the ended streams a session keeps for replay.
const maxSessionStreams = 64

// httpSession is one initialize-era session. The fields up to done are set
// before the loop starts and read-only after; the rest are owned by the loop.
type httpSession struct {
	id      string
	owner   string     // principalBinding of its creator ("" without authorization)
	creator clientName // the client that created it, for MaxClientSessions
	h       *HTTPHandler
	posts   chan *httpExchange // messages POSTed to the session
	ctl     chan any           // GETs, DELETEs, the reports of its writers and its idle timer (see onControl)
	done    chan struct{}      // closed when the loop exits: the session has ended

	// shedAsked says the handler's replay budget asks the session for bytes
	// back; it is set by any session's owner, which then wakes this one
	// through changes (see askShed), so that the loop waits on one channel
	// for both.
	shedAsked atomic.Bool

	conn    *connection
	client  *clientEntry // whose share the session's work counts against
	changes *changeBox
	// creating is the initialize that creates the session, until it is
	// answered: a failure ends the session.
	creating *httpExchange

	streams    map[uint64]*eventStream // by number
	order      []uint64                // stream numbers, oldest first
	nextStream uint64
	standalone *eventStream // the GET stream of server-initiated messages
	retained   int64        // bytes of the events kept

	writers      int       // connections carrying the session's answers now
	lastUsed     time.Time // when a request or a writer last came or went
	idle         *time.Timer
	executorDone <-chan struct{}
	ended        bool
}

// httpExchange is one POST being answered: the route of its message in the
// session's connection. Its goroutine is a streamWriter, held in the same
// record (one allocation for the POST's parts); the fields below are the
// owner's.
type httpExchange struct {
	streamWriter
	msg    postedMessage
	header map[string]string
	values context.Context
	// version is the MCP-Protocol-Version the request carried, "" for none.
	version string
	// answerStream is the session stream its answer became; nil while it
	// is not one (and for a JSON answer). It outlives the POST's
	// connection: the client may resume it with another.
	answerStream *eventStream
	// answered is set once the owner handed the last of its answer.
	answered bool
}

// newSessionID returns a cryptographically random session id of visible
// ASCII characters.
func newSessionID() string { return rand.Text() }

// startSession starts a session whose first message is the initialize x, for
// the principal owner; its work counts against the executor client
// client names (HTTPOptions.ClientKey's, or the principal's), the zero name
// for a client of its own; creator is the client that creates it. The
// caller then hands it x. It returns nil when MaxSessions are live, or
// MaxClientSessions of the creator's.
func (h *HTTPHandler) startSession(x *httpExchange, owner string, client, creator clientName) *httpSession {
	s := &httpSession{
		id:      newSessionID(),
		owner:   owner,
		creator: creator,
		h:       h,
		posts:   make(chan *httpExchange),
		ctl:     make(chan any),
		done:    make(chan struct{}),
		streams: make(map[uint64]*eventStream),
		changes: newChangeBox(),
	}
	if !h.sessions.add(s) {
		return nil
	}
	if client == (clientName{}) {
		client = sessionClientName(s.id)
	}
	s.client = h.clients.acquire(client)
	s.conn = newConnection(connConfig{
		dispatcher:       h.dispatcher,
		out:              s,
		sub:              s.client.client.NewSubmitter(),
		log:              h.opts.Logger,
		requestTimeout:   h.opts.RequestTimeout,
		transport:        TransportStreamableHTTP,
		maxSubscriptions: h.opts.MaxSubscriptions,
		sessionID:        s.id,
		changes:          s.changes,
		observer:         h.opts.Observer,
	})
	s.creating = x
	s.standalone = s.newStream()
	s.standalone.standalone = true
	if !h.ownsExec {
		s.executorDone = h.executor.Done()
	}
	// The idle timer reports through ctl rather than being a case of the
	// loop's select: a timer channel costs each select that waits on it a
	// trip through the timer heap.
	s.idle = time.AfterFunc(h.opts.SessionIdleTimeout, func() { s.control(idleTimerFired{}) })
	s.touch()
	h.changes.add(s.changes)
	go s.loop()
	return s
}

// loop is the session's owner: it serves every event of the session until
// the session ends (DELETE, idle expiry, a failed initialize, or the
// handler's Close).
func (s *httpSession) loop() {
	defer s.end()
	for !s.ended {
		var err error
		select {
		case x := <-s.postsReady():
			err = s.onPost(x)
		case ev := <-s.ctl:
			s.onControl(ev)
		case o := <-s.conn.sub.Outcomes():
			err = s.conn.onOutcome(o)
		case call := <-s.conn.calls:
			err = s.conn.onPeerCall(call)
		case <-s.changes.signal:
			if s.shedAsked.Swap(false) {
				s.shedReplay()
			}
			err = s.conn.onChanges(s.changes.take())
		case <-s.executorDone:
			s.executorDone = nil
			err = ErrExecutorClosed
		}
		if errors.Is(err, ErrExecutorClosed) {
			s.conn.onExecutorClosed()
		}
	}
}

// postsReady is the channel of POSTed messages, nil while the connection
// holds its bound of messages behind an initialize.
func (s *httpSession) postsReady() <-chan *httpExchange {
	if s.conn.holdFull() {
		return nil
	}
	return s.posts
}

// end ends the session: its work is cancelled, it leaves the table, and
// every goroutine waiting on it is released by done.
func (s *httpSession) end() {
	s.h.sessions.remove(s)
	s.h.changes.remove(s.changes)
	s.conn.close()
	if s.client != nil {
		s.h.clients.release(s.client)
	}
	s.idle.Stop()
	for _, l := range s.streams {
		s.dropStream(l)
	}
	close(s.done)
}

// post hands x to the session's owner; false when the session has ended.
func (s *httpSession) post(x *httpExchange) bool {
	select {
	case s.posts <- x:
		return true
	case <-s.done:
		return false
	}
}

// control hands ev to the session's owner; false when the session has
// ended.
func (s *httpSession) control(ev any) bool {
	select {
	case s.ctl <- ev:
		return true
	case <-s.done:
		return false
	}
}

// onPost admits a POSTed message: its version header must name the
// negotiated version (or be absent), then it goes to the connection, and
// its answer to x.
func (s *httpSession) onPost(x *httpExchange) error {
	if s.expired() {
		s.handPlain(x, http.StatusNotFound, httpErrorFrame(http.StatusNotFound, "Session not found"))
		return nil
	}
	s.writers++
	s.touch()
	negotiated := s.conn.session.ProtocolVersion
	switch {
	case x != s.creating && x.version != "" && x.version != negotiated:
		s.handPlain(x, http.StatusBadRequest, httpErrorFrame(http.StatusBadRequest, versionMismatch(x.version, negotiated)))
		return nil
	case x.msg.env.kind == kindArray && !AcceptsBatches(negotiated):
		s.handPlain(x, http.StatusBadRequest, errorFrame("", errBatchRefused))
		return nil
	}
	return s.conn.onMessage(message{env: x.msg.env, size: x.msg.size, route: x, header: x.header, values: x.values, hold: x.msg.res, raw: x.msg.raw})
}

// send and answer make the session its connection's outlet: a request's
// frames go to its POST, as one JSON answer when the response is its only
// frame, else as a stream of the session; the connection's own frames go to
// the session's GET stream.
func (s *httpSession) send(r route, frame []byte, done chan<- peerReply) error {
	l := s.standalone
	if x, ok := r.(*httpExchange); ok {
		if x.answerStream == nil {
			s.startStream(x)
		}
		l = x.answerStream
	}
	seq := s.appendEvent(l, frame)
	if done != nil {
		if l.writer == nil {
			done <- peerReply{} // kept for the client to resume: as good as written
		} else {
			l.acks = append(l.acks, streamAck{seq: seq, done: done})
		}
	}
	s.pump(l)
	return nil
}

func (s *httpSession) answer(r route, frame []byte) error {
	x, ok := r.(*httpExchange)
	if !ok || x.answered {
		return nil
	}
	x.answered = true
	x.msg.holdAnswer(frame)
	if x == s.creating {
		s.creating = nil
		if frame == nil || frameErrorCode(frame) != 0 {
			s.ended = true // never initialized: the session ends with this answer
		}
	}
	if l := x.answerStream; l != nil {
		if frame != nil {
			s.appendEvent(l, frame)
		}
		l.ended = true
		s.pump(l)
		return nil
	}
	switch {
	case frame != nil:
		s.handPlain(x, http.StatusOK, frame)
	case x.msg.isRequest():
		s.handPlain(x, 0, nil) // cancelled: a stream that ends with no event
	default:
		s.handPlain(x, http.StatusAccepted, nil)
	}
	return nil
}

// startStream turns x's answer into a stream of the session. In 2025-11-25
// its first event is the priming event (an id, a retry delay, no data), from
// which the client can resume it.
func (s *httpSession) startStream(x *httpExchange) {
	l := s.newStream()
	x.answerStream = l
	if !x.gone {
		l.writer, x.streamWriter.stream = &x.streamWriter, l
	}
	if s.conn.session.ProtocolVersion >= ProtocolVersion20251125 {
		l.retry = s.h.opts.SSERetry
		s.appendEvent(l, nil)
	}
}

// handPlain hands x its whole answer: status and body (status 0: an empty
// stream). x carries nothing of the session after it, so the session lets
// go of it at once (leave) rather than when its writer reports: the writer
// makes no report of this batch, and the POST is answered without another
// turn of the owner.
func (s *httpSession) handPlain(x *httpExchange, status int, body []byte) {
	x.answered = true
	if x.gone {
		return
	}
	b := streamBatch{plain: status != 0, status: status, body: body, final: true, unreported: true}
	x.batches <- b // x is idle: nothing was handed to it before
	s.leave(&x.streamWriter)
}

// pump hands l's writer the events it has not had yet, when it is idle.
func (s *httpSession) pump(l *eventStream) {
	w := l.writer
	if w == nil || w.busy || w.gone {
		return
	}
	events, final := l.batch()
	if len(events) == 0 && !final {
		return
	}
	w.batches <- streamBatch{events: events, final: final, last: l.last()}
	w.busy, l.handed = true, l.last()
}

// release ends w's response: at once when it is idle, else after the batch
// it is writing. Its stream is no longer its.
func (s *httpSession) release(w *streamWriter) {
	w.stream = nil
	switch {
	case w.gone:
	case w.busy:
		w.closing = true
	default:
		w.batches <- streamBatch{final: true}
		w.busy = true
	}
}

// writerReport is a streamWriter's report of the batch it was handed: ok is
// false when writing it failed (the client stopped reading or left).
type writerReport struct {
	w     *streamWriter
	x     *httpExchange // the POST w answers; nil for a GET
	batch streamBatch
	ok    bool
}

// writerGone says a streamWriter's client left before it was handed a final
// batch: nothing more can be written on it.
type writerGone struct {
	w *streamWriter
	x *httpExchange // the POST w answers; nil for a GET
}

// getRequest asks for a stream to carry on a GET: the session's GET stream,
// or (lastEventID set) the stream to resume after that event.
type getRequest struct {
	w           *streamWriter
	lastEventID string
	version     string // its MCP-Protocol-Version header, "" for none
	reply       chan getVerdict
}

// getVerdict answers a getRequest: status 0 admits it, with the keep-alive
// period of what it carries; otherwise the GET is refused status, message.
type getVerdict struct {
	status    int
	message   string
	keepAlive time.Duration
}

// deleteRequest ends the session.
type deleteRequest struct{ reply chan struct{} }

// idleTimerFired says the session's idle timer fired.
type idleTimerFired struct{}

// onControl takes an event from the session's control channel.
func (s *httpSession) onControl(ev any) {
	switch ev := ev.(type) {
	case writerReport:
		s.onReport(ev)
	case writerGone:
		s.onGone(ev)
	case getRequest:
		ev.reply <- s.onGet(ev)
	case deleteRequest:
		s.ended = true
		close(ev.reply)
	case idleTimerFired:
		s.onIdleTimer()
	case func():
		ev() // runs on the owner: how tests look at the session's state
	}
}

// onReport takes a writer's report of its last batch.
func (s *httpSession) onReport(r writerReport) {
	w := r.w
	w.busy = false
	l := w.stream
	if l != nil && !r.batch.plain && r.ok {
		l.sent = max(l.sent, r.batch.last)
		s.acknowledge(l, l.sent)
	}
	switch {
	case r.batch.final || !r.ok:
		s.leave(w)
		if l != nil && l.ended && l.delivered() {
			s.dropStream(l) // the client has it all: nothing to resume
		}
	case w.closing:
		s.release(w)
	case l != nil:
		s.pump(l)
	}
}

// onGone records that a writer's client left. A POST whose answer had not
// become a stream is cancelled, as its client can no longer get it; a
// stream goes on, kept for the client to resume.
func (s *httpSession) onGone(g writerGone) {
	s.leave(g.w)
	if x := g.x; x != nil && x.answerStream == nil && !x.answered {
		x.answered = true
		s.conn.cancelRoute(x)
		if x == s.creating {
			s.ended = true // its initialize will never be answered
		}
	}
}

// leave detaches w from the session: it carries nothing any more, and what
// its stream owes a Peer call is settled (the events are kept).
func (s *httpSession) leave(w *streamWriter) {
	if w.gone {
		return
	}
	w.gone = true
	s.writers--
	s.touch()
	if l := w.stream; l != nil && l.writer == w {
		l.writer = nil
		s.acknowledge(l, l.last())
	}
	w.stream = nil
}

// acknowledge replies to the Peer calls waiting for events up to seq.
func (s *httpSession) acknowledge(l *eventStream, seq uint64) {
	n := 0
	for _, a := range l.acks {
		if a.seq > seq {
			break
		}
		a.done <- peerReply{}
		n++
	}
	l.acks = slices.Delete(l.acks, 0, n)
}

// onGet admits a GET: it carries the session's GET stream, or resumes the
// stream its Last-Event-ID names after that event.
func (s *httpSession) onGet(g getRequest) getVerdict {
	if s.expired() {
		return getVerdict{status: http.StatusNotFound, message: "Session not found"}
	}
	s.touch()
	if negotiated := s.conn.session.ProtocolVersion; g.version != "" && g.version != negotiated {
		return getVerdict{status: http.StatusBadRequest, message: versionMismatch(g.version, negotiated)}
	}
	l := s.standalone
	after := l.sent
	if g.lastEventID != "" {
		n, seq, ok := parseEventID(g.lastEventID)
		l = s.streams[n]
		if !ok || l == nil {
			return getVerdict{status: http.StatusBadRequest, message: "Bad Request: Last-Event-ID names no stream of this session"}
		}
		if why := l.replayable(seq); why != "" {
			return getVerdict{status: http.StatusBadRequest, message: "Bad Request: Last-Event-ID " + why}
		}
		after = seq
	}
	if l.standalone && l.writer != nil {
		return getVerdict{status: http.StatusConflict, message: "Conflict: the session's GET stream is open on another connection"}
	}
	if old := l.writer; old != nil {
		// An event goes on one connection only: the resuming one. What the
		// old one was handed is settled now; the events are kept.
		s.acknowledge(l, l.handed)
		s.release(old)
	}
	s.writers++
	l.writer, g.w.stream = g.w, l
	l.handed = max(after, l.first-1)
	if l.standalone && g.lastEventID == "" && s.conn.session.ProtocolVersion >= ProtocolVersion20251125 {
		l.retry = s.h.opts.SSERetry
		s.appendEvent(l, nil)
	}
	s.pump(l)
	keepAlive := time.Duration(0)
	if l.standalone {
		keepAlive = s.h.opts.KeepAlive
	}
	return getVerdict{keepAlive: keepAlive}
}

// versionMismatch is the refusal of a request whose MCP-Protocol-Version is
// not the one its session negotiated.
func versionMismatch(got, negotiated string) string {
	return "Bad Request: unsupported MCP-Protocol-Version " + strconv.Quote(got) + " (the session negotiated " + strconv.Quote(negotiated) + ")"
}

// touch records that the session is in use now.
func (s *httpSession) touch() { s.lastUsed = time.Now() }

// expired reports whether nothing of the session has been in use for
// SessionIdleTimeout (no request pending, no connection carrying its
// answers, nothing new since); then it has ended, whether or not its idle
// timer fired yet.
func (s *httpSession) expired() bool {
	if s.creating == nil && s.conn.pending() == 0 && s.writers == 0 && time.Since(s.lastUsed) >= s.h.opts.SessionIdleTimeout {
		s.ended = true
	}
	return s.ended
}

// onIdleTimer ends the session once it has expired, or sets the timer for
// when it may.
func (s *httpSession) onIdleTimer() {
	if !s.expired() {
		s.idle.Reset(max(s.h.opts.SessionIdleTimeout-time.Since(s.lastUsed), time.Millisecond))
	}
}

// newStream adds a new stream to the session, dropping the oldest ended one
// beyond maxSessionStreams.
func (s *httpSession) newStream() *eventStream {
	s.nextStream++
	l := &eventStream{number: s.nextStream, first: 1}
	s.streams[l.number] = l
	s.order = append(s.order, l.number)
	if len(s.order) > maxSessionStreams {
		s.dropEndedStream()
	}
	return l
}

// appendEvent adds an event to l (nil frame: a priming event), enforces the
// replay budget (older events may be dropped, never this one) and returns
// its sequence number.
func (s *httpSession) appendEvent(l *eventStream, frame []byte) uint64 {
	if len(l.events) == maxStreamEvents {
		s.dropOldestOf(l)
	}
	l.events = append(l.events, frame)
	s.charge(l, len(frame))
	seq := l.last()
	s.enforceReplayBudget(l, seq)
	return seq
}

// charge changes the bytes l keeps by delta, for the stream, the session and
// the handler at once.
func (s *httpSession) charge(l *eventStream, delta int) {
	l.bytes += delta
	s.retained += int64(delta)
	s.h.replay.charge(s, int64(delta))
}

// dropOldestOf drops l's oldest event. A connection that was still to get
// it cannot go on without skipping it: its response ends, and the client,
// resuming, learns the event is gone.
func (s *httpSession) dropOldestOf(l *eventStream) {
	s.charge(l, -len(l.events[0]))
	l.events[0] = nil
	l.events = l.events[1:]
	l.first++
	if w := l.writer; w != nil && l.handed < l.first-1 {
		l.writer = nil
		s.acknowledge(l, l.last())
		s.release(w)
	}
}

// dropStream forgets l and its events: it can no longer be resumed.
func (s *httpSession) dropStream(l *eventStream) {
	if _, ok := s.streams[l.number]; !ok {
		return
	}
	delete(s.streams, l.number)
	s.order = slices.DeleteFunc(s.order, func(n uint64) bool { return n == l.number })
	s.charge(l, -l.bytes)
	l.first += uint64(len(l.events))
	l.events = nil
	s.acknowledge(l, ^uint64(0))
	if w := l.writer; w != nil {
		l.writer = nil
		s.release(w)
	}
}

// dropEndedStream drops the oldest ended stream that no connection is
// writing; it reports false when there is none.
func (s *httpSession) dropEndedStream() bool {
	for _, n := range s.order {
		if l := s.streams[n]; l.ended && !l.standalone && l.writer == nil {
			s.dropStream(l)
			return true
		}
	}
	return false
}

// dropOldestEvent frees some of what the session keeps: its oldest ended
// stream, else the oldest event of its oldest stream that keeps one, other
// than event keepSeq of stream keep. It reports false when there is nothing
// to drop.
func (s *httpSession) dropOldestEvent(keep *eventStream, keepSeq uint64) bool {
	if s.dropEndedStream() {
		return true
	}
	for _, n := range s.order {
		l := s.streams[n]
		if len(l.events) == 0 || l == keep && l.first == keepSeq {
			continue
		}
		s.dropOldestOf(l)
		return true
	}
	return false
}

// enforceReplayBudget drops the oldest events kept until the session is
// within MaxSessionReplayBytes, never event seq of l, just appended; then,
// when the handler's sessions together keep more than MaxReplayBytes, the
// session keeping the most gives bytes back: this one at once, another when
// its owner takes the request (shedReplay).
func (s *httpSession) enforceReplayBudget(l *eventStream, seq uint64) {
	for s.retained > int64(s.h.opts.MaxSessionReplayBytes) && s.dropOldestEvent(l, seq) {
	}
	for {
		victim := s.h.replay.overBy()
		switch {
		case victim == nil:
			return
		case victim != s:
			victim.askShed()
			return
		case !s.dropOldestEvent(l, seq):
			return
		}
	}
}

// askShed asks the session's owner, from any goroutine, to give bytes back
// (shedReplay) when it next wakes; it never blocks.
func (s *httpSession) askShed() {
	s.shedAsked.Store(true)
	s.changes.wake()
}

// shedReplay gives bytes back while the handler's sessions keep more than
// MaxReplayBytes and this one keeps the most.
func (s *httpSession) shedReplay() {
	for s.h.replay.overBy() == s && s.dropOldestEvent(nil, 0) {
	}
}

// replayBudget bounds the bytes of the SSE events all sessions of one
// handler keep for Last-Event-ID replay (MaxReplayBytes). Each session's
// owner charges what it keeps; the bytes themselves stay with their owners.
// It is shared by every session's owner, so a mutex guards it: each call is
// a few arithmetic steps, never held across anything else, and no other
// lock is taken under it.
type replayBudget struct {
	total int64 // read-only

	mu   sync.Mutex
	used int64
	kept map[*httpSession]int64
}

// charge records that s keeps delta more bytes.
func (b *replayBudget) charge(s *httpSession, delta int64) {
	if delta == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used += delta
	if n := b.kept[s] + delta; n > 0 {
		b.kept[s] = n
	} else {
		delete(b.kept, s)
	}
}

// overBy returns, when the sessions keep more than the total, the one that
// keeps the most; nil otherwise.
func (b *replayBudget) overBy() *httpSession {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used <= b.total {
		return nil
	}
	var most *httpSession
	for s, n := range b.kept {
		if most == nil || n > b.kept[most] || n == b.kept[most] && s.id < most.id {
			most = s
		}
	}
	return most
}

// sessionTable holds the live sessions by id, up to max. It is shared by
// every request's goroutine (lookups) and the sessions' owners (which leave
// it when they end), so a mutex guards it: each call is one map operation,
// never held across anything else.
type sessionTable struct {
	max       int // read-only
	perClient int // read-only; 0: no share, max alone bounds a client

	mu       sync.Mutex
	byID     map[string]*httpSession
	byClient map[clientName]int // live sessions by the client that created them
}

func (t *sessionTable) get(id string) *httpSession {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.byID[id]
}

// add registers s; false when max sessions are live, or perClient of the
// client that creates it (s.creator).
func (t *sessionTable) add(s *httpSession) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.byID) >= t.max || t.perClient > 0 && t.byClient[s.creator] >= t.perClient {
		return false
	}
	t.byID[s.id] = s
	t.byClient[s.creator]++
	return true
}

func (t *sessionTable) remove(s *httpSession) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.byID[s.id] != s {
		return
	}
	delete(t.byID, s.id)
	if t.byClient[s.creator]--; t.byClient[s.creator] <= 0 {
		delete(t.byClient, s.creator)
	}
}

func (t *sessionTable) all() []*httpSession {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Collect(maps.Values(t.byID))
}

// errSessionCapacity refuses an initialize beyond MaxSessions.
var errSessionCapacity = &RPCError{Code: CodeInternalError, Message: "Server session capacity exhausted"}
