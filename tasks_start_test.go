package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestTaskAfter: when a call that may become a task becomes one.
func TestTaskAfter(t *testing.T) {
	t.Run("a handler that returns within the window answers at once", func(t *testing.T) {
		e := newTaskEnv(t, TaskOptions{})
		e.addTool("quick", TaskOptional, time.Hour, echoTool("at once"))
		wantResult(t, e.do("tools/call", `{"name":"quick"}`), `{"content":[{"type":"text","text":"at once"}],`+complete2026+`}`)
		if managerOf(e.rt).created.Load() {
			t.Fatal("a task was created")
		}
	})
	t.Run("one that runs past it becomes a task", func(t *testing.T) {
		e := newTaskEnv(t, TaskOptions{})
		g := newGate()
		e.addTool("slow", TaskOptional, time.Millisecond, g.handler)
		id := e.startTask("slow", `{}`) // the handler waits for release
		waitFor(t, g.entered, "the handler")
		g.release <- gateResult{res: TextResult("later")}
		if got := textOf(t, e.awaitStatus(id, TaskCompleted).Result); got != "later" {
			t.Fatalf("result %q", got)
		}
	})
	t.Run("a negative window leaves it to the handler", func(t *testing.T) {
		e := newTaskEnv(t, TaskOptions{})
		g := newGate()
		e.addTool("decides", TaskOptional, -1, func(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
			if strings.Contains(string(req.Arguments), "task") && !req.StartTask() {
				return nil, errors.New("StartTask refused")
			}
			return g.handler(ctx, req)
		})
		replies := make(chan Reply, 1)
		go func() { replies <- e.do("tools/call", `{"name":"decides"}`) }()
		waitFor(t, g.entered, "the handler")
		g.release <- gateResult{res: TextResult("as a request")}
		wantResult(t, waitFor(t, replies, "the answer"), `{"content":[{"type":"text","text":"as a request"}],`+complete2026+`}`)

		id := e.startTask("decides", `{"mode":"task"}`)
		req := waitFor(t, g.entered, "the handler")
		if !req.StartTask() { // a second call: it is a task already
			t.Fatal("StartTask on a task is false")
		}
		g.release <- gateResult{res: TextResult("as a task")}
		e.awaitStatus(id, TaskCompleted)
	})
	t.Run("the request ends during the window", func(t *testing.T) {
		e := newTaskEnv(t, TaskOptions{})
		g := newGate()
		e.addTool("slow", TaskOptional, time.Hour, g.handler)
		ctx, cancel := context.WithCancel(context.Background())
		replies := make(chan Reply, 1)
		go func() { replies <- e.rt.Dispatch(ctx, e.request(tasksCaps, "tools/call", `{"name":"slow"}`)) }()
		req := waitFor(t, g.entered, "the handler")
		cancel()
		waitFor(t, replies, "Dispatch to return")
		if cause := waitFor(t, g.stopped, "the handler's context to end"); !errors.Is(cause, errTaskAbandoned) {
			t.Fatalf("the handler's context ended with %v", cause)
		}
		if req.StartTask() || managerOf(e.rt).created.Load() {
			t.Fatal("a call whose request ended became a task")
		}
	})
}

func TestStartTaskOutsideTaskCalls(t *testing.T) {
	e := newTaskEnv(t, TaskOptions{})
	started := make(chan bool, 2)
	h := func(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
		started <- req.StartTask()
		return TextResult("done"), nil
	}
	e.addTool("plain", "", 0, h)
	e.addTool("optional", TaskOptional, -1, h)
	wantResult(t, e.do("tools/call", `{"name":"plain"}`), `{"content":[{"type":"text","text":"done"}],`+complete2026+`}`)
	wantResult(t, dispatch(e.rt, e.request(noTasksCaps, "tools/call", `{"name":"optional"}`)), `{"content":[{"type":"text","text":"done"}],`+complete2026+`}`)
	for range 2 {
		if waitFor(t, started, "StartTask") {
			t.Fatal("StartTask made a call a task that may not be one")
		}
	}
}

// TestAskThenTask (2026): a handler asks first, which ends the round with
// input_required; the retry carries the answer, and then the call becomes a
// task whose questions are separate.
func TestAskThenTask(t *testing.T) {
	e := newTaskEnv(t, TaskOptions{})
	e.addTool("greet", TaskRequired, -1, func(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
		name, err := req.Elicit(ctx, "user_name", formRequest("Name?", "name", "string"))
		if err != nil {
			return nil, err
		}
		if !req.StartTask() {
			return nil, errors.New("no task")
		}
		again, err := req.Elicit(ctx, "user_name", formRequest("Name?", "name", "string")) // answered already
		if err != nil {
			return nil, err
		}
		color, err := req.Elicit(ctx, "color", formRequest("Color?", "color", "string"))
		if err != nil {
			return nil, err
		}
		return TextResult(formString(name, "name") + "/" + formString(again, "name") + "/" + formString(color, "color")), nil
	})
	var round1 struct {
		ResultType    string                  `json:"resultType"`
		TaskID        string                  `json:"taskId"`
		InputRequests map[string]InputRequest `json:"inputRequests"`
		RequestState  string                  `json:"requestState"`
	}
	decodeResult(t, e.do("tools/call", `{"name":"greet"}`), &round1)
	if round1.ResultType != "input_required" || round1.TaskID != "" || round1.InputRequests["user_name"].Method != MethodElicit {
		t.Fatalf("round 1: %+v", round1)
	}
	id := e.startTask("greet", `{},"inputResponses":{"user_name":{"action":"accept","content":{"name":"Alice"}}},"requestState":"`+round1.RequestState+`"`)
	rec := e.awaitQuestions(id, 1)
	if _, ok := rec.InputRequests["color"]; !ok {
		t.Fatalf("the task asks %v", rec.InputRequests)
	}
	e.ack(e.do(methodTasksUpdate, `{"taskId":"`+id+`","inputResponses":{"color":{"action":"accept","content":{"color":"blue"}}}}`))
	if got := textOf(t, e.awaitStatus(id, TaskCompleted).Result); got != "Alice/Alice/blue" {
		t.Fatalf("result %q", got)
	}
}

// TestAskPinsTheRequest: a handler that asks while its call is still an
// ordinary request keeps it one, whatever TaskAfter says, until it calls
// StartTask.
func TestAskPinsTheRequest(t *testing.T) {
	e := newTaskEnv(t, TaskOptions{})
	g := newGate()
	e.addTool("asks", TaskOptional, time.Hour, func(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
		if _, err := req.Elicit(ctx, "q", formRequest("?", "a", "string")); !errors.Is(err, ErrInputRequired) {
			return nil, err
		}
		return g.handler(ctx, req)
	})
	replies := make(chan Reply, 1)
	go func() { replies <- e.do("tools/call", `{"name":"asks"}`) }()
	req := waitFor(t, g.entered, "the handler")
	if ok, err := req.task.(*taskRun).becomeTask(true); ok || err != nil {
		t.Fatal("the window's end made a pinned call a task")
	}
	if !req.StartTask() {
		t.Fatal("StartTask of a pinned call failed")
	}
	id := waitFor(t, replies, "the CreateTaskResult")
	var created struct{ TaskID string }
	decodeResult(t, id, &created)
	g.release <- gateResult{res: TextResult("done")}
	e.awaitStatus(created.TaskID, TaskCompleted)
}

// TestTaskInitializeEra: a task of an initialize-era connection. Its
// results carry no serverInfo _meta but do carry resultType (the
// extension's shapes); before the call is a task its question is a
// server-to-client request, after it one of the task's inputRequests.
func TestTaskInitializeEra(t *testing.T) {
	e := newTaskEnv(t, TaskOptions{})
	e.addTool("ask", TaskRequired, -1, func(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
		first, err := req.Elicit(ctx, "first", formRequest("First?", "a", "string"))
		if err != nil {
			return nil, err
		}
		req.StartTask()
		second, err := req.Elicit(ctx, "second", formRequest("Second?", "b", "string"))
		if err != nil {
			return nil, err
		}
		return TextResult(formString(first, "a") + formString(second, "b")), nil
	})
	peer := &answeringPeer{answer: json.RawMessage(`{"action":"accept","content":{"a":"x"}}`)}
	legacy := func(method, params string) Reply {
		r := legacyRequest(ProtocolVersion20251125, method, params)
		r.Session.ClientCapabilities = json.RawMessage(tasksCaps)
		r.SessionID, r.Peer = "conn-1", peer
		return dispatch(e.rt, r)
	}
	wantResult(t, legacy("tools/call", `{"name":"ask"}`), `{"taskId":"task-1","status":"working","createdAt":"2026-07-28T12:00:00.000Z","lastUpdatedAt":"2026-07-28T12:00:00.000Z","ttlMs":3600000,"pollIntervalMs":500,"resultType":"task"}`)
	if peer.asked != 1 {
		t.Fatalf("%d server-to-client requests", peer.asked)
	}
	e.awaitQuestions("task-1", 1)
	wantResult(t, legacy(methodTasksUpdate, `{"taskId":"task-1","inputResponses":{"second":{"action":"accept","content":{"b":"y"}}}}`), `{"resultType":"complete"}`)
	e.awaitStatus("task-1", TaskCompleted)
	wantResult(t, legacy(methodTasksGet, `{"taskId":"task-1"}`), `{"taskId":"task-1","status":"completed","createdAt":"2026-07-28T12:00:00.000Z","lastUpdatedAt":"2026-07-28T12:00:00.000Z","ttlMs":3600000,"pollIntervalMs":500,"result":{"content":[{"type":"text","text":"xy"}],"resultType":"complete"},"resultType":"complete"}`)
	if peer.asked != 1 {
		t.Fatalf("the task's question went to the client as a request too (%d requests)", peer.asked)
	}
}

// answeringPeer answers every server-to-client request with answer.
type answeringPeer struct {
	answer json.RawMessage
	asked  int // touched by the handler's goroutine only
}

func (p *answeringPeer) Notify(context.Context, string, json.RawMessage) error { return nil }

func (p *answeringPeer) Request(context.Context, string, json.RawMessage) (json.RawMessage, error) {
	p.asked++
	return p.answer, nil
}

// answerClaims records the answer claims of a Request (Request.answers),
// failing any made once its answer was given.
type answerClaims struct {
	mu       sync.Mutex
	answered bool
	late     []int
}

func (a *answerClaims) claimAnswer(n int) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.answered {
		a.late = append(a.late, n)
	}
	return true
}

// TestTaskResultClaimsNoAnswerOfItsRequest: a 2026-07-28 call answered with
// its task builds the task's result later, on the task's goroutine; that
// result is kept by the task, not answered to the request, so it claims none
// of the request's answer bytes (the transport's record of an answered
// request belongs to its owner alone).
func TestTaskResultClaimsNoAnswerOfItsRequest(t *testing.T) {
	e := newTaskEnv(t, TaskOptions{})
	g := newGate()
	e.addTool("slow", TaskOptional, 0, g.handler)
	claims := &answerClaims{}
	req := e.request(tasksCaps, "tools/call", `{"name":"slow"}`)
	req.answers = claims
	reply := e.rt.Dispatch(context.Background(), req)
	var res struct {
		TaskID string `json:"taskId"`
	}
	decodeResult(t, reply, &res)
	claims.mu.Lock()
	claims.answered = true
	claims.mu.Unlock()
	waitFor(t, g.entered, "the handler")
	g.release <- gateResult{res: TextResult("kept by the task")}
	if got := textOf(t, e.awaitStatus(res.TaskID, TaskCompleted).Result); got != "kept by the task" {
		t.Fatalf("result %q", got)
	}
	claims.mu.Lock()
	defer claims.mu.Unlock()
	if len(claims.late) > 0 {
		t.Fatalf("the task's result claimed %v bytes of its answered request", claims.late)
	}
}
