package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"
)

// ErrOutputFailed is matched (errors.Is) by every error that reports a failed
// or timed-out write to the transport's output. Such a failure is terminal for
// the connection.
var ErrOutputFailed = errors.New("output failed")

// ErrWriteTimeout is the cause of an OutputError when the client took none
// of a frame for the transport's WriteTimeout.
var ErrWriteTimeout = errors.New("write timeout")

// OutputError reports that the transport's output failed: a write returned an
// error, or a frame was not taken in time (WriteTimeout). Err is the cause.
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

// frameWriter writes a connection's frames to its output, one write at a time,
// in the order they are handed over; a write carries whole frames only, several
// when several became ready together (docs/explanation/contract.md, "Framing").
//
// WriteTimeout bounds each frame, never a write: a frame fails when the
// client has not taken it whole WriteTimeout after the frame before it was
// taken whole (or after its own write began). A client that reads slowly but
// steadily is never cut off however many frames join one write; one that
// takes nothing ends the connection WriteTimeout after the write began. How
// it writes depends on the output:
//
//   - direct, when the output has write deadlines (deadlineWriter, and
//     setting one succeeds): the owner writes itself. queue adds a frame to
//     the next write, which flush performs (the owner calls it before it
//     waits for its next event) or queue does once directFlushBytes wait.
//     A write that the output does not take at once wakes every
//     WriteTimeout/directPolls (the output's deadline) to see which frames
//     were taken: the frame in progress fails WriteTimeout after the one
//     before it was seen taken whole (at most WriteTimeout/directPolls
//     after it was). When the owner's context ends (see watch), the
//     output's deadline is moved to the past, so a write in progress ends
//     at once and nothing more is written.
//   - helper, otherwise: a goroutine performs each write while the owner
//     goes on, in Writes of at most helperPieceBytes of whole frames (one
//     frame alone when it is longer), recording when each returned; the
//     owner gives up on a write when its Write in progress has not returned
//     WriteTimeout after the one before it did (its goroutine, stuck in a
//     Write that may never return, is abandoned). Frames handed over while a
//     write is in flight are queued and go out together, in order, in the
//     next write. The helper cannot see inside a Write, so there a piece of
//     up to helperPieceBytes stands for a frame: a client that takes 4 KiB
//     each WriteTimeout is never cut off.
//
// The frames waiting hold only what became ready during one write (or before
// one flush); the owner bounds them by taking no more input while backlog is
// large. All methods are called by the owner only.
type frameWriter struct {
	out       io.Writer
	deadlines deadlineWriter // the output's deadlines: direct mode; nil in helper mode
	// messages, when not nil, is an output that takes frames as messages
	// (the in-memory transport): direct mode, one frame at a time, never
	// joined; out and deadlines are nil then.
	messages messageOutput
	timeout  time.Duration
	err      error // the terminal error, once a write failed; then nothing more is written

	// The frames waiting for the next write, their total length, and the
	// acknowledgements to send once they are written.
	queued      [][]byte
	queuedBytes int
	queuedAcks  []chan<- peerReply
	// inflightAcks are the acknowledgements of the write in flight.
	inflightAcks []chan<- peerReply
	// joined is the buffer of the write in flight when it carries several
	// frames; spare is the one to join the next several into. ends are the
	// offsets in the write in flight where its frames end.
	joined, spare []byte
	ends          []int
	// Frame buffers for reuse (direct mode on an output of bytes only; see
	// lendFrame): spareFrames are free, returning were taken back and are
	// free once the next write succeeds. Each holds at most
	// maxSpareFrames, of at most maxSpareFrameBytes each.
	spareFrames, returning [][]byte
	// abort is the owner's context's Done channel (see watch): once it is
	// closed nothing more is written. stopWatch undoes watch.
	abort     <-chan struct{}
	stopWatch func()

	// Helper mode only.
	frames chan []byte // to the writing goroutine; closed by close
	// events carries each write's result and, as errTimerFired, each firing
	// of timer. At most one write is in flight and the timer is re-armed
	// only after its event was taken, so its buffer of two never fills.
	events  chan error
	busy    bool      // a write was handed over and its result not yet taken
	started time.Time // when the write in flight was handed over
	// progress is when the writing goroutine last finished a piece of the
	// write in flight, as time since base (monotonic); written by the
	// goroutine, read by the owner when the timer fires.
	progress atomic.Int64
	base     time.Time
	// timer is armed lazily: when a write is handed over and it is not
	// armed, it is set for that write's WriteTimeout; when it fires it is
	// re-armed for the write then in flight, if any. Resetting a timer per
	// write would cost a wake-up of the runtime's poller per write, and a
	// timer channel in the owner's select costs a timer update per wait.
	timer *time.Timer
	armed bool // set until the firing's event was taken
}

// maxSpareFrames and maxSpareFrameBytes bound the frame buffers a direct
// writer keeps for reuse: 8 of up to 32 KiB, 256 KiB at most.
const (
	maxSpareFrames     = 8
	maxSpareFrameBytes = 32 << 10
)

// directFlushBytes is how many bytes of frames a direct writer lets wait for
// the owner's flush before queue writes them itself: under a steady load
// the owner may take event after event without waiting, and what its
// client waits for must not pile up meanwhile. 64 KiB is a Linux pipe's
// capacity: waiting for more would not reach the client sooner.
const directFlushBytes = 64 << 10

// messageOutput is an output that takes whole messages rather than bytes:
// the in-memory transport's client. sendMessage hands over msg, one frame
// without its newline, which it may keep; it blocks until the output takes
// it, and fails with an error wrapping os.ErrDeadlineExceeded when it has
// not by deadline, or with errWriteAborted once abort is closed.
type messageOutput interface {
	sendMessage(msg []byte, deadline time.Time, abort <-chan struct{}) error
}

// newMessageWriter returns the writer of out, in direct mode: each frame is
// handed over alone, bounded by WriteTimeout from when the one before it was
// taken (or from the flush). The caller must call close.
func newMessageWriter(out messageOutput, timeout time.Duration) *frameWriter {
	return &frameWriter{messages: out, timeout: timeout}
}

// newFrameWriter returns the writer of out, direct when out has write
// deadlines (which it clears), otherwise with its writing goroutine started.
// The caller must call close.
func newFrameWriter(out io.Writer, timeout time.Duration) *frameWriter {
	w := &frameWriter{out: out, timeout: timeout}
	if dw, ok := out.(deadlineWriter); ok && dw.SetWriteDeadline(time.Time{}) == nil {
		w.deadlines = dw
		return w
	}
	w.frames = make(chan []byte)
	w.events = make(chan error, 2)
	w.base = time.Now()
	w.timer = time.AfterFunc(time.Hour, func() { w.events <- errTimerFired })
	w.timer.Stop()
	go w.loop()
	return w
}

// helperPieceBytes bounds one Write of the writing goroutine, in whole
// frames (a longer frame is written alone): what a pipe takes in one piece
// (PIPE_BUF), so that a write of many frames is timed piece by piece.
const helperPieceBytes = 4096

// directPolls is how many times per WriteTimeout a direct write that the
// output is slow to take wakes to see which of its frames were taken.
const directPolls = 8

// loop is the helper mode's writing goroutine.
func (w *frameWriter) loop() {
	for b := range w.frames {
		w.events <- w.writePieces(b)
	}
}

// writePieces writes b, whole frames, in Writes of at most helperPieceBytes
// (or one frame), recording in progress when each but the last returned.
func (w *frameWriter) writePieces(b []byte) error {
	for len(b) > 0 {
		n := pieceLen(b)
		if _, err := writeAll(w.out, b[:n]); err != nil {
			return err
		}
		if b = b[n:]; len(b) > 0 {
			w.progress.Store(int64(time.Since(w.base)))
		}
	}
	return nil
}

// pieceLen is the length of the first piece of b, whole frames: as many as
// fit in helperPieceBytes, else the first frame.
func pieceLen(b []byte) int {
	if len(b) <= helperPieceBytes {
		return len(b)
	}
	if i := bytes.LastIndexByte(b[:helperPieceBytes], '\n'); i >= 0 {
		return i + 1
	}
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		return i + 1
	}
	return len(b)
}

// writeAll writes b to out and returns how much of it was taken. A Write
// that takes part of b without an error (as the OS may take part of a write
// to a pipe; an *os.File completes such writes itself) is called again for
// the rest, at once: nothing else is written in between. A Write that takes
// nothing and reports no error, or claims more than it was given, fails
// with io.ErrShortWrite.
func writeAll(out io.Writer, b []byte) (int, error) {
	taken := 0
	for taken < len(b) {
		n, err := out.Write(b[taken:])
		valid := n > 0 && n <= len(b)-taken
		if valid {
			taken += n
		}
		if err != nil {
			return taken, err
		}
		if !valid {
			return taken, io.ErrShortWrite
		}
	}
	return taken, nil
}

// writeDirect performs a direct write of b, whose frames end at the offsets
// ends, bounding each frame by WriteTimeout (see frameWriter). The
// output's deadline is set for WriteTimeout/directPolls at a time, and at
// most until the frame in progress is due; when it expires the frames taken
// are counted, and the write goes on unless the frame in progress is
// WriteTimeout late or abort is closed. A deadline error before the
// deadline set is the output's own verdict and ends the write.
func (w *frameWriter) writeDirect(b []byte, ends []int) error {
	poll := w.timeout / directPolls
	now := time.Now()
	due := now.Add(w.timeout) // when the frame in progress fails
	taken, next := 0, 0       // bytes taken; ends[next] ends the first frame not taken whole
	for {
		deadline := now.Add(poll)
		if due.Before(deadline) {
			deadline = due
		}
		if err := w.deadlines.SetWriteDeadline(deadline); err != nil {
			return fmt.Errorf("set the write deadline: %w", err)
		}
		n, err := writeAll(w.out, b[taken:])
		if err == nil {
			return nil
		}
		taken += n
		now = time.Now()
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			return err
		}
		if w.aborted() {
			return fmt.Errorf("%w: %w", errWriteAborted, err)
		}
		if now.Before(deadline) {
			return err
		}
		if next < len(ends) && taken >= ends[next] {
			for next < len(ends) && taken >= ends[next] {
				next++
			}
			due = now.Add(w.timeout) // the next frame is due from now
		}
		if !now.Before(due) {
			return err
		}
	}
}

// errWriteAborted is the cause of a direct write ended by abort.
var errWriteAborted = errors.New("write abandoned: serving was cancelled")

// watch ties the writer to ctx, its owner's: once ctx ends nothing more is
// written, and a direct write in progress ends at once (the output's
// deadline is moved to the past from ctx's goroutine; an output's deadline
// may be set while a Write waits, as *os.File and net.Conn allow). close
// undoes it. Called once, before the first write.
func (w *frameWriter) watch(ctx context.Context) {
	w.abort = ctx.Done()
	if w.deadlines == nil || w.abort == nil {
		return
	}
	ended := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(ended)
		w.deadlines.SetWriteDeadline(time.Unix(1, 0))
	})
	w.stopWatch = func() {
		if !stop() {
			<-ended // it ran or is running: let it finish before close clears the deadline
		}
	}
}

// aborted reports whether abort is closed.
func (w *frameWriter) aborted() bool {
	select {
	case <-w.abort:
		return true
	default:
		return false
	}
}

// queue hands frame over to be written: in direct mode with the owner's next
// flush (or at once, when directFlushBytes are waiting); in helper mode at
// once when no write is in flight, else with the next write. done, when not
// nil, receives exactly one reply: nil once the write that carried frame
// succeeded, the *OutputError when it failed or timed out (part of it may
// have been written), or an error matching ErrTransportDown when an earlier
// write failed first and frame was never handed to the output, or when the
// writer was closed (close) before frame was written. A failure or
// timeout is terminal: queue (or flush) returns the *OutputError, then and
// on every later call, without writing; nothing is ever retried, as a
// timed-out Write may already have written part of its frames. frame must
// not change until it is written.
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
	switch {
	case w.direct():
		if w.queuedBytes >= directFlushBytes {
			return w.flush()
		}
	case !w.busy:
		w.start()
	}
	return nil
}

// direct reports whether the owner writes itself (direct mode).
func (w *frameWriter) direct() bool { return w.deadlines != nil || w.messages != nil }

// take returns the queued frames as one write, the frames' own buffer when
// there is one, else joined into the spare buffer; their acknowledgements
// become those of the write in flight.
func (w *frameWriter) take() []byte {
	var b []byte
	w.ends = w.ends[:0]
	if len(w.queued) == 1 {
		b = w.queued[0]
		w.ends = append(w.ends, len(b))
	} else {
		b = w.spare[:0]
		for _, f := range w.queued {
			b = append(b, f...)
			w.ends = append(w.ends, len(b))
		}
		w.joined, w.spare = b, nil
	}
	clear(w.queued)
	w.queued, w.queuedBytes = w.queued[:0], 0
	w.inflightAcks, w.queuedAcks = w.queuedAcks, w.inflightAcks[:0]
	return b
}

// lendFrame returns a free frame buffer (empty, with room), or nil: only
// a direct writer to an output of bytes reuses buffers, as nothing else
// holds a frame once it is written there (an output of messages may keep
// them). The owner gives it back with takeBackFrame.
func (w *frameWriter) lendFrame() []byte {
	n := len(w.spareFrames)
	if w.deadlines == nil || n == 0 {
		return nil
	}
	b := w.spareFrames[n-1]
	w.spareFrames[n-1] = nil
	w.spareFrames = w.spareFrames[:n-1]
	return b
}

// takeBackFrame takes b for reuse: a buffer the owner lent to build a frame
// (or one that replaced it), which no one but the writer holds any more and
// which may be queued for the next write. It is free once a write that
// began after this call succeeds, as that write carries every frame queued
// before it.
func (w *frameWriter) takeBackFrame(b []byte) {
	if w.deadlines != nil && cap(b) > 0 && cap(b) <= maxSpareFrameBytes && len(w.returning) < maxSpareFrames {
		w.returning = append(w.returning, b[:0])
	}
}

// freeReturned makes the buffers taken back before the write that just
// succeeded free for lending.
func (w *frameWriter) freeReturned() {
	for i, b := range w.returning {
		if len(w.spareFrames) < maxSpareFrames {
			w.spareFrames = append(w.spareFrames, b)
		}
		w.returning[i] = nil
	}
	w.returning = w.returning[:0]
}

// written records that the write in flight returned err: its frames are
// acknowledged, or the writer fails. It returns the terminal error, if any.
func (w *frameWriter) written(err error) error {
	if w.joined != nil {
		w.spare, w.joined = w.joined, nil
	}
	switch {
	case errors.Is(err, errWriteAborted):
		w.fail(fmt.Errorf("%w: %w", ErrTransportDown, err))
		return w.err
	case err != nil:
		w.fail(&OutputError{Err: w.cause(err)})
		return w.err
	}
	w.acknowledge(nil)
	return nil
}

// flush performs, in direct mode, the write of the frames queued, and
// returns the terminal error, if any. It blocks until the write returns:
// while the client takes each frame within WriteTimeout of the one before,
// and at most WriteTimeout (plus WriteTimeout/directPolls) after the last
// frame it took whole, or WriteTimeout/directPolls after abort closed. In
// helper mode the frames are on their way already and flush does nothing.
func (w *frameWriter) flush() error {
	if !w.direct() || len(w.queued) == 0 || w.err != nil {
		return w.err
	}
	if w.messages != nil {
		return w.flushMessages()
	}
	b := w.take()
	if w.aborted() {
		return w.written(errWriteAborted)
	}
	err := w.written(w.writeDirect(b, w.ends))
	if err == nil {
		w.freeReturned() // all were taken back before this write began
	}
	return err
}

// flushMessages hands the queued frames to the message output, one at a
// time, each with its own WriteTimeout; their acknowledgements follow the
// last, or the failure.
func (w *frameWriter) flushMessages() error {
	frames := w.queued
	w.inflightAcks, w.queuedAcks = w.queuedAcks, w.inflightAcks[:0]
	var err error
	if w.aborted() {
		err = errWriteAborted
	}
	for _, f := range frames {
		if err != nil {
			break
		}
		err = w.messages.sendMessage(f[:len(f)-1], time.Now().Add(w.timeout), w.abort)
	}
	clear(frames)
	w.queued, w.queuedBytes = frames[:0], 0
	return w.written(err)
}

// start hands the queued frames to the writing goroutine as one write; the
// goroutine is idle (helper mode).
func (w *frameWriter) start() {
	b := w.take()
	w.frames <- b // the goroutine is idle: the previous write has returned
	w.busy, w.started = true, time.Now()
	if !w.armed {
		w.timer.Reset(w.timeout)
		w.armed = true
	}
}

// writing reports whether a write is in flight on the writing goroutine
// (helper mode; a direct write is never in flight between calls).
func (w *frameWriter) writing() bool { return w.busy }

// backlog is the length of the frames waiting for the next write.
func (w *frameWriter) backlog() int { return w.queuedBytes }

// wait blocks until every frame handed over is written, or a write has
// failed or timed out, and returns the terminal error, if any.
func (w *frameWriter) wait() error {
	if err := w.flush(); err != nil {
		return err
	}
	for w.busy {
		w.handle(<-w.events)
	}
	return w.err
}

// pending returns the channel of the writer's events for the owner's select,
// nil when none can arrive (always, in direct mode). What arrives must be
// passed to handle.
func (w *frameWriter) pending() <-chan error {
	if !w.busy && !w.armed {
		return nil
	}
	return w.events
}

// handle takes one event (helper mode): the result of the write in flight,
// after which the queued frames, if any, go out in the next write; or the
// timer's firing, after which the write in flight, if any, has timed out if
// it began WriteTimeout ago (otherwise the timer is re-armed for it). It
// returns the terminal error, if any.
func (w *frameWriter) handle(event error) error {
	switch {
	case event != errTimerFired:
		w.busy = false
		if err := w.written(event); err != nil {
			return err
		}
		if len(w.queued) > 0 {
			w.start()
		}
		return nil
	case !w.busy:
		w.armed = false
		return w.err
	}
	// The Write in progress began when the write did, or when the
	// goroutine finished the piece before it.
	began := w.started
	if p := w.progress.Load(); p != 0 {
		if t := w.base.Add(time.Duration(p)); t.After(began) {
			began = t
		}
	}
	if left := w.timeout - time.Since(began); left > 0 {
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
	down := err
	if !errors.Is(err, ErrTransportDown) {
		down = fmt.Errorf("%w: %w", ErrTransportDown, err)
	}
	for _, done := range w.queuedAcks {
		done <- peerReply{err: down}
	}
	w.queued, w.queuedAcks, w.queuedBytes = nil, nil, 0
}

// errTimerFired is the event of the write timer's firing.
var errTimerFired = errors.New("write timer fired")

// cause returns the cause to report for a failed write: the expiry of the
// output's write deadline (direct mode) is the write timeout, so it is
// reported as ErrWriteTimeout, still wrapping the output's error.
func (w *frameWriter) cause(err error) error {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return fmt.Errorf("%w after %v: %w", ErrWriteTimeout, w.timeout, err)
	}
	return err
}

// close releases the writer; cause says why it stops (Serve's result, nil
// when it ended normally). Frames still queued, and a write still in flight
// in helper mode, are not written: each of their acknowledgements gets an
// error matching ErrTransportDown (wrapping cause), so that every frame
// handed over with one gets exactly one reply. In direct mode the output's
// write deadline is cleared; in helper mode the writing goroutine ends once
// its current write, if any, returns (one stuck in a Write that never
// returns is abandoned).
func (w *frameWriter) close(cause error) {
	if w.err == nil && (len(w.inflightAcks) > 0 || len(w.queuedAcks) > 0) {
		if cause == nil {
			cause = ErrClosed
		}
		w.fail(fmt.Errorf("%w: %w", ErrTransportDown, cause))
	}
	if w.stopWatch != nil {
		w.stopWatch()
	}
	if w.messages != nil {
		return
	}
	if w.deadlines != nil {
		w.deadlines.SetWriteDeadline(time.Time{})
		return
	}
	close(w.frames)
	w.timer.Stop()
}
