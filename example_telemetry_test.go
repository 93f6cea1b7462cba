package main

import (
	"bufio"
	"context"
	"fmt"
	"log"
	"net/http/httptest"
	"strings"
)

// Telemetry: a Telemetry is an Observer. Given to a transport, it records a
// span per request (exported over OTLP when an endpoint is configured) and
// the metrics of OpenTelemetry's MCP conventions, which MetricsHandler
// serves to Prometheus. StartSpan starts a child span in a handler.
func ExampleNewTelemetry() {
	rt, err := NewRuntime(RuntimeOptions{ServerInfo: Implementation{Name: "demo", Version: "1.0.0"}})
	if err != nil {
		log.Fatal(err)
	}
	// region span
	err = rt.AddTool(Tool{Name: "lookup", Description: "Looks a word up"},
		func(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
			ctx, span := StartSpan(ctx, "dictionary lookup") // nil, and free, when not sampled
			defer span.End(nil)
			span.SetAttribute("dictionary", "en")
			_ = ctx // pass ctx on: what it starts is a child of the span
			return TextResult("found"), nil
		})
	// endregion span
	if err != nil {
		log.Fatal(err)
	}
	// region telemetry
	getenv := map[string]string{"OTEL_SERVICE_NAME": "demo"} // in a program: os.Getenv
	opts, enabled, err := TelemetryOptionsFromEnv(func(name string) string { return getenv[name] })
	if err != nil {
		log.Fatal(err)
	}
	var observer Observer
	var tel *Telemetry
	if enabled {
		tel, err = NewTelemetry(opts)
		if err != nil {
			log.Fatal(err)
		}
		defer tel.Shutdown(context.Background()) // flushes what is queued
		observer = tel
	}
	// endregion telemetry
	if tel == nil {
		log.Fatal("OTEL_SDK_DISABLED is set")
	}
	c := serveExample(rt, Options{Observer: observer}, ProtocolVersion20251125, `{}`)
	c.call(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"lookup"}}`)
	c.close()

	scrape := httptest.NewRecorder()
	tel.MetricsHandler().ServeHTTP(scrape, httptest.NewRequest("GET", "/metrics", nil))
	lines := bufio.NewScanner(scrape.Body)
	for lines.Scan() {
		if strings.HasPrefix(lines.Text(), "mcp_server_operation_duration_seconds_count") {
			fmt.Println(lines.Text())
		}
	}
	// Output:
	// {"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"found"}]}}
	// served: <nil>
	// mcp_server_operation_duration_seconds_count{mcp_method_name="initialize",network_transport="pipe"} 1
	// mcp_server_operation_duration_seconds_count{gen_ai_operation_name="execute_tool",gen_ai_tool_name="lookup",mcp_method_name="tools/call",mcp_protocol_version="2025-11-25",network_transport="pipe"} 1
}
