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
// no queue: at most one frame is in flight. All methods are called by the
// owner (the coordinator goroutine) only.
type frameWriter struct {
	out       io.Writer
	deadlines deadlineWriter // nil when the output does not support deadlines
	timeout   time.Duration
	frames    chan []byte // to the writing goroutine; closed by close
	results   chan error  // one result per frame; buffered so a late result never blocks
	timer     *time.Timer
	err       error // the terminal error, once a write failed; then nothing more is written
}

// newFrameWriter starts the writing goroutine. The caller must call close.
func newFrameWriter(out io.Writer, timeout time.Duration) *frameWriter {
	w := &frameWriter{
		out:     out,
		timeout: timeout,
		frames:  make(chan []byte),
		results: make(chan error, 1),
		timer:   time.NewTimer(time.Hour),
	}
	w.timer.Stop()
	if dw, ok := out.(deadlineWriter); ok && dw.SetWriteDeadline(time.Time{}) == nil {
		w.deadlines = dw
	}
	go w.loop()
	return w
}

func (w *frameWriter) loop() {
	for frame := range w.frames {
		if w.deadlines != nil {
			w.deadlines.SetWriteDeadline(time.Now().Add(w.timeout))
		}
		n, err := w.out.Write(frame)
		if err == nil && n != len(frame) {
			err = io.ErrShortWrite
		}
		w.results <- err
	}
}

// write writes one frame with a single Write call and blocks until it is
// written, failed, or WriteTimeout passed. A failure or timeout is terminal: it
// returns an *OutputError, and so does every later call, without writing. A
// timed-out Write may already have written part of the frame, so nothing is
// ever retried.
func (w *frameWriter) write(frame []byte) error {
	if w.err != nil {
		return w.err
	}
	w.frames <- frame // the goroutine is idle: the previous write has returned
	w.timer.Reset(w.timeout)
	select {
	case err := <-w.results:
		w.timer.Stop()
		if err != nil {
			w.err = &OutputError{Err: w.cause(err)}
		}
	case <-w.timer.C:
		w.err = &OutputError{Err: fmt.Errorf("%w after %v", ErrWriteTimeout, w.timeout)}
	}
	return w.err
}

// cause returns the cause to report for a failed write. The output's own
// write deadline, set to the same WriteTimeout, may expire just before the
// timer does; that is the same timeout, so it is reported as ErrWriteTimeout
// (still wrapping the output's error), whichever of the two fired first.
func (w *frameWriter) cause(err error) error {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return fmt.Errorf("%w after %v: %w", ErrWriteTimeout, w.timeout, err)
	}
	return err
}

// close ends the writing goroutine once its current write, if any, returns.
// A goroutine stuck in a Write that never returns is abandoned.
func (w *frameWriter) close() {
	close(w.frames)
	w.timer.Stop()
	if w.deadlines != nil && w.err == nil {
		w.deadlines.SetWriteDeadline(time.Time{})
	}
}
