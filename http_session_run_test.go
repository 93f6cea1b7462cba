package main

import (
	"testing"
)

// The run state of a session, step by step: the test is the owner, and
// serve (what starts an owner) only reports that it was called.
func TestSessionRunState(t *testing.T) {
	h := newBudgetTestHandler(t, 1<<20, 1<<20)
	s := h.newTestSession(t, "s")
	started := make(chan struct{}, 4)
	s.serve = func() { started <- struct{}{} }
	noStart := func(what string) {
		t.Helper()
		select {
		case <-started:
			t.Fatalf("%s started an owner", what)
		default:
		}
	}
	state := func(want int64, what string) {
		t.Helper()
		if got := s.run.Load(); got != want {
			t.Fatalf("%s: run state %b, want %b", what, got, want)
		}
	}

	if err := s.park(); err != errConnYielded {
		t.Fatalf("an idle session with no caller: park = %v, want it parked", err)
	}
	state(runParked|runIdle, "parked idle")
	if _, idle := s.idleSince(); !idle {
		t.Fatal("a parked idle session is not idle to the table")
	}

	s.put(Change{Kind: ToolsChanged}) // a change wakes it
	waitFor(t, started, "the owner a change starts")
	state(0, "woken by a change")
	s.wake()
	noStart("a wake of an active session")

	if !s.enter() {
		t.Fatal("enter of an active session failed")
	}
	noStart("enter of an active session")
	if err := s.park(); err != nil {
		t.Fatalf("a caller is counted: park = %v, want the owner to stay", err)
	}
	s.exit() // as the owner does when it takes the caller's event
	s.changes.take()
	<-s.changes.signal

	s.changes.wake() // a change put just before the owner parks, whose wake found it active
	if err := s.park(); err != nil {
		t.Fatalf("a change waits in the box: park = %v, want the owner to stay for it", err)
	}
	state(0, "stayed for a change")
	<-s.changes.signal

	s.writers = 1 // a stream is open: the session parks, but not idle
	if err := s.park(); err != errConnYielded {
		t.Fatalf("a session with a stream open: park = %v, want it parked", err)
	}
	state(runParked, "parked with a stream open")
	if s.claimIdle() {
		t.Fatal("the table took a session with a stream open")
	}
	if !s.enter() {
		t.Fatal("enter of a parked session failed")
	}
	waitFor(t, started, "the owner enter starts")
	state(runCaller, "entered")
	s.exit()
	s.writers = 0

	if err := s.park(); err != errConnYielded {
		t.Fatalf("park = %v, want it parked", err)
	}
	if !s.claimIdle() {
		t.Fatal("the table could not take a parked idle session")
	}
	state(runEnded, "taken")
	if s.enter() {
		t.Fatal("enter of a session taken succeeded")
	}
	s.wake()
	noStart("a wake of a session taken")
	if s.claimIdle() {
		t.Fatal("a session was taken twice")
	}
}
