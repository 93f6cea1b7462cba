package main

// The executor: transport-neutral admission, FIFO queue, per-job deadlines and
// cancellation (docs/explanation/contract.md, "Executor"). It knows nothing of
// JSON-RPC. Several transports share one Executor; each gets a Submitter whose
// keys are scoped to it.
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
//     a principal), which share the executor work-conservingly
//     (executor_client.go): a client alone may use all of it; each client
//     queues its own jobs in FIFO order, and a freed slot goes to the
//     client with queued work that runs the fewest jobs, so a newcomer is
//     served at the next freed slot; a client's share keeps room of the
//     queue and the byte budget only for the others that are waiting.
//   - Close is final for delivery: sends made under the mutex check that the
//     submitter is open; a read-write lock around the pump's blocking send lets
//     Close wait it out; then Close empties the channel's buffer.

import (
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
	// OutcomeRefused: the job was queued and never ran; it gave its place in
	// the full queue to a job of a client holding fewer queued jobs (see
	// ExecutorClient), as if it had been refused with ErrOverloaded.
	OutcomeRefused
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
	case OutcomeRefused:
		return "refused"
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
	// be served. A transport admits its jobs' answers against the same
	// budget by the same rule (see Reservation.Grow).
	MaxInflightBytes int

	// A client's share (see ExecutorClient) of the slots, the queue and the
	// byte budget. Shares are work-conserving: they keep room only for the
	// other clients that are waiting, never idle capacity.
	//   - MaxClientConcurrency: a free slot is always taken (no job waits
	//     while one is free), so a client alone may run MaxConcurrency jobs;
	//     under contention a freed slot goes to the client with queued work
	//     that runs the fewest jobs (ties: its oldest queued job was
	//     admitted first), which serves the clients below their share
	//     before those at or above it.
	//   - MaxClientQueue: a client that holds this many queued jobs is
	//     refused more (ErrOverloaded) while another client has a job
	//     queued; alone it may fill the whole queue. When the queue is
	//     full, a job of a client holding at least two queued jobs fewer
	//     than the client holding the most takes the place of that
	//     client's newest queued job, whose outcome is OutcomeRefused.
	//   - MaxClientInflightBytes: a client whose bytes would pass this is
	//     refused (ErrOverloaded) while another client holds bytes; alone it
	//     may use the whole budget (and, as with the budget, one job larger
	//     than the share is admitted when the client holds no bytes).
	// 0, or a value above the executor's limit, means the whole limit: the
	// share never binds, and only the fewest-running rule orders the
	// clients. Negative is invalid.
	MaxClientConcurrency   int
	MaxClientQueue         int
	MaxClientInflightBytes int

	// Busy, when not nil, is told each time the executor starts running a
	// job while it ran none (true) and each time its last running job
	// returns (false), alternately, beginning with true. It is called with
	// the executor's lock held, by the goroutine that changed the count: it
	// must return at once and must not call the executor. A process can
	// use it to give its workers processors only while some run (the
	// reference server's -procs).
	Busy func(busy bool)
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
	busy           func(bool)    // ExecutorOptions.Busy
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
		busy:           opts.Busy,
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
