package main

import (
	"context"
	"encoding/json"
	"fmt"
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

	// A real server calls ServeStdio(ctx, rt, Options{}); here one request
	// stands in for a client.
	in := strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"upper","arguments":{"text":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	if err := Serve(context.Background(), rt, Options{Input: in, Output: os.Stdout}); err != nil {
		log.Fatal(err)
	}
	// Output: {"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"HI"}],"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"notes","version":"1.0.0"}}}}
}

// A typed tool: the schemas come from the Go types, the arguments arrive
// bound and checked, and the result is structured content with a text copy.
func ExampleAddTypedTool() {
	rt, err := NewRuntime(RuntimeOptions{ServerInfo: Implementation{Name: "demo", Version: "1.0"}})
	if err != nil {
		log.Fatal(err)
	}
	// region typed-tool
	type sumIn struct {
		Numbers []float64 `json:"numbers" jsonschema:"The numbers to add"`
	}
	type sumOut struct {
		Sum float64 `json:"sum"`
	}
	err = AddTypedTool(rt, Tool{Name: "sum", Description: "Adds numbers"},
		func(ctx context.Context, req *HandlerRequest, in sumIn) (sumOut, error) {
			var out sumOut
			for _, n := range in.Numbers {
				out.Sum += n
			}
			return out, nil
		})
	// endregion typed-tool
	if err != nil {
		log.Fatal(err)
	}
	call := func(args string) {
		reply := rt.Dispatch(context.Background(), &Request{Method: "tools/call", ID: json.RawMessage(`1`),
			Params: json.RawMessage(`{"name":"sum","arguments":` + args + `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}`)})
		fmt.Println(string(reply.Result))
	}
	call(`{"numbers":[1,2.5]}`)
	call(`{"numbers":[1,"2"]}`)
	// Output:
	// {"content":[{"type":"text","text":"{\"sum\":3.5}"}],"structuredContent":{"sum":3.5},"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"demo","version":"1.0"}}}
	// {"content":[{"type":"text","text":"Invalid arguments: \"numbers[1]\" must be a number"}],"isError":true,"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"demo","version":"1.0"}}}
}

// Testing a server of your own with no pipes and no subprocess: the
// in-memory transport drives it as a client would, one message at a time.
func ExampleNewMemoryTransport() {
	rt, err := NewRuntime(RuntimeOptions{ServerInfo: Implementation{Name: "greeter", Version: "1.0.0"}})
	if err != nil {
		log.Fatal(err)
	}
	type in struct {
		Name string `json:"name"`
	}
	type out struct {
		Greeting string `json:"greeting"`
	}
	err = AddTypedTool(rt, Tool{Name: "greet"}, func(ctx context.Context, req *HandlerRequest, args in) (out, error) {
		return out{Greeting: "Hello, " + args.Name}, nil
	})
	if err != nil {
		log.Fatal(err)
	}
	// region memory
	tr, client, err := NewMemoryTransport(rt, Options{})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	served := make(chan error, 1)
	go func() { served <- tr.Serve(ctx) }()

	client.Send(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"greet","arguments":{"name":"Ada"},`+
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`))
	answer, err := client.Receive(ctx)
	if err != nil {
		log.Fatal(err)
	}
	var res struct {
		Result struct {
			StructuredContent out `json:"structuredContent"`
		} `json:"result"`
	}
	json.Unmarshal(answer, &res)
	fmt.Println(res.Result.StructuredContent.Greeting)

	client.Close() // end of input: Serve answers what it admitted and returns
	fmt.Println(<-served)
	// endregion memory

	// Output:
	// Hello, Ada
	// <nil>
}
