package main

// The table of an HTTP handler's live initialize-era sessions
// (http_session.go), bounded by MaxSessions, and who gives way at the cap.
//
// Sessions are shared work-conservingly, as the executor is: a client alone
// may create MaxSessions of them. At the cap a newcomer's initialize takes
// the place of an idle session (no request running, no stream open, its
// owner parked: see httpSession.park), which ends as if it had expired: its
// client's next request is answered 404, and what it held is released. The
// session taken is the longest-idle one of the client that holds the most
// sessions among those holding at least two more than the newcomer's
// client, so that under contention the clients converge to equal parts and
// never take the same place back and forth; when there is none, the
// newcomer's client's own longest-idle session. A newcomer whose client
// holds MaxClientSessions or more is not waiting for room: it takes only
// its own client's idle sessions, so that a client's share bounds what it
// takes from the others at the cap (below the cap nothing binds it). When
// no session can be taken the initialize is refused 503.

import (
	"maps"
	"slices"
	"sync"
	"time"
)

// sessionTable holds the live sessions by id, up to max. It is shared by
// every request's goroutine (lookups, and an initialize's admission, which
// decides alone who gives way) and the sessions' owners (which leave it when
// they end), so a mutex guards it: each call is a map operation, or at the
// cap one pass over the sessions, never held across anything else.
type sessionTable struct {
	max       int // read-only
	perClient int // read-only; a client's share (MaxClientSessions, else max)
	// epoch is when the table was made (read-only): idle times are counted
	// from it, on the monotonic clock.
	epoch time.Time
	// owners runs the sessions' owner loops.
	owners ownerPool

	mu       sync.Mutex
	byID     map[string]*httpSession
	byClient map[clientName]int // live sessions by the client that created them
}

func (t *sessionTable) get(id string) *httpSession {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.byID[id]
}

// add registers s, taking the place of an idle session when max are live
// (see the comment at the top). It returns false when none could be taken.
// A session taken is returned ended in the table's eyes but not yet torn
// down: the caller, its owner now, ends it (httpSession.end) without the
// table's lock.
func (t *sessionTable) add(s *httpSession) (ok bool, taken *httpSession) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.byID) >= t.max {
		if taken = t.takeIdleLocked(s.creator); taken == nil {
			return false, nil
		}
		t.removeLocked(taken)
	}
	t.byID[s.id] = s
	t.byClient[s.creator]++
	return true, taken
}

// takeIdleLocked chooses the session an initialize of creator's takes the
// place of and claims it from its parked owner (httpSession.claimIdle); nil
// when there is none. The first choice is the idle session of the client
// holding the most (of those that may give way), the longest idle of its
// client's; a session that stopped being idle since it was chosen cannot be
// claimed, and the choice is made again.
func (t *sessionTable) takeIdleLocked(creator clientName) *httpSession {
	own := t.byClient[creator]
	waiting := own < t.perClient
	for {
		var best *httpSession
		var bestHeld int
		var bestSince int64
		for _, s := range t.byID {
			since, idle := s.idleSince()
			if !idle {
				continue
			}
			held := 0 // the newcomer's own client's sessions come last
			if s.creator != creator {
				if held = t.byClient[s.creator]; !waiting || held < own+2 {
					continue
				}
			}
			if best == nil || held > bestHeld || held == bestHeld && since < bestSince {
				best, bestHeld, bestSince = s, held, since
			}
		}
		if best == nil || best.claimIdle() {
			return best
		}
	}
}

func (t *sessionTable) remove(s *httpSession) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.removeLocked(s)
}

func (t *sessionTable) removeLocked(s *httpSession) {
	if t.byID[s.id] != s {
		return
	}
	delete(t.byID, s.id)
	if t.byClient[s.creator]--; t.byClient[s.creator] <= 0 {
		delete(t.byClient, s.creator)
	}
}

// wakeOnClose starts the owner of every parked session once done (an
// injected executor's) closes, so that each ends as a running one does; it
// returns without waking any when the owner pool closes first.
func (t *sessionTable) wakeOnClose(done <-chan struct{}) {
	select {
	case <-done:
		for _, s := range t.all() {
			s.wake()
		}
	case <-t.owners.closed:
	}
}

func (t *sessionTable) all() []*httpSession {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Collect(maps.Values(t.byID))
}

// errSessionCapacity refuses an initialize when MaxSessions are live and
// none of them can be taken.
var errSessionCapacity = &RPCError{Code: CodeInternalError, Message: "Server session capacity exhausted"}
