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

// frameWriter writes frames to the output on its own goroutine, one at a time,
// so that its owner can stop waiting for a write that does not return. There is
// no queue: at most one frame is in flight, and the next is handed over only
// after the previous one's result was taken. All methods are called by the
// owner (the coordinator goroutine) only.
type frameWriter struct {
	out       io.Writer
	deadlines deadlineWriter // nil when the output does not support deadlines
	timeout   time.Duration
	frames    chan outFrame // to the writing goroutine; closed by close
	err       error         // the terminal error, once a write failed; then nothing more is written

	// events carries each frame's result and, as errTimerFired, each firing
	// of timer. At most one frame is in flight and the timer is re-armed
	// only after its event was taken, so its buffer of two never fills.
	events chan error

	busy    bool      // a frame was handed over and its result not yet taken
	started time.Time // when the frame in flight was handed over

	// timer is armed lazily: when a frame is handed over and it is not
	// armed, it is set for that frame's WriteTimeout; when it fires it is
	// re-armed for the frame then in flight, if any. Resetting a timer per
	// frame would cost a wake-up of the runtime's poller per frame, and a
	// timer channel in the owner's select costs a timer update per wait.
	timer *time.Timer
	armed bool // set until the firing's event was taken

	// The output's write deadline, moved at most once per WriteTimeout, to
	// twice WriteTimeout ahead, so a write the reader never drains returns
	// at the latest 2*WriteTimeout after it began (the owner has given up on
	// it after WriteTimeout).
	deadline time.Time
}

// outFrame is a frame handed to the writing goroutine, with the write
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

// errTimerFired is the event of the write timer's firing.
var errTimerFired = errors.New("write timer fired")

// write hands frame to the writing goroutine, to be written with a single
// Write call, and returns without waiting for it: the owner takes the result
// from events, or from wait. If a frame is still in flight, write first
// waits for it, at most until its WriteTimeout passes. A failure or timeout is
// terminal: write returns an *OutputError, and so does every later call,
// without writing. A timed-out Write may already have written part of the
// frame, so nothing is ever retried. frame must not change until its result
// was taken.
func (w *frameWriter) write(frame []byte) error {
	if err := w.wait(); err != nil {
		return err
	}
	out := outFrame{frame: frame}
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
	return nil
}

// writeAndWait writes frame and waits for its result.
func (w *frameWriter) writeAndWait(frame []byte) error {
	if err := w.write(frame); err != nil {
		return err
	}
	return w.wait()
}

// wait blocks until the frame in flight, if any, is written, has failed or
// has timed out, and returns the terminal error, if any.
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

// handle takes one event: the result of the frame in flight, or the timer's
// firing, after which the frame in flight, if any, has timed out if it began
// WriteTimeout ago (otherwise the timer is re-armed for it). It returns the
// terminal error, if any.
func (w *frameWriter) handle(event error) error {
	switch {
	case event != errTimerFired:
		w.busy = false
		if event != nil {
			w.err = &OutputError{Err: w.cause(event)}
		}
		return w.err
	case !w.busy:
		w.armed = false
		return w.err
	}
	if left := w.timeout - time.Since(w.started); left > 0 {
		w.timer.Reset(left)
		return nil
	}
	w.armed, w.busy = false, false
	w.err = &OutputError{Err: fmt.Errorf("%w after %v", ErrWriteTimeout, w.timeout)}
	return w.err
}

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
