package main

import (
	"context"
	"encoding/json"
	"testing"
)

// BenchmarkTaskCreation measures task creations per second through the
// runtime (tools/call of a tool that becomes a task at once and ends at
// once, 8 callers per CPU), with the memory store and with the SQL store on
// PostgreSQL (MCPSTDIO_TEST_DSN): each creation is committed before its
// CreateTaskResult, and its end is stored as it finishes.
//
//	cd postgres && MCPSTDIO_TEST_DSN=... go test -run '^$' -bench BenchmarkTaskCreation -benchtime 2s .
func BenchmarkTaskCreation(b *testing.B) {
	limits := TaskLimits{MaxTasks: 1 << 30, MaxTasksPerOwner: 1 << 30, MaxBytes: 1 << 40, MaxBytesPerOwner: 1 << 40}
	b.Run("memory", func(b *testing.B) {
		benchmarkTaskCreation(b, TaskOptions{TaskLimits: limits})
	})
	b.Run("postgres", func(b *testing.B) {
		db, config := openTestDB(b)
		db.SetMaxOpenConns(16)
		table := testTable(b)
		store := newPGStore(b, db, config, table, "bench", limits, newFakeClock())
		benchmarkTaskCreation(b, TaskOptions{Store: store, TaskLimits: limits})
	})
}

func benchmarkTaskCreation(b *testing.B, opts TaskOptions) {
	rt, err := NewRuntime(RuntimeOptions{ServerInfo: Implementation{Name: "bench", Version: "1"}, Logger: discardLogger(), Tasks: opts})
	if err != nil {
		b.Fatal(err)
	}
	err = rt.AddTool(Tool{Name: "job", Execution: &ToolExecution{TaskSupport: TaskOptional}}, func(context.Context, *HandlerRequest) (*ToolResult, error) {
		return TextResult("done"), nil
	})
	if err != nil {
		b.Fatal(err)
	}
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			reply := rt.Dispatch(context.Background(), taskRequest("tools/call", `{"name":"job","arguments":{}}`))
			var res struct {
				TaskID string `json:"taskId"`
			}
			if reply.Error != nil || json.Unmarshal(reply.Result, &res) != nil || res.TaskID == "" {
				b.Errorf("tools/call = %+v (%s), want a CreateTaskResult", reply.Error, reply.Result)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "creations/s")
}
