package main

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"testing"
)

// BenchmarkTaskMemory reports what a task costs in memory, as the growth of
// the live heap (heap-B/task) and of goroutine stacks (stack-B/task) over
// b.N tasks kept at once, divided by b.N:
// "retained" tasks have finished and keep their one-line result until their
// TTL; "running" tasks wait in their handler (with their watcher, their
// request's params and the handler's goroutine). Each is created by a 2026
// tools/call of about 200 bytes. ns/op is the time to create one. For a
// stable figure run many at once: -benchtime=20000x.
func BenchmarkTaskMemory(b *testing.B) {
	for _, running := range []bool{false, true} {
		name := "retained"
		if running {
			name = "running"
		}
		b.Run(name, func(b *testing.B) {
			limits := TaskLimits{MaxTasks: b.N + 1, MaxTasksPerOwner: b.N + 1, MaxBytes: 1 << 40, MaxBytesPerOwner: 1 << 40}
			ro := testOptions()
			ro.Tasks = TaskOptions{TaskLimits: limits}
			rt, err := NewRuntime(ro)
			if err != nil {
				b.Fatal(err)
			}
			release := make(chan struct{})
			err = rt.AddTool(Tool{Name: "job", Execution: &ToolExecution{TaskSupport: TaskOptional}}, func(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
				if running {
					select {
					case <-release:
					case <-ctx.Done():
					}
				}
				return TextResult("done"), nil
			})
			if err != nil {
				b.Fatal(err)
			}
			// The IDs are kept as the store keeps them (the same strings), in
			// a slice allocated before the measure.
			ids := make([]string, 0, b.N)
			managerOf(rt).newID = func() string {
				id := newTaskID()
				ids = append(ids, id)
				return id
			}
			heapBefore, stackBefore := liveMemory()
			b.ResetTimer()
			for i := range b.N {
				r := newRequest("tools/call", `{"name":"job","arguments":{"n":`+fmt.Sprint(i)+`},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":`+tasksCaps+`}}`)
				r.SessionID = "bench"
				if reply := rt.Dispatch(context.Background(), r); reply.Error != nil || !bytes.Contains(reply.Result, []byte(`"resultType":"task"`)) {
					b.Fatalf("tools/call answered %s %+v", reply.Result, reply.Error)
				}
			}
			b.StopTimer()
			if !running {
				for _, id := range ids {
					awaitTaskBench(b, rt, id, func(r *TaskRecord) bool { return r.Status == TaskCompleted && r.Held == 0 })
				}
			}
			heapAfter, stackAfter := liveMemory()
			b.ReportMetric(float64(heapAfter-heapBefore)/float64(b.N), "heap-B/task")
			b.ReportMetric(float64(stackAfter-stackBefore)/float64(b.N), "stack-B/task")
			close(release)
			for _, id := range ids {
				awaitTaskBench(b, rt, id, func(r *TaskRecord) bool { return r.Status == TaskCompleted && r.Held == 0 })
			}
		})
	}
}

// liveMemory returns the bytes of live heap objects, after a full
// collection, and of goroutine stacks.
func liveMemory() (heap, stacks int64) {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc), int64(m.StackInuse)
}

// awaitTaskBench waits until task id's record satisfies ok.
func awaitTaskBench(b *testing.B, rt *Runtime, id string, ok func(*TaskRecord) bool) {
	ctx := context.Background()
	changed, stop, err := managerOf(rt).store.Watch(ctx, id)
	if err != nil {
		b.Fatal(err)
	}
	defer stop()
	for {
		rec, err := managerOf(rt).store.Get(ctx, id)
		if err != nil {
			b.Fatal(err)
		}
		if ok(rec) {
			return
		}
		<-changed
	}
}
