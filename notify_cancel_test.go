package main

import (
	"context"
	"errors"
	"io"
	"os"
	"sync"
	"testing"
	"time"
)

// deadlineGatedOutput is an output with write deadlines that takes nothing:
// a Write says it entered, then waits until its deadline has passed, looking
// again each time SetWriteDeadline is called (as a write to a full
// non-blocking pipe does), and fails as an *os.File's does.
type deadlineGatedOutput struct {
	entered chan struct{}
	mu      sync.Mutex
	// deadline is the current deadline, changed the channel closed (and
	// replaced) at each SetWriteDeadline.
	deadline time.Time
	changed  chan struct{}
}

func newDeadlineGatedOutput() *deadlineGatedOutput {
	return &deadlineGatedOutput{entered: make(chan struct{}, 100), changed: make(chan struct{})}
}

func (o *deadlineGatedOutput) SetWriteDeadline(t time.Time) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.deadline = t
	close(o.changed)
	o.changed = make(chan struct{})
	return nil
}

func (o *deadlineGatedOutput) Write([]byte) (int, error) {
	select {
	case o.entered <- struct{}{}:
	default:
	}
	for {
		o.mu.Lock()
		d, changed := o.deadline, o.changed
		o.mu.Unlock()
		var expired <-chan time.Time
		if !d.IsZero() {
			t := time.NewTimer(time.Until(d))
			expired = t.C
			defer t.Stop()
		}
		select {
		case <-expired:
			return 0, &os.PathError{Op: "write", Path: "out", Err: os.ErrDeadlineExceeded}
		case <-changed:
		}
	}
}

// A Notify called with context.Background() whose frame is being written
// when Serve is cancelled returns promptly with an error matching
// ErrTransportDown (every call the coordinator took gets exactly one reply),
// and Serve returns context.Canceled: with the helper writer (the write
// stays blocked and is abandoned) and with the direct one (the write ends
// at once, long before its WriteTimeout of an hour).
func TestNotifyReturnsWhenServeIsCancelledDuringItsWrite(t *testing.T) {
	tests := []struct {
		name   string
		output func(t *testing.T) (out io.Writer, entered <-chan struct{})
	}{
		{"helper writer", func(t *testing.T) (io.Writer, <-chan struct{}) {
			w := newGatedWriter()
			t.Cleanup(func() { close(w.release) })
			entered := make(chan struct{})
			go func() { <-w.entered; close(entered) }()
			return w, entered
		}},
		{"direct writer", func(t *testing.T) (io.Writer, <-chan struct{}) {
			o := newDeadlineGatedOutput()
			return o, o.entered
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, entered := tt.output(t)
			in := newFeedReader()
			t.Cleanup(func() { in.close(nil) })
			tr, err := NewTransport(newTestDispatcher(), Options{Input: in, Output: out, WriteTimeout: time.Hour, NotificationMethods: []string{appNotification}, Logger: quietLogger()})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			served := make(chan error, 1)
			go func() { served <- tr.Serve(ctx) }()
			waitFor(t, tr.started, "Serve to start")
			notified := notifyAsync(tr, context.Background(), map[string]string{"call": "blocked"})
			waitFor(t, entered, "the notification's write")
			cancel()
			if err := waitFor(t, served, "Serve to return"); !errors.Is(err, context.Canceled) {
				t.Fatalf("Serve = %v, want context.Canceled", err)
			}
			if err := waitFor(t, notified, "Notify to return"); !errors.Is(err, ErrTransportDown) {
				t.Fatalf("Notify = %v, want an error matching ErrTransportDown", err)
			}
		})
	}
}

// Closing the writer replies to every frame handed over with one: the one
// whose write is in flight and those queued behind it.
func TestWriterCloseRepliesToEveryFrame(t *testing.T) {
	g := &gateWriter{entered: make(chan []byte, 4), release: make(chan error, 4)}
	w := newFrameWriter(g, time.Hour)
	inFlight, queued := make(chan peerReply, 1), make(chan peerReply, 1)
	w.queue([]byte("1\n"), inFlight)
	<-g.entered
	w.queue([]byte("2\n"), queued)
	w.close(context.Canceled)
	g.release <- nil // the abandoned write returns; nobody takes its result
	for name, ack := range map[string]chan peerReply{"in flight": inFlight, "queued": queued} {
		select {
		case r := <-ack:
			if !errors.Is(r.err, ErrTransportDown) || !errors.Is(r.err, context.Canceled) {
				t.Errorf("the %s frame got %v, want ErrTransportDown wrapping context.Canceled", name, r.err)
			}
		default:
			t.Errorf("the %s frame got no reply", name)
		}
	}
}
