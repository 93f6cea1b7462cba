package main

// The executor: transport-neutral admission, FIFO queue, per-job deadlines and
// cancellation (docs/explanation/contract.md, "Executor"). It knows nothing of
// JSON-RPC. Several transports share one Executor; each gets a submitter whose
// keys are scoped to it.
//
// Concurrency design, in short:
//   - One mutex (Executor.mu) guards all bookkeeping. Every race between a job's
//     completion, cancel, its deadline and Close is decided under it, by the job's
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
//     until submit hands it one, so a busy executor spawns no goroutine per
//     job.
//   - Delivery never blocks, whoever delivers (a worker, cancel, a deadline
//     timer): an outcome is offered to the buffered outcomes channel without
//     waiting; if the buffer is full it goes to the submitter's mailbox, an
//     unbounded FIFO drained by one pump goroutine that exists only while the
//     mailbox is non-empty. A slow reader therefore costs memory (one jobOutcome
//     per pending result, not a goroutine per pending result), never a slot,
//     a worker or a caller of cancel.
//   - Admission also keeps a byte budget: each job has a size (submitSized),
//     counted from admission until it leaves the queue unrun or its function
//     returns, like its slot, so a cancelled job's memory is still counted.
//     Bytes can also be reserved ahead of a job (reservation, e.g. a body
//     being read) and handed to it.
//   - Submitters belong to clients (executorClient: a connection, a session,
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
	"math"
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

// outcomeBuffer is the capacity of each outcomes channel: it lets a worker
// hand over its outcome without waiting for the reader, so the mailbox pump is
// needed only when the reader falls this far behind.
const outcomeBuffer = 64

// executionRef identifies one admitted job; unique for the executor's life
// (never reused, even across submitters). The zero value is never issued.
type executionRef uint64

// outcomeKind says how an admitted job ended.
type outcomeKind uint8

const (
	outcomeCompleted outcomeKind = iota + 1 // the work returned; jobOutcome.value holds what it returned
	outcomeCancelled                        // submitter.cancel stopped it
	outcomeTimedOut                         // its deadline passed first
	outcomeFailed                           // the work panicked (or called runtime.Goexit); jobOutcome.panicValue holds the value
	// outcomeRefused: the job was queued and never ran; it gave its place in
	// the full queue to a job of a client holding fewer queued jobs (see
	// executorClient), as if it had been refused with errOverloaded.
	outcomeRefused
)

// String returns the kind's name, e.g. "completed" or "timedOut".
func (k outcomeKind) String() string {
	switch k {
	case outcomeCompleted:
		return "completed"
	case outcomeCancelled:
		return "cancelled"
	case outcomeTimedOut:
		return "timedOut"
	case outcomeFailed:
		return "failed"
	case outcomeRefused:
		return "refused"
	}
	return fmt.Sprintf("outcomeKind(%d)", uint8(k))
}

// jobOutcome is the one and only result of an admitted job.
type jobOutcome struct {
	ref        executionRef
	key        string // the key it was submitted with ("" for an unkeyed job)
	kind       outcomeKind
	value      any // what the work returned (outcomeCompleted only)
	panicValue any // the recovered panic value (outcomeFailed only)
}

// ExecutorOptions configures NewExecutor. A zero value means the default,
// and a field says when it also takes Unlimited or None (see Unlimited for
// the rule every options struct follows).
type ExecutorOptions struct {
	// MaxConcurrency bounds the jobs running at once (default 32).
	MaxConcurrency int
	// MaxQueue bounds the jobs waiting for a slot, in FIFO order (default
	// 256); Unlimited queues every job the byte budget admits, None queues
	// none: a job that cannot start at once is refused.
	MaxQueue int
	// Timeout is a job's deadline, counted from when it starts running,
	// unless its transport gives one (default 30s; Unlimited: none).
	Timeout time.Duration

	// MaxInflightBytes bounds the sum of the sizes of the jobs admitted and
	// not yet finished (a transport's job is a message, its size the
	// message's length): queued, or running until their function returns,
	// even when cancelled or timed out earlier, as concurrency slots are
	// held, and of the bytes a transport holds ahead of a job (an HTTP body
	// being read). 0 means DefaultMaxInflightBytes (64 MiB); Unlimited
	// means no bound. A job that does not fit is refused, except when no
	// bytes are in flight at all: one job larger than the whole budget is
	// then admitted, so that any single message the transport accepts can
	// be served. A transport admits its jobs' answers against the same
	// budget by the same rule.
	MaxInflightBytes int

	// A client's share of the slots, the queue and the byte budget, a
	// client being what a transport serves as one: a stdio connection, an
	// HTTP session, the stateless requests of one address, a principal.
	// Shares are work-conserving: they keep room only for the other clients
	// that are waiting, never idle capacity.
	//   - MaxClientConcurrency: a free slot is always taken (no job waits
	//     while one is free), so a client alone may run MaxConcurrency jobs;
	//     under contention a freed slot goes to the client with queued work
	//     that runs the fewest jobs (ties: its oldest queued job was
	//     admitted first), which serves the clients below their share
	//     before those at or above it.
	//   - MaxClientQueue: a client that holds this many queued jobs is
	//     refused more while another client has a job queued; alone it may
	//     fill the whole queue. When the queue is full, a job of a client
	//     holding at least two queued jobs fewer than the client holding
	//     the most takes the place of that client's newest queued job,
	//     which is refused as if it had come a moment later.
	//   - MaxClientInflightBytes: a client whose bytes would pass this is
	//     refused while another client holds bytes; alone it may use the
	//     whole budget (and, as with the budget, one job larger than the
	//     share is admitted when the client holds no bytes).
	// 0 (the default), or a value above the executor's limit, means the
	// whole limit: the share never binds, and only the fewest-running rule
	// orders the clients. With MaxInflightBytes Unlimited there is no byte
	// share either.
	MaxClientConcurrency   int
	MaxClientQueue         int
	MaxClientInflightBytes int
}

// Errors returned by submit. Test them with errors.Is.
var (
	errDuplicateKey    = errors.New("executor: key already admitted")
	errOverloaded      = errors.New("executor: concurrency and queue limits or in-flight byte budget reached")
	ErrExecutorClosed  = errors.New("executor: closed")
	errSubmitterClosed = errors.New("executor: submitter closed")

	errNilWork = errors.New("executor: submit called with nil work")
)

// errWorkGoexit is the jobOutcome.panicValue of a job whose work called
// runtime.Goexit (for example t.FailNow) instead of returning.
var errWorkGoexit = errors.New("executor: work called runtime.Goexit")

// ExecutorStats is a snapshot of an executor's load and limits. A limit is
// the one in effect: a number, or Unlimited when there is none (MaxQueue is
// 0 with None).
type ExecutorStats struct {
	Running        int // jobs holding a slot, including cancelled ones whose function has not returned
	Queued         int // jobs waiting in the clients' FIFO queues
	MaxConcurrency int
	MaxQueue       int

	InflightBytes    int // sum of the sizes of the jobs counted by Running and Queued, and of the bytes held ahead of jobs
	MaxInflightBytes int

	// A client's share of each (see ExecutorOptions).
	MaxClientConcurrency   int
	MaxClientQueue         int
	MaxClientInflightBytes int
}

// Executor admits, queues and runs the requests of any number of
// transports (Options.Executor, HTTPOptions.Executor), which then share its
// limits. All its methods are safe for concurrent use.
type Executor struct {
	// Set by NewExecutor; read-only after.
	maxConcurrency int
	maxQueue       int           // 0 means no queue, math.MaxInt no limit
	timeout        time.Duration // negative means no deadline
	maxBytes       int           // in-flight byte budget; 0 means none
	done           chan struct{} // closed by Close
	busy           func(bool)    // see newExecutor
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
	lastRef    executionRef            // guarded by mu
	submitters map[*submitter]struct{} // open submitters; guarded by mu

	// Guarded by mu.
	deadlines     deadlineHeap // running jobs with a deadline and an undecided outcome, earliest first
	deadlineTimer *time.Timer  // runs expireDue; nil until the first deadline
	timerAt       time.Time    // when deadlineTimer will fire; zero when it is not armed
}

// NewExecutor validates opts, applies defaults and returns a running executor.
// An invalid option is an error naming it, never a panic.
func NewExecutor(opts ExecutorOptions) (*Executor, error) {
	return newExecutor(opts, nil)
}

// newExecutor is NewExecutor with busy, when not nil, told each time the
// executor starts running a job while it ran none (true) and each time its
// last running job returns (false), alternately, beginning with true. busy
// is called with the executor's lock held, by the goroutine that changed
// the count: it must return at once and must not call the executor. The
// reference server's processor governor (-procs) uses it.
func newExecutor(opts ExecutorOptions, busy func(bool)) (*Executor, error) {
	if err := opts.check("ExecutorOptions"); err != nil {
		return nil, fmt.Errorf("mcpstdio: %w", err)
	}
	e := &Executor{
		maxConcurrency: opts.MaxConcurrency,
		maxQueue:       opts.MaxQueue,
		timeout:        opts.Timeout,
		maxBytes:       opts.MaxInflightBytes,
		done:           make(chan struct{}),
		submitters:     make(map[*submitter]struct{}),
		busy:           busy,
	}
	defaultTo(&e.maxConcurrency, defaultMaxConcurrency)
	defaultTo(&e.timeout, defaultJobTimeout)
	switch e.maxQueue {
	case 0:
		e.maxQueue = defaultMaxQueue
	case None:
		e.maxQueue = 0
	case Unlimited:
		e.maxQueue = math.MaxInt
	}
	switch e.maxBytes {
	case 0:
		e.maxBytes = DefaultMaxInflightBytes
	case Unlimited:
		e.maxBytes = 0
	}
	e.maxClientConcurrency = shareOf(opts.MaxClientConcurrency, e.maxConcurrency)
	e.maxClientQueue = shareOf(opts.MaxClientQueue, e.maxQueue)
	e.maxClientBytes = shareOf(opts.MaxClientInflightBytes, e.maxBytes)
	return e, nil
}

// check returns the error of the first field of o that breaks the options'
// rule, naming it as a field of the struct of (Options and HTTPOptions
// hold some of these fields).
func (o ExecutorOptions) check(of string) error {
	return checkOptions(
		checkOption(of+".MaxConcurrency", o.MaxConcurrency),
		checkOption(of+".MaxQueue", o.MaxQueue, Unlimited, None),
		checkOption(of+".Timeout", o.Timeout, Unlimited),
		checkOption(of+".MaxInflightBytes", o.MaxInflightBytes, Unlimited),
		checkOption(of+".MaxClientConcurrency", o.MaxClientConcurrency),
		checkOption(of+".MaxClientQueue", o.MaxClientQueue),
		checkOption(of+".MaxClientInflightBytes", o.MaxClientInflightBytes),
	)
}

// shareOf is a client's effective share of limit when it asks for share:
// the whole limit for 0 or anything above it.
func shareOf(share, limit int) int {
	if share == 0 || share > limit {
		return limit
	}
	return share
}

// newSubmitter registers a new submitter (e.g. one connection) that is a
// client of its own: e.newClient().newSubmitter(). Its outcomes arrive on
// its outcomes channel; its keys never collide with another submitter's. On a closed
// executor it returns a submitter whose submit fails with ErrExecutorClosed.
func (e *Executor) newSubmitter() *submitter {
	return e.newClient().newSubmitter()
}

// newSubmitter registers a new submitter of client c: its jobs count
// against c's share. Otherwise it is as Executor.newSubmitter.
func (c *executorClient) newSubmitter() *submitter {
	s := new(submitter)
	c.initSubmitter(s, outcomeBuffer)
	return s
}

// initSubmitter registers s, a zero submitter that may be part of a larger
// record of the caller's, as a new submitter of c whose outcomes channel
// buffers buffer outcomes (≥ 0). A submitter that never has more than
// buffer outcomes undelivered at once never needs the mailbox pump: an
// HTTP POST's connection, which serves one message, takes 1.
func (c *executorClient) initSubmitter(s *submitter, buffer int) {
	e := c.e
	s.e, s.client = e, c
	s.outcomes = make(chan jobOutcome, buffer)
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
		MaxQueue:       statLimit(e.maxQueue, math.MaxInt),

		InflightBytes:    e.bytes,
		MaxInflightBytes: statLimit(e.maxBytes, 0),

		MaxClientConcurrency:   e.maxClientConcurrency,
		MaxClientQueue:         statLimit(e.maxClientQueue, math.MaxInt),
		MaxClientInflightBytes: statLimit(e.maxClientBytes, 0),
	}
}

// statLimit reports limit as ExecutorStats does: Unlimited when it is none,
// the value that means no limit inside the executor.
func statLimit(limit, none int) int {
	if limit == none {
		return Unlimited
	}
	return limit
}

// Close cancels all the work of every transport that shares the executor
// (queued jobs are dropped, running jobs' contexts are cancelled) and
// refuses new work: a Transport serving on it ends its Serve with
// ErrExecutorClosed, an HTTPHandler answers 503. It does not wait for
// running functions to return; they keep their slots until they do, and
// their results are discarded. Idempotent.
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
	closed := make([]*submitter, 0, len(e.submitters))
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
