package main

// The table of an HTTP handler's live initialize-era sessions
// (http_session.go), bounded by MaxSessions and MaxClientSessions.

import (
	"maps"
	"slices"
	"sync"
)

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
