package main

// Submitters: admission of work (submitSized and its variants), cancel, close,
// and the delivery of outcomes to a reader that may be slow.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// submitter is one client's handle on a shared Executor. Its methods are safe
// for concurrent use.
type submitter struct {
	e      *Executor
	client *executorClient // whose share its jobs count against; read-only
	// outcomes delivers exactly one jobOutcome per admitted job until the
	// submitter (or the executor) is closed; buffered (outcomeBuffer, or
	// initSubmitter's), never closed. Jobs running at the same time deliver
	// in no particular order, but a job whose function returns hands its
	// outcome over before it gives up its slot, so with MaxConcurrency 1 the
	// outcomes of jobs of one client that complete arrive in the order the
	// jobs were admitted (while the reader keeps within the buffer; jobs of
	// several clients start in the order of executorClient's rule).
	// outcomes waiting for a slow reader are kept, however many, never
	// dropped, until the submitter closes.
	outcomes chan jobOutcome
	// closing is closed (under e.mu) when the submitter closes; it is made
	// (under e.mu) when the first pump starts, before the pump that reads
	// it, and never replaced: only a pump waits on it.
	closing chan struct{}
	// sendGate is held shared around the pump's send on outcomes (the only
	// send made without e.mu); Close takes it exclusively after closing
	// `closing`, so no send completes after Close returns.
	sendGate sync.RWMutex

	// Guarded by e.mu.
	closed  bool
	keys    map[string]*job // keyed jobs that are queued or running, outcome undecided; made on first use
	active  jobList         // every job with an undecided outcome, keyed or not
	mailbox outcomeQueue    // outcomes no reader has taken yet
	pumping bool            // a pump goroutine is draining mailbox
}

// submitWork admits work of size 0 under key: submitSized(key, 0, timeout, work).
func (s *submitter) submitWork(key string, timeout time.Duration, work func(ctx context.Context) any) (executionRef, error) {
	return s.submitSized(key, 0, timeout, work)
}

// submitSized admits work under key. key "" means unkeyed: never a duplicate, not
// cancellable by key (e.g. notifications). size is what the job holds in
// memory while it is admitted, in bytes (for a transport, the length of the
// message it serves); it counts against MaxInflightBytes from admission
// until the job leaves the queue without running or its function returns.
// Errors, in order of precedence:
// ErrExecutorClosed, errSubmitterClosed, errDuplicateKey (the key is admitted
// and its outcome not yet delivered or cancelled), errOverloaded (the job
// cannot start and MaxQueue jobs are queued, with no other client's queued
// job to displace, or its client holds MaxClientQueue while others wait;
// or size does not fit in what is left of MaxInflightBytes, or of its
// client's share, while other bytes are in flight). Otherwise the job starts
// at once (a slot is free and its client runs fewer than
// MaxClientConcurrency jobs) or is appended to its client's FIFO queue, and
// exactly one jobOutcome for it will be delivered unless the submitter or the
// executor is closed first; a reader on another goroutine may receive it
// before submit returns.
//
// timeout 0 uses the executor's default; negative means no deadline. The
// deadline starts when the job starts running, not when it is queued. work
// gets a context (without values) cancelled by Cancel, by the deadline
// (ctx.Err() is then context.DeadlineExceeded), by Close, and when work
// returns. A nil work or a negative size is an error. submitSized never
// blocks on running work.
func (s *submitter) submitSized(key string, size int, timeout time.Duration, work func(ctx context.Context) any) (executionRef, error) {
	switch {
	case work == nil:
		return 0, errNilWork
	case size < 0:
		return 0, fmt.Errorf("executor: submitSized called with negative size %d", size)
	}
	return s.submit(&job{key: key, work: workFunc(work), indexed: key != "", size: size}, timeout)
}

// submitReserved admits work under key as submitSized does, its bytes being
// those of r instead of a size: they are counted already, so the job is
// never refused for bytes. The job holds r from admission until it leaves the
// queue unrun or its function returns; r's bytes are free once the job and
// the caller (release) have both let go of it, so the caller may keep them
// counted after the job, e.g. until an answer is written. r must not be
// released yet (else an error); it may belong to another client than s.
func (s *submitter) submitReserved(key string, r *reservation, timeout time.Duration, work func(ctx context.Context) any) (executionRef, error) {
	switch {
	case work == nil:
		return 0, errNilWork
	case r == nil:
		return 0, errors.New("executor: submitReserved called with a nil reservation")
	}
	return s.submit(&job{key: key, work: workFunc(work), indexed: key != "", hold: r}, timeout)
}

// submit admits j as submitSized does. j is a new, zero job record but for
// key, work, indexed, size (≥ 0) or hold, and ctx.values, which the caller
// sets; it may be part of a larger record
// of the caller's, so a job costs no allocation of its own. An unindexed job
// (indexed false) is not registered under its key, which then only tags its
// Outcome: it is never refused as a duplicate, and it is cancelled with
// cancelJob, not Cancel. That spares a map insert and delete per job to an
// owner that refuses duplicate keys itself.
func (s *submitter) submit(j *job, timeout time.Duration) (executionRef, error) {
	e := s.e
	if timeout == 0 {
		timeout = e.timeout
	}
	j.sub, j.timeout, j.deadlineIndex = s, timeout, -1
	e.mu.Lock()
	startNow, err := e.admitLocked(j)
	var inbox chan *job
	if startNow {
		inbox = e.takeIdleLocked()
		if inbox == nil {
			e.goroutines.Add(1)
		}
	}
	ref := j.ref
	e.mu.Unlock()
	if err != nil {
		return 0, err
	}
	switch {
	case inbox != nil:
		// Buffered and empty, and no one else sends to an inbox taken from
		// e.idle; sent after unlocking so the wake-up is not under e.mu.
		inbox <- j
	case startNow:
		go e.work(j)
	}
	return ref, nil
}

// cancel cancels the job admitted under key and reports whether one was found.
// A queued job is removed and never runs; a running job's context is
// cancelled. Either way its outcomeCancelled is delivered at once (without
// waiting for the work to return) and the key is free immediately. A running
// job keeps its concurrency slot until its function actually returns (Go
// cannot kill a goroutine), so capacity is never over-admitted; its late
// return is discarded. cancel never blocks on delivery: it is safe to call
// from the goroutine that reads outcomes.
func (s *submitter) cancel(key string) bool {
	if key == "" {
		return false
	}
	e := s.e
	e.mu.Lock()
	defer e.mu.Unlock()
	return s.cancelLocked(s.keys[key])
}

// cancelJob cancels j, a job submitted through s, as Cancel does, and reports
// whether its outcome was still undecided. It is how an unindexed job (see
// submit) is cancelled.
func (s *submitter) cancelJob(j *job) bool {
	e := s.e
	e.mu.Lock()
	defer e.mu.Unlock()
	return s.cancelLocked(j)
}

// cancelLocked stops j, unless it is nil or its outcome is decided, and
// delivers its outcomeCancelled.
func (s *submitter) cancelLocked(j *job) bool {
	if j == nil || j.sub != s || (j.state != jobQueued && j.state != jobRunning) {
		return false
	}
	s.e.stopLocked(j)
	s.deliverLocked(jobOutcome{ref: j.ref, key: j.key, kind: outcomeCancelled})
	return true
}

// close cancels all of this submitter's jobs (queued ones are dropped, running
// ones' contexts are cancelled) and delivers nothing more for them: once close
// returns, nothing can be received from outcomes any more (outcomes still in
// the channel's buffer are discarded too). Running functions keep their slots
// until they return. submit then fails with errSubmitterClosed. Idempotent;
// safe to call from the goroutine that reads outcomes.
func (s *submitter) close() {
	e := s.e
	e.mu.Lock()
	if !s.closed {
		e.closeSubmitterLocked(s)
	}
	e.mu.Unlock()
	s.silence()
}

// deliverLocked hands o to the submitter's reader without ever blocking: into
// the channel if it has room, otherwise through the mailbox and its pump. On
// a closed submitter o is dropped.
func (s *submitter) deliverLocked(o jobOutcome) {
	if s.closed {
		return
	}
	select {
	case s.outcomes <- o:
		return
	default:
	}
	s.mailbox.push(o)
	if !s.pumping {
		s.pumping = true
		if s.closing == nil {
			s.closing = make(chan struct{})
		}
		s.e.goroutines.Add(1)
		go s.pump()
	}
}

// pump drains the mailbox into the outcomes channel, blocking on the reader,
// and exits when the mailbox is empty or the submitter closes.
func (s *submitter) pump() {
	defer s.e.goroutines.Done()
	for {
		o, ok := s.takeMail()
		if !ok || !s.sendOrClose(o) {
			return
		}
	}
}

// takeMail pops the oldest mailbox outcome; when there is none (or the
// submitter closed) it marks the pump stopped and reports false.
func (s *submitter) takeMail() (jobOutcome, bool) {
	s.e.mu.Lock()
	defer s.e.mu.Unlock()
	if !s.closed {
		if o, ok := s.mailbox.pop(); ok {
			return o, true
		}
	}
	s.pumping = false
	return jobOutcome{}, false
}

// sendOrClose blocks until the reader takes o (true) or the submitter closes
// (false).
func (s *submitter) sendOrClose(o jobOutcome) bool {
	s.sendGate.RLock()
	defer s.sendGate.RUnlock()
	select {
	case <-s.closing:
		return false
	default:
	}
	select {
	case s.outcomes <- o:
		return true
	case <-s.closing:
		return false
	}
}

// silence finishes closing s: it waits until no send on s.outcomes is in
// progress (none can start, as s.closing is closed) and then discards what
// the channel still buffers, so nothing can be received from it afterwards.
func (s *submitter) silence() {
	s.sendGate.Lock()
	s.sendGate.Unlock() // the empty critical section is the point: it waits out the shared holders
	for {
		select {
		case <-s.outcomes:
		default:
			return
		}
	}
}
