package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"
)

// safetyTimeout only turns a hang into a failure; it never orders events.
const safetyTimeout = 20 * time.Second

// feedReader is an input fed by the test: each feed becomes the data of one or
// more Reads; close ends it with io.EOF (or the given error).
type feedReader struct {
	data chan []byte
	end  chan error
	buf  []byte
}

func newFeedReader() *feedReader {
	return &feedReader{data: make(chan []byte), end: make(chan error, 1)}
}

func (r *feedReader) Read(p []byte) (int, error) {
	if len(r.buf) == 0 {
		select {
		case b := <-r.data:
			r.buf = b
		case err := <-r.end:
			r.end <- err
			return 0, err
		}
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

// feed blocks until the transport's reader has taken b.
func (r *feedReader) feed(t *testing.T, b []byte) {
	t.Helper()
	select {
	case r.data <- b:
	case <-time.After(safetyTimeout):
		t.Fatalf("transport did not read %.60q", b)
	}
}

func (r *feedReader) close(err error) {
	if err == nil {
		err = io.EOF
	}
	r.end <- err
}

// frameRecorder is an output that hands every frame written to the test,
// one at a time, whether a Write carried one frame or several.
type frameRecorder struct {
	frames chan string
	mu     sync.Mutex
	writes int
}

func newFrameRecorder() *frameRecorder { return &frameRecorder{frames: make(chan string, 10000)} }

func (w *frameRecorder) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.writes++
	w.mu.Unlock()
	for _, f := range splitFrames(p) {
		w.frames <- f
	}
	return len(p), nil
}

// splitFrames splits what one Write carried into its frames, each ending in
// "\n". A Write must carry whole frames only: a piece without its newline
// is returned as a last element, which decodeFrame then refuses.
func splitFrames(p []byte) []string {
	var frames []string
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			return append(frames, string(p))
		}
		frames = append(frames, string(p[:i+1]))
		p = p[i+1:]
	}
	return frames
}

// testDispatcher serves methods whose behaviour the test controls:
//
//	echo    result = params
//	block   reports started, waits for release or ctx; reports cancelled on ctx
//	ignore  reports started, waits for release only (ignores ctx)
//	panic   panics
//	session result = the request's header and session
//	initialize  succeeds, negotiating params.protocolVersion; with initGate
//	            set, reports started and first waits until initGate is
//	            closed, then fails when its params contain "fail"
type testDispatcher struct {
	started   chan string // id of each block/ignore (or gated initialize) request that started
	cancelled chan string // id of each block request whose ctx ended
	release   chan struct{}
	notified  chan string   // method of each notification dispatched
	initGate  chan struct{} // nil: initialize does not wait; set before Serve
}

func newTestDispatcher() *testDispatcher {
	return &testDispatcher{
		started:   make(chan string, 1000),
		cancelled: make(chan string, 1000),
		release:   make(chan struct{}),
		notified:  make(chan string, 1000),
	}
}

func (d *testDispatcher) Dispatch(ctx context.Context, req *Request) Reply {
	if req.ID == nil {
		d.notified <- req.Method
		return Reply{}
	}
	switch req.Method {
	case "echo":
		return Reply{Result: req.Params}
	case "block":
		d.started <- string(req.ID)
		select {
		case <-d.release:
			return Reply{Result: json.RawMessage(`{"released":true}`)}
		case <-ctx.Done():
			d.cancelled <- string(req.ID)
			return Reply{Result: json.RawMessage(`{"cancelled":true}`)}
		}
	case "ignore":
		d.started <- string(req.ID)
		<-d.release
		return Reply{Result: json.RawMessage(`{"released":true}`)}
	case "panic":
		panic("test panic")
	case "session":
		b, _ := json.Marshal(map[string]any{"header": req.Header, "version": req.Session.ProtocolVersion})
		return Reply{Result: b}
	case "initialize":
		if d.initGate != nil {
			d.started <- string(req.ID)
			<-d.initGate
			if bytes.Contains(req.Params, []byte("fail")) {
				return Reply{Error: &RPCError{Code: CodeInvalidParams, Message: "Invalid params: refused"}}
			}
		}
		var p struct{ ProtocolVersion string }
		json.Unmarshal(req.Params, &p)
		return Reply{Result: json.RawMessage(`{}`), Initialized: &Session{ProtocolVersion: p.ProtocolVersion}}
	}
	return Reply{Error: &RPCError{Code: CodeMethodNotFound, Message: "Method not found: " + req.Method}}
}

func (d *testDispatcher) waitStarted(t *testing.T) string {
	t.Helper()
	return waitFor(t, d.started, "a handler to start")
}

func waitFor[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(safetyTimeout):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// harness runs a Transport over a feedReader and a frameRecorder.
type harness struct {
	t     *testing.T
	in    *feedReader
	out   *frameRecorder
	tr    *Transport
	d     *testDispatcher
	done  chan error
	ended bool
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func startHarness(t *testing.T, opts Options) *harness {
	t.Helper()
	return startHarnessWith(t, opts, nil)
}

// startHarnessWith is startHarness serving d instead of the harness's
// testDispatcher (nil: the testDispatcher). h.d exists either way; a test
// serving its own d releases its own handlers, with a t.Cleanup registered
// after this call so that it runs before the harness waits for Serve.
func startHarnessWith(t *testing.T, opts Options, d Dispatcher) *harness {
	t.Helper()
	h := &harness{t: t, in: newFeedReader(), out: newFrameRecorder(), d: newTestDispatcher(), done: make(chan error, 1)}
	if d == nil {
		d = h.d
	}
	if opts.Input == nil {
		opts.Input = h.in
	}
	if opts.Output == nil {
		opts.Output = h.out
	}
	if opts.Logger == nil {
		opts.Logger = quietLogger()
	}
	tr, err := NewTransport(d, opts)
	if err != nil {
		t.Fatalf("NewTransport: %v", err)
	}
	h.tr = tr
	go func() { h.done <- tr.Serve(context.Background()) }()
	t.Cleanup(func() {
		select {
		case h.in.end <- io.EOF:
		default:
		}
		if !h.ended {
			close(h.d.release)
			<-h.done
		}
	})
	return h
}

func (h *harness) send(line string) { h.t.Helper(); h.in.feed(h.t, []byte(line+"\n")) }

// next returns the next frame written.
func (h *harness) next() string {
	h.t.Helper()
	return waitFor(h.t, h.out.frames, "a frame")
}

// roundTrip sends line and returns the next frame.
func (h *harness) roundTrip(line string) string {
	h.t.Helper()
	h.send(line)
	return h.next()
}

// finish ends the input and returns Serve's result and every frame written
// after those already taken.
func (h *harness) finish() (error, []string) {
	h.t.Helper()
	h.in.close(nil)
	return h.wait()
}

func (h *harness) wait() (error, []string) {
	h.t.Helper()
	err := waitFor(h.t, h.done, "Serve to return")
	h.ended = true
	var rest []string
	for {
		select {
		case f := <-h.out.frames:
			rest = append(rest, f)
		default:
			return err, rest
		}
	}
}

// jsonEqual reports whether two JSON texts encode the same value.
func jsonEqual(t *testing.T, got, want string) bool {
	t.Helper()
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("frame is not JSON: %v: %q", err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad expectation %q: %v", want, err)
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	return bytes.Equal(gb, wb)
}
