package main

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

// tasksListenLine is a 2026 subscriptions/listen line declaring caps.
func tasksListenLine(id, caps, notifications string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"subscriptions/listen","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps + `},"notifications":` + notifications + `}}`
}

// taskStateMembers are the params members of notifications/tasks before
// _meta for task-1 of a taskEnv in status with message ("" for none).
func taskStateMembers(status, message string) string {
	m := `"taskId":"task-1","status":"` + status + `",`
	if message != "" {
		m += `"statusMessage":"` + message + `",`
	}
	return m + `"createdAt":"2026-07-28T12:00:00.000Z","lastUpdatedAt":"2026-07-28T12:00:00.000Z","ttlMs":3600000,"pollIntervalMs":500,`
}

// TestTaskStatusNotifications (stdio): a 2026 listen stream that named a
// task gets notifications/tasks for it, tagged; an initialize-era
// connection gets none.
func TestTaskStatusNotifications(t *testing.T) {
	e := newTaskEnv(t, TaskOptions{})
	e.rt.listChanged[listTools] = true
	g := newGate()
	e.addTool("job", TaskOptional, 0, g.handler)
	h := startHarnessWith(t, Options{}, e.rt)
	created := decodeFrame(t, h.roundTrip(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"job","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":`+tasksCaps+`}}}`))
	if !strings.Contains(string(created.Result), `"taskId":"task-1"`) {
		t.Fatalf("tools/call answered %s", created.Result)
	}
	waitFor(t, g.entered, "the handler")
	h.send(tasksListenLine(`"l"`, tasksCaps, `{"taskIds":["task-1","task-404"]}`))
	h.expect(ackFrame(`"l"`, `{"taskIds":["task-1"]}`))
	h.send(tasksListenLine(`"all"`, tasksCaps, `{"toolsListChanged":true}`))
	h.expect(ackFrame(`"all"`, `{"toolsListChanged":true}`))
	h.send(tasksListenLine(`"x"`, noTasksCaps, `{"taskIds":["task-1"]}`))
	h.expect(`{"jsonrpc":"2.0","id":"x","error":{"code":-32021,"message":"` + msgTasksMissing + `","data":` + tasksMissing + `}}` + "\n")

	legacy := startHarnessWith(t, Options{}, e.rt)
	legacy.roundTrip(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":` + tasksCaps + `,"clientInfo":{"name":"cli","version":"0.1"}}}`)
	legacyTask := decodeFrame(t, legacy.roundTrip(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"job"}}`))
	if !strings.Contains(string(legacyTask.Result), `"taskId":"task-2"`) {
		t.Fatalf("legacy tools/call answered %s", legacyTask.Result)
	}
	waitFor(t, g.entered, "the second handler")

	ctx := context.Background()
	h.runSteps([]changeStep{
		{"a status message", func() {
			if _, err := managerOf(e.rt).modify(ctx, "task-1", func(r *TaskRecord) error { r.StatusMessage = "half way"; return nil }); err != nil {
				t.Fatal(err)
			}
		}, taggedFrame(notificationTasks, `"l"`, taskStateMembers(TaskWorking, "half way"))},
		{"another task's change, then the task cancelled", func() {
			if err := managerOf(e.rt).cancel(ctx, "task-2", "stop"); err != nil {
				t.Fatal(err)
			}
			if err := managerOf(e.rt).cancel(ctx, "task-1", "stop"); err != nil {
				t.Fatal(err)
			}
		}, taggedFrame(notificationTasks, `"l"`, taskStateMembers(TaskCancelled, "stop"))},
		{"a list change", func() { e.rt.AnnounceListChanged(ToolsChanged) }, taggedFrame("notifications/tools/list_changed", `"all"`, "")},
	})
	// The legacy connection saw the list change, and no task's.
	if got := legacy.next(); got != legacyFrame("notifications/tools/list_changed", "") {
		t.Fatalf("the initialize-era connection got %s", got)
	}
}

// TestHTTPTaskStatusNotifications: the same over a 2026 listen stream of
// the HTTP handler.
func TestHTTPTaskStatusNotifications(t *testing.T) {
	e := newTaskEnv(t, TaskOptions{})
	e.session = ""
	g := newGate()
	e.addTool("job", TaskOptional, 0, g.handler)
	s := newHTTPTestServer(t, e.rt, HTTPOptions{})
	id := e.startTask("job", `{}`)
	waitFor(t, g.entered, "the handler")
	resp := s.post(stateless("subscriptions/listen", ""), tasksListenLine(`"L"`, tasksCaps, `{"taskIds":["`+id+`"]}`))
	defer resp.Body.Close()
	events := newSSEReader(t, resp)
	if got := events.nextMessage(); got != strings.TrimSuffix(ackFrame(`"L"`, `{"taskIds":["task-1"]}`), "\n") {
		t.Fatalf("first event %s", got)
	}
	if err := managerOf(e.rt).cancel(context.Background(), id, "stop"); err != nil {
		t.Fatal(err)
	}
	if got := events.nextMessage(); got != strings.TrimSuffix(taggedFrame(notificationTasks, `"L"`, taskStateMembers(TaskCancelled, "stop")), "\n") {
		t.Fatalf("event %s", got)
	}
}

// TestHTTPTaskNameHeader: over HTTP a tasks/* request's Mcp-Name mirrors its
// taskId (-32020, 400 otherwise).
func TestHTTPTaskNameHeader(t *testing.T) {
	e := newTaskEnv(t, TaskOptions{})
	e.session = ""
	e.addTool("job", TaskOptional, 0, echoTool("done"))
	s := newHTTPTestServer(t, e.rt, HTTPOptions{})
	id := e.startTask("job", `{}`)
	body := `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"` + id + `","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + tasksCaps + `}}}`
	for _, tc := range []struct {
		name   string
		header string // "" for none
		status int
		want   string
	}{
		{"matching", id, http.StatusOK, `"taskId":"task-1"`},
		{"another task", "task-2", http.StatusBadRequest, `"code":-32020,"message":"Header mismatch: Mcp-Name header value \"task-2\" does not match body value \"task-1\""`},
		{"missing", "", http.StatusBadRequest, `"code":-32020,"message":"Header mismatch: required header Mcp-Name is missing"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := s.post(stateless(methodTasksGet, tc.header), body)
			if got := readBody(t, resp); resp.StatusCode != tc.status || !strings.Contains(got, tc.want) {
				t.Fatalf("status %d, body %s", resp.StatusCode, got)
			}
		})
	}
}

// TestHTTPTasksInASession: over HTTP, an initialize-era session's tasks are
// its own: another session (or a sessionless 2026 request) cannot see them.
func TestHTTPTasksInASession(t *testing.T) {
	e := newTaskEnv(t, TaskOptions{})
	e.addTool("job", TaskOptional, 0, echoTool("done"))
	s := newHTTPTestServer(t, e.rt, HTTPOptions{})
	mine := s.legacySession(ProtocolVersion20251125, tasksCaps)
	theirs := s.legacySession(ProtocolVersion20251125, tasksCaps)
	resp := s.post(mine, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"job"}}`)
	if body := readBody(t, resp); !strings.Contains(body, `"taskId":"task-1","status":"working"`) {
		t.Fatalf("tools/call: status %d, body %s", resp.StatusCode, body)
	}
	e.awaitStatus("task-1", TaskCompleted)
	get := `{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"taskId":"task-1"}}`
	if body := readBody(t, s.post(mine, get)); !strings.Contains(body, `"status":"completed"`) {
		t.Fatalf("tasks/get in the task's session: %s", body)
	}
	if body := readBody(t, s.post(theirs, get)); !strings.Contains(body, `"message":"Task not found"`) {
		t.Fatalf("tasks/get in another session: %s", body)
	}
	sessionless := `{"jsonrpc":"2.0","id":4,"method":"tasks/get","params":{"taskId":"task-1","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + tasksCaps + `}}}`
	if body := readBody(t, s.post(stateless(methodTasksGet, "task-1"), sessionless)); !strings.Contains(body, `"message":"Task not found"`) {
		t.Fatalf("tasks/get without a session: %s", body)
	}
}
