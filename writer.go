package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// ErrOutputFailed is matched (errors.Is) by every error that reports a failed
// or timed-out write to the transport's output. Such a failure is terminal for
// the connection.
var ErrOutputFailed = errors.New("output failed")

// ErrWriteTimeout is the cause of an OutputError when a write did not finish
// within the transport's WriteTimeout.
var ErrWriteTimeout = errors.New("write timeout")

// OutputError reports that the transport's output failed: a write returned an
// error or did not return within WriteTimeout. Err is the cause.
type OutputError struct {
	Err error
}

func (e *OutputError) Error() string        { return "output failed: " + e.Err.Error() }
func (e *OutputError) Unwrap() error        { return e.Err }
func (e *OutputError) Is(target error) bool { return target == ErrOutputFailed }

// deadlineWriter is an output whose blocked Write can be made to return, such as
// an *os.File pipe in non-blocking mode.
type deadlineWriter interface {
	SetWriteDeadline(t time.Time) error
}

// frameWriter writes frames to the output on its own goroutine, one write
// at a time, so that its owner (a connection's owner goroutine) can stop
// waiting for a write that does not return. Frames handed over while a write
// is in flight are queued and go out together, in order, in the next write
// (SPEC §3): a write carries whole frames only. The queue holds only what
// became ready during one write; the owner bounds it by taking no more input
// while backlog is large. All methods are called by the owner only.
type frameWriter struct {
	out       io.Writer
	deadlines deadlineWriter // nil when the output does not support deadlines
	timeout   time.Duration
	frames    chan outFrame // to the writing goroutine; closed by close
	err       error         // the terminal error, once a write failed; then nothing more is written

	// events carries each write's result and, as errTimerFired, each firing
	// of timer. At most one write is in flight and the timer is re-armed
	// only after its event was taken, so its buffer of two never fills.
	events chan error

	busy    bool      // a write was handed over and its result not yet taken
	started time.Time // when the write in flight was handed over

	// The frames waiting for the next write, their total length, and the
	// acknowledgements to send once they are written.
	queued      [][]byte
	queuedBytes int
	queuedAcks  []chan<- peerReply
	// inflightAcks are the acknowledgements of the write in flight.
	inflightAcks []chan<- peerReply
	// joined is the buffer of the write in flight when it carries several
	// frames; spare is the one to join the next several into.
	joined, spare []byte

	// timer is armed lazily: when a write is handed over and it is not
	// armed, it is set for that write's WriteTimeout; when it fires it is
	// re-armed for the write then in flight, if any. Resetting a timer per
	// write would cost a wake-up of the runtime's poller per write, and a
	// timer channel in the owner's select costs a timer update per wait.
	timer *time.Timer
	armed bool // set until the firing's event was taken

	// The output's write deadline, moved at most once per WriteTimeout, to
	// twice WriteTimeout ahead, so a write the reader never drains returns
	// at the latest 2*WriteTimeout after it began (the owner has given up on
	// it after WriteTimeout).
	deadline time.Time
}

// outFrame is a write handed to the writing goroutine, with the write
// deadline to set first (zero: keep the current one).
type outFrame struct {
	frame    []byte
	deadline time.Time
}

// newFrameWriter starts the writing goroutine. The caller must call close.
func newFrameWriter(out io.Writer, timeout time.Duration) *frameWriter {
	w := &frameWriter{
		out:     out,
		timeout: timeout,
		frames:  make(chan outFrame),
		events:  make(chan error, 2),
	}
	w.timer = time.AfterFunc(time.Hour, func() { w.events <- errTimerFired })
	w.timer.Stop()
	if dw, ok := out.(deadlineWriter); ok && dw.SetWriteDeadline(time.Time{}) == nil {
		w.deadlines = dw
	}
	go w.loop()
	return w
}

func (w *frameWriter) loop() {
	for f := range w.frames {
		if !f.deadline.IsZero() {
			w.deadlines.SetWriteDeadline(f.deadline)
		}
		n, err := w.out.Write(f.frame)
		if err == nil && n != len(f.frame) {
			err = io.ErrShortWrite
		}
		w.events <- err
	}
}

// queue hands frame over to be written: at once when no write is in
// flight, else with the next write. done, when not nil, receives exactly one
// reply: nil once the write that carried frame succeeded, the *OutputError
// when it failed or timed out (part of it may have been written), or an
// error matching ErrTransportDown when an earlier write failed first and
// frame was never handed to the output. A failure or timeout is terminal:
// queue returns the *OutputError, then and on every later call, without
// writing; nothing is ever retried, as a timed-out Write may already have
// written part of its frames. frame must not change until it is written.
func (w *frameWriter) queue(frame []byte, done chan<- peerReply) error {
	if w.err != nil {
		if done != nil {
			done <- peerReply{err: fmt.Errorf("%w: %w", ErrTransportDown, w.err)}
		}
		return w.err
	}
	w.queued = append(w.queued, frame)
	w.queuedBytes += len(frame)
	if done != nil {
		w.queuedAcks = append(w.queuedAcks, done)
	}
	if !w.busy {
		w.start()
	}
	return nil
}

// start hands the queued frames to the writing goroutine as one write; the
// goroutine is idle.
func (w *frameWriter) start() {
	var b []byte
	if len(w.queued) == 1 {
		b = w.queued[0]
	} else {
		b = w.spare[:0]
		for _, f := range w.queued {
			b = append(b, f...)
		}
		w.joined, w.spare = b, nil
	}
	clear(w.queued)
	w.queued, w.queuedBytes = w.queued[:0], 0
	w.inflightAcks, w.queuedAcks = w.queuedAcks, w.inflightAcks[:0]
	out := outFrame{frame: b}
	now := time.Now()
	if w.deadlines != nil && w.deadline.Sub(now) < w.timeout {
		w.deadline = now.Add(2 * w.timeout)
		out.deadline = w.deadline
	}
	w.frames <- out // the goroutine is idle: the previous write has returned
	w.busy, w.started = true, now
	if !w.armed {
		w.timer.Reset(w.timeout)
		w.armed = true
	}
}

// backlog is the length of the frames waiting for the next write.
func (w *frameWriter) backlog() int { return w.queuedBytes }

// wait blocks until every frame handed over is written, or a write has
// failed or timed out, and returns the terminal error, if any.
func (w *frameWriter) wait() error {
	for w.busy {
		w.handle(<-w.events)
	}
	return w.err
}

// pending returns the channel of the writer's events for the owner's select,
// nil when none can arrive. What arrives must be passed to handle.
func (w *frameWriter) pending() <-chan error {
	if !w.busy && !w.armed {
		return nil
	}
	return w.events
}

// handle takes one event: the result of the write in flight, after which
// the queued frames, if any, go out in the next write; or the timer's
// firing, after which the write in flight, if any, has timed out if it began
// WriteTimeout ago (otherwise the timer is re-armed for it). It returns the
// terminal error, if any.
func (w *frameWriter) handle(event error) error {
	switch {
	case event != errTimerFired:
		w.busy = false
		if event != nil {
			w.fail(&OutputError{Err: w.cause(event)})
			return w.err
		}
		w.acknowledge(nil)
		if w.joined != nil {
			w.spare, w.joined = w.joined, nil
		}
		if len(w.queued) > 0 {
			w.start()
		}
		return nil
	case !w.busy:
		w.armed = false
		return w.err
	}
	if left := w.timeout - time.Since(w.started); left > 0 {
		w.timer.Reset(left)
		return nil
	}
	w.armed, w.busy = false, false
	w.fail(&OutputError{Err: fmt.Errorf("%w after %v", ErrWriteTimeout, w.timeout)})
	return w.err
}

// acknowledge replies err to the frames of the write that just ended.
func (w *frameWriter) acknowledge(err error) {
	for i, done := range w.inflightAcks {
		done <- peerReply{err: err}
		w.inflightAcks[i] = nil
	}
	w.inflightAcks = w.inflightAcks[:0]
}

// fail records the terminal error err of the write that just ended: its
// frames' acknowledgements get err, the queued frames' ErrTransportDown, and
// nothing more is written.
func (w *frameWriter) fail(err error) {
	w.err = err
	w.acknowledge(err)
	for _, done := range w.queuedAcks {
		done <- peerReply{err: fmt.Errorf("%w: %w", ErrTransportDown, err)}
	}
	w.queued, w.queuedAcks, w.queuedBytes = nil, nil, 0
}

// errTimerFired is the event of the write timer's firing.
var errTimerFired = errors.New("write timer fired")

// cause returns the cause to report for a failed write. The output's own
// write deadline lies at least WriteTimeout after the write began, so it may
// expire just before the timer does; that is the same timeout, so it is
// reported as ErrWriteTimeout (still wrapping the output's error), whichever
// of the two fired first.
func (w *frameWriter) cause(err error) error {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return fmt.Errorf("%w after %v: %w", ErrWriteTimeout, w.timeout, err)
	}
	return err
}

// close ends the writing goroutine once its current write, if any, returns.
// The output's write deadline is cleared unless a write is still in flight,
// which the deadline is left to end; a goroutine stuck in a Write that never
// returns is abandoned.
func (w *frameWriter) close() {
	close(w.frames)
	w.timer.Stop()
	if w.deadlines != nil && w.err == nil && !w.busy {
		w.deadlines.SetWriteDeadline(time.Time{})
	}
}
