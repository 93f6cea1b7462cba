package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// schema2020 uses 2020-12 keywords a lossy decoder would drop or reorder.
const schema2020 = `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","$defs":{"address":{"$anchor":"addr","type":"object","properties":{"street":{"type":"string"}}}},"properties":{"name":{"type":"string"},"address":{"$ref":"#/$defs/address"}},"required":["name"],"additionalProperties":false,"allOf":[{"if":{"properties":{"name":{"const":"x"}}},"then":{"required":["address"]},"else":{}}]}`

func TestAddToolValidation(t *testing.T) {
	rt := newTestRuntime(t, testOptions())
	mustAddTool(t, rt, Tool{Name: "taken"}, echoTool("x"))
	tests := []struct {
		name    string
		tool    Tool
		handler ToolHandler
		wantErr string
	}{
		{"all allowed characters", Tool{Name: "Az09_.-"}, echoTool("x"), ""},
		{"128 characters", Tool{Name: strings.Repeat("a", 128)}, echoTool("x"), ""},
		{"empty name", Tool{Name: ""}, echoTool("x"), `adding tool "": a tool name is 1 to 128 characters of A-Z, a-z, 0-9, '_', '-' and '.'`},
		{"129 characters", Tool{Name: strings.Repeat("a", 129)}, echoTool("x"), "a tool name is 1 to 128"},
		{"space", Tool{Name: "a b"}, echoTool("x"), "a tool name is 1 to 128"},
		{"slash", Tool{Name: "a/b"}, echoTool("x"), "a tool name is 1 to 128"},
		{"non-ASCII", Tool{Name: "café"}, echoTool("x"), "a tool name is 1 to 128"},
		{"duplicate", Tool{Name: "taken"}, echoTool("x"), `adding tool "taken": a tool of that name is already registered`},
		{"nil handler", Tool{Name: "h"}, nil, `adding tool "h": nil handler`},
		{"schema not JSON", Tool{Name: "s1", InputSchema: json.RawMessage(`{`)}, echoTool("x"), "inputSchema must be"},
		{"schema an array", Tool{Name: "s2", InputSchema: json.RawMessage(`[]`)}, echoTool("x"), "inputSchema must be"},
		{"schema type string", Tool{Name: "s3", InputSchema: json.RawMessage(`{"type":"string"}`)}, echoTool("x"), "inputSchema must be"},
		{"schema without type", Tool{Name: "s4", InputSchema: json.RawMessage(`{"properties":{}}`)}, echoTool("x"), "inputSchema must be"},
		{"required not strings", Tool{Name: "s5", InputSchema: json.RawMessage(`{"type":"object","required":[1]}`)}, echoTool("x"), "inputSchema must be"},
		{"output schema an array", Tool{Name: "s6", OutputSchema: json.RawMessage(`[]`)}, echoTool("x"), "outputSchema must be a JSON object"},
		{"meta a string", Tool{Name: "s7", Meta: json.RawMessage(`"m"`)}, echoTool("x"), "_meta must be a JSON object"},
		{"2020-12 schema", Tool{Name: "s8", InputSchema: json.RawMessage(schema2020)}, echoTool("x"), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := rt.AddTool(tt.tool, tt.handler)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("AddTool: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("AddTool error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
	if rt.RemoveTool("never-added") {
		t.Error("RemoveTool of an unknown tool reported true")
	}
}

func TestListToolsShapes(t *testing.T) {
	rt := newTestRuntime(t, testOptions())
	readOnly := true
	input := json.RawMessage("{\n  \"type\": \"object\",\n  \"properties\": {\"b\": {}, \"a\": {\"type\": \"string\", \"pattern\": \"<&>\"}}\n}")
	mustAddTool(t, rt, Tool{
		Name: "full", Title: "Full", Description: "all fields",
		InputSchema:  input,
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`),
		Annotations:  &ToolAnnotations{Title: "F", ReadOnlyHint: &readOnly},
		Icons:        []Icon{{Src: "data:image/png;base64,AA==", Theme: "dark"}},
		Meta:         json.RawMessage(`{"com.example/k":"v"}`),
	}, echoTool("x"))
	mustAddTool(t, rt, Tool{Name: "json_schema_2020_12_tool", InputSchema: json.RawMessage(schema2020)}, echoTool("x"))
	input[5] = 'X' // the runtime keeps its own copy

	full := `{"name":"full","title":"Full","description":"all fields","inputSchema":{"type":"object","properties":{"b":{},"a":{"type":"string","pattern":"<&>"}}},"outputSchema":{"type":"object","properties":{"n":{"type":"integer"}}},"annotations":{"title":"F","readOnlyHint":true}%s,"_meta":{"com.example/k":"v"}}`
	icons := `,"icons":[{"src":"data:image/png;base64,AA==","theme":"dark"}]`
	schemaTool := `{"name":"json_schema_2020_12_tool","inputSchema":` + schema2020 + `}`
	tools := func(icons string) string { return `{"tools":[` + fmt.Sprintf(full, icons) + `,` + schemaTool + `]` }

	wantResult(t, dispatch(rt, legacyRequest(ProtocolVersion20251125, "tools/list", "")), tools(icons)+`}`)
	wantResult(t, dispatch(rt, legacyRequest(ProtocolVersion20250618, "tools/list", "")), tools("")+`}`)
	wantResult(t, dispatch(rt, statelessRequest("tools/list", "")), tools(icons)+`,`+listed2026+`}`)
}

func TestCallTool(t *testing.T) {
	rt := newTestRuntime(t, testOptions())
	png := []byte{0x89, 'P', 'N', 'G'}
	add := func(name string, schema string, h ToolHandler) {
		t.Helper()
		tool := Tool{Name: name}
		if schema != "" {
			tool.InputSchema = json.RawMessage(schema)
		}
		mustAddTool(t, rt, tool, h)
	}
	result := func(res *ToolResult) ToolHandler {
		return func(context.Context, *HandlerRequest) (*ToolResult, error) { return res, nil }
	}
	add("text", "", result(TextResult("This is a simple text response for testing.")))
	add("image", "", result(&ToolResult{Content: []Content{ImageContent(png, "image/png")}}))
	add("audio", "", result(&ToolResult{Content: []Content{AudioContent([]byte("RIFF"), "audio/wav")}}))
	add("embedded", "", result(&ToolResult{Content: []Content{EmbeddedResourceContent(ResourceContents{URI: "test://embedded-resource", MIMEType: "text/plain", Text: "This is an embedded resource content."})}}))
	add("mixed", "", result(&ToolResult{Content: []Content{
		TextContent("Multiple content types test:"),
		ImageContent(png, "image/png"),
		EmbeddedResourceContent(ResourceContents{URI: "test://mixed-content-resource", MIMEType: "application/json", Text: `{"test":"data","value":123}`}),
		ResourceLinkContent(Resource{URI: "test://static-text", Name: "static", MIMEType: "text/plain"}),
	}}))
	add("structured", "", result(&ToolResult{Content: []Content{TextContent(`{"n":3}`)}, StructuredContent: map[string]int{"n": 3}, Meta: json.RawMessage(`{"com.example/trace":"t1"}`)}))
	add("fails", "", func(context.Context, *HandlerRequest) (*ToolResult, error) {
		return nil, errors.New("This tool intentionally returns an error for testing")
	})
	add("reports_error", "", result(&ToolResult{Content: []Content{TextContent("bad input")}, IsError: true}))
	add("needs_sampling", "", func(_ context.Context, req *HandlerRequest) (*ToolResult, error) {
		if err := req.RequireClientCapability("sampling"); err != nil {
			return nil, fmt.Errorf("checking capabilities: %w", err)
		}
		return TextResult("sampled"), nil
	})
	add("nil", "", result(nil))
	add("echo", `{"type":"object","properties":{"text":{"type":"string"},"n":{}},"required":["text","n"]}`, func(_ context.Context, req *HandlerRequest) (*ToolResult, error) {
		var args struct {
			Text string `json:"text"`
		}
		if err := req.Bind(&args); err != nil {
			return nil, err
		}
		return TextResult(args.Text), nil
	})

	tests := []struct {
		name, params, legacy string
	}{
		{"text", `{"name":"text"}`, `{"content":[{"type":"text","text":"This is a simple text response for testing."}]}`},
		{"image", `{"name":"image","arguments":{}}`, `{"content":[{"type":"image","data":"iVBORw==","mimeType":"image/png"}]}`},
		{"audio", `{"name":"audio"}`, `{"content":[{"type":"audio","data":"UklGRg==","mimeType":"audio/wav"}]}`},
		{"embedded", `{"name":"embedded"}`, `{"content":[{"type":"resource","resource":{"uri":"test://embedded-resource","mimeType":"text/plain","text":"This is an embedded resource content."}}]}`},
		{"mixed", `{"name":"mixed"}`, `{"content":[{"type":"text","text":"Multiple content types test:"},{"type":"image","data":"iVBORw==","mimeType":"image/png"},{"type":"resource","resource":{"uri":"test://mixed-content-resource","mimeType":"application/json","text":"{\"test\":\"data\",\"value\":123}"}},{"type":"resource_link","uri":"test://static-text","name":"static","mimeType":"text/plain"}]}`},
		{"handler error is a result", `{"name":"fails"}`, `{"content":[{"type":"text","text":"This tool intentionally returns an error for testing"}],"isError":true}`},
		{"isError result", `{"name":"reports_error"}`, `{"content":[{"type":"text","text":"bad input"}],"isError":true}`},
		{"declared capability", `{"name":"needs_sampling"}`, `{"content":[{"type":"text","text":"sampled"}]}`},
		{"nil result", `{"name":"nil"}`, `{"content":[]}`},
		{"arguments bound", `{"name":"echo","arguments":{"text":"hi <&>","n":null}}`, `{"content":[{"type":"text","text":"hi <&>"}]}`},
		{"missing required arguments", `{"name":"echo","arguments":{"x":1}}`, `{"content":[{"type":"text","text":"Invalid arguments for tool echo: missing required argument(s): text, n"}],"isError":true}`},
		{"missing arguments object", `{"name":"echo"}`, `{"content":[{"type":"text","text":"Invalid arguments for tool echo: missing required argument(s): text, n"}],"isError":true}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantResult(t, dispatch(rt, legacyRequest(ProtocolVersion20251125, "tools/call", tt.params)), tt.legacy)
			stateless := strings.TrimSuffix(tt.legacy, "}") + "," + complete2026 + "}"
			caps := `{"sampling":{}}`
			r := newRequest("tools/call", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":`+caps+`},`+tt.params[1:])
			wantResult(t, dispatch(rt, r), stateless)
		})
	}

	t.Run("bind failure is a result", func(t *testing.T) {
		var res struct {
			Content []struct{ Text string }
			IsError bool
		}
		decodeResult(t, dispatch(rt, statelessRequest("tools/call", `{"name":"echo","arguments":{"text":5,"n":1}}`)), &res)
		if !res.IsError || len(res.Content) != 1 || res.Content[0].Text != `Invalid arguments: "text" must be a string` {
			t.Errorf("result %+v", res)
		}
	})
	t.Run("structured content and handler _meta", func(t *testing.T) {
		wantResult(t, dispatch(rt, legacyRequest(ProtocolVersion20251125, "tools/call", `{"name":"structured"}`)),
			`{"content":[{"type":"text","text":"{\"n\":3}"}],"structuredContent":{"n":3},"_meta":{"com.example/trace":"t1"}}`)
		wantResult(t, dispatch(rt, statelessRequest("tools/call", `{"name":"structured"}`)),
			`{"content":[{"type":"text","text":"{\"n\":3}"}],"structuredContent":{"n":3},"resultType":"complete","_meta":{"com.example/trace":"t1","io.modelcontextprotocol/serverInfo":{"name":"srv","version":"1.0"}}}`)
	})

	errs := []struct {
		name, params string
		code         int
		message      string
		data         string
	}{
		{"unknown tool", `{"name":"nope"}`, CodeInvalidParams, "Unknown tool: nope", ""},
		{"name missing", `{}`, CodeInvalidParams, "Invalid params: tools/call requires a string name", ""},
		{"name not a string", `{"name":3}`, CodeInvalidParams, "Invalid params: tools/call requires a string name", ""},
		{"arguments an array", `{"name":"text","arguments":[1]}`, CodeInvalidParams, "Invalid params: arguments must be an object", ""},
		{"arguments null", `{"name":"text","arguments":null}`, CodeInvalidParams, "Invalid params: arguments must be an object", ""},
		{"undeclared capability", `{"name":"needs_sampling"}`, CodeMissingCapability, "Missing required client capability: sampling", `{"requiredCapabilities":{"sampling":{}}}`},
	}
	for _, tt := range errs {
		t.Run(tt.name, func(t *testing.T) {
			wantError(t, dispatch(rt, statelessRequest("tools/call", tt.params)), tt.code, tt.message, tt.data)
		})
	}
}

// TestToolContextIsPassed: the handler gets the Dispatch context.
func TestToolContextIsPassed(t *testing.T) {
	rt := newTestRuntime(t, testOptions())
	type key struct{}
	mustAddTool(t, rt, Tool{Name: "ctx"}, func(ctx context.Context, _ *HandlerRequest) (*ToolResult, error) {
		return TextResult(fmt.Sprint(ctx.Value(key{}))), nil
	})
	ctx := context.WithValue(context.Background(), key{}, "marker")
	wantResult(t, rt.Dispatch(ctx, legacyRequest(ProtocolVersion20251125, "tools/call", `{"name":"ctx"}`)), `{"content":[{"type":"text","text":"marker"}]}`)
}

// TestTaskToolNeedsTasks checks that a runtime without RuntimeOptions.Tasks
// refuses a tool that supports tasks, and keeps nothing of it.
func TestTaskToolNeedsTasks(t *testing.T) {
	rt := newTestRuntime(t, RuntimeOptions{ServerInfo: Implementation{Name: "srv", Version: "1.0"}})
	handler := func(context.Context, *HandlerRequest) (*ToolResult, error) { return TextResult("ok"), nil }
	for _, support := range []string{TaskOptional, TaskRequired} {
		err := rt.AddTool(Tool{Name: "long", Execution: &ToolExecution{TaskSupport: support}}, handler)
		if err == nil || !strings.Contains(err.Error(), "RuntimeOptions.Tasks") {
			t.Errorf("taskSupport %q without Tasks: err %v, want one naming RuntimeOptions.Tasks", support, err)
		}
	}
	if caps := rt.capabilities(); caps.Tools != nil || caps.Extensions != nil {
		t.Errorf("capabilities %+v after refused tools, want no tools and no extensions", caps)
	}
	if err := rt.AddTool(Tool{Name: "long", Execution: &ToolExecution{TaskSupport: TaskForbidden}}, handler); err != nil {
		t.Errorf("taskSupport forbidden without Tasks: %v", err)
	}
}
