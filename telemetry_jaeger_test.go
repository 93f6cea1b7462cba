package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The real binary exports to a real Jaeger (MCPSTDIO_JAEGER names its
// binary: .ci/telemetry builds it from github.com/jaegertracing/jaeger
// v1.75.0), over stdio and -http, and the trace is read back through
// Jaeger's HTTP query API. Without MCPSTDIO_JAEGER the test is skipped; CI
// sets it. MCPSTDIO_JAEGER_DUMP, when set, names a file that receives the
// traces as Jaeger returned them.

// jaegerProcess is a Jaeger all-in-one with in-memory storage, its OTLP/HTTP
// receiver and query API on loopback ports of its own.
type jaegerProcess struct {
	otlp, query string // base URLs
}

func startJaeger(t *testing.T) *jaegerProcess {
	t.Helper()
	bin := os.Getenv("MCPSTDIO_JAEGER")
	if bin == "" {
		t.Skip("MCPSTDIO_JAEGER is not set (.ci/telemetry builds Jaeger and sets it)")
	}
	otlp, query, grpc := "127.0.0.1:"+freeLoopbackPort(t), "127.0.0.1:"+freeLoopbackPort(t), "127.0.0.1:"+freeLoopbackPort(t)
	config := fmt.Sprintf(`service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: info
extensions:
  jaeger_storage:
    backends:
      mem:
        memory:
          max_traces: 10000
  jaeger_query:
    storage:
      traces: mem
    http:
      endpoint: %s
    grpc:
      endpoint: %s
receivers:
  otlp:
    protocols:
      http:
        endpoint: %s
processors:
  batch:
    timeout: 50ms
exporters:
  jaeger_storage_exporter:
    trace_storage: mem
`, query, grpc, otlp)
	path := filepath.Join(t.TempDir(), "jaeger.yaml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config", path)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	// Jaeger says when its receivers and query API listen.
	lines := bufio.NewScanner(stderr)
	var log strings.Builder
	ready := false
	for !ready && lines.Scan() {
		log.WriteString(lines.Text() + "\n")
		ready = strings.Contains(lines.Text(), "Everything is ready")
	}
	if !ready {
		t.Fatalf("Jaeger did not start: %s", log.String())
	}
	go io.Copy(io.Discard, stderr)
	return &jaegerProcess{otlp: "http://" + otlp, query: "http://" + query}
}

// jaegerSpan is a span as Jaeger's query API returns it.
type jaegerSpan struct {
	TraceID       string `json:"traceID"`
	SpanID        string `json:"spanID"`
	OperationName string `json:"operationName"`
	References    []struct {
		RefType string `json:"refType"`
		TraceID string `json:"traceID"`
		SpanID  string `json:"spanID"`
	} `json:"references"`
	Tags []struct {
		Key   string `json:"key"`
		Value any    `json:"value"`
	} `json:"tags"`
}

func (s jaegerSpan) tag(key string) string {
	for _, t := range s.Tags {
		if t.Key == key {
			return fmt.Sprint(t.Value)
		}
	}
	return ""
}

func (s jaegerSpan) parent() string {
	for _, r := range s.References {
		if r.RefType == "CHILD_OF" {
			return r.SpanID
		}
	}
	return ""
}

// traces polls Jaeger until service has spans with every name in want (its
// ingestion is asynchronous: the exporter's request returned before Jaeger
// stored the spans), and returns them by name.
func (j *jaegerProcess) traces(t *testing.T, service string, want ...string) map[string]jaegerSpan {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		resp, err := http.Get(j.query + "/api/traces?service=" + service + "&limit=100")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var got struct {
			Data []struct {
				Spans []jaegerSpan `json:"spans"`
			} `json:"data"`
		}
		json.Unmarshal(body, &got)
		spans := map[string]jaegerSpan{}
		for _, tr := range got.Data {
			for _, s := range tr.Spans {
				spans[s.OperationName] = s
			}
		}
		missing := ""
		for _, name := range want {
			if _, ok := spans[name]; !ok {
				missing = name
			}
		}
		if missing == "" {
			if dump := os.Getenv("MCPSTDIO_JAEGER_DUMP"); dump != "" {
				f, err := os.OpenFile(dump, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
				if err == nil {
					fmt.Fprintf(f, "%s\n", body)
					f.Close()
				}
			}
			return spans
		}
		if time.Now().After(deadline) {
			t.Fatalf("Jaeger has no span %q for %s: %s", missing, service, body)
		}
		<-tick.C
	}
}

func TestJaegerTraceOverStdio(t *testing.T) {
	j := startJaeger(t)
	service := fmt.Sprintf("mcpstdio-stdio-%d", time.Now().UnixNano())
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", j.otlp)
	t.Setenv("OTEL_METRICS_EXPORTER", "none") // Jaeger takes traces only
	t.Setenv("OTEL_SERVICE_NAME", service)
	p := startServer(t)
	p.call(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"jaeger-test","version":"1"}}}`)
	p.call(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"traceparent":"` + testParent + `"}}}`)
	p.call(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"test_error_handling","arguments":{}}}`)
	p.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":60000}}}`)
	p.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`)
	p.call(`{"jsonrpc":"2.0","id":4,"method":"ping"}`)
	// Closing stdin ends the session: the server flushes on exit. Every
	// line it wrote is JSON-RPC (exit fails the test otherwise): nothing of
	// the telemetry's reaches stdout.
	if status, rest := p.exit(); status != 0 || len(rest) != 0 {
		t.Fatalf("exit %d, trailing lines %v; stderr: %s", status, rest, p.stderrText())
	}
	spans := j.traces(t, service, "tools/call echo", "echo copy", "tools/call test_error_handling", "tools/call sleep")
	echo := spans["tools/call echo"]
	if echo.TraceID != testTraceID || echo.parent() != testParentID || echo.tag("span.kind") != "server" ||
		echo.tag("gen_ai.tool.name") != "echo" || echo.tag("mcp.method.name") != "tools/call" || echo.tag("jsonrpc.request.id") != "1" ||
		echo.tag("mcp.protocol.version") != "2025-06-18" || echo.tag("network.transport") != "pipe" || echo.tag("mcp.session.id") == "" {
		t.Errorf("tools/call echo: %+v", echo)
	}
	if child := spans["echo copy"]; child.TraceID != testTraceID || child.parent() != echo.SpanID {
		t.Errorf("the tool's span is not under the server's: %+v", child)
	}
	if failed := spans["tools/call test_error_handling"]; failed.tag("error") != "true" || failed.tag("error.type") != "tool_error" {
		t.Errorf("the tool error is not marked: %+v", failed)
	}
	if cancelled := spans["tools/call sleep"]; cancelled.tag("error") != "true" || cancelled.tag("error.type") != "cancelled" {
		t.Errorf("the cancellation is not marked: %+v", cancelled)
	}
}

func TestJaegerTraceOverHTTP(t *testing.T) {
	j := startJaeger(t)
	service := fmt.Sprintf("mcpstdio-http-%d", time.Now().UnixNano())
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", j.otlp)
	t.Setenv("OTEL_METRICS_EXPORTER", "none")
	t.Setenv("OTEL_SERVICE_NAME", service)
	p := startHTTPServer(t)
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},` + echo2026Meta + `}}}`
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, p.base+mcpPath, strings.NewReader(body))
	for k, v := range stateless("tools/call", "echo") {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Traceparent", testParent)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if got := readBody(t, resp); !strings.Contains(got, `"text":"hi"`) {
		t.Fatalf("echo over HTTP: %s", got)
	}
	if status := p.stop(); status != 0 {
		t.Fatalf("exit %d: %s", status, p.stderrText())
	}
	spans := j.traces(t, service, "tools/call echo", "echo copy")
	echo := spans["tools/call echo"]
	if echo.TraceID != testTraceID || echo.parent() != testParentID || echo.tag("client.address") != "127.0.0.1" ||
		echo.tag("network.transport") != "tcp" || echo.tag("mcp.protocol.version") != "2026-07-28" {
		t.Errorf("tools/call echo over HTTP: %+v", echo)
	}
	if child := spans["echo copy"]; child.parent() != echo.SpanID {
		t.Errorf("the tool's span is not under the server's: %+v", child)
	}
}
