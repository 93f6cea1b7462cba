package main

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"strings"
	"testing"
	"time"
)

// TestMemoryTaskStoreCountsByStatus: every status is present, expired tasks
// are not counted.
func TestMemoryTaskStoreCountsByStatus(t *testing.T) {
	ctx := context.Background()
	s := newMemoryTaskStore(TaskLimits{MaxTasks: 10, MaxTasksPerOwner: 10, MaxBytes: 1 << 20, MaxBytesPerOwner: 1 << 20})
	now := time.Unix(1000, 0)
	s.now = func() time.Time { return now }
	for _, tt := range []struct {
		id, status string
		ttl        time.Duration
	}{{"w1", TaskWorking, time.Hour}, {"w2", TaskWorking, time.Hour}, {"f", TaskFailed, time.Hour}, {"gone", TaskCompleted, time.Second}} {
		rec := &TaskRecord{ID: tt.id, Status: TaskWorking, CreatedAt: now, LastUpdatedAt: now, TTL: tt.ttl, PollInterval: time.Second}
		if err := s.Create(ctx, rec); err != nil {
			t.Fatal(err)
		}
		if tt.status != TaskWorking {
			stored, err := s.Get(ctx, tt.id)
			if err != nil {
				t.Fatal(err)
			}
			stored.Status = tt.status
			if err := s.Update(ctx, stored); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := map[string]int64{TaskWorking: 2, TaskInputRequired: 0, TaskCompleted: 1, TaskFailed: 1, TaskCancelled: 0}
	if got, _ := s.CountTasksByStatus(ctx); !maps.Equal(got, want) {
		t.Fatalf("counts %v, want %v", got, want)
	}
	now = now.Add(2 * time.Second)
	want[TaskCompleted] = 0
	if got, _ := s.CountTasksByStatus(ctx); !maps.Equal(got, want) {
		t.Fatalf("after one expired: counts %v, want %v", got, want)
	}
}

// countingStore is a TaskStore of the application's own that can count
// (what SQLTaskStore does with one query).
type countingStore struct {
	TaskStore
	counts map[string]int64
	err    error
}

func (s *countingStore) CountTasksByStatus(ctx context.Context) (map[string]int64, error) {
	if _, ok := ctx.Deadline(); !ok {
		return nil, errors.New("the gauge must bound the count with a deadline")
	}
	return s.counts, s.err
}

// plainStore is a TaskStore that cannot count.
type plainStore struct{ TaskStore }

// The tasks gauge reads any store that implements TaskStatusCounter,
// through Runtime.TaskStore, and reports nothing for a failed reading.
func TestTelemetryTasksGaugeOfAnyStore(t *testing.T) {
	metrics := func(tel *Telemetry) string {
		var b strings.Builder
		tel.metrics.writePrometheus(&b)
		return b.String()
	}
	newRT := func(store TaskStore) *Runtime {
		rt, err := NewRuntime(RuntimeOptions{ServerInfo: Implementation{Name: "t", Version: "1"}, Tasks: TaskOptions{Store: store}})
		if err != nil {
			t.Fatal(err)
		}
		return rt
	}
	newTel := func() *Telemetry {
		return mustTelemetry(t, TelemetryOptions{MetricInterval: time.Hour, Logger: slog.New(slog.DiscardHandler)})
	}
	var _ TaskStatusCounter = (*SQLTaskStore)(nil)
	var _ TaskStatusCounter = (*memoryTaskStore)(nil)

	store := &countingStore{TaskStore: newMemoryTaskStore(TaskLimits{}), counts: map[string]int64{TaskWorking: 3, TaskCompleted: 7}}
	tel := newTel()
	if !tel.ObserveTasks(newRT(store).TaskStore()) {
		t.Fatal("a store with CountTasksByStatus is not observed")
	}
	out := metrics(tel)
	for _, want := range []string{`mcp_server_task_count{mcp_task_status="working"} 3`, `mcp_server_task_count{mcp_task_status="completed"} 7`} {
		if !strings.Contains(out, want) {
			t.Errorf("want %s in:\n%s", want, out)
		}
	}
	store.err = errors.New("database down")
	if out := metrics(tel); strings.Contains(out, "mcp_server_task_count{") {
		t.Errorf("a failed count still reported points:\n%s", out)
	}

	tel = newTel()
	if tel.ObserveTasks(newRT(plainStore{newMemoryTaskStore(TaskLimits{})}).TaskStore()) {
		t.Error("a store that cannot count is observed")
	}
	rt, err := NewRuntime(RuntimeOptions{ServerInfo: Implementation{Name: "t", Version: "1"}})
	if err != nil {
		t.Fatal(err)
	}
	if rt.TaskStore() != nil || tel.ObserveTasks(rt.TaskStore()) {
		t.Error("a runtime without tasks has a store to observe")
	}
	if out := metrics(tel); strings.Contains(out, "mcp_server_task_count") {
		t.Errorf("a gauge without a store:\n%s", out)
	}
	// The runtime's own default store counts too.
	tel = newTel()
	if !tel.ObserveTasks(newRT(nil).TaskStore()) {
		t.Fatal("the in-memory store is not observed")
	}
	if out := metrics(tel); !strings.Contains(out, `mcp_server_task_count{mcp_task_status="working"} 0`) {
		t.Errorf("want every status, 0, in:\n%s", out)
	}
}

// stdio's open subscriptions/listen streams are in the listen streams gauge.
func TestTelemetryStdioListenStreamsGauge(t *testing.T) {
	tel := mustTelemetry(t, TelemetryOptions{MetricInterval: time.Hour, Logger: slog.New(slog.DiscardHandler)})
	tr, client, err := NewMemoryTransport(telemetryRuntime(t, nil), Options{Observer: tel})
	if err != nil {
		t.Fatal(err)
	}
	tel.ObserveTransport(tr)
	served := make(chan error, 1)
	go func() { served <- tr.Serve(context.Background()) }()
	defer func() { client.Close(); <-served }()
	gauge := func() string {
		var b strings.Builder
		tel.metrics.writePrometheus(&b)
		for line := range strings.Lines(b.String()) {
			if strings.HasPrefix(line, "mcp_server_listen_streams ") {
				return strings.TrimSpace(line)
			}
		}
		t.Fatalf("no listen streams gauge in:\n%s", b.String())
		return ""
	}
	if got := gauge(); got != "mcp_server_listen_streams 0" {
		t.Fatalf("before: %s", got)
	}
	for _, id := range []string{"L1", "L2"} {
		telSend(t, client, `{"jsonrpc":"2.0","id":"`+id+`","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},`+meta2026+`}}`)
		telReceive(t, client) // acknowledged: the stream is open
	}
	if got := gauge(); got != "mcp_server_listen_streams 2" {
		t.Fatalf("two streams open: %s", got)
	}
	telSend(t, client, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"L1"}}`)
	telSend(t, client, `not json`) // a sync point: answered by the owner after the cancel
	telReceive(t, client)
	if got := gauge(); got != "mcp_server_listen_streams 1" {
		t.Fatalf("one stream cancelled: %s", got)
	}
}
