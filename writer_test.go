package main

import (
	"errors"
	"sync"
	"testing"
	"time"
)

// The write timer is armed once and re-armed only when it fires, so whether a
// firing ends the connection depends on how long the frame then in flight
// has been written, not on when the timer was armed.
func TestWriteTimerFiring(t *testing.T) {
	const timeout = time.Hour // never fires by itself; the test delivers each firing
	tests := []struct {
		name     string
		inFlight bool
		began    time.Duration // how long ago the frame in flight was handed over
		wantErr  bool
		wantBusy bool
	}{
		{name: "idle", inFlight: false},
		{name: "frame began after the timer was armed", inFlight: true, began: timeout / 2, wantBusy: true},
		{name: "frame began WriteTimeout ago", inFlight: true, began: timeout, wantErr: true},
		{name: "frame began long ago", inFlight: true, began: 3 * timeout, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := &blockingWriter{entered: make(chan struct{}, 1), release: make(chan struct{})}
			w := newFrameWriter(out, timeout)
			defer func() { close(out.release); w.close(nil) }()
			if tt.inFlight {
				if err := w.queue([]byte("{}\n"), nil); err != nil {
					t.Fatal(err)
				}
				<-out.entered
				w.started = time.Now().Add(-tt.began)
			}
			w.armed = true
			err := w.handle(errTimerFired)
			if gotErr := err != nil; gotErr != tt.wantErr {
				t.Fatalf("handle = %v, want error: %v", err, tt.wantErr)
			}
			if err != nil && (!errors.Is(err, ErrWriteTimeout) || !errors.Is(err, ErrOutputFailed)) {
				t.Fatalf("handle = %v, want an output-failed write timeout", err)
			}
			if w.busy != tt.wantBusy || w.armed != tt.wantBusy {
				t.Fatalf("busy %v armed %v, want both %v", w.busy, w.armed, tt.wantBusy)
			}
			if tt.wantErr {
				if err := w.queue([]byte("{}\n"), nil); err == nil {
					t.Fatal("a write after the timeout succeeded; want the terminal error")
				}
			}
		})
	}
}

// The timer is armed by the first frame and not reset by later ones, and a
// firing while no frame is in flight disarms it without harm.
func TestWriteTimerArmedOnce(t *testing.T) {
	out := newFrameRecorder()
	w := newFrameWriter(out, time.Hour)
	defer w.close(nil)
	for range 3 {
		if err := w.queueAndWait([]byte("{}\n")); err != nil {
			t.Fatal(err)
		}
		if !w.armed || w.busy {
			t.Fatalf("after a write: armed %v busy %v, want armed and idle", w.armed, w.busy)
		}
	}
	if err := w.handle(errTimerFired); err != nil || w.armed {
		t.Fatalf("firing while idle: %v, armed %v; want no error, disarmed", err, w.armed)
	}
	if w.pending() != nil {
		t.Fatal("pending is not nil with nothing in flight and the timer disarmed")
	}
}

// deadlineRecorder is an output with write deadlines that records them.
type deadlineRecorder struct {
	mu        sync.Mutex
	deadlines []time.Time
}

func (d *deadlineRecorder) SetWriteDeadline(t time.Time) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.deadlines = append(d.deadlines, t)
	return nil
}

func (d *deadlineRecorder) Write(p []byte) (int, error) { return len(p), nil }

// The output's write deadline is set for each write, WriteTimeout/directPolls
// after it began (when the write is not done by then, it looks at the
// frames taken and sets the next), and cleared by close.
func TestWriteDeadlineSetPerWrite(t *testing.T) {
	const timeout = time.Hour
	out := &deadlineRecorder{}
	w := newFrameWriter(out, timeout)
	before := time.Now()
	for range 5 {
		if err := w.queueAndWait([]byte("{}\n")); err != nil {
			t.Fatal(err)
		}
	}
	after := time.Now()
	w.close(nil)
	out.mu.Lock()
	defer out.mu.Unlock()
	// newFrameWriter clears the deadline, each write sets it, close clears it.
	if len(out.deadlines) != 7 || !out.deadlines[0].IsZero() || !out.deadlines[6].IsZero() {
		t.Fatalf("deadlines set: %v; want cleared, one per write, cleared", out.deadlines)
	}
	for _, d := range out.deadlines[1:6] {
		if d.Before(before.Add(timeout/directPolls)) || d.After(after.Add(timeout/directPolls)) {
			t.Fatalf("deadline %v: want WriteTimeout/directPolls after its write began", d)
		}
	}
}

// queueAndWait queues frame and waits until it is written.
func (w *frameWriter) queueAndWait(frame []byte) error {
	if err := w.queue(frame, nil); err != nil {
		return err
	}
	return w.wait()
}

// gateWriter is an output whose every Write waits for a release, recording
// what each Write carried.
type gateWriter struct {
	entered chan []byte
	release chan error
}

func (g *gateWriter) Write(p []byte) (int, error) {
	g.entered <- append([]byte(nil), p...)
	if err := <-g.release; err != nil {
		return 0, err
	}
	return len(p), nil
}

// Frames handed over while a write is in flight go out together in the
// next write, in order, and each frame's acknowledgement comes once the
// write that carried it returned.
func TestFramesQueuedDuringAWriteGoOutTogether(t *testing.T) {
	g := &gateWriter{entered: make(chan []byte, 4), release: make(chan error, 4)}
	w := newFrameWriter(g, time.Hour)
	defer w.close(nil)
	acks := make([]chan peerReply, 4)
	for i := range acks {
		acks[i] = make(chan peerReply, 1)
	}
	if err := w.queue([]byte("1\n"), acks[0]); err != nil {
		t.Fatal(err)
	}
	if got := string(<-g.entered); got != "1\n" {
		t.Fatalf("first write %q", got)
	}
	for i, f := range []string{"2\n", "3\n", "4\n"} {
		if err := w.queue([]byte(f), acks[i+1]); err != nil {
			t.Fatal(err)
		}
	}
	if w.backlog() != 6 {
		t.Fatalf("backlog %d, want the 6 bytes of the three queued frames", w.backlog())
	}
	for _, ack := range acks {
		select {
		case r := <-ack:
			t.Fatalf("acknowledged %v before its write returned", r)
		default:
		}
	}
	g.release <- nil
	if err := w.handle(<-w.events); err != nil {
		t.Fatal(err)
	}
	if r := <-acks[0]; r.err != nil {
		t.Fatalf("first frame's acknowledgement %v", r.err)
	}
	if got := string(<-g.entered); got != "2\n3\n4\n" {
		t.Fatalf("second write carried %q, want the three queued frames in order", got)
	}
	g.release <- nil
	if err := w.wait(); err != nil {
		t.Fatal(err)
	}
	for i, ack := range acks[1:] {
		if r := <-ack; r.err != nil {
			t.Fatalf("frame %d acknowledged %v", i+2, r.err)
		}
	}
}

// When a write fails, its frames' acknowledgements get the output error and
// the frames queued behind it, never handed to the output, ErrTransportDown;
// nothing more is written.
func TestFailedWriteAcknowledgesEveryFrame(t *testing.T) {
	g := &gateWriter{entered: make(chan []byte, 4), release: make(chan error, 4)}
	w := newFrameWriter(g, time.Hour)
	defer w.close(nil)
	inFlight, queued := make(chan peerReply, 1), make(chan peerReply, 1)
	w.queue([]byte("1\n"), inFlight)
	<-g.entered
	w.queue([]byte("2\n"), queued)
	g.release <- errors.New("broken pipe")
	if err := w.wait(); !errors.Is(err, ErrOutputFailed) {
		t.Fatalf("wait = %v, want the output failure", err)
	}
	if r := <-inFlight; !errors.Is(r.err, ErrOutputFailed) {
		t.Fatalf("the failed frame's acknowledgement %v, want the output failure", r.err)
	}
	if r := <-queued; !errors.Is(r.err, ErrTransportDown) || errors.Is(r.err, ErrOutputFailed) && !errors.Is(r.err, ErrTransportDown) {
		t.Fatalf("the queued frame's acknowledgement %v, want ErrTransportDown", r.err)
	}
	later := make(chan peerReply, 1)
	if err := w.queue([]byte("3\n"), later); !errors.Is(err, ErrOutputFailed) {
		t.Fatalf("queue after the failure = %v, want the terminal error", err)
	}
	if r := <-later; !errors.Is(r.err, ErrTransportDown) {
		t.Fatalf("a frame queued after the failure acknowledged %v", r.err)
	}
	select {
	case p := <-g.entered:
		t.Fatalf("wrote %q after the failure", p)
	default:
	}
}
