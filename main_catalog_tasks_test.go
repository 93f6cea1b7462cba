package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// newCatalogTaskEnv is a taskEnv serving the reference catalog.
func newCatalogTaskEnv(t *testing.T) *taskEnv {
	t.Helper()
	e := newTaskEnv(t, TaskOptions{})
	if err := registerReferenceCatalog(e.rt); err != nil {
		t.Fatal(err)
	}
	return e
}

func TestCatalogTaskFixtures(t *testing.T) {
	t.Run("greet is never a task", func(t *testing.T) {
		e := newCatalogTaskEnv(t)
		wantResult(t, e.do("tools/call", `{"name":"greet","arguments":{"name":"World"}}`), `{"content":[{"type":"text","text":"Hello, World!"}],`+complete2026+`}`)
	})
	t.Run("slow_compute answers a quick call at once", func(t *testing.T) {
		e := newCatalogTaskEnv(t)
		wantResult(t, e.do("tools/call", `{"name":"slow_compute","arguments":{"seconds":0,"label":"now"}}`), `{"content":[{"type":"text","text":"Computed now in 0s"}],`+complete2026+`}`)
		wantResult(t, dispatch(e.rt, e.request(noTasksCaps, "tools/call", `{"name":"slow_compute","arguments":{"seconds":0}}`)), `{"content":[{"type":"text","text":"Computed result in 0s"}],`+complete2026+`}`)
		reply := e.do("tools/call", `{"name":"slow_compute","arguments":{"seconds":601}}`)
		if got := textOf(t, reply.Result); got != "slow_compute: seconds must be from 0 to 600" {
			t.Fatalf("601 seconds: %s", reply.Result)
		}
	})
	t.Run("slow_compute becomes a task, and cancelled stops", func(t *testing.T) {
		e := newCatalogTaskEnv(t)
		id := e.startTask("slow_compute", `{"seconds":600}`)
		e.ack(e.do(methodTasksCancel, `{"taskId":"`+id+`"}`))
		e.await(id, "cancelled with its handler returned", func(r *TaskRecord) bool { return r.Status == TaskCancelled && r.Held == 0 })
	})
	t.Run("failing_job is a task that ends with a tool error", func(t *testing.T) {
		e := newCatalogTaskEnv(t)
		wantError(t, dispatch(e.rt, e.request(noTasksCaps, "tools/call", `{"name":"failing_job","arguments":{}}`)), CodeMissingCapability, msgTasksMissing, tasksMissing)
		id := e.startTask("failing_job", `{}`)
		rec := e.awaitStatus(id, TaskCompleted)
		var res struct{ IsError bool }
		if json.Unmarshal(rec.Result, &res) != nil || !res.IsError || !strings.Contains(textOf(t, rec.Result), "The job failed") {
			t.Fatalf("failing_job ended with %s", rec.Result)
		}
	})
	t.Run("protocol_error_job fails", func(t *testing.T) {
		e := newCatalogTaskEnv(t)
		id := e.startTask("protocol_error_job", `{}`)
		if rec := e.awaitStatus(id, TaskFailed); rec.Error.Code != CodeInternalError || rec.Error.Message != "The job failed with a protocol error" {
			t.Fatalf("protocol_error_job ended with %+v", rec.Error)
		}
	})
	t.Run("confirm_delete asks, and deletes when confirmed", func(t *testing.T) {
		for _, tc := range []struct{ answer, want string }{
			{`{"action":"accept","content":{"confirm":true}}`, "Deleted a.txt"},
			{`{"action":"accept","content":{"confirm":false}}`, "Kept a.txt"},
			{`{"action":"decline"}`, "Kept a.txt"},
		} {
			e := newCatalogTaskEnv(t)
			id := e.startTask("confirm_delete", `{"filename":"a.txt"}`)
			rec := e.awaitQuestions(id, 1)
			if q := rec.InputRequests["confirm"]; q.Method != MethodElicit || !strings.Contains(string(q.Params), `"message":"Delete a.txt?"`) {
				t.Fatalf("question %+v", rec.InputRequests)
			}
			e.ack(e.do(methodTasksUpdate, `{"taskId":"`+id+`","inputResponses":{"confirm":`+tc.answer+`}}`))
			if got := textOf(t, e.awaitStatus(id, TaskCompleted).Result); got != tc.want {
				t.Fatalf("answer %s: %q, want %q", tc.answer, got, tc.want)
			}
		}
	})
	t.Run("multi_input asks two questions at once", func(t *testing.T) {
		e := newCatalogTaskEnv(t)
		id := e.startTask("multi_input", `{}`)
		e.awaitQuestions(id, 2)
		e.ack(e.do(methodTasksUpdate, `{"taskId":"`+id+`","inputResponses":{"first":{"action":"accept","content":{"name":"A"}}}}`))
		if got := e.get(id); got.Status != TaskInputRequired || len(got.InputRequests) != 1 {
			t.Fatalf("after one answer: %+v", got)
		}
		e.ack(e.do(methodTasksUpdate, `{"taskId":"`+id+`","inputResponses":{"second":{"action":"accept","content":{"name":"B"}}}}`))
		if got := textOf(t, e.awaitStatus(id, TaskCompleted).Result); got != "Got A and B" {
			t.Fatalf("result %q", got)
		}
		// Without the extension it is a multi-round request.
		var round struct{ InputRequests map[string]InputRequest }
		decodeResult(t, dispatch(e.rt, e.request(noTasksCaps, "tools/call", `{"name":"multi_input"}`)), &round)
		if len(round.InputRequests) != 2 {
			t.Fatalf("without the extension: %+v", round)
		}
	})
	t.Run("test_tool_with_task asks, then becomes a task", func(t *testing.T) {
		e := newCatalogTaskEnv(t)
		var round1 struct {
			ResultType   string
			TaskID       string
			RequestState string
		}
		decodeResult(t, e.do("tools/call", `{"name":"test_tool_with_task","arguments":{}}`), &round1)
		if round1.ResultType != "input_required" || round1.TaskID != "" {
			t.Fatalf("round 1 %+v", round1)
		}
		id := e.startTask("test_tool_with_task", `{},"inputResponses":{"user_name":{"action":"accept","content":{"name":"Alice"}}},"requestState":"`+round1.RequestState+`"`)
		if got := textOf(t, e.awaitStatus(id, TaskCompleted).Result); got != "Hello, Alice!" {
			t.Fatalf("result %q", got)
		}
	})
}
