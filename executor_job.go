package main

import (
	"context"
	"sync"
	"time"
)

// The executor's data structures: a job's context, the deadline heap, the
// intrusive job lists and the outcome mailbox.

// jobContext is the context.Context a job's work receives. It lives inside
// the job record, so a job allocates no context. Only the executor cancels
// it (Cancel, the deadline, Close, the work's return); at the deadline the
// executor's deadline timer decides the outcome and cancels the context
// under e.mu, so the two always agree. Its values are those of the context
// its submitter gave (values), never that context's cancellation. It implements
// the AfterFunc method the context package looks for in a parent, so
// contexts derived from it need no goroutine to watch it.
type jobContext struct {
	deadline time.Time // zero without a deadline; set before the work starts, read-only after
	// values is where Value looks keys up: the caller's context (Serve's,
	// or the HTTP request's), whose cancellation the job does not inherit
	// (see Value). Nil: no values. Set before the job is submitted;
	// read-only after.
	values context.Context

	mu         sync.Mutex
	done       chan struct{}        // made by the first Done call; closed by cancel
	err        error                // nil until cancelled
	afterFuncs map[*func()]struct{} // registered by AfterFunc; run and dropped by cancel
}

// Deadline reports when the job times out; ok is false without a deadline.
func (c *jobContext) Deadline() (deadline time.Time, ok bool) {
	return c.deadline, !c.deadline.IsZero()
}

// Done returns a channel closed when the context is cancelled.
func (c *jobContext) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{})
		if c.err != nil {
			close(c.done)
		}
	}
	return c.done
}

// Err returns nil until the context is cancelled, then context.Canceled or
// context.DeadlineExceeded.
func (c *jobContext) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Value returns the value its submitter's context carries for key, nil
// when there is none, except the caller's cancellation: a value that is a
// context sharing the caller's Done channel (the canceller a context of the
// context package gives up, which is how contexts derived from this one
// find a cancellable ancestor, and how context.Cause finds a cause) is
// answered nil, as context.WithoutCancel answers it. So derived contexts
// follow the job's cancellation (through AfterFunc) and never the caller's,
// and context.Cause reports the job's own end. Value allocates nothing
// (context.WithoutCancel's Value allocates on every lookup).
func (c *jobContext) Value(key any) any {
	if c.values == nil {
		return nil
	}
	v := c.values.Value(key)
	if canceller, ok := v.(context.Context); ok {
		if done := canceller.Done(); done != nil && done == c.values.Done() {
			return nil
		}
	}
	return v
}

// String names the context in diagnostics, as the context package's own do.
func (c *jobContext) String() string { return "executor job context" }

// AfterFunc arranges for f to run in its own goroutine once the context is
// cancelled (at once if it already is); stop reports whether it prevented
// that. The context package uses it to propagate cancellation to derived
// contexts.
func (c *jobContext) AfterFunc(f func()) (stop func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		go f()
		return func() bool { return false }
	}
	if c.afterFuncs == nil {
		c.afterFuncs = make(map[*func()]struct{})
	}
	key := &f
	c.afterFuncs[key] = struct{}{}
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		_, pending := c.afterFuncs[key]
		delete(c.afterFuncs, key)
		return pending
	}
}

// cancel cancels the context with err (context.Canceled or
// context.DeadlineExceeded) unless it already is. It runs no caller code on
// this goroutine, so it is safe under e.mu.
func (c *jobContext) cancel(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return
	}
	c.err = err
	if c.done != nil {
		close(c.done)
	}
	if c.afterFuncs != nil { // ranging over even a nil map costs an iterator
		for f := range c.afterFuncs {
			go (*f)()
		}
		c.afterFuncs = nil
	}
}

// deadlineHeap orders running jobs by deadline for container/heap, keeping
// each job's deadlineIndex current so it can be removed when it finishes.
type deadlineHeap []*job

func (h deadlineHeap) Len() int           { return len(h) }
func (h deadlineHeap) Less(a, b int) bool { return h[a].ctx.deadline.Before(h[b].ctx.deadline) }

func (h deadlineHeap) Swap(a, b int) {
	h[a], h[b] = h[b], h[a]
	h[a].deadlineIndex, h[b].deadlineIndex = int32(a), int32(b)
}

func (h *deadlineHeap) Push(x any) {
	j := x.(*job)
	j.deadlineIndex = int32(len(*h))
	*h = append(*h, j)
}

func (h *deadlineHeap) Pop() any {
	old := *h
	j := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	j.deadlineIndex = -1
	return j
}

// jobLinkage is one pair of intrusive list links in a job.
type jobLinkage struct{ prev, next *job }

// Which of a job's links a jobList uses.
const (
	queueLinks  = 0 // Executor.queue
	activeLinks = 1 // submitter.active
)

// jobList is an intrusive doubly linked list of jobs through job.links[links],
// so adding and removing a job allocates nothing.
type jobList struct {
	head, tail *job
	len        int
	links      int // queueLinks or activeLinks
}

func (l *jobList) pushBack(j *job) {
	j.links[l.links] = jobLinkage{prev: l.tail}
	if l.tail == nil {
		l.head = j
	} else {
		l.tail.links[l.links].next = j
	}
	l.tail = j
	l.len++
}

// popFront removes and returns the oldest job, or nil if the list is empty.
func (l *jobList) popFront() *job {
	j := l.head
	if j != nil {
		l.remove(j)
	}
	return j
}

// remove unlinks j, which must be in l.
func (l *jobList) remove(j *job) {
	link := &j.links[l.links]
	if link.prev == nil {
		l.head = link.next
	} else {
		link.prev.links[l.links].next = link.next
	}
	if link.next == nil {
		l.tail = link.prev
	} else {
		link.next.links[l.links].prev = link.prev
	}
	*link = jobLinkage{}
	l.len--
}

// outcomeQueue is an unbounded FIFO of outcomes that reuses its backing array.
type outcomeQueue struct {
	items []jobOutcome
	head  int // items[:head] are consumed
}

func (q *outcomeQueue) push(o jobOutcome) {
	if q.head > 0 && len(q.items) == cap(q.items) {
		// Reclaim the consumed front before growing.
		n := copy(q.items, q.items[q.head:])
		clear(q.items[n:])
		q.items, q.head = q.items[:n], 0
	}
	q.items = append(q.items, o)
}

// pop removes and returns the oldest outcome; ok is false when q is empty.
func (q *outcomeQueue) pop() (o jobOutcome, ok bool) {
	if q.head == len(q.items) {
		return jobOutcome{}, false
	}
	o = q.items[q.head]
	q.items[q.head] = jobOutcome{} // drop references for the garbage collector
	q.head++
	if q.head == len(q.items) {
		q.items, q.head = q.items[:0], 0
	}
	return o, true
}
