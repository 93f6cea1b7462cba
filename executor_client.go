package main

import (
	"container/heap"
	"errors"
	"fmt"
)

// Clients of an executor and their fair share.
//
// A client is whoever one share is meant for: one stdio connection, one HTTP
// session, the stateless requests of one client address, one principal
// across sessions. Its submitters' jobs and its reservations count against
// its share of the executor (ExecutorOptions.MaxClientConcurrency,
// MaxClientQueue, MaxClientInflightBytes).
//
// Sharing is work-conserving (docs/explanation/contract.md, "Executor"):
//   - A client alone may use the whole executor: every slot, the whole
//     queue, the whole byte budget. A job starts whenever a slot is free;
//     no job ever waits while a slot is free.
//   - Under contention a freed slot goes to the client with queued work that
//     runs the fewest jobs (ties: the one whose oldest queued job was
//     admitted first), so a newcomer that arrives while another client
//     holds every slot is served at the next freed slot, never behind that
//     client's whole queue; clients that keep work queued converge to equal
//     numbers of running jobs.
//   - A client's share keeps room only for the others that are waiting: a
//     client at its queue share is refused more queue room while another
//     client has a job queued, and one at its byte share is refused more
//     bytes while another client holds bytes. With no share set (0: the
//     whole) only the executor's limits refuse.
//
// Go cannot take a slot back from a running function, so a client that
// holds every slot with slow work keeps it until its jobs return (or their
// deadline passes): a newcomer waits for the first of them, one handler's
// time at most. The queue is never over-admitted: a newcomer that finds the
// whole queue full takes the place of the newest queued job of the client
// that holds the most (at least two more than the newcomer), which is
// refused (outcomeRefused, never run), as if it had come a moment later.
//
// Bytes are reserved against the budget and the share ahead of a job when
// they are held before it exists (a body being read) or after it (an answer
// not yet written): reserve and grow, then submitReserved hands the bytes to
// a job. An answer is admitted as a message is, and refused the same way:
// its bytes must fit beside what else is in flight, its request's own bytes
// excepted, or nothing else be in flight; else the request is answered with
// the overload error, -32603 "Server execution capacity exhausted". A
// running job admits its answer before building it with growJob (the bytes
// join the job's: its size, or its reservation's); one built first is
// admitted with grow of the reservation its job held (HTTP) or checked
// with fitsAnswer (stdio, whose line's bytes are free by then).

// executorClient is one client of an Executor: a group of submitters whose
// jobs and reservations share one client's share of the executor's limits.
// Create it with Executor.newClient and its submitters with newSubmitter. It
// needs no closing: it is garbage once its submitters and reservations are.
// Its methods are safe for concurrent use.
type executorClient struct {
	e *Executor // read-only

	// Guarded by e.mu.
	running    int     // slots its jobs hold, including abandoned jobs whose function has not returned
	queue      jobList // its queued jobs, oldest first (queueLinks)
	bytes      int     // sizes of its admitted jobs, and its reservations
	readyIndex int     // position in e.ready, -1 when not there
}

// clientStats is a snapshot of one client's use of its share.
type clientStats struct {
	running       int // jobs holding a slot, including cancelled ones whose function has not returned
	queued        int // jobs waiting in its queue
	inflightBytes int // sizes of its running and queued jobs, and its reservations
}

// newClient returns a new client of e, with nothing admitted. On a closed
// executor its submitters and reservations fail with ErrExecutorClosed.
func (e *Executor) newClient() *executorClient {
	return &executorClient{e: e, queue: jobList{links: queueLinks}, readyIndex: -1}
}

// stats returns a snapshot of the client's use of its share.
func (c *executorClient) stats() clientStats {
	c.e.mu.Lock()
	defer c.e.mu.Unlock()
	return clientStats{running: c.running, queued: c.queue.len, inflightBytes: c.bytes}
}

// idleClients reports which of clients hold nothing (no job running or
// queued, no byte), in one critical section: for a caller that holds a lock
// of its own and must not take e.mu once per client under it.
func (e *Executor) idleClients(clients []*executorClient) map[*executorClient]bool {
	idle := make(map[*executorClient]bool, len(clients))
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, c := range clients {
		if c.running == 0 && c.queue.len == 0 && c.bytes == 0 {
			idle[c] = true
		}
	}
	return idle
}

// fitsLocked reports whether size more bytes of client c fit in the budget
// and in c's share, own of the bytes in flight being those of the job or
// reservation that grows (0 for a new one). Size 0 always fits; so does
// anything when, but for own, nothing is in flight (executor-wide for the
// budget, of c for its share), however large it is.
func (e *Executor) fitsLocked(c *executorClient, size, own int) bool {
	if size == 0 || e.maxBytes == 0 {
		return true
	}
	fitsBudget := e.bytes == own || size <= e.maxBytes-e.bytes
	othersHold := e.bytes > c.bytes
	fitsShare := !othersHold || c.bytes == own || size <= e.maxClientBytes-c.bytes
	return fitsBudget && fitsShare
}

// queueRoomLocked reports whether a job of client c may be queued: c holds
// fewer than its share of the queue or no other client has a job queued,
// and the queue has room, or it is full and the client holding the most
// queued jobs holds at least two more than c: then its newest queued job
// is to give its place (displace, which the caller refuses once the job is
// admitted). So a flood that filled the queue gives way to a newcomer, and
// under contention the queue converges to equal parts.
func (e *Executor) queueRoomLocked(c *executorClient) (room bool, displace *job) {
	othersWait := e.queued > c.queue.len
	switch {
	case c.queue.len >= e.maxClientQueue && othersWait:
		return false, nil
	case e.queued < e.maxQueue:
		return true, nil
	}
	var longest *executorClient
	for _, other := range e.ready { // every client with a queued job
		if longest == nil || other.queue.len > longest.queue.len {
			longest = other
		}
	}
	if longest == nil || longest.queue.len < c.queue.len+2 {
		return false, nil
	}
	return true, longest.queue.tail
}

// chargeLocked counts n more bytes of client c.
func (e *Executor) chargeLocked(c *executorClient, n int) {
	e.bytes += n
	c.bytes += n
}

// releaseJobBytesLocked frees what j holds: its size, or its hold on a
// reservation. It is called once, when j leaves the queue unrun or its
// function returns.
func (e *Executor) releaseJobBytesLocked(j *job) {
	e.chargeLocked(j.sub.client, -j.size)
	if r := j.hold; r != nil {
		r.jobs--
		e.freeIfUnheldLocked(r)
	}
}

// updateReadyLocked puts c in e.ready, moves it there or takes it out, as
// its queue and running count now say: it is ready when it has a queued
// job. A client beyond its share of the slots is ready too: the rule is
// work-conserving, and fewest-running-first already serves the clients
// below their share before it.
func (e *Executor) updateReadyLocked(c *executorClient) {
	ready := c.queue.len > 0
	switch {
	case ready && c.readyIndex < 0:
		heap.Push(&e.ready, c)
	case ready:
		heap.Fix(&e.ready, c.readyIndex)
	case c.readyIndex >= 0:
		heap.Remove(&e.ready, c.readyIndex)
	}
}

// popReadyLocked takes the oldest queued job of the ready client that runs
// the fewest jobs, counts it running for its client and returns it; nil when
// no client is ready. The caller gives it a slot.
//
// While a slot is free no client is ready (admission starts a job that can
// start), so the freed slot a finishing job hands over is the only one a
// ready client can get.
func (e *Executor) popReadyLocked() *job {
	if len(e.ready) == 0 {
		return nil
	}
	c := e.ready[0]
	j := c.queue.popFront()
	e.queued--
	c.running++
	e.updateReadyLocked(c)
	return j
}

// readyHeap orders the ready clients for container/heap: fewest running
// first, then the one whose oldest queued job was admitted first. It keeps
// each client's readyIndex current.
type readyHeap []*executorClient

func (h readyHeap) Len() int { return len(h) }

func (h readyHeap) Less(a, b int) bool {
	if h[a].running != h[b].running {
		return h[a].running < h[b].running
	}
	return h[a].queue.head.ref < h[b].queue.head.ref
}

func (h readyHeap) Swap(a, b int) {
	h[a], h[b] = h[b], h[a]
	h[a].readyIndex, h[b].readyIndex = a, b
}

func (h *readyHeap) Push(x any) {
	c := x.(*executorClient)
	c.readyIndex = len(*h)
	*h = append(*h, c)
}

func (h *readyHeap) Pop() any {
	old := *h
	c := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	c.readyIndex = -1
	return c
}

// errReservationReleased is returned for a reservation whose bytes were
// freed: it was released and no job holds it.
var errReservationReleased = errors.New("executor: reservation released")

// reservation is bytes held against an executor's MaxInflightBytes and its
// client's share before (or after) a job holds them: a message being read,
// an answer waiting for its write. Create it with executorClient.reserve;
// its methods are safe for concurrent use. Its bytes are free once the
// caller called release and no job holds it (submitReserved).
type reservation struct {
	c *executorClient // read-only

	// Guarded by c.e.mu.
	n        int  // bytes held
	released bool // the caller let go (release)
	jobs     int  // admitted jobs holding it until they finish
}

// reserve holds n bytes (n ≥ 0) against the executor's MaxInflightBytes and
// c's share, as a job of size n would be admitted: it fails with
// errOverloaded when they do not fit (see ExecutorOptions), with
// ErrExecutorClosed on a closed executor.
func (c *executorClient) reserve(n int) (*reservation, error) {
	r := new(reservation)
	if err := c.reserveInto(r, n); err != nil {
		return nil, err
	}
	return r, nil
}

// reserveInto is reserve into r, a zero reservation that may be part of a
// larger record of the caller's, so that it costs no allocation of its own
// (an HTTP POST's). On failure r stays zero and must not be used.
func (c *executorClient) reserveInto(r *reservation, n int) error {
	if n < 0 {
		return fmt.Errorf("executor: reserve called with negative size %d", n)
	}
	e := c.e
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.closed:
		return ErrExecutorClosed
	case !e.fitsLocked(c, n, 0):
		return errOverloaded
	}
	e.chargeLocked(c, n)
	r.c, r.n = c, n
	return nil
}

// grow holds n more bytes (n ≥ 0) if they fit, as reserve: the bytes r
// holds already count as one job's, so a reservation that alone holds more
// than the budget (or the share) may grow while nothing else is in flight.
// It fails with errOverloaded when they do not fit, ErrExecutorClosed on a
// closed executor, and an error once r's bytes are freed.
func (r *reservation) grow(n int) error {
	if n < 0 {
		return fmt.Errorf("executor: grow called with negative size %d", n)
	}
	e := r.c.e
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.closed:
		return ErrExecutorClosed
	case r.freed():
		return errReservationReleased
	case !e.fitsLocked(r.c, n, r.n):
		return errOverloaded
	}
	r.n += n
	e.chargeLocked(r.c, n)
	return nil
}

// growJob counts n more bytes held by j, a job of e whose function runs
// (building its answer), if they fit as a message of its client's would,
// j's own bytes excepted (its size, or its reservation's), and reports
// whether they did. They are held as j's own are: until its function
// returns, or, for a job holding a reservation, until that is freed. For a
// job that no longer holds bytes (finished) nothing is counted: true.
func (e *Executor) growJob(j *job, n int) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch r := j.hold; {
	case j.state == jobFinished || r != nil && r.freed():
		return true
	case r != nil:
		if !e.fitsLocked(r.c, n, r.n) {
			return false
		}
		r.n += n
		e.chargeLocked(r.c, n)
		return true
	}
	c := j.sub.client
	if !e.fitsLocked(c, n, j.size) {
		return false
	}
	j.size += n
	e.chargeLocked(c, n)
	return true
}

// fitsAnswer reports whether an answer of n bytes, built by a job of c
// whose function has returned, may be kept for its write: as a message is
// admitted, it fits when the bytes fit in the budget and in c's share beside
// everything else in flight, or when nothing else is in flight however large
// it is. Nothing is counted: the caller bounds the frame it keeps (stdio's
// writer pauses the input while its frames wait). An answer to a message
// whose bytes a reservation holds grows that reservation instead (grow),
// whose bytes count as the answer's own.
func (c *executorClient) fitsAnswer(n int) bool {
	e := c.e
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.fitsLocked(c, n, 0)
}

// held returns the bytes r holds (0 once they are freed).
func (r *reservation) held() int {
	e := r.c.e
	e.mu.Lock()
	defer e.mu.Unlock()
	return r.n
}

// release lets go of r: its bytes are free now, or when the last job
// holding it finishes. Idempotent; nil-safe.
func (r *reservation) release() {
	if r == nil {
		return
	}
	e := r.c.e
	e.mu.Lock()
	defer e.mu.Unlock()
	r.released = true
	e.freeIfUnheldLocked(r)
}

// freed reports whether r's bytes were freed: released and held by no job.
func (r *reservation) freed() bool { return r.released && r.jobs == 0 }

// freeIfUnheldLocked frees r's bytes once no one holds it.
func (e *Executor) freeIfUnheldLocked(r *reservation) {
	if r.freed() && r.n > 0 {
		e.chargeLocked(r.c, -r.n)
		r.n = 0
	}
}
