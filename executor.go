package main

// The executor: transport-neutral admission, FIFO queue, per-job deadlines and
// cancellation (SPEC §5). It knows nothing of JSON-RPC. Several transports share
// one Executor; each gets a Submitter whose keys are scoped to it.
//
// Concurrency design, in short:
//   - One mutex (Executor.mu) guards all bookkeeping. Every race between a job's
//     completion, Cancel, its deadline and Close is decided under it, by the job's
//     state: whoever moves a job out of jobRunning (or jobQueued) owns its single
//     outcome, and hands it over before releasing the mutex (delivery never
//     blocks, see below). A worker settles a returned job, delivers its
//     outcome and takes its next job or parks, all in one critical section.
//   - A job's context is part of its record (jobContext). Deadlines need no
//     timer per job: running jobs with a deadline sit in a heap, and one
//     executor timer, armed for the earliest, both cancels a due job's
//     context and decides its outcome.
//   - A goroutine is started when a job is admitted while fewer than
//     MaxConcurrency are running and no worker is parked; when its job returns
//     it takes the next queued job itself, or parks on its own inbox channel
//     until Submit hands it one, so a busy executor spawns no goroutine per
//     job.
//   - Delivery never blocks, whoever delivers (a worker, Cancel, a deadline
//     timer): an outcome is offered to the buffered Outcomes channel without
//     waiting; if the buffer is full it goes to the submitter's mailbox, an
//     unbounded FIFO drained by one pump goroutine that exists only while the
//     mailbox is non-empty. A slow reader therefore costs memory (one Outcome
//     per pending result, not a goroutine per pending result), never a slot,
//     a worker or a caller of Cancel.
//   - Admission also keeps a byte budget: each job has a size (SubmitSized),
//     counted from admission until it leaves the queue unrun or its function
//     returns, like its slot, so a cancelled job's memory is still counted.
//     Bytes can also be reserved ahead of a job (Reservation, e.g. a body
//     being read) and handed to it.
//   - Submitters belong to clients (ExecutorClient: a connection, a session,
//     a principal), each with a share of the slots, the queue and the byte
//     budget, so that one client cannot starve the others
//     (executor_client.go). Each client queues its own jobs in FIFO order;
//     a freed slot goes to the client with queued work that runs the
//     fewest jobs, so a client with nothing running is served first.
//   - Close is final for delivery: sends made under the mutex check that the
//     submitter is open; a read-write lock around the pump's blocking send lets
//     Close wait it out; then Close empties the channel's buffer.

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Defaults that NewExecutor applies to zero-valued options.
const (
	defaultMaxConcurrency = 32
	defaultMaxQueue       = 256
	defaultJobTimeout     = 30 * time.Second
	// DefaultMaxInflightBytes is the default byte budget of admitted jobs
	// (ExecutorOptions.MaxInflightBytes), 64 MiB.
	DefaultMaxInflightBytes = 64 << 20
)

// outcomeBuffer is the capacity of each Outcomes channel: it lets a worker
// hand over its outcome without waiting for the reader, so the mailbox pump is
// needed only when the reader falls this far behind.
const outcomeBuffer = 64

// ExecutionRef identifies one admitted job; unique for the executor's life
// (never reused, even across submitters). The zero value is never issued.
type ExecutionRef uint64

// OutcomeKind says how an admitted job ended.
type OutcomeKind uint8

const (
	OutcomeCompleted OutcomeKind = iota + 1 // the work returned; Outcome.Value holds what it returned
	OutcomeCancelled                        // Submitter.Cancel stopped it
	OutcomeTimedOut                         // its deadline passed first
	OutcomeFailed                           // the work panicked (or called runtime.Goexit); Outcome.Panic holds the value
)

// String returns the kind's name, e.g. "completed" or "timedOut".
func (k OutcomeKind) String() string {
	switch k {
	case OutcomeCompleted:
		return "completed"
	case OutcomeCancelled:
		return "cancelled"
	case OutcomeTimedOut:
		return "timedOut"
	case OutcomeFailed:
		return "failed"
	}
	return fmt.Sprintf("OutcomeKind(%d)", uint8(k))
}

// Outcome is the one and only result of an admitted job.
type Outcome struct {
	Ref   ExecutionRef
	Key   string // the key it was submitted with ("" for an unkeyed job)
	Kind  OutcomeKind
	Value any // what the work returned (OutcomeCompleted only)
	Panic any // the recovered panic value (OutcomeFailed only)
}

// ExecutorOptions configures NewExecutor. The zero value means all defaults.
type ExecutorOptions struct {
	MaxConcurrency int           // jobs running at once; 0 means 32; negative is invalid
	MaxQueue       int           // jobs waiting (FIFO); 0 means 256; negative means no queue at all
	Timeout        time.Duration // default per-job deadline; 0 means 30s; negative means none

	// MaxInflightBytes bounds the sum of the sizes (see SubmitSized) of the
	// jobs admitted and not yet finished: queued, or running until their
	// function returns, even when cancelled or timed out earlier, as
	// concurrency slots are held, and of the bytes reserved (Reserve). 0
	// means DefaultMaxInflightBytes (64 MiB); negative means no bound. A
	// job that does not fit is refused with ErrOverloaded, except when no
	// bytes are in flight at all: one job larger than the whole budget is
	// then admitted, so that any single message the transport accepts can
	// be served.
	MaxInflightBytes int

	// A client's share (see ExecutorClient): the jobs one client may run at
	// once, keep queued, and the bytes its jobs and reservations may hold.
	// A job of a client running MaxClientConcurrency jobs waits in the
	// queue even while other slots are free; a client with
	// MaxClientQueue jobs queued, or whose bytes would pass
	// MaxClientInflightBytes, is refused with ErrOverloaded (as with the
	// whole budget, one job larger than the share is admitted when the
	// client holds no bytes). 0, or a value above the executor's limit,
	// means the whole limit: one client may use the whole executor.
	// Negative is invalid.
	MaxClientConcurrency   int
	MaxClientQueue         int
	MaxClientInflightBytes int
}

// Errors returned by Submit. Test them with errors.Is.
var (
	ErrDuplicateKey    = errors.New("executor: key already admitted")
	ErrOverloaded      = errors.New("executor: concurrency and queue limits or in-flight byte budget reached")
	ErrExecutorClosed  = errors.New("executor: closed")
	ErrSubmitterClosed = errors.New("executor: submitter closed")

	errNilWork = errors.New("executor: Submit called with nil work")
)

// errWorkGoexit is the Outcome.Panic value of a job whose work called
// runtime.Goexit (for example t.FailNow) instead of returning.
var errWorkGoexit = errors.New("executor: work called runtime.Goexit")

// ExecutorStats is a snapshot of an executor's load and limits.
type ExecutorStats struct {
	Running        int // jobs holding a slot, including cancelled ones whose function has not returned
	Queued         int // jobs waiting in the clients' FIFO queues
	MaxConcurrency int // the effective limit
	MaxQueue       int // the effective limit; 0 when there is no queue

	InflightBytes    int // sum of the sizes of the jobs counted by Running and Queued, and of the reservations
	MaxInflightBytes int // the effective budget; 0 when there is none

	// A client's effective share of each (see ExecutorOptions).
	MaxClientConcurrency   int
	MaxClientQueue         int
	MaxClientInflightBytes int // 0 when there is no budget
}

// Executor admits, queues and runs work for any number of submitters. All its
// methods are safe for concurrent use.
type Executor struct {
	// Set by NewExecutor; read-only after.
	maxConcurrency int
	maxQueue       int           // 0 means no queue
	timeout        time.Duration // negative means no deadline
	maxBytes       int           // in-flight byte budget; 0 means none
	done           chan struct{} // closed by Close
	// A client's share of each limit; the client's byte share is 0
	// exactly when maxBytes is.
	maxClientConcurrency, maxClientQueue, maxClientBytes int

	// goroutines counts the live workers and outcome pumps, so tests can
	// wait for them to exit after Close.
	goroutines sync.WaitGroup

	mu         sync.Mutex
	closed     bool                    // guarded by mu
	running    int                     // slots held; guarded by mu
	bytes      int                     // sizes of queued jobs and of jobs holding a slot, and reservations; guarded by mu
	queued     int                     // jobs in the clients' queues; guarded by mu
	ready      readyHeap               // clients that may start a queued job; guarded by mu
	idle       []chan *job             // parked workers' inboxes, each empty; guarded by mu
	lastRef    ExecutionRef            // guarded by mu
	submitters map[*Submitter]struct{} // open submitters; guarded by mu

	// Guarded by mu.
	deadlines     deadlineHeap // running jobs with a deadline and an undecided outcome, earliest first
	deadlineTimer *time.Timer  // runs expireDue; nil until the first deadline
	timerAt       time.Time    // when deadlineTimer will fire; zero when it is not armed
}

// NewExecutor validates opts, applies defaults and returns a running executor.
// An invalid option is an error, never a panic.
func NewExecutor(opts ExecutorOptions) (*Executor, error) {
	for _, o := range []struct {
		name  string
		value int
	}{
		{"MaxConcurrency", opts.MaxConcurrency},
		{"MaxClientConcurrency", opts.MaxClientConcurrency},
		{"MaxClientQueue", opts.MaxClientQueue},
		{"MaxClientInflightBytes", opts.MaxClientInflightBytes},
	} {
		if o.value < 0 {
			return nil, fmt.Errorf("executor: %s must not be negative (0 means the default), got %d", o.name, o.value)
		}
	}
	limits := opts.limits()
	e := &Executor{
		maxConcurrency: limits.MaxConcurrency,
		maxQueue:       limits.MaxQueue,
		timeout:        opts.Timeout,
		maxBytes:       limits.MaxInflightBytes,
		done:           make(chan struct{}),
		submitters:     make(map[*Submitter]struct{}),
	}
	e.maxClientConcurrency = shareOf(opts.MaxClientConcurrency, e.maxConcurrency)
	e.maxClientQueue = shareOf(opts.MaxClientQueue, e.maxQueue)
	e.maxClientBytes = shareOf(opts.MaxClientInflightBytes, e.maxBytes)
	if e.timeout == 0 {
		e.timeout = defaultJobTimeout
	}
	return e, nil
}

// limits returns the effective MaxConcurrency, MaxQueue (0: no queue) and
// MaxInflightBytes (0: no budget) that opts ask for.
func (opts ExecutorOptions) limits() ExecutorStats {
	st := ExecutorStats{MaxConcurrency: opts.MaxConcurrency, MaxQueue: opts.MaxQueue, MaxInflightBytes: opts.MaxInflightBytes}
	defaultTo(&st.MaxConcurrency, defaultMaxConcurrency)
	switch {
	case st.MaxQueue == 0:
		st.MaxQueue = defaultMaxQueue
	case st.MaxQueue < 0:
		st.MaxQueue = 0
	}
	switch {
	case st.MaxInflightBytes == 0:
		st.MaxInflightBytes = DefaultMaxInflightBytes
	case st.MaxInflightBytes < 0:
		st.MaxInflightBytes = 0
	}
	return st
}

// shareOf is a client's effective share of limit when it asks for share:
// the whole limit for 0 or anything above it.
func shareOf(share, limit int) int {
	if share == 0 || share > limit {
		return limit
	}
	return share
}

// NewSubmitter registers a new submitter (e.g. one connection) that is a
// client of its own: e.NewClient().NewSubmitter(). Its outcomes arrive on
// Outcomes(); its keys never collide with another submitter's. On a closed
// executor it returns a submitter whose Submit fails with ErrExecutorClosed.
func (e *Executor) NewSubmitter() *Submitter {
	return e.NewClient().NewSubmitter()
}

// NewSubmitter registers a new submitter of client c: its jobs count
// against c's share. Otherwise it is as Executor.NewSubmitter.
func (c *ExecutorClient) NewSubmitter() *Submitter {
	s := new(Submitter)
	c.initSubmitter(s, outcomeBuffer)
	return s
}

// initSubmitter registers s, a zero Submitter that may be part of a larger
// record of the caller's, as a new submitter of c whose Outcomes channel
// buffers buffer outcomes (≥ 0). A submitter that never has more than
// buffer outcomes undelivered at once never needs the mailbox pump: an
// HTTP POST's connection, which serves one message, takes 1.
func (c *ExecutorClient) initSubmitter(s *Submitter, buffer int) {
	e := c.e
	s.e, s.client = e, c
	s.outcomes = make(chan Outcome, buffer)
	s.active = jobList{links: activeLinks}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		s.closed = true
		return
	}
	e.submitters[s] = struct{}{}
}

// Stats returns a snapshot of the executor's load and limits.
func (e *Executor) Stats() ExecutorStats {
	e.mu.Lock()
	defer e.mu.Unlock()
	return ExecutorStats{
		Running:        e.running,
		Queued:         e.queued,
		MaxConcurrency: e.maxConcurrency,
		MaxQueue:       e.maxQueue,

		InflightBytes:    e.bytes,
		MaxInflightBytes: e.maxBytes,

		MaxClientConcurrency:   e.maxClientConcurrency,
		MaxClientQueue:         e.maxClientQueue,
		MaxClientInflightBytes: e.maxClientBytes,
	}
}

// Close cancels all work of every submitter (queued jobs are dropped, running
// jobs' contexts are cancelled), delivers nothing more, makes Submit fail with
// ErrExecutorClosed, and closes Done. It does not wait for running functions
// to return; they keep their slots until they do, and their results are
// discarded. When the first call returns, nothing can be received from any
// submitter's Outcomes channel any more. Idempotent.
func (e *Executor) Close() {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return
	}
	e.closed = true
	if e.deadlineTimer != nil {
		e.deadlineTimer.Stop()
	}
	closed := make([]*Submitter, 0, len(e.submitters))
	for s := range e.submitters {
		e.closeSubmitterLocked(s)
		closed = append(closed, s)
	}
	for i, inbox := range e.idle {
		inbox <- nil // buffered and empty: tells the parked worker to exit
		e.idle[i] = nil
	}
	e.idle = nil
	close(e.done)
	e.mu.Unlock()
	for _, s := range closed {
		s.silence()
	}
}

// Done is closed when Close is called (not when the last function returns).
func (e *Executor) Done() <-chan struct{} { return e.done }

// Submitter is one client's handle on a shared Executor. Its methods are safe
// for concurrent use.
type Submitter struct {
	e        *Executor
	client   *ExecutorClient // whose share its jobs count against; read-only
	outcomes chan Outcome    // buffered (outcomeBuffer, or initSubmitter's); never closed
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

// Submit admits work of size 0 under key: SubmitSized(key, 0, timeout, work).
func (s *Submitter) Submit(key string, timeout time.Duration, work func(ctx context.Context) any) (ExecutionRef, error) {
	return s.SubmitSized(key, 0, timeout, work)
}

// SubmitSized admits work under key. key "" means unkeyed: never a duplicate, not
// cancellable by key (e.g. notifications). size is what the job holds in
// memory while it is admitted, in bytes (for a transport, the length of the
// message it serves); it counts against MaxInflightBytes from admission
// until the job leaves the queue without running or its function returns.
// Errors, in order of precedence:
// ErrExecutorClosed, ErrSubmitterClosed, ErrDuplicateKey (the key is admitted
// and its outcome not yet delivered or cancelled), ErrOverloaded (the job
// cannot start and MaxQueue jobs are queued, or its client's MaxClientQueue;
// or size does not fit in what is left of MaxInflightBytes, or of its
// client's share, while other bytes are in flight). Otherwise the job starts
// at once (a slot is free and its client runs fewer than
// MaxClientConcurrency jobs) or is appended to its client's FIFO queue, and
// exactly one Outcome for it will be delivered unless the submitter or the
// executor is closed first; a reader on another goroutine may receive it
// before Submit returns.
//
// timeout 0 uses the executor's default; negative means no deadline. The
// deadline starts when the job starts running, not when it is queued. work
// gets a context (without values) cancelled by Cancel, by the deadline
// (ctx.Err() is then context.DeadlineExceeded), by Close, and when work
// returns. A nil work or a negative size is an error. SubmitSized never
// blocks on running work.
func (s *Submitter) SubmitSized(key string, size int, timeout time.Duration, work func(ctx context.Context) any) (ExecutionRef, error) {
	switch {
	case work == nil:
		return 0, errNilWork
	case size < 0:
		return 0, fmt.Errorf("executor: SubmitSized called with negative size %d", size)
	}
	return s.submit(&job{key: key, work: workFunc(work), indexed: key != "", size: size}, timeout)
}

// SubmitReserved admits work under key as SubmitSized does, its bytes being
// those of r instead of a size: they are counted already, so the job is
// never refused for bytes. The job holds r from admission until it leaves the
// queue unrun or its function returns; r's bytes are free once the job and
// the caller (Release) have both let go of it, so the caller may keep them
// counted after the job, e.g. until an answer is written. r must not be
// released yet (else an error); it may belong to another client than s.
func (s *Submitter) SubmitReserved(key string, r *Reservation, timeout time.Duration, work func(ctx context.Context) any) (ExecutionRef, error) {
	switch {
	case work == nil:
		return 0, errNilWork
	case r == nil:
		return 0, errors.New("executor: SubmitReserved called with a nil Reservation")
	}
	return s.submit(&job{key: key, work: workFunc(work), indexed: key != "", hold: r}, timeout)
}

// submit admits j as SubmitSized does. j is a new, zero job record but for
// key, work, indexed, size (≥ 0) or hold, and ctx.values, which the caller
// sets; it may be part of a larger record
// of the caller's, so a job costs no allocation of its own. An unindexed job
// (indexed false) is not registered under its key, which then only tags its
// Outcome: it is never refused as a duplicate, and it is cancelled with
// cancelJob, not Cancel. That spares a map insert and delete per job to an
// owner that refuses duplicate keys itself.
func (s *Submitter) submit(j *job, timeout time.Duration) (ExecutionRef, error) {
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

// Outcomes delivers exactly one Outcome per admitted job until the submitter
// (or the executor) is closed. Jobs running at the same time deliver in no
// particular order, but a job whose function returns hands its outcome over
// before it gives up its slot, so with MaxConcurrency 1 the outcomes of jobs
// of one client that complete arrive in the order the jobs were admitted
// (while the reader keeps within the channel's buffer; jobs of several
// clients start in the order of ExecutorClient's rule). The channel is never
// closed. Outcomes
// waiting for a slow reader are kept, however many, never dropped, until the
// submitter closes.
func (s *Submitter) Outcomes() <-chan Outcome { return s.outcomes }

// Cancel cancels the job admitted under key and reports whether one was found.
// A queued job is removed and never runs; a running job's context is
// cancelled. Either way its OutcomeCancelled is delivered at once (without
// waiting for the work to return) and the key is free immediately. A running
// job keeps its concurrency slot until its function actually returns (Go
// cannot kill a goroutine), so capacity is never over-admitted; its late
// return is discarded. Cancel never blocks on delivery: it is safe to call
// from the goroutine that reads Outcomes.
func (s *Submitter) Cancel(key string) bool {
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
func (s *Submitter) cancelJob(j *job) bool {
	e := s.e
	e.mu.Lock()
	defer e.mu.Unlock()
	return s.cancelLocked(j)
}

// cancelLocked stops j, unless it is nil or its outcome is decided, and
// delivers its OutcomeCancelled.
func (s *Submitter) cancelLocked(j *job) bool {
	if j == nil || j.sub != s || (j.state != jobQueued && j.state != jobRunning) {
		return false
	}
	s.e.stopLocked(j)
	s.deliverLocked(Outcome{Ref: j.ref, Key: j.key, Kind: OutcomeCancelled})
	return true
}

// Close cancels all of this submitter's jobs (queued ones are dropped, running
// ones' contexts are cancelled) and delivers nothing more for them: once Close
// returns, nothing can be received from Outcomes any more (outcomes still in
// the channel's buffer are discarded too). Running functions keep their slots
// until they return. Submit then fails with ErrSubmitterClosed. Idempotent;
// safe to call from the goroutine that reads Outcomes.
func (s *Submitter) Close() {
	e := s.e
	e.mu.Lock()
	if !s.closed {
		e.closeSubmitterLocked(s)
	}
	e.mu.Unlock()
	s.silence()
}

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
	ref     ExecutionRef
	key     string
	sub     *Submitter
	work    jobWork
	timeout time.Duration // negative means no deadline
	size    int           // bytes counted in e.bytes and its client's while the job is queued or holds a slot
	// hold is the reservation whose bytes the job holds, while it is
	// queued or holds a slot, instead of a size of its own; nil for none.
	hold *Reservation

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

// jobWork is what a job runs. Submit's function is a workFunc; an owner that
// submits its own job records (see submit) may implement it on them, so its
// work needs no closure.
type jobWork interface {
	execute(ctx context.Context) any
}

// workFunc is a work function as Submit takes it.
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
		return false, ErrSubmitterClosed
	case j.indexed && s.keys[j.key] != nil:
		return false, ErrDuplicateKey
	case j.hold != nil && j.hold.freed():
		return false, errReservationReleased
	}
	c := s.client
	startNow = e.running < e.maxConcurrency && c.running < e.maxClientConcurrency
	if !startNow && (e.queued >= e.maxQueue || c.queue.len >= e.maxClientQueue) || !e.fitsLocked(c, j.size, 0) {
		return false, ErrOverloaded
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
// context.DeadlineExceeded and OutcomeTimedOut is delivered, without waiting
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
		j.sub.deliverLocked(Outcome{Ref: j.ref, Key: j.key, Kind: OutcomeTimedOut})
	}
	if len(e.deadlines) > 0 {
		e.armLocked(e.deadlines[0].ctx.deadline)
	}
	e.mu.Unlock()
}

// stopLocked ends j's claim to an outcome because it was cancelled or its
// submitter closed: a queued job leaves the queue and never runs; a running
// job's context is cancelled and its slot stays held until it returns.
func (e *Executor) stopLocked(j *job) {
	if j.state == jobQueued {
		c := j.sub.client
		c.queue.remove(j)
		e.queued--
		e.updateReadyLocked(c)
		e.forgetLocked(j)
		e.releaseJobBytesLocked(j)
		j.state = jobFinished
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
func (e *Executor) closeSubmitterLocked(s *Submitter) {
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
// it; when the queue is empty it parks on its inbox until Submit hands it a
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
		next, parked = e.finish(j, OutcomeFailed, nil, cause, inbox)
		if goexit && next != nil {
			e.goroutines.Add(1)
			go e.work(next)
		}
	}()
	value := j.work.execute(&j.ctx)
	returned = true
	return e.finish(j, OutcomeCompleted, value, nil, inbox)
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
func (e *Executor) finish(j *job, kind OutcomeKind, value, panicValue any, inbox chan *job) (next *job, parked bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if j.state == jobRunning {
		e.forgetLocked(j)
		// As net/http does when a handler returns: whatever the work left
		// watching its context is released, before the outcome is seen.
		j.ctx.cancel(context.Canceled)
		j.sub.deliverLocked(Outcome{Ref: j.ref, Key: j.key, Kind: kind, Value: value, Panic: panicValue})
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
	if inbox == nil || e.closed || len(e.idle) >= e.maxConcurrency {
		return nil, false
	}
	e.idle = append(e.idle, inbox)
	return nil, true
}

// deliverLocked hands o to the submitter's reader without ever blocking: into
// the channel if it has room, otherwise through the mailbox and its pump. On
// a closed submitter o is dropped.
func (s *Submitter) deliverLocked(o Outcome) {
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

// pump drains the mailbox into the Outcomes channel, blocking on the reader,
// and exits when the mailbox is empty or the submitter closes.
func (s *Submitter) pump() {
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
func (s *Submitter) takeMail() (Outcome, bool) {
	s.e.mu.Lock()
	defer s.e.mu.Unlock()
	if !s.closed {
		if o, ok := s.mailbox.pop(); ok {
			return o, true
		}
	}
	s.pumping = false
	return Outcome{}, false
}

// sendOrClose blocks until the reader takes o (true) or the submitter closes
// (false).
func (s *Submitter) sendOrClose(o Outcome) bool {
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
func (s *Submitter) silence() {
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
