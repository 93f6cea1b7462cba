package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"testing"
)

const inlineMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}`

// inlineRuntime serves "quick", an Inline tool answering "quick", and
// "slow", an ordinary one that waits for release after signalling entered.
func inlineRuntime(t *testing.T, entered chan<- struct{}, release <-chan struct{}) *Runtime {
	t.Helper()
	rt := newTestRuntime(t, RuntimeOptions{ServerInfo: Implementation{Name: "t", Version: "1"}})
	quick := func(context.Context, *HandlerRequest) (*ToolResult, error) {
		return &ToolResult{Content: []Content{TextContent("quick")}}, nil
	}
	slow := func(ctx context.Context, _ *HandlerRequest) (*ToolResult, error) {
		entered <- struct{}{}
		<-release
		return &ToolResult{Content: []Content{TextContent("slow")}}, nil
	}
	if err := rt.AddTool(Tool{Name: "quick", Inline: true}, quick); err != nil {
		t.Fatal(err)
	}
	if err := rt.AddTool(Tool{Name: "slow"}, slow); err != nil {
		t.Fatal(err)
	}
	return rt
}

func inlineCall(id int, tool, metaExtra string) string {
	return `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":{},` + inlineMeta + metaExtra + `}}}`
}

func toolAnswer(id int, text string) string {
	return `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"result":{"content":[{"type":"text","text":"` + text + `"}],"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"t","version":"1"}}}}` + "\n"
}

// An inline tool's call is answered by the owner while the only worker is
// busy and there is no queue: it takes no worker, where an ordinary call is
// refused for capacity.
func TestInlineToolAnsweredWhileWorkersBusy(t *testing.T) {
	entered, release := make(chan struct{}, 1), make(chan struct{})
	h := startHarnessWith(t, Options{MaxConcurrency: 1, MaxQueue: None}, inlineRuntime(t, entered, release))
	h.send(inlineCall(1, "slow", ""))
	waitFor(t, entered, "the slow tool")
	h.expectAnswer(inlineCall(2, "quick", ""), toolAnswer(2, "quick"))
	h.expectAnswer(inlineCall(3, "slow", ""), `{"jsonrpc":"2.0","id":3,"error":{"code":-32603,"message":"Server execution capacity exhausted"}}`+"\n")
	close(release)
	h.expect(toolAnswer(1, "slow"))
	h.noFramesLeft()
}

// An inline tool's log and progress notifications are written before its
// answer; past maxInlineNotifications, and once it returned, sending fails.
func TestInlineToolNotificationsPrecedeItsAnswer(t *testing.T) {
	rt := newTestRuntime(t, RuntimeOptions{ServerInfo: Implementation{Name: "t", Version: "1"}})
	kept := make(chan *HandlerRequest, 1)
	errs := make(chan error, 1)
	err := rt.AddTool(Tool{Name: "chatty", Inline: true}, func(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
		if err := req.Log(ctx, "info", "chatty", "hello"); err != nil {
			return nil, err
		}
		if err := req.ReportProgress(ctx, Progress{Progress: 1, Total: 2}); err != nil {
			return nil, err
		}
		var err error
		for i := 0; err == nil && i < maxInlineNotifications; i++ {
			err = req.Log(ctx, "info", "chatty", i)
		}
		errs <- err
		kept <- req
		return &ToolResult{Content: []Content{TextContent("done")}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	h := startHarnessWith(t, Options{}, rt)
	h.send(inlineCall(1, "chatty", `,"progressToken":"p","io.modelcontextprotocol/logLevel":"debug"`))
	if got, want := h.next(), `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","logger":"chatty","data":"hello"}}`+"\n"; got != want {
		t.Fatalf("first frame %s, want %s", got, want)
	}
	if got, want := h.next(), `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":1,"total":2}}`+"\n"; got != want {
		t.Fatalf("second frame %s, want %s", got, want)
	}
	for i := 0; i < maxInlineNotifications-2; i++ {
		h.next()
	}
	if err := waitFor(t, errs, "the handler's last send"); !errors.Is(err, errInlineNotifications) {
		t.Fatalf("notification %d: %v, want errInlineNotifications", maxInlineNotifications+1, err)
	}
	h.expect(toolAnswer(1, "done"))
	req := waitFor(t, kept, "the request")
	if err := req.Log(context.Background(), "info", "chatty", "late"); !errors.Is(err, ErrRequestEnded) {
		t.Fatalf("Log after the answer: %v, want ErrRequestEnded", err)
	}
	h.noFramesLeft()
}

// The Peer of an inline request refuses requests to the client: their
// answer would have to come through the owner running the handler.
func TestInlinePeerRefusesClientRequests(t *testing.T) {
	side := &inlineSide{}
	p := &requestPeer{inline: &side.notes}
	if _, err := p.Request(context.Background(), "sampling/createMessage", json.RawMessage(`{}`)); !errors.Is(err, ErrInlineRequest) {
		t.Fatalf("Request: %v, want ErrInlineRequest", err)
	}
	if err := p.Notify(context.Background(), "notifications/message", json.RawMessage(`{}`)); err != nil {
		t.Fatalf("Notify while running: %v", err)
	}
	if frames := side.notes.take(); len(frames) != 1 {
		t.Fatalf("kept %d frames, want 1", len(frames))
	}
	if err := p.Notify(context.Background(), "notifications/message", json.RawMessage(`{}`)); !errors.Is(err, ErrRequestEnded) {
		t.Fatalf("Notify after the handler returned: %v, want ErrRequestEnded", err)
	}
}

// Only a tool's calls that can be ordinary requests run inline: a tool that
// supports tasks cannot be Inline, and an unknown tool or another method is
// never served inline.
func TestInlineOnlyForInlineTools(t *testing.T) {
	rt := inlineRuntime(t, make(chan struct{}, 1), make(chan struct{}))
	err := rt.AddTool(Tool{Name: "task", Inline: true, Execution: &ToolExecution{TaskSupport: TaskOptional}},
		func(context.Context, *HandlerRequest) (*ToolResult, error) { return nil, nil })
	if err == nil {
		t.Fatal("AddTool accepted an Inline tool that supports tasks")
	}
	tests := []struct {
		method, params string
		want           bool
	}{
		{"tools/call", `{"name":"quick","arguments":{}}`, true},
		{"tools/call", `{"arguments":{},"name":"quick"}`, true},
		{"tools/call", `{"name":"slow","arguments":{}}`, false},
		{"tools/call", `{"name":"missing"}`, false},
		{"tools/call", `{"name":"\u0071uick"}`, false}, // escaped: found on a worker
		{"tools/call", `{}`, false},
		{"tools/list", `{"name":"quick"}`, false},
	}
	for _, tt := range tests {
		if got := rt.inlineFor(tt.method, []byte(tt.params)) != nil; got != tt.want {
			t.Errorf("inlineFor(%s, %s) != nil is %v, want %v", tt.method, tt.params, got, tt.want)
		}
	}
}

// The connection reuses an inline request's execution record for its next
// message, but what the handler was given is apart from it: a handler that
// keeps its context, HandlerRequest and Peer finds them as it left them
// while the next inline call runs in the reused record, and after it: the
// context cancelled, the request's fields unchanged, the Peer ended.
func TestInlineHandlerKeepsWhatItWasGiven(t *testing.T) {
	type keptCall struct {
		ctx context.Context
		req *HandlerRequest
	}
	kept := make(chan keptCall, 1)
	second, looked := make(chan struct{}), make(chan struct{})
	rt := newTestRuntime(t, RuntimeOptions{ServerInfo: Implementation{Name: "t", Version: "1"}})
	err := rt.AddTool(Tool{Name: "keeper", Inline: true}, func(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
		var args struct{ N int }
		if err := req.Bind(&args); err != nil {
			return nil, err
		}
		if args.N == 1 {
			kept <- keptCall{ctx, req}
		} else {
			close(second) // the first call's keeper looks while this one runs
			<-looked
		}
		return &ToolResult{Content: []Content{TextContent("kept")}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	call := func(id, n int) string {
		return `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"tools/call","params":{"name":"keeper","arguments":{"N":` + strconv.Itoa(n) + `},` + inlineMeta + `,"io.modelcontextprotocol/logLevel":"debug"}}}`
	}
	h := startHarnessWith(t, Options{}, rt)
	h.expectAnswer(call(1, 1), toolAnswer(1, "kept"))
	first := waitFor(t, kept, "the first call's request")
	check := func(when string) {
		t.Helper()
		if err := first.ctx.Err(); !errors.Is(err, context.Canceled) {
			t.Errorf("%s: the kept context's Err is %v, want context.Canceled", when, err)
		}
		select {
		case <-first.ctx.Done():
		default:
			t.Errorf("%s: the kept context is not done", when)
		}
		if got, want := string(first.req.Arguments), `{"N":1}`; first.req.Name != "keeper" || got != want {
			t.Errorf("%s: the kept request is %s%s, want keeper%s", when, first.req.Name, got, want)
		}
		if err := first.req.Log(context.Background(), "info", "keeper", "late"); !errors.Is(err, ErrRequestEnded) {
			t.Errorf("%s: Log through the kept request: %v, want ErrRequestEnded", when, err)
		}
	}
	h.send(call(2, 2))
	waitFor(t, second, "the second call")
	check("while the next inline call runs")
	close(looked)
	h.expect(toolAnswer(2, "kept"))
	check("after it")
	h.noFramesLeft()
}

// recycle keeps an answered inline request's record and the next message's
// execution takes it; a record of the transport's (message.space) is never
// kept.
func TestInlineRecordIsReused(t *testing.T) {
	rt := inlineRuntime(t, make(chan struct{}, 1), make(chan struct{}))
	c := &connection{connConfig: connConfig{dispatcher: rt}}
	ex := c.newExecution(nil)
	if ex.own == nil || ex.req.handlerSpace != &ex.own.handlerSpace {
		t.Fatal("newExecution did not allocate a record of the connection's own")
	}
	c.recycle(ex)
	if next := c.newExecution(nil); next != ex || c.spare != nil {
		t.Fatalf("the next execution is %p (spare %p), want the recycled record %p", next, c.spare, ex)
	}
	space := new(runtimeExecution)
	ex = c.newExecution(space)
	c.recycle(ex)
	if ex.own != nil || c.spare != nil {
		t.Fatal("a record of the transport's was kept for reuse")
	}
	own := c.newExecution(nil)
	own.own.handlerSpace.claimed.Store(true) // its space was handed to a handler
	c.recycle(own)
	if c.spare != nil {
		t.Fatal("a record whose HandlerRequest space was handed out was kept for reuse")
	}
}

// lendingOutlet is an outlet that lends buffer for each answer frame and
// records the answers and the buffers it takes back.
type lendingOutlet struct {
	buffer    []byte
	answers   [][]byte
	takenBack [][]byte
}

func (o *lendingOutlet) send(route, []byte, chan<- peerReply) error { return nil }
func (o *lendingOutlet) answer(_ route, f finalFrame) error {
	o.answers = append(o.answers, f.frame)
	return nil
}
func (o *lendingOutlet) lendFrame() []byte      { return o.buffer }
func (o *lendingOutlet) takeBackFrame(b []byte) { o.takenBack = append(o.takenBack, b) }

// sameArray reports whether a and b start at the same byte of memory.
func sameArray(a, b []byte) bool { return cap(a) > 0 && cap(b) > 0 && &a[:1][0] == &b[:1][0] }

// An inline call's answer frame is built in the buffer its outlet lends
// (or in a new one when that is too small), and that buffer goes back to
// the outlet once the answer is handed over.
func TestInlineAnswerBuiltInLentFrame(t *testing.T) {
	line := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"lent"},` + binMeta2026 + `}}`)
	for _, tt := range []struct {
		name   string
		buffer []byte
		inLent bool // the answer is built in the lent buffer
	}{
		{"room enough", make([]byte, 0, 4096), true},
		{"too small", make([]byte, 0, 8), false},
		{"none lent", nil, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := &lendingOutlet{buffer: tt.buffer}
			e, err := NewExecutor(ExecutorOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			c := newConnection(connConfig{dispatcher: newCatalogRuntime(t), out: o, sub: e.newSubmitter(), log: quietLogger()})
			defer c.close()
			env, err := decodeEnvelope(line)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.onMessage(message{env: env, size: len(line)}); err != nil {
				t.Fatal(err)
			}
			if len(o.answers) != 1 || !bytes.Contains(o.answers[0], []byte(`"text":"lent"`)) {
				t.Fatalf("answers %q, want one echoing \"lent\"", o.answers)
			}
			answer := o.answers[0]
			if got := sameArray(answer, tt.buffer); got != tt.inLent {
				t.Errorf("answer built in the lent buffer: %v, want %v", got, tt.inLent)
			}
			if len(o.takenBack) != 1 || !sameArray(o.takenBack[0], answer) {
				t.Errorf("took back %d buffers, want the answer's own", len(o.takenBack))
			}
		})
	}
}
