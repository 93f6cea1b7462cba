package main

// Running jobs: the admission rules, the start of a job and its deadline,
// cancellation, the workers, and settling a job whose function returned.

import (
	"container/heap"
	"context"
	"time"
)

// jobState is where a job is in its life; it decides who owns its outcome.
type jobState uint8

const (
	jobQueued    jobState = iota + 1 // in its client's queue; no slot, no deadline yet
	jobRunning                       // holds a slot; outcome undecided
	jobAbandoned                     // holds a slot; outcome already decided (cancelled, timed out or closed)
	jobFinished                      // holds nothing: returned, or removed from the queue
)

// job is the record of one admitted piece of work.
type job struct {
	// Set before the job is published under e.mu; read-only after.
	ref     executionRef
	key     string
	sub     *submitter
	work    jobWork
	timeout time.Duration // negative means no deadline
	// size is the bytes counted in e.bytes and its client's while the job
	// is queued or holds a slot; it grows (growJob, under e.mu) while the
	// job runs.
	size int
	// hold is the reservation whose bytes the job holds, while it is
	// queued or holds a slot, instead of a size of its own; nil for none.
	hold *reservation

	ctx jobContext // what work receives; its deadline is set under e.mu when the job starts

	// deadlineIndex is j's position in e.deadlines, -1 when not there;
	// guarded by e.mu. An int32 (the heap holds running jobs, nowhere near
	// 2^31), so that it shares a word with indexed and state and the record
	// fits a 192-byte allocation.
	deadlineIndex int32
	indexed       bool     // in sub.keys under key while its outcome is undecided; read-only once published
	state         jobState // guarded by e.mu

	links [2]jobLinkage // queue and active-set links; guarded by e.mu
}

// jobWork is what a job runs. submit's function is a workFunc; an owner that
// submits its own job records (see submit) may implement it on them, so its
// work needs no closure.
type jobWork interface {
	execute(ctx context.Context) any
}

// workFunc is a work function as submit takes it.
type workFunc func(ctx context.Context) any

func (f workFunc) execute(ctx context.Context) any { return f(ctx) }

// admitLocked applies the admission rules to j and, when admitted, registers
// it and either starts it (startNow; the caller must spawn its worker) or
// queues it.
func (e *Executor) admitLocked(j *job) (startNow bool, err error) {
	s := j.sub
	switch {
	case e.closed:
		return false, ErrExecutorClosed
	case s.closed:
		return false, errSubmitterClosed
	case j.indexed && s.keys[j.key] != nil:
		return false, errDuplicateKey
	case j.hold != nil && j.hold.freed():
		return false, errReservationReleased
	}
	c := s.client
	// While a slot is free no job waits (see popReadyLocked), so the job
	// starts: a client alone may take every slot.
	startNow = e.running < e.maxConcurrency
	var displaced *job
	if !startNow {
		var room bool
		if room, displaced = e.queueRoomLocked(c); !room {
			return false, errOverloaded
		}
	}
	if !e.fitsLocked(c, j.size, 0) {
		return false, errOverloaded
	}
	if displaced != nil {
		e.refuseQueuedLocked(displaced)
	}
	e.chargeLocked(c, j.size)
	if j.hold != nil {
		j.hold.jobs++
	}
	e.lastRef++
	j.ref = e.lastRef
	if j.indexed {
		if s.keys == nil {
			s.keys = make(map[string]*job)
		}
		s.keys[j.key] = j
	}
	s.active.pushBack(j)
	if startNow {
		e.running++
		c.running++
		if e.running == 1 && e.busy != nil {
			e.busy(true)
		}
		e.startLocked(j)
	} else {
		j.state = jobQueued
		c.queue.pushBack(j)
		e.queued++
		e.updateReadyLocked(c)
	}
	return startNow, nil
}

// startLocked moves j to running; the caller has given it a slot. Its
// deadline is set here, so it counts from the start.
func (e *Executor) startLocked(j *job) {
	j.state = jobRunning
	if j.timeout >= 0 {
		j.ctx.deadline = time.Now().Add(j.timeout)
		heap.Push(&e.deadlines, j)
		e.armLocked(j.ctx.deadline)
	}
}

// armLocked makes sure the deadline timer fires no later than at. The timer
// is deliberately not re-armed later when a job leaves the heap: firing
// early costs one wake-up that finds nothing due, where re-arming would cost
// a timer update per job.
func (e *Executor) armLocked(at time.Time) {
	if !e.timerAt.IsZero() && !at.Before(e.timerAt) {
		return
	}
	e.timerAt = at
	if e.deadlineTimer == nil {
		e.deadlineTimer = time.AfterFunc(time.Until(at), e.expireDue)
	} else {
		e.deadlineTimer.Reset(time.Until(at))
	}
}

// expireDue runs on the deadline timer's goroutine. Every running job whose
// deadline has passed is timed out: its context is cancelled with
// context.DeadlineExceeded and outcomeTimedOut is delivered, without waiting
// for the work to return. Deciding and cancelling under one lock means that
// work which saw its deadline is always timed out. Then the timer is armed
// for the next deadline.
func (e *Executor) expireDue() {
	e.mu.Lock()
	e.timerAt = time.Time{}
	now := time.Now()
	for len(e.deadlines) > 0 && !e.deadlines[0].ctx.deadline.After(now) {
		j := e.deadlines[0]
		e.abandonLocked(j)
		j.ctx.cancel(context.DeadlineExceeded)
		j.sub.deliverLocked(jobOutcome{ref: j.ref, key: j.key, kind: outcomeTimedOut})
	}
	if len(e.deadlines) > 0 {
		e.armLocked(e.deadlines[0].ctx.deadline)
	}
	e.mu.Unlock()
}

// refuseQueuedLocked takes j, a queued job, out of the queue to make room
// for another client's job, and delivers its outcomeRefused: it never runs.
func (e *Executor) refuseQueuedLocked(j *job) {
	e.dequeueLocked(j)
	j.sub.deliverLocked(jobOutcome{ref: j.ref, key: j.key, kind: outcomeRefused})
}

// dequeueLocked removes j, a queued job, from the queue for good: it
// never runs, its key is free and its bytes are released.
func (e *Executor) dequeueLocked(j *job) {
	c := j.sub.client
	c.queue.remove(j)
	e.queued--
	e.updateReadyLocked(c)
	e.forgetLocked(j)
	e.releaseJobBytesLocked(j)
	j.state = jobFinished
}

// stopLocked ends j's claim to an outcome because it was cancelled or its
// submitter closed: a queued job leaves the queue and never runs; a running
// job's context is cancelled and its slot stays held until it returns.
func (e *Executor) stopLocked(j *job) {
	if j.state == jobQueued {
		e.dequeueLocked(j)
		return
	}
	e.abandonLocked(j)
	j.ctx.cancel(context.Canceled)
}

// abandonLocked decides a running job's outcome ahead of its return: the key
// is freed and the late return will be discarded. The slot stays held.
func (e *Executor) abandonLocked(j *job) {
	e.forgetLocked(j)
	j.state = jobAbandoned
}

// forgetLocked removes j from its submitter's key map and active set and
// from the deadline heap: its outcome is decided.
func (e *Executor) forgetLocked(j *job) {
	if j.deadlineIndex >= 0 {
		heap.Remove(&e.deadlines, int(j.deadlineIndex))
	}
	s := j.sub
	if j.indexed {
		delete(s.keys, j.key)
	}
	s.active.remove(j)
}

// closeSubmitterLocked stops every job of s, discards its undelivered
// outcomes and marks it closed. The caller must then call s.silence after
// releasing e.mu.
func (e *Executor) closeSubmitterLocked(s *submitter) {
	for j := s.active.head; j != nil; {
		next := j.links[activeLinks].next
		e.stopLocked(j)
		j = next
	}
	s.closed = true
	s.mailbox = outcomeQueue{}
	if s.closing != nil {
		close(s.closing)
	}
	delete(e.submitters, s)
}

// work is a worker goroutine: it runs j and then every job the queue hands
// it; when the queue is empty it parks on its inbox until submit hands it a
// job, so that a busy executor neither starts a goroutine per job nor grows a
// fresh stack for each. It exits when the executor closes (Close sends it
// nil), or when enough workers are parked already.
func (e *Executor) work(j *job) {
	defer e.goroutines.Done()
	inbox := make(chan *job, 1)
	for j != nil {
		var parked bool
		if j, parked = e.runJob(j, inbox); parked {
			j = <-inbox
		}
	}
}

// takeIdleLocked removes a parked worker from e.idle, most recently parked
// first (its stack is warm), and returns its inbox, or nil when none is
// parked. The caller must send the worker a job.
func (e *Executor) takeIdleLocked() chan *job {
	n := len(e.idle)
	if n == 0 {
		return nil
	}
	inbox := e.idle[n-1]
	e.idle[n-1] = nil
	e.idle = e.idle[:n-1]
	return inbox
}

// runJob calls j's work function, recovering a panic, and settles j (see
// finish). It returns the next job for this goroutine, or parked when the
// worker is now registered idle and must wait on inbox; with neither, the
// worker exits. If the work calls runtime.Goexit this goroutine cannot
// continue, so it does not park and the next job gets a fresh worker.
func (e *Executor) runJob(j *job, inbox chan *job) (next *job, parked bool) {
	returned := false
	defer func() {
		if returned {
			return
		}
		cause := recover()
		goexit := cause == nil
		if goexit {
			cause = errWorkGoexit
			inbox = nil
		}
		next, parked = e.finish(j, outcomeFailed, nil, cause, inbox)
		if goexit && next != nil {
			e.goroutines.Add(1)
			go e.work(next)
		}
	}()
	value := j.work.execute(&j.ctx)
	returned = true
	return e.finish(j, outcomeCompleted, value, nil, inbox)
}

// finish records that j's function returned, in one critical section: it
// decides the outcome if no one else has, cancels j's context and delivers
// the outcome without blocking, then hands j's slot to the next queued job
// that may start (returned, already started; see popReadyLocked) or frees
// it. The slot is given up only after
// the outcome is handed over, so work admitted meanwhile queues behind it and
// cannot overtake it. With no next job, a worker with an inbox (non-nil)
// parks: it is added to e.idle (parked true) unless the executor is closed or
// enough workers are parked already.
func (e *Executor) finish(j *job, kind outcomeKind, value, panicValue any, inbox chan *job) (next *job, parked bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if j.state == jobRunning {
		e.forgetLocked(j)
		// As net/http does when a handler returns: whatever the work left
		// watching its context is released, before the outcome is seen.
		j.ctx.cancel(context.Canceled)
		j.sub.deliverLocked(jobOutcome{ref: j.ref, key: j.key, kind: kind, value: value, panicValue: panicValue})
	}
	// Otherwise the job was abandoned earlier, its context cancelled and its
	// outcome delivered then. Either way its bytes are free only now.
	j.state = jobFinished
	e.releaseJobBytesLocked(j)
	c := j.sub.client
	c.running--
	e.updateReadyLocked(c)
	if next = e.popReadyLocked(); next != nil {
		e.startLocked(next) // the slot passes to next
		return next, false
	}
	e.running--
	if e.running == 0 && e.busy != nil {
		e.busy(false)
	}
	if inbox == nil || e.closed || len(e.idle) >= e.maxConcurrency {
		return nil, false
	}
	e.idle = append(e.idle, inbox)
	return nil, true
}
