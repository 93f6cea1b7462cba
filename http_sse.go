package main

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Server-Sent Events of the HTTP transport. A 2026-07-28 stream is written
// straight to its response. An initialize-era stream is an eventLog of its
// session: every event gets an id (stream-sequence) and is kept, so that a
// client that lost the connection can resume the stream with a GET carrying
// Last-Event-ID and get what it missed.

// maxLogEvents bounds the events an eventLog keeps for replay; older ones
// are dropped and cannot be replayed.
const maxLogEvents = 256

// eventLog is one initialize-era SSE stream: the events sent on it, kept for
// replay. Safe for concurrent use: the goroutine that produces the stream
// appends, the one whose connection carries it reads.
type eventLog struct {
	stream uint64 // the stream's number in its session; read-only

	mu      sync.Mutex
	first   uint64        // sequence number of events[0]; guarded by mu
	events  [][]byte      // frames, without their newline; nil is the priming event; guarded by mu
	sent    uint64        // events up to this sequence number were written to a connection; guarded by mu
	ended   bool          // no event follows; guarded by mu
	resumed bool          // a GET with Last-Event-ID carries the stream now, not its first connection; guarded by mu
	changed chan struct{} // closed and replaced on every append and at the end; guarded by mu
}

func newEventLog(stream uint64) *eventLog {
	return &eventLog{stream: stream, first: 1, changed: make(chan struct{})}
}

// eventID returns the SSE id of the event with sequence number seq.
func (l *eventLog) eventID(seq uint64) string {
	return strconv.FormatUint(l.stream, 10) + "-" + strconv.FormatUint(seq, 10)
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

// append adds an event (nil frame: the priming event) and returns its
// sequence number; after end it adds nothing and returns 0.
func (l *eventLog) append(frame []byte) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended {
		return 0
	}
	if len(l.events) == maxLogEvents {
		l.events[0] = nil
		l.events = l.events[1:]
		l.first++
	}
	l.events = append(l.events, frame)
	close(l.changed)
	l.changed = make(chan struct{})
	return l.first + uint64(len(l.events)) - 1
}

// end marks the stream complete: readers stop after its last event.
func (l *eventLog) end() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.ended {
		l.ended = true
		close(l.changed)
	}
}

// resume hands the stream to a resuming connection: its first connection,
// if still there, writes no more of it (an event goes on one stream only).
func (l *eventLog) resume() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.resumed = true
}

// isResumed reports whether a resuming connection carries the stream.
func (l *eventLog) isResumed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.resumed
}

// markSent records that the events up to seq were written to a connection.
func (l *eventLog) markSent(seq uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sent = max(l.sent, seq)
}

// delivered reports whether every event was written to a connection.
func (l *eventLog) delivered() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sent == l.first+uint64(len(l.events))-1
}

// after returns the events after sequence number seq, the sequence number
// of the last one, whether the stream ended, and the channel closed at the
// next change.
func (l *eventLog) after(seq uint64) (events [][]byte, last uint64, ended bool, changed <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	last = l.first + uint64(len(l.events)) - 1
	if seq < last {
		from := int(max(seq+1, l.first) - l.first)
		events = l.events[from:len(l.events):len(l.events)]
	}
	return events, max(last, seq), l.ended, l.changed
}

// sseWriter writes SSE events on one response. Each write and flush must
// finish within timeout (when positive): a client that stops reading fails
// the stream instead of blocking its writer.
type sseWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	started bool
	failed  bool // a write failed: the connection is gone
}

func newSSEWriter(w http.ResponseWriter, timeout time.Duration) *sseWriter {
	return &sseWriter{w: w, rc: http.NewResponseController(w), timeout: timeout}
}

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
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("X-Accel-Buffering", "no")
	s.w.WriteHeader(http.StatusOK)
}

// event writes one event: frame (a newline-terminated JSON frame, or nil for
// an event without data) with id when it is not "", and retry when it is
// positive. It reports whether the write succeeded; it does not flush.
func (s *sseWriter) event(id string, retry time.Duration, frame []byte) bool {
	s.start()
	if s.failed {
		return false
	}
	buf := make([]byte, 0, len(frame)+64)
	if id != "" {
		buf = append(buf, "id: "...)
		buf = append(buf, id...)
		buf = append(buf, '\n')
	}
	if retry > 0 {
		buf = append(buf, "retry: "...)
		buf = strconv.AppendInt(buf, retry.Milliseconds(), 10)
		buf = append(buf, '\n')
	}
	if frame != nil {
		buf = append(buf, "event: message\ndata: "...)
		buf = append(buf, strings.TrimSuffix(string(frame), "\n")...)
		buf = append(buf, '\n')
	} else {
		buf = append(buf, "data: \n"...)
	}
	buf = append(buf, '\n')
	return s.write(buf)
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

// follow writes l's events after sequence number seq to s until l ends and
// all are written, the connection fails or done is closed. With keepAlive
// positive it writes a comment after each quiet period of that length.
func (s *sseWriter) follow(l *eventLog, seq uint64, keepAlive time.Duration, done ...<-chan struct{}) {
	s.start()
	s.flush()
	var tick <-chan time.Time
	if keepAlive > 0 {
		t := time.NewTicker(keepAlive)
		defer t.Stop()
		tick = t.C
	}
	cases := make([]<-chan struct{}, 3)
	copy(cases, done)
	for {
		events, last, ended, changed := l.after(seq)
		for i, frame := range events {
			if frame != nil && !s.event(l.eventID(last-uint64(len(events)-1-i)), 0, frame) {
				return
			}
		}
		if len(events) > 0 {
			if !s.flush() {
				return
			}
			l.markSent(last)
		}
		seq = last
		if ended {
			return
		}
		select {
		case <-changed:
		case <-tick:
			if !s.comment() {
				return
			}
		case <-cases[0]:
			return
		case <-cases[1]:
			return
		case <-cases[2]:
			return
		}
	}
}
