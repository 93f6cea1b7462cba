package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"
)

// A tools/call that may become a task (its tool supports tasks and the
// client declared the extension on the request) runs its handler in a
// goroutine of its own, with a context that keeps the request's values but
// not its cancellation. The call starts as an ordinary request: the
// handler's return answers it. It becomes a task at most once, when
// ToolExecution.TaskAfter says (before the handler starts, after a while,
// or when the handler calls StartTask): the task is created in the store,
// the request is answered with the CreateTaskResult, and from then on the
// handler's return is the task's result, its questions are the task's
// inputRequests, and its context ends on tasks/cancel and at the task's
// TTL. A watcher goroutine follows the task's record in the store for the
// handler: cancellation and answers may arrive on any replica.

// The causes of a task handler's cancellation.
var (
	errTaskCancelled = errors.New("the task was cancelled")
	errTaskExpired   = errors.New("the task's TTL passed")
	errTaskAbandoned = errors.New("the request that started the task ended before it was answered")
	errTaskRefused   = errors.New("the server could not keep the task")
	// errTaskEndedElsewhere: the store shows the task over while its
	// handler still runs here.
	errTaskEndedElsewhere = errors.New("the task ended while its handler ran")
)

// runPhase is where a taskRun is.
type runPhase int

const (
	phaseRequest   runPhase = iota // an ordinary request: the handler's return answers it
	phaseTask                      // a task: the handler's return is stored
	phaseAnswered                  // the handler returned as an ordinary request
	phaseAbandoned                 // the request ended (cancelled, timed out) while the handler ran
)

// taskOutcome is what a handler returned.
type taskOutcome struct {
	res *ToolResult
	err error
}

// taskRun is one call that may become a task, from before its handler
// starts until the handler returns. Its handler and the goroutines it
// starts, the request's Dispatch and the watcher use it concurrently: the
// fields below mu are guarded by it, the others are set before the handler
// starts and read-only afterwards.
type taskRun struct {
	rt      *Runtime
	tasks   *taskManager // rt's
	c       *methodCall
	req     *HandlerRequest
	entry   *toolEntry
	reqCtx  context.Context         // the request's context
	ctx     context.Context         // the handler's
	cancel  context.CancelCauseFunc // of ctx
	owner   string
	outcome chan taskOutcome // the handler's return in the request phase, to Dispatch; buffered
	created chan struct{}    // closed when the call became a task
	ended   chan struct{}    // closed when the handler returned

	mu       sync.Mutex
	phase    runPhase
	pinned   bool                       // the handler asked in the request phase: no automatic start
	creating chan struct{}              // while a creation is under way; closed when it ends
	rec      *TaskRecord                // the task as created
	issued   map[string]string          // the methods of the task's questions, by key
	answers  map[string]json.RawMessage // taken from the store, by key
	changed  chan struct{}              // closed and replaced at each change the watcher sees
	requests int                        // Peer.Request questions asked, for their keys
}

// runCall serves the tools/call c of entry, which may become a task,
// with req ready for its handler. It returns the handler's answer, or the
// CreateTaskResult once the call became a task, or an error when it had to
// become one before its handler started and could not.
func (m *taskManager) runCall(ctx context.Context, kept methodCall, entry *toolEntry, req *HandlerRequest) Reply {
	rt, c := m.rt, &kept // the task outlives the request: c is a copy of the request's
	t := &taskRun{
		rt: rt, tasks: m, c: c, req: req, entry: entry, reqCtx: ctx, owner: taskOwner(ctx, c),
		outcome: make(chan taskOutcome, 1), created: make(chan struct{}), ended: make(chan struct{}),
		changed: make(chan struct{}),
	}
	t.ctx, t.cancel = context.WithCancelCause(context.WithoutCancel(ctx))
	req.task = t
	req.peer = &taskPeer{run: t, request: req.peer}
	after := entry.tool.Execution.TaskAfter
	if after == 0 {
		if _, err := t.becomeTask(false); err != nil {
			t.cancel(errTaskRefused)
			return Reply{Error: t.creationError(err)}
		}
		t.start()
		return rt.taskReply(c, t.rec, resultTypeTask)
	}
	t.start()
	var timer <-chan time.Time
	if after > 0 {
		tm := time.NewTimer(after)
		defer tm.Stop()
		timer = tm.C
	}
	for {
		select {
		case out := <-t.outcome:
			return rt.toolCallReply(c, req, out.res, out.err)
		case <-t.created:
			return rt.taskReply(c, t.rec, resultTypeTask)
		case <-timer:
			timer = nil
			if _, err := t.becomeTask(true); err != nil && t.stop(errTaskRefused) != phaseAnswered {
				// The store refused the task: a clear error rather than a
				// request that runs until it times out.
				return Reply{Error: t.creationError(err)}
			}
		case <-ctx.Done():
			t.stop(errTaskAbandoned)
			return Reply{Error: internalError()} // never written: the request is over
		}
	}
}

// start runs the handler in its own goroutine.
func (t *taskRun) start() {
	go func() {
		ctx, span := startLinkedOperation(t.ctx, "task run", t.req.Name)
		res, err := runHandler(t.rt, t.c, t.req.Name, func() (*ToolResult, error) { return t.entry.handler(ctx, t.req) })
		endLinkedOperation(span, res != nil && res.IsError, err)
		t.finish(res, err)
	}()
}

// becomeTask makes the call a task unless it is one already: it creates the
// task in the store (durably, before anyone learns its ID) and starts its
// watcher. It reports whether the call is a task. It does nothing (false,
// nil) once the handler returned or the request ended, and when automatic
// and the handler asked the client in the request phase. A creation that
// failed (the store refused it, say) leaves the call an ordinary request
// and returns why.
func (t *taskRun) becomeTask(automatic bool) (bool, error) {
	t.mu.Lock()
	t.awaitCreation()
	if t.phase == phaseTask {
		t.mu.Unlock()
		return true, nil
	}
	if t.phase != phaseRequest || automatic && t.pinned {
		t.mu.Unlock()
		return false, nil
	}
	done := make(chan struct{})
	t.creating = done
	t.mu.Unlock()

	rec, changed, stop, err := t.tasks.create(t.reqCtx, t)

	t.mu.Lock()
	defer t.mu.Unlock()
	t.creating = nil
	close(done)
	if err != nil {
		return false, err
	}
	t.phase, t.rec = phaseTask, rec
	close(t.created)
	go t.watch(rec, changed, stop)
	return true, nil
}

// awaitCreation waits, with t.mu held (and released meanwhile), until no
// creation is under way.
func (t *taskRun) awaitCreation() {
	for t.creating != nil {
		ch := t.creating
		t.mu.Unlock()
		<-ch
		t.mu.Lock()
	}
}

// creationError is the JSON-RPC error for err, why a creation failed.
func (t *taskRun) creationError(err error) *RPCError {
	if errors.Is(err, ErrTaskLimit) {
		return taskCapacityError(err)
	}
	t.rt.logger.ErrorContext(t.reqCtx, "creating a task failed", "tool", t.req.Name, "err", err)
	return internalError()
}

// finish takes the handler's return: it answers the request in the
// request phase, and is stored as the task's result in the task phase.
func (t *taskRun) finish(res *ToolResult, err error) {
	defer close(t.ended)
	t.mu.Lock()
	t.awaitCreation()
	phase := t.phase
	if phase == phaseRequest {
		t.phase = phaseAnswered
	}
	t.mu.Unlock()
	switch phase {
	case phaseRequest:
		t.outcome <- taskOutcome{res: res, err: err}
	case phaseTask:
		t.tasks.running.Add(-1)
		t.tasks.complete(t, res, err)
	}
	t.cancel(context.Canceled)
}

// abandon gives up the call before its request is answered otherwise (the
// request ended, or the task was refused), and returns the phase it found:
// a handler still running as a request is cancelled with cause; a task
// created too late for its CreateTaskResult to go out (no client knows its
// ID) is cancelled; a handler that returned already is left alone, its
// outcome waiting in t.outcome.
func (t *taskRun) abandon(cause error) runPhase {
	t.mu.Lock()
	t.awaitCreation()
	phase := t.phase
	if phase == phaseRequest {
		t.phase = phaseAbandoned
	}
	t.mu.Unlock()
	switch phase {
	case phaseRequest:
		t.cancel(cause)
	case phaseTask:
		if err := t.tasks.cancel(context.WithoutCancel(t.reqCtx), t.rec.ID, cause.Error()); err != nil && !errors.Is(err, ErrTaskNotFound) {
			t.rt.logger.ErrorContext(t.reqCtx, "cancelling an abandoned task failed", "task", t.rec.ID, "err", err)
		}
	}
	return phase
}

// stop abandons the call (see abandon) and, when its handler was still
// running as a request, waits until it returns: a handler keeps its
// request's place in the executor until then, as any request's does, so
// the executor's limits stay true.
func (t *taskRun) stop(cause error) runPhase {
	phase := t.abandon(cause)
	if phase == phaseRequest {
		<-t.ended
	}
	return phase
}

// isTask reports whether the call is a task (and its handler running).
func (t *taskRun) isTask() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.phase == phaseTask
}

// enterAsk is called before the handler asks the client: it reports whether
// the call is a task, whose inputRequests the question becomes. Otherwise
// the question goes to the client as the request's, and pins the call.
func (t *taskRun) enterAsk() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.awaitCreation()
	if t.phase == phaseTask {
		return true
	}
	t.pinned = true
	return false
}

// watch follows the task's record for its handler until the handler
// returns: it wakes the handler's waiting questions at every change, and
// cancels the handler's context when the task was cancelled, forgotten or
// its TTL passed.
func (t *taskRun) watch(rec *TaskRecord, changed <-chan struct{}, stop func()) {
	defer stop()
	expiry := time.NewTimer(rec.expiresAt().Sub(t.tasks.now()))
	defer expiry.Stop()
	ctx := context.WithoutCancel(t.ctx)
	for {
		select {
		case <-t.ended:
			return
		case <-expiry.C:
			t.cancel(errTaskExpired)
			continue
		case <-changed:
		}
		t.mu.Lock()
		close(t.changed)
		t.changed = make(chan struct{})
		t.mu.Unlock()
		switch cur, err := t.tasks.store.Get(ctx, rec.ID); {
		case errors.Is(err, ErrTaskNotFound):
			t.cancel(errTaskExpired)
		case err == nil && cur.Status == TaskCancelled:
			t.cancel(errTaskCancelled)
		case err == nil && isTerminalStatus(cur.Status):
			// Ended elsewhere: failed by a replica's sweeper after this
			// replica could not renew the lease, say.
			t.cancel(errTaskEndedElsewhere)
		}
	}
}

// ask asks the client method with params under key, as the task's
// question: it is added to the task's inputRequests (status input_required)
// unless it was asked already, and ask waits until tasks/update brings the
// answer, the task ends, or ctx does. A key keeps its answer: asking it
// again returns the same answer, asking it with another method is an error.
func (t *taskRun) ask(ctx context.Context, key, method string, params json.RawMessage) (json.RawMessage, error) {
	if ans, ok := t.req.ask.earlierAnswer(key, method); ok {
		return ans, nil
	}
	t.mu.Lock()
	if asked, ok := t.issued[key]; ok && asked != method {
		t.mu.Unlock()
		return nil, fmt.Errorf("asking the client %s: key %q was asked with %s", method, key, asked)
	}
	first := t.issued[key] == ""
	if first {
		if t.issued == nil {
			t.issued, t.answers = map[string]string{}, map[string]json.RawMessage{}
		}
		t.issued[key] = method
	}
	t.mu.Unlock()
	id := t.rec.ID
	store := t.tasks
	if first {
		_, err := store.modify(ctx, id, func(rec *TaskRecord) error {
			if isTerminalStatus(rec.Status) {
				return errTaskOver
			}
			if rec.InputRequests == nil {
				rec.InputRequests = map[string]InputRequest{}
			}
			rec.InputRequests[key] = InputRequest{Method: method, Params: params}
			rec.Status = TaskInputRequired
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("asking the client %s: %w", method, store.storeFailure(ctx, id, err))
		}
	}
	for {
		t.mu.Lock()
		ans, answered := t.answers[key]
		wake := t.changed
		t.mu.Unlock()
		if answered {
			return ans, nil
		}
		rec, err := store.store.Get(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("asking the client %s: %w", method, store.storeFailure(ctx, id, err))
		}
		if ans, ok := rec.Answers[key]; ok {
			return t.take(ctx, key, ans)
		}
		if isTerminalStatus(rec.Status) {
			return nil, fmt.Errorf("asking the client %s: %w", method, errTaskOver)
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return nil, fmt.Errorf("%s: %w", method, context.Cause(ctx))
		}
	}
}

// errTaskOver: the task ended (cancelled, say) while its handler asked.
var errTaskOver = errors.New("the task is over")

// take keeps the answer to key, found in the task's record, and removes it
// from the record.
func (t *taskRun) take(ctx context.Context, key string, ans json.RawMessage) (json.RawMessage, error) {
	t.mu.Lock()
	t.answers[key] = ans
	t.mu.Unlock()
	_, err := t.tasks.modify(ctx, t.rec.ID, func(rec *TaskRecord) error {
		if _, ok := rec.Answers[key]; !ok {
			return errUnchanged
		}
		delete(rec.Answers, key)
		return nil
	})
	if err != nil && !errors.Is(err, ErrTaskNotFound) {
		t.rt.logger.ErrorContext(ctx, "removing a taken answer from a task failed", "task", t.rec.ID, "err", err)
	}
	return ans, nil
}

// setStatusMessage records a handler's progress message as the task's
// statusMessage. It is best effort: a store that fails (a database that is
// down) loses the message, logged, and the handler goes on; its error never
// reaches the handler, which might return it as its result.
func (t *taskRun) setStatusMessage(ctx context.Context, message string) error {
	if message == "" {
		return nil
	}
	_, err := t.tasks.modify(ctx, t.rec.ID, func(rec *TaskRecord) error {
		if isTerminalStatus(rec.Status) || rec.StatusMessage == message {
			return errUnchanged
		}
		rec.StatusMessage = message
		return nil
	})
	if err != nil && ctx.Err() == nil {
		t.rt.logger.WarnContext(ctx, "recording a task's progress message failed", "task", t.rec.ID, "err", err)
	}
	return nil
}

// taskPeer is the Peer of a handler whose call may become a task: the
// request's Peer while it is an ordinary request; once it is a task, a
// server-to-client request becomes one of the task's questions (keyed
// "request-1", "request-2", ...) and notifications go nowhere (there is no
// request left to carry them; ReportProgress sets the statusMessage).
type taskPeer struct {
	run     *taskRun
	request Peer // nil when there is no client
}

func (p *taskPeer) Notify(ctx context.Context, method string, params json.RawMessage) error {
	if p.run.isTask() {
		return nil
	}
	if p.request == nil {
		return ErrNoClient
	}
	return p.request.Notify(ctx, method, params)
}

func (p *taskPeer) Request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	if !p.run.enterAsk() {
		if p.request == nil {
			return nil, ErrNoClient
		}
		return p.request.Request(ctx, method, params)
	}
	capability, ok := askCapability(method)
	if !ok {
		return nil, fmt.Errorf("a task asks the client only %s, %s or %s, not %s", MethodCreateMessage, MethodElicit, MethodListRoots, method)
	}
	if err := p.run.req.RequireClientCapability(capability); err != nil {
		return nil, err
	}
	if len(params) == 0 {
		params = json.RawMessage(`{}`)
	}
	return p.run.ask(ctx, p.run.nextRequestKey(), method, params)
}

// nextRequestKey returns a key for a Peer.Request question that no question
// of the task used.
func (t *taskRun) nextRequestKey() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	for {
		t.requests++
		key := "request-" + strconv.Itoa(t.requests)
		if _, used := t.issued[key]; !used {
			return key
		}
	}
}

// StartTask makes the call a task now, if it may become one: the tool
// supports tasks, the client declared the extension on this request, and
// the call is not a task yet. The request is then answered with the
// CreateTaskResult and the handler goes on as the task, with the same
// context (which from then on ends on tasks/cancel and at the task's TTL,
// not with the request). StartTask reports whether the call is a task; it
// is false for any other call, and when the task could not be created (a
// limit), in which case the handler goes on as an ordinary request. It
// blocks until the task is stored.
func (r *HandlerRequest) StartTask() bool {
	t, isRun := r.task.(*taskRun)
	if !isRun {
		return false
	}
	ok, _ := t.becomeTask(false)
	return ok
}

// ---- the task manager's side ----

// create stores the task of run t, working, and watches it. It refuses a
// task beyond MaxTasks handlers running in this process, and whatever the
// store refuses.
func (m *taskManager) create(ctx context.Context, t *taskRun) (*TaskRecord, <-chan struct{}, func(), error) {
	if m.running.Add(1) > int64(m.opts.MaxTasks) {
		m.running.Add(-1)
		return nil, nil, nil, &TaskLimitError{Detail: fmt.Sprintf("%d tasks are running, the limit", m.opts.MaxTasks)}
	}
	now := m.now()
	rec := &TaskRecord{
		ID: m.newID(), Owner: t.owner, Status: TaskWorking, CreatedAt: now, LastUpdatedAt: now,
		TTL: m.opts.TTL, PollInterval: m.opts.PollInterval, Held: int64(len(t.c.req.Params)),
	}
	err := m.store.Create(ctx, rec)
	var changed <-chan struct{}
	var stop func()
	if err == nil {
		if changed, stop, err = m.store.Watch(ctx, rec.ID); err != nil {
			m.cancel(context.WithoutCancel(ctx), rec.ID, "The server could not follow the task")
		}
	}
	if err != nil {
		m.running.Add(-1)
		return nil, nil, nil, err
	}
	rec.Version = 1
	m.created.Store(true)
	return rec, changed, stop, nil
}

// complete stores the handler's return as the task's end: completed with
// the tool's result (isError included), or failed with the JSON-RPC error
// it returned (-32603 for a panic). A task that ended before (cancelled,
// say) keeps its end; the bytes the running task held are released either
// way. A result too big for the store's limits fails the task instead.
func (m *taskManager) complete(t *taskRun, res *ToolResult, err error) {
	ctx := context.WithoutCancel(t.reqCtx)
	status, result, rerr := TaskCompleted, json.RawMessage(nil), (*RPCError)(nil)
	switch {
	case err == nil:
		result, rerr = t.rt.taskResult(t.c, res)
	case errors.As(err, &rerr):
	default:
		if _, panicked := errors.AsType[*panicError](err); panicked {
			rerr = internalError()
		} else {
			result, rerr = t.rt.taskResult(t.c, &ToolResult{Content: []Content{TextContent(err.Error())}, IsError: true})
		}
	}
	message := ""
	if rerr != nil {
		status, result, message = TaskFailed, nil, rerr.Message
	}
	end := func(status, message string, result json.RawMessage, rerr *RPCError) error {
		_, err := m.modify(ctx, t.rec.ID, func(rec *TaskRecord) error {
			if isTerminalStatus(rec.Status) {
				if rec.Held == 0 {
					return errUnchanged
				}
				rec.Held = 0
				return nil
			}
			rec.Status, rec.StatusMessage, rec.Result, rec.Error = status, message, result, rerr
			rec.InputRequests, rec.Answers, rec.Held = nil, nil, 0
			return nil
		})
		return err
	}
	err = m.retryEnd(t, func() error { return end(status, message, result, rerr) })
	if errors.Is(err, ErrTaskLimit) {
		failure := &RPCError{Code: CodeInternalError, Message: taskResultTooLargeMessage}
		err = m.retryEnd(t, func() error { return end(TaskFailed, failure.Message, nil, failure) })
	}
	if err != nil && !errors.Is(err, ErrTaskNotFound) {
		m.logger.ErrorContext(ctx, "storing a task's end failed", "task", t.rec.ID, "err", err)
	}
}

// keptByTask returns a copy of c for building what the task keeps: its
// Request claims no answer bytes and borrows no frame buffer of the
// transport, whose record of the request (answered with the task, or about
// to be) belongs to the request's owner.
func (c *methodCall) keptByTask() *methodCall {
	req := *c.req
	req.answers, req.frameSpace = nil, nil
	kept := *c
	kept.req = &req
	return &kept
}

// taskResult encodes res as the complete result a task keeps for c's
// tools/call: what the call would have answered, with resultType "complete"
// in both eras (the extension's clients check it), or the -32603 error an
// unencodable result is answered with.
func (rt *Runtime) taskResult(c *methodCall, res *ToolResult) (json.RawMessage, *RPCError) {
	if c.era == eraStateless {
		reply := rt.toolResultReply(c.keptByTask(), res)
		return reply.Result, reply.Error
	}
	if res == nil {
		res = &ToolResult{}
	}
	content := res.Content
	if content == nil {
		content = []Content{}
	}
	if len(res.Meta) > 0 && !isJSONObject(res.Meta) {
		rt.logger.ErrorContext(c.ctx, "building a result failed", "method", c.req.Method, "err", "result _meta is not a JSON object")
		return nil, internalError()
	}
	reply := rt.resultReply(c, callToolResult{Content: content, StructuredContent: res.StructuredContent, IsError: res.IsError,
		resultEnvelope: resultEnvelope{ResultType: "complete", Meta: res.Meta}})
	return reply.Result, reply.Error
}
