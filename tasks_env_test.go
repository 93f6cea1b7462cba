package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// Test fixtures of the tasks tests.
const (
	// tasksCaps declares the tasks extension and every asking capability.
	tasksCaps = `{"elicitation":{},"sampling":{},"roots":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}`
	// noTasksCaps declares the asking capabilities but not the extension.
	noTasksCaps = `{"elicitation":{},"sampling":{},"roots":{}}`
	// tasksMissing is the data of the -32021 refusing a request that did
	// not declare the extension.
	tasksMissing    = `{"requiredCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`
	msgTasksMissing = "Missing required client capability: the io.modelcontextprotocol/tasks extension"
)

// taskEnv is a runtime with task tools, a fake clock and task IDs task-1,
// task-2, ..., and a client on one connection (session "conn-1").
type taskEnv struct {
	t       *testing.T
	rt      *Runtime
	clock   *fakeClock
	store   *memoryTaskStore
	session string
	// principal, when set, is who the requests are authorized as.
	principal *Principal
}

func newTaskEnv(t *testing.T, opts TaskOptions) *taskEnv {
	t.Helper()
	ro := testOptions()
	ro.Tasks = opts
	ro.Logger = quietLogger()
	rt := newTestRuntime(t, ro)
	clock := newFakeClock()
	var ids atomic.Int64
	managerOf(rt).now = clock.Now
	managerOf(rt).newID = func() string { return fmt.Sprintf("task-%d", ids.Add(1)) }
	e := &taskEnv{t: t, rt: rt, clock: clock, session: "conn-1"}
	if s, ok := managerOf(rt).store.(*memoryTaskStore); ok {
		s.now = clock.Now
		e.store = s
	}
	return e
}

// addTool registers a tool with the given task support ("" for none) and
// TaskAfter.
func (e *taskEnv) addTool(name, support string, after time.Duration, h ToolHandler) {
	e.t.Helper()
	tool := Tool{Name: name}
	if support != "" {
		tool.Execution = &ToolExecution{TaskSupport: support, TaskAfter: after}
	}
	mustAddTool(e.t, e.rt, tool, h)
}

// request is a 2026 request of the env's session with caps; params is an
// object without _meta ("" for none).
func (e *taskEnv) request(caps, method, params string) *Request {
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps + `}`
	if params == "" || params == "{}" {
		params = "{" + meta + "}"
	} else {
		params = "{" + meta + "," + params[1:]
	}
	r := newRequest(method, params)
	r.SessionID = e.session
	return r
}

// do dispatches a 2026 request declaring the extension.
func (e *taskEnv) do(method, params string) Reply {
	ctx := context.Background()
	if e.principal != nil {
		ctx = ContextWithPrincipal(ctx, e.principal)
	}
	return e.rt.Dispatch(ctx, e.request(tasksCaps, method, params))
}

// startTask calls tool with args and returns the ID of the task it became.
func (e *taskEnv) startTask(tool, args string) string {
	e.t.Helper()
	reply := e.do("tools/call", `{"name":"`+tool+`","arguments":`+args+`}`)
	var res struct {
		ResultType string `json:"resultType"`
		TaskID     string `json:"taskId"`
		Status     string `json:"status"`
	}
	decodeResult(e.t, reply, &res)
	if res.ResultType != resultTypeTask || res.TaskID == "" || res.Status != TaskWorking {
		e.t.Fatalf("tools/call %s answered %s, want a working CreateTaskResult", tool, reply.Result)
	}
	return res.TaskID
}

// get returns tasks/get's result for id, decoded.
func (e *taskEnv) get(id string) taskWire {
	e.t.Helper()
	var w taskWire
	decodeResult(e.t, e.do(methodTasksGet, `{"taskId":"`+id+`"}`), &w)
	return w
}

// ack checks that reply is the empty 2026 acknowledgement.
func (e *taskEnv) ack(reply Reply) {
	e.t.Helper()
	wantResult(e.t, reply, `{`+complete2026+`}`)
}

// await waits until task id's record satisfies ok and returns it, watching
// the store (no polling).
func (e *taskEnv) await(id string, what string, ok func(*TaskRecord) bool) *TaskRecord {
	e.t.Helper()
	ctx := context.Background()
	changed, stop, err := managerOf(e.rt).store.Watch(ctx, id)
	if err != nil {
		e.t.Fatalf("watching %s: %v", id, err)
	}
	defer stop()
	for {
		rec, err := managerOf(e.rt).store.Get(ctx, id)
		if err != nil {
			e.t.Fatalf("waiting for %s to be %s: %v", id, what, err)
		}
		if ok(rec) {
			return rec
		}
		waitFor(e.t, changed, fmt.Sprintf("task %s to be %s (it is %s)", id, what, rec.Status))
	}
}

// awaitStatus waits until task id has status.
func (e *taskEnv) awaitStatus(id, status string) *TaskRecord {
	e.t.Helper()
	return e.await(id, status, func(r *TaskRecord) bool { return r.Status == status })
}

// awaitQuestions waits until task id waits for n questions.
func (e *taskEnv) awaitQuestions(id string, n int) *TaskRecord {
	e.t.Helper()
	return e.await(id, fmt.Sprintf("waiting for %d questions", n), func(r *TaskRecord) bool {
		return r.Status == TaskInputRequired && len(r.InputRequests) == n
	})
}

// gate is a tool handler that signals entered, then returns what release
// sends, or the context's error when it ends first (after signalling
// stopped with the cause).
type gate struct {
	entered chan *HandlerRequest
	release chan gateResult
	stopped chan error
}

type gateResult struct {
	res *ToolResult
	err error
}

func newGate() *gate {
	return &gate{entered: make(chan *HandlerRequest, 16), release: make(chan gateResult, 16), stopped: make(chan error, 16)}
}

func (g *gate) handler(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
	g.entered <- req
	select {
	case r := <-g.release:
		return r.res, r.err
	case <-ctx.Done():
		g.stopped <- context.Cause(ctx)
		return nil, ctx.Err()
	}
}

// textOf returns the text of a tool result's first content block.
func textOf(t *testing.T, result json.RawMessage) string {
	t.Helper()
	var r struct {
		Content []struct{ Text string }
	}
	if err := json.Unmarshal(result, &r); err != nil || len(r.Content) == 0 {
		t.Fatalf("result %s has no text content", result)
	}
	return r.Content[0].Text
}

// managerOf returns rt's tasks, which its RuntimeOptions.Tasks (a
// TaskOptions) made.
func managerOf(rt *Runtime) *taskManager { return rt.tasks.(*taskManager) }
