package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"
)

func expectClientStats(t *testing.T, c *executorClient, want clientStats) {
	t.Helper()
	if got := c.stats(); got != want {
		t.Fatalf("client Stats() = %+v, want %+v", got, want)
	}
}

// startBlocked submits a job of s that blocks until released and waits for
// it to start.
func startBlocked(t *testing.T, s *submitter, key string) *fakeWork {
	t.Helper()
	w := newFakeWork(key)
	mustSubmit(t, s, key, 0, w.ignoringCtx)
	waitClosed(t, w.started, key+" start")
	return w
}

// With the default options a client's share is the whole executor: a single
// client (a stdio connection) may run MaxConcurrency jobs and queue MaxQueue.
func TestDefaultShareIsTheWholeExecutor(t *testing.T) {
	e := newTestExecutor(t, ExecutorOptions{MaxConcurrency: 3, MaxQueue: 2})
	s := e.newSubmitter()
	var held []*fakeWork
	for i := range 3 {
		held = append(held, startBlocked(t, s, fmt.Sprint("r", i)))
	}
	mustSubmit(t, s, "q0", 0, returning(nil))
	mustSubmit(t, s, "q1", 0, returning(nil))
	expectClientStats(t, s.client, clientStats{running: 3, queued: 2})
	if _, err := s.submitWork("q2", 0, returning(nil)); !errors.Is(err, errOverloaded) {
		t.Fatalf("beyond MaxQueue: err = %v, want errOverloaded", err)
	}
	for _, w := range held {
		close(w.release)
	}
	for range 5 {
		receive(t, s)
	}
}

// A freed slot goes to the client with queued work that runs the fewest
// jobs, not to the oldest queued job: a client that runs nothing is next.
// Among clients that run as many, the oldest queued job goes first.
func TestFreedSlotGoesToTheClientRunningFewest(t *testing.T) {
	e := newTestExecutor(t, ExecutorOptions{MaxConcurrency: 2, MaxQueue: 10})
	a, b, c := e.newSubmitter(), e.newSubmitter(), e.newSubmitter()
	a0, a1 := startBlocked(t, a, "a0"), startBlocked(t, a, "a1")
	ran := make(chan string, 4)
	queue := func(s *submitter, key string) {
		mustSubmit(t, s, key, 0, func(context.Context) any { ran <- key; return nil })
	}
	queue(a, "a2") // oldest, but its client runs two jobs
	queue(b, "b0")
	queue(c, "c0")
	queue(b, "b1")
	expectStats(t, e, 2, 4)

	// Only one slot cycles from here on, a1 holding the other: a runs one
	// job throughout, so its older job waits while b or c runs nothing.
	close(a0.release)
	for _, want := range []string{
		"b0", // b and c run nothing; b's job is older
		"c0", // b0 returned: b and c run nothing again; c's job is older than b1
		"b1", // b runs nothing, a one
		"a2",
	} {
		if got := <-ran; got != want {
			t.Fatalf("next queued job to run: %s, want %s", got, want)
		}
	}
	close(a1.release)
	for range 3 {
		receive(t, a)
	}
}

// Reserved bytes count against the budget and the client's share until they
// are released; a reservation grows while they fit.
func TestReservationCountsUntilReleased(t *testing.T) {
	e := newTestExecutor(t, ExecutorOptions{MaxInflightBytes: 100, MaxClientInflightBytes: 60})
	a, b := e.newClient(), e.newClient()
	small, err := b.reserve(5) // b holds bytes: a's share binds
	if err != nil {
		t.Fatal(err)
	}
	first, err := a.reserve(10)
	if err != nil {
		t.Fatal(err)
	}
	r, err := a.reserve(40)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.grow(10); err != nil {
		t.Fatalf("grow within the share: %v", err)
	}
	if err := r.grow(1); !errors.Is(err, errOverloaded) {
		t.Fatalf("grow beyond the share while another client holds bytes: err = %v, want errOverloaded", err)
	}
	if _, err := b.reserve(36); !errors.Is(err, errOverloaded) {
		t.Fatalf("reserve beyond the budget: err = %v, want errOverloaded", err)
	}
	other, err := b.reserve(35)
	if err != nil {
		t.Fatalf("reserve within the budget: %v", err)
	}
	if got := r.held(); got != 50 {
		t.Fatalf("Len = %d, want 50", got)
	}
	expectBytes(t, e, 100)
	if _, err := b.newSubmitter().submitSized("k", 1, 0, returning(nil)); !errors.Is(err, errOverloaded) {
		t.Fatalf("a job beyond the budget: err = %v, want errOverloaded", err)
	}
	r.release()
	r.release() // idempotent
	if got := r.held(); got != 0 {
		t.Fatalf("Len after release = %d, want 0", got)
	}
	if err := r.grow(1); err == nil {
		t.Fatal("grow after release succeeded")
	}
	expectBytes(t, e, 50)
	first.release()
	expectClientStats(t, a, clientStats{})
	other.release()
	small.release()
	expectBytes(t, e, 0)
	if _, err := a.reserve(-1); err == nil {
		t.Fatal("reserve(-1) succeeded")
	}
}

// A reservation alone may hold more than the budget, grown chunk by chunk
// as a body of unknown length is read, as one job larger than the budget is
// admitted alone; nothing else fits beside it.
func TestReservationLargerThanTheBudgetGrowsAlone(t *testing.T) {
	e := newTestExecutor(t, ExecutorOptions{MaxInflightBytes: 10})
	c := e.newClient()
	r, err := c.reserve(0)
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if err := r.grow(4); err != nil {
			t.Fatalf("grow of the only reservation: %v", err)
		}
	}
	if _, err := e.newClient().reserve(1); !errors.Is(err, errOverloaded) {
		t.Fatalf("reserve beside an over-budget reservation: err = %v, want errOverloaded", err)
	}
	r.release()
	expectBytes(t, e, 0)
}

// A job submitted with a reservation holds its bytes until its function
// returns, and the caller until it releases them: they are free when both
// let go, in either order. The job is never refused for its bytes.
func TestSubmitReservedHoldsTheBytesUntilBothLetGo(t *testing.T) {
	e := newTestExecutor(t, ExecutorOptions{MaxConcurrency: 1, MaxInflightBytes: 100})
	c := e.newClient()
	s := c.newSubmitter()

	r, err := c.reserve(100)
	if err != nil {
		t.Fatal(err)
	}
	w := newFakeWork(nil)
	ref, err := s.submitReserved("job", r, 0, w.ignoringCtx)
	if err != nil {
		t.Fatalf("submitReserved with the whole budget reserved: %v", err)
	}
	waitClosed(t, w.started, "job start")
	r.release() // the job still holds the bytes
	expectBytes(t, e, 100)
	close(w.release)
	expectOutcome(t, s, ref, "job", outcomeCompleted)
	expectBytes(t, e, 0)

	// The other order: the job returns first, the caller keeps the bytes
	// counted (an answer being written) until it releases them.
	r, _ = c.reserve(30)
	ref, err = s.submitReserved("job", r, 0, returning(nil))
	if err != nil {
		t.Fatal(err)
	}
	expectOutcome(t, s, ref, "job", outcomeCompleted)
	expectBytes(t, e, 30)
	r.release()
	expectBytes(t, e, 0)

	// A queued job that is cancelled lets go of its reservation at once.
	blocker := startBlocked(t, s, "blocker")
	r, _ = c.reserve(20)
	ref, err = s.submitReserved("queued", r, 0, returning(nil))
	if err != nil {
		t.Fatal(err)
	}
	r.release()
	expectBytes(t, e, 20)
	s.cancel("queued")
	expectOutcome(t, s, ref, "queued", outcomeCancelled)
	expectBytes(t, e, 0)
	close(blocker.release)
	receive(t, s)

	if _, err := s.submitReserved("late", r, 0, returning(nil)); err == nil {
		t.Fatal("submitReserved with a released reservation succeeded")
	}
	e.Close()
	if _, err := c.reserve(1); !errors.Is(err, ErrExecutorClosed) {
		t.Fatalf("reserve on a closed executor: err = %v, want ErrExecutorClosed", err)
	}
}

// checkClientInvariants checks, under the lock, that the executor's counts
// are the sums of its clients' and that no limit is exceeded, and that a
// client is ready exactly when it has a queued job, which never happens
// while a slot is free.
func checkClientInvariants(t *testing.T, e *Executor, clients []*executorClient) {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	running, queued, bytes := 0, 0, 0
	for i, c := range clients {
		running += c.running
		queued += c.queue.len
		bytes += c.bytes
		ready := c.queue.len > 0
		switch {
		case c.running > e.maxConcurrency || c.queue.len > e.maxQueue:
			t.Fatalf("client %d runs %d and queues %d, beyond the executor's limits", i, c.running, c.queue.len)
		case ready != (c.readyIndex >= 0):
			t.Fatalf("client %d: ready %v, in the ready heap at %d", i, ready, c.readyIndex)
		case ready && e.running < e.maxConcurrency:
			t.Fatalf("client %d is ready while %d of %d slots are held", i, e.running, e.maxConcurrency)
		}
	}
	if running != e.running || queued != e.queued || bytes != e.bytes || e.running > e.maxConcurrency || e.queued > e.maxQueue {
		t.Fatalf("executor: running %d queued %d bytes %d; clients' sums: %d %d %d", e.running, e.queued, e.bytes, running, queued, bytes)
	}
}

// TestClientSharesUnderRandomLoad drives several clients with random jobs,
// cancellations and reservations, from several goroutines, and checks the
// bookkeeping after every step: exactly one outcome per admitted job, and
// nothing held at the end.
func TestClientSharesUnderRandomLoad(t *testing.T) {
	e := newTestExecutor(t, ExecutorOptions{MaxConcurrency: 4, MaxQueue: 6, MaxInflightBytes: 200,
		MaxClientConcurrency: 2, MaxClientQueue: 3, MaxClientInflightBytes: 90})
	clients := make([]*executorClient, 4)
	for i := range clients {
		clients[i] = e.newClient()
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			c := clients[g]
			s := c.newSubmitter()
			admitted := map[executionRef]bool{}
			for i := range 300 {
				key := fmt.Sprint(i % 8)
				work := func(ctx context.Context) any {
					if i%3 == 0 {
						<-ctx.Done()
					}
					return nil
				}
				var ref executionRef
				var err error
				switch rng.IntN(4) {
				case 0:
					r, rerr := c.reserve(rng.IntN(40))
					if rerr != nil {
						continue
					}
					ref, err = s.submitReserved(key, r, 0, work)
					r.release()
				case 1:
					s.cancel(fmt.Sprint(rng.IntN(8)))
					continue
				default:
					ref, err = s.submitSized(key, rng.IntN(40), 0, work)
				}
				if err == nil {
					admitted[ref] = true
				}
				for len(s.outcomes) > 0 {
					o := <-s.outcomes
					if !admitted[o.ref] {
						t.Errorf("outcome for %d, not admitted or delivered twice", o.ref)
					}
					delete(admitted, o.ref)
				}
			}
			for _, key := range []string{"0", "1", "2", "3", "4", "5", "6", "7"} {
				s.cancel(key)
			}
			for len(admitted) > 0 {
				var o jobOutcome
				select {
				case o = <-s.outcomes:
				case <-time.After(failAfter):
					t.Errorf("client %d: %d outcomes missing", g, len(admitted))
					return
				}
				if !admitted[o.ref] {
					t.Errorf("outcome for %d, not admitted or delivered twice", o.ref)
				}
				delete(admitted, o.ref)
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for !isClosed(done) {
		checkClientInvariants(t, e, clients)
		runtime.Gosched()
	}
	eventually(t, "every job's function returning", func() bool { st := e.Stats(); return st.Running == 0 && st.Queued == 0 })
	checkClientInvariants(t, e, clients)
	expectBytes(t, e, 0)
}

// An answer is admitted as a message is: grown into the reservation of the
// body it answers, or checked on its own (fitsAnswer), it fits when its
// bytes fit beside what else is in flight, the request's own bytes
// excepted, or when nothing else is in flight, however large it is; and a
// client's share binds only while another client holds bytes.
func TestAnswerFitsAsAMessageIsAdmitted(t *testing.T) {
	for _, tc := range []struct {
		name        string
		share       int // MaxClientInflightBytes; the budget is 100
		body        int // the request's own bytes (a reservation), 0: none (stdio)
		others      int // bytes another client holds, 0: none
		ownMore     int // bytes another request of the same client holds
		answer      int
		fits        bool
		wantHeldNow int // what the executor counts after the answer was admitted
	}{
		{name: "beside others, within the budget", body: 30, others: 40, answer: 30, fits: true, wantHeldNow: 100},
		{name: "beside others, beyond the budget", body: 30, others: 40, answer: 31, fits: false, wantHeldNow: 70},
		{name: "alone, larger than the budget", body: 30, answer: 500, fits: true, wantHeldNow: 530},
		{name: "alone and bodiless, larger than the budget", answer: 500, fits: true, wantHeldNow: 0},
		{name: "bodiless beside others, within the budget", others: 40, answer: 60, fits: true, wantHeldNow: 40},
		{name: "bodiless beside others, beyond the budget", others: 40, answer: 61, fits: false, wantHeldNow: 40},
		{name: "beside the client's own other request, beyond the budget", body: 30, ownMore: 40, answer: 31, fits: false, wantHeldNow: 70},
		{name: "beyond the share while another client holds bytes", share: 50, body: 20, ownMore: 10, others: 10, answer: 21, fits: false, wantHeldNow: 40},
		{name: "within the share while another client holds bytes", share: 50, body: 20, ownMore: 10, others: 10, answer: 20, fits: true, wantHeldNow: 60},
		{name: "the client's only request beyond the share", share: 50, body: 30, others: 10, answer: 21, fits: true, wantHeldNow: 61},
		{name: "beyond the share alone", share: 50, body: 30, answer: 60, fits: true, wantHeldNow: 90},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newTestExecutor(t, ExecutorOptions{MaxInflightBytes: 100, MaxClientInflightBytes: tc.share})
			c := e.newClient()
			hold := func(client *executorClient, n int) {
				if n == 0 {
					return
				}
				r, err := client.reserve(n)
				if err != nil {
					t.Fatalf("reserve(%d): %v", n, err)
				}
				t.Cleanup(r.release)
			}
			hold(e.newClient(), tc.others)
			hold(c, tc.ownMore)
			var fits bool
			if tc.body == 0 {
				fits = c.fitsAnswer(tc.answer)
			} else {
				body, err := c.reserve(tc.body)
				if err != nil {
					t.Fatal(err)
				}
				defer body.release()
				err = body.grow(tc.answer)
				if fits = err == nil; !fits && !errors.Is(err, errOverloaded) {
					t.Fatalf("grow(%d) = %v, want nil or errOverloaded", tc.answer, err)
				}
			}
			if fits != tc.fits {
				t.Fatalf("the answer fits: %v, want %v", fits, tc.fits)
			}
			expectBytes(t, e, tc.wantHeldNow)
		})
	}
}

// A running job's answer is admitted before it is built (growJob) by the
// same rule: its bytes join the job's own (its size, or its reservation's),
// which are excepted; they are held until its function returns, or until
// the reservation is freed; a finished job counts nothing more.
func TestGrowJobAdmitsAnAnswerAsAMessage(t *testing.T) {
	for _, tc := range []struct {
		name      string
		reserved  bool // the job holds a reservation of its 30 bytes, else a size of 30
		others    int  // bytes another client holds
		grow      int
		fits      bool
		afterward int // bytes in flight once the job returned (a reservation not yet released)
	}{
		{name: "sized, within the budget", others: 40, grow: 30, fits: true, afterward: 40},
		{name: "sized, beyond the budget", others: 40, grow: 31, fits: false, afterward: 40},
		{name: "sized, alone, beyond the budget", grow: 500, fits: true, afterward: 0},
		{name: "reserved, within the budget", reserved: true, others: 40, grow: 30, fits: true, afterward: 100},
		{name: "reserved, beyond the budget", reserved: true, others: 40, grow: 31, fits: false, afterward: 70},
		{name: "reserved, alone, beyond the budget", reserved: true, grow: 500, fits: true, afterward: 530},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newTestExecutor(t, ExecutorOptions{MaxInflightBytes: 100})
			if tc.others > 0 {
				r, err := e.newClient().reserve(tc.others)
				if err != nil {
					t.Fatal(err)
				}
				defer r.release()
			}
			s := e.newSubmitter()
			grown := make(chan bool)
			j := &job{size: 30}
			if tc.reserved {
				r, err := s.client.reserve(30)
				if err != nil {
					t.Fatal(err)
				}
				defer r.release()
				j.size, j.hold = 0, r
			}
			j.work = workFunc(func(context.Context) any {
				grown <- e.growJob(j, tc.grow)
				<-grown
				return nil
			})
			if _, err := s.submit(j, 0); err != nil {
				t.Fatal(err)
			}
			if fits := <-grown; fits != tc.fits {
				t.Fatalf("growJob(%d) = %v, want %v", tc.grow, fits, tc.fits)
			}
			want := tc.others + 30
			if tc.fits {
				want += tc.grow
			}
			expectBytes(t, e, want)
			grown <- true // the job returns
			receive(t, s)
			eventually(t, "the job's bytes being released", func() bool { return e.Stats().InflightBytes == tc.afterward })
			if !e.growJob(j, 1) {
				t.Fatal("growJob of a finished job refused")
			}
			expectBytes(t, e, tc.afterward)
		})
	}
}
