package main

import (
	"context"
	"encoding/json"
	"log"
	"os"
	"strings"
)

// A server of your own: two tools and a resource, served on stdin/stdout.
func Example() {
	rt, err := NewRuntime(RuntimeOptions{ServerInfo: Implementation{Name: "notes", Version: "1.0.0"}})
	if err != nil {
		log.Fatal(err)
	}
	textArg := json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)
	rt.AddTool(Tool{Name: "upper", Description: "Upper-cases text", InputSchema: textArg},
		func(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
			var args struct {
				Text string `json:"text"`
			}
			if err := req.Bind(&args); err != nil {
				return nil, err // the client sees an isError result
			}
			return TextResult(strings.ToUpper(args.Text)), nil
		})
	rt.AddTool(Tool{Name: "count", Description: "Counts the words of text", InputSchema: textArg},
		func(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
			var args struct {
				Text string `json:"text"`
			}
			if err := req.Bind(&args); err != nil {
				return nil, err
			}
			return &ToolResult{StructuredContent: map[string]int{"words": len(strings.Fields(args.Text))}}, nil
		})
	rt.AddResource(Resource{URI: "notes://today", Name: "today", MIMEType: "text/plain"},
		func(ctx context.Context, req *HandlerRequest) (*ResourceResult, error) {
			return &ResourceResult{Contents: []ResourceContents{{Text: "Buy milk"}}}, nil
		})

	// A real server passes Input: os.Stdin; here one request stands in for a client.
	in := strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"upper","arguments":{"text":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	if err := Serve(context.Background(), rt, Options{Input: in, Output: os.Stdout}); err != nil {
		log.Fatal(err)
	}
	// Output: {"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"HI"}],"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"notes","version":"1.0.0"}}}}
}
