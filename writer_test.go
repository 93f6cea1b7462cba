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
			defer func() { close(out.release); w.close() }()
			if tt.inFlight {
				if err := w.write([]byte("{}\n")); err != nil {
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
				if err := w.write([]byte("{}\n")); err == nil {
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
	defer w.close()
	for range 3 {
		if err := w.writeAndWait([]byte("{}\n")); err != nil {
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

// The output's write deadline is moved once per WriteTimeout, not per frame,
// and always lies at least WriteTimeout after the start of each write.
func TestWriteDeadlineMovedOncePerTimeout(t *testing.T) {
	const timeout = time.Hour
	out := &deadlineRecorder{}
	w := newFrameWriter(out, timeout)
	before := time.Now()
	for range 5 {
		if err := w.writeAndWait([]byte("{}\n")); err != nil {
			t.Fatal(err)
		}
	}
	w.close()
	out.mu.Lock()
	defer out.mu.Unlock()
	// newFrameWriter clears the deadline, the first write moves it, close clears it.
	if len(out.deadlines) != 3 || !out.deadlines[0].IsZero() || !out.deadlines[2].IsZero() {
		t.Fatalf("deadlines set: %v; want cleared, one moved, cleared", out.deadlines)
	}
	if d := out.deadlines[1]; d.Before(before.Add(timeout)) || d.After(time.Now().Add(2*timeout)) {
		t.Fatalf("deadline %v: want between WriteTimeout and 2*WriteTimeout after the first write", d)
	}
}
