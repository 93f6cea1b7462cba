package main

import (
	"context"
	"encoding/json"
	"log"
	"strings"
)

// A static resource: resources/list shows it, resources/read calls its
// handler.
func ExampleRuntime_AddResource() {
	rt, err := NewRuntime(RuntimeOptions{ServerInfo: Implementation{Name: "notes", Version: "1.0.0"}})
	if err != nil {
		log.Fatal(err)
	}
	// region resource
	err = rt.AddResource(Resource{URI: "notes://today", Name: "today", MIMEType: "text/plain"},
		func(ctx context.Context, req *HandlerRequest) (*ResourceResult, error) {
			return &ResourceResult{Contents: []ResourceContents{{Text: "Buy milk"}}}, nil
		})
	// endregion resource
	if err != nil {
		log.Fatal(err)
	}
	c := serveExample(rt, Options{}, ProtocolVersion20251125, `{}`)
	c.call(`{"jsonrpc":"2.0","id":1,"method":"resources/list"}`)
	c.call(`{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"notes://today"}}`)
	c.close()
	// Output:
	// {"jsonrpc":"2.0","id":1,"result":{"resources":[{"uri":"notes://today","name":"today","mimeType":"text/plain"}]}}
	// {"jsonrpc":"2.0","id":2,"result":{"contents":[{"uri":"notes://today","text":"Buy milk"}]}}
	// served: <nil>
}

// A resource template serves a family of URIs: the handler gets the values
// of the template's variables, and says which URIs do not exist. A
// completion handler suggests values for a variable.
func ExampleRuntime_AddResourceTemplate() {
	rt, err := NewRuntime(RuntimeOptions{ServerInfo: Implementation{Name: "notes", Version: "1.0.0"}})
	if err != nil {
		log.Fatal(err)
	}
	// region template
	notes := map[string]string{"monday": "Gym", "tuesday": "Piano"}
	err = rt.AddResourceTemplate(ResourceTemplate{URITemplate: "notes://days/{day}", Name: "day", MIMEType: "text/plain"},
		func(ctx context.Context, req *HandlerRequest) (*ResourceResult, error) {
			note, ok := notes[req.Variables["day"]]
			if !ok {
				return nil, ErrResourceNotFound // answered "Resource not found" with the URI
			}
			return &ResourceResult{Contents: []ResourceContents{{Text: note}}}, nil
		})
	if err == nil {
		err = rt.AddTemplateCompletion("notes://days/{day}", "day", PrefixCompletion("monday", "tuesday"))
	}
	// endregion template
	if err != nil {
		log.Fatal(err)
	}
	c := serveExample(rt, Options{}, ProtocolVersion20251125, `{}`)
	c.call(`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"notes://days/tuesday"}}`)
	c.call(`{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"notes://days/sunday"}}`)
	c.call(`{"jsonrpc":"2.0","id":3,"method":"completion/complete","params":{"ref":{"type":"ref/resource","uri":"notes://days/{day}"},"argument":{"name":"day","value":"t"}}}`)
	c.close()
	// Output:
	// {"jsonrpc":"2.0","id":1,"result":{"contents":[{"uri":"notes://days/tuesday","text":"Piano"}]}}
	// {"jsonrpc":"2.0","id":2,"error":{"code":-32002,"message":"Resource not found","data":{"uri":"notes://days/sunday"}}}
	// {"jsonrpc":"2.0","id":3,"result":{"completion":{"values":["tuesday"],"total":1}}}
	// served: <nil>
}

// A prompt with a required argument: the runtime refuses a prompts/get
// that lacks it before the handler runs.
func ExampleRuntime_AddPrompt() {
	rt, err := NewRuntime(RuntimeOptions{ServerInfo: Implementation{Name: "hello", Version: "1.0.0"}})
	if err != nil {
		log.Fatal(err)
	}
	// region prompt
	err = rt.AddPrompt(Prompt{Name: "welcome", Description: "Welcomes someone",
		Arguments: []PromptArgument{{Name: "name", Required: true}}},
		func(ctx context.Context, req *HandlerRequest) (*PromptResult, error) {
			var args struct {
				Name string `json:"name"`
			}
			if err := req.Bind(&args); err != nil {
				return nil, err
			}
			return &PromptResult{Messages: []PromptMessage{
				{Role: "user", Content: TextContent("Write a warm welcome for " + args.Name + ".")},
			}}, nil
		})
	if err == nil {
		err = rt.AddPromptCompletion("welcome", "name", PrefixCompletion("Ada", "Alan", "Grace"))
	}
	// endregion prompt
	if err != nil {
		log.Fatal(err)
	}
	c := serveExample(rt, Options{}, ProtocolVersion20251125, `{}`)
	c.call(`{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"welcome","arguments":{"name":"Ada"}}}`)
	c.call(`{"jsonrpc":"2.0","id":2,"method":"prompts/get","params":{"name":"welcome"}}`)
	c.call(`{"jsonrpc":"2.0","id":3,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"welcome"},"argument":{"name":"name","value":"a"}}}`)
	c.close()
	// Output:
	// {"jsonrpc":"2.0","id":1,"result":{"messages":[{"role":"user","content":{"type":"text","text":"Write a warm welcome for Ada."}}]}}
	// {"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"Missing required arguments for prompt welcome: name","data":{"missing":["name"]}}}
	// {"jsonrpc":"2.0","id":3,"result":{"completion":{"values":["Ada","Alan"],"total":2}}}
	// served: <nil>
}

// A tool with a hand-written input schema: Bind decodes its arguments, and
// a value that does not fit is a tool error naming the argument, which the
// model reads; an *RPCError is a protocol error instead.
func ExampleHandlerRequest_Bind() {
	rt, err := NewRuntime(RuntimeOptions{ServerInfo: Implementation{Name: "demo", Version: "1.0.0"}})
	if err != nil {
		log.Fatal(err)
	}
	// region bind
	schema := json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"},"times":{"type":"integer"}},"required":["text"]}`)
	err = rt.AddTool(Tool{Name: "repeat", Description: "Repeats text", InputSchema: schema},
		func(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
			var args struct {
				Text  string `json:"text"`
				Times int    `json:"times"`
			}
			if err := req.Bind(&args); err != nil {
				return nil, err // a result with isError true, naming the argument
			}
			if args.Times > 3 {
				return nil, &RPCError{Code: CodeInvalidParams, Message: "times: at most 3"}
			}
			return TextResult(strings.Repeat(args.Text, max(args.Times, 1))), nil
		})
	// endregion bind
	if err != nil {
		log.Fatal(err)
	}
	c := serveExample(rt, Options{}, ProtocolVersion20251125, `{}`)
	c.call(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"repeat","arguments":{"text":"ab","times":2}}}`)
	c.call(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"repeat","arguments":{"text":"ab","times":"2"}}}`)
	c.call(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"repeat","arguments":{"times":2}}}`)
	c.call(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"repeat","arguments":{"text":"ab","times":9}}}`)
	c.close()
	// Output:
	// {"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"abab"}]}}
	// {"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"Invalid arguments: \"times\" must be an integer"}],"isError":true}}
	// {"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"Invalid arguments for tool repeat: missing required argument(s): text"}],"isError":true}}
	// {"jsonrpc":"2.0","id":4,"error":{"code":-32602,"message":"times: at most 3"}}
	// served: <nil>
}

// An inline tool: its handler returns at once, so the connection's owner
// runs it itself, with no hand-off to a worker and back. It is served even
// while every worker is busy.
func ExampleTool_inline() {
	rt, err := NewRuntime(RuntimeOptions{ServerInfo: Implementation{Name: "demo", Version: "1.0.0"}})
	if err != nil {
		log.Fatal(err)
	}
	// region inline
	err = rt.AddTool(Tool{Name: "now_utc_offset", Description: "The server's fixed UTC offset", Inline: true},
		func(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
			return TextResult("+00:00"), nil // no I/O, no locks, no waiting
		})
	// endregion inline
	if err != nil {
		log.Fatal(err)
	}
	c := serveExample(rt, Options{MaxConcurrency: 1}, ProtocolVersion20251125, `{}`)
	c.call(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"now_utc_offset"}}`)
	c.close()
	// Output:
	// {"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"+00:00"}]}}
	// served: <nil>
}
