package main

import (
	"container/heap"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"
)

// Task statuses (the tasks extension's TaskStatus).
const (
	TaskWorking       = "working"
	TaskInputRequired = "input_required"
	TaskCompleted     = "completed"
	TaskFailed        = "failed"
	TaskCancelled     = "cancelled"
)

// isTerminalStatus reports whether a task in status s is over: completed,
// failed or cancelled. A terminal task never changes again.
func isTerminalStatus(s string) bool {
	return s == TaskCompleted || s == TaskFailed || s == TaskCancelled
}

// TaskRecord is the stored state of one task: what tasks/get shows, who may
// see it, and the client's answers on their way to its handler. A store
// hands out copies; the byte slices of a record are never modified in place
// (a change replaces them), so copies may share them.
type TaskRecord struct {
	ID string
	// Owner is who may see the task (the connection or session that
	// created it, or with authorization its principal): "" means anyone
	// who knows its ID.
	Owner         string
	Status        string // TaskWorking, TaskInputRequired or a terminal status
	StatusMessage string
	CreatedAt     time.Time
	LastUpdatedAt time.Time
	// TTL counts from CreatedAt; once it has passed the store forgets the
	// task, and the task's work is cancelled. It is > 0.
	TTL          time.Duration
	PollInterval time.Duration
	// InputRequests are the questions the task's handler is waiting for
	// (status TaskInputRequired), by key.
	InputRequests map[string]InputRequest
	// Answers are the client's results for questions it answered with
	// tasks/update that the handler has not taken yet, by key.
	Answers map[string]json.RawMessage
	// Result is the complete result (TaskCompleted), Error the JSON-RPC
	// error (TaskFailed).
	Result json.RawMessage
	Error  *RPCError
	// Held counts bytes the task holds outside the record while it runs
	// (its request's params); they count against the limits with the
	// record's own bytes.
	Held int64
	// Version counts the changes of the record: Create stores version 1,
	// and each Update must name the version it changes.
	Version uint64
}

// clone returns a copy of r that shares no map with it.
func (r *TaskRecord) clone() *TaskRecord {
	c := *r
	c.InputRequests = maps.Clone(r.InputRequests)
	c.Answers = maps.Clone(r.Answers)
	return &c
}

// size is what r counts against the byte limits: its payloads and what its
// task holds, not the fixed cost of a record (MaxTasks bounds that).
func (r *TaskRecord) size() int64 {
	n := r.Held + int64(len(r.StatusMessage)) + int64(len(r.Result))
	for key, q := range r.InputRequests {
		n += int64(len(key) + len(q.Method) + len(q.Params))
	}
	for key, a := range r.Answers {
		n += int64(len(key) + len(a))
	}
	if r.Error != nil {
		n += int64(len(r.Error.Message))
		if data, err := marshalJSON(r.Error.Data); err == nil && r.Error.Data != nil {
			n += int64(len(data))
		}
	}
	return n
}

// expiresAt is when the store forgets r.
func (r *TaskRecord) expiresAt() time.Time { return r.CreatedAt.Add(r.TTL) }

// Errors of a TaskStore. Stores return them, or errors wrapping them.
var (
	// ErrTaskNotFound: no task has that ID (never created, or forgotten
	// after its TTL).
	ErrTaskNotFound = errors.New("task not found")
	// ErrTaskConflict: Update named a version that is no longer the
	// stored one; read the record again and retry.
	ErrTaskConflict = errors.New("task record changed concurrently")
	// ErrTaskLimit: storing the record would pass one of the store's
	// limits (a *TaskLimitError says which). Nothing was stored.
	ErrTaskLimit = errors.New("task limit reached")
)

// TaskLimitError is the error of a store refusing a task, or a bigger
// record, beyond one of its limits. It matches ErrTaskLimit (errors.Is).
type TaskLimitError struct {
	// Detail names the limit, for the client to read, such as "this client
	// holds 64 tasks, its limit".
	Detail string
}

func (e *TaskLimitError) Error() string        { return "task limit reached: " + e.Detail }
func (e *TaskLimitError) Is(target error) bool { return target == ErrTaskLimit }

// TaskStore keeps tasks for the Runtime (RuntimeOptions.Tasks.Store). The
// in-memory store (NewMemoryTaskStore) is the default; a store shared by
// several replicas of a server (a database, say) implements the same
// contract, which is what lets any replica answer for any task:
//
//   - Create is durable: once it returns nil, Get for the record's ID on any
//     replica sharing the store finds it. The runtime answers a tools/call
//     with its CreateTaskResult only after Create returned, so a client's
//     first tasks/get never races the creation.
//   - Get returns the latest stored state, so any replica answers tasks/get
//     from the store alone; the replica running a task keeps nothing the
//     store does not show.
//   - Update is a compare-and-swap on Version. Every change is an Update:
//     the running replica's transitions (input_required, working, the
//     result), a tasks/update's answers and a tasks/cancel, from whichever
//     replica received them.
//   - Watch tells the replica that runs a task about changes other requests
//     made, so a cancel or an answer received by any replica reaches the
//     running handler through the store.
//   - The store enforces the limits (tasks and bytes, in all and per owner)
//     at Create and Update, since only it sees every replica's tasks, and it
//     forgets a task once its TTL has passed (Get then says ErrTaskNotFound).
//
// Implementations are safe for concurrent use. Records passed in and handed
// out are copies: the caller may keep and modify them.
type TaskStore interface {
	// Create stores rec, a new task, as version 1. It fails with
	// ErrTaskLimit when the store would pass a limit, and with an error for
	// an ID already in use.
	Create(ctx context.Context, rec *TaskRecord) error
	// Get returns the task's current record, or ErrTaskNotFound.
	Get(ctx context.Context, id string) (*TaskRecord, error)
	// Update replaces the task's record with rec when the stored record is
	// still version rec.Version, and stores it as version rec.Version+1.
	// It fails with ErrTaskConflict when the stored version differs,
	// ErrTaskNotFound when the task is gone, and ErrTaskLimit when the
	// bigger record would pass a byte limit (nothing changes then).
	Update(ctx context.Context, rec *TaskRecord) error
	// Watch returns a channel that receives a value after each later
	// change of the task's record and when the task is forgotten; values
	// coalesce (the channel holds one). stop releases the watch and must be
	// called once; the channel is never closed.
	Watch(ctx context.Context, id string) (changed <-chan struct{}, stop func(), err error)
}

// TaskChangeFeed is implemented by a TaskStore that several processes
// share and that can report the changes the others made (SQLTaskStore). The
// Runtime follows it for its whole life, so that a task's status change made
// on any replica reaches the listen streams (notifications/tasks) of every
// replica; its own changes it announces itself, so a feed reports only the
// other processes' changes (and those the store made on its own, such as a
// task failed after its runner's lease expired).
type TaskChangeFeed interface {
	// FollowTaskChanges calls changed with the new record of each such
	// change, in order, until stop is called. changed must not block.
	FollowTaskChanges(changed func(*TaskRecord)) (stop func())
}

// TaskStatusCounter is implemented by a TaskStore that can count the tasks
// it holds by status (both stores of this package do): what an operator's
// "tasks by status" gauge reads, at each scrape or export, never on a
// request's path. CountTasksByStatus returns the number of tasks not yet
// forgotten for each status (every status of the extension is present, 0
// when no task has it); it returns when ctx ends at the latest, with ctx's
// error.
type TaskStatusCounter interface {
	CountTasksByStatus(ctx context.Context) (map[string]int64, error)
}

// newTaskStatusCounts returns the counts of CountTasksByStatus before any
// task is counted: every status, 0.
func newTaskStatusCounts() map[string]int64 {
	return map[string]int64{TaskWorking: 0, TaskInputRequired: 0, TaskCompleted: 0, TaskFailed: 0, TaskCancelled: 0}
}

// TaskLimits bound what a store holds; a zero limit means its default (see
// TaskOptions). Each is > 0 once NewRuntime has filled in the defaults. An
// owner "" (a task anyone with its ID may see) is bound only by the limits
// in all.
type TaskLimits struct {
	// MaxTasks is how many tasks the store holds at once, running or
	// finished and not yet forgotten.
	MaxTasks int
	// MaxTasksPerOwner is how many of them one owner holds.
	MaxTasksPerOwner int
	// MaxBytes and MaxBytesPerOwner bound the bytes of results, errors,
	// questions, answers and running tasks' requests the store holds, in
	// all and per owner.
	MaxBytes         int64
	MaxBytesPerOwner int64
}

// normalize checks l, the TaskLimits of the struct of (TaskOptions, or
// SQLTaskStoreOptions.Limits), and fills in the defaults.
func (l *TaskLimits) normalize(of string) error {
	if err := checkOptions(
		checkOption(of+".MaxTasks", l.MaxTasks),
		checkOption(of+".MaxTasksPerOwner", l.MaxTasksPerOwner),
		checkOption(of+".MaxBytes", l.MaxBytes),
		checkOption(of+".MaxBytesPerOwner", l.MaxBytesPerOwner),
	); err != nil {
		return err
	}
	defaultTo(&l.MaxTasks, DefaultMaxTasks)
	defaultTo(&l.MaxTasksPerOwner, DefaultMaxTasksPerOwner)
	defaultTo(&l.MaxBytes, DefaultMaxTaskBytes)
	defaultTo(&l.MaxBytesPerOwner, DefaultMaxTaskBytesOwner)
	return nil
}

// ---- the in-memory store ----

// memoryTaskStore is the default TaskStore: the tasks of one process, in a
// map guarded by a mutex, forgotten lazily (at the next call of any method)
// once their TTL has passed.
type memoryTaskStore struct {
	limits TaskLimits
	now    func() time.Time // time.Now; replaced in tests

	mu      sync.Mutex
	tasks   map[string]*storedTask
	owners  map[string]*ownerUsage
	usage   ownerUsage // all tasks
	expiry  expiryQueue
	nextKey int // of watchers
}

// storedTask is one task of a memoryTaskStore.
type storedTask struct {
	rec      *TaskRecord
	size     int64
	watchers map[int]chan struct{}
}

type ownerUsage struct {
	tasks int
	bytes int64
}

// NewMemoryTaskStore returns a TaskStore that keeps tasks in this process's
// memory within limits (each must be > 0).
func NewMemoryTaskStore(limits TaskLimits) (TaskStore, error) {
	if limits.MaxTasks <= 0 || limits.MaxTasksPerOwner <= 0 || limits.MaxBytes <= 0 || limits.MaxBytesPerOwner <= 0 {
		return nil, fmt.Errorf("task store limits must all be positive, got %+v", limits)
	}
	return newMemoryTaskStore(limits), nil
}

func newMemoryTaskStore(limits TaskLimits) *memoryTaskStore {
	return &memoryTaskStore{limits: limits, now: time.Now, tasks: map[string]*storedTask{}, owners: map[string]*ownerUsage{}}
}

func (s *memoryTaskStore) Create(_ context.Context, rec *TaskRecord) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire()
	if _, ok := s.tasks[rec.ID]; ok {
		return fmt.Errorf("creating task %s: the ID is in use", rec.ID)
	}
	size := rec.size()
	if err := s.admit(rec.Owner, 1, size); err != nil {
		return err
	}
	st := &storedTask{rec: rec.clone(), size: size}
	st.rec.Version = 1
	s.tasks[rec.ID] = st
	s.account(rec.Owner, 1, size)
	heap.Push(&s.expiry, st)
	return nil
}

// CountTasksByStatus implements TaskStatusCounter: one pass over the map,
// under the store's lock, after the expired tasks are forgotten.
func (s *memoryTaskStore) CountTasksByStatus(context.Context) (map[string]int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire()
	counts := newTaskStatusCounts()
	for _, task := range s.tasks {
		counts[task.rec.Status]++
	}
	return counts, nil
}

func (s *memoryTaskStore) Get(_ context.Context, id string) (*TaskRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire()
	st, ok := s.tasks[id]
	if !ok {
		return nil, ErrTaskNotFound
	}
	return st.rec.clone(), nil
}

func (s *memoryTaskStore) Update(_ context.Context, rec *TaskRecord) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire()
	st, ok := s.tasks[rec.ID]
	switch {
	case !ok:
		return ErrTaskNotFound
	case st.rec.Version != rec.Version:
		return ErrTaskConflict
	}
	size := rec.size()
	if grow := size - st.size; grow > 0 {
		if err := s.admit(st.rec.Owner, 0, grow); err != nil {
			return err
		}
	}
	s.account(st.rec.Owner, 0, size-st.size)
	next := rec.clone()
	next.Owner, next.CreatedAt, next.TTL = st.rec.Owner, st.rec.CreatedAt, st.rec.TTL // fixed at creation
	next.Version = rec.Version + 1
	st.rec, st.size = next, size
	st.signal()
	return nil
}

func (s *memoryTaskStore) Watch(_ context.Context, id string) (<-chan struct{}, func(), error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire()
	st, ok := s.tasks[id]
	if !ok {
		return nil, nil, ErrTaskNotFound
	}
	ch := make(chan struct{}, 1)
	key := s.nextKey
	s.nextKey++
	if st.watchers == nil {
		st.watchers = map[int]chan struct{}{}
	}
	st.watchers[key] = ch
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			delete(st.watchers, key)
		})
	}, nil
}

// admit checks that owner may add tasks tasks and bytes bytes; s.mu is held.
func (s *memoryTaskStore) admit(owner string, tasks int, bytes int64) error {
	l := s.limits
	switch {
	case s.usage.tasks+tasks > l.MaxTasks:
		return &TaskLimitError{Detail: fmt.Sprintf("the server holds %d tasks, its limit", l.MaxTasks)}
	case s.usage.bytes+bytes > l.MaxBytes:
		return &TaskLimitError{Detail: fmt.Sprintf("the server's tasks would hold more than %d bytes", l.MaxBytes)}
	}
	if owner == "" {
		return nil
	}
	var u ownerUsage
	if o := s.owners[owner]; o != nil {
		u = *o
	}
	switch {
	case u.tasks+tasks > l.MaxTasksPerOwner:
		return &TaskLimitError{Detail: fmt.Sprintf("this client holds %d tasks, its limit", l.MaxTasksPerOwner)}
	case u.bytes+bytes > l.MaxBytesPerOwner:
		return &TaskLimitError{Detail: fmt.Sprintf("this client's tasks would hold more than %d bytes", l.MaxBytesPerOwner)}
	}
	return nil
}

// account adds tasks and bytes (either may be negative) to the usage of
// owner and of all; s.mu is held.
func (s *memoryTaskStore) account(owner string, tasks int, bytes int64) {
	s.usage.tasks += tasks
	s.usage.bytes += bytes
	if owner == "" {
		return
	}
	o := s.owners[owner]
	if o == nil {
		o = &ownerUsage{}
		s.owners[owner] = o
	}
	o.tasks += tasks
	o.bytes += bytes
	if o.tasks == 0 {
		delete(s.owners, owner)
	}
}

// expire forgets the tasks whose TTL has passed, telling their watchers;
// s.mu is held.
func (s *memoryTaskStore) expire() {
	now := s.now()
	for len(s.expiry) > 0 && !now.Before(s.expiry[0].rec.expiresAt()) {
		st := heap.Pop(&s.expiry).(*storedTask)
		delete(s.tasks, st.rec.ID)
		s.account(st.rec.Owner, -1, -st.size)
		st.signal()
	}
}

// signal tells st's watchers that it changed, without blocking.
func (st *storedTask) signal() {
	for _, ch := range st.watchers {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// expiryQueue is a min-heap of tasks by expiry time.
type expiryQueue []*storedTask

func (q expiryQueue) Len() int           { return len(q) }
func (q expiryQueue) Less(i, j int) bool { return q[i].rec.expiresAt().Before(q[j].rec.expiresAt()) }
func (q expiryQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *expiryQueue) Push(x any)        { *q = append(*q, x.(*storedTask)) }
func (q *expiryQueue) Pop() any {
	old := *q
	st := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	return st
}
