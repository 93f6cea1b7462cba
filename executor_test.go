package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"testing/synctest"
	"time"
)

// failAfter bounds every wait in these tests; it only turns a hang into a
// failure and never orders events. Inside a synctest bubble it is fake time,
// so every deadline there must be shorter.
const failAfter = 10 * time.Second

func newTestExecutor(t *testing.T, opts ExecutorOptions) *Executor {
	t.Helper()
	e, err := NewExecutor(opts)
	if err != nil {
		t.Fatalf("NewExecutor(%+v): %v", opts, err)
	}
	t.Cleanup(e.Close)
	return e
}

func mustSubmit(t *testing.T, s *submitter, key string, timeout time.Duration, work func(context.Context) any) executionRef {
	t.Helper()
	ref, err := s.submitWork(key, timeout, work)
	if err != nil {
		t.Fatalf("submit(%q): %v", key, err)
	}
	return ref
}

// receive returns the submitter's next outcome.
func receive(t *testing.T, s *submitter) jobOutcome {
	t.Helper()
	select {
	case o := <-s.outcomes:
		return o
	case <-time.After(failAfter):
		t.Fatal("no outcome arrived")
		return jobOutcome{}
	}
}

// expectOutcome receives the next outcome and checks its identity and kind.
func expectOutcome(t *testing.T, s *submitter, ref executionRef, key string, kind outcomeKind) jobOutcome {
	t.Helper()
	o := receive(t, s)
	if o.ref != ref || o.key != key || o.kind != kind {
		t.Fatalf("outcome = {Ref:%d Key:%q Kind:%v}, want {Ref:%d Key:%q Kind:%v}", o.ref, o.key, o.kind, ref, key, kind)
	}
	return o
}

// expectNoOutcome fails if an outcome can be received right now.
func expectNoOutcome(t *testing.T, s *submitter) {
	t.Helper()
	select {
	case o := <-s.outcomes:
		t.Fatalf("unexpected outcome %+v", o)
	default:
	}
}

func waitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(failAfter):
		t.Fatalf("%s did not happen", what)
	}
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// waitForGoroutines waits until every worker and pump goroutine of e has exited.
func waitForGoroutines(t *testing.T, e *Executor) {
	t.Helper()
	exited := make(chan struct{})
	go func() {
		e.goroutines.Wait()
		close(exited)
	}()
	waitClosed(t, exited, "the executor's goroutines' exit")
}

func expectStats(t *testing.T, e *Executor, running, queued int) {
	t.Helper()
	if st := e.Stats(); st.Running != running || st.Queued != queued {
		t.Fatalf("Stats() = %+v, want Running %d, Queued %d", st, running, queued)
	}
}

// fakeWork is a controllable work function for one job. It closes started
// when it begins, records its context, and returns only when released (or,
// for honouring ctx, when its context is done).
type fakeWork struct {
	started  chan struct{}
	release  chan struct{}
	returned chan struct{}
	result   any
	ctx      context.Context // written before started is closed
	ctxErr   error           // written before returned is closed
}

func newFakeWork(result any) *fakeWork {
	return &fakeWork{
		started:  make(chan struct{}),
		release:  make(chan struct{}),
		returned: make(chan struct{}),
		result:   result,
	}
}

// ignoringCtx blocks until release, whatever happens to its context.
func (w *fakeWork) ignoringCtx(ctx context.Context) any {
	w.ctx = ctx
	close(w.started)
	<-w.release
	w.ctxErr = ctx.Err()
	close(w.returned)
	return w.result
}

// honouringCtx blocks until its context is done.
func (w *fakeWork) honouringCtx(ctx context.Context) any {
	w.ctx = ctx
	close(w.started)
	<-ctx.Done()
	w.ctxErr = ctx.Err()
	close(w.returned)
	return w.result
}

func returning(v any) func(context.Context) any {
	return func(context.Context) any { return v }
}

func TestNewExecutorValidatesOptions(t *testing.T) {
	tests := []struct {
		name        string
		opts        ExecutorOptions
		wantErr     bool
		wantStats   ExecutorStats
		wantTimeout time.Duration
	}{
		{"zero means defaults", ExecutorOptions{}, false, ExecutorStats{MaxConcurrency: 32, MaxQueue: 256, MaxInflightBytes: 64 << 20,
			MaxClientConcurrency: 32, MaxClientQueue: 256, MaxClientInflightBytes: 64 << 20}, 30 * time.Second},
		{"explicit values", ExecutorOptions{MaxConcurrency: 4, MaxQueue: 7, Timeout: time.Second, MaxInflightBytes: 1000, MaxClientConcurrency: 2, MaxClientQueue: 3, MaxClientInflightBytes: 500}, false,
			ExecutorStats{MaxConcurrency: 4, MaxQueue: 7, MaxInflightBytes: 1000, MaxClientConcurrency: 2, MaxClientQueue: 3, MaxClientInflightBytes: 500}, time.Second},
		{"a share above its limit is the whole", ExecutorOptions{MaxConcurrency: 4, MaxQueue: 7, MaxInflightBytes: 1000, MaxClientConcurrency: 5, MaxClientQueue: 8, MaxClientInflightBytes: 1001}, false,
			ExecutorStats{MaxConcurrency: 4, MaxQueue: 7, MaxInflightBytes: 1000, MaxClientConcurrency: 4, MaxClientQueue: 7, MaxClientInflightBytes: 1000}, 30 * time.Second},
		{"a queue of None", ExecutorOptions{MaxConcurrency: 1, MaxQueue: None}, false, ExecutorStats{MaxConcurrency: 1, MaxQueue: 0, MaxInflightBytes: 64 << 20,
			MaxClientConcurrency: 1, MaxClientQueue: 0, MaxClientInflightBytes: 64 << 20}, 30 * time.Second},
		{"an Unlimited queue", ExecutorOptions{MaxQueue: Unlimited, MaxClientQueue: 5}, false, ExecutorStats{MaxConcurrency: 32, MaxQueue: Unlimited, MaxInflightBytes: 64 << 20,
			MaxClientConcurrency: 32, MaxClientQueue: 5, MaxClientInflightBytes: 64 << 20}, 30 * time.Second},
		{"an Unlimited timeout", ExecutorOptions{Timeout: Unlimited}, false, ExecutorStats{MaxConcurrency: 32, MaxQueue: 256, MaxInflightBytes: 64 << 20,
			MaxClientConcurrency: 32, MaxClientQueue: 256, MaxClientInflightBytes: 64 << 20}, Unlimited},
		{"an Unlimited byte budget has no share", ExecutorOptions{MaxInflightBytes: Unlimited, MaxClientInflightBytes: 10}, false, ExecutorStats{MaxConcurrency: 32, MaxQueue: 256,
			MaxInflightBytes: Unlimited, MaxClientConcurrency: 32, MaxClientQueue: 256, MaxClientInflightBytes: Unlimited}, 30 * time.Second},
		{"a queue of -3", ExecutorOptions{MaxQueue: -3}, true, ExecutorStats{}, 0},
		{"a timeout of -2ns", ExecutorOptions{Timeout: -2}, true, ExecutorStats{}, 0},
		{"a byte budget of None", ExecutorOptions{MaxInflightBytes: None}, true, ExecutorStats{}, 0},
		{"negative concurrency", ExecutorOptions{MaxConcurrency: -1}, true, ExecutorStats{}, 0},
		{"negative client concurrency", ExecutorOptions{MaxClientConcurrency: -1}, true, ExecutorStats{}, 0},
		{"negative client queue", ExecutorOptions{MaxClientQueue: -1}, true, ExecutorStats{}, 0},
		{"negative client bytes", ExecutorOptions{MaxClientInflightBytes: -1}, true, ExecutorStats{}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, err := NewExecutor(tc.opts)
			if tc.wantErr {
				if err == nil || e != nil {
					t.Fatalf("NewExecutor(%+v) = %v, %v; want nil and an error", tc.opts, e, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("NewExecutor(%+v): %v", tc.opts, err)
			}
			defer e.Close()
			if got := e.Stats(); got != tc.wantStats {
				t.Errorf("Stats() = %+v, want %+v", got, tc.wantStats)
			}
			if e.timeout != tc.wantTimeout {
				t.Errorf("default timeout = %v, want %v", e.timeout, tc.wantTimeout)
			}
		})
	}
}

func TestOutcomeKindString(t *testing.T) {
	tests := []struct {
		kind outcomeKind
		want string
	}{
		{outcomeCompleted, "completed"},
		{outcomeCancelled, "cancelled"},
		{outcomeTimedOut, "timedOut"},
		{outcomeFailed, "failed"},
		{outcomeRefused, "refused"},
		{0, "outcomeKind(0)"},
	}
	for _, tc := range tests {
		if got := tc.kind.String(); got != tc.want {
			t.Errorf("outcomeKind(%d).String() = %q, want %q", uint8(tc.kind), got, tc.want)
		}
	}
}

func TestQueuedJobsRunInFIFOOrder(t *testing.T) {
	e := newTestExecutor(t, ExecutorOptions{MaxConcurrency: 1, MaxQueue: 10})
	s := e.newSubmitter()
	blocker := newFakeWork("blocker")
	blockerRef := mustSubmit(t, s, "blocker", 0, blocker.ignoringCtx)
	waitClosed(t, blocker.started, "blocker start")

	const queued = 5
	order := make(chan int, queued)
	refs := make([]executionRef, queued)
	for i := range queued {
		refs[i] = mustSubmit(t, s, fmt.Sprint("q", i), 0, func(context.Context) any {
			order <- i
			return i
		})
	}
	expectStats(t, e, 1, queued)
	close(blocker.release)

	outcomes := map[executionRef]jobOutcome{}
	for range queued + 1 {
		o := receive(t, s)
		outcomes[o.ref] = o
	}
	if o := outcomes[blockerRef]; o.kind != outcomeCompleted || o.value != "blocker" {
		t.Errorf("blocker's outcome = %+v", o)
	}
	for i, ref := range refs {
		if o := outcomes[ref]; o.kind != outcomeCompleted || o.value != i {
			t.Errorf("job %d's outcome = %+v", i, o)
		}
		if got := <-order; got != i {
			t.Errorf("job %d ran in position %d", got, i)
		}
	}
}

// TestCompletedOutcomeArrivesBeforeLaterAdmittedWork checks that a job hands
// its outcome over before giving up its slot: work admitted after the job's
// function returned queues behind it and cannot overtake its outcome. The
// first job registers many AfterFuncs on its context, so releasing that
// context, which happens between its return and the delivery of its outcome,
// takes long enough for the second job to run to completion first if the
// slot were freed before the delivery.
func TestCompletedOutcomeArrivesBeforeLaterAdmittedWork(t *testing.T) {
	e := newTestExecutor(t, ExecutorOptions{MaxConcurrency: 1})
	s := e.newSubmitter()
	returning := make(chan struct{})
	first := mustSubmit(t, s, "first", 0, func(ctx context.Context) any {
		for range 5000 {
			context.AfterFunc(ctx, func() {})
		}
		close(returning)
		return "first"
	})
	waitClosed(t, returning, "the first job's return")
	second := mustSubmit(t, s, "second", 0, func(context.Context) any { return "second" })
	expectOutcome(t, s, first, "first", outcomeCompleted)
	expectOutcome(t, s, second, "second", outcomeCompleted)
}

func TestSubmitRefusesWhenRunningAndQueueAreFull(t *testing.T) {
	tests := []struct {
		name     string
		maxQueue int
		admitted int // jobs admitted before errOverloaded
	}{
		{"no queue", None, 1},
		{"queue of two", 2, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newTestExecutor(t, ExecutorOptions{MaxConcurrency: 1, MaxQueue: tc.maxQueue})
			s := e.newSubmitter()
			blocker := newFakeWork(nil)
			mustSubmit(t, s, "", 0, blocker.ignoringCtx)
			for range tc.admitted - 1 {
				mustSubmit(t, s, "", 0, returning(nil))
			}
			if _, err := s.submitWork("", 0, returning(nil)); !errors.Is(err, errOverloaded) {
				t.Fatalf("submit over capacity: err = %v, want errOverloaded", err)
			}
			expectStats(t, e, 1, tc.admitted-1)

			close(blocker.release)
			for range tc.admitted {
				receive(t, s)
			}
			expectStats(t, e, 0, 0)
			mustSubmit(t, s, "", 0, returning(nil))
			receive(t, s)
		})
	}
}

// An Unlimited queue admits every job that cannot start, beyond the
// default queue's 256, while the byte budget has room.
func TestUnlimitedQueueAdmitsEveryJob(t *testing.T) {
	const queued = defaultMaxQueue + 100
	e := newTestExecutor(t, ExecutorOptions{MaxConcurrency: 1, MaxQueue: Unlimited})
	s := e.newSubmitter()
	blocker := newFakeWork(nil)
	mustSubmit(t, s, "", 0, blocker.ignoringCtx)
	for range queued {
		mustSubmit(t, s, "", 0, returning(nil))
	}
	expectStats(t, e, 1, queued)
	close(blocker.release)
	for range queued + 1 {
		receive(t, s)
	}
	expectStats(t, e, 0, 0)
}

func TestSubmitRefusesDuplicateKey(t *testing.T) {
	e := newTestExecutor(t, ExecutorOptions{MaxConcurrency: 1})
	s := e.newSubmitter()
	blocker := newFakeWork(nil)
	mustSubmit(t, s, "running", 0, blocker.ignoringCtx)
	mustSubmit(t, s, "queued", 0, returning(nil))
	for _, key := range []string{"running", "queued"} {
		if _, err := s.submitWork(key, 0, returning(nil)); !errors.Is(err, errDuplicateKey) {
			t.Errorf("submit(%q) again: err = %v, want errDuplicateKey", key, err)
		}
	}
	// Unkeyed jobs are never duplicates.
	mustSubmit(t, s, "", 0, returning(nil))
	mustSubmit(t, s, "", 0, returning(nil))
	expectStats(t, e, 1, 3)
	close(blocker.release)
	for range 4 {
		receive(t, s)
	}
}

func TestKeyIsFreeRightAfterCancelAndAfterItsOutcome(t *testing.T) {
	e := newTestExecutor(t, ExecutorOptions{MaxConcurrency: 2})
	s := e.newSubmitter()
	first := newFakeWork(nil)
	firstRef := mustSubmit(t, s, "k", 0, first.ignoringCtx)
	waitClosed(t, first.started, "first start")

	if !s.cancel("k") {
		t.Fatal("Cancel(k) found no job")
	}
	second := newFakeWork("second")
	secondRef := mustSubmit(t, s, "k", 0, second.ignoringCtx) // admitted before the cancelled work returned
	expectOutcome(t, s, firstRef, "k", outcomeCancelled)

	close(second.release)
	expectOutcome(t, s, secondRef, "k", outcomeCompleted)
	if s.cancel("k") {
		t.Error("Cancel(k) after its outcome found a job")
	}
	thirdRef := mustSubmit(t, s, "k", 0, returning("third"))
	expectOutcome(t, s, thirdRef, "k", outcomeCompleted)
	close(first.release)
}

// An unindexed job (the coordinator's own records) carries its key on its
// outcome only: it is no duplicate, Cancel does not find it, cancelJob does.
func TestUnindexedJobIsCancelledByRecordNotByKey(t *testing.T) {
	e := newTestExecutor(t, ExecutorOptions{MaxConcurrency: 1})
	s := e.newSubmitter()
	running, queued := newFakeWork(nil), newFakeWork(nil)
	runningJob := &job{key: "k", work: workFunc(running.ignoringCtx)}
	queuedJob := &job{key: "k", work: workFunc(queued.ignoringCtx)}
	runningRef, err := s.submit(runningJob, 0)
	if err != nil {
		t.Fatalf("submit(running): %v", err)
	}
	waitClosed(t, running.started, "running start")
	queuedRef, err := s.submit(queuedJob, 0)
	if err != nil {
		t.Fatalf("submit(queued) under the same key: %v", err)
	}
	// An indexed job under that key is no duplicate of them either.
	indexedRef := mustSubmit(t, s, "k", 0, returning(nil))
	expectStats(t, e, 1, 2)

	if !s.cancel("k") {
		t.Fatal("Cancel(k) did not find the indexed job")
	}
	expectOutcome(t, s, indexedRef, "k", outcomeCancelled)
	if s.cancel("k") {
		t.Error("Cancel(k) found an unindexed job")
	}
	if !s.cancelJob(queuedJob) {
		t.Fatal("cancelJob(queued) found nothing")
	}
	expectOutcome(t, s, queuedRef, "k", outcomeCancelled)
	if !s.cancelJob(runningJob) {
		t.Fatal("cancelJob(running) found nothing")
	}
	expectOutcome(t, s, runningRef, "k", outcomeCancelled)
	if s.cancelJob(runningJob) || s.cancelJob(queuedJob) {
		t.Error("cancelJob found a job whose outcome was delivered")
	}
	expectStats(t, e, 1, 0) // the cancelled function still holds its slot
	close(running.release)

	doneRef, err := s.submit(&job{key: "k", work: workFunc(returning("done"))}, 0)
	if err != nil {
		t.Fatalf("submit after the cancellations: %v", err)
	}
	if o := expectOutcome(t, s, doneRef, "k", outcomeCompleted); o.value != "done" {
		t.Errorf("Value = %v, want done", o.value)
	}
	expectNoOutcome(t, s)
	if isClosed(queued.started) {
		t.Error("the cancelled queued job ran")
	}
}

func TestCancelQueuedJobDeliversAtOnceAndNeverRunsIt(t *testing.T) {
	e := newTestExecutor(t, ExecutorOptions{MaxConcurrency: 1})
	s := e.newSubmitter()
	blocker := newFakeWork(nil)
	blockerRef := mustSubmit(t, s, "blocker", 0, blocker.ignoringCtx)
	waitClosed(t, blocker.started, "blocker start")
	ran := make(chan struct{})
	queuedRef := mustSubmit(t, s, "queued", 0, func(context.Context) any { close(ran); return nil })
	// The job after the cancelled one shows where the cancelled one would have run.
	afterRef := mustSubmit(t, s, "after", 0, returning(nil))

	if !s.cancel("queued") {
		t.Fatal("Cancel(queued) found no job")
	}
	expectOutcome(t, s, queuedRef, "queued", outcomeCancelled)
	expectStats(t, e, 1, 1)

	close(blocker.release)
	expectOutcome(t, s, blockerRef, "blocker", outcomeCompleted)
	expectOutcome(t, s, afterRef, "after", outcomeCompleted)
	if isClosed(ran) {
		t.Error("the cancelled queued job ran")
	}
}

// expectBytes checks the executor's in-flight byte count.
func expectBytes(t *testing.T, e *Executor, want int) {
	t.Helper()
	if got := e.Stats().InflightBytes; got != want {
		t.Fatalf("InflightBytes = %d, want %d", got, want)
	}
}

func mustSubmitSized(t *testing.T, s *submitter, key string, size int, work func(context.Context) any) executionRef {
	t.Helper()
	ref, err := s.submitSized(key, size, 0, work)
	if err != nil {
		t.Fatalf("submitSized(%q, %d): %v", key, size, err)
	}
	return ref
}

// The sizes of queued and running jobs count against MaxInflightBytes; a job
// that does not fit is refused with errOverloaded. A queued job's bytes are
// free when it is cancelled, a running job's only when its function
// returns, after a cancellation or a timeout too. Size 0 always fits.
func TestInflightBytesBoundAdmission(t *testing.T) {
	e := newTestExecutor(t, ExecutorOptions{MaxConcurrency: 1, MaxInflightBytes: 100})
	s := e.newSubmitter()
	first := newFakeWork(nil)
	firstRef := mustSubmitSized(t, s, "first", 60, first.ignoringCtx)
	waitClosed(t, first.started, "first start")
	queued := newFakeWork(nil)
	queuedRef := mustSubmitSized(t, s, "queued", 40, queued.ignoringCtx)
	expectBytes(t, e, 100)
	if _, err := s.submitSized("over", 1, 0, returning(nil)); !errors.Is(err, errOverloaded) {
		t.Fatalf("submitSized over the byte budget: err = %v, want errOverloaded", err)
	}
	zero := mustSubmit(t, s, "zero", 0, returning(nil)) // size 0: always fits
	if !s.cancel("zero") {
		t.Fatal("Cancel(zero) found no job")
	}
	expectOutcome(t, s, zero, "zero", outcomeCancelled)

	if !s.cancel("queued") {
		t.Fatal("Cancel(queued) found no job")
	}
	expectOutcome(t, s, queuedRef, "queued", outcomeCancelled)
	expectBytes(t, e, 60) // a queued job's bytes are free at once

	if !s.cancel("first") {
		t.Fatal("Cancel(first) found no job")
	}
	expectOutcome(t, s, firstRef, "first", outcomeCancelled)
	expectBytes(t, e, 60) // still running: its bytes are held until it returns
	if _, err := s.submitSized("over", 41, 0, returning(nil)); !errors.Is(err, errOverloaded) {
		t.Fatalf("submitSized while a cancelled job holds its bytes: err = %v, want errOverloaded", err)
	}
	next := newFakeWork(nil)
	nextRef := mustSubmitSized(t, s, "next", 40, next.ignoringCtx)
	close(first.release)
	waitClosed(t, next.started, "next start") // first returned before next got its slot
	expectBytes(t, e, 40)
	close(next.release)
	expectOutcome(t, s, nextRef, "next", outcomeCompleted)
	expectStats(t, e, 0, 0)
	expectBytes(t, e, 0)
}

// A timed-out job keeps its bytes until its function returns.
func TestTimedOutJobHoldsItsBytesUntilItReturns(t *testing.T) {
	e := newTestExecutor(t, ExecutorOptions{MaxConcurrency: 1, MaxInflightBytes: 100})
	s := e.newSubmitter()
	slow := newFakeWork(nil)
	ref, err := s.submitSized("slow", 100, time.Nanosecond, slow.ignoringCtx)
	if err != nil {
		t.Fatal(err)
	}
	expectOutcome(t, s, ref, "slow", outcomeTimedOut)
	expectBytes(t, e, 100)
	if _, err := s.submitSized("other", 1, 0, returning(nil)); !errors.Is(err, errOverloaded) {
		t.Fatalf("submitSized while a timed-out job holds the budget: err = %v, want errOverloaded", err)
	}
	// after gets the slot in the critical section that settles slow's
	// return, so once it started slow's bytes are free.
	after := newFakeWork(nil)
	mustSubmit(t, s, "after", 0, after.ignoringCtx)
	close(slow.release)
	waitClosed(t, after.started, "after start")
	expectBytes(t, e, 0)
	close(after.release)
}

// A job larger than the whole budget is admitted when no bytes are in
// flight, so that one message of any size the transport accepts is served;
// nothing else is admitted beside it, and it is refused while other bytes
// are in flight.
func TestJobLargerThanTheBudgetRunsAlone(t *testing.T) {
	e := newTestExecutor(t, ExecutorOptions{MaxInflightBytes: 10})
	s := e.newSubmitter()
	big := newFakeWork(nil)
	bigRef := mustSubmitSized(t, s, "big", 50, big.ignoringCtx)
	expectBytes(t, e, 50)
	if _, err := s.submitSized("small", 1, 0, returning(nil)); !errors.Is(err, errOverloaded) {
		t.Fatalf("submitSized beside an over-budget job: err = %v, want errOverloaded", err)
	}
	close(big.release)
	expectOutcome(t, s, bigRef, "big", outcomeCompleted)

	small := newFakeWork(nil)
	smallRef := mustSubmitSized(t, s, "small", 1, small.ignoringCtx)
	if _, err := s.submitSized("big", 50, 0, returning(nil)); !errors.Is(err, errOverloaded) {
		t.Fatalf("submitSized of an over-budget job beside another: err = %v, want errOverloaded", err)
	}
	close(small.release)
	expectOutcome(t, s, smallRef, "small", outcomeCompleted)
	if _, err := s.submitSized("bad", -1, 0, returning(nil)); err == nil {
		t.Fatal("submitSized with a negative size was admitted")
	}
}

func TestCancelRunningJobDeliversAtOnceButHoldsItsSlot(t *testing.T) {
	e := newTestExecutor(t, ExecutorOptions{MaxConcurrency: 1})
	s := e.newSubmitter()
	old := newFakeWork("late result")
	oldRef := mustSubmit(t, s, "old", 0, old.ignoringCtx)
	waitClosed(t, old.started, "old start")

	if !s.cancel("old") {
		t.Fatal("Cancel(old) found no job")
	}
	expectOutcome(t, s, oldRef, "old", outcomeCancelled)
	if err := old.ctx.Err(); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled job's ctx.Err() = %v, want context.Canceled", err)
	}

	next := newFakeWork("next")
	nextRef := mustSubmit(t, s, "next", 0, next.ignoringCtx)
	expectStats(t, e, 1, 1)
	if isClosed(next.started) {
		t.Fatal("a new job started while the cancelled function still held the only slot")
	}

	close(old.release)
	waitClosed(t, next.started, "next start after the cancelled function returned")
	close(next.release)
	o := expectOutcome(t, s, nextRef, "next", outcomeCompleted)
	if o.value != "next" {
		t.Errorf("next returned %v", o.value)
	}
	// The cancelled job's late return was settled before next started.
	expectNoOutcome(t, s)
	if s.cancel("old") {
		t.Error("Cancel(old) found the job twice")
	}
}

func TestDeadlineStartsWhenTheJobStartsNotWhenQueued(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newTestExecutor(t, ExecutorOptions{MaxConcurrency: 1})
		s := e.newSubmitter()
		t0 := time.Now()

		first := newFakeWork(nil)
		firstRef := mustSubmit(t, s, "first", 100*time.Millisecond, first.honouringCtx)
		// second waits 100ms in the queue, five times its own timeout.
		second := newFakeWork(nil)
		secondRef := mustSubmit(t, s, "second", 20*time.Millisecond, second.honouringCtx)

		expectOutcome(t, s, firstRef, "first", outcomeTimedOut)
		waitClosed(t, second.started, "second start")
		startedAt := time.Since(t0)
		if startedAt != 100*time.Millisecond {
			t.Errorf("second started after %v, want 100ms", startedAt)
		}
		deadline, ok := second.ctx.Deadline()
		if !ok || deadline.Sub(t0) != 120*time.Millisecond {
			t.Errorf("second's deadline = %v (set %v), want 120ms after submission", deadline.Sub(t0), ok)
		}

		expectOutcome(t, s, secondRef, "second", outcomeTimedOut)
		if got := time.Since(t0); got != 120*time.Millisecond {
			t.Errorf("second timed out after %v, want 120ms", got)
		}
		waitClosed(t, second.returned, "second return")
		if !errors.Is(second.ctxErr, context.DeadlineExceeded) {
			t.Errorf("second's ctx.Err() = %v, want context.DeadlineExceeded", second.ctxErr)
		}
	})
}

func TestTimeoutOfJobIgnoringItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newTestExecutor(t, ExecutorOptions{MaxConcurrency: 1})
		s := e.newSubmitter()
		t0 := time.Now()
		stuck := newFakeWork("late")
		stuckRef := mustSubmit(t, s, "k", 20*time.Millisecond, stuck.ignoringCtx)
		waitClosed(t, stuck.started, "start")

		expectOutcome(t, s, stuckRef, "k", outcomeTimedOut)
		if got := time.Since(t0); got != 20*time.Millisecond {
			t.Errorf("timed out after %v, want 20ms", got)
		}
		if isClosed(stuck.returned) {
			t.Fatal("the outcome waited for the function to return")
		}
		if err := stuck.ctx.Err(); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("ctx.Err() = %v, want context.DeadlineExceeded", err)
		}

		// The key is free at once; the slot stays held until the function returns.
		next := newFakeWork("next")
		nextRef := mustSubmit(t, s, "k", -1, next.ignoringCtx)
		expectStats(t, e, 1, 1)
		close(stuck.release)
		waitClosed(t, next.started, "next start")
		close(next.release)
		expectOutcome(t, s, nextRef, "k", outcomeCompleted)
		expectNoOutcome(t, s)
	})
}

func TestEachJobTimesOutAtItsOwnDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newTestExecutor(t, ExecutorOptions{})
		s := e.newSubmitter()
		t0 := time.Now()
		expectTimedOutAt := func(ref executionRef, key string, at time.Duration) {
			t.Helper()
			expectOutcome(t, s, ref, key, outcomeTimedOut)
			if got := time.Since(t0); got != at {
				t.Errorf("%s timed out after %v, want %v", key, got, at)
			}
		}
		long := mustSubmit(t, s, "long", 100*time.Millisecond, (newFakeWork(nil)).honouringCtx)
		// Submitted later with an earlier deadline.
		short := mustSubmit(t, s, "short", 10*time.Millisecond, (newFakeWork(nil)).honouringCtx)
		expectTimedOutAt(short, "short", 10*time.Millisecond)

		// A job that finishes before its deadline leaves the others' deadlines as they were.
		quick := newFakeWork("quick")
		quickRef := mustSubmit(t, s, "quick", 20*time.Millisecond, quick.ignoringCtx)
		close(quick.release)
		expectOutcome(t, s, quickRef, "quick", outcomeCompleted)
		expectTimedOutAt(long, "long", 100*time.Millisecond)

		// Jobs with the same deadline time out together.
		a := mustSubmit(t, s, "a", 50*time.Millisecond, (newFakeWork(nil)).honouringCtx)
		b := mustSubmit(t, s, "b", 50*time.Millisecond, (newFakeWork(nil)).honouringCtx)
		got := map[executionRef]outcomeKind{}
		for range 2 {
			o := receive(t, s)
			got[o.ref] = o.kind
		}
		if got[a] != outcomeTimedOut || got[b] != outcomeTimedOut || time.Since(t0) != 150*time.Millisecond {
			t.Errorf("after %v: outcomes %v, want both timed out after 150ms", time.Since(t0), got)
		}
	})
}

func TestWorkReturningAtItsDeadlineIsTimedOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newTestExecutor(t, ExecutorOptions{MaxConcurrency: 100})
		s := e.newSubmitter()
		// Each function returns as soon as its deadline cancels its context,
		// racing the executor's own deadline timer; the outcome must not
		// depend on which wins.
		const jobs = 100
		for range jobs {
			mustSubmit(t, s, "", 10*time.Millisecond, func(ctx context.Context) any {
				<-ctx.Done()
				return "returned at the deadline"
			})
		}
		for range jobs {
			if o := receive(t, s); o.kind != outcomeTimedOut || o.value != nil {
				t.Fatalf("outcome %v with value %v, want timedOut without a value", o.kind, o.value)
			}
		}
	})
}

func TestJobContextCancelsContextsDerivedFromIt(t *testing.T) {
	tests := []struct {
		name    string
		timeout time.Duration
		end     func(s *submitter, w *fakeWork) // ends the job while its work runs
		wantErr error
	}{
		{"Cancel", -1, func(s *submitter, _ *fakeWork) { s.cancel("k") }, context.Canceled},
		{"deadline", 10 * time.Millisecond, func(*submitter, *fakeWork) {}, context.DeadlineExceeded},
		{"Close", -1, func(s *submitter, _ *fakeWork) { s.close() }, context.Canceled},
		{"return", -1, func(_ *submitter, w *fakeWork) { close(w.release) }, context.Canceled},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newTestExecutor(t, ExecutorOptions{})
				s := e.newSubmitter()
				w := newFakeWork(nil)
				mustSubmit(t, s, "k", tc.timeout, w.ignoringCtx)
				waitClosed(t, w.started, "start")
				child, cancelChild := context.WithCancel(w.ctx)
				defer cancelChild()
				afterFuncRan := make(chan struct{})
				context.AfterFunc(w.ctx, func() { close(afterFuncRan) })
				stoppedRan := make(chan struct{})
				stop := context.AfterFunc(w.ctx, func() { close(stoppedRan) })
				if !stop() || stop() {
					t.Error("stop() before cancellation: want true once, then false")
				}
				if child.Err() != nil || w.ctx.Value("any") != nil {
					t.Fatalf("before the end: child.Err() = %v, Value = %v", child.Err(), w.ctx.Value("any"))
				}

				tc.end(s, w)
				waitClosed(t, child.Done(), "the derived context's cancellation")
				waitClosed(t, afterFuncRan, "the AfterFunc call")
				synctest.Wait()
				if isClosed(stoppedRan) {
					t.Error("a stopped AfterFunc ran")
				}
				for name, ctx := range map[string]context.Context{"job": w.ctx, "derived": child} {
					if err := ctx.Err(); err != tc.wantErr {
						t.Errorf("%s context's Err() = %v, want %v", name, err, tc.wantErr)
					}
				}
				if !isClosed(w.ctx.Done()) {
					t.Error("Done() called after cancellation is not closed")
				}
				lateRan := make(chan struct{})
				if context.AfterFunc(w.ctx, func() { close(lateRan) })() {
					t.Error("stop() after cancellation returned true")
				}
				waitClosed(t, lateRan, "an AfterFunc registered after cancellation")
				if !isClosed(w.release) {
					close(w.release)
				}
			})
		})
	}
}

func TestNegativeTimeoutMeansNoDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newTestExecutor(t, ExecutorOptions{Timeout: time.Millisecond})
		s := e.newSubmitter()
		endless := newFakeWork("done")
		endlessRef := mustSubmit(t, s, "endless", -1, endless.ignoringCtx)
		waitClosed(t, endless.started, "start")
		if _, ok := endless.ctx.Deadline(); ok {
			t.Error("a job submitted with a negative timeout has a deadline")
		}
		// Five seconds of fake time pass: the endless job, had it the 1ms default, would time out first.
		later := newFakeWork(nil)
		laterRef := mustSubmit(t, s, "later", 5*time.Second, later.honouringCtx)
		expectOutcome(t, s, laterRef, "later", outcomeTimedOut)
		expectNoOutcome(t, s)
		close(endless.release)
		expectOutcome(t, s, endlessRef, "endless", outcomeCompleted)
	})
}

func TestFailingWorkBecomesFailedAndTheExecutorKeepsServing(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name      string
		fail      func()
		wantPanic any
	}{
		{"panic with a string", func() { panic("boom") }, "boom"},
		{"panic with an error", func() { panic(boom) }, boom},
		{"runtime.Goexit", runtime.Goexit, errWorkGoexit},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newTestExecutor(t, ExecutorOptions{MaxConcurrency: 1})
			s := e.newSubmitter()
			release := make(chan struct{})
			failingRef := mustSubmit(t, s, "failing", 0, func(context.Context) any {
				<-release
				tc.fail()
				return "unreachable"
			})
			// Queued behind the failing job, so it must inherit the failing job's slot.
			nextRef := mustSubmit(t, s, "next", 0, returning("next"))
			close(release)

			o := expectOutcome(t, s, failingRef, "failing", outcomeFailed)
			if o.panicValue != tc.wantPanic || o.value != nil {
				t.Errorf("failed outcome: Panic %v, Value %v; want Panic %v, Value nil", o.panicValue, o.value, tc.wantPanic)
			}
			expectOutcome(t, s, nextRef, "next", outcomeCompleted)
			again := mustSubmit(t, s, "failing", 0, returning(nil))
			expectOutcome(t, s, again, "failing", outcomeCompleted)
			expectStats(t, e, 0, 0)
		})
	}
}

func TestSubmittersShareAnExecutorWithoutKeyCollisions(t *testing.T) {
	e := newTestExecutor(t, ExecutorOptions{MaxConcurrency: 4})
	a, b := e.newSubmitter(), e.newSubmitter()
	wa, wb := newFakeWork("from a"), newFakeWork("from b")
	refA := mustSubmit(t, a, "1", 0, wa.ignoringCtx)
	refB := mustSubmit(t, b, "1", 0, wb.ignoringCtx)
	waitClosed(t, wa.started, "a's job start")
	waitClosed(t, wb.started, "b's job start")
	if refA == refB {
		t.Fatalf("both submitters got ref %d", refA)
	}
	if _, err := b.submitWork("1", 0, returning(nil)); !errors.Is(err, errDuplicateKey) {
		t.Errorf("duplicate on b: err = %v, want errDuplicateKey", err)
	}

	if !a.cancel("1") {
		t.Fatal("a.Cancel(1) found no job")
	}
	expectOutcome(t, a, refA, "1", outcomeCancelled)
	if isClosed(wb.ctx.Done()) {
		t.Error("cancelling a's key 1 cancelled b's job")
	}
	close(wb.release)
	o := expectOutcome(t, b, refB, "1", outcomeCompleted)
	if o.value != "from b" {
		t.Errorf("b got value %v", o.value)
	}
	close(wa.release)
	expectNoOutcome(t, a)
	expectNoOutcome(t, b)
}

func TestSubmitterCloseDeliversNothingMoreAndFreesCapacityOnReturn(t *testing.T) {
	e := newTestExecutor(t, ExecutorOptions{MaxConcurrency: 1, MaxQueue: 1})
	closing, other := e.newSubmitter(), e.newSubmitter()
	// done's outcome is delivered (buffered, unread) before running starts
	// on the slot done leaves.
	done := newFakeWork(nil)
	mustSubmit(t, closing, "done", 0, done.ignoringCtx)
	waitClosed(t, done.started, "done start")
	running := newFakeWork("late")
	mustSubmit(t, closing, "running", 0, running.ignoringCtx)
	close(done.release)
	waitClosed(t, running.started, "running start")
	queuedRan := make(chan struct{})
	mustSubmit(t, closing, "", 0, func(context.Context) any { close(queuedRan); return nil })

	closing.close()
	closing.close() // idempotent
	if _, err := closing.submitWork("new", 0, returning(nil)); !errors.Is(err, errSubmitterClosed) {
		t.Errorf("submit after Close: err = %v, want errSubmitterClosed", err)
	}
	if closing.cancel("running") {
		t.Error("Cancel after Close found a job")
	}
	if !errors.Is(running.ctx.Err(), context.Canceled) {
		t.Errorf("running job's ctx.Err() = %v, want context.Canceled", running.ctx.Err())
	}
	expectNoOutcome(t, closing)

	// The closed submitter's running function still holds the only slot;
	// its queued job is gone, so the queue has room for another submitter.
	otherWork := newFakeWork("other")
	otherRef := mustSubmit(t, other, "running", 0, otherWork.ignoringCtx)
	expectStats(t, e, 1, 1)
	close(running.release)
	waitClosed(t, otherWork.started, "the other submitter's job start")
	close(otherWork.release)
	expectOutcome(t, other, otherRef, "running", outcomeCompleted)
	expectNoOutcome(t, closing)
	if isClosed(queuedRan) {
		t.Error("a queued job of the closed submitter ran")
	}
}

func TestExecutorCloseCancelsEverythingAndDeliversNothing(t *testing.T) {
	e := newTestExecutor(t, ExecutorOptions{MaxConcurrency: 2})
	a, b := e.newSubmitter(), e.newSubmitter()
	honouring, ignoring := newFakeWork(nil), newFakeWork(nil)
	mustSubmit(t, a, "h", 0, honouring.honouringCtx)
	mustSubmit(t, b, "i", 0, ignoring.ignoringCtx)
	waitClosed(t, honouring.started, "honouring start")
	waitClosed(t, ignoring.started, "ignoring start")
	mustSubmit(t, a, "q", 0, returning(nil))
	expectStats(t, e, 2, 1)

	e.Close()
	if !isClosed(e.done) {
		t.Fatal("done is not closed after Close")
	}
	e.Close() // idempotent
	for _, s := range []*submitter{a, b, e.newSubmitter()} {
		if _, err := s.submitWork("x", 0, returning(nil)); !errors.Is(err, ErrExecutorClosed) {
			t.Errorf("submit after executor Close: err = %v, want ErrExecutorClosed", err)
		}
	}
	waitClosed(t, honouring.returned, "the honouring function's return")
	if !errors.Is(honouring.ctxErr, context.Canceled) {
		t.Errorf("ctx.Err() after Close = %v, want context.Canceled", honouring.ctxErr)
	}
	// The honouring function's slot is freed once the executor sees its
	// return; the ignoring function's is held until it returns.
	eventually(t, "the honouring function's slot being freed", func() bool { return e.Stats().Running == 1 })
	close(ignoring.release)
	waitForGoroutines(t, e)
	expectStats(t, e, 0, 0)
	expectNoOutcome(t, a)
	expectNoOutcome(t, b)
}

func TestSlowReaderLosesNoOutcomeAndCancelNeverBlocks(t *testing.T) {
	e := newTestExecutor(t, ExecutorOptions{MaxConcurrency: 4, MaxQueue: 200})
	s := e.newSubmitter()
	const jobs = 2 * outcomeBuffer
	// Twice, so the second round needs a new pump after the first one drained the mailbox.
	for round := range 2 {
		want := make(map[executionRef]bool, jobs+1)
		returned := make(chan struct{}, jobs)
		for range jobs {
			ref := mustSubmit(t, s, "", 0, func(context.Context) any { returned <- struct{}{}; return nil })
			want[ref] = true
		}
		for range jobs {
			<-returned
		}
		// Nobody has read yet: a cancellation from the reader's own goroutine must not block.
		blocked := newFakeWork(nil)
		cancelRef := mustSubmit(t, s, "c", 0, blocked.ignoringCtx)
		if !s.cancel("c") {
			t.Fatal("Cancel(c) found no job")
		}
		want[cancelRef] = true
		close(blocked.release)

		for range len(want) {
			o := receive(t, s)
			if !want[o.ref] {
				t.Fatalf("round %d: unexpected or repeated outcome %+v", round, o)
			}
			delete(want, o.ref)
		}
	}
}

func TestExactlyOneOutcomePerJobWhenCancelRacesCompletionAndDeadline(t *testing.T) {
	e := newTestExecutor(t, ExecutorOptions{MaxConcurrency: 4, MaxQueue: 1000, Timeout: -1})
	s := e.newSubmitter()
	const jobs = 1000

	stop := make(chan struct{})
	allSeen := make(chan struct{})
	collected := make(chan map[executionRef][]jobOutcome)
	go func() {
		got := make(map[executionRef][]jobOutcome, jobs)
		for {
			select {
			case o := <-s.outcomes:
				got[o.ref] = append(got[o.ref], o)
				if len(got) == jobs && len(got[o.ref]) == 1 {
					close(allSeen)
				}
			case <-stop:
				collected <- got
				return
			}
		}
	}()

	// Jobs come in batches held at a gate; opening the gate races the batch's
	// completions against cancellations of two thirds of its keys, in random
	// order, so some are cancelled while queued, some while running, and some
	// too late. A third of the jobs also race a deadline of a few dozen
	// microseconds.
	const batch = 50
	rng := rand.New(rand.NewPCG(1, 2))
	refs := make(map[string]executionRef, jobs)
	hasDeadline := make(map[string]bool)
	wasCancelled := make(map[string]bool)
	for first := 0; first < jobs; first += batch {
		gate := make(chan struct{})
		keys := make([]string, batch)
		for i := range keys {
			key := fmt.Sprint("k", first+i)
			keys[i] = key
			spins := rng.IntN(20)
			timeout := time.Duration(-1)
			if rng.IntN(3) == 0 {
				timeout = time.Duration(10+rng.IntN(50)) * time.Microsecond
				hasDeadline[key] = true
			}
			refs[key] = mustSubmit(t, s, key, timeout, func(context.Context) any {
				<-gate
				for range spins {
					runtime.Gosched()
				}
				return key
			})
		}
		rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
		toCancel := keys[:2*batch/3]
		found := make(chan []string)
		go func() {
			var cancelled []string
			for i, key := range toCancel {
				for range i % 7 {
					runtime.Gosched()
				}
				if s.cancel(key) {
					cancelled = append(cancelled, key)
				}
			}
			found <- cancelled
		}()
		close(gate)
		for _, key := range <-found {
			wasCancelled[key] = true
		}
	}
	waitClosed(t, allSeen, "an outcome for every job")
	e.Close()               // idle workers stay parked until Close
	waitForGoroutines(t, e) // every worker and pump has finished delivering
	close(stop)
	got := <-collected

	if len(got) != jobs {
		t.Fatalf("outcomes for %d refs, want %d", len(got), jobs)
	}
	kinds := make(map[outcomeKind]int)
	for key, ref := range refs {
		outs := got[ref]
		if len(outs) != 1 {
			t.Fatalf("job %s got %d outcomes: %+v", key, len(outs), outs)
		}
		o := outs[0]
		switch {
		case o.key != key:
			t.Fatalf("job %s: outcome has key %q", key, o.key)
		case wasCancelled[key] && o.kind != outcomeCancelled:
			t.Fatalf("job %s: Cancel reported true but the outcome is %v", key, o.kind)
		case o.kind == outcomeTimedOut && !hasDeadline[key]:
			t.Fatalf("job %s without a deadline timed out", key)
		case !wasCancelled[key] && o.kind != outcomeTimedOut && (o.kind != outcomeCompleted || o.value != key):
			t.Fatalf("job %s: outcome %v with value %v, want completed with its key", key, o.kind, o.value)
		}
		kinds[o.kind]++
	}
	t.Logf("outcomes: %v; %d cancellations came too late", kinds, jobs/batch*(2*batch/3)-len(wasCancelled))
}

func TestExecutorGoroutinesExitAfterClose(t *testing.T) {
	baseline := runtime.NumGoroutine()
	e, err := NewExecutor(ExecutorOptions{MaxConcurrency: 2, Timeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	s := e.newSubmitter()
	// outcomes nobody reads, more than the channel buffers, keep a pump goroutine blocked.
	for range outcomeBuffer + 1 {
		mustSubmit(t, s, "", 0, returning(nil))
	}
	waitForPump(t, e, s)
	honouring, ignoring := newFakeWork(nil), newFakeWork(nil)
	mustSubmit(t, s, "h", 0, honouring.honouringCtx)
	mustSubmit(t, s, "i", 0, ignoring.ignoringCtx) // has a pending deadline timer
	waitClosed(t, honouring.started, "honouring start")
	waitClosed(t, ignoring.started, "ignoring start")
	mustSubmit(t, s, "queued", 0, returning(nil))
	expectStats(t, e, 2, 1)

	e.Close()
	close(ignoring.release)
	waitForGoroutines(t, e)
	// Helper goroutines of this test and of earlier ones may need a moment to exit.
	if !poll(func() bool { return runtime.NumGoroutine() <= baseline }) {
		stacks := make([]byte, 1<<16)
		stacks = stacks[:runtime.Stack(stacks, true)]
		t.Errorf("%d goroutines after Close and every function returned, baseline %d:\n%s",
			runtime.NumGoroutine(), baseline, stacks)
	}
}

// waitForPump returns once s's mailbox has a pump goroutine, which it has
// as soon as an outcome found the channel's buffer full.
func waitForPump(t *testing.T, e *Executor, s *submitter) {
	t.Helper()
	eventually(t, "a pump goroutine's start", func() bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		return s.pumping
	})
}

// eventually fails the test unless cond comes to hold; see poll.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if !poll(cond) {
		t.Fatalf("%s did not happen", what)
	}
}

// poll reports whether cond comes to hold within failAfter, yielding the
// processor between tries. It is only for states that no event signals (an
// internal flag, a goroutine count) and never sleeps.
func poll(cond func() bool) bool {
	for deadline := time.Now().Add(failAfter); time.Now().Before(deadline); runtime.Gosched() {
		if cond() {
			return true
		}
	}
	return cond()
}

func TestSubmitRejectsNilWork(t *testing.T) {
	e := newTestExecutor(t, ExecutorOptions{})
	if _, err := e.newSubmitter().submitWork("k", 0, nil); err == nil {
		t.Error("submit with nil work succeeded")
	}
}

// A worker whose queue is empty parks and takes the next admitted job, rather
// than exiting and leaving the next job to a fresh goroutine.
func TestIdleWorkerTakesTheNextJob(t *testing.T) {
	e := newTestExecutor(t, ExecutorOptions{MaxConcurrency: 2})
	s := e.newSubmitter()
	parked := func() int {
		e.mu.Lock()
		defer e.mu.Unlock()
		return len(e.idle)
	}
	for i := range 3 {
		mustSubmit(t, s, fmt.Sprint("k", i), 0, returning(i))
		select {
		case o := <-s.outcomes:
			if o.kind != outcomeCompleted || o.value != i {
				t.Fatalf("outcome %+v", o)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no outcome")
		}
		eventually(t, "the worker parking", func() bool { return parked() == 1 })
	}
	e.Close()
	waitForGoroutines(t, e)
}
