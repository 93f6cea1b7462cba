package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestTasksAdvertisedWhileATaskToolIsRegistered(t *testing.T) {
	e := newTaskEnv(t, TaskOptions{})
	e.addTool("plain", "", 0, echoTool("x"))
	discover := func() string {
		var res struct{ Capabilities json.RawMessage }
		decodeResult(t, e.do("server/discover", ""), &res)
		return string(res.Capabilities)
	}
	if caps := discover(); strings.Contains(caps, "extensions") {
		t.Fatalf("no task tool, capabilities %s", caps)
	}
	wantError(t, e.do(methodTasksGet, `{"taskId":"x"}`), CodeMethodNotFound, "Method not found: tasks/get", "")

	e.addTool("job", TaskOptional, 0, echoTool("done"))
	if caps := discover(); !strings.Contains(caps, `"extensions":{"io.modelcontextprotocol/tasks":{}}`) {
		t.Fatalf("with a task tool, capabilities %s", caps)
	}
	init := dispatch(e.rt, newRequest("initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}`))
	if !strings.Contains(string(init.Result), `"extensions":{"io.modelcontextprotocol/tasks":{}}`) {
		t.Fatalf("initialize result %s", init.Result)
	}
	// tools/list sends execution to 2025-11-25 clients only, whose Tool
	// defines it.
	for _, tc := range []struct {
		version string
		want    bool
	}{{ProtocolVersion20251125, true}, {ProtocolVersion20250618, false}} {
		list := dispatch(e.rt, legacyRequest(tc.version, "tools/list", ""))
		if got := strings.Contains(string(list.Result), `"execution":{"taskSupport":"optional"}`); got != tc.want {
			t.Fatalf("%s tools/list %s", tc.version, list.Result)
		}
	}
	if list := e.do("tools/list", ""); strings.Contains(string(list.Result), "execution") {
		t.Fatalf("2026 tools/list %s", list.Result)
	}
	e.rt.RemoveTool("job")
	if caps := discover(); strings.Contains(caps, "extensions") {
		t.Fatalf("task tool removed, capabilities %s", caps)
	}
}

func TestToolExecutionValidated(t *testing.T) {
	rt := newTestRuntime(t, testOptions())
	err := rt.AddTool(Tool{Name: "t", Execution: &ToolExecution{TaskSupport: "sometimes"}}, echoTool("x"))
	if err == nil || !strings.Contains(err.Error(), `execution.taskSupport "sometimes"`) {
		t.Fatalf("AddTool with an unknown taskSupport = %v", err)
	}
}

// TestTasksDeclared: which requests declared the extension, and what an
// optional and a required task tool answer them.
func TestTasksDeclared(t *testing.T) {
	legacy := func(sessionCaps, params string) *Request {
		r := legacyRequest(ProtocolVersion20251125, "tools/call", params)
		r.Session.ClientCapabilities = json.RawMessage(sessionCaps)
		r.SessionID = "conn-1"
		return r
	}
	perRequest := `"_meta":{"io.modelcontextprotocol/clientCapabilities":` + tasksCaps + `}`
	tests := []struct {
		name     string
		request  func(e *taskEnv, tool string) *Request
		declared bool
	}{
		{"2026 with the extension", func(e *taskEnv, tool string) *Request {
			return e.request(tasksCaps, "tools/call", `{"name":"`+tool+`"}`)
		}, true},
		{"2026 without it", func(e *taskEnv, tool string) *Request {
			return e.request(noTasksCaps, "tools/call", `{"name":"`+tool+`"}`)
		}, false},
		{"2026, extensions not an object", func(e *taskEnv, tool string) *Request {
			return e.request(`{"extensions":[]}`, "tools/call", `{"name":"`+tool+`"}`)
		}, false},
		{"2026, the extension not an object", func(e *taskEnv, tool string) *Request {
			return e.request(`{"extensions":{"io.modelcontextprotocol/tasks":true}}`, "tools/call", `{"name":"`+tool+`"}`)
		}, false},
		{"initialize era, in initialize", func(_ *taskEnv, tool string) *Request {
			return legacy(tasksCaps, `{"name":"`+tool+`"}`)
		}, true},
		{"initialize era, on the request", func(_ *taskEnv, tool string) *Request {
			return legacy(`{}`, `{"name":"`+tool+`",`+perRequest+`}`)
		}, true},
		{"initialize era, nowhere", func(_ *taskEnv, tool string) *Request {
			return legacy(noTasksCaps, `{"name":"`+tool+`"}`)
		}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newTaskEnv(t, TaskOptions{})
			e.addTool("optional", TaskOptional, 0, echoTool("direct"))
			e.addTool("required", TaskRequired, 0, echoTool("direct"))
			var res struct{ ResultType, TaskID string }
			decodeResult(t, dispatch(e.rt, tc.request(e, "optional")), &res)
			if got := res.TaskID != ""; got != tc.declared {
				t.Fatalf("optional tool: task %v, want %v", got, tc.declared)
			}
			required := dispatch(e.rt, tc.request(e, "required"))
			if tc.declared {
				decodeResult(t, required, &res)
			} else {
				wantError(t, required, CodeMissingCapability, msgTasksMissing, tasksMissing)
			}
		})
	}
}

func TestCreateTaskResultShape(t *testing.T) {
	e := newTaskEnv(t, TaskOptions{})
	g := newGate()
	e.addTool("job", TaskOptional, 0, g.handler)
	reply := e.do("tools/call", `{"name":"job"}`)
	wantResult(t, reply, `{"taskId":"task-1","status":"working","createdAt":"2026-07-28T12:00:00.000Z","lastUpdatedAt":"2026-07-28T12:00:00.000Z","ttlMs":3600000,"pollIntervalMs":500,"resultType":"task",`+serverMeta+`}`)
	// Created durably before the answer: tasks/get resolves at once.
	wantResult(t, e.do(methodTasksGet, `{"taskId":"task-1"}`), `{"taskId":"task-1","status":"working","createdAt":"2026-07-28T12:00:00.000Z","lastUpdatedAt":"2026-07-28T12:00:00.000Z","ttlMs":3600000,"pollIntervalMs":500,"resultType":"complete",`+serverMeta+`}`)
	waitFor(t, g.entered, "the handler")
	g.release <- gateResult{res: TextResult("ok")}
	e.awaitStatus("task-1", TaskCompleted)
}

// TestTaskEnds: how a handler's return becomes the task's end, as tasks/get
// shows it.
func TestTaskEnds(t *testing.T) {
	const times = `"createdAt":"2026-07-28T12:00:00.000Z","lastUpdatedAt":"2026-07-28T12:00:05.000Z","ttlMs":3600000,"pollIntervalMs":500`
	tests := []struct {
		name string
		ret  gateResult
		want string // between taskId and resultType
	}{
		{"result", gateResult{res: TextResult("built")},
			`"status":"completed",` + times + `,"result":{"content":[{"type":"text","text":"built"}],"resultType":"complete",` + serverMeta + `}`},
		{"tool error", gateResult{err: errors.New("the build broke")},
			`"status":"completed",` + times + `,"result":{"content":[{"type":"text","text":"the build broke"}],"isError":true,"resultType":"complete",` + serverMeta + `}`},
		{"JSON-RPC error", gateResult{err: &RPCError{Code: -32010, Message: "quota exceeded", Data: map[string]int{"retryAfter": 3}}},
			`"status":"failed","statusMessage":"quota exceeded",` + times + `,"error":{"code":-32010,"message":"quota exceeded","data":{"retryAfter":3}}`},
		{"nil result", gateResult{},
			`"status":"completed",` + times + `,"result":{"content":[],"resultType":"complete",` + serverMeta + `}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newTaskEnv(t, TaskOptions{})
			g := newGate()
			e.addTool("job", TaskOptional, 0, g.handler)
			id := e.startTask("job", `{}`)
			waitFor(t, g.entered, "the handler")
			e.clock.advance(5 * time.Second)
			g.release <- tc.ret
			e.await(id, "over", func(r *TaskRecord) bool { return isTerminalStatus(r.Status) })
			wantResult(t, e.do(methodTasksGet, `{"taskId":"`+id+`"}`), `{"taskId":"task-1",`+tc.want+`,"resultType":"complete",`+serverMeta+`}`)
		})
	}
}

func TestTaskHandlerPanicFails(t *testing.T) {
	e := newTaskEnv(t, TaskOptions{})
	e.addTool("job", TaskOptional, 0, func(context.Context, *HandlerRequest) (*ToolResult, error) { panic("boom") })
	id := e.startTask("job", `{}`)
	rec := e.awaitStatus(id, TaskFailed)
	if rec.Error.Code != CodeInternalError || rec.Error.Message != "Internal error" || rec.Result != nil {
		t.Fatalf("record %+v, error %+v", rec, rec.Error)
	}
	if n := managerOf(e.rt).running.Load(); n != 0 {
		t.Fatalf("%d task handlers still counted as running", n)
	}
}

// TestTaskInput walks a task through its questions: two asked at once,
// answered one at a time, a wrong answer refused, keys never reused.
func TestTaskInput(t *testing.T) {
	e := newTaskEnv(t, TaskOptions{})
	type answer struct {
		first, second string
		again         string
		reuseErr      error
	}
	answers := make(chan answer, 1)
	e.addTool("form", TaskOptional, 0, func(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
		var a answer
		var first, second *ElicitResult
		done := make(chan error, 1)
		go func() {
			var err error
			first, err = req.Elicit(ctx, "first", formRequest("First?", "name", "string"))
			done <- err
		}()
		second, errSecond := req.Elicit(ctx, "second", formRequest("Second?", "name", "string"))
		if err := errors.Join(<-done, errSecond); err != nil {
			return nil, err
		}
		a.first, a.second = formString(first, "name"), formString(second, "name")
		again, err := req.Elicit(ctx, "first", formRequest("First?", "name", "string"))
		if err != nil {
			return nil, err
		}
		a.again = formString(again, "name")
		_, a.reuseErr = req.CreateMessage(ctx, "first", samplingRequest("hi", 5))
		answers <- a
		return TextResult(a.first + "+" + a.second), nil
	})
	id := e.startTask("form", `{}`)
	e.awaitQuestions(id, 2)
	got := e.get(id)
	if got.Status != TaskInputRequired || len(got.InputRequests) != 2 || got.InputRequests["first"].Method != MethodElicit {
		t.Fatalf("tasks/get %+v", got)
	}
	// A partial answer: the task stays input_required with the other key.
	e.ack(e.do(methodTasksUpdate, `{"taskId":"`+id+`","inputResponses":{"first":{"action":"accept","content":{"name":"A"}},"never-asked":{"x":1}}}`))
	if got := e.get(id); got.Status != TaskInputRequired || len(got.InputRequests) != 1 || got.InputRequests["second"].Method != MethodElicit {
		t.Fatalf("after a partial answer, tasks/get %+v", got)
	}
	// An answer of the wrong shape is refused, and nothing is applied.
	wantError(t, e.do(methodTasksUpdate, `{"taskId":"`+id+`","inputResponses":{"second":{"action":"maybe"}}}`),
		CodeInvalidParams, `Invalid inputResponses: "second" is not a valid elicitation/create result: action "maybe" is not accept, decline or cancel`, "")
	// An answer to a key answered already is ignored.
	e.ack(e.do(methodTasksUpdate, `{"taskId":"`+id+`","inputResponses":{"first":{"action":"accept","content":{"name":"changed"}}}}`))
	e.ack(e.do(methodTasksUpdate, `{"taskId":"`+id+`","inputResponses":{"second":{"action":"accept","content":{"name":"B"}}}}`))
	a := waitFor(t, answers, "the handler's answers")
	if a.first != "A" || a.second != "B" || a.again != "A" {
		t.Fatalf("answers %+v", a)
	}
	if a.reuseErr == nil || !strings.Contains(a.reuseErr.Error(), `key "first" was asked with elicitation/create`) {
		t.Fatalf("asking key first with another method = %v", a.reuseErr)
	}
	done := e.awaitStatus(id, TaskCompleted)
	if textOf(t, done.Result) != "A+B" || len(done.Answers) != 0 || len(done.InputRequests) != 0 {
		t.Fatalf("completed record %+v", done)
	}
}

// TestTaskPeerRequest: a server-to-client request through the handler's
// Peer, once the call is a task, becomes a question keyed request-N.
func TestTaskPeerRequest(t *testing.T) {
	e := newTaskEnv(t, TaskOptions{})
	e.addTool("roots", TaskOptional, 0, func(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
		raw, err := req.peer.Request(ctx, MethodListRoots, nil)
		if err != nil {
			return nil, err
		}
		if _, err := req.peer.Request(ctx, "ping", nil); err == nil {
			return nil, errors.New("a task asked the client ping")
		}
		return TextResult(string(raw)), nil
	})
	id := e.startTask("roots", `{}`)
	rec := e.awaitQuestions(id, 1)
	if q, ok := rec.InputRequests["request-1"]; !ok || q.Method != MethodListRoots || string(q.Params) != `{}` {
		t.Fatalf("questions %+v", rec.InputRequests)
	}
	e.ack(e.do(methodTasksUpdate, `{"taskId":"`+id+`","inputResponses":{"request-1":{"roots":[{"uri":"file:///w"}]}}}`))
	if got := textOf(t, e.awaitStatus(id, TaskCompleted).Result); got != `{"roots":[{"uri":"file:///w"}]}` {
		t.Fatalf("result %q", got)
	}
}

func TestTaskProgressIsStatusMessage(t *testing.T) {
	e := newTaskEnv(t, TaskOptions{})
	g := newGate()
	e.addTool("job", TaskOptional, 0, func(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
		if err := req.ReportProgress(ctx, Progress{Progress: 1, Total: 2, Message: "half way"}); err != nil {
			return nil, err
		}
		if err := req.Log(ctx, "error", "", "nobody hears this"); err != nil {
			return nil, err
		}
		return g.handler(ctx, req)
	})
	id := e.startTask("job", `{}`)
	waitFor(t, g.entered, "the handler")
	if got := e.get(id); got.StatusMessage != "half way" || got.Status != TaskWorking {
		t.Fatalf("tasks/get %+v", got)
	}
	g.release <- gateResult{res: TextResult("done")}
	e.awaitStatus(id, TaskCompleted)
}

func TestTaskCancel(t *testing.T) {
	e := newTaskEnv(t, TaskOptions{})
	g := newGate()
	e.addTool("job", TaskOptional, 0, g.handler)
	e.addTool("form", TaskOptional, 0, func(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
		_, err := req.Elicit(ctx, "q", formRequest("?", "a", "string"))
		return nil, err
	})
	id := e.startTask("job", `{}`)
	waitFor(t, g.entered, "the handler")
	e.ack(e.do(methodTasksCancel, `{"taskId":"`+id+`"}`))
	// Cancelled at once, whatever the handler does next.
	if got := e.get(id); got.Status != TaskCancelled || got.StatusMessage != taskCancelledMessage {
		t.Fatalf("after tasks/cancel: %+v", got)
	}
	if cause := waitFor(t, g.stopped, "the handler's context to end"); !errors.Is(cause, errTaskCancelled) {
		t.Fatalf("the handler's context ended with %v", cause)
	}
	e.ack(e.do(methodTasksCancel, `{"taskId":"`+id+`"}`)) // idempotent

	asking := e.startTask("form", `{}`)
	e.awaitQuestions(asking, 1)
	e.ack(e.do(methodTasksCancel, `{"taskId":"`+asking+`"}`))
	rec := e.awaitStatus(asking, TaskCancelled)
	if len(rec.InputRequests) != 0 {
		t.Fatalf("a cancelled task still asks %v", rec.InputRequests)
	}
	// An answer after the cancel is ignored.
	e.ack(e.do(methodTasksUpdate, `{"taskId":"`+asking+`","inputResponses":{"q":{"action":"cancel"}}}`))

	done := e.startTask("job", `{}`)
	waitFor(t, g.entered, "the handler")
	g.release <- gateResult{res: TextResult("done")}
	e.awaitStatus(done, TaskCompleted)
	e.ack(e.do(methodTasksCancel, `{"taskId":"`+done+`"}`))
	if got := e.get(done); got.Status != TaskCompleted {
		t.Fatalf("cancelling a completed task made it %s", got.Status)
	}
}

// TestTaskCancelAtEveryPoint cancels a task at each point of its life,
// several times over under -race: the task always ends, cancelled unless it
// had ended before, and its handler's goroutine is accounted for.
func TestTaskCancelAtEveryPoint(t *testing.T) {
	points := []struct {
		name string
		// run starts a task, drives it to the point and returns its ID and
		// the status it must end with ("" when either end is right).
		run func(e *taskEnv, g *gate) (id, want string)
	}{
		{"just created", func(e *taskEnv, g *gate) (string, string) {
			return e.startTask("job", `{}`), TaskCancelled
		}},
		{"working", func(e *taskEnv, g *gate) (string, string) {
			id := e.startTask("job", `{}`)
			waitFor(e.t, g.entered, "the handler")
			return id, TaskCancelled
		}},
		{"waiting for input", func(e *taskEnv, g *gate) (string, string) {
			id := e.startTask("ask2", `{}`)
			e.awaitQuestions(id, 2)
			return id, TaskCancelled
		}},
		{"partly answered", func(e *taskEnv, g *gate) (string, string) {
			id := e.startTask("ask2", `{}`)
			e.awaitQuestions(id, 2)
			e.ack(e.do(methodTasksUpdate, `{"taskId":"`+id+`","inputResponses":{"a":{"action":"accept","content":{}}}}`))
			return id, TaskCancelled
		}},
		{"as it completes", func(e *taskEnv, g *gate) (string, string) {
			id := e.startTask("job", `{}`)
			waitFor(e.t, g.entered, "the handler")
			g.release <- gateResult{res: TextResult("done")}
			return id, ""
		}},
		{"completed", func(e *taskEnv, g *gate) (string, string) {
			id := e.startTask("job", `{}`)
			waitFor(e.t, g.entered, "the handler")
			g.release <- gateResult{res: TextResult("done")}
			e.awaitStatus(id, TaskCompleted)
			return id, TaskCompleted
		}},
		{"failed", func(e *taskEnv, g *gate) (string, string) {
			id := e.startTask("job", `{}`)
			waitFor(e.t, g.entered, "the handler")
			g.release <- gateResult{err: &RPCError{Code: -32010, Message: "no"}}
			e.awaitStatus(id, TaskFailed)
			return id, TaskFailed
		}},
	}
	for _, p := range points {
		t.Run(p.name, func(t *testing.T) {
			for range 20 {
				e := newTaskEnv(t, TaskOptions{})
				g := newGate()
				e.addTool("job", TaskOptional, 0, g.handler)
				e.addTool("ask2", TaskOptional, 0, func(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
					errs := make(chan error, 1)
					go func() { _, err := req.Elicit(ctx, "a", formRequest("a?", "a", "string")); errs <- err }()
					_, err := req.Elicit(ctx, "b", formRequest("b?", "b", "string"))
					return nil, errors.Join(err, <-errs)
				})
				id, want := p.run(e, g)
				// Several clients cancel at once.
				acks := make(chan Reply, 3)
				for range 3 {
					go func() { acks <- e.do(methodTasksCancel, `{"taskId":"`+id+`"}`) }()
				}
				for range 3 {
					e.ack(waitFor(t, acks, "a cancel's ack"))
				}
				rec := e.await(id, "over with its handler returned", func(r *TaskRecord) bool { return isTerminalStatus(r.Status) && r.Held == 0 })
				if want != "" && rec.Status != want {
					t.Fatalf("ended %s, want %s", rec.Status, want)
				}
				if rec.Status == TaskCancelled && (rec.Result != nil || len(rec.InputRequests) != 0 || len(rec.Answers) != 0) {
					t.Fatalf("a cancelled task kept %+v", rec)
				}
				if n := managerOf(e.rt).running.Load(); n != 0 {
					t.Fatalf("%d task handlers counted as running after the end", n)
				}
			}
		})
	}
}

// TestTaskBackToWorking: once every question is answered the task is
// working again; a handler that ends with a question outstanding leaves
// none behind.
func TestTaskBackToWorking(t *testing.T) {
	e := newTaskEnv(t, TaskOptions{})
	g := newGate()
	e.addTool("asks", TaskOptional, 0, func(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
		if _, err := req.Elicit(ctx, "q", formRequest("?", "a", "string")); err != nil {
			return nil, err
		}
		return g.handler(ctx, req)
	})
	e.addTool("leaves", TaskOptional, 0, func(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
		go req.Elicit(ctx, "late", formRequest("?", "b", "string")) // the handler does not wait for it
		return g.handler(ctx, req)
	})
	id := e.startTask("asks", `{}`)
	e.awaitQuestions(id, 1)
	e.ack(e.do(methodTasksUpdate, `{"taskId":"`+id+`","inputResponses":{"q":{"action":"accept","content":{"a":"x"}}}}`))
	waitFor(t, g.entered, "the handler past its question")
	if got := e.get(id); got.Status != TaskWorking || len(got.InputRequests) != 0 {
		t.Fatalf("all answered: %+v", got)
	}
	g.release <- gateResult{res: TextResult("done")}
	e.awaitStatus(id, TaskCompleted)

	left := e.startTask("leaves", `{}`)
	waitFor(t, g.entered, "the handler")
	e.awaitQuestions(left, 1)
	g.release <- gateResult{res: TextResult("done")}
	if rec := e.awaitStatus(left, TaskCompleted); len(rec.InputRequests) != 0 {
		t.Fatalf("a completed task asks %v", rec.InputRequests)
	}
}
