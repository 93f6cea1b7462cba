package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"
)

// Tasks: the official io.modelcontextprotocol/tasks extension (SEP-2663). A
// tools/call of a tool that declares task support, from a client that
// declared the extension on that request, may be answered with a
// CreateTaskResult ({resultType: "task", taskId, status, ...}) while its
// handler goes on in the background; the client polls tasks/get (status,
// and the result, the error or the outstanding inputRequests inlined),
// answers questions with tasks/update and cancels with tasks/cancel. Status
// changes also reach 2026 subscriptions/listen streams that named the task
// (notifications/tasks). This file holds the options, the wire shapes and
// the three methods; tasks_run.go runs a call that may become a task, and
// tasks_store.go keeps the tasks.

// TasksExtension is the extension's identifier, the key of
// capabilities.extensions on both sides.
const TasksExtension = "io.modelcontextprotocol/tasks"

// Defaults of TaskOptions.
const (
	DefaultMaxTasks          = 1024
	DefaultMaxTasksPerOwner  = 64
	DefaultMaxTaskBytes      = 64 << 20
	DefaultMaxTaskBytesOwner = 16 << 20
	DefaultTaskTTL           = time.Hour
	DefaultTaskPollInterval  = 500 * time.Millisecond
	DefaultTaskPollBurst     = 20
)

const (
	taskIDRandomBytes     = 16  // 128 bits
	maxTaskIDBytes        = 256 // a longer taskId names no task
	maxTaskModifyAttempts = 64  // of one read-modify-write under contention
	taskTimestampLayout   = "2006-01-02T15:04:05.000Z07:00"
)

// The statusMessages of the tasks that end without their handler's word.
const (
	taskCancelledMessage      = "Cancelled by the client"
	taskResultTooLargeMessage = "The task's result exceeds the server's retention limit"
)

// TaskOptions configure the tasks a Runtime keeps (RuntimeOptions.Tasks). A
// zero value means the default (see Unlimited for the rule every options
// struct follows). The extension is advertised, and its methods served,
// while a registered tool declares task support.
type TaskOptions struct {
	// Store keeps the tasks; nil means an in-memory store bound by the
	// limits below. A shared store enforces its own limits; MaxTasks then
	// still bounds the task handlers running in this process.
	Store TaskStore
	// TaskLimits bound the tasks kept: in all (MaxTasks, default 1024;
	// MaxBytes, default 64 MiB) and per owner (MaxTasksPerOwner, default
	// 64; MaxBytesPerOwner, default 16 MiB), where the owner is the
	// session, or the connection, a task was created on.
	TaskLimits
	// TTL is how long a task is kept from its creation (ttlMs), default
	// one hour: then its work is cancelled and it is forgotten.
	TTL time.Duration
	// PollInterval is the pollIntervalMs suggested to clients, default
	// 500ms. A task answers PollBurst (default 20) tasks/get in a row
	// faster than that; beyond, one per PollInterval, and sooner polls are
	// refused with -32603.
	PollInterval time.Duration
	PollBurst    int
}

// validateTaskOptions checks o and fills in defaults. Its error names the
// first invalid field as TaskOptions.Field.
func validateTaskOptions(o *TaskOptions) error {
	if err := checkOptions(
		o.TaskLimits.normalize("TaskOptions"),
		checkOption("TaskOptions.TTL", o.TTL),
		checkOption("TaskOptions.PollInterval", o.PollInterval),
		checkOption("TaskOptions.PollBurst", o.PollBurst),
	); err != nil {
		return err
	}
	defaultTo(&o.TTL, DefaultTaskTTL)
	defaultTo(&o.PollInterval, DefaultTaskPollInterval)
	defaultTo(&o.PollBurst, DefaultTaskPollBurst)
	return nil
}

// taskManager is a Runtime's tasks: the store and what this process keeps
// beside it. Its fields are set by newTaskManager and read-only afterwards,
// except the counters and the poll limiter, which are safe for concurrent
// use.
type taskManager struct {
	rt     *Runtime // the runtime whose tasks these are
	opts   TaskOptions
	store  TaskStore
	logger *slog.Logger
	now    func() time.Time // time.Now; replaced in tests
	newID  func() string    // newTaskID; replaced in tests
	// announce reports a task's new state to listen streams (Runtime.emit).
	announce func(Change)

	polls   pollLimiter
	running atomic.Int64 // task handlers running in this process
	created atomic.Bool  // a task was created: the methods stay served
}

var _ TaskProvider = TaskOptions{}

// tasksFor makes TaskOptions a TaskProvider: NewRuntime calls it once.
func (o TaskOptions) tasksFor(rt *Runtime) (runtimeTasks, error) {
	m, err := newTaskManager(o, rt.logger, rt.emit)
	if err != nil {
		return nil, err
	}
	m.rt = rt
	return m, nil
}

func (m *taskManager) extensionName() string { return TasksExtension }

func (m *taskManager) serves(method string) bool {
	switch method {
	case methodTasksGet, methodTasksUpdate, methodTasksCancel:
		return true
	}
	return false
}

// listenable returns the tasks of ids that c may see, each once.
func (m *taskManager) listenable(ctx context.Context, c methodCall, ids []string) []string {
	var seen []string
	for _, id := range ids {
		if _, rerr := m.visible(ctx, &c, id); rerr == nil && !slices.Contains(seen, id) {
			seen = append(seen, id)
		}
	}
	return seen
}

// TaskStore returns the store the runtime keeps its tasks in (the one
// TaskOptions named, or the in-memory default), nil when the runtime serves
// no tasks. It is for observing the store (TaskStatusCounter); the runtime
// alone changes its tasks.
func (rt *Runtime) TaskStore() TaskStore {
	if m, ok := rt.tasks.(*taskManager); ok {
		return m.store
	}
	return nil
}

func newTaskManager(opts TaskOptions, logger *slog.Logger, announce func(Change)) (*taskManager, error) {
	if err := validateTaskOptions(&opts); err != nil {
		return nil, err
	}
	store := opts.Store
	if store == nil {
		store = newMemoryTaskStore(opts.TaskLimits)
	}
	m := &taskManager{opts: opts, store: store, logger: logger, now: time.Now, newID: newTaskID, announce: announce}
	m.polls.burst = opts.PollBurst
	if feed, ok := store.(TaskChangeFeed); ok {
		// The runtime has no end: the feed lives as long as the store.
		feed.FollowTaskChanges(m.announceState)
	}
	return m, nil
}

// newTaskID returns 128 random bits in hex: the ID is the capability to
// reach a task wherever no owner scopes it.
func newTaskID() string {
	b := make([]byte, taskIDRandomBytes)
	rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// taskOwner decides who owns a task: a task created by request c is owned
// by taskOwner(ctx, c), and request c may see task T (get, update, cancel,
// listen to it) only when T.Owner == taskOwner(ctx, c). That is the
// principal the request was authorized as, when authorization is on (in
// either era, whatever session or connection it arrives on); else the
// connection or HTTP session the request arrived on; a 2026-07-28 request
// over HTTP without authorization belongs to no one and gets "", so its
// tasks are reached by their unguessable ID alone.
func taskOwner(ctx context.Context, c *methodCall) string {
	if p := principalBinding(PrincipalFromContext(ctx)); p != "" {
		return "principal:" + p
	}
	if c.req.SessionID != "" {
		return "session:" + c.req.SessionID
	}
	return ""
}

// tasksDeclared reports whether request c declared the tasks extension.
func tasksDeclared(c *methodCall) bool { return declaresExtension(c, TasksExtension) }

// errTasksNotDeclared is the -32021 for a request that needs the extension
// and did not declare it.
func errTasksNotDeclared() *RPCError { return extensionNotDeclared(TasksExtension) }

func errTaskNotFound() *RPCError { return invalidParams("Task not found") }

// taskCapacityError is the -32603 refusing a task (or a change of one) that
// would pass a limit of the store; err says which.
func taskCapacityError(err error) *RPCError {
	msg := "Server task capacity exhausted"
	if lerr, ok := errors.AsType[*TaskLimitError](err); ok {
		msg += ": " + lerr.Detail
	}
	return &RPCError{Code: CodeInternalError, Message: msg}
}

// taskWire is a task as the wire carries it: a CreateTaskResult (resultType
// "task"), a tasks/get result (resultType "complete", with result, error or
// inputRequests inlined) or the params of notifications/tasks (no
// resultType).
type taskWire struct {
	TaskID         string                  `json:"taskId"`
	Status         string                  `json:"status"`
	StatusMessage  string                  `json:"statusMessage,omitempty"`
	CreatedAt      string                  `json:"createdAt"`
	LastUpdatedAt  string                  `json:"lastUpdatedAt"`
	TTLMs          int64                   `json:"ttlMs"`
	PollIntervalMs int64                   `json:"pollIntervalMs,omitempty"`
	InputRequests  map[string]InputRequest `json:"inputRequests,omitempty"`
	Result         json.RawMessage         `json:"result,omitempty"`
	Error          *RPCError               `json:"error,omitempty"`
	ResultType     string                  `json:"resultType,omitempty"`
	Meta           json.RawMessage         `json:"_meta,omitempty"`
}

// detailed returns rec on the wire, its payload inlined unless bare.
func detailedTask(rec *TaskRecord, bare bool) taskWire {
	w := taskWire{
		TaskID:         rec.ID,
		Status:         rec.Status,
		StatusMessage:  rec.StatusMessage,
		CreatedAt:      rec.CreatedAt.UTC().Format(taskTimestampLayout),
		LastUpdatedAt:  rec.LastUpdatedAt.UTC().Format(taskTimestampLayout),
		TTLMs:          rec.TTL.Milliseconds(),
		PollIntervalMs: rec.PollInterval.Milliseconds(),
	}
	if !bare {
		w.InputRequests, w.Result, w.Error = rec.InputRequests, rec.Result, rec.Error
	}
	return w
}

// taskReply answers c with rec: its CreateTaskResult (resultType "task",
// no payload) or its tasks/get result ("complete").
func (rt *Runtime) taskReply(c *methodCall, rec *TaskRecord, resultType string) Reply {
	w := detailedTask(rec, resultType == resultTypeTask)
	w.ResultType = resultType
	if c.era == eraStateless {
		w.Meta = rt.serverInfoMeta
	}
	return rt.resultReply(c, w)
}

// resultTypeTask is the resultType of a CreateTaskResult.
const resultTypeTask = "task"

// servesTasks reports whether the tasks methods are served: while a tool
// declares task support, and once a task was created.
func (m *taskManager) servesTasks() bool {
	if m.created.Load() {
		return true
	}
	m.rt.mu.RLock()
	defer m.rt.mu.RUnlock()
	return m.rt.cat.taskTools > 0
}

// serve answers tasks/get, tasks/update and tasks/cancel.
func (m *taskManager) serve(ctx context.Context, call methodCall) Reply {
	rt, c := m.rt, &call
	if !m.servesTasks() {
		return Reply{Error: methodNotFound(c.req.Method)}
	}
	if !tasksDeclared(c) {
		return Reply{Error: errTasksNotDeclared()}
	}
	id, ok := decodeString(c.params.get("taskId"))
	if !ok {
		return Reply{Error: invalidParams("Invalid params: " + c.req.Method + " requires a string taskId")}
	}
	var rerr *RPCError
	switch c.req.Method {
	case methodTasksGet:
		var rec *TaskRecord
		if rec, rerr = m.poll(ctx, c, id); rerr == nil {
			return rt.taskReply(c, rec, "complete")
		}
	case methodTasksUpdate:
		var responses map[string]json.RawMessage
		if responses, rerr = inputResponsesParam(c.params.get("inputResponses")); rerr == nil {
			if responses == nil {
				rerr = invalidParams("Invalid params: tasks/update requires an inputResponses object")
			} else {
				rerr = m.respond(ctx, c, id, responses)
			}
		}
	case methodTasksCancel:
		rerr = m.cancelByClient(ctx, c, id)
	}
	if rerr != nil {
		return Reply{Error: rerr}
	}
	return rt.envelopeReply(c, false, nil, func(env resultEnvelope) any {
		env.ResultType = "complete" // in the initialize era too: the extension's acks carry it
		return env
	})
}

// visible returns task id's record when request c may see it; -32602 "Task
// not found" when there is no such task or it belongs to someone else, so
// that the two cannot be told apart.
func (m *taskManager) visible(ctx context.Context, c *methodCall, id string) (*TaskRecord, *RPCError) {
	if len(id) > maxTaskIDBytes {
		return nil, errTaskNotFound()
	}
	rec, err := m.store.Get(ctx, id)
	switch {
	case errors.Is(err, ErrTaskNotFound):
		return nil, errTaskNotFound()
	case err != nil:
		m.logger.Error("reading a task failed", "task", id, "err", err)
		return nil, internalError()
	case rec.Owner != taskOwner(ctx, c):
		return nil, errTaskNotFound()
	}
	return rec, nil
}

// poll answers tasks/get: the record, unless the task is polled faster than
// its rate limit allows.
func (m *taskManager) poll(ctx context.Context, c *methodCall, id string) (*TaskRecord, *RPCError) {
	rec, rerr := m.visible(ctx, c, id)
	if rerr != nil {
		return nil, rerr
	}
	if !m.polls.allow(id, rec.PollInterval, m.now()) {
		return nil, &RPCError{
			Code:    CodeInternalError,
			Message: fmt.Sprintf("Polling too fast: poll this task at most once every %dms", rec.PollInterval.Milliseconds()),
			Data:    map[string]int64{"pollIntervalMs": rec.PollInterval.Milliseconds()},
		}
	}
	return rec, nil
}

// respond delivers a tasks/update's answers: each one for a question the
// task is waiting for moves from its inputRequests to its answers (its
// shape checked against the question's method: -32602 and nothing applied
// when one does not fit); answers for other keys (never asked, answered
// already) are ignored. Once no question is left the task is working again.
func (m *taskManager) respond(ctx context.Context, c *methodCall, id string, responses map[string]json.RawMessage) *RPCError {
	if _, rerr := m.visible(ctx, c, id); rerr != nil {
		return rerr
	}
	_, err := m.modify(ctx, id, func(rec *TaskRecord) error {
		var changed bool
		for key, result := range responses {
			q, ok := rec.InputRequests[key]
			if !ok {
				continue
			}
			if err := checkAnswer(q.Method, result); err != nil {
				return invalidParams(fmt.Sprintf("Invalid inputResponses: %q is not a valid %s result: %v", key, q.Method, err))
			}
			delete(rec.InputRequests, key)
			if rec.Answers == nil {
				rec.Answers = map[string]json.RawMessage{}
			}
			rec.Answers[key], changed = result, true
		}
		if !changed {
			return errUnchanged
		}
		if len(rec.InputRequests) == 0 && rec.Status == TaskInputRequired {
			rec.Status = TaskWorking
		}
		return nil
	})
	return m.changeError(id, err)
}

// cancelByClient answers tasks/cancel: a task still running is cancelled at
// once (its status is cancelled from now on, and its handler's context is
// cancelled through the store's watch); a finished one is left as it is.
func (m *taskManager) cancelByClient(ctx context.Context, c *methodCall, id string) *RPCError {
	if _, rerr := m.visible(ctx, c, id); rerr != nil {
		return rerr
	}
	return m.changeError(id, m.cancel(ctx, id, taskCancelledMessage))
}

// cancel ends task id as cancelled, unless it is over already.
func (m *taskManager) cancel(ctx context.Context, id, message string) error {
	_, err := m.modify(ctx, id, func(rec *TaskRecord) error {
		if isTerminalStatus(rec.Status) {
			return errUnchanged
		}
		rec.Status, rec.StatusMessage = TaskCancelled, message
		rec.InputRequests, rec.Answers = nil, nil
		return nil
	})
	return err
}

// changeError is the JSON-RPC error for a failed change of task id.
func (m *taskManager) changeError(id string, err error) *RPCError {
	var rerr *RPCError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &rerr):
		return rerr
	case errors.Is(err, ErrTaskNotFound):
		return errTaskNotFound()
	case errors.Is(err, ErrTaskLimit):
		return taskCapacityError(err)
	}
	m.logger.Error("changing a task failed", "task", id, "err", err)
	return internalError()
}

// errUnchanged, returned by a modify change function, leaves the record as
// it is.
var errUnchanged = errors.New("task record unchanged")

// modify applies change to task id's record and stores it, reading it again
// and retrying when another change came first. change sees a copy it may
// modify; an error from it is returned as is (errUnchanged: nil, nothing
// stored). A change clients can see (not an answer taken, bytes released)
// sets lastUpdatedAt and is announced to listen streams.
func (m *taskManager) modify(ctx context.Context, id string, change func(*TaskRecord) error) (*TaskRecord, error) {
	for range maxTaskModifyAttempts {
		rec, err := m.store.Get(ctx, id)
		if err != nil {
			return nil, err
		}
		before := rec.seen()
		if err := change(rec); err != nil {
			if errors.Is(err, errUnchanged) {
				return rec, nil
			}
			return nil, err
		}
		seen := rec.seen() != before
		if seen {
			rec.LastUpdatedAt = m.now()
		}
		switch err := m.store.Update(ctx, rec); {
		case errors.Is(err, ErrTaskConflict):
			continue
		case err != nil:
			return nil, err
		}
		rec.Version++
		if seen {
			m.announceState(rec)
		}
		return rec, nil
	}
	return nil, fmt.Errorf("task %s: %d concurrent changes in a row: %w", id, maxTaskModifyAttempts, ErrTaskConflict)
}

// seenState is what clients see of a record, enough to tell whether a
// change (each change does one thing) is one they can see.
type seenState struct {
	status, message   string
	questions, result int
	failed            bool
}

func (r *TaskRecord) seen() seenState {
	return seenState{r.Status, r.StatusMessage, len(r.InputRequests), len(r.Result), r.Error != nil}
}

// announceState tells listen streams about rec's new state.
func (m *taskManager) announceState(rec *TaskRecord) {
	params, err := marshalJSON(detailedTask(rec, false))
	if err != nil {
		m.logger.Error("encoding a task's state failed", "task", rec.ID, "err", err)
		return
	}
	m.announce(Change{Kind: TaskStatus, taskID: rec.ID, taskParams: string(params[:len(params)-1])})
}
