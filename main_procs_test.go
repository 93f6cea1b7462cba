package main

import (
	"context"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// governorHarness runs a procsGovernor whose GOMAXPROCS changes and timers
// the test sees and fires itself.
type governorHarness struct {
	t      *testing.T
	g      *procsGovernor
	sets   chan int           // each GOMAXPROCS the governor set
	timers chan governorTimer // each timer it started
	done   chan struct{}
	ended  chan struct{}
}

type governorTimer struct {
	d    time.Duration
	fire chan time.Time
}

// startGovernor runs a governor until the test ends; call it inside a
// synctest bubble, so that synctest.Wait tells when the governor waits.
func startGovernor(t *testing.T) *governorHarness {
	h := &governorHarness{t: t, sets: make(chan int, 8), timers: make(chan governorTimer), done: make(chan struct{}), ended: make(chan struct{})}
	h.g = newProcsGovernor(1, 4)
	h.g.set = func(n int) int { h.sets <- n; return 0 }
	h.g.after = func(d time.Duration) <-chan time.Time {
		tm := governorTimer{d: d, fire: make(chan time.Time)}
		select {
		case h.timers <- tm:
		case <-h.done:
		}
		return tm.fire
	}
	go func() { h.g.run(h.done); close(h.ended) }()
	h.expectSet(1)
	return h
}

func (h *governorHarness) stop() {
	close(h.done)
	<-h.ended
}

func (h *governorHarness) expectSet(want int) {
	h.t.Helper()
	if got := <-h.sets; got != want {
		h.t.Fatalf("GOMAXPROCS set to %d, want %d", got, want)
	}
}

// fire waits for the governor's next timer, which must last d, and fires it.
func (h *governorHarness) fire(d time.Duration) {
	h.t.Helper()
	tm := <-h.timers
	if tm.d != d {
		h.t.Fatalf("timer of %v, want %v", tm.d, d)
	}
	tm.fire <- time.Time{}
}

// noSetBeforeTimer returns the governor's next timer, checking that it
// changed nothing before it started it.
func (h *governorHarness) noSetBeforeTimer() governorTimer {
	h.t.Helper()
	tm := <-h.timers
	select {
	case n := <-h.sets:
		h.t.Fatalf("GOMAXPROCS set to %d, want no change", n)
	default:
	}
	return tm
}

// The governor starts narrow; a worker job that still runs procsDelay after
// it started widens the processors, which stay wide while jobs run or start
// within procsGrace of each other, and narrow once a whole grace passes
// without one. A job that ended within procsDelay changes nothing.
func TestProcsGovernorWidensForWorkersThatRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startGovernor(t)
		defer h.stop()

		// A short job: over before the delay ends.
		h.g.busy(true)
		h.g.busy(false)
		h.noSetBeforeTimer().fire <- time.Time{}
		synctest.Wait() // the governor waits for its next cue
		h.g.busy(true)
		h.fire(procsDelay)
		h.expectSet(4)

		// Wide while a job runs, and while jobs start within the grace.
		h.fire(procsGrace) // still running
		synctest.Wait()    // the next grace has begun
		h.g.busy(false)
		h.g.busy(true)
		h.g.busy(false)
		h.noSetBeforeTimer().fire <- time.Time{} // a job started in that one
		h.fire(procsGrace)                       // none started nor ran in this one
		h.expectSet(1)

		// And wide again for the next job that runs.
		synctest.Wait()
		h.g.busy(true)
		h.fire(procsDelay)
		h.expectSet(4)
		h.g.busy(false)
	})
}

// The executor tells busy (newExecutor) when its first job starts and when its last one
// returns, alternately.
func TestExecutorBusyMarksFirstStartAndLastReturn(t *testing.T) {
	var calls []bool
	e, err := newExecutor(ExecutorOptions{}, func(b bool) { calls = append(calls, b) })
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	sub := e.newSubmitter()
	defer sub.close()
	release := []chan struct{}{make(chan struct{}), make(chan struct{}), make(chan struct{})}
	submit := func(i int) {
		if _, err := sub.submitWork(string(rune('a'+i)), -1, func(ctx context.Context) any {
			<-release[i]
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	// busy reads calls under the executor's lock, as Stats does.
	seen := func() []bool {
		e.Stats()
		return slices.Clone(calls)
	}
	submit(0)
	submit(1)
	if got := seen(); !slices.Equal(got, []bool{true}) {
		t.Fatalf("two jobs running: busy got %v, want [true]", got)
	}
	close(release[0])
	<-sub.outcomes
	if got := seen(); !slices.Equal(got, []bool{true}) {
		t.Fatalf("one job left: busy got %v, want [true]", got)
	}
	close(release[1])
	<-sub.outcomes
	if got := seen(); !slices.Equal(got, []bool{true, false}) {
		t.Fatalf("no job left: busy got %v, want [true false]", got)
	}
	submit(2)
	close(release[2])
	<-sub.outcomes
	if got := seen(); !slices.Equal(got, []bool{true, false, true, false}) {
		t.Fatalf("after a third job: busy got %v, want [true false true false]", got)
	}
}

// The stdio server governs its processors unless -procs or GOMAXPROCS set
// them, or there is only one; -procs must not be negative.
func TestStdioProcsFollowsFlagAndEnvironment(t *testing.T) {
	t.Setenv("GOMAXPROCS", "")
	if g := stdioProcs(2); g != nil {
		t.Errorf("-procs 2: a governor")
	}
	if g := stdioProcs(0); (g != nil) != (runtime.GOMAXPROCS(0) > 1) {
		t.Errorf("-procs 0 with %d processors: governor %v", runtime.GOMAXPROCS(0), g != nil)
	} else if g != nil && (g.narrow != 1 || g.wide != runtime.GOMAXPROCS(0)) {
		t.Errorf("governor between %d and %d processors, want 1 and %d", g.narrow, g.wide, runtime.GOMAXPROCS(0))
	}
	t.Setenv("GOMAXPROCS", strconv.Itoa(runtime.GOMAXPROCS(0)))
	if g := stdioProcs(0); g != nil {
		t.Errorf("GOMAXPROCS set: a governor")
	}
	var stderr strings.Builder
	if _, err := parseFlags([]string{"-procs", "-1"}, &stderr); err == nil || !strings.Contains(stderr.String(), "for flag -procs: must be >= 0, got -1") {
		t.Errorf("-procs -1: err %v, stderr %q", err, stderr.String())
	}
}
