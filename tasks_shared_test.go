package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
)

// Tests of what a store shared by several replicas relies on in the task
// manager: a change feed reaching listen streams, a task ended by another
// replica stopping its handler here, store failures answered with JSON-RPC
// errors and a task's end kept through a store outage.

// sharedTestStore is a memory store standing in for a shared one: it can be
// down (every Get and Update fails), reports each failure on failed, and
// hands its change feed's callback to the test.
type sharedTestStore struct {
	*memoryTaskStore
	failed chan string

	mu      sync.Mutex
	down    bool
	changed func(*TaskRecord)
}

func newSharedTestStore() *sharedTestStore {
	return &sharedTestStore{memoryTaskStore: newMemoryTaskStore(TaskLimits{MaxTasks: 8, MaxTasksPerOwner: 8, MaxBytes: 1 << 20, MaxBytesPerOwner: 1 << 20}), failed: make(chan string, 64)}
}

func (s *sharedTestStore) setDown(down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = down
}

func (s *sharedTestStore) fail(op string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.down {
		return nil
	}
	s.failed <- op
	return errStoreDown
}

func (s *sharedTestStore) Get(ctx context.Context, id string) (*TaskRecord, error) {
	if err := s.fail("get"); err != nil {
		return nil, err
	}
	return s.memoryTaskStore.Get(ctx, id)
}

func (s *sharedTestStore) Update(ctx context.Context, rec *TaskRecord) error {
	if err := s.fail("update"); err != nil {
		return err
	}
	return s.memoryTaskStore.Update(ctx, rec)
}

func (s *sharedTestStore) FollowTaskChanges(changed func(*TaskRecord)) func() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.changed = changed
	return func() {}
}

func newSharedTaskEnv(t *testing.T) (*taskEnv, *sharedTestStore) {
	t.Helper()
	store := newSharedTestStore()
	e := newTaskEnv(t, TaskOptions{Store: store})
	store.now = e.clock.Now
	return e, store
}

// TestTaskChangeFeedReachesListeners: a change another replica made, as the
// store's feed reports it, is announced to this replica's listen streams.
func TestTaskChangeFeedReachesListeners(t *testing.T) {
	e, store := newSharedTaskEnv(t)
	store.mu.Lock()
	feed := store.changed
	store.mu.Unlock()
	if feed == nil {
		t.Fatal("the runtime did not follow the store's change feed")
	}
	changes := make(chan Change, 4)
	stop := e.rt.WatchChanges(func(c Change) { changes <- c })
	defer stop()
	rec := storeRecord("elsewhere", "", e.clock.Now())
	rec.Status, rec.StatusMessage = TaskCancelled, "Cancelled by the client"
	feed(rec)
	c := waitFor(t, changes, "the announcement")
	want := `{"taskId":"elsewhere","status":"cancelled","statusMessage":"Cancelled by the client","createdAt":"2026-07-28T12:00:00.000Z","lastUpdatedAt":"2026-07-28T12:00:00.000Z","ttlMs":60000,"pollIntervalMs":1000`
	if c.Kind != TaskStatus || c.taskID != "elsewhere" || c.taskParams != want {
		t.Fatalf("announced %+v, want the task's state %s", c, want)
	}
}

// TestTaskEndedElsewhereStopsHandler: a task another replica ended (failed
// by the sweeper after a lease expired) cancels its handler here, and the
// handler's late return does not change the end.
func TestTaskEndedElsewhereStopsHandler(t *testing.T) {
	e, store := newSharedTaskEnv(t)
	g := newGate()
	e.addTool("job", TaskOptional, 0, g.handler)
	id := e.startTask("job", `{}`)
	waitFor(t, g.entered, "the handler")
	rec, err := store.memoryTaskStore.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	rec.Status, rec.StatusMessage = TaskFailed, "lease expired"
	rec.Error = &RPCError{Code: CodeInternalError, Message: "lease expired"}
	if err := store.memoryTaskStore.Update(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	if cause := waitFor(t, g.stopped, "the handler's cancellation"); !errors.Is(cause, errTaskEndedElsewhere) {
		t.Fatalf("the handler was cancelled with %v, want errTaskEndedElsewhere", cause)
	}
	got := e.await(id, "failed with its bytes released", func(r *TaskRecord) bool {
		return r.Status == TaskFailed && r.Held == 0
	})
	if got.StatusMessage != "lease expired" {
		t.Fatalf("after the handler returned: %+v, want the sweeper's end kept and the request's bytes released", got)
	}
}

// TestTaskStoreDown: while the store fails, tasks/get, tasks/update and
// tasks/cancel are answered -32603 (no Go error text), a handler's progress
// message is lost but not its work, its question fails with no store text,
// and a handler that returns meanwhile has its result stored once the store
// is back.
func TestTaskStoreDown(t *testing.T) {
	e, store := newSharedTaskEnv(t)
	g := newGate()
	outcomes := make(chan string, 2)
	e.addTool("job", TaskOptional, 0, func(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
		g.entered <- req
		r := <-g.release
		progress := req.ReportProgress(ctx, Progress{Progress: 1, Message: "half way"})
		_, ask := req.Elicit(ctx, "q", elicitParams{Message: "sure?", RequestedSchema: json.RawMessage(`{"type":"object","properties":{}}`)})
		outcomes <- fmt.Sprintf("progress: %v; ask: %v", progress, ask)
		return r.res, r.err
	})
	id := e.startTask("job", `{}`)
	waitFor(t, g.entered, "the handler")
	store.setDown(true)
	for _, call := range []struct{ method, params string }{
		{methodTasksGet, `{"taskId":"` + id + `"}`},
		{methodTasksUpdate, `{"taskId":"` + id + `","inputResponses":{}}`},
		{methodTasksCancel, `{"taskId":"` + id + `"}`},
	} {
		reply := e.do(call.method, call.params)
		if reply.Error == nil || reply.Error.Code != CodeInternalError || reply.Error.Message != "Internal error" {
			t.Fatalf("%s while the store is down = %+v, want -32603 Internal error", call.method, reply)
		}
		waitFor(t, store.failed, "the store's failure")
	}
	g.release <- gateResult{res: TextResult("kept")}
	want := "progress: <nil>; ask: asking the client elicitation/create: the server's task store failed"
	if got := waitFor(t, outcomes, "the handler's progress and question"); got != want {
		t.Fatalf("while the store is down the handler got %q, want %q", got, want)
	}
	// Each failed: progress (Get), the question (Get).
	for range 2 {
		waitFor(t, store.failed, "the store's failure")
	}
	// The end is retried: let it fail twice, then bring the store back.
	for range 2 {
		waitFor(t, store.failed, "an attempt to store the end")
	}
	store.setDown(false)
	rec := e.awaitStatus(id, TaskCompleted)
	if text := textOf(t, rec.Result); text != "kept" {
		t.Fatalf("stored result %q, want kept", text)
	}
}
