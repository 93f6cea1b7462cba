package main

import (
	"os"
	"runtime"
	"sync/atomic"
	"time"
)

// The reference server's processors on stdio (-procs).
//
// A stdio server serves one client, most often on that client's machine.
// Its connection is two goroutines, the reader and the owner, and the
// owner serves inline tools and every cheap method itself; only handlers
// that run on an executor worker can use more than one processor. With
// several processors (GOMAXPROCS), each hand-off between the reader and the
// owner readies a goroutine while a processor is idle, and the runtime
// wakes a thread to look for work that is not there: on a 2-core machine a
// third of the server's CPU per call went to that, and the client it
// shares the machine with waited for it (bench/limits' pairs: a 100 B echo at
// window 64 went from 0.29 to 0.34 of lineecho's rate with 35% less CPU per
// call, one call at a time from 2.6 to 2.1 times its latency). So by default the server runs on one
// processor while no worker runs a handler, and on the runtime's default
// once one has run for procsDelay, until a whole procsGrace passes in which
// none starts and none runs. Changing GOMAXPROCS stops the world for some
// microseconds: at most twice per procsGrace.

// procsDelay is how long a worker job must run before the server gives
// workers every processor: a short job (an initialize, a list) is served
// on the one processor as an inline call is. procsGrace is how long the
// server keeps every processor after the last worker job returned (with
// none starting meanwhile).
const (
	procsDelay = 5 * time.Millisecond
	procsGrace = time.Second
)

// procsGovernor switches GOMAXPROCS between narrow, while no executor
// worker runs a job, and wide, while one does (see the file comment). The
// executor tells it (busy, given to newExecutor); its goroutine (run) makes
// the changes, so the executor's lock is never held across one.
type procsGovernor struct {
	narrow, wide int
	set          func(int) int                        // runtime.GOMAXPROCS
	after        func(time.Duration) <-chan time.Time // time.After
	delay, grace time.Duration

	running atomic.Bool   // a worker runs a job
	starts  atomic.Uint64 // how many times running became true
	raised  atomic.Bool   // wide is in effect, or was asked for
	raise   chan struct{} // capacity 1: run's cue to go wide
}

func newProcsGovernor(narrow, wide int) *procsGovernor {
	return &procsGovernor{
		narrow: narrow, wide: wide,
		set: runtime.GOMAXPROCS, after: time.After, delay: procsDelay, grace: procsGrace,
		raise: make(chan struct{}, 1),
	}
}

// busy is what newExecutor tells: it never blocks.
func (g *procsGovernor) busy(running bool) {
	g.running.Store(running)
	if !running {
		return
	}
	g.starts.Add(1)
	if g.raised.CompareAndSwap(false, true) {
		select {
		case g.raise <- struct{}{}:
		default:
		}
	}
}

// run narrows the processors at once; then, each time a worker job starts
// while they are narrow, widens them if one still runs procsDelay later,
// and narrows them again once they were idle for the grace period; until
// done is closed.
func (g *procsGovernor) run(done <-chan struct{}) {
	g.set(g.narrow)
	for {
		select {
		case <-g.raise:
		case <-done:
			return
		}
		select {
		case <-g.after(g.delay):
		case <-done:
			return
		}
		if !g.stillRunning() {
			continue
		}
		g.set(g.wide)
		if !g.waitIdle(done) {
			return
		}
		g.set(g.narrow)
	}
}

// stillRunning reports whether a worker job runs; when none does it clears
// raised, so that the next job to start cues run again.
func (g *procsGovernor) stillRunning() bool {
	return g.running.Load() || !g.lower(func() bool { return !g.running.Load() })
}

// lower clears raised, so that the next job to start cues run to widen, and
// reports whether idle still holds after that. When it does not, a job
// started in between: it may have seen raised still set and cued nothing,
// or cued in vain; raised is set again and the cue forgotten.
func (g *procsGovernor) lower(idle func() bool) bool {
	g.raised.Store(false)
	if idle() {
		return true
	}
	g.raised.Store(true)
	g.forgetCue()
	return false
}

// forgetCue drops a cue to widen that is no longer needed.
func (g *procsGovernor) forgetCue() {
	select {
	case <-g.raise:
	default:
	}
}

// waitIdle returns true once a whole grace period passed in which no
// worker job started and none ran, having cleared raised (a job that starts
// after that asks for wide again); false when done is closed first.
func (g *procsGovernor) waitIdle(done <-chan struct{}) bool {
	for {
		n := g.starts.Load()
		select {
		case <-g.after(g.grace):
		case <-done:
			return false
		}
		if !g.running.Load() && g.lower(func() bool { return g.starts.Load() == n }) {
			return true
		}
	}
}

// stdioProcs returns the governor of the stdio server's processors, nil
// when it has none: -procs set them (procs > 0), GOMAXPROCS is set in the
// environment, or there is one processor anyway.
func stdioProcs(procs int) *procsGovernor {
	wide := runtime.GOMAXPROCS(0)
	if procs > 0 || os.Getenv("GOMAXPROCS") != "" || wide <= 1 {
		return nil
	}
	return newProcsGovernor(1, wide)
}
