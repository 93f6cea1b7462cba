package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"maps"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// The SQL task store against a real PostgreSQL: MCPSTDIO_TEST_DSN names a
// database the tests may create tables in (.ci/replicas starts a throwaway
// cluster and sets it). Without it the tests skip, unless
// MCPSTDIO_REQUIRE_DSN is set (as CI sets it), when they fail.

// testDSN returns the test database's connection string.
func testDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv("MCPSTDIO_TEST_DSN")
	if dsn == "" {
		if os.Getenv("MCPSTDIO_REQUIRE_DSN") != "" {
			t.Fatal("MCPSTDIO_TEST_DSN is not set, and MCPSTDIO_REQUIRE_DSN says the PostgreSQL tests must run")
		}
		t.Skip("MCPSTDIO_TEST_DSN is not set: no PostgreSQL to test against (.ci/replicas starts one)")
	}
	return dsn
}

// openTestDB opens the test database with a bounded pool.
func openTestDB(t testing.TB) (*sql.DB, *pgx.ConnConfig) {
	t.Helper()
	config, err := pgx.ParseConfig(testDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	db := stdlib.OpenDB(*config)
	db.SetMaxOpenConns(8)
	t.Cleanup(func() { db.Close() })
	return db, config
}

// testTable returns a fresh table name, so that tests share no tasks.
func testTable(t testing.TB) string {
	b := make([]byte, 6)
	rand.Read(b)
	return "t_" + hex.EncodeToString(b)
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// newPGStore opens a store (a replica) on table with clock.
func newPGStore(t testing.TB, db *sql.DB, config *pgx.ConnConfig, table, replica string, limits TaskLimits, clock *fakeClock) *SQLTaskStore {
	t.Helper()
	s, err := newSQLTaskStore(context.Background(), SQLTaskStoreOptions{
		DB: db, Table: table, Limits: limits, Replica: replica, Logger: discardLogger(),
		Lease: 3 * time.Second, PollInterval: 50 * time.Millisecond,
		Notifier: &pgNotifier{config: config, channel: table},
	}, clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

var pgLimits = TaskLimits{MaxTasks: 3, MaxTasksPerOwner: 2, MaxBytes: 100, MaxBytesPerOwner: 60}

func pgRecord(id, owner string, created time.Time) *TaskRecord {
	return &TaskRecord{ID: id, Owner: owner, Status: TaskWorking, CreatedAt: created, LastUpdatedAt: created, TTL: time.Minute, PollInterval: time.Second}
}

// TestSQLStoreCreateGetUpdate: the TaskStore contract on PostgreSQL, with
// two replicas (two stores on one table).
func TestSQLStoreCreateGetUpdate(t *testing.T) {
	ctx := context.Background()
	db, config := openTestDB(t)
	table := testTable(t)
	clock := newFakeClock()
	a := newPGStore(t, db, config, table, "a", pgLimits, clock)
	b := newPGStore(t, db, config, table, "b", pgLimits, clock)
	rec := pgRecord("x", "o1", clock.Now())
	rec.Held = 7
	if err := a.Create(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if err := b.Create(ctx, rec); err == nil || errors.Is(err, ErrTaskLimit) {
		t.Fatalf("a second Create of the same ID = %v, want an ID-in-use error", err)
	}
	got, err := b.Get(ctx, "x")
	if err != nil || got.Version != 1 || got.Owner != "o1" || got.Held != 7 || !got.CreatedAt.Equal(rec.CreatedAt) || got.TTL != time.Minute {
		t.Fatalf("Get via the other replica = %+v, %v; want version 1 of o1 as created", got, err)
	}
	got.Status = TaskInputRequired
	got.InputRequests = map[string]InputRequest{"k": {Method: MethodElicit, Params: json.RawMessage(`{"message":"sure?"}`)}}
	if err := b.Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	again, err := a.Get(ctx, "x")
	if err != nil || again.Version != 2 || again.Status != TaskInputRequired || string(again.InputRequests["k"].Params) != `{"message":"sure?"}` {
		t.Fatalf("after the update: %+v, %v", again, err)
	}
	stale := got.clone()
	stale.Status = TaskCompleted
	if err := a.Update(ctx, stale); !errors.Is(err, ErrTaskConflict) {
		t.Fatalf("Update of version 1 over version 2 = %v, want ErrTaskConflict", err)
	}
	// The end: completed with a result; afterwards the status never changes.
	again.Status, again.InputRequests, again.Result = TaskCompleted, nil, json.RawMessage(`{"content":[]}`)
	if err := a.Update(ctx, again); err != nil {
		t.Fatal(err)
	}
	over, _ := b.Get(ctx, "x")
	over.Status, over.Result = TaskCancelled, nil
	if err := b.Update(ctx, over); !errors.Is(err, errTerminalTask) {
		t.Fatalf("changing a completed task's status = %v, want errTerminalTask", err)
	}
	// What it held it may still give back; the end stays.
	over, _ = b.Get(ctx, "x")
	over.Held, over.StatusMessage = 0, "sneaky"
	if err := b.Update(ctx, over); err != nil {
		t.Fatal(err)
	}
	final, _ := a.Get(ctx, "x")
	if final.Status != TaskCompleted || final.Held != 0 || final.StatusMessage != "" || string(final.Result) != `{"content":[]}` {
		t.Fatalf("the ended task is now %+v, want completed with its result, its bytes released", final)
	}
	if _, err := a.Get(ctx, "nope"); !errors.Is(err, ErrTaskNotFound) {
		t.Fatalf("Get of an unknown task = %v, want ErrTaskNotFound", err)
	}
	missing := pgRecord("nope", "", clock.Now())
	missing.Version = 1
	if err := a.Update(ctx, missing); !errors.Is(err, ErrTaskNotFound) {
		t.Fatalf("Update of an unknown task = %v, want ErrTaskNotFound", err)
	}
}

// TestSQLStoreLimitsAcrossReplicas: the limits count every replica's tasks.
func TestSQLStoreLimitsAcrossReplicas(t *testing.T) {
	ctx := context.Background()
	db, config := openTestDB(t)
	table := testTable(t)
	clock := newFakeClock()
	a := newPGStore(t, db, config, table, "a", pgLimits, clock)
	b := newPGStore(t, db, config, table, "b", pgLimits, clock)
	steps := []struct {
		store *SQLTaskStore
		id    string
		owner string
		held  int64
		want  string // "" or the TaskLimitError detail
	}{
		{a, "1", "o1", 10, ""},
		{b, "2", "o1", 10, ""},
		{b, "3", "o1", 0, "this client holds 2 tasks, its limit"},
		{a, "4", "o2", 70, "this client's tasks would hold more than 60 bytes"},
		{a, "5", "o2", 50, ""},
		{b, "6", "", 0, "the server holds 3 tasks, its limit"},
	}
	for _, st := range steps {
		rec := pgRecord(st.id, st.owner, clock.Now())
		rec.Held = st.held
		err := st.store.Create(ctx, rec)
		var lerr *TaskLimitError
		switch {
		case st.want == "" && err != nil:
			t.Fatalf("Create %s: %v", st.id, err)
		case st.want != "" && (!errors.As(err, &lerr) || lerr.Detail != st.want):
			t.Fatalf("Create %s = %v, want the limit %q", st.id, err, st.want)
		}
	}
	// Growing a record is bound too (o2 holds 50 of 60 bytes).
	rec, _ := b.Get(ctx, "5")
	rec.Result = json.RawMessage(`"` + strings.Repeat("x", 20) + `"`)
	if err := b.Update(ctx, rec); !errors.Is(err, ErrTaskLimit) {
		t.Fatalf("growing past the owner's bytes = %v, want ErrTaskLimit", err)
	}
	// Expired tasks are swept and stop counting.
	clock.advance(time.Minute)
	if _, err := a.Get(ctx, "1"); !errors.Is(err, ErrTaskNotFound) {
		t.Fatalf("Get after the TTL = %v, want ErrTaskNotFound", err)
	}
	if err := a.sweep(ctx); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM `+table).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d rows after the sweep (%v), want the expired tasks deleted", n, err)
	}
	if err := b.Create(ctx, pgRecord("7", "o1", clock.Now())); err != nil {
		t.Fatalf("Create after the sweep: %v", err)
	}
}

// TestSQLStoreConcurrentCreatesCountExactly: replicas creating at once never
// pass a limit together.
func TestSQLStoreConcurrentCreatesCountExactly(t *testing.T) {
	ctx := context.Background()
	db, config := openTestDB(t)
	table := testTable(t)
	limits := TaskLimits{MaxTasks: 1000, MaxTasksPerOwner: 10, MaxBytes: 1 << 20, MaxBytesPerOwner: 1 << 20}
	stores := make([]*SQLTaskStore, 3)
	for i := range stores {
		stores[i] = newPGStore(t, db, config, table, string(rune('a'+i)), limits, newFakeClock())
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	created, refused := 0, 0
	for i := range 30 {
		wg.Go(func() {
			err := stores[i%3].Create(ctx, pgRecord(hex.EncodeToString([]byte{byte(i)}), "one-owner", time.Now()))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				created++
			case errors.Is(err, ErrTaskLimit):
				refused++
			default:
				t.Errorf("Create: %v", err)
			}
		})
	}
	wg.Wait()
	if created != 10 || refused != 20 {
		t.Fatalf("%d created, %d refused; want exactly the owner's 10 created", created, refused)
	}
}

// TestSQLStoreWatchAndFeedAcrossReplicas: a change made through one replica
// signals the other's watch and reaches its change feed, and a replica's
// own changes are not fed back to it.
func TestSQLStoreWatchAndFeedAcrossReplicas(t *testing.T) {
	ctx := context.Background()
	db, config := openTestDB(t)
	table := testTable(t)
	limits := TaskLimits{MaxTasks: 10, MaxTasksPerOwner: 10, MaxBytes: 1 << 20, MaxBytesPerOwner: 1 << 20}
	a := newPGStore(t, db, config, table, "a", limits, newFakeClock())
	b := newPGStore(t, db, config, table, "b", limits, newFakeClock())
	fedA, fedB := make(chan *TaskRecord, 8), make(chan *TaskRecord, 8)
	defer a.FollowTaskChanges(func(r *TaskRecord) { fedA <- r })()
	defer b.FollowTaskChanges(func(r *TaskRecord) { fedB <- r })()
	if err := a.Create(ctx, pgRecord("w", "", time.Now())); err != nil {
		t.Fatal(err)
	}
	changed, stop, err := a.Watch(ctx, "w")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if got := waitFor(t, fedB, "b's feed of a's creation"); got.ID != "w" || got.Version != 1 {
		t.Fatalf("b was fed %+v", got)
	}
	rec, _ := b.Get(ctx, "w")
	rec.Status, rec.StatusMessage = TaskCancelled, "Cancelled by the client"
	if err := b.Update(ctx, rec); err != nil {
		t.Fatal(err)
	}
	waitFor(t, changed, "a's watch of b's cancel")
	if got := waitFor(t, fedA, "a's feed of b's cancel"); got.Status != TaskCancelled || got.Version != 2 {
		t.Fatalf("a was fed %+v", got)
	}
	select {
	case r := <-fedB:
		t.Fatalf("b was fed its own change: %+v", r)
	case r := <-fedA:
		t.Fatalf("a was fed another change: %+v", r)
	default:
	}
}

// TestSQLStoreLeaseExpiry: a replica that stops renewing leaves its running
// tasks, also one waiting for input, failed with a message saying why; a
// replica that renews keeps its task.
func TestSQLStoreLeaseExpiry(t *testing.T) {
	ctx := context.Background()
	db, config := openTestDB(t)
	table := testTable(t)
	limits := TaskLimits{MaxTasks: 10, MaxTasksPerOwner: 10, MaxBytes: 1 << 20, MaxBytesPerOwner: 1 << 20}
	clock := newFakeClock()
	dead := newPGStore(t, db, config, table, "dead-replica", limits, clock)
	alive := newPGStore(t, db, config, table, "alive-replica", limits, clock)
	for _, id := range []string{"running", "asking"} {
		if err := dead.Create(ctx, pgRecord(id, "", clock.Now())); err != nil {
			t.Fatal(err)
		}
	}
	asking, _ := dead.Get(ctx, "asking")
	asking.Status, asking.InputRequests = TaskInputRequired, map[string]InputRequest{"k": {Method: MethodElicit, Params: json.RawMessage(`{}`)}}
	if err := dead.Update(ctx, asking); err != nil {
		t.Fatal(err)
	}
	if err := alive.Create(ctx, pgRecord("kept", "", clock.Now())); err != nil {
		t.Fatal(err)
	}
	_, stop, err := alive.Watch(ctx, "kept")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	dead.Close() // it renews nothing from now on
	clock.advance(2 * time.Second)
	if err := alive.renewLeases(ctx); err != nil {
		t.Fatal(err)
	}
	if err := alive.sweep(ctx); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"running", "asking", "kept"} {
		if rec, _ := alive.Get(ctx, id); rec.Status == TaskFailed {
			t.Fatalf("%s failed before its lease expired", id)
		}
	}
	clock.advance(2 * time.Second) // 4s after the dead replica's last renewal; the lease is 3s
	if err := alive.sweep(ctx); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"running", "asking"} {
		rec, err := alive.Get(ctx, id)
		if err != nil || rec.Status != TaskFailed || rec.Error == nil || rec.Error.Code != CodeInternalError ||
			!strings.Contains(rec.StatusMessage, "(dead-replica) stopped: its lease expired") || rec.InputRequests != nil {
			t.Fatalf("%s after its lease expired: %+v (error %+v), %v; want failed, saying the replica's lease expired", id, rec, rec.Error, err)
		}
	}
	if rec, _ := alive.Get(ctx, "kept"); rec.Status != TaskWorking {
		t.Fatalf("the task of the replica that renews is %s, want working", rec.Status)
	}
}

// TestSQLStoreMigrationConcurrentAndVersioned: replicas starting together
// create the schema once; a schema newer than the build is refused.
func TestSQLStoreMigrationConcurrentAndVersioned(t *testing.T) {
	ctx := context.Background()
	db, _ := openTestDB(t)
	table := testTable(t)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			s, err := NewSQLTaskStore(ctx, SQLTaskStoreOptions{DB: db, Table: table, Logger: discardLogger()})
			if err != nil {
				t.Errorf("NewSQLTaskStore: %v", err)
				return
			}
			s.Close()
		})
	}
	wg.Wait()
	var version int
	if err := db.QueryRowContext(ctx, `SELECT version FROM `+table+`_schema WHERE id = 1`).Scan(&version); err != nil || version != sqlTaskStoreSchemaVersion {
		t.Fatalf("schema version %d (%v), want %d", version, err, sqlTaskStoreSchemaVersion)
	}
	if _, err := db.ExecContext(ctx, `UPDATE `+table+`_schema SET version = 99`); err != nil {
		t.Fatal(err)
	}
	_, err := NewSQLTaskStore(ctx, SQLTaskStoreOptions{DB: db, Table: table, Logger: discardLogger()})
	if err == nil || !strings.Contains(err.Error(), "version 99, newer than this build's 1") {
		t.Fatalf("opening a newer schema = %v, want it refused", err)
	}
}

// TestSQLStoreStatementTimeout: a statement that waits past the timeout (the
// table locked by someone else) fails the call; tasks/get then answers the
// client -32603, and the replica goes on serving.
func TestSQLStoreStatementTimeout(t *testing.T) {
	ctx := context.Background()
	db, config := openTestDB(t)
	table := testTable(t)
	store, err := NewSQLTaskStore(ctx, SQLTaskStoreOptions{DB: db, Table: table, Logger: discardLogger(), StatementTimeout: 2 * time.Second,
		Notifier: &pgNotifier{config: config, channel: table}})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	logs := &lockedBuffer{}
	defer func() {
		if t.Failed() {
			t.Logf("the runtime's log:\n%s", logs.String())
		}
	}()
	rt, err := NewRuntime(RuntimeOptions{ServerInfo: Implementation{Name: "t", Version: "1"}, Logger: slog.New(slog.NewTextHandler(logs, nil)), Tasks: TaskOptions{Store: store}})
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	if err := rt.AddTool(Tool{Name: "job", Execution: &ToolExecution{TaskSupport: TaskOptional}}, func(ctx context.Context, _ *HandlerRequest) (*ToolResult, error) {
		<-release
		return TextResult("done"), nil
	}); err != nil {
		t.Fatal(err)
	}
	id := createTaskViaRuntime(t, rt, "job")
	changed, stopWatch, err := store.Watch(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	defer stopWatch()
	locker, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := locker.ExecContext(ctx, `LOCK TABLE `+table+` IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	reply := rt.Dispatch(ctx, taskRequest(methodTasksGet, `{"taskId":"`+id+`"}`))
	locker.Rollback()
	if reply.Error == nil || reply.Error.Code != CodeInternalError || reply.Error.Message != "Internal error" {
		t.Fatalf("tasks/get while the table is locked = %+v, want -32603 Internal error", reply)
	}
	reply = rt.Dispatch(ctx, taskRequest(methodTasksGet, `{"taskId":"`+id+`"}`))
	if reply.Error != nil || !strings.Contains(string(reply.Result), `"status":"working"`) {
		t.Fatalf("tasks/get once the lock is gone = %+v (%s), want the working task", reply.Error, reply.Result)
	}
	close(release)
	for {
		rec, err := store.Get(ctx, id)
		if err == nil && rec.Status == TaskCompleted && rec.Held == 0 {
			return
		}
		waitFor(t, changed, "the task's end")
	}
}

// taskRequest is a 2026 request declaring the tasks extension.
func taskRequest(method, params string) *Request {
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`
	return &Request{Method: method, ID: json.RawMessage(`1`), Params: json.RawMessage("{" + meta + "," + params[1:])}
}

// createTaskViaRuntime calls tool, which becomes a task at once, and returns
// the task's ID.
func createTaskViaRuntime(t testing.TB, rt *Runtime, tool string) string {
	t.Helper()
	reply := rt.Dispatch(context.Background(), taskRequest("tools/call", `{"name":"`+tool+`","arguments":{}}`))
	var res struct {
		TaskID string `json:"taskId"`
	}
	if reply.Error != nil || json.Unmarshal(reply.Result, &res) != nil || res.TaskID == "" {
		t.Fatalf("tools/call %s = %+v (%s), want a CreateTaskResult", tool, reply.Error, reply.Result)
	}
	return res.TaskID
}

// fakeClock is a settable clock.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Now().Truncate(time.Millisecond)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// waitFor receives from ch, failing the test after a minute.
func waitFor[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(time.Minute):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// lockedBuffer is a log destination safe for concurrent writes.
type lockedBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestSQLStoreCountTasksByStatus: the telemetry gauge's one query counts
// every replica's tasks by status, every status present, expired tasks not
// counted even before the sweeper deleted them.
func TestSQLStoreCountTasksByStatus(t *testing.T) {
	ctx := context.Background()
	db, config := openTestDB(t)
	table := testTable(t)
	clock := newFakeClock()
	a := newPGStore(t, db, config, table, "a", pgLimits, clock)
	b := newPGStore(t, db, config, table, "b", pgLimits, clock)
	short := pgRecord("short", "", clock.Now())
	short.TTL = time.Second
	for _, rec := range []*TaskRecord{pgRecord("w", "", clock.Now()), pgRecord("i", "", clock.Now()), short} {
		if err := a.Create(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	asking, _ := b.Get(ctx, "i")
	asking.Status, asking.InputRequests = TaskInputRequired, map[string]InputRequest{"k": {Method: MethodElicit, Params: json.RawMessage(`{}`)}}
	if err := b.Update(ctx, asking); err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{TaskWorking: 2, TaskInputRequired: 1, TaskCompleted: 0, TaskFailed: 0, TaskCancelled: 0}
	if got, err := b.CountTasksByStatus(ctx); err != nil || !maps.Equal(got, want) {
		t.Fatalf("CountTasksByStatus = %v, %v; want %v", got, err, want)
	}
	clock.advance(2 * time.Second) // short has expired; no sweep has run
	want[TaskWorking] = 1
	if got, err := a.CountTasksByStatus(ctx); err != nil || !maps.Equal(got, want) {
		t.Fatalf("after short expired: CountTasksByStatus = %v, %v; want %v", got, err, want)
	}
}
