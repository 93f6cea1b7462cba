package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

// deadlineOutput is an output with write deadlines for the direct writer's
// tests, which write on the test's goroutine: it records what each Write
// carried and the deadline then in force, takes at most perWrite bytes a
// call (all when 0), and fails every Write with err when it is set.
type deadlineOutput struct {
	perWrite     int
	err          error
	deadline     time.Time
	deadlinesSet int // SetWriteDeadline calls
	writes       []outputWrite
}

type outputWrite struct {
	data     string
	deadline time.Time
}

func (o *deadlineOutput) SetWriteDeadline(t time.Time) error {
	o.deadline = t
	o.deadlinesSet++
	return nil
}

func (o *deadlineOutput) Write(p []byte) (int, error) {
	n := len(p)
	if o.perWrite > 0 {
		n = min(n, o.perWrite)
	}
	o.writes = append(o.writes, outputWrite{data: string(p[:n]), deadline: o.deadline})
	if o.err != nil {
		return 0, o.err
	}
	return n, nil
}

// written is everything the Writes carried, in order.
func (o *deadlineOutput) written() string {
	var b strings.Builder
	for _, w := range o.writes {
		b.WriteString(w.data)
	}
	return b.String()
}

// noDeadlineOutput refuses write deadlines, as an *os.File in blocking mode
// (a terminal, a regular file) does.
type noDeadlineOutput struct{ frameRecorder }

func (*noDeadlineOutput) SetWriteDeadline(time.Time) error { return os.ErrNoDeadline }

// The coordinator writes itself to an output whose write deadlines work,
// and through a writing goroutine to any other.
func TestFrameWriterModeFollowsTheOutput(t *testing.T) {
	tests := []struct {
		name       string
		out        io.Writer
		wantDirect bool
	}{
		{"write deadlines", &deadlineOutput{}, true},
		{"no deadlines", newFrameRecorder(), false},
		{"deadlines refused", &noDeadlineOutput{frameRecorder: *newFrameRecorder()}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newFrameWriter(tt.out, time.Hour)
			defer w.close(nil)
			if direct, goroutine := w.deadlines != nil, w.frames != nil; direct != tt.wantDirect || goroutine == tt.wantDirect {
				t.Fatalf("direct %v, writing goroutine %v; want direct %v", direct, goroutine, tt.wantDirect)
			}
		})
	}
	// The in-memory transport's output takes messages: direct, no goroutine.
	w := newMessageWriter((*memoryOutput)(&MemoryClient{}), time.Hour)
	defer w.close(nil)
	if !w.direct() || w.frames != nil {
		t.Fatalf("message writer: direct %v, writing goroutine %v; want direct", w.direct(), w.frames != nil)
	}
}

// Frames handed to a direct writer wait for the owner's flush and go out
// together, in order, in one Write; each is acknowledged once it returned.
func TestDirectWriterJoinsFramesUntilFlush(t *testing.T) {
	out := &deadlineOutput{}
	w := newFrameWriter(out, time.Hour)
	defer w.close(nil)
	acks := make([]chan peerReply, 3)
	for i, f := range []string{"1\n", "22\n", "333\n"} {
		acks[i] = make(chan peerReply, 1)
		if err := w.queue([]byte(f), acks[i]); err != nil {
			t.Fatal(err)
		}
	}
	if len(out.writes) != 0 || len(acks[0]) != 0 || w.backlog() != 9 {
		t.Fatalf("before the flush: %d writes, acknowledged %v, backlog %d; want nothing written, the 9 bytes waiting", len(out.writes), len(acks[0]) > 0, w.backlog())
	}
	if err := w.flush(); err != nil {
		t.Fatal(err)
	}
	if len(out.writes) != 1 || out.writes[0].data != "1\n22\n333\n" {
		t.Fatalf("writes %+v, want the three frames in one", out.writes)
	}
	for i, ack := range acks {
		if r := <-ack; r.err != nil {
			t.Fatalf("frame %d acknowledged %v", i+1, r.err)
		}
	}
	if err := w.flush(); err != nil || len(out.writes) != 1 {
		t.Fatalf("flush with nothing queued: %v, %d writes; want nothing written", err, len(out.writes))
	}
}

// Once directFlushBytes wait, queue writes them itself, in one Write, rather
// than let them pile up until the owner's flush.
func TestDirectWriterWritesAtItsBound(t *testing.T) {
	out := &deadlineOutput{}
	w := newFrameWriter(out, time.Hour)
	defer w.close(nil)
	frame := []byte(strings.Repeat("x", 1023) + "\n")
	for range directFlushBytes/len(frame) - 1 {
		if err := w.queue(frame, nil); err != nil {
			t.Fatal(err)
		}
	}
	if len(out.writes) != 0 {
		t.Fatalf("%d writes below the bound, want none", len(out.writes))
	}
	if err := w.queue(frame, nil); err != nil {
		t.Fatal(err)
	}
	if len(out.writes) != 1 || len(out.writes[0].data) != directFlushBytes || w.backlog() != 0 {
		t.Fatalf("at the bound: %d writes, backlog %d; want one write of %d bytes", len(out.writes), w.backlog(), directFlushBytes)
	}
}

// A Write that takes part of the frames is called again for the rest at
// once, under the same deadline, so the frames arrive whole and in order; a
// Write that takes nothing and reports no error fails the output.
func TestDirectWriterCompletesAShortWrite(t *testing.T) {
	out := &deadlineOutput{perWrite: 7}
	w := newFrameWriter(out, time.Hour)
	defer w.close(nil)
	frames := []string{`{"jsonrpc":"2.0","id":1,"result":{}}` + "\n", `{"jsonrpc":"2.0","id":2,"result":{}}` + "\n"}
	done := make(chan peerReply, 1)
	w.queue([]byte(frames[0]), nil)
	w.queue([]byte(frames[1]), done)
	if err := w.flush(); err != nil {
		t.Fatal(err)
	}
	if got, want := out.written(), strings.Join(frames, ""); got != want {
		t.Fatalf("written %q, want %q", got, want)
	}
	if n := len(out.writes); n != (len(frames[0])+len(frames[1])+6)/7 {
		t.Fatalf("%d Writes of at most 7 bytes for %d bytes", n, len(frames[0])+len(frames[1]))
	}
	for i, wr := range out.writes {
		if !wr.deadline.Equal(out.writes[0].deadline) {
			t.Fatalf("Write %d under deadline %v, the first under %v: the rest of a write must keep its deadline", i, wr.deadline, out.writes[0].deadline)
		}
	}
	if out.deadlinesSet != 2 { // cleared by newFrameWriter, set once for the write
		t.Fatalf("SetWriteDeadline called %d times, want twice", out.deadlinesSet)
	}
	if r := <-done; r.err != nil {
		t.Fatalf("acknowledged %v", r.err)
	}

	out.perWrite = 0
	w = newFrameWriter(takesNothing{out}, time.Hour)
	w.queue([]byte("{}\n"), nil)
	if err := w.flush(); !errors.Is(err, ErrOutputFailed) || !errors.Is(err, io.ErrShortWrite) {
		t.Fatalf("a Write that takes nothing: flush = %v, want an output failure wrapping io.ErrShortWrite", err)
	}
}

// takesNothing is an output whose Write takes nothing and reports no error.
type takesNothing struct{ *deadlineOutput }

func (takesNothing) Write([]byte) (int, error) { return 0, nil }

// The output's deadline is set for every direct write, WriteTimeout/
// directPolls after it began: a write the output takes at once never sees
// it, one it does not take wakes then to count the frames taken.
func TestDirectWriterDeadlineBoundsEachWrite(t *testing.T) {
	const timeout = time.Hour
	out := &deadlineOutput{}
	w := newFrameWriter(out, timeout)
	defer w.close(nil)
	for i := range 3 {
		w.queue([]byte("{}\n"), nil)
		began := time.Now()
		if err := w.flush(); err != nil {
			t.Fatal(err)
		}
		returned := time.Now()
		if d := out.writes[i].deadline; d.Before(began.Add(timeout/directPolls)) || d.After(returned.Add(timeout/directPolls)) {
			t.Fatalf("write %d, between %v and %v, had the deadline %v: want WriteTimeout/directPolls after it began", i+1, began, returned, d)
		}
	}
	if out.deadlinesSet != 4 { // newFrameWriter cleared it first
		t.Fatalf("%d deadlines set for 3 writes, want the clearing and one each", out.deadlinesSet)
	}
}

// A direct write that fails (here: its deadline expired) is terminal: the
// frames it carried are acknowledged with the *OutputError, a frame handed
// over later with ErrTransportDown, and nothing is written again.
func TestDirectWriterFailureIsTerminal(t *testing.T) {
	out := &deadlineOutput{err: &os.PathError{Op: "write", Path: "out", Err: os.ErrDeadlineExceeded}}
	w := newFrameWriter(out, 30*time.Millisecond)
	defer w.close(nil)
	carried := make(chan peerReply, 1)
	w.queue([]byte("1\n"), carried)
	err := w.flush()
	if !errors.Is(err, ErrOutputFailed) || !errors.Is(err, ErrWriteTimeout) || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("flush = %v, want an output-failed write timeout wrapping the deadline error", err)
	}
	if got, want := err.Error(), "output failed: write timeout after 30ms: write out: i/o timeout"; got != want {
		t.Errorf("error text %q, want %q", got, want)
	}
	if r := <-carried; !errors.Is(r.err, ErrOutputFailed) || errors.Is(r.err, ErrTransportDown) {
		t.Fatalf("the failed write's frame acknowledged %v, want its *OutputError", r.err)
	}
	later := make(chan peerReply, 1)
	if err := w.queue([]byte("2\n"), later); !errors.Is(err, ErrOutputFailed) {
		t.Fatalf("queue after the failure = %v, want the terminal error", err)
	}
	if r := <-later; !errors.Is(r.err, ErrTransportDown) {
		t.Fatalf("a frame handed over after the failure acknowledged %v, want ErrTransportDown", r.err)
	}
	if err := w.wait(); !errors.Is(err, ErrOutputFailed) || len(out.writes) != 1 {
		t.Fatalf("wait = %v after %d Writes; want the terminal error and the one Write", err, len(out.writes))
	}
}

// splitWholeFrames splits what one Write carried into its frames, each with
// its newline, failing the test when it does not end with a whole frame.
func splitWholeFrames(t *testing.T, p []byte) [][]byte {
	t.Helper()
	if len(p) == 0 || p[len(p)-1] != '\n' {
		t.Fatalf("a Write carried %.80q, which does not end a frame", p)
	}
	var frames [][]byte
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n') + 1
		frames, p = append(frames, p[:i]), p[i:]
	}
	return frames
}

// messageRecorder is a messageOutput that records each message.
type messageRecorder struct{ messages []string }

func (r *messageRecorder) sendMessage(msg []byte, _ time.Time, _ <-chan struct{}) error {
	r.messages = append(r.messages, string(msg))
	return nil
}

// A message writer hands its output each frame alone, as a message without
// its newline: nothing is joined, nothing re-split.
func TestMessageWriterPassesMessages(t *testing.T) {
	out := &messageRecorder{}
	w := newMessageWriter(out, time.Hour)
	defer w.close(nil)
	done := make(chan peerReply, 1)
	for _, f := range []string{"{\"a\":1}\n", "{\"b\":2}\n"} {
		if err := w.queue([]byte(f), nil); err != nil {
			t.Fatal(err)
		}
	}
	w.queue([]byte("{\"c\":3}\n"), done)
	if len(out.messages) != 0 {
		t.Fatalf("%d messages before the flush, want none", len(out.messages))
	}
	if err := w.flush(); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(out.messages, "|"), `{"a":1}|{"b":2}|{"c":3}`; got != want {
		t.Fatalf("messages %s, want %s", got, want)
	}
	if r := <-done; r.err != nil {
		t.Fatalf("acknowledged %v", r.err)
	}
}

// A direct writer lends a frame buffer taken back only after a write that
// began after it was taken back succeeded (its frame is written by then),
// keeps at most maxSpareFrames of at most maxSpareFrameBytes, and lends
// nothing after a failed write, nor in helper or message mode.
func TestDirectWriterLendsWrittenFrames(t *testing.T) {
	out := &deadlineOutput{}
	w := newFrameWriter(out, time.Hour)
	defer w.close(nil)
	if b := w.lendFrame(); b != nil {
		t.Fatalf("a new writer lent %q", b)
	}
	frame := append(make([]byte, 0, 64), "1\n"...)
	if err := w.queue(frame, nil); err != nil {
		t.Fatal(err)
	}
	w.takeBackFrame(frame)
	if b := w.lendFrame(); b != nil {
		t.Fatal("lent a buffer whose frame is not written yet")
	}
	if err := w.flush(); err != nil {
		t.Fatal(err)
	}
	b := w.lendFrame()
	if len(b) != 0 || !sameArray(b, frame) {
		t.Fatalf("after the write lent %q (cap %d), want the written frame's buffer, empty", b, cap(b))
	}
	if out.written() != "1\n" {
		t.Fatalf("written %q", out.written())
	}

	for range maxSpareFrames + 2 {
		w.takeBackFrame(make([]byte, 0, 16))
	}
	w.takeBackFrame(make([]byte, 0, maxSpareFrameBytes+1))
	w.queue([]byte("2\n"), nil)
	if err := w.flush(); err != nil {
		t.Fatal(err)
	}
	lent := 0
	for w.lendFrame() != nil {
		lent++
	}
	if lent != maxSpareFrames {
		t.Fatalf("lent %d buffers, want %d (the bound)", lent, maxSpareFrames)
	}

	failing := newFrameWriter(&deadlineOutput{err: errors.New("broken pipe")}, time.Hour)
	defer failing.close(nil)
	kept := make([]byte, 0, 16)
	failing.queue([]byte("3\n"), nil)
	failing.takeBackFrame(kept)
	if err := failing.flush(); err == nil {
		t.Fatal("the write to a broken output succeeded")
	}
	if b := failing.lendFrame(); b != nil {
		t.Fatal("lent a buffer after a failed write")
	}

	helper := newFrameWriter(&noDeadlineOutput{}, time.Hour)
	defer helper.close(nil)
	messages := newMessageWriter(&messageRecorder{}, time.Hour)
	defer messages.close(nil)
	for name, other := range map[string]*frameWriter{"helper": helper, "message": messages} {
		other.takeBackFrame(make([]byte, 0, 16))
		other.freeReturned()
		if b := other.lendFrame(); b != nil {
			t.Errorf("a %s-mode writer lent a buffer", name)
		}
	}
}
