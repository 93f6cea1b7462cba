package main

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"sync/atomic"
	"time"
)

// Initialize-era sessions of the HTTP transport (2025-03-26, 2025-06-18,
// 2025-11-25).
//
// A session is a connection (conn.go) whose owner is the session's own
// goroutine (loop), exactly as the coordinator owns a stdio connection: the
// goroutines of HTTP requests never touch its state. A POST hands its
// message to the owner and then writes the answer the owner hands back; a GET
// asks the owner for a stream to carry and writes what it hands; a DELETE
// asks it to end. The owner never waits on a client: what a connection is
// slow to take stays in the stream's events, which are bounded (see
// replayBudget). The owner runs only while the session has work: an idle
// session parks, without a goroutine, until its next event
// (http_session_run.go).

// httpSession is one initialize-era session. The fields up to done are set
// before the loop starts and read-only after; run, idleAt and shedAsked are
// atomic; the rest are owned by the session's owner (see
// http_session_run.go).
type httpSession struct {
	id       string
	idHeader []string   // {id}: the Mcp-Session-Id of its answers, built once (see responseHeaderValues)
	owner    string     // principalBinding of its creator ("" without authorization)
	creator  clientName // the client that created it, for MaxClientSessions
	h        *HTTPHandler
	posts    chan *httpExchange // messages POSTed to the session
	ctl      chan any           // GETs, DELETEs, the reports of its writers and its idle timer (see onControl)
	done     chan struct{}      // closed when the session has ended

	// run is the session's run state: parked or active, ended, and the
	// callers handing its owner an event (see enter). idleAt is when it
	// became idle (nanoseconds since the table's epoch), set by the owner
	// as it parks with no stream open, for the table to rank it (see
	// idleSince).
	run    atomic.Int64
	idleAt atomic.Int64
	// serve starts an owner (startOwner), as a value made once: calling it
	// costs no allocation.
	serve func()

	// shedAsked says the handler's replay budget asks the session for bytes
	// back; it is set by any session's owner, which then wakes this one
	// through changes (see askShed), so that the loop waits on one channel
	// for both.
	shedAsked atomic.Bool

	conn    *connection
	client  *clientEntry // whose share the session's work counts against
	sub     submitter    // its connection's
	changes *changeBox
	// creating is the initialize that creates the session, until it is
	// answered: a failure ends the session.
	creating *httpExchange

	streams    []*eventStream // oldest first; at most maxSessionStreams and the one being made
	nextStream uint64
	standalone *eventStream // the GET stream of server-initiated messages
	retained   int64        // bytes of the events kept

	writers   int             // connections carrying the session's answers now
	handed    []*streamWriter // writers of plain answers not yet told (handOver)
	lastUsed  time.Time       // when a request or a writer last came or went
	idleTimer *time.Timer
	ended     bool
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
	// exec is the room of its message's execution in the session's
	// connection (message.space), part of this record so that it costs no
	// allocation of its own.
	exec runtimeExecution
	// in is the room of the body and its reservation (readBody).
	in postInput
}

// startSession starts a session whose first message is the initialize x, for
// the principal owner; its work counts against the executor client
// client names (HTTPOptions.ClientKey's, or the principal's), the zero name
// for a client of its own; creator is the client that creates it. The
// caller then hands it x. When MaxSessions are live it takes the place of
// an idle session, which it ends (see sessionTable.add); it returns nil when
// there is none it may take.
func (h *HTTPHandler) startSession(x *httpExchange, owner string, client, creator clientName) *httpSession {
	s := &httpSession{
		id:      newSessionID(),
		owner:   owner,
		creator: creator,
		h:       h,
		posts:   make(chan *httpExchange),
		ctl:     make(chan any),
		done:    make(chan struct{}),
		changes: newChangeBox(),
	}
	s.idHeader = []string{s.id}
	s.serve = s.startOwner
	ok, taken := h.sessions.add(s)
	if taken != nil {
		taken.end()
	}
	if !ok {
		return nil
	}
	if client == (clientName{}) {
		client = sessionClientName(s.id)
	}
	s.client = h.clients.acquire(client)
	s.client.client.initSubmitter(&s.sub, sessionOutcomeBuffer)
	s.conn = newConnection(connConfig{
		dispatcher:       h.dispatcher,
		out:              s,
		sub:              &s.sub,
		log:              h.opts.Logger,
		requestTimeout:   h.opts.RequestTimeout,
		transport:        TransportStreamableHTTP,
		maxSubscriptions: h.opts.MaxSubscriptions,
		sessionID:        s.id,
		changes:          s.changes,
		beforeChanges: func() {
			if s.shedAsked.Swap(false) {
				s.shedReplay()
			}
		},
		observer: h.opts.Observer,
	})
	s.creating = x
	s.standalone = s.newStream()
	s.standalone.standalone = true
	if !h.ownsExec {
		s.conn.executorDone = h.executor.done
	}
	// The idle timer reports through ctl rather than being a case of the
	// loop's select: a timer channel costs each select that waits on it a
	// trip through the timer heap.
	s.idleTimer = time.AfterFunc(h.opts.SessionIdleTimeout, func() { s.control(idleTimerFired{}) })
	s.touch()
	h.changes.add(s)
	s.serve()
	return s
}

// sessionOutcomeBuffer is the capacity of a session's Outcomes channel,
// held for the session's life: a session runs its requests one after
// another more often than many at once, and an outcome that finds it full
// waits in the executor's mailbox (outcomeBuffer's 64 cost 5 KB a session).
const sessionOutcomeBuffer = 4

// The session is the HTTP side of its connection's owner loop: its input is
// the POSTs, its own events the GETs, DELETEs, its writers' reports and its
// idle timer (onControl).

// input is the channel of POSTed messages, nil while the connection holds
// its bound of messages behind an initialize.
func (s *httpSession) input() <-chan *httpExchange {
	if s.conn.holdFull() {
		return nil
	}
	return s.posts
}

// onInput and onEvent take an event a caller handed over, and with it the
// caller's count (see enter).
func (s *httpSession) onInput(x *httpExchange) error {
	s.exit()
	return s.onPost(x)
}

func (s *httpSession) events() <-chan any { return s.ctl }
func (s *httpSession) onEvent(ev any) error {
	s.exit()
	s.onControl(ev)
	return nil
}

func (s *httpSession) finished() (bool, error) { return s.ended, nil }

// drain hands over the plain answers held: what else the connection answers
// goes to the session's streams at once.
func (s *httpSession) drain() error {
	s.handOver()
	return nil
}

// end ends the session: its work is cancelled, it leaves the table, and
// every goroutine waiting on it is released by done. It runs on the
// session's owner, or on the goroutine that took the session's place while
// it was parked (claimIdle).
func (s *httpSession) end() {
	s.run.Or(runEnded)
	s.h.sessions.remove(s)
	s.h.changes.remove(s)
	s.conn.close()
	if s.client != nil {
		s.h.clients.release(s.client)
	}
	s.idleTimer.Stop()
	for len(s.streams) > 0 {
		s.dropStream(s.streams[0])
	}
	s.handOver()
	close(s.done)
}

// onPost admits a POSTed message: its version header must name the
// negotiated version (or be absent), then it goes to the connection, and
// its answer to x.
func (s *httpSession) onPost(x *httpExchange) error {
	if s.expired() {
		s.handPlain(x, http.StatusNotFound, sessionRefusal("Session not found"))
		return nil
	}
	s.writers++
	s.touch()
	negotiated := s.conn.session.ProtocolVersion
	switch {
	case x != s.creating && x.version != "" && x.version != negotiated:
		s.handPlain(x, http.StatusBadRequest, sessionRefusal(versionMismatch(x.version, negotiated)))
		return nil
	case x.msg.env.kind == kindArray && !acceptsBatches(negotiated):
		s.handPlain(x, http.StatusBadRequest, errorAnswer("", errBatchRefused))
		return nil
	}
	return s.conn.onMessage(message{env: x.msg.env, size: x.msg.size, route: x, header: x.header, values: x.values, hold: x.msg.res, raw: x.msg.raw, space: &x.exec})
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

func (s *httpSession) answer(r route, f finalFrame) error {
	x, ok := r.(*httpExchange)
	if !ok || x.answered {
		return nil
	}
	x.answered = true
	if x == s.creating {
		s.creating = nil
		if f.frame == nil || f.code != 0 {
			s.ended = true // never initialized: the session ends with this answer
		}
	}
	if l := x.answerStream; l != nil {
		if f.frame != nil {
			s.appendEvent(l, f.frame)
		}
		l.ended = true
		s.pump(l)
		return nil
	}
	switch {
	case f.frame != nil:
		s.handPlain(x, http.StatusOK, f)
	case x.msg.isRequest():
		s.handPlain(x, 0, noAnswer) // cancelled: a stream that ends with no event
	default:
		s.handPlain(x, http.StatusAccepted, noAnswer)
	}
	return nil
}

// sessionRefusal is the answer of a session's POST that the session refuses
// before its connection sees it (an HTTP 400 or 404, as httpErrorFrame
// builds them).
func sessionRefusal(message string) finalFrame {
	return errorAnswer("", &RPCError{Code: CodeInvalidRequest, Message: message})
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
	if dialectOf(s.conn.session.ProtocolVersion).ssePriming {
		l.retry = s.h.opts.SSERetry
		s.appendEvent(l, nil)
	}
}

// handPlain hands x its whole answer: status and body.frame (status 0: an
// empty stream). x carries nothing of the session after it, so the session lets
// go of it at once (leave) rather than when its writer reports: the writer
// makes no report of this batch, and the POST is answered without another
// turn of the owner. Its writer is told when the owner has taken every
// event that was ready (handOver), after the owner parked if the session
// is idle then: a client that got the last answer of an idle session finds
// it idle.
func (s *httpSession) handPlain(x *httpExchange, status int, body finalFrame) {
	x.answered = true
	if x.gone {
		return
	}
	x.handed = streamBatch{plain: status != 0, status: status, body: body.frame, code: body.code, final: true, unreported: true}
	s.handed = append(s.handed, &x.streamWriter)
	s.leave(&x.streamWriter)
}

// handOver tells the writers of the plain answers handed (handPlain) that
// their batch is there.
func (s *httpSession) handOver() {
	for _, w := range s.handed {
		w.ready <- struct{}{} // w is idle: nothing was handed to it before
	}
	clear(s.handed)
	s.handed = s.handed[:0]
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
	w.hand(streamBatch{events: events, final: final, last: l.last()})
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
		w.hand(streamBatch{final: true})
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
		l = s.stream(n)
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
	if l.standalone && g.lastEventID == "" && dialectOf(s.conn.session.ProtocolVersion).ssePriming {
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
		s.idleTimer.Reset(max(s.h.opts.SessionIdleTimeout-time.Since(s.lastUsed), time.Millisecond))
	}
}
