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

// fakeClock is a settable clock for the task manager and its store.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)}
}

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

// testLimits are small store limits for the store tests.
var testLimits = TaskLimits{MaxTasks: 3, MaxTasksPerOwner: 2, MaxBytes: 100, MaxBytesPerOwner: 60}

func newTestStore(t *testing.T, limits TaskLimits) (*memoryTaskStore, *fakeClock) {
	t.Helper()
	s := newMemoryTaskStore(limits)
	clock := newFakeClock()
	s.now = clock.Now
	return s, clock
}

func storeRecord(id, owner string, created time.Time) *TaskRecord {
	return &TaskRecord{ID: id, Owner: owner, Status: TaskWorking, CreatedAt: created, LastUpdatedAt: created, TTL: time.Minute, PollInterval: time.Second}
}

func TestMemoryTaskStoreCreateGetUpdate(t *testing.T) {
	ctx := context.Background()
	s, clock := newTestStore(t, testLimits)
	rec := storeRecord("a", "o1", clock.Now())
	if err := s.Create(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if err := s.Create(ctx, rec); err == nil || errors.Is(err, ErrTaskLimit) {
		t.Fatalf("a second Create of the same ID = %v, want an ID-in-use error", err)
	}
	got, err := s.Get(ctx, "a")
	if err != nil || got.Version != 1 || got.Owner != "o1" {
		t.Fatalf("Get = %+v, %v; want version 1 of o1", got, err)
	}
	got.Status, got.InputRequests = TaskInputRequired, map[string]InputRequest{"k": {Method: MethodElicit, Params: json.RawMessage(`{}`)}}
	if err := s.Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	// The caller's copy is its own: changing it changes nothing stored.
	got.InputRequests["other"] = InputRequest{}
	again, _ := s.Get(ctx, "a")
	if again.Version != 2 || again.Status != TaskInputRequired || len(again.InputRequests) != 1 {
		t.Fatalf("after Update: %+v", again)
	}
	// An update of an old version conflicts and changes nothing.
	stale := got.clone()
	stale.Status = TaskCompleted
	if err := s.Update(ctx, stale); !errors.Is(err, ErrTaskConflict) {
		t.Fatalf("Update of version 1 over version 2 = %v, want ErrTaskConflict", err)
	}
	// Owner, CreatedAt and TTL are fixed at creation.
	again.Owner, again.TTL = "thief", time.Hour
	if err := s.Update(ctx, again); err != nil {
		t.Fatal(err)
	}
	if fixed, _ := s.Get(ctx, "a"); fixed.Owner != "o1" || fixed.TTL != time.Minute || fixed.Version != 3 {
		t.Fatalf("after an Update changing fixed fields: %+v", fixed)
	}
	if _, err := s.Get(ctx, "nope"); !errors.Is(err, ErrTaskNotFound) {
		t.Fatalf("Get of an unknown ID = %v", err)
	}
	if err := s.Update(ctx, storeRecord("nope", "", clock.Now())); !errors.Is(err, ErrTaskNotFound) {
		t.Fatalf("Update of an unknown ID = %v", err)
	}
}

func TestMemoryTaskStoreLimits(t *testing.T) {
	ctx := context.Background()
	payload := func(n int) json.RawMessage { return json.RawMessage(`"` + strings.Repeat("x", n-2) + `"`) }
	tests := []struct {
		name    string
		setup   []*TaskRecord // created first, all must fit
		create  *TaskRecord
		wantErr string // "" means it fits
	}{
		{"per owner tasks", []*TaskRecord{{ID: "1", Owner: "o"}, {ID: "2", Owner: "o"}}, &TaskRecord{ID: "3", Owner: "o"}, "this client holds 2 tasks, its limit"},
		{"another owner fits", []*TaskRecord{{ID: "1", Owner: "o"}, {ID: "2", Owner: "o"}}, &TaskRecord{ID: "3", Owner: "p"}, ""},
		{"all tasks", []*TaskRecord{{ID: "1", Owner: "o"}, {ID: "2", Owner: "p"}, {ID: "3"}}, &TaskRecord{ID: "4", Owner: "q"}, "the server holds 3 tasks, its limit"},
		{"no owner: only the limits in all", []*TaskRecord{{ID: "1"}, {ID: "2"}}, &TaskRecord{ID: "3"}, ""},
		{"per owner bytes", []*TaskRecord{{ID: "1", Owner: "o", Held: 50}}, &TaskRecord{ID: "2", Owner: "o", Held: 11}, "this client's tasks would hold more than 60 bytes"},
		{"all bytes", []*TaskRecord{{ID: "1", Owner: "o", Held: 60}, {ID: "2", Held: 30}}, &TaskRecord{ID: "3", Owner: "p", Result: payload(11)}, "the server's tasks would hold more than 100 bytes"},
		{"exactly at the limits", []*TaskRecord{{ID: "1", Owner: "o", Held: 40}}, &TaskRecord{ID: "2", Owner: "o", Result: payload(20)}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, clock := newTestStore(t, testLimits)
			for _, rec := range append(tc.setup, tc.create) {
				rec.Status, rec.CreatedAt, rec.TTL = TaskWorking, clock.Now(), time.Minute
			}
			for _, rec := range tc.setup {
				if err := s.Create(ctx, rec); err != nil {
					t.Fatalf("setup %s: %v", rec.ID, err)
				}
			}
			err := s.Create(ctx, tc.create)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Create = %v, want it to fit", err)
			case tc.wantErr != "":
				var lerr *TaskLimitError
				if !errors.As(err, &lerr) || !errors.Is(err, ErrTaskLimit) || lerr.Detail != tc.wantErr {
					t.Fatalf("Create = %v, want a TaskLimitError %q", err, tc.wantErr)
				}
				if _, err := s.Get(ctx, tc.create.ID); !errors.Is(err, ErrTaskNotFound) {
					t.Fatalf("a refused task was stored")
				}
			}
		})
	}
}

func TestMemoryTaskStoreUpdateBeyondBytes(t *testing.T) {
	ctx := context.Background()
	s, clock := newTestStore(t, testLimits)
	rec := storeRecord("a", "o", clock.Now())
	rec.Held = 40
	if err := s.Create(ctx, rec); err != nil {
		t.Fatal(err)
	}
	got, _ := s.Get(ctx, "a")
	got.Result = json.RawMessage(`"` + strings.Repeat("r", 30) + `"`) // 40+32 > 60 per owner
	if err := s.Update(ctx, got); !errors.Is(err, ErrTaskLimit) {
		t.Fatalf("a growing Update beyond the owner's bytes = %v, want ErrTaskLimit", err)
	}
	got.Held = 0 // the running task's bytes released: now it fits
	if err := s.Update(ctx, got); err != nil {
		t.Fatalf("the same result without the held bytes: %v", err)
	}
	if s.usage.bytes != 32 || s.owners["o"].bytes != 32 {
		t.Fatalf("usage %+v, owner %+v; want 32 bytes each", s.usage, *s.owners["o"])
	}
}

func TestMemoryTaskStoreExpiry(t *testing.T) {
	ctx := context.Background()
	s, clock := newTestStore(t, testLimits)
	early := storeRecord("early", "o", clock.Now())
	early.TTL = 10 * time.Second
	late := storeRecord("late", "o", clock.Now())
	late.Held = 10
	for _, rec := range []*TaskRecord{late, early} {
		if err := s.Create(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	changed, stop, err := s.Watch(ctx, "early")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	clock.advance(10*time.Second - time.Nanosecond)
	if _, err := s.Get(ctx, "early"); err != nil {
		t.Fatalf("just before its TTL: %v", err)
	}
	clock.advance(time.Nanosecond)
	if _, err := s.Get(ctx, "early"); !errors.Is(err, ErrTaskNotFound) {
		t.Fatalf("at its TTL: %v, want ErrTaskNotFound", err)
	}
	select {
	case <-changed:
	default:
		t.Fatal("the watcher of a forgotten task was not told")
	}
	if _, err := s.Get(ctx, "late"); err != nil {
		t.Fatalf("the later task: %v", err)
	}
	// Forgetting releases the task's share of the limits.
	if s.usage.tasks != 1 || s.owners["o"].tasks != 1 || s.usage.bytes != 10 {
		t.Fatalf("usage after expiry %+v, owner %+v", s.usage, *s.owners["o"])
	}
	clock.advance(time.Minute)
	if _, err := s.Get(ctx, "late"); !errors.Is(err, ErrTaskNotFound) || len(s.owners) != 0 || s.usage != (ownerUsage{}) {
		t.Fatalf("all expired: err %v, owners %v, usage %+v", err, s.owners, s.usage)
	}
	if _, _, err := s.Watch(ctx, "late"); !errors.Is(err, ErrTaskNotFound) {
		t.Fatalf("Watch of a forgotten task = %v", err)
	}
}

func TestMemoryTaskStoreWatch(t *testing.T) {
	ctx := context.Background()
	s, clock := newTestStore(t, testLimits)
	if err := s.Create(ctx, storeRecord("a", "", clock.Now())); err != nil {
		t.Fatal(err)
	}
	changed, stop, err := s.Watch(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	other, stopOther, _ := s.Watch(ctx, "a")
	for range 3 { // values coalesce: three updates, one value
		rec, _ := s.Get(ctx, "a")
		rec.StatusMessage += "."
		if err := s.Update(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, changed, "the first watch")
	waitFor(t, other, "the second watch")
	select {
	case <-changed:
		t.Fatal("three updates gave more than one value")
	default:
	}
	stop()
	stop() // idempotent
	rec, _ := s.Get(ctx, "a")
	if err := s.Update(ctx, rec); err != nil {
		t.Fatal(err)
	}
	waitFor(t, other, "the watch still open")
	select {
	case <-changed:
		t.Fatal("a stopped watch was told")
	default:
	}
	stopOther()
}

func TestNewMemoryTaskStoreLimits(t *testing.T) {
	if _, err := NewMemoryTaskStore(TaskLimits{MaxTasks: 1, MaxTasksPerOwner: 1, MaxBytes: 1}); err == nil {
		t.Fatal("a zero MaxBytesPerOwner was accepted")
	}
	if _, err := NewMemoryTaskStore(testLimits); err != nil {
		t.Fatal(err)
	}
}
