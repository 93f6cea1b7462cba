package main

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
)

const (
	testTraceID  = "4bf92f3577b34da6a3ce929d0e0e4736"
	testParentID = "00f067aa0ba902b7"
	testParent   = "00-" + testTraceID + "-" + testParentID + "-01"
)

func TestParseTraceparent(t *testing.T) {
	tests := []struct {
		name, value string
		ok          bool
		sampled     bool
	}{
		{"version 00 sampled", testParent, true, true},
		{"not sampled", "00-" + testTraceID + "-" + testParentID + "-00", true, false},
		{"future version with more fields", "cc-" + testTraceID + "-" + testParentID + "-01-what-ever", true, true},
		{"future version, exact length", "01-" + testTraceID + "-" + testParentID + "-01", true, true},
		{"version 00 with more", testParent + "-x", false, false},
		{"version ff", "ff-" + testTraceID + "-" + testParentID + "-01", false, false},
		{"upper case", "00-" + strings.ToUpper(testTraceID) + "-" + testParentID + "-01", false, false},
		{"zero trace id", "00-00000000000000000000000000000000-" + testParentID + "-01", false, false},
		{"zero span id", "00-" + testTraceID + "-0000000000000000-01", false, false},
		{"short", "00-" + testTraceID + "-" + testParentID, false, false},
		{"bad separator", "00_" + testTraceID + "-" + testParentID + "-01", false, false},
		{"not hex", "00-" + testTraceID + "-" + "00f067aa0ba902bz" + "-01", false, false},
		{"empty", "", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc, ok := ParseTraceparent(tt.value)
			if ok != tt.ok {
				t.Fatalf("ParseTraceparent(%q) ok = %v, want %v", tt.value, ok, tt.ok)
			}
			if !ok {
				return
			}
			if sc.TraceIDString() != testTraceID || sc.SpanIDString() != testParentID || sc.Sampled() != tt.sampled || !sc.Remote {
				t.Fatalf("got %+v", sc)
			}
			if tt.value[:2] == "00" && sc.Traceparent() != tt.value {
				t.Fatalf("Traceparent() = %q, want %q", sc.Traceparent(), tt.value)
			}
		})
	}
}

func TestTraceContextFromParams(t *testing.T) {
	tests := []struct {
		params string
		want   TraceContext
	}{
		{`{"_meta":{"traceparent":"a","tracestate":"b","baggage":"c"}}`, TraceContext{"a", "b", "c"}},
		{`{"_meta":{"traceparent":1,"baggage":"k=v"}}`, TraceContext{Baggage: "k=v"}},
		{`{"_meta":"x"}`, TraceContext{}},
		{`{"name":"x"}`, TraceContext{}},
		{`not json`, TraceContext{}},
		{``, TraceContext{}},
	}
	for _, tt := range tests {
		if got := TraceContextFromParams([]byte(tt.params)); got != tt.want {
			t.Errorf("TraceContextFromParams(%s) = %+v, want %+v", tt.params, got, tt.want)
		}
	}
}

func TestWithTraceparent(t *testing.T) {
	sc, _ := ParseTraceparent(testParent)
	tests := []struct{ params, want string }{
		{``, `{"_meta":{"traceparent":"` + testParent + `"}}`},
		{`{"a":1}`, `{"_meta":{"traceparent":"` + testParent + `"},"a":1}`},
		{`{"_meta":{"progressToken":2}}`, `{"_meta":{"progressToken":2,"traceparent":"` + testParent + `"}}`},
		{`{"_meta":{"traceparent":"mine"}}`, `{"_meta":{"traceparent":"mine"}}`},
	}
	for _, tt := range tests {
		var params json.RawMessage
		if tt.params != "" {
			params = json.RawMessage(tt.params)
		}
		if got := string(withTraceparent(params, sc)); got != tt.want {
			t.Errorf("withTraceparent(%s) = %s, want %s", tt.params, got, tt.want)
		}
	}
	if got := withTraceparent(json.RawMessage(`{"a":1}`), SpanContext{}); string(got) != `{"a":1}` {
		t.Errorf("an invalid span context changed params: %s", got)
	}
}

// telemetryRuntime is a runtime whose tools exercise the span context: greet
// starts a child span and reports progress, roots asks the client, fail
// fails, block waits for its context.
func telemetryRuntime(t *testing.T, started chan<- struct{}) *Runtime {
	t.Helper()
	rt, err := NewRuntime(RuntimeOptions{ServerInfo: Implementation{Name: "t", Version: "1"}})
	if err != nil {
		t.Fatal(err)
	}
	type in struct {
		Name string `json:"name"`
	}
	add := func(name string, h ToolHandler) {
		if err := rt.AddTool(Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)}, h); err != nil {
			t.Fatal(err)
		}
	}
	add("greet", func(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
		if sc := SpanContextFromContext(ctx); !sc.IsValid() || sc != req.SpanContext {
			return nil, errors.New("the handler's context and request disagree on the span")
		}
		child, span := StartSpan(ctx, "greet child")
		span.SetAttribute("greeting", "hello")
		if err := req.ReportProgress(child, Progress{Progress: 1, Total: 2}); err != nil {
			return nil, err
		}
		span.End(nil)
		return &ToolResult{Content: []Content{TextContent("hello")}}, nil
	})
	add("roots", func(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
		roots, err := req.ListRoots(ctx, "r")
		if err != nil {
			return nil, err
		}
		return &ToolResult{Content: []Content{TextContent(roots[0].URI)}}, nil
	})
	add("fail", func(context.Context, *HandlerRequest) (*ToolResult, error) {
		return nil, errors.New("failed on purpose")
	})
	add("block", func(ctx context.Context, _ *HandlerRequest) (*ToolResult, error) {
		if started != nil {
			started <- struct{}{}
		}
		select { // bounded, so that a failing test still ends
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(10 * time.Second):
			return nil, errors.New("block was never cancelled")
		}
	})
	return rt
}

// memorySession starts a transport served with opts over memory and
// initializes it (2025-06-18, with the roots capability).
func memorySession(t *testing.T, rt *Runtime, opts Options) *MemoryClient {
	t.Helper()
	tr, client, err := NewMemoryTransport(rt, opts)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- tr.Serve(context.Background()) }()
	t.Cleanup(func() {
		client.Close()
		<-served
	})
	telSend(t, client, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"roots":{}},"clientInfo":{"name":"c","version":"1"}}}`)
	telReceive(t, client)
	return client
}

func telSend(t *testing.T, c *MemoryClient, msg string) {
	t.Helper()
	if err := c.Send(context.Background(), []byte(msg)); err != nil {
		t.Fatal(err)
	}
}

func telReceive(t *testing.T, c *MemoryClient) map[string]json.RawMessage {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	raw, err := c.Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestTelemetryServerSpanParentsAndAttributes(t *testing.T) {
	col := newTestCollector(t, nil)
	tel := newTestTelemetry(t, col, 64)
	client := memorySession(t, telemetryRuntime(t, nil), Options{Observer: tel})

	telSend(t, client, `{"jsonrpc":"2.0","id":"g","method":"tools/call","params":{"name":"greet","arguments":{},"_meta":{"progressToken":7,"traceparent":"`+testParent+`","tracestate":"k=v","baggage":"user=ada"}}}`)
	progress := telReceive(t, client)
	var params struct {
		Meta map[string]string `json:"_meta"`
	}
	json.Unmarshal(progress["params"], &params)
	if got := string(progress["method"]); got != `"notifications/progress"` {
		t.Fatalf("want the progress notification first, got %s", got)
	}
	telReceive(t, client) // the result

	// An invalid traceparent is ignored: a new trace, no error.
	telSend(t, client, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"fail","arguments":{},"_meta":{"traceparent":"00-zz"}}}`)
	if res := telReceive(t, client); res["error"] != nil {
		t.Fatalf("an invalid traceparent must not be an error: %s", res["error"])
	}
	telSend(t, client, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"missing","arguments":{}}}`)
	telReceive(t, client)

	spans := flush(t, tel, col)
	server := spanNamed(t, spans, "tools/call greet")
	wantAttrs := map[string]string{
		"mcp.method.name": "tools/call", "jsonrpc.request.id": "g", "gen_ai.tool.name": "greet", "gen_ai.operation.name": "execute_tool",
		"mcp.protocol.version": "2025-06-18", "network.transport": "pipe",
	}
	for k, v := range wantAttrs {
		if server.Attributes[k] != v {
			t.Errorf("attribute %s = %q, want %q (all: %v)", k, server.Attributes[k], v, server.Attributes)
		}
	}
	if server.Attributes["mcp.session.id"] == "" || server.Attributes["error.type"] != "" || server.Attributes["client.address"] != "" {
		t.Errorf("session id missing, or error.type/client.address set over stdio: %v", server.Attributes)
	}
	if server.TraceID != testTraceID || server.ParentSpanID != testParentID || server.Kind != spanKindServer || server.TraceState != "k=v" {
		t.Errorf("server span not under the client's traceparent: %+v", server)
	}
	child := spanNamed(t, spans, "greet child")
	if child.TraceID != testTraceID || child.ParentSpanID != server.SpanID || child.Attributes["greeting"] != "hello" {
		t.Errorf("the tool's child span is not under the server's: %+v", child)
	}
	// The progress notification carries the child's traceparent (the
	// handler reported it with the child's context).
	if want := "00-" + testTraceID + "-" + child.SpanID + "-01"; params.Meta["traceparent"] != want {
		t.Errorf("progress _meta.traceparent = %q, want %q", params.Meta["traceparent"], want)
	}

	failed := spanNamed(t, spans, "tools/call fail")
	if failed.TraceID == testTraceID || failed.ParentSpanID != "" || failed.Attributes["error.type"] != "tool_error" || failed.Status.Code != 2 {
		t.Errorf("tool error span: %+v", failed)
	}
	missing := spanNamed(t, spans, "tools/call missing")
	if missing.Attributes["error.type"] != "-32602" || missing.Attributes["rpc.response.status_code"] != "-32602" || missing.Status.Code != 2 {
		t.Errorf("JSON-RPC error span: %+v", missing)
	}
}

func TestTelemetryClientSpanOfServerRequest(t *testing.T) {
	col := newTestCollector(t, nil)
	tel := newTestTelemetry(t, col, 64)
	client := memorySession(t, telemetryRuntime(t, nil), Options{Observer: tel})

	telSend(t, client, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"roots","arguments":{},"_meta":{"traceparent":"`+testParent+`"}}}`)
	ask := telReceive(t, client)
	var params struct {
		Meta map[string]string `json:"_meta"`
	}
	json.Unmarshal(ask["params"], &params)
	telSend(t, client, `{"jsonrpc":"2.0","id":`+string(ask["id"])+`,"result":{"roots":[{"uri":"file:///r"}]}}`)
	telReceive(t, client)

	spans := flush(t, tel, col)
	server := spanNamed(t, spans, "tools/call roots")
	clientSpan := spanNamed(t, spans, "roots/list")
	if clientSpan.Kind != spanKindClient || clientSpan.ParentSpanID != server.SpanID || clientSpan.TraceID != testTraceID || clientSpan.Attributes["mcp.method.name"] != "roots/list" {
		t.Errorf("client span: %+v (server %+v)", clientSpan, server)
	}
	if want := "00-" + testTraceID + "-" + clientSpan.SpanID + "-01"; params.Meta["traceparent"] != want {
		t.Errorf("roots/list _meta.traceparent = %q, want %q", params.Meta["traceparent"], want)
	}
}

func TestTelemetryCancelledTimedOutRefused(t *testing.T) {
	col := newTestCollector(t, nil)
	tel := newTestTelemetry(t, col, 64)
	started := make(chan struct{}, 1)
	client := memorySession(t, telemetryRuntime(t, started), Options{Observer: tel, MaxConcurrency: 1, MaxQueue: None, RequestTimeout: time.Hour})

	telSend(t, client, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"block","arguments":{}}}`)
	<-started
	// The one worker is busy: the next request is refused.
	telSend(t, client, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"greet","arguments":{}}}`)
	if res := telReceive(t, client); !strings.Contains(string(res["error"]), "-32603") {
		t.Fatalf("want a capacity refusal, got %v", res)
	}
	telSend(t, client, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
	// A parse error is answered by the connection's owner itself, after it
	// handled the cancellation before it: a sync point that needs no worker.
	telSend(t, client, `not json`)
	telReceive(t, client)
	spans := flush(t, tel, col)

	cancelled := spanNamed(t, spans, "tools/call block")
	if cancelled.Attributes["error.type"] != "cancelled" || cancelled.Status.Code != 2 {
		t.Errorf("cancelled span: %+v", cancelled)
	}
	refused := spanNamed(t, spans, "tools/call greet")
	if refused.Attributes["error.type"] != "-32603" || refused.Attributes["mcp.request.refused.reason"] != "capacity" {
		t.Errorf("refused span: %+v", refused)
	}
	var b strings.Builder
	tel.metrics.writePrometheus(&b)
	if !strings.Contains(b.String(), `mcp_server_request_refused_total{reason="capacity"} 1`) {
		t.Errorf("refusal not counted:\n%s", b.String())
	}
}

func TestTelemetryTimedOut(t *testing.T) {
	col := newTestCollector(t, nil)
	tel := newTestTelemetry(t, col, 64)
	// A 2026-07-28 request needs no initialize, which the deadline would
	// cut too.
	tr, client, err := NewMemoryTransport(telemetryRuntime(t, nil), Options{Observer: tel, RequestTimeout: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- tr.Serve(context.Background()) }()
	defer func() { client.Close(); <-served }()
	telSend(t, client, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"block","arguments":{},`+
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	if res := telReceive(t, client); !strings.Contains(string(res["error"]), "timed out") {
		t.Fatalf("want a timeout, got %s", res["error"])
	}
	timedOut := spanNamed(t, flush(t, tel, col), "tools/call block")
	if timedOut.Attributes["error.type"] != "timeout" || timedOut.Attributes["rpc.response.status_code"] != "-32603" || timedOut.Attributes["mcp.protocol.version"] != "2026-07-28" {
		t.Errorf("timed-out span: %+v", timedOut)
	}
}

func TestTelemetryTaskRunIsALinkedSpan(t *testing.T) {
	col := newTestCollector(t, nil)
	tel := newTestTelemetry(t, col, 64)
	rt, err := NewRuntime(RuntimeOptions{ServerInfo: Implementation{Name: "t", Version: "1"}, Tasks: TaskOptions{PollBurst: 1000}})
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	err = rt.AddTool(Tool{Name: "job", InputSchema: json.RawMessage(`{"type":"object"}`), Execution: &ToolExecution{TaskSupport: "required"}},
		func(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
			<-release
			return &ToolResult{Content: []Content{TextContent("done")}}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	tr, client, err := NewMemoryTransport(rt, Options{Observer: tel})
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- tr.Serve(context.Background()) }()
	defer func() { client.Close(); <-served }()
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + tasksCaps
	telSend(t, client, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"job","arguments":{},`+meta+`,"traceparent":"`+testParent+`"}}}`)
	var created struct {
		Result struct {
			TaskID string `json:"taskId"`
		} `json:"result"`
	}
	raw, _ := json.Marshal(telReceive(t, client))
	json.Unmarshal(raw, &created)
	if created.Result.TaskID == "" {
		t.Fatalf("no task: %s", raw)
	}
	changed, stop, err := managerOf(rt).store.Watch(context.Background(), created.Result.TaskID)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	close(release)
	// The run's span ends before the task's status changes: once the store
	// says completed, it has ended. (Polling tasks/get would fill the span
	// queue with its own spans on a slow machine.)
	for {
		rec, err := managerOf(rt).store.Get(context.Background(), created.Result.TaskID)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Status == TaskCompleted {
			break
		}
		waitFor(t, changed, "the task to complete")
	}
	spans := flush(t, tel, col)
	call := spanNamed(t, spans, "tools/call job")
	run := spanNamed(t, spans, "task run job")
	if call.TraceID != testTraceID || call.ParentSpanID != testParentID {
		t.Errorf("the call's span: %+v", call)
	}
	if run.TraceID == testTraceID || run.ParentSpanID != "" || len(run.Links) != 1 || run.Links[0].SpanID != call.SpanID || run.Links[0].TraceID != call.TraceID {
		t.Errorf("the task's run is not a root span linked to the call's: %+v (call %+v)", run, call)
	}
}

// A request whose span is not recorded (not sampled) still counts in the
// operation metrics with the same attributes as a recorded one: the two
// telemetries' /metrics list the same operation series and counts.
func TestTelemetryUnsampledRequestsKeepTheirMetrics(t *testing.T) {
	seriesOf := func(opts TelemetryOptions) []string {
		opts.MetricInterval, opts.Logger = time.Hour, slog.New(slog.DiscardHandler)
		tel := mustTelemetry(t, opts)
		t.Cleanup(func() { tel.Shutdown(context.Background()) })
		client := memorySession(t, telemetryRuntime(t, nil), Options{Observer: tel})
		for _, line := range []string{
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"greet","arguments":{}}}`,
			`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"fail","arguments":{}}}`,
			`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"missing","arguments":{}}}`,
			`{"jsonrpc":"2.0","id":4,"method":"ping"}`,
		} {
			telSend(t, client, line)
			for res := telReceive(t, client); res["id"] == nil; res = telReceive(t, client) {
			}
		}
		w := httptest.NewRecorder()
		tel.MetricsHandler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		var series []string
		for line := range strings.Lines(w.Body.String()) {
			if strings.HasPrefix(line, "mcp_server_operation_duration_seconds_count") {
				series = append(series, strings.TrimSpace(line))
			}
		}
		return series
	}
	recorded := seriesOf(TelemetryOptions{SampleRatio: 1})
	unrecorded := seriesOf(TelemetryOptions{SampleRatio: None})
	if len(recorded) != 5 || !slices.Equal(recorded, unrecorded) { // initialize and the four
		t.Errorf("operation series, every span recorded:\n%s\nnone recorded:\n%s", strings.Join(recorded, "\n"), strings.Join(unrecorded, "\n"))
	}
}

// Under a request that is not recorded, StartSpan makes no span: it returns
// its context as is and a nil Span; under a recorded one it makes a child.
func TestStartSpanUnderAnUnsampledRequest(t *testing.T) {
	for _, tt := range []struct {
		ratio     float64
		wantChild bool
	}{{None, false}, {1, true}} {
		tel := mustTelemetry(t, TelemetryOptions{SampleRatio: tt.ratio, MetricInterval: time.Hour, Logger: slog.New(slog.DiscardHandler)})
		op := &OperationStart{Method: "tools/call", RequestID: "1", Values: context.Background(), Received: time.Now(), Params: []byte(`{"name":"echo"}`)}
		ctx := contextWithOperationSpan(context.Background(), tel.StartOperation(op))
		got, span := StartSpan(ctx, "child")
		if (span != nil) != tt.wantChild || (got != ctx) != tt.wantChild {
			t.Errorf("ratio %v: span %v, new context %v; want a child: %v", tt.ratio, span != nil, got != ctx, tt.wantChild)
		}
		span.End(nil)
		tel.Shutdown(context.Background())
	}
}
