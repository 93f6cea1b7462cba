package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

const echo2026Meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}`

func TestTelemetryHTTPHeaderParentLinkAndClientAddress(t *testing.T) {
	col := newTestCollector(t, nil)
	tel := newTestTelemetry(t, col, 64)
	s := newHTTPTestServer(t, nil, HTTPOptions{Observer: tel})
	const headerParent = "00-11111111111111111111111111111111-2222222222222222-01"
	post := func(id, meta string) {
		h := stateless("tools/call", "echo")
		h["Traceparent"] = headerParent
		body := `{"jsonrpc":"2.0","id":"` + id + `","method":"tools/call","params":{"name":"echo","arguments":{"text":"` + id + `"},` + echo2026Meta + meta + `}}}`
		if got := readBody(t, s.post(h, body)); !strings.Contains(got, `"text":"`+id+`"`) {
			t.Fatalf("POST %s: %s", id, got)
		}
	}
	post("header-only", "")
	post("both", `,"traceparent":"`+testParent+`"`)
	spans := flush(t, tel, col)
	var headerOnly, both otlpSpan
	for _, sp := range spans {
		switch sp.Attributes["jsonrpc.request.id"] {
		case "header-only":
			headerOnly = sp
		case "both":
			both = sp
		}
	}
	if headerOnly.TraceID != "11111111111111111111111111111111" || headerOnly.ParentSpanID != "2222222222222222" || len(headerOnly.Links) != 0 {
		t.Errorf("with the header alone it is the parent: %+v", headerOnly)
	}
	if both.TraceID != testTraceID || both.ParentSpanID != testParentID || len(both.Links) != 1 ||
		both.Links[0].TraceID != "11111111111111111111111111111111" || both.Links[0].SpanID != "2222222222222222" {
		t.Errorf("with both, _meta is the parent and the header a link: %+v", both)
	}
	for _, sp := range []otlpSpan{headerOnly, both} {
		if sp.Attributes["client.address"] != "127.0.0.1" || sp.Attributes["network.transport"] != "tcp" || sp.Attributes["network.protocol.name"] != "http" || sp.Name != "tools/call echo" {
			t.Errorf("HTTP attributes: %+v", sp)
		}
	}
}

// serveWhileExporting serves n echo requests over memory with tel as
// observer and fails the test unless each is answered.
func serveWhileExporting(t *testing.T, tel *Telemetry, n int) {
	t.Helper()
	tr, client, err := NewMemoryTransport(telemetryRuntime(t, nil), Options{Observer: tel})
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- tr.Serve(context.Background()) }()
	defer func() { client.Close(); <-served }()
	for i := range n {
		telSend(t, client, `{"jsonrpc":"2.0","id":`+strconv.Itoa(i)+`,"method":"tools/call","params":{"name":"greet","arguments":{},`+echo2026Meta+`}}}`)
		if res := telReceive(t, client); res["result"] == nil {
			t.Fatalf("request %d: %v", i, res)
		}
	}
}

func TestTelemetryCollectorDownDropsAndCounts(t *testing.T) {
	// A port nobody listens on: every export fails at once.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	const queue = 8
	tel := mustTelemetry(t, TelemetryOptions{TracesEndpoint: "http://" + addr + "/v1/traces", SampleRatio: 1, MaxQueue: queue,
		BatchDelay: time.Hour, MetricInterval: time.Hour, Timeout: 200 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	// Each request ends a server span and a child span: 2 per request.
	serveWhileExporting(t, tel, 50)
	if got := len(tel.export.queue); got > queue {
		t.Fatalf("queue holds %d spans, beyond its bound %d", got, queue)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tel.Shutdown(ctx)
	dropped, failed := tel.export.dropped.Load(), tel.export.failed.Load()
	if dropped+failed != 100 || dropped == 0 {
		t.Fatalf("dropped %d + failed %d, want 100 spans accounted for, some dropped for the full queue", dropped, failed)
	}
	var b strings.Builder
	tel.metrics.writePrometheus(&b)
	if !strings.Contains(b.String(), `otel_sdk_span_dropped{reason="queue_full"} `+strconv.FormatUint(dropped, 10)) {
		t.Fatalf("drops not in the metrics:\n%s", b.String())
	}
}

func TestTelemetryCollector503IsRetriedThenAccepted(t *testing.T) {
	var calls atomic.Int32
	col := newTestCollector(t, func(n int) int {
		calls.Add(1)
		if n <= 2 {
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	})
	tel := newTestTelemetry(t, col, 64)
	serveWhileExporting(t, tel, 3)
	spans := flush(t, tel, col)
	// The spans go at shutdown, then the metrics: two 503s, the spans, the
	// metrics.
	if len(spans) != 6 || calls.Load() != 4 || len(col.metrics) != 1 {
		t.Fatalf("got %d spans and %d metric exports after %d calls, want 6 spans after 2 refusals, then the metrics", len(spans), len(col.metrics), calls.Load())
	}
	if tel.export.failed.Load() != 0 || tel.export.exported.Load() != 6 {
		t.Fatalf("failed %d exported %d", tel.export.failed.Load(), tel.export.exported.Load())
	}
}

func TestTelemetryCollectorGarbageAndPersistent503(t *testing.T) {
	tests := []struct {
		name   string
		handle http.HandlerFunc
	}{
		{"garbage body", func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusOK)
			io.WriteString(w, strings.Repeat("\x00garbage", 20000))
		}},
		{"always 503", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) }},
		{"400", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusBadRequest) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			col := newTestCollector(t, nil)
			col.Config.Handler = tt.handle
			tel := mustTelemetry(t, TelemetryOptions{TracesEndpoint: col.URL + "/v1/traces", SampleRatio: 1, MaxQueue: 16,
				BatchDelay: time.Hour, MetricInterval: time.Hour, Timeout: 300 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
			serveWhileExporting(t, tel, 20)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := tel.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
			e := tel.export
			if total := e.dropped.Load() + e.failed.Load() + e.exported.Load(); total != 40 {
				t.Fatalf("%d spans accounted for, want 40", total)
			}
		})
	}
}

func TestTelemetryOptionsFromEnv(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		enabled bool
		wantErr string
		check   func(TelemetryOptions) bool
	}{
		{"nothing", nil, true, "", func(o TelemetryOptions) bool { return o.TracesEndpoint == "" && o.ParentBased && o.SampleRatio == 1 }},
		{"disabled", map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, false, "", nil},
		{"base endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318/"}, true, "", func(o TelemetryOptions) bool {
			return o.TracesEndpoint == "http://c:4318/v1/traces" && o.MetricsEndpoint == "http://c:4318/v1/metrics"
		}},
		{"per-signal endpoint wins", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://t:1/x"}, true, "", func(o TelemetryOptions) bool {
			return o.TracesEndpoint == "http://t:1/x" && o.MetricsEndpoint == "http://c:4318/v1/metrics"
		}},
		{"metrics off", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_METRICS_EXPORTER": "none"}, true, "", func(o TelemetryOptions) bool { return o.MetricsEndpoint == "" }},
		{"service and resource", map[string]string{"OTEL_SERVICE_NAME": "svc", "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=prod,team=a%20b"}, true, "", func(o TelemetryOptions) bool {
			return o.ServiceName == "svc" && o.ResourceAttributes["team"] == "a b" && o.ResourceAttributes["deployment.environment"] == "prod"
		}},
		{"service from resource", map[string]string{"OTEL_RESOURCE_ATTRIBUTES": "service.name=r"}, true, "", func(o TelemetryOptions) bool { return o.ServiceName == "r" }},
		{"parentbased ratio", map[string]string{"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.25"}, true, "", func(o TelemetryOptions) bool { return o.ParentBased && o.SampleRatio == 0.25 }},
		{"ratio", map[string]string{"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.5"}, true, "", func(o TelemetryOptions) bool { return !o.ParentBased && o.SampleRatio == 0.5 }},
		{"always off", map[string]string{"OTEL_TRACES_SAMPLER": "always_off"}, true, "", func(o TelemetryOptions) bool { return !o.ParentBased && o.SampleRatio == None }},
		{"parentbased always off", map[string]string{"OTEL_TRACES_SAMPLER": "parentbased_always_off"}, true, "", func(o TelemetryOptions) bool { return o.ParentBased && o.SampleRatio == None }},
		{"ratio 0", map[string]string{"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0"}, true, "", func(o TelemetryOptions) bool { return !o.ParentBased && o.SampleRatio == None }},
		{"bad ratio", map[string]string{"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "2"}, false, "OTEL_TRACES_SAMPLER_ARG", nil},
		{"bad sampler", map[string]string{"OTEL_TRACES_SAMPLER": "jaeger_remote"}, false, "OTEL_TRACES_SAMPLER", nil},
		{"grpc refused", map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, false, "OTEL_EXPORTER_OTLP_PROTOCOL", nil},
		{"bad endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "c:4318"}, false, "OTEL_EXPORTER_OTLP", nil},
		{"bad queue", map[string]string{"OTEL_BSP_MAX_QUEUE_SIZE": "-1"}, false, "OTEL_BSP_MAX_QUEUE_SIZE", nil},
		{"timeout", map[string]string{"OTEL_EXPORTER_OTLP_TIMEOUT": "250"}, true, "", func(o TelemetryOptions) bool { return o.Timeout == 250*time.Millisecond }},
		{"headers", map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer%20x"}, true, "", func(o TelemetryOptions) bool { return o.Headers["authorization"] == "Bearer x" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts, enabled, err := TelemetryOptionsFromEnv(func(k string) string { return tt.env[k] })
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one naming %s", err, tt.wantErr)
				}
				return
			}
			if err != nil || enabled != tt.enabled {
				t.Fatalf("enabled %v err %v", enabled, err)
			}
			if tt.check != nil && !tt.check(opts) {
				t.Fatalf("options %+v", opts)
			}
		})
	}
}

func TestTelemetrySamplerRatio(t *testing.T) {
	tel := mustTelemetry(t, TelemetryOptions{SampleRatio: 0.25, ParentBased: true})
	sampled := 0
	for i := range 4000 {
		var id [16]byte
		id[8], id[9], id[15] = byte(i>>8), byte(i), byte(i*7)
		if tel.sampled(SpanContext{}, false, id) {
			sampled++
		}
	}
	// Trace ids whose upper bits (8 and 9) walk 0..4000 of 65536: all
	// below a quarter, so all sampled.
	if sampled != 4000 {
		t.Fatalf("sampled %d of 4000 low trace ids at ratio 0.25", sampled)
	}
	high := [16]byte{8: 0xff}
	if tel.sampled(SpanContext{}, false, high) {
		t.Fatal("a trace id above the ratio was sampled")
	}
	parent, _ := ParseTraceparent("00-" + testTraceID + "-" + testParentID + "-00")
	if tel.sampled(parent, true, high) || !tel.sampled(SpanContext{Flags: 1}, true, high) {
		t.Fatal("parent-based sampling does not follow the parent's flag")
	}
}

func TestTraceLogHandler(t *testing.T) {
	var b strings.Builder
	logger := slog.New(TraceLogHandler(slog.NewTextHandler(&b, nil)))
	col := newTestCollector(t, nil)
	tel := newTestTelemetry(t, col, 8)
	span := tel.StartOperation(&OperationStart{Method: "ping", Params: []byte(`{"_meta":{"traceparent":"` + testParent + `"}}`)})
	ctx := contextWithOperationSpan(context.Background(), span)
	logger.InfoContext(ctx, "inside")
	logger.With("k", "v").InfoContext(context.Background(), "outside")
	out := b.String()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "trace_id="+testTraceID) || !strings.Contains(lines[0], "span_id="+span.SpanContext().SpanIDString()) || strings.Contains(lines[1], "trace_id") {
		t.Fatalf("log:\n%s", out)
	}
	span.End(OperationEnd{})
}

func TestTelemetryMetricSeriesAreBounded(t *testing.T) {
	m := newTelemetryMetrics()
	for i := range maxSeries + 100 {
		m.ops.record([]telemetryAttr{{key: "mcp.method.name", value: "m" + strconv.Itoa(i)}}, 0.015)
	}
	if len(m.ops.series) != maxSeries+1 {
		t.Fatalf("%d series, want %d and the overflow one", len(m.ops.series), maxSeries)
	}
	var b strings.Builder
	m.writePrometheus(&b)
	overflow := `mcp_server_operation_duration_seconds_count{otel_metric_overflow="true"} 100`
	bucket := `mcp_server_operation_duration_seconds_bucket{mcp_method_name="m0",le="0.01"} 0` + "\n" +
		`mcp_server_operation_duration_seconds_bucket{mcp_method_name="m0",le="0.02"} 1`
	if !strings.Contains(b.String(), overflow) || !strings.Contains(b.String(), bucket) {
		t.Fatalf("exposition lacks %q or %q", overflow, bucket)
	}
}
