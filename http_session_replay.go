package main

// What an initialize-era session (http_session.go) keeps of its SSE streams
// for Last-Event-ID replay, and the bounds on it: maxSessionStreams and
// maxStreamEvents per session, MaxSessionReplayBytes per session and
// MaxReplayBytes for all of a handler's sessions (replayBudget).

import (
	"slices"
	"sync"
)

// maxSessionStreams bounds the ended streams a session keeps for replay.
const maxSessionStreams = 64

// newStream adds a new stream to the session, dropping the oldest ended one
// beyond maxSessionStreams.
func (s *httpSession) newStream() *eventStream {
	s.nextStream++
	l := &eventStream{number: s.nextStream, first: 1}
	s.streams = append(s.streams, l)
	if len(s.streams) > maxSessionStreams {
		s.dropEndedStream()
	}
	return l
}

// stream returns the session's stream numbered n, nil when it has none (a
// slice searched from the newest: a session keeps few streams, and a map
// of them cost an idle session more than its stream).
func (s *httpSession) stream(n uint64) *eventStream {
	for i := len(s.streams) - 1; i >= 0; i-- {
		if l := s.streams[i]; l.number == n {
			return l
		}
	}
	return nil
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
	i := slices.Index(s.streams, l)
	if i < 0 {
		return
	}
	s.streams = slices.Delete(s.streams, i, i+1)
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
	for _, l := range s.streams {
		if l.ended && !l.standalone && l.writer == nil {
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
	for _, l := range s.streams {
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
