package main

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

// shareWorld is a small executor and two clients, a flooder and a newcomer,
// for the table of the work-conserving rules below. ran receives the key of
// every job that runs to completion, in the order they run (with
// MaxConcurrency 1 or one slot cycling, that is the order slots are given).
type shareWorld struct {
	t        *testing.T
	e        *Executor
	a, b     *submitter
	ran      chan string
	blockers []*fakeWork
}

// block starts a job of s that holds its slot until released.
func (w *shareWorld) block(s *submitter, key string) *fakeWork {
	b := startBlocked(w.t, s, key)
	w.blockers = append(w.blockers, b)
	return b
}

// queue admits a job of s that reports to ran when it runs.
func (w *shareWorld) queue(s *submitter, key string, size int) {
	w.t.Helper()
	if _, err := s.submitSized(key, size, 0, func(context.Context) any { w.ran <- key; return nil }); err != nil {
		w.t.Fatalf("job %s refused: %v", key, err)
	}
}

// refused checks that a job of s of size bytes is refused as overloaded.
func (w *shareWorld) refused(s *submitter, key string, size int) {
	w.t.Helper()
	if _, err := s.submitSized(key, size, 0, returning(nil)); !errors.Is(err, errOverloaded) {
		w.t.Fatalf("job %s: err = %v, want errOverloaded", key, err)
	}
}

// next checks which queued job runs next.
func (w *shareWorld) next(want string) {
	w.t.Helper()
	if got := <-w.ran; got != want {
		w.t.Fatalf("next job to run: %s, want %s", got, want)
	}
}

// The work-conserving rules of docs/explanation/contract.md, "Executor", each
// from a known state reached with channels only: a client alone takes
// everything; under contention a freed slot goes to the client running fewest,
// and a client's share keeps room (of the queue, of the bytes) only for the
// others that are waiting.
func TestWorkConservingShares(t *testing.T) {
	tests := []struct {
		name string
		opts ExecutorOptions
		run  func(w *shareWorld)
	}{
		{
			name: "alone, a client takes every slot and the whole queue despite its share",
			opts: ExecutorOptions{MaxConcurrency: 3, MaxQueue: 2, MaxClientConcurrency: 1, MaxClientQueue: 1},
			run: func(w *shareWorld) {
				for i := range 3 {
					w.block(w.a, fmt.Sprint("a", i))
				}
				w.queue(w.a, "q0", 0)
				w.queue(w.a, "q1", 0)
				expectClientStats(w.t, w.a.client, clientStats{running: 3, queued: 2})
				w.refused(w.a, "q2", 0) // the executor's own limit
			},
		},
		{
			name: "alone, a client takes the whole byte budget despite its share",
			opts: ExecutorOptions{MaxConcurrency: 1, MaxInflightBytes: 100, MaxClientInflightBytes: 10},
			run: func(w *shareWorld) {
				w.block(w.a, "a0")
				w.queue(w.a, "q0", 60)
				w.queue(w.a, "q1", 40)
				w.refused(w.a, "q2", 1) // the budget itself
				expectClientStats(w.t, w.a.client, clientStats{running: 1, queued: 2, inflightBytes: 100})
			},
		},
		{
			name: "a newcomer is served at the next freed slot, not behind the flooder's queue",
			opts: ExecutorOptions{MaxConcurrency: 2, MaxQueue: 10},
			run: func(w *shareWorld) {
				a0 := w.block(w.a, "a0")
				w.block(w.a, "a1")
				for i := range 5 {
					w.queue(w.a, fmt.Sprint("q", i), 0)
				}
				w.queue(w.b, "newcomer", 0)
				close(a0.release)
				w.next("newcomer")
				for i := range 5 {
					w.next(fmt.Sprint("q", i))
				}
			},
		},
		{
			name: "the queue share keeps room for a waiting client only",
			opts: ExecutorOptions{MaxConcurrency: 1, MaxQueue: 6, MaxClientQueue: 2},
			run: func(w *shareWorld) {
				w.block(w.a, "a0")
				for i := range 4 { // alone: beyond its share
					w.queue(w.a, fmt.Sprint("q", i), 0)
				}
				w.queue(w.b, "b0", 0) // b waits now
				w.refused(w.a, "q4", 0)
				w.queue(w.b, "b1", 0) // within b's share, and the queue has room
				w.refused(w.b, "b2", 0)
				expectStats(w.t, w.e, 1, 6)
			},
		},
		{
			name: "a newcomer finding the queue full takes the place of the flooder's newest queued job",
			opts: ExecutorOptions{MaxConcurrency: 2, MaxQueue: 3},
			run: func(w *shareWorld) {
				a0 := w.block(w.a, "a0")
				w.block(w.a, "a1")
				w.queue(w.a, "q0", 0)
				w.queue(w.a, "q1", 0)
				w.queue(w.a, "q2", 0)
				w.queue(w.b, "newcomer", 0) // the queue was full: q2 gives way
				o := receive(w.t, w.a)
				if o.key != "q2" || o.kind != outcomeRefused {
					w.t.Fatalf("the flooder's outcome: %s %v, want q2 refused", o.key, o.kind)
				}
				expectStats(w.t, w.e, 2, 3)
				w.refused(w.b, "b1", 0) // 2 and 1 queued: the flooder holds one more only
				w.refused(w.a, "q3", 0)
				close(a0.release) // the flooder still runs a1: the newcomer is next
				for _, want := range []string{"newcomer", "q0", "q1"} {
					w.next(want)
				}
			},
		},
		{
			name: "the byte share binds only while another client holds bytes",
			opts: ExecutorOptions{MaxConcurrency: 1, MaxInflightBytes: 100, MaxClientInflightBytes: 30},
			run: func(w *shareWorld) {
				w.block(w.a, "a0")
				w.queue(w.a, "q0", 50) // alone: beyond its share
				w.queue(w.b, "b0", 10) // b holds bytes now
				w.refused(w.a, "q1", 1)
				w.queue(w.b, "b1", 20) // b within its share
				w.refused(w.b, "b2", 1)
			},
		},
		{
			name: "clients that run as few are served oldest queued job first",
			opts: ExecutorOptions{MaxConcurrency: 1, MaxQueue: 10},
			run: func(w *shareWorld) {
				a0 := w.block(w.a, "a0")
				w.queue(w.a, "a1", 0)
				w.queue(w.a, "a2", 0)
				w.queue(w.b, "b0", 0)
				w.queue(w.b, "b1", 0)
				close(a0.release)
				// Neither runs anything when the slot frees: the oldest job goes.
				for _, want := range []string{"a1", "a2", "b0", "b1"} {
					w.next(want)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newTestExecutor(t, tt.opts)
			w := &shareWorld{t: t, e: e, a: e.newSubmitter(), b: e.newSubmitter(), ran: make(chan string, 16)}
			tt.run(w)
			for _, b := range w.blockers {
				if !isClosed(b.release) {
					close(b.release)
				}
			}
		})
	}
}
