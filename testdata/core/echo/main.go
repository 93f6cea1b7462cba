// Command echo serves one tool, echo, over stdio with the core's files alone,
// copied into package mcpcore (layers_test.go builds and runs it).
package main

import (
	"context"
	"encoding/json"
	"log"

	"vendored/mcpcore"
)

func main() {
	rt, err := mcpcore.NewRuntime(mcpcore.RuntimeOptions{ServerInfo: mcpcore.Implementation{Name: "core-echo", Version: "1.0.0"}})
	if err != nil {
		log.Fatal(err)
	}
	schema := json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)
	err = rt.AddTool(mcpcore.Tool{Name: "echo", Description: "Returns text", InputSchema: schema},
		func(ctx context.Context, req *mcpcore.HandlerRequest) (*mcpcore.ToolResult, error) {
			var args struct {
				Text string `json:"text"`
			}
			if err := req.Bind(&args); err != nil {
				return nil, err
			}
			return mcpcore.TextResult(args.Text), nil
		})
	if err != nil {
		log.Fatal(err)
	}
	if err := mcpcore.ServeStdio(context.Background(), rt, mcpcore.Options{}); err != nil {
		log.Fatal(err)
	}
}
