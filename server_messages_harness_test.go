package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// Test doubles and helpers shared by the tests of server-initiated messages
// (docs/explanation/contract.md, "Progress" to "Asking the client"):
// progress_test.go, logging_test.go, notify_test.go, subscriptions_test.go and
// peer_test.go.

// methodDispatcher serves each method with the function the test gives it;
// other requests get -32601 and notifications nothing.
type methodDispatcher map[string]DispatcherFunc

func (m methodDispatcher) Dispatch(ctx context.Context, req *Request) Reply {
	if f, ok := m[req.Method]; ok {
		return f(ctx, req)
	}
	if req.ID == nil {
		return Reply{}
	}
	return Reply{Error: methodNotFound(req.Method)}
}

// wireFrame is one output frame, decoded; raw members keep their JSON text.
type wireFrame struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *RPCError       `json:"error"`
}

// decodeFrame decodes a frame that must be one whole JSON object line.
func decodeFrame(t *testing.T, frame string) wireFrame {
	t.Helper()
	if !strings.HasSuffix(frame, "}\n") || strings.Count(frame, "\n") != 1 {
		t.Fatalf("not one whole frame: %q", frame)
	}
	var f wireFrame
	if err := json.Unmarshal([]byte(frame), &f); err != nil {
		t.Fatalf("frame is not a JSON object: %v: %q", err, frame)
	}
	return f
}

// returnsWithin runs call in a new goroutine and returns its result; a call
// that does not return within safetyTimeout fails the test instead of
// hanging it.
func returnsWithin(t *testing.T, what string, call func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- call() }()
	return waitFor(t, done, what)
}

// isResponse reports whether f answers a request (it has an id and no method).
func (f wireFrame) isResponse() bool { return f.ID != nil && f.Method == "" }

// sync sends a line the coordinator answers inline (a parse error) and waits
// for that answer: every line sent before it has been handled, and Serve is
// running.
func (h *harness) sync() {
	h.t.Helper()
	want := `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}` + "\n"
	if got := h.roundTrip("sync"); got != want {
		h.t.Fatalf("sync line answered %q, want the parse error", got)
	}
}

// expect checks that the next frame is want.
func (h *harness) expect(want string) {
	h.t.Helper()
	if got := h.next(); got != want {
		h.t.Fatalf("got  %s\nwant %s", got, want)
	}
}

// expectAnswer sends line and checks the next frame.
func (h *harness) expectAnswer(line, want string) {
	h.t.Helper()
	if got := h.roundTrip(line); got != want {
		h.t.Fatalf("%s\n answered %s\n want     %s", line, got, want)
	}
}

// initialize runs initialize (version proposed) and notifications/initialized
// with request id 0.
func (h *harness) initialize(version string) {
	h.t.Helper()
	got := decodeFrame(h.t, h.roundTrip(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"`+version+`","capabilities":{},"clientInfo":{"name":"cli","version":"0.1"}}}`))
	if string(got.ID) != "0" || got.Error != nil {
		h.t.Fatalf("initialize answered %+v", got)
	}
	h.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// noFramesLeft ends the input and checks that Serve returns nil having
// written nothing more.
func (h *harness) noFramesLeft() {
	h.t.Helper()
	if err, rest := h.finish(); err != nil || len(rest) != 0 {
		h.t.Fatalf("Serve = %v, extra frames %q", err, rest)
	}
}

// meta2026With is a 2026-07-28 "_meta" member with extra members added
// (extra is "" or members such as `"progressToken":1`).
func meta2026With(extra string) string {
	m := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}`
	if extra != "" {
		m += "," + extra
	}
	return m + "}"
}

// toolCall is a tools/call line for tool name with no arguments; meta is a
// "_meta" member or "".
func toolCall(id, name, meta string) string {
	params := `{"name":"` + name + `","arguments":{}`
	if meta != "" {
		params += "," + meta
	}
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":` + params + `}}`
}

// sentNotification is one notification a recordingPeer received.
type sentNotification struct {
	method string
	params string
}

// recordingPeer is a Peer that records the notifications a handler sends. When
// proceed is non-nil, Notify first signals entered (buffered 1; a signal
// already pending is not repeated) and then waits until proceed is closed.
// failNext, when set, is returned (and cleared) by the next Notify instead of
// recording it.
type recordingPeer struct {
	entered chan struct{}
	proceed chan struct{}

	mu       sync.Mutex
	sent     []sentNotification
	failNext error
}

func (p *recordingPeer) Notify(ctx context.Context, method string, params json.RawMessage) error {
	if p.proceed != nil {
		select {
		case p.entered <- struct{}{}:
		default:
		}
		<-p.proceed
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.failNext; err != nil {
		p.failNext = nil
		return err
	}
	p.sent = append(p.sent, sentNotification{method: method, params: string(params)})
	return nil
}

func (p *recordingPeer) Request(context.Context, string, json.RawMessage) (json.RawMessage, error) {
	return nil, errors.New("recordingPeer: Request is not supported")
}

// sentParams returns the params of every notification of method sent.
func (p *recordingPeer) sentParams(t *testing.T, method string) []string {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	var params []string
	for _, n := range p.sent {
		if n.method != method {
			t.Errorf("peer got %s %s, want only %s", n.method, n.params, method)
			continue
		}
		params = append(params, n.params)
	}
	return params
}

// callProbe registers probe as the tool "probe" of a new runtime and calls it
// once, in the calling goroutine, as a 2026-07-28 request whose _meta also
// carries extraMeta, with peer as the request's Peer.
func callProbe(t *testing.T, peer Peer, extraMeta string, probe func(ctx context.Context, req *HandlerRequest)) Reply {
	t.Helper()
	rt := newTestRuntime(t, RuntimeOptions{ServerInfo: Implementation{Name: "srv", Version: "1.0"}, Logging: true})
	mustAddTool(t, rt, Tool{Name: "probe"}, func(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
		probe(ctx, req)
		return TextResult("probed"), nil
	})
	req := newRequest("tools/call", `{"name":"probe","arguments":{},`+meta2026With(extraMeta)+`}`)
	req.Peer = peer
	reply := dispatch(rt, req)
	if reply.Error != nil {
		t.Fatalf("probe call answered %d %q", reply.Error.Code, reply.Error.Message)
	}
	return reply
}

// switchWriter hands every Write to frames until failing is set; from then on
// every Write fails with errSwitchedOff and is counted in failed.
type switchWriter struct {
	frames  chan string
	failing atomic.Bool
	failed  atomic.Int32
}

var errSwitchedOff = errors.New("switchWriter: output switched off")

func newSwitchWriter() *switchWriter { return &switchWriter{frames: make(chan string, 1000)} }

func (w *switchWriter) Write(p []byte) (int, error) {
	if w.failing.Load() {
		w.failed.Add(1)
		return 0, errSwitchedOff
	}
	for _, f := range splitFrames(p) {
		w.frames <- f
	}
	return len(p), nil
}

// gatedWriter signals every Write on entered (with the frame), then holds it
// until release is closed, and records it once written.
type gatedWriter struct {
	entered chan string
	release chan struct{}

	mu      sync.Mutex
	written []string
}

func newGatedWriter() *gatedWriter {
	return &gatedWriter{entered: make(chan string, 100), release: make(chan struct{})}
}

func (w *gatedWriter) Write(p []byte) (int, error) {
	w.entered <- string(p)
	<-w.release
	w.mu.Lock()
	defer w.mu.Unlock()
	w.written = append(w.written, splitFrames(p)...)
	return len(p), nil
}

func (w *gatedWriter) frames() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.written...)
}
