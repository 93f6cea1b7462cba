package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// The transport over outputs with write deadlines, where the coordinator
// writes itself (writer.go, direct mode).

// onCoordinator reports whether the calling goroutine is a coordinator's.
func onCoordinator() bool {
	buf := make([]byte, 64<<10)
	return bytes.Contains(buf[:runtime.Stack(buf, false)], []byte(".(*coordinator).serve("))
}

// deadlineFrameRecorder is a frameRecorder with write deadlines, as a
// non-blocking pipe has. It also keeps what each Write carried and counts
// the Writes made by another goroutine than a coordinator.
type deadlineFrameRecorder struct {
	*frameRecorder
	mu             sync.Mutex
	writes         [][]byte
	offCoordinator int
}

func (r *deadlineFrameRecorder) SetWriteDeadline(time.Time) error { return nil }

// framesWritten counts the frames the Writes so far carried.
func (r *deadlineFrameRecorder) framesWritten() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, p := range r.writes {
		n += bytes.Count(p, []byte("\n"))
	}
	return n
}

func (r *deadlineFrameRecorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	r.writes = append(r.writes, bytes.Clone(p))
	if !onCoordinator() {
		r.offCoordinator++
	}
	r.mu.Unlock()
	return r.frameRecorder.Write(p)
}

// startDirectHarness is startHarnessWith over a deadlineFrameRecorder, whose
// frames h.next returns.
func startDirectHarness(t *testing.T, opts Options, d Dispatcher) (*harness, *deadlineFrameRecorder) {
	t.Helper()
	out := &deadlineFrameRecorder{frameRecorder: newFrameRecorder()}
	opts.Output = out
	h := startHarnessWith(t, opts, d)
	h.out = out.frameRecorder
	return h, out
}

// stalledOutput is an output with write deadlines that nobody reads: a
// Write waits for the deadline set before it, then fails as an *os.File's
// does. It records the Writes and whether a coordinator made them.
type stalledOutput struct {
	mu             sync.Mutex
	deadline       time.Time
	writes         int
	offCoordinator int
	entered        chan struct{}
}

func (o *stalledOutput) SetWriteDeadline(t time.Time) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.deadline = t
	return nil
}

func (o *stalledOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	o.writes++
	if !onCoordinator() {
		o.offCoordinator++
	}
	d := o.deadline
	o.mu.Unlock()
	select {
	case o.entered <- struct{}{}:
	default: // a write it polls again: the test waits for the first
	}
	if d.IsZero() {
		select {} // never returns, as a blocked pipe without a deadline
	}
	<-time.After(time.Until(d))
	return 0, &os.PathError{Op: "write", Path: "out", Err: os.ErrDeadlineExceeded}
}

// A write the output never takes ends at the output's deadline, on the
// coordinator, which then ends the transport with the write timeout: work is
// cancelled, the write is not retried, Notify fails.
func TestDirectWriteTimeoutEndsTheTransport(t *testing.T) {
	out := &stalledOutput{entered: make(chan struct{}, 10)}
	h := startHarness(t, Options{Output: out, WriteTimeout: 30 * time.Millisecond})
	h.send(`{"jsonrpc":"2.0","id":1,"method":"block"}`)
	h.d.waitStarted(t)
	h.send(`{"jsonrpc":"2.0","id":2,"method":"echo"}`)
	waitFor(t, out.entered, "the write")
	err := waitFor(t, h.done, "Serve to return")
	h.ended = true
	if !errors.Is(err, ErrOutputFailed) || !errors.Is(err, ErrWriteTimeout) || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Serve = %v, want the write timeout of the output's deadline", err)
	}
	if got, want := err.Error(), "output failed: write timeout after 30ms: write out: i/o timeout"; got != want {
		t.Errorf("error text %q, want %q", got, want)
	}
	if id := waitFor(t, h.d.cancelled, "running work to be cancelled"); id != "1" {
		t.Fatalf("cancelled %s", id)
	}
	out.mu.Lock()
	writes, off := out.writes, out.offCoordinator
	out.mu.Unlock()
	if writes < 1 || writes > directPolls || off != 0 {
		t.Fatalf("%d Writes, %d of them off the coordinator; want one write polled at most %d times, by the coordinator", writes, off, directPolls)
	}
	if err := h.tr.Notify(context.Background(), "notifications/x", nil); err == nil {
		t.Fatal("Notify after the output failed succeeded")
	}
}

// Notifications from many goroutines and responses to many requests over an
// output with deadlines: the coordinator makes every Write, each carries
// whole frames only, and every frame arrives once, undamaged.
func TestDirectWritesCarryWholeFrames(t *testing.T) {
	const senders, perSender, requests = 8, 25, 100
	h, out := startDirectHarness(t, notifyOptions(), nil)
	h.sync()
	out.mu.Lock()
	synced := len(out.writes) // the sync's answer, alone
	out.mu.Unlock()
	pad := func(n int) string { return strings.Repeat("x", n*389%8192) }
	var wg sync.WaitGroup
	errs := make(chan error, senders*perSender)
	for g := range senders {
		wg.Go(func() {
			for i := range perSender {
				n := g*perSender + i
				errs <- h.tr.Notify(context.Background(), appNotification, map[string]any{"n": n, "pad": pad(n)})
			}
		})
	}
	for i := range requests {
		h.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"echo","params":{"n":%d,"pad":"%s"}}`, i, i, pad(i+7)))
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("Notify = %v", err)
		}
	}
	if err, _ := h.finish(); err != nil {
		t.Fatalf("Serve = %v", err)
	}
	out.mu.Lock()
	defer out.mu.Unlock()
	if out.offCoordinator != 0 {
		t.Fatalf("%d of %d Writes made off the coordinator", out.offCoordinator, len(out.writes))
	}
	notes, answers := map[int]bool{}, map[int]bool{}
	for _, p := range out.writes[synced:] {
		for _, raw := range splitWholeFrames(t, p) {
			f := decodeFrame(t, string(raw))
			var body struct {
				N   int
				Pad string
			}
			seen, extra := notes, 0
			if f.isResponse() {
				seen, extra = answers, 7
				json.Unmarshal(f.Result, &body)
			} else {
				json.Unmarshal(f.Params, &body)
			}
			if seen[body.N] || body.Pad != pad(body.N+extra) {
				t.Fatalf("repeated or damaged frame %.200q", raw)
			}
			seen[body.N] = true
		}
	}
	if len(notes) != senders*perSender || len(answers) != requests {
		t.Fatalf("%d notifications and %d answers written, want %d and %d", len(notes), len(answers), senders*perSender, requests)
	}
}

// Over an output with deadlines, a request's progress reports precede its
// response, and each report returns only once its frame was written.
func TestDirectProgressIsWrittenBeforeItReturns(t *testing.T) {
	const steps = 5
	var out *deadlineFrameRecorder
	writtenAtReturn := make(chan int, steps)
	rt := newTestRuntime(t, testOptions())
	mustAddTool(t, rt, Tool{Name: "steps"}, func(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
		for i := 1; i <= steps; i++ {
			if err := req.ReportProgress(ctx, Progress{Progress: float64(i), Total: steps}); err != nil {
				return nil, err
			}
			writtenAtReturn <- out.framesWritten()
		}
		return TextResult("done"), nil
	})
	h, rec := startDirectHarness(t, Options{}, rt)
	out = rec // set before the request is sent, which orders it before the handler reads it
	h.send(toolCall("1", "steps", meta2026With(`"progressToken":"p"`)))
	for i := 1; i <= steps; i++ {
		if n := waitFor(t, writtenAtReturn, "a report to return"); n < i {
			t.Fatalf("report %d returned with %d frames written: want its own written first", i, n)
		}
		f := decodeFrame(t, h.next())
		if f.Method != "notifications/progress" || !strings.Contains(string(f.Params), fmt.Sprintf(`"progress":%d`, i)) {
			t.Fatalf("frame %d: %+v, want progress %d", i, f, i)
		}
	}
	if f := decodeFrame(t, h.next()); string(f.ID) != "1" || !strings.Contains(string(f.Result), `"done"`) {
		t.Fatalf("after the reports: %+v, want the response", f)
	}
	h.noFramesLeft()
}

// Over a real pipe, which the runtime's poller serves with deadlines: a frame
// larger than the pipe holds goes out whole while the client reads it in
// small pieces (the OS takes the write in parts, under its one deadline),
// and a write nobody reads ends at the pipe's deadline.
func TestDirectWriteToAPipe(t *testing.T) {
	pipe := func(t *testing.T) (r, w *os.File) {
		t.Helper()
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close(); w.Close() })
		if w.SetWriteDeadline(time.Time{}) != nil {
			t.Skip("pipes have no write deadlines here")
		}
		return r, w
	}
	big := strings.Repeat("x", 300<<10)
	echo := `{"jsonrpc":"2.0","id":1,"method":"echo","params":{"text":"` + big + `"}}`

	t.Run("a frame larger than the pipe", func(t *testing.T) {
		r, w := pipe(t)
		h := startHarness(t, Options{Output: w, WriteTimeout: time.Hour})
		h.send(echo)
		var frame []byte
		piece := make([]byte, 1024)
		for !bytes.HasSuffix(frame, []byte("\n")) {
			n, err := r.Read(piece)
			if err != nil {
				t.Fatal(err)
			}
			frame = append(frame, piece[:n]...)
		}
		if want := `{"jsonrpc":"2.0","id":1,"result":{"text":"` + big + `"}}` + "\n"; string(frame) != want {
			t.Fatalf("read %d bytes %.60q…, want the %d bytes of the answer", len(frame), frame, len(want))
		}
		if err, _ := h.finish(); err != nil {
			t.Fatalf("Serve = %v", err)
		}
	})

	t.Run("nobody reads", func(t *testing.T) {
		_, w := pipe(t)
		h := startHarness(t, Options{Output: w, WriteTimeout: 50 * time.Millisecond})
		h.send(echo)
		err := waitFor(t, h.done, "Serve to return")
		h.ended = true
		if !errors.Is(err, ErrWriteTimeout) || !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("Serve = %v, want the write timeout of the pipe's deadline", err)
		}
	})
}

// Pipelined inline echo calls of mixed sizes over a direct writer, whose
// frame buffers are lent again once written: every answer carries its own
// request's id and text (a buffer lent again before its frame was written
// would put another answer's bytes in it).
func TestDirectReusedFramesKeepEachAnswer(t *testing.T) {
	h, _ := startDirectHarness(t, Options{}, newCatalogRuntime(t))
	sizes := []int{10, 5000, 100, 20000, 1, 300, 40000, 64}
	const calls = 200
	texts := make([]string, calls)
	for i := range calls {
		texts[i] = strings.Repeat(string(rune('a'+i%26)), sizes[i%len(sizes)])
		h.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":%q},%s}}`, i, texts[i], binMeta2026))
	}
	for i := range calls {
		var answer struct {
			ID     int `json:"id"`
			Result struct {
				Content []struct{ Text string } `json:"content"`
			} `json:"result"`
		}
		frame := h.next()
		if err := json.Unmarshal([]byte(frame), &answer); err != nil {
			t.Fatalf("answer %d: %v: %.200s", i, err, frame)
		}
		if answer.ID != i || len(answer.Result.Content) != 1 || answer.Result.Content[0].Text != texts[i] {
			t.Fatalf("answer %d: %.200s, want id %d echoing its %d-byte text", i, frame, i, len(texts[i]))
		}
	}
	h.noFramesLeft()
}
