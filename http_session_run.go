package main

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// A session's owner runs on demand. While the session has work in the
// executor (a request admitted and not answered, an initialize being
// made) its owner goroutine runs its loop; once it has none, the owner
// parks: its goroutine exits and the session's state stays as it is, owned
// by no goroutine, until something hands the session an event. The one
// owner rule holds because a goroutine may run the loop only after it won
// the session's run state (run) from parked to active, and the owner gives
// it up only by setting it back to parked, as the last thing it does:
//
//   - a request's goroutine hands the owner an event (post, control) only
//     after enter, which counts it as a caller until the owner took the
//     event (or the session ended); enter of a parked session makes it
//     active and starts its owner, and an owner never parks while a caller
//     is counted, so every event handed over has an owner to take it, and
//     the owner that took the last one parks when it is done with it;
//   - a catalog change and a request to give replay bytes back reach the
//     session through its change box, which needs no caller: wake starts
//     the owner of a parked session after the box was filled, and an owner
//     that parked looks at the box once more (park), so that neither misses
//     the other;
//   - at the cap, the session table may take an idle parked session for a
//     newcomer (claimIdle): it sets the state to ended, which no caller and
//     no wake can undo, and whoever claimed it tears it down as its owner.
//
// Nothing else reaches a parked session: its executor work is done, so no
// outcome and no Peer call of a running request can come (a handler that
// calls its Peer after its request ended gets ErrRequestEnded; one whose
// call races with that end waits on its context, which the end cancels),
// and an injected executor that closes wakes every parked session
// (sessionTable.wakeOnClose), whose owner then ends it.
//
// A parked session costs no goroutine, no stack and no channel receive
// waiting (a goroutine in a select of six channels holds six waiters). The
// goroutines that run owner loops are kept for the next session to wake
// (ownerPool), so that waking one does not grow a new goroutine's stack
// again: that was a third of a session call's CPU.

// The bits of httpSession.run. The callers are counted above them.
const (
	runParked int64 = 1 << iota // the owner goroutine exited; no caller is counted
	runIdle                     // parked with no stream open: the table may take it
	runEnded                    // the session ended: no goroutine will run it again
	runCaller                   // one caller (see enter)
)

// ownerPool runs sessions' owner loops (httpSession.loop) on goroutines
// it keeps: a goroutine whose session parked waits for the next session to
// run, up to maxIdleOwners of them; beyond, it exits. It is shared by the
// sessions of one handler; close ends the goroutines that wait.
type ownerPool struct {
	next   chan *httpSession // to a waiting goroutine; unbuffered
	idle   atomic.Int32      // goroutines waiting on next
	closed chan struct{}     // closed by close
	once   sync.Once
}

// maxIdleOwners bounds the goroutines an ownerPool keeps waiting: about as
// many sessions as may be woken at once under load, each goroutine a stack
// of a few KiB.
const maxIdleOwners = 64

func newOwnerPool() ownerPool {
	return ownerPool{next: make(chan *httpSession), closed: make(chan struct{})}
}

// start runs s's owner loop on a waiting goroutine, else on a new one. It
// never blocks.
func (p *ownerPool) start(s *httpSession) {
	select {
	case p.next <- s:
	default:
		go p.run(s)
	}
}

// run runs s's owner loop, then the loops of the sessions start hands it,
// until it is not needed: more than maxIdleOwners wait, or the pool closed.
func (p *ownerPool) run(s *httpSession) {
	for {
		s.loop()
		if p.idle.Add(1) > maxIdleOwners {
			p.idle.Add(-1)
			return
		}
		select {
		case s = <-p.next:
			p.idle.Add(-1)
		case <-p.closed:
			p.idle.Add(-1)
			return
		}
	}
}

// close ends the goroutines that wait; sessions woken later get new ones.
// Idempotent.
func (p *ownerPool) close() { p.once.Do(func() { close(p.closed) }) }

// startOwner runs the session's owner loop on a goroutine of the handler's
// ownerPool.
func (s *httpSession) startOwner() { s.h.sessions.owners.start(s) }

// loop runs the session's owner loop (serveConnection) until the session
// ends (DELETE, idle expiry, a failed initialize, the handler's Close, or
// an injected executor closing, after every pending request was answered)
// or parks. It runs on the goroutine that made the session active.
func (s *httpSession) loop() {
	if serveConnection(context.Background(), s.conn, s) != errConnYielded {
		s.end()
	}
}

// idle parks the session when it has no work in the executor and no caller
// is handing it an event: the owner loop then ends with errConnYielded.
// It is the loop's last step before it would wait, so nothing it took is
// left undone. Then it hands over the plain answers held (handOver), so
// that a client that got one finds the session parked if it was idle.
func (s *httpSession) idle() error {
	var held [8]*streamWriter
	if len(s.handed) > len(held) {
		s.handOver() // more than held takes: all are told now, before the park
	}
	n := copy(held[:], s.handed)
	clear(s.handed)
	s.handed = s.handed[:0]
	err := s.park()
	// After a park the session is not the goroutine's any more: it tells
	// the writers, which the session let go of, and touches nothing else.
	for _, w := range held[:n] {
		w.ready <- struct{}{}
	}
	return err
}

// park parks the session when it may: errConnYielded when it did.
func (s *httpSession) park() error {
	if s.ended || s.creating != nil || s.conn.pending() > 0 {
		return nil
	}
	select {
	case <-s.conn.executorDone: // nil for the handler's own executor
		return nil // an injected executor closed: the loop ends the session
	default:
	}
	s.conn.dropEmptyMaps()
	parked := runParked
	if s.writers == 0 {
		parked |= runIdle
		s.idleAt.Store(int64(s.lastUsed.Sub(s.h.sessions.epoch)))
	}
	if !s.run.CompareAndSwap(0, parked) {
		return nil // a caller is on its way: take its event first
	}
	// A change put in the box before wake could see the session parked is
	// still there: take it, unless a wake or a caller has started another
	// owner since, or the table took the session.
	if len(s.changes.signal) > 0 && s.run.CompareAndSwap(parked, 0) {
		return nil
	}
	return errConnYielded
}

// enter counts the calling goroutine as a caller about to hand the owner an
// event, starting the owner of a parked session; false when the session
// has ended. Every enter that returned true is followed by one exit: the
// owner's, as it takes the event (onInput, onEvent), or the caller's when
// the session ended first.
func (s *httpSession) enter() bool {
	for {
		old := s.run.Load()
		if old&runEnded != 0 {
			return false
		}
		if s.run.CompareAndSwap(old, old&^(runParked|runIdle)+runCaller) {
			if old&runParked != 0 {
				s.serve()
			}
			return true
		}
	}
}

// exit ends a caller's enter.
func (s *httpSession) exit() { s.run.Add(-runCaller) }

// wake starts the owner of a parked session, for an event put in its change
// box; an owner that runs takes it itself.
func (s *httpSession) wake() {
	for {
		old := s.run.Load()
		if old&runParked == 0 {
			return
		}
		if s.run.CompareAndSwap(old, old&^(runParked|runIdle)) {
			s.serve()
			return
		}
	}
}

// claimIdle ends the session for the session table if it is parked and
// idle; the caller then owns it and tears it down (end). It reports false
// when the session is active, holds a stream or has ended.
func (s *httpSession) claimIdle() bool {
	return s.run.CompareAndSwap(runParked|runIdle, runEnded)
}

// idleSince reports when the session became idle, and whether it is parked
// and idle now (a session the table may take).
func (s *httpSession) idleSince() (int64, bool) {
	if s.run.Load() != runParked|runIdle {
		return 0, false
	}
	return s.idleAt.Load(), true
}

// post hands x to the session's owner; false when the session has ended.
func (s *httpSession) post(x *httpExchange) bool {
	if !s.enter() {
		return false
	}
	select {
	case s.posts <- x:
		return true
	case <-s.done:
		s.exit()
		return false
	}
}

// control hands ev to the session's owner; false when the session has
// ended.
func (s *httpSession) control(ev any) bool {
	if !s.enter() {
		return false
	}
	select {
	case s.ctl <- ev:
		return true
	case <-s.done:
		s.exit()
		return false
	}
}

// put is the session's part of the handler's changeHub: the change goes to
// its box, and a parked owner is started to take it.
func (s *httpSession) put(c Change) {
	s.changes.put(c)
	s.wake()
}

// askShed asks the session's owner, from any goroutine, to give bytes back
// (shedReplay) when it next wakes; it never blocks.
func (s *httpSession) askShed() {
	s.shedAsked.Store(true)
	s.changes.wake()
	s.wake()
}

// touch records that the session is in use now.
func (s *httpSession) touch() { s.lastUsed = time.Now() }
