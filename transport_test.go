package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Each bad line is answered exactly as expected, and the next line is served.
func TestBadInputIsAnsweredAndNextLineServed(t *testing.T) {
	const echoNext = `{"jsonrpc":"2.0","id":"next","method":"echo","params":{"ok":true}}`
	const echoNextReply = `{"jsonrpc":"2.0","id":"next","result":{"ok":true}}` + "\n"
	parse := `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}` + "\n"
	invalid := func(id, msg string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32600,"message":"` + msg + `"}}` + "\n"
	}
	badID := invalid("null", `Invalid Request: \"id\" must be a string of at most 256 bytes or a 64-bit integer`)
	tests := []struct {
		name, line, want string
	}{
		{"malformed JSON", `{"jsonrpc":"2.0",`, parse},
		{"blank line", ``, parse},
		{"spaces only", `   `, parse},
		{"trailing data", `{"jsonrpc":"2.0","id":1,"method":"echo"} {}`, parse},
		{"duplicate keys", `{"jsonrpc":"2.0","id":1,"id":2,"method":"echo"}`, parse},
		{"nested duplicate keys", `{"jsonrpc":"2.0","id":1,"method":"echo","params":{"a":{"b":1,"b":2}}}`, parse},
		{"invalid UTF-8", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"echo\",\"params\":{\"a\":\"\xff\"}}", parse},
		{"1.5 million digit number", `{"jsonrpc":"2.0","id":1,"method":"echo","params":{"n":` + strings.Repeat("7", 1_500_000) + `}}`, parse},
		{"deep nesting", `{"jsonrpc":"2.0","id":1,"method":"echo","params":{"a":` + strings.Repeat("[", 600) + strings.Repeat("]", 600) + `}}`, parse},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"echo"}]`, invalid("null", "Invalid Request")},
		{"empty batch", `[]`, invalid("null", "Invalid Request")},
		{"number", `42`, invalid("null", "Invalid Request")},
		{"string", `"hello"`, invalid("null", "Invalid Request")},
		{"bool", `true`, invalid("null", "Invalid Request")},
		{"null", `null`, invalid("null", "Invalid Request")},
		{"missing jsonrpc", `{"id":3,"method":"echo"}`, invalid("3", `Invalid Request: \"jsonrpc\" must be \"2.0\"`)},
		{"wrong jsonrpc", `{"jsonrpc":"1.0","id":"x","method":"echo"}`, invalid(`"x"`, `Invalid Request: \"jsonrpc\" must be \"2.0\"`)},
		{"method not a string", `{"jsonrpc":"2.0","id":4,"method":7}`, invalid("4", `Invalid Request: \"method\" must be a string`)},
		{"no method, no id", `{"jsonrpc":"2.0"}`, invalid("null", `Invalid Request: \"method\" must be a string`)},
		{"null id", `{"jsonrpc":"2.0","id":null,"method":"echo"}`, badID},
		{"float id", `{"jsonrpc":"2.0","id":1.5,"method":"echo"}`, badID},
		{"bool id", `{"jsonrpc":"2.0","id":true,"method":"echo"}`, badID},
		{"array id", `{"jsonrpc":"2.0","id":[1],"method":"echo"}`, badID},
		{"object id", `{"jsonrpc":"2.0","id":{"a":1},"method":"echo"}`, badID},
		{"300-byte string id", `{"jsonrpc":"2.0","id":"` + strings.Repeat("x", 300) + `","method":"echo"}`, badID},
		{"2^63 id", `{"jsonrpc":"2.0","id":9223372036854775808,"method":"echo"}`, badID},
		{"params array", `{"jsonrpc":"2.0","id":5,"method":"echo","params":[1]}`, `{"jsonrpc":"2.0","id":5,"error":{"code":-32602,"message":"Invalid params: \"params\" must be an object"}}` + "\n"},
		{"unknown method", `{"jsonrpc":"2.0","id":6,"method":"nope"}`, `{"jsonrpc":"2.0","id":6,"error":{"code":-32601,"message":"Method not found: nope"}}` + "\n"},
		{"panicking handler", `{"jsonrpc":"2.0","id":8,"method":"panic"}`, `{"jsonrpc":"2.0","id":8,"error":{"code":-32603,"message":"Request worker failed"}}` + "\n"},
		{"256-byte string id echoed", `{"jsonrpc":"2.0","id":"` + strings.Repeat("y", 256) + `","method":"echo","params":{}}`, `{"jsonrpc":"2.0","id":"` + strings.Repeat("y", 256) + `","result":{}}` + "\n"},
		{"min int64 id echoed", `{"jsonrpc":"2.0","id":-9223372036854775808,"method":"echo","params":{}}`, `{"jsonrpc":"2.0","id":-9223372036854775808,"result":{}}` + "\n"},
		{"escaped id canonicalised", `{"jsonrpc":"2.0","id":"\u0061b","method":"echo","params":{}}`, `{"jsonrpc":"2.0","id":"ab","result":{}}` + "\n"},
		{"non-ASCII escaped on output", `{"jsonrpc":"2.0","id":9,"method":"echo","params":{"s":"é😀` + "\u2028" + `"}}`, `{"jsonrpc":"2.0","id":9,"result":{"s":"\u00e9\ud83d\ude00\u2028"}}` + "\n"},
	}
	h := startHarness(t, Options{})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := h.roundTrip(tc.line); got != tc.want {
				t.Errorf("answer\n got %s\nwant %s", got, tc.want)
			}
			if got := h.roundTrip(echoNext); got != echoNextReply {
				t.Errorf("next line answered %s", got)
			}
		})
	}
	if err, rest := h.finish(); err != nil || len(rest) != 0 {
		t.Fatalf("Serve = %v, extra frames %q", err, rest)
	}
}

// Notifications are never answered, even malformed ones, and a response
// object from the client is dropped without disturbing a request with its id.
func TestNotificationsAndClientResponsesAreNotAnswered(t *testing.T) {
	h := startHarness(t, Options{})
	h.send(`{"jsonrpc":"2.0","id":7,"method":"block"}`)
	h.d.waitStarted(t)
	for _, line := range []string{
		`{"jsonrpc":"2.0","method":"notifications/anything"}`,
		`{"jsonrpc":"2.0","method":"echo","params":[1]}`,
		`{"method":"echo"}`,
		`{"jsonrpc":"2.0","id":7,"result":{}}`,
		`{"jsonrpc":"2.0","id":7,"error":{"code":1,"message":"x"}}`,
		`{"jsonrpc":"2.0","id":99,"result":{}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":12345}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":5}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":null}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled"}`,
	} {
		h.send(line)
	}
	if got := waitFor(t, h.d.notified, "the notification"); got != "notifications/anything" {
		t.Fatalf("dispatched notification %q", got)
	}
	h.d.release <- struct{}{}
	want := `{"jsonrpc":"2.0","id":7,"result":{"released":true}}` + "\n"
	if got := h.next(); got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	if err, rest := h.finish(); err != nil || len(rest) != 0 {
		t.Fatalf("Serve = %v, extra frames %q", err, rest)
	}
}

func TestDuplicateInFlightID(t *testing.T) {
	h := startHarness(t, Options{})
	h.send(`{"jsonrpc":"2.0","id":"a","method":"block"}`)
	h.d.waitStarted(t)
	want := `{"jsonrpc":"2.0","id":"a","error":{"code":-32600,"message":"Duplicate in-flight request id"}}` + "\n"
	if got := h.roundTrip(`{"jsonrpc":"2.0","id":"a","method":"echo"}`); got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	h.d.release <- struct{}{}
	if got := h.next(); !strings.Contains(got, `"released":true`) {
		t.Fatalf("original request answered %s", got)
	}
	if got := h.roundTrip(`{"jsonrpc":"2.0","id":"a","method":"echo","params":{}}`); got != `{"jsonrpc":"2.0","id":"a","result":{}}`+"\n" {
		t.Fatalf("id not reusable after its answer: %s", got)
	}
	h.finish()
}

// A cancelled request is never answered, and its id is reusable by the very
// next line.
func TestCancelledRequestIsNeverAnswered(t *testing.T) {
	h := startHarness(t, Options{})
	h.send(`{"jsonrpc":"2.0","id":1,"method":"block"}`)
	h.d.waitStarted(t)
	h.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"user"}}`)
	h.send(`{"jsonrpc":"2.0","id":1,"method":"echo","params":{"second":true}}`)
	if got, want := h.next(), `{"jsonrpc":"2.0","id":1,"result":{"second":true}}`+"\n"; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	if id := waitFor(t, h.d.cancelled, "the handler's context to end"); id != "1" {
		t.Fatalf("cancelled %s", id)
	}
	if err, rest := h.finish(); err != nil || len(rest) != 0 {
		t.Fatalf("Serve = %v, frames after cancel %q", err, rest)
	}
}

// A queued request can be cancelled before it starts; it never runs.
func TestCancelQueuedRequest(t *testing.T) {
	h := startHarness(t, Options{MaxConcurrency: 1})
	h.send(`{"jsonrpc":"2.0","id":1,"method":"block"}`)
	h.d.waitStarted(t)
	h.send(`{"jsonrpc":"2.0","id":2,"method":"block"}`)
	h.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`)
	// The coordinator answers a parse error inline, so once that answer is
	// out, the cancellation before it has been handled.
	if got := h.roundTrip(`sync`); !strings.Contains(got, `"code":-32700`) {
		t.Fatalf("got %s", got)
	}
	h.d.release <- struct{}{}
	if got := h.next(); !strings.Contains(got, `"id":1,`) {
		t.Fatalf("got %s", got)
	}
	if err, rest := h.finish(); err != nil || len(rest) != 0 {
		t.Fatalf("Serve = %v, extra frames %q", err, rest)
	}
	select {
	case id := <-h.d.started:
		t.Fatalf("cancelled queued request %s ran", id)
	default:
	}
}

func TestConcurrentRequestsEachAnsweredWithWholeFrames(t *testing.T) {
	h := startHarness(t, Options{})
	const n = 100
	for i := range n {
		h.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"echo","params":{"i":%d,"pad":"%s"}}`, i, i, strings.Repeat("z", i*100)))
	}
	seen := map[int]bool{}
	for range n {
		frame := h.next()
		var resp struct {
			ID     int
			Result struct{ I int }
		}
		if !strings.HasSuffix(frame, "}\n") || strings.Count(frame, "\n") != 1 {
			t.Fatalf("not one whole line: %q", frame)
		}
		if err := json.Unmarshal([]byte(frame), &resp); err != nil {
			t.Fatalf("frame %q: %v", frame, err)
		}
		if resp.ID != resp.Result.I || seen[resp.ID] {
			t.Fatalf("bad or repeated answer %q", frame)
		}
		seen[resp.ID] = true
	}
	if err, rest := h.finish(); err != nil || len(rest) != 0 {
		t.Fatalf("Serve = %v, extra frames %q", err, rest)
	}
}

func TestOverloadAnswersCapacityExhausted(t *testing.T) {
	h := startHarness(t, Options{MaxConcurrency: 1, MaxQueue: None})
	h.send(`{"jsonrpc":"2.0","id":1,"method":"block"}`)
	h.d.waitStarted(t)
	want := `{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"Server execution capacity exhausted"}}` + "\n"
	if got := h.roundTrip(`{"jsonrpc":"2.0","id":2,"method":"echo"}`); got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	h.send(`{"jsonrpc":"2.0","method":"notifications/dropped"}`) // overloaded notification: no answer
	h.d.release <- struct{}{}
	if got := h.next(); !strings.Contains(got, `"id":1,`) {
		t.Fatalf("got %s", got)
	}
	if err, rest := h.finish(); err != nil || len(rest) != 0 {
		t.Fatalf("Serve = %v, extra frames %q", err, rest)
	}
}

// Each message counts its line's length against MaxInflightBytes while it
// runs: over the budget a request is answered capacity exhausted and a
// notification dropped; a line larger than the whole budget is served when
// nothing else is in flight.
func TestInflightBytesAnswerCapacityExhausted(t *testing.T) {
	block := func(id string, pad int) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"block","params":{"pad":"` + strings.Repeat("p", pad) + `"}}`
	}
	line := block("1", 0)
	h := startHarness(t, Options{MaxInflightBytes: 2*len(line) + 10})
	h.send(block("1", 0))
	h.d.waitStarted(t)
	h.send(block("2", 0))
	h.d.waitStarted(t)
	want := `{"jsonrpc":"2.0","id":3,"error":{"code":-32603,"message":"Server execution capacity exhausted"}}` + "\n"
	if got := h.roundTrip(block("3", 11)); got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	h.send(`{"jsonrpc":"2.0","method":"notifications/dropped","params":{"pad":"` + strings.Repeat("p", 100) + `"}}`)
	h.sync() // the notification was handled while 1 and 2 held the budget
	h.d.release <- struct{}{}
	h.d.release <- struct{}{}
	for range 2 {
		if got := h.next(); !strings.Contains(got, `"released":true`) {
			t.Fatalf("got %s", got)
		}
	}
	h.send(block("4", 200)) // over the whole budget, alone in flight
	h.d.waitStarted(t)
	if got := h.roundTrip(`{"jsonrpc":"2.0","id":5,"method":"echo"}`); !strings.Contains(got, "Server execution capacity exhausted") {
		t.Fatalf("beside an over-budget line: got %s", got)
	}
	h.d.release <- struct{}{}
	if got := h.next(); !strings.Contains(got, `"id":4,`) {
		t.Fatalf("got %s", got)
	}
	select {
	case m := <-h.d.notified:
		t.Fatalf("the notification over the budget was dispatched: %s", m)
	default:
	}
	if err, rest := h.finish(); err != nil || len(rest) != 0 {
		t.Fatalf("Serve = %v, extra frames %q", err, rest)
	}
}

func TestRequestTimeout(t *testing.T) {
	h := startHarness(t, Options{RequestTimeout: 20 * time.Millisecond})
	want := `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"Request execution timed out"}}` + "\n"
	if got := h.roundTrip(`{"jsonrpc":"2.0","id":1,"method":"ignore"}`); got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	h.d.waitStarted(t)
	h.d.release <- struct{}{} // its late return is discarded
	if got := h.roundTrip(`{"jsonrpc":"2.0","id":1,"method":"echo","params":{}}`); got != `{"jsonrpc":"2.0","id":1,"result":{}}`+"\n" {
		t.Fatalf("id not free after timeout: %s", got)
	}
	if err, rest := h.finish(); err != nil || len(rest) != 0 {
		t.Fatalf("Serve = %v, extra frames %q", err, rest)
	}
}

// At end of input every admitted request still runs and is answered.
func TestEOFDrainsSlowRequests(t *testing.T) {
	h := startHarness(t, Options{})
	for i := range 15 {
		h.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"block"}`, i))
	}
	for range 15 {
		h.d.waitStarted(t)
	}
	h.in.close(nil)
	close(h.d.release)
	err, frames := h.wait()
	if err != nil {
		t.Fatalf("Serve = %v", err)
	}
	if len(frames) != 15 {
		t.Fatalf("%d answers after EOF, want 15: %q", len(frames), frames)
	}
}

func TestEmptyInputReturnsCleanly(t *testing.T) {
	for range 100 {
		out := newFrameRecorder()
		err := Serve(context.Background(), newTestDispatcher(), Options{Input: strings.NewReader(""), Output: out, Logger: quietLogger()})
		if err != nil || len(out.frames) != 0 {
			t.Fatalf("Serve = %v with %d frames", err, len(out.frames))
		}
	}
}

// An unterminated final line is served at EOF.
func TestUnterminatedFinalLine(t *testing.T) {
	out := newFrameRecorder()
	in := strings.NewReader("\ufeff{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"echo\",\"params\":{}}\r\n{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"echo\",\"params\":{}}")
	if err := Serve(context.Background(), newTestDispatcher(), Options{Input: in, Output: out, Logger: quietLogger()}); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{<-out.frames: true, <-out.frames: true}
	for _, want := range []string{`{"jsonrpc":"2.0","id":1,"result":{}}` + "\n", `{"jsonrpc":"2.0","id":2,"result":{}}` + "\n"} {
		if !got[want] {
			t.Errorf("missing %s in %v", want, got)
		}
	}
}

func TestReadErrorIsAnsweredThenTreatedAsEOF(t *testing.T) {
	h := startHarness(t, Options{})
	h.send(`{"jsonrpc":"2.0","id":1,"method":"block"}`)
	h.d.waitStarted(t)
	h.in.close(errors.New("device unplugged"))
	want := `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Failed to read stdio input"}}` + "\n"
	if got := h.next(); got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	close(h.d.release)
	err, rest := h.wait()
	if err != nil || len(rest) != 1 || !strings.Contains(rest[0], `"released":true`) {
		t.Fatalf("Serve = %v, frames %q", err, rest)
	}
}

// chunkedLine is an input of one over-long line delivered in pieces; once
// more than the limit was delivered it stops until the test resumes it, then
// ends the line and sends one more request.
type chunkedLine struct {
	total, sent, limit int
	passed             chan struct{} // closed by the Read that crosses the limit
	resume             chan struct{}
	tail               *strings.Reader
}

func (r *chunkedLine) Read(p []byte) (int, error) {
	if r.sent >= r.total {
		return r.tail.Read(p)
	}
	if r.sent > r.limit {
		<-r.resume
	}
	n := min(len(p), r.total-r.sent)
	for i := range n {
		p[i] = 'a'
	}
	before := r.sent
	r.sent += n
	if before <= r.limit && r.sent > r.limit {
		close(r.passed)
	}
	return n, nil
}

// A 64 MiB line without a newline is refused as soon as the limit is passed,
// before its end arrives, and the next line is served.
func TestOverlongLineRefusedWhileItArrives(t *testing.T) {
	in := &chunkedLine{total: 64 << 20, limit: DefaultMaxLineBytes, passed: make(chan struct{}), resume: make(chan struct{}),
		tail: strings.NewReader("\n" + `{"jsonrpc":"2.0","id":1,"method":"echo","params":{}}` + "\n")}
	h := startHarness(t, Options{Input: in})
	var resume sync.Once
	defer resume.Do(func() { close(in.resume) })
	want := `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Message exceeds the 2000000-byte line limit"}}` + "\n"
	if got := h.next(); got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	select {
	case <-in.passed:
	default:
		t.Fatal("answered before the limit was passed")
	}
	resume.Do(func() { close(in.resume) })
	if got := h.next(); got != `{"jsonrpc":"2.0","id":1,"result":{}}`+"\n" {
		t.Fatalf("next line answered %s", got)
	}
	if err, rest := h.wait(); err != nil || len(rest) != 0 {
		t.Fatalf("Serve = %v, extra frames %q", err, rest)
	}
}

// blockingWriter never returns from Write until released.
type blockingWriter struct {
	mu      sync.Mutex
	calls   int
	entered chan struct{}
	release chan struct{}
}

func (w *blockingWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.calls++
	w.mu.Unlock()
	w.entered <- struct{}{}
	<-w.release
	return 0, errors.New("released")
}

// deadlineExpiredWriter is an output with write deadlines whose deadline has
// passed: every Write fails as an *os.File's does then.
type deadlineExpiredWriter struct{}

func (deadlineExpiredWriter) SetWriteDeadline(time.Time) error { return nil }

func (deadlineExpiredWriter) Write([]byte) (int, error) {
	return 0, &os.PathError{Op: "write", Path: "out", Err: os.ErrDeadlineExceeded}
}

// When the output's own write deadline expires before the writer's timer, the
// failure is still reported as the write timeout.
func TestOutputDeadlineIsReportedAsWriteTimeout(t *testing.T) {
	w := newFrameWriter(deadlineExpiredWriter{}, time.Hour)
	defer w.close(nil)
	err := w.queueAndWait([]byte("{}\n"))
	if !errors.Is(err, ErrOutputFailed) || !errors.Is(err, ErrWriteTimeout) || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("write = %v, want an output-failed write timeout wrapping the deadline error", err)
	}
	if got, want := err.Error(), "output failed: write timeout after 1h0m0s: write out: i/o timeout"; got != want {
		t.Errorf("error text %q, want %q", got, want)
	}
}

// A write that does not return is terminal after WriteTimeout: work is
// cancelled and no second write is attempted.
func TestWriteTimeoutIsTerminal(t *testing.T) {
	w := &blockingWriter{entered: make(chan struct{}, 10), release: make(chan struct{})}
	defer close(w.release)
	h := startHarness(t, Options{Output: w, WriteTimeout: 30 * time.Millisecond})
	h.send(`{"jsonrpc":"2.0","id":1,"method":"block"}`)
	h.d.waitStarted(t)
	h.send(`{"jsonrpc":"2.0","id":2,"method":"echo"}`)
	waitFor(t, w.entered, "the write")
	err := waitFor(t, h.done, "Serve to return")
	h.ended = true
	if !errors.Is(err, ErrOutputFailed) || !errors.Is(err, ErrWriteTimeout) {
		t.Fatalf("Serve = %v, want an output-failed timeout", err)
	}
	if got := err.Error(); got != "output failed: write timeout after 30ms" {
		t.Errorf("error text %q", got)
	}
	if id := waitFor(t, h.d.cancelled, "running work to be cancelled"); id != "1" {
		t.Fatalf("cancelled %s", id)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.calls != 1 {
		t.Fatalf("%d writes, want 1", w.calls)
	}
	if err := h.tr.Notify(context.Background(), "notifications/x", nil); err == nil {
		t.Fatal("Notify after the output failed succeeded")
	}
}

type failingWriter struct {
	mu    sync.Mutex
	calls int
}

func (w *failingWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.calls++
	return 3, io.ErrClosedPipe
}

func TestWriteErrorIsTerminal(t *testing.T) {
	w := &failingWriter{}
	h := startHarness(t, Options{Output: w})
	h.send(`{"jsonrpc":"2.0","id":1,"method":"block"}`)
	h.d.waitStarted(t)
	h.send(`not json`)
	err := waitFor(t, h.done, "Serve to return")
	h.ended = true
	if !errors.Is(err, ErrOutputFailed) || !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("Serve = %v", err)
	}
	waitFor(t, h.d.cancelled, "running work to be cancelled")
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.calls != 1 {
		t.Fatalf("%d writes, want 1", w.calls)
	}
}

func TestServeContextCancelled(t *testing.T) {
	in, d := newFeedReader(), newTestDispatcher()
	tr, err := NewTransport(d, Options{Input: in, Output: newFrameRecorder(), Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- tr.Serve(ctx) }()
	in.feed(t, []byte(`{"jsonrpc":"2.0","id":1,"method":"block"}`+"\n"))
	waitFor(t, d.started, "the handler")
	cancel()
	if err := waitFor(t, done, "Serve"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Serve = %v", err)
	}
	waitFor(t, d.cancelled, "the handler's cancellation")
	if err := tr.Serve(context.Background()); err == nil {
		t.Fatal("second Serve succeeded")
	}
}

func TestInjectedExecutorClosedWhileRequestsPending(t *testing.T) {
	ex, err := NewExecutor(ExecutorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h := startHarness(t, Options{Executor: ex})
	h.send(`{"jsonrpc":"2.0","id":1,"method":"ignore"}`)
	h.send(`{"jsonrpc":"2.0","id":2,"method":"ignore"}`)
	h.d.waitStarted(t)
	h.d.waitStarted(t)
	ex.Close()
	err, frames := h.wait()
	if !errors.Is(err, ErrExecutorClosed) {
		t.Fatalf("Serve = %v", err)
	}
	if len(frames) != 2 {
		t.Fatalf("frames %q", frames)
	}
	for _, f := range frames {
		if !strings.Contains(f, `"message":"Request worker failed"`) {
			t.Fatalf("frame %s", f)
		}
	}
	close(h.d.release)
}

// Requests queued when the executor closes are answered too: one with an
// untracked id (answered with id null), not a notification.
func TestInjectedExecutorClosedWithQueuedWork(t *testing.T) {
	ex, err := NewExecutor(ExecutorOptions{MaxConcurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	h := startHarness(t, Options{Executor: ex})
	h.send(`{"jsonrpc":"2.0","id":1,"method":"ignore"}`)
	h.d.waitStarted(t)
	h.send(`{"jsonrpc":"2.0","id":1.5,"method":"echo"}`)
	h.send(`{"jsonrpc":"2.0","method":"echo"}`)
	// Lines are handled in order: once the duplicate is refused, both are queued.
	if got, want := h.roundTrip(`{"jsonrpc":"2.0","id":1,"method":"echo"}`), `{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"Duplicate in-flight request id"}}`+"\n"; got != want {
		t.Fatalf("duplicate answered %s, want %s", got, want)
	}
	if st := ex.Stats(); st.Running != 1 || st.Queued != 2 {
		t.Fatalf("Stats = %+v, want 1 running and 2 queued", st)
	}
	ex.Close()
	err, frames := h.wait()
	if !errors.Is(err, ErrExecutorClosed) {
		t.Fatalf("Serve = %v", err)
	}
	slices.Sort(frames)
	want := []string{
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"Request worker failed"}}` + "\n",
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"Request worker failed"}}` + "\n",
	}
	if !slices.Equal(frames, want) {
		t.Fatalf("frames\n got: %q\nwant: %q", frames, want)
	}
	close(h.d.release)
}

func TestInjectedExecutorIsNotClosed(t *testing.T) {
	ex, err := NewExecutor(ExecutorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	h := startHarness(t, Options{Executor: ex})
	h.roundTrip(`{"jsonrpc":"2.0","id":1,"method":"echo"}`)
	if err, _ := h.finish(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ex.done:
		t.Fatal("the transport closed an injected executor")
	default:
	}
}

// The version negotiated by initialize is recorded before its answer is
// written, and every later message carries the synthesized header.
func TestInitializeRecordsVersionAndHeader(t *testing.T) {
	h := startHarness(t, Options{})
	before := h.roundTrip(`{"jsonrpc":"2.0","id":1,"method":"session"}`)
	if !jsonEqual(t, before, `{"jsonrpc":"2.0","id":1,"result":{"header":null,"version":""}}`) {
		t.Fatalf("before initialize: %s", before)
	}
	h.roundTrip(`{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`)
	after := h.roundTrip(`{"jsonrpc":"2.0","id":3,"method":"session"}`)
	if !jsonEqual(t, after, `{"jsonrpc":"2.0","id":3,"result":{"header":{"mcp-protocol-version":"2025-11-25"},"version":"2025-11-25"}}`) {
		t.Fatalf("after initialize: %s", after)
	}
	h.finish()
}

func TestInitializeCannotBeCancelled(t *testing.T) {
	h := startHarness(t, Options{})
	d := h.d
	_ = d
	h.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}`)
	h.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
	if got := h.next(); got != `{"jsonrpc":"2.0","id":1,"result":{}}`+"\n" {
		t.Fatalf("got %s", got)
	}
	h.finish()
}

func TestOptionsValidation(t *testing.T) {
	in, out := strings.NewReader(""), io.Discard
	ex, _ := NewExecutor(ExecutorOptions{})
	defer ex.Close()
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"no input", Options{Output: out}, "Options.Input is nil"},
		{"no output", Options{Input: in}, "Options.Output is nil"},
		{"negative write timeout", Options{Input: in, Output: out, WriteTimeout: -1}, "mcpstdio: Options.WriteTimeout must be >= 0, got -1ns"},
		{"negative line limit", Options{Input: in, Output: out, MaxLineBytes: -1}, "mcpstdio: Options.MaxLineBytes must be >= 0, got -1"},
		{"negative subscriptions", Options{Input: in, Output: out, MaxSubscriptions: -1}, "mcpstdio: Options.MaxSubscriptions must be >= 0, got -1"},
		{"negative concurrency", Options{Input: in, Output: out, MaxConcurrency: -1}, "oncurrency"},
		{"limits with injected executor", Options{Input: in, Output: out, Executor: ex, MaxQueue: 3}, "apply only when"},
		{"byte budget with injected executor", Options{Input: in, Output: out, Executor: ex, MaxInflightBytes: 3}, "apply only when"},
		{"method without prefix", Options{Input: in, Output: out, NotificationMethods: []string{"hello"}}, `must start with "notifications/"`},
		{"bare prefix", Options{Input: in, Output: out, NotificationMethods: []string{"notifications/"}}, `must start with "notifications/"`},
		{"protocol method", Options{Input: in, Output: out, NotificationMethods: []string{"notifications/progress"}}, "defined by the protocol"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewTransport(newTestDispatcher(), tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("NewTransport = %v, want an error containing %q", err, tc.want)
			}
		})
	}
	if _, err := NewTransport(nil, Options{Input: in, Output: out}); err == nil {
		t.Fatal("nil dispatcher accepted")
	}
}

// floodReader is an input that never ends: every Read returns whole lines of
// a notification the dispatcher ignores. It reports its first Read.
type floodReader struct {
	line    []byte
	reading chan struct{}
	once    sync.Once
}

func (r *floodReader) Read(p []byte) (int, error) {
	r.once.Do(func() { close(r.reading) })
	n := 0
	for n+len(r.line) <= len(p) {
		n += copy(p[n:], r.line)
	}
	return n, nil
}

// Under a flood of input that keeps the coordinator busy, an application
// notification is still written and cancelling Serve still ends it: the
// fast path that takes busy sources first gives every other source its turn.
func TestBusyInputStarvesNoSource(t *testing.T) {
	in := &floodReader{line: []byte(`{"jsonrpc":"2.0","method":"notifications/noise"}` + "\n"), reading: make(chan struct{})}
	out := newFrameRecorder()
	tr, err := NewTransport(newTestDispatcher(), Options{Input: in, Output: out, Logger: quietLogger(), NotificationMethods: []string{"notifications/app"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- tr.Serve(ctx) }()
	waitFor(t, in.reading, "Serve to read")
	notifyCtx, stop := context.WithTimeout(context.Background(), safetyTimeout)
	defer stop()
	if err := tr.Notify(notifyCtx, "notifications/app", nil); err != nil {
		t.Fatalf("Notify under a flood of input: %v", err)
	}
	if got, want := waitFor(t, out.frames, "the notification"), `{"jsonrpc":"2.0","method":"notifications/app"}`+"\n"; got != want {
		t.Fatalf("wrote %q, want %q", got, want)
	}
	cancel()
	if err := waitFor(t, done, "Serve to return after cancellation"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Serve = %v, want context.Canceled", err)
	}
}
