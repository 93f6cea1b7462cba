package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"
)

// syncLogBuffer is a bytes.Buffer that several goroutines may write: a log
// handler's output, read by the test.
type syncLogBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncLogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncLogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Every record logged while serving a traced request carries the request's
// trace_id and the span_id of its server span, whoever logs it: the
// connection's owner (a timeout, a worker's failure), the runtime (a panic,
// a handler's or an encoder's failure, a refusal of the access policy, an
// inline call that blocked), a handler's Bind or a feature (tasks, skills).
func TestRequestRecordsCarryTraceIDs(t *testing.T) {
	type nothing struct{}
	cases := []struct {
		record  string // the message of the record the request logs
		timeout bool   // a request timeout short enough to end the call
		method  string
		params  string // the request's params but their _meta
		span    string // the request's server span's name
		caps    string // the request's clientCapabilities; "" for {}
		policy  AccessPolicy
		tasks   TaskProvider
		setup   func(t *testing.T, rt *Runtime)
		// crash: the transport's dispatcher panics (else it is the Runtime).
		crash bool
	}{
		{record: "arguments did not bind", method: "tools/call", params: `"name":"bind","arguments":{"n":"x"}`, span: "tools/call bind", setup: func(t *testing.T, rt *Runtime) {
			mustAddTool(t, rt, Tool{Name: "bind"}, func(_ context.Context, req *HandlerRequest) (*ToolResult, error) {
				var args struct {
					N int `json:"n"`
				}
				return nil, req.Bind(&args)
			})
		}},
		{record: "mcpstdio: request timed out", timeout: true, method: "tools/call", params: `"name":"wait"`, span: "tools/call wait", setup: func(t *testing.T, rt *Runtime) {
			mustAddTool(t, rt, Tool{Name: "wait"}, func(ctx context.Context, _ *HandlerRequest) (*ToolResult, error) {
				<-ctx.Done()
				return nil, ctx.Err()
			})
		}},
		{record: "handler panicked", method: "tools/call", params: `"name":"panic"`, span: "tools/call panic", setup: func(t *testing.T, rt *Runtime) {
			mustAddTool(t, rt, Tool{Name: "panic"}, func(context.Context, *HandlerRequest) (*ToolResult, error) { panic("boom") })
		}},
		{record: "typed tool returned a nil result", method: "tools/call", params: `"name":"typed"`, span: "tools/call typed", setup: func(t *testing.T, rt *Runtime) {
			err := AddTypedTool(rt, Tool{Name: "typed"}, func(context.Context, *HandlerRequest, nothing) (*nothing, error) { return nil, nil })
			if err != nil {
				t.Fatal(err)
			}
		}},
		{record: "handler failed", method: "prompts/get", params: `"name":"broken"`, span: "prompts/get broken", setup: func(t *testing.T, rt *Runtime) {
			err := rt.AddPrompt(Prompt{Name: "broken"}, func(context.Context, *HandlerRequest) (*PromptResult, error) { return nil, errors.New("no such file") })
			if err != nil {
				t.Fatal(err)
			}
		}},
		{record: "access denied", method: "tools/call", params: `"name":"secret"`, span: "tools/call secret",
			policy: func(*Principal, CatalogItem) error { return errors.New("not for you") },
			setup: func(t *testing.T, rt *Runtime) {
				mustAddTool(t, rt, Tool{Name: "secret"}, echoTool("the secret"))
			}},
		{record: "creating a task failed", method: "tools/call", params: `"name":"job"`, span: "tools/call job", caps: tasksCaps,
			tasks: TaskOptions{Store: storeFailing(true, false)},
			setup: func(t *testing.T, rt *Runtime) {
				mustAddTool(t, rt, Tool{Name: "job", Execution: &ToolExecution{TaskSupport: TaskOptional}}, echoTool("done"))
			}},
		{record: "reading a task failed", method: "tasks/get", params: `"taskId":"task-1"`, span: "tasks/get", caps: tasksCaps,
			tasks: TaskOptions{Store: storeFailing(false, true)},
			setup: func(t *testing.T, rt *Runtime) {
				mustAddTool(t, rt, Tool{Name: "job", Execution: &ToolExecution{TaskSupport: TaskOptional}}, echoTool("done"))
			}},
		{record: "mcpstdio: request worker failed", method: "tools/call", params: `"name":"crash"`, span: "tools/call crash", crash: true},
		{record: "mcpstdio: an Inline tool's call blocked its connection; the tool should not be Inline", method: "tools/call", params: `"name":"quick"`, span: "tools/call quick",
			setup: func(t *testing.T, rt *Runtime) {
				mustAddTool(t, rt, Tool{Name: "quick", Inline: true}, echoTool("done"))
				var ticks atomic.Int64 // each reading of the clock is 10 ms later: the call takes 10 ms
				rt.now = func() time.Time { return time.Unix(0, ticks.Add(1)*int64(10*time.Millisecond)) }
			}},
		{record: "skills: a skill is no longer served", method: "skills/get", params: `"uri":"skill://gone/SKILL.md"`, span: "skills/get",
			setup: func(t *testing.T, rt *Runtime) {
				fsys := fstest.MapFS{"gone/SKILL.md": {Data: []byte("---\nname: gone\ndescription: Goes.\n---\nBody.\n")}}
				if _, err := rt.AddSkills(fsys, SkillsOptions{}); err != nil {
					t.Fatal(err)
				}
				fsys["gone/SKILL.md"].Data = []byte("no frontmatter any more")
			}},
		{record: "skills: skills/get names no skill that can be served", method: "skills/get", params: `"uri":"skill://broken/SKILL.md"`, span: "skills/get",
			setup: func(t *testing.T, rt *Runtime) {
				if _, err := rt.AddSkills(fstest.MapFS{"broken/SKILL.md": {Data: []byte("no frontmatter")}}, SkillsOptions{}); err != nil {
					t.Fatal(err)
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.record, func(t *testing.T) {
			var logs syncLogBuffer
			logger := slog.New(TraceLogHandler(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
			rt, err := NewRuntime(RuntimeOptions{ServerInfo: Implementation{Name: "traced", Version: "1"}, Logger: logger, Policy: tc.policy, Tasks: tc.tasks})
			if err != nil {
				t.Fatal(err)
			}
			if tc.setup != nil {
				tc.setup(t, rt)
			}
			var d Dispatcher = rt
			if tc.crash {
				d = DispatcherFunc(func(context.Context, *Request) Reply { panic("the dispatcher failed") })
			}
			col := newTestCollector(t, nil)
			tel := newTestTelemetry(t, col, 64)
			opts := Options{Logger: logger, Observer: tel}
			if tc.timeout {
				opts.RequestTimeout = 1 // a nanosecond: the call times out as it starts
			}
			tr, client, err := NewMemoryTransport(d, opts)
			if err != nil {
				t.Fatal(err)
			}
			served := make(chan error, 1)
			go func() { served <- tr.Serve(context.Background()) }()
			const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
			ctx := context.Background()
			caps := tc.caps
			if caps == "" {
				caps = "{}"
			}
			call := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":{%s,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":%s,"traceparent":"00-%s-00f067aa0ba902b7-01"}}}`,
				tc.method, tc.params, caps, traceID)
			if err := client.Send(ctx, []byte(call)); err != nil {
				t.Fatal(err)
			}
			if _, err := client.Receive(ctx); err != nil {
				t.Fatal(err)
			}
			client.Close()
			if err := waitFor(t, served, "Serve to return"); err != nil {
				t.Fatal(err)
			}
			server := spanNamed(t, flush(t, tel, col), tc.span)
			found := false
			for line := range strings.Lines(logs.String()) {
				var rec struct {
					Msg     string
					TraceID string `json:"trace_id"`
					SpanID  string `json:"span_id"`
				}
				if err := json.Unmarshal([]byte(line), &rec); err != nil {
					t.Fatalf("log line %q: %v", line, err)
				}
				if rec.Msg != tc.record {
					continue
				}
				found = true
				if rec.TraceID != traceID || rec.SpanID != server.SpanID {
					t.Errorf("record %q carries trace_id %q and span_id %q, want %q and the server span's %q", rec.Msg, rec.TraceID, rec.SpanID, traceID, server.SpanID)
				}
			}
			if !found {
				t.Fatalf("no record %q logged:\n%s", tc.record, logs.String())
			}
		})
	}
}

// The records logged on behalf of a request without a span (no observer,
// or a request the observer does not trace) carry no trace ids.
func TestUntracedRequestRecordsCarryNoTraceIDs(t *testing.T) {
	var logs syncLogBuffer
	logger := slog.New(TraceLogHandler(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	rt, err := NewRuntime(RuntimeOptions{ServerInfo: Implementation{Name: "untraced", Version: "1"}, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	mustAddTool(t, rt, Tool{Name: "panic"}, func(context.Context, *HandlerRequest) (*ToolResult, error) { panic(errors.New("boom")) })
	tr, client, err := NewMemoryTransport(rt, Options{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- tr.Serve(context.Background()) }()
	ctx := context.Background()
	if err := client.Send(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"panic",`+meta2026+`}}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	client.Close()
	if err := waitFor(t, served, "Serve to return"); err != nil {
		t.Fatal(err)
	}
	if out := logs.String(); !strings.Contains(out, "handler panicked") || strings.Contains(out, "trace_id") {
		t.Fatalf("log:\n%s", out)
	}
}

// A token that cannot be checked because the introspection endpoint fails
// is logged with the context of the request it came with: a trace the
// context carries is in the record.
func TestIntrospectionFailureRecordCarriesTheRequestsTrace(t *testing.T) {
	var logs syncLogBuffer
	logger := slog.New(TraceLogHandler(slog.NewJSONHandler(&logs, nil)))
	ti := newTestIntrospector(t)
	ti.down.Store(true)
	v := newTestIntrospectionVerifier(t, ti, newTestClock(), func(o *IntrospectionVerifierOptions) { o.Logger = logger })
	sc := SpanContext{TraceID: [16]byte{0x4b, 0xf9, 15: 0x36}, SpanID: [8]byte{0x00, 0xf0, 7: 0xb7}, Flags: 1}
	if _, err := v.VerifyToken(contextWithSpanContext(context.Background(), sc), "t"); err == nil {
		t.Fatal("a token accepted while the introspection endpoint fails")
	}
	var rec struct {
		Msg     string
		TraceID string `json:"trace_id"`
		SpanID  string `json:"span_id"`
	}
	if err := json.Unmarshal([]byte(logs.String()), &rec); err != nil {
		t.Fatalf("log %q: %v", logs.String(), err)
	}
	if rec.Msg != "mcpstdio: token introspection failed" || rec.TraceID != sc.TraceIDString() || rec.SpanID != sc.SpanIDString() {
		t.Fatalf("record %+v, want the introspection's failure with trace_id %s and span_id %s", rec, sc.TraceIDString(), sc.SpanIDString())
	}
}

// storeFailing returns a task store whose Create or Get fails.
func storeFailing(create, get bool) *failingStore {
	s := &failingStore{TaskStore: newMemoryTaskStore(TaskLimits{MaxTasks: 9, MaxTasksPerOwner: 9, MaxBytes: 1 << 20, MaxBytesPerOwner: 1 << 20})}
	s.failCreate.Store(create)
	s.failGet.Store(get)
	return s
}
