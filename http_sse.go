package main

import (
	"bytes"
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
//
// The events kept are a contiguous run: dropping one drops every older one
// too, so a replay never skips an event silently. Their frames' bytes are
// charged to the session's replay budget (see replayBudget) while kept.
type eventLog struct {
	stream uint64       // the stream's number in its session; read-only
	sess   *httpSession // charged for the bytes kept; read-only, nil charges nobody

	mu      sync.Mutex
	first   uint64        // sequence number of events[0]; guarded by mu
	events  [][]byte      // frames, without their newline; nil is the priming event; guarded by mu
	bytes   int           // the frames' total length; guarded by mu
	sent    uint64        // events up to this sequence number were written to a connection; guarded by mu
	ended   bool          // no event follows; guarded by mu
	resumed bool          // a GET with Last-Event-ID carries the stream now, not its first connection; guarded by mu
	changed chan struct{} // closed and replaced on every change; guarded by mu
}

func newEventLog(stream uint64, sess *httpSession) *eventLog {
	return &eventLog{stream: stream, sess: sess, first: 1, changed: make(chan struct{})}
}

// chargeLocked changes the bytes kept by delta, for the log, its session and
// the handler at once, so that the counts always agree with what is kept.
func (l *eventLog) chargeLocked(delta int) {
	l.bytes += delta
	if l.sess != nil && delta != 0 {
		l.sess.retained.Add(int64(delta))
		l.sess.budget.used.Add(int64(delta))
	}
}

// changeLocked wakes the readers waiting for a change.
func (l *eventLog) changeLocked() {
	close(l.changed)
	l.changed = make(chan struct{})
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
// sequence number; after end it adds nothing and returns 0. The session's
// replay budget is enforced after the event is added: older events may be
// dropped, never this one.
func (l *eventLog) append(frame []byte) uint64 {
	l.mu.Lock()
	if l.ended {
		l.mu.Unlock()
		return 0
	}
	if len(l.events) == maxLogEvents {
		l.dropFrontLocked()
	}
	l.events = append(l.events, frame)
	l.chargeLocked(len(frame))
	l.changeLocked()
	seq := l.first + uint64(len(l.events)) - 1
	l.mu.Unlock()
	if l.sess != nil {
		l.sess.enforceReplayBudget(l, seq)
	}
	return seq
}

// dropFrontLocked drops the oldest event kept.
func (l *eventLog) dropFrontLocked() {
	l.chargeLocked(-len(l.events[0]))
	l.events[0] = nil
	l.events = l.events[1:]
	l.first++
}

// dropOldest drops the oldest event kept, unless it is event keep (0: none);
// it reports whether it dropped one.
func (l *eventLog) dropOldest(keep uint64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.events) == 0 || l.first == keep {
		return false
	}
	l.dropFrontLocked()
	l.changeLocked()
	return true
}

// release ends the stream and drops every event it kept: it can no longer
// be replayed, and a reader behind its end stops (see after).
func (l *eventLog) release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.chargeLocked(-l.bytes)
	l.first += uint64(len(l.events))
	l.events = nil
	l.ended = true
	l.changeLocked()
}

// end marks the stream complete: readers stop after its last event.
func (l *eventLog) end() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.ended {
		l.ended = true
		l.changeLocked()
	}
}

// isEnded reports whether the stream is complete.
func (l *eventLog) isEnded() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ended
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

// unsent returns the sequence number after which the events not yet written
// to a connection begin: a new GET connection of the standalone stream
// starts there (at the oldest one still kept).
func (l *eventLog) unsent() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return max(l.sent, l.first-1)
}

// replayable reports why a resumption after event seq cannot be served: ""
// when it can, else what is wrong with seq.
func (l *eventLog) replayable(seq uint64) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch last := l.first + uint64(len(l.events)) - 1; {
	case seq > last:
		return "names an event this stream did not send"
	case seq+1 < l.first:
		return "names an event whose successors are no longer kept"
	}
	return ""
}

// after returns the events after sequence number seq, the sequence number
// of the last one, whether the stream ended, and the channel closed at the
// next change. gap reports that events right after seq were dropped before
// they could be returned: the reader cannot go on without skipping them.
func (l *eventLog) after(seq uint64) (events [][]byte, last uint64, ended, gap bool, changed <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if seq+1 < l.first {
		return nil, seq, l.ended, true, l.changed
	}
	last = l.first + uint64(len(l.events)) - 1
	if seq < last {
		events = l.events[seq+1-l.first : len(l.events) : len(l.events)]
	}
	return events, max(last, seq), l.ended, false, l.changed
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
		buf = append(buf, bytes.TrimSuffix(frame, []byte("\n"))...)
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
		events, last, ended, gap, changed := l.after(seq)
		if gap {
			return // the client resumes, and learns the events are gone
		}
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
