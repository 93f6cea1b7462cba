package main

import (
	"bytes"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Server-Sent Events of the HTTP transport. A 2026-07-28 stream is written
// straight to its response by the POST's goroutine. An initialize-era stream
// is an eventStream of its session, owned by the session's owner goroutine:
// every event gets an id (stream-sequence) and is kept, so that a client that
// lost the connection can resume the stream with a GET carrying
// Last-Event-ID and get what it missed. The connections that carry a
// session's streams are streamWriters: each is the goroutine of one POST or
// GET, which writes what the owner hands it.

// maxStreamEvents bounds the events an eventStream keeps for replay; older
// ones are dropped and cannot be replayed.
const maxStreamEvents = 256

// eventStream is one initialize-era SSE stream: the events sent on it, kept
// for replay, and the connection that carries it now. Owned by its session's
// owner goroutine.
//
// The events kept are a contiguous run: dropping one drops every older one
// too, so a replay never skips an event silently. Their frames' bytes are
// charged to the session's replay budget while kept.
type eventStream struct {
	number uint64
	first  uint64   // sequence number of events[0]; the first event is 1
	events [][]byte // frames; nil is a priming event (an id, no data)
	bytes  int      // the frames' total length
	ended  bool     // the final event is in: nothing follows
	// writer is the connection that carries the stream now; nil while none
	// does (its client left, or a GET stream nobody opened yet). handed is
	// the last event handed to writer, sent the last one any connection
	// wrote.
	writer       *streamWriter
	handed, sent uint64
	acks         []streamAck // replies owed once an event is written, oldest first
	standalone   bool        // the session's GET stream, which never ends by itself
	// retry is the reconnection delay its priming events announce (0:
	// the stream has none, before 2025-11-25).
	retry time.Duration
}

// streamAck is a reply owed to a Peer call once event seq is written.
type streamAck struct {
	seq  uint64
	done chan<- peerReply
}

// last is the sequence number of the newest event, first-1 when none is kept.
func (l *eventStream) last() uint64 { return l.first + uint64(len(l.events)) - 1 }

// eventID returns the SSE id of the event with sequence number seq.
func (l *eventStream) eventID(seq uint64) string {
	return strconv.FormatUint(l.number, 10) + "-" + strconv.FormatUint(seq, 10)
}

// parseEventID splits an id made by eventID.
func parseEventID(id string) (stream, seq uint64, ok bool) {
	a, b, found := strings.Cut(strings.TrimSpace(id), "-")
	if !found {
		return 0, 0, false
	}
	stream, err1 := strconv.ParseUint(a, 10, 64)
	seq, err2 := strconv.ParseUint(b, 10, 64)
	return stream, seq, err1 == nil && err2 == nil
}

// replayable reports why a resumption after event seq cannot be served: ""
// when it can, else what is wrong with seq.
func (l *eventStream) replayable(seq uint64) string {
	switch {
	case seq > l.last():
		return "names an event this stream did not send"
	case seq+1 < l.first:
		return "names an event whose successors are no longer kept"
	}
	return ""
}

// delivered reports whether every event kept was written to a connection.
func (l *eventStream) delivered() bool { return l.sent >= l.last() }

// batch returns the events after handed for the writer, and whether the
// stream's last event is among them (or was handed before) and the stream
// ended: the writer's response ends with them.
func (l *eventStream) batch() (events []streamEvent, final bool) {
	for seq := max(l.handed+1, l.first); seq <= l.last(); seq++ {
		ev := streamEvent{id: l.eventID(seq), frame: l.events[seq-l.first]}
		if ev.frame == nil {
			ev.retry = l.retry
		}
		events = append(events, ev)
	}
	return events, l.ended && !l.standalone
}

// streamEvent is one event to write: frame (a newline-terminated JSON frame, or
// nil for an event without data) with id when it is not "", and retry when
// it is positive.
type streamEvent struct {
	id    string
	retry time.Duration
	frame []byte
}

// streamBatch is what the owner hands a streamWriter at once: events to
// write on its SSE stream, or, for a POST whose answer is not a stream, a
// plain HTTP answer (status, and body unless it is nil). final says the
// connection's response ends after it.
type streamBatch struct {
	events []streamEvent
	plain  bool
	status int
	body   []byte
	code   int // the JSON-RPC error code body carries, 0 for none
	final  bool
	last   uint64 // the sequence number of the last event, for the owner's bookkeeping
	// unreported says the owner let go of the writer when it handed this
	// final batch (see handPlain): the writer writes it and reports
	// nothing.
	unreported bool
}

// streamWriter is one connection that carries a session's answers: the
// goroutine of a POST (its answer, JSON or a stream) or of a GET (the
// session's stream, or a stream it resumes). The goroutine writes what the
// owner hands it, one batch at a time, and reports each on the session's
// control channel; it never touches session state. The fields after ready
// are owned by the session's owner.
type streamWriter struct {
	// handed is the batch the owner hands over, then signals on ready
	// (capacity 1: the owner hands a batch only while the writer is idle);
	// the writer reads handed only after it received from ready, which
	// orders the owner's write before it. A channel of batches would cost
	// two allocations (its buffer of pointers apart), this one.
	handed streamBatch
	ready  chan struct{}

	stream  *eventStream // what it carries now; nil for a POST whose answer is not a stream yet
	busy    bool         // a batch was handed and not yet reported
	closing bool         // its response is to end: the next batch handed is a final one
	gone    bool         // its goroutine left: nothing more is handed
}

// newStreamWriter returns an idle writer; the caller keeps it where it
// lives (the owner refers to it by its address).
func newStreamWriter() streamWriter { return streamWriter{ready: make(chan struct{}, 1)} }

// hand gives the idle writer b; the owner's side.
func (w *streamWriter) hand(b streamBatch) {
	w.handed = b
	w.ready <- struct{}{}
}

// take returns the batch handed after a receive from ready; the writer's
// side. It drops the writer's reference to the batch's frames.
func (w *streamWriter) take() streamBatch {
	b := w.handed
	w.handed = streamBatch{}
	return b
}

// sseWriter writes one HTTP response: a plain answer or SSE events. Each
// write and flush must finish within timeout (when positive): a client that
// stops reading fails the response instead of blocking its writer. Owned by
// the goroutine that serves the response.
type sseWriter struct {
	w      http.ResponseWriter
	values *responseHeaderValues // the handler's
	// rc is held by value, so that the writer costs no allocation of its
	// own beside whatever holds it.
	rc      http.ResponseController
	timeout time.Duration
	started bool // the response is an SSE stream whose header was sent
	failed  bool // a write failed: the connection is gone
}

// newSSEWriter returns the writer of the response w; the caller keeps it
// where it lives (its methods take its address).
func newSSEWriter(w http.ResponseWriter, timeout time.Duration, values *responseHeaderValues) sseWriter {
	return sseWriter{w: w, values: values, rc: *http.NewResponseController(w), timeout: timeout}
}

// responseHeaderValues are the values of the headers every answer carries,
// built once per handler: a slice assigned into a response's header map
// costs nothing, where Header.Set allocates one per call (and canonicalizes
// the name). They are shared by every response, so nothing may write into
// them: net/http only reads them, and a later Set or Add replaces or
// reallocates the slice (each has length and capacity 1).
type responseHeaderValues struct {
	json, sse, noCache, noBuffering []string
}

func newResponseHeaderValues() *responseHeaderValues {
	return &responseHeaderValues{
		json:        []string{mediaTypeJSON},
		sse:         []string{mediaTypeSSE},
		noCache:     []string{"no-cache, no-transform"},
		noBuffering: []string{"no"},
	}
}

// maxImplicitContentLength is the largest plain answer sent without a
// Content-Length header of its own: net/http adds it (without allocating)
// when a handler writes "under a few KB" (its buffer is 2 KiB) and returns
// without flushing, as a plain answer does; a larger one gets it from the
// handler, else it would be sent chunked.
const maxImplicitContentLength = 1024

// deadline bounds the next write; a response that cannot take deadlines is
// written without.
func (s *sseWriter) deadline() {
	if s.timeout > 0 {
		s.rc.SetWriteDeadline(time.Now().Add(s.timeout))
	}
}

// start sends the headers of an SSE response.
func (s *sseWriter) start() {
	if s.started {
		return
	}
	s.started = true
	h := s.w.Header()
	h["Content-Type"] = s.values.sse
	h["Cache-Control"] = s.values.noCache
	h["X-Accel-Buffering"] = s.values.noBuffering
	s.w.WriteHeader(http.StatusOK)
}

// plain answers status with body as application/json (no body: nil), within
// the write deadline.
func (s *sseWriter) plain(status int, body []byte) bool {
	s.deadline()
	if body == nil {
		s.w.WriteHeader(status)
		return true
	}
	h := s.w.Header()
	h["Content-Type"] = s.values.json
	if len(body) > maxImplicitContentLength {
		h["Content-Length"] = []string{strconv.Itoa(len(body))}
	}
	s.w.WriteHeader(status)
	s.w.Write(body)
	return true
}

// events writes evs and flushes them; it reports whether the writes
// succeeded.
func (s *sseWriter) events(evs []streamEvent) bool {
	s.start()
	if s.failed {
		return false
	}
	if len(evs) == 0 {
		return s.flush()
	}
	size := 0
	for _, ev := range evs {
		size += len(ev.frame) + len(ev.id) + 48
	}
	buf := make([]byte, 0, size)
	for _, ev := range evs {
		buf = appendStreamEvent(buf, ev)
	}
	return s.write(buf) && s.flush()
}

// appendStreamEvent appends ev in the SSE format.
func appendStreamEvent(buf []byte, ev streamEvent) []byte {
	if ev.id != "" {
		buf = append(buf, "id: "...)
		buf = append(buf, ev.id...)
		buf = append(buf, '\n')
	}
	if ev.retry > 0 {
		buf = append(buf, "retry: "...)
		buf = strconv.AppendInt(buf, ev.retry.Milliseconds(), 10)
		buf = append(buf, '\n')
	}
	if ev.frame != nil {
		buf = append(buf, "event: message\ndata: "...)
		buf = append(buf, bytes.TrimSuffix(ev.frame, []byte("\n"))...)
		buf = append(buf, '\n')
	} else {
		buf = append(buf, "data: \n"...)
	}
	return append(buf, '\n')
}

// comment writes an SSE comment (a keep-alive) and flushes.
func (s *sseWriter) comment() bool {
	s.start()
	return s.write([]byte(": keep-alive\n\n")) && s.flush()
}

func (s *sseWriter) write(b []byte) bool {
	if s.failed {
		return false
	}
	s.deadline()
	if _, err := s.w.Write(b); err != nil {
		s.failed = true
	}
	return !s.failed
}

func (s *sseWriter) flush() bool {
	if s.failed {
		return false
	}
	s.deadline()
	if err := s.rc.Flush(); err != nil {
		s.failed = true
	}
	return !s.failed
}

// writeBatch writes b on s and reports whether it succeeded.
func (s *sseWriter) writeBatch(b streamBatch) bool {
	if b.plain {
		return s.plain(b.status, b.body)
	}
	if len(b.events) == 0 && b.final && !s.started {
		s.start() // a stream that ends before its first event: an empty one
		return s.flush()
	}
	return s.events(b.events)
}
