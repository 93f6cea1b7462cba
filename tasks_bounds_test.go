package main

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestTasksMethodErrors(t *testing.T) {
	e := newTaskEnv(t, TaskOptions{})
	g := newGate()
	e.addTool("job", TaskOptional, 0, g.handler)
	id := e.startTask("job", `{}`)
	tests := []struct {
		name, caps, method, params string
		code                       int
		message                    string
	}{
		{"get without the extension", noTasksCaps, methodTasksGet, `{"taskId":"` + id + `"}`, CodeMissingCapability, msgTasksMissing},
		{"update without the extension", noTasksCaps, methodTasksUpdate, `{"taskId":"` + id + `","inputResponses":{}}`, CodeMissingCapability, msgTasksMissing},
		{"cancel without the extension", `{}`, methodTasksCancel, `{"taskId":"` + id + `"}`, CodeMissingCapability, msgTasksMissing},
		{"no taskId", tasksCaps, methodTasksGet, `{}`, CodeInvalidParams, "Invalid params: tasks/get requires a string taskId"},
		{"taskId not a string", tasksCaps, methodTasksCancel, `{"taskId":7}`, CodeInvalidParams, "Invalid params: tasks/cancel requires a string taskId"},
		{"unknown task: get", tasksCaps, methodTasksGet, `{"taskId":"task-99"}`, CodeInvalidParams, "Task not found"},
		{"unknown task: update", tasksCaps, methodTasksUpdate, `{"taskId":"task-99","inputResponses":{}}`, CodeInvalidParams, "Task not found"},
		{"unknown task: cancel", tasksCaps, methodTasksCancel, `{"taskId":"task-99"}`, CodeInvalidParams, "Task not found"},
		{"over-long taskId", tasksCaps, methodTasksGet, `{"taskId":"` + strings.Repeat("a", 257) + `"}`, CodeInvalidParams, "Task not found"},
		{"update without inputResponses", tasksCaps, methodTasksUpdate, `{"taskId":"` + id + `"}`, CodeInvalidParams, "Invalid params: tasks/update requires an inputResponses object"},
		{"inputResponses not an object", tasksCaps, methodTasksUpdate, `{"taskId":"` + id + `","inputResponses":[]}`, CodeInvalidParams, "Invalid params: inputResponses must be an object of client results by input key"},
		{"an answer not an object", tasksCaps, methodTasksUpdate, `{"taskId":"` + id + `","inputResponses":{"k":"yes"}}`, CodeInvalidParams, `Invalid params: inputResponses["k"] must be a result object`},
		{"tasks/result is gone", tasksCaps, "tasks/result", `{"taskId":"` + id + `"}`, CodeMethodNotFound, "Method not found: tasks/result"},
		{"tasks/list is gone", tasksCaps, "tasks/list", `{}`, CodeMethodNotFound, "Method not found: tasks/list"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			reply := dispatch(e.rt, e.request(tc.caps, tc.method, tc.params))
			data := ""
			if tc.code == CodeMissingCapability {
				data = tasksMissing
			}
			wantError(t, reply, tc.code, tc.message, data)
		})
	}
	if got := e.get(id); got.Status != TaskWorking {
		t.Fatalf("the refused requests changed the task: %+v", got)
	}
	g.release <- gateResult{}
}

// TestTaskVisibility: a task is seen only on the connection (or HTTP
// session) that created it; a 2026 request over HTTP (no session) reaches
// the tasks created without one, by their ID.
func TestTaskVisibility(t *testing.T) {
	e := newTaskEnv(t, TaskOptions{})
	g := newGate()
	e.addTool("job", TaskOptional, 0, g.handler)
	id := e.startTask("job", `{}`)
	other := &taskEnv{t: t, rt: e.rt, session: "conn-2"}
	for _, method := range []string{methodTasksGet, methodTasksCancel} {
		wantError(t, other.do(method, `{"taskId":"`+id+`"}`), CodeInvalidParams, "Task not found", "")
	}
	wantError(t, other.do(methodTasksUpdate, `{"taskId":"`+id+`","inputResponses":{}}`), CodeInvalidParams, "Task not found", "")
	if got := e.get(id); got.Status != TaskWorking {
		t.Fatalf("another session's cancel reached the task: %+v", got)
	}
	sessionless := &taskEnv{t: t, rt: e.rt, session: ""}
	wantError(t, sessionless.do(methodTasksGet, `{"taskId":"`+id+`"}`), CodeInvalidParams, "Task not found", "")
	open := sessionless.startTask("job", `{}`)
	if got := sessionless.get(open); got.TaskID != open {
		t.Fatalf("tasks/get without a session: %+v", got)
	}
	wantError(t, e.do(methodTasksGet, `{"taskId":"`+open+`"}`), CodeInvalidParams, "Task not found", "")
	for range 2 {
		waitFor(t, g.entered, "a handler")
		g.release <- gateResult{}
	}
}

// TestTaskVisibilityByPrincipal: with authorization a task belongs to the
// principal that created it, on whatever session: the same principal sees
// it from another session, another principal (or none) does not from the
// same one.
func TestTaskVisibilityByPrincipal(t *testing.T) {
	e := newTaskEnv(t, TaskOptions{})
	e.principal = &Principal{Subject: "alice"}
	g := newGate()
	e.addTool("job", TaskOptional, 0, g.handler)
	id := e.startTask("job", `{}`)
	elsewhere := &taskEnv{t: t, rt: e.rt, session: "conn-2", principal: &Principal{Subject: "alice"}}
	if got := elsewhere.get(id); got.TaskID != id {
		t.Fatalf("the same principal on another session: %+v", got)
	}
	for _, other := range []*taskEnv{
		{t: t, rt: e.rt, session: e.session, principal: &Principal{Subject: "mallory"}},
		{t: t, rt: e.rt, session: e.session, principal: &Principal{ClientID: "alice"}},
		{t: t, rt: e.rt, session: e.session},
	} {
		wantError(t, other.do(methodTasksCancel, `{"taskId":"`+id+`"}`), CodeInvalidParams, "Task not found", "")
	}
	if got := e.get(id); got.Status != TaskWorking {
		t.Fatalf("another principal's cancel reached the task: %+v", got)
	}
	waitFor(t, g.entered, "the handler")
	g.release <- gateResult{}
}

func TestTaskLimits(t *testing.T) {
	t.Run("per owner", func(t *testing.T) {
		e := newTaskEnv(t, TaskOptions{TaskLimits: TaskLimits{MaxTasksPerOwner: 2}})
		e.addTool("job", TaskOptional, 0, echoTool("done"))
		e.startTask("job", `{}`)
		e.startTask("job", `{}`)
		wantError(t, e.do("tools/call", `{"name":"job"}`), CodeInternalError, "Server task capacity exhausted: this client holds 2 tasks, its limit", "")
		other := &taskEnv{t: t, rt: e.rt, session: "conn-2"}
		other.startTask("job", `{}`)
	})
	t.Run("in all", func(t *testing.T) {
		e := newTaskEnv(t, TaskOptions{TaskLimits: TaskLimits{MaxTasks: 2}})
		e.addTool("job", TaskOptional, 0, echoTool("done"))
		for _, id := range []string{e.startTask("job", `{}`), (&taskEnv{t: t, rt: e.rt, session: "conn-2"}).startTask("job", `{}`)} {
			e.await(id, "over with its handler returned", func(r *TaskRecord) bool { return r.Status == TaskCompleted && r.Held == 0 })
		}
		wantError(t, e.do("tools/call", `{"name":"job"}`), CodeInternalError, "Server task capacity exhausted: the server holds 2 tasks, its limit", "")
	})
	t.Run("running handlers", func(t *testing.T) {
		// A shared store keeps its own limits; MaxTasks still bounds the
		// handlers this process runs.
		store := newMemoryTaskStore(TaskLimits{MaxTasks: 100, MaxTasksPerOwner: 100, MaxBytes: 1 << 20, MaxBytesPerOwner: 1 << 20})
		e := newTaskEnv(t, TaskOptions{Store: store, TaskLimits: TaskLimits{MaxTasks: 1}})
		g := newGate()
		e.addTool("job", TaskOptional, 0, g.handler)
		first := e.startTask("job", `{}`)
		wantError(t, e.do("tools/call", `{"name":"job"}`), CodeInternalError, "Server task capacity exhausted: 1 tasks are running, the limit", "")
		waitFor(t, g.entered, "the handler")
		g.release <- gateResult{}
		e.await(first, "over with its handler returned", func(r *TaskRecord) bool { return r.Status == TaskCompleted && r.Held == 0 })
		e.startTask("job", `{}`)
		waitFor(t, g.entered, "the handler")
		g.release <- gateResult{}
	})
	t.Run("at the end of the window", func(t *testing.T) {
		// A call refused a task once its window passed is answered with the
		// error at once, its handler cancelled, not left to run as a request.
		e := newTaskEnv(t, TaskOptions{TaskLimits: TaskLimits{MaxTasksPerOwner: 1}})
		g := newGate()
		e.addTool("job", TaskOptional, time.Millisecond, g.handler)
		e.startTask("job", `{}`)
		waitFor(t, g.entered, "the first handler")
		wantError(t, e.do("tools/call", `{"name":"job"}`), CodeInternalError, "Server task capacity exhausted: this client holds 1 tasks, its limit", "")
		// The answer waits for the handler's return, which keeps its place
		// in the executor until then.
		select {
		case cause := <-g.stopped:
			if !errors.Is(cause, errTaskRefused) {
				t.Fatalf("the refused handler's context ended with %v", cause)
			}
		default:
			t.Fatal("the refused call was answered while its handler ran")
		}
		g.release <- gateResult{}
	})
	t.Run("request bytes", func(t *testing.T) {
		e := newTaskEnv(t, TaskOptions{TaskLimits: TaskLimits{MaxBytesPerOwner: 1000}})
		e.addTool("job", TaskOptional, 0, echoTool("done"))
		wantError(t, e.do("tools/call", `{"name":"job","arguments":{"blob":"`+strings.Repeat("b", 1000)+`"}}`),
			CodeInternalError, "Server task capacity exhausted: this client's tasks would hold more than 1000 bytes", "")
	})
	t.Run("result bytes", func(t *testing.T) {
		e := newTaskEnv(t, TaskOptions{TaskLimits: TaskLimits{MaxBytes: 2000}})
		e.addTool("job", TaskOptional, 0, echoTool(strings.Repeat("r", 3000)))
		id := e.startTask("job", `{}`)
		rec := e.awaitStatus(id, TaskFailed)
		if rec.Error.Code != CodeInternalError || rec.Error.Message != taskResultTooLargeMessage || rec.Result != nil {
			t.Fatalf("a task whose result is over the limit: %+v, error %+v", rec, rec.Error)
		}
	})
}

func TestTaskTTL(t *testing.T) {
	t.Run("forgotten", func(t *testing.T) {
		e := newTaskEnv(t, TaskOptions{TTL: time.Minute})
		g := newGate()
		e.addTool("job", TaskOptional, 0, g.handler)
		id := e.startTask("job", `{}`)
		waitFor(t, g.entered, "the handler")
		var got taskWire
		decodeResult(t, e.do(methodTasksGet, `{"taskId":"`+id+`"}`), &got)
		if got.TTLMs != 60000 {
			t.Fatalf("ttlMs %d", got.TTLMs)
		}
		e.clock.advance(time.Minute)
		wantError(t, e.do(methodTasksGet, `{"taskId":"`+id+`"}`), CodeInvalidParams, "Task not found", "")
		if cause := waitFor(t, g.stopped, "the handler's context to end"); !errors.Is(cause, errTaskExpired) {
			t.Fatalf("the handler's context ended with %v", cause)
		}
	})
	t.Run("work cancelled at the TTL", func(t *testing.T) {
		e := newTaskEnv(t, TaskOptions{TTL: time.Millisecond})
		// The watcher's timer counts real time; the store's clock stays
		// before the task's creation, so only the timer can end it.
		managerOf(e.rt).now = time.Now
		e.store.now = func() time.Time { return time.Unix(0, 0) }
		g := newGate()
		e.addTool("job", TaskOptional, 0, g.handler)
		e.startTask("job", `{}`)
		if cause := waitFor(t, g.stopped, "the handler's context to end"); !errors.Is(cause, errTaskExpired) {
			t.Fatalf("the handler's context ended with %v", cause)
		}
	})
}

func TestTaskPollRateLimit(t *testing.T) {
	e := newTaskEnv(t, TaskOptions{PollInterval: time.Second, PollBurst: 2})
	g := newGate()
	e.addTool("job", TaskOptional, 0, g.handler)
	id := e.startTask("job", `{}`)
	e.get(id)
	e.get(id)
	tooFast := func() {
		t.Helper()
		wantError(t, e.do(methodTasksGet, `{"taskId":"`+id+`"}`), CodeInternalError, "Polling too fast: poll this task at most once every 1000ms", `{"pollIntervalMs":1000}`)
	}
	tooFast()
	e.clock.advance(999 * time.Millisecond)
	tooFast()
	e.clock.advance(time.Millisecond)
	e.get(id)
	tooFast()
	// Other methods are not polls.
	e.ack(e.do(methodTasksUpdate, `{"taskId":"`+id+`","inputResponses":{}}`))
	// Another task has its own budget.
	other := e.startTask("job", `{}`)
	e.get(other)
	e.clock.advance(30 * time.Minute)
	e.get(id)
	e.get(id)
	tooFast()
	for range 2 {
		waitFor(t, g.entered, "a handler")
		g.release <- gateResult{}
	}
}

func TestPollLimiterPrunesFullBuckets(t *testing.T) {
	var l pollLimiter
	l.burst = 1
	now := time.Unix(0, 0)
	for i := range minPollPrune {
		l.allow(string(rune('a'+i%26))+strings.Repeat("x", i/26), time.Second, now)
	}
	if len(l.buckets) != minPollPrune {
		t.Fatalf("%d buckets", len(l.buckets))
	}
	l.allow("new", time.Second, now.Add(time.Second)) // all others are full again: dropped
	if len(l.buckets) != 1 || l.pruneAt != 0 {
		t.Fatalf("after pruning: %d buckets, pruneAt %d", len(l.buckets), l.pruneAt)
	}
	if !l.allow("new", time.Second, now.Add(2*time.Second)) || l.allow("new", time.Second, now.Add(2*time.Second)) {
		t.Fatal("the bucket kept across the prune does not count")
	}
}

func TestTaskOptionsValidated(t *testing.T) {
	for _, opts := range []TaskOptions{
		{TaskLimits: TaskLimits{MaxTasks: -1}},
		{TaskLimits: TaskLimits{MaxBytesPerOwner: -1}},
		{TTL: -time.Second},
		{PollBurst: -1},
	} {
		ro := testOptions()
		ro.Tasks = opts
		if _, err := NewRuntime(ro); err == nil {
			t.Errorf("NewRuntime accepted Tasks %+v", opts)
		}
	}
	rt := newTestRuntime(t, testOptions())
	o := managerOf(rt).opts
	if o.MaxTasks != DefaultMaxTasks || o.MaxTasksPerOwner != DefaultMaxTasksPerOwner || o.MaxBytes != DefaultMaxTaskBytes ||
		o.MaxBytesPerOwner != DefaultMaxTaskBytesOwner || o.TTL != DefaultTaskTTL || o.PollInterval != DefaultTaskPollInterval || o.PollBurst != DefaultTaskPollBurst {
		t.Fatalf("defaults %+v", o)
	}
}

// TestTaskStoreFailures: a store that fails (other than by its limits) is
// answered -32603 and logged.
func TestTaskStoreFailures(t *testing.T) {
	inner := newMemoryTaskStore(TaskLimits{MaxTasks: 9, MaxTasksPerOwner: 9, MaxBytes: 1 << 20, MaxBytesPerOwner: 1 << 20})
	store := &failingStore{TaskStore: inner}
	e := newTaskEnv(t, TaskOptions{Store: store})
	inner.now = e.clock.Now
	g := newGate()
	e.addTool("job", TaskOptional, 0, g.handler)
	store.failCreate.Store(true)
	wantError(t, e.do("tools/call", `{"name":"job"}`), CodeInternalError, "Internal error", "")
	store.failCreate.Store(false)
	id := e.startTask("job", `{}`)
	store.failGet.Store(true)
	wantError(t, e.do(methodTasksGet, `{"taskId":"`+id+`"}`), CodeInternalError, "Internal error", "")
	store.failGet.Store(false)
	waitFor(t, g.entered, "the handler")
	g.release <- gateResult{}
	e.awaitStatus(id, TaskCompleted)
}

// failingStore fails Create or Get on demand.
type failingStore struct {
	TaskStore
	failCreate, failGet atomic.Bool
}

var errStoreDown = errors.New("store down")

func (s *failingStore) Create(ctx context.Context, rec *TaskRecord) error {
	if s.failCreate.Load() {
		return errStoreDown
	}
	return s.TaskStore.Create(ctx, rec)
}

func (s *failingStore) Get(ctx context.Context, id string) (*TaskRecord, error) {
	if s.failGet.Load() {
		return nil, errStoreDown
	}
	return s.TaskStore.Get(ctx, id)
}
