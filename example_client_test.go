package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"strings"
)

// Progress: a handler reports its progress while it runs; the client gets
// each report before the answer, when its request asked for them with a
// progressToken.
func ExampleHandlerRequest_ReportProgress() {
	rt, err := NewRuntime(RuntimeOptions{ServerInfo: Implementation{Name: "demo", Version: "1.0.0"}})
	if err != nil {
		log.Fatal(err)
	}
	// region progress
	err = rt.AddTool(Tool{Name: "index", Description: "Indexes three files"},
		func(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
			for i := 1; i <= 3; i++ {
				// Returns once the report is written: a slow client slows the handler.
				err := req.ReportProgress(ctx, Progress{Progress: float64(i), Total: 3, Message: fmt.Sprintf("file %d", i)})
				if err != nil {
					return nil, err
				}
			}
			return TextResult("indexed"), nil
		})
	// endregion progress
	if err != nil {
		log.Fatal(err)
	}
	c := serveExample(rt, Options{}, ProtocolVersion20251125, `{}`)
	c.call(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"index","_meta":{"progressToken":"p1"}}}`)
	c.close()
	// Output:
	// {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p1","progress":1,"total":3,"message":"file 1"}}
	// {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p1","progress":2,"total":3,"message":"file 2"}}
	// {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p1","progress":3,"total":3,"message":"file 3"}}
	// {"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"indexed"}]}}
	// served: <nil>
}

// Logging to the client: with RuntimeOptions.Logging the server declares
// the capability, and a handler's log records reach the client at or above
// the level it asked for (logging/setLevel; in 2026-07-28 the request's
// _meta logLevel).
func ExampleHandlerRequest_Logger() {
	rt, err := NewRuntime(RuntimeOptions{ServerInfo: Implementation{Name: "demo", Version: "1.0.0"}, Logging: true})
	if err != nil {
		log.Fatal(err)
	}
	// region log
	err = rt.AddTool(Tool{Name: "fetch", Description: "Fetches a page"},
		func(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
			logger := req.Logger(ctx, "fetch") // records become notifications/message
			logger.Debug("resolving", "host", "example.com")
			logger.Info("fetched", "bytes", 1024)
			return TextResult("ok"), nil
		})
	// endregion log
	if err != nil {
		log.Fatal(err)
	}
	c := serveExample(rt, Options{}, ProtocolVersion20251125, `{}`)
	c.call(`{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"info"}}`)
	c.call(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"fetch"}}`)
	c.close()
	// Output:
	// {"jsonrpc":"2.0","id":1,"result":{}}
	// {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","logger":"fetch","data":{"bytes":1024,"msg":"fetched"}}}
	// {"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"ok"}]}}
	// served: <nil>
}

// addConfirmTool registers the confirm tool of the elicitation examples.
func addConfirmTool(rt *Runtime) error {
	// region elicit
	return rt.AddTool(Tool{Name: "delete_file", Description: "Deletes a file after asking"},
		func(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
			answer, err := req.Elicit(ctx, "confirm", map[string]any{
				"message": "Delete notes.txt?",
				"requestedSchema": map[string]any{"type": "object",
					"properties": map[string]any{"sure": map[string]string{"type": "boolean"}}},
			})
			if err != nil {
				return nil, err // in 2026-07-28, ErrInputRequired: the client is asked
			}
			var form struct {
				Sure bool `json:"sure"`
			}
			if answer.Action != "accept" || json.Unmarshal(answer.Content, &form) != nil || !form.Sure {
				return TextResult("kept notes.txt"), nil
			}
			return TextResult("deleted notes.txt"), nil
		})
	// endregion elicit
}

// Elicitation in the initialize era: the handler's question goes to the
// client as a request of the server's, and the handler goes on with the
// client's answer.
func ExampleHandlerRequest_Elicit() {
	rt, err := NewRuntime(RuntimeOptions{ServerInfo: Implementation{Name: "demo", Version: "1.0.0"}})
	if err == nil {
		err = addConfirmTool(rt)
	}
	if err != nil {
		log.Fatal(err)
	}
	c := serveExample(rt, Options{}, ProtocolVersion20251125, `{"elicitation":{}}`)
	c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"delete_file"}}`)
	ask := c.next()
	fmt.Println(ask)
	var server struct{ ID json.RawMessage }
	json.Unmarshal([]byte(ask), &server)
	c.send(`{"jsonrpc":"2.0","id":` + string(server.ID) + `,"result":{"action":"accept","content":{"sure":true}}}`)
	fmt.Println(c.next())
	c.close()
	// Output:
	// {"jsonrpc":"2.0","id":"mcpstdio-1","method":"elicitation/create","params":{"message":"Delete notes.txt?","requestedSchema":{"properties":{"sure":{"type":"boolean"}},"type":"object"}}}
	// {"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"deleted notes.txt"}]}}
	// served: <nil>
}

// Elicitation in 2026-07-28, where a server sends no requests: the call is
// answered input_required with the question, and the client calls again
// with its answer in inputResponses. The same handler serves both eras.
func ExampleHandlerRequest_Elicit_inputRequired() {
	rt, err := NewRuntime(RuntimeOptions{ServerInfo: Implementation{Name: "demo", Version: "1.0.0"}})
	if err == nil {
		err = addConfirmTool(rt)
	}
	if err != nil {
		log.Fatal(err)
	}
	c := serveExample(rt, Options{}, ProtocolVersion20260728, "")
	caps := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`
	c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"delete_file",` + caps + `}}`)
	var first struct {
		Result struct {
			ResultType    string          `json:"resultType"`
			InputRequests json.RawMessage `json:"inputRequests"`
			RequestState  string          `json:"requestState"` // signed, opaque: sent back as is
		} `json:"result"`
	}
	json.Unmarshal([]byte(c.next()), &first)
	fmt.Println(first.Result.ResultType, string(first.Result.InputRequests))
	c.call(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"delete_file",` + caps +
		`,"inputResponses":{"confirm":{"action":"accept","content":{"sure":false}}},"requestState":"` + first.Result.RequestState + `"}}`)
	c.close()
	// Output:
	// input_required {"confirm":{"method":"elicitation/create","params":{"message":"Delete notes.txt?","requestedSchema":{"properties":{"sure":{"type":"boolean"}},"type":"object"}}}}
	// {"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"kept notes.txt"}],"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"demo","version":"1.0.0"}}}}
	// served: <nil>
}

// Sampling: a handler asks the client's model to complete a prompt.
func ExampleHandlerRequest_CreateMessage() {
	rt, err := NewRuntime(RuntimeOptions{ServerInfo: Implementation{Name: "demo", Version: "1.0.0"}})
	if err != nil {
		log.Fatal(err)
	}
	// region sampling
	err = rt.AddTool(Tool{Name: "capital", Description: "Asks the client's model for a capital"},
		func(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
			answer, err := req.CreateMessage(ctx, "capital", map[string]any{
				"messages":  []any{map[string]any{"role": "user", "content": map[string]string{"type": "text", "text": "Capital of France?"}}},
				"maxTokens": 20,
			})
			if err != nil {
				return nil, err
			}
			return TextResult("The model says: " + answer.Text()), nil
		})
	// endregion sampling
	if err != nil {
		log.Fatal(err)
	}
	c := serveExample(rt, Options{}, ProtocolVersion20251125, `{"sampling":{}}`)
	c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"capital"}}`)
	ask := c.next()
	fmt.Println(ask)
	id := ask[strings.Index(ask, `"id":`)+5 : strings.Index(ask, `,"method"`)]
	c.send(`{"jsonrpc":"2.0","id":` + id + `,"result":{"role":"assistant","model":"m1","content":{"type":"text","text":"Paris"}}}`)
	fmt.Println(c.next())
	c.close()
	// Output:
	// {"jsonrpc":"2.0","id":"mcpstdio-1","method":"sampling/createMessage","params":{"maxTokens":20,"messages":[{"content":{"text":"Capital of France?","type":"text"},"role":"user"}]}}
	// {"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"The model says: Paris"}]}}
	// served: <nil>
}

// Roots: a handler asks the client which directories it may work in.
func ExampleHandlerRequest_ListRoots() {
	rt, err := NewRuntime(RuntimeOptions{ServerInfo: Implementation{Name: "demo", Version: "1.0.0"}})
	if err != nil {
		log.Fatal(err)
	}
	// region roots
	err = rt.AddTool(Tool{Name: "workspace", Description: "Names the client's first root"},
		func(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
			if err := req.RequireClientCapability("roots"); err != nil {
				return nil, err // -32021: the client did not declare roots
			}
			roots, err := req.ListRoots(ctx, "roots")
			if err != nil {
				return nil, err
			}
			if len(roots) == 0 {
				return TextResult("no roots"), nil
			}
			return TextResult("working in " + roots[0].URI), nil
		})
	// endregion roots
	if err != nil {
		log.Fatal(err)
	}
	c := serveExample(rt, Options{}, ProtocolVersion20251125, `{"roots":{}}`)
	c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"workspace"}}`)
	ask := c.next()
	fmt.Println(ask)
	id := ask[strings.Index(ask, `"id":`)+5 : strings.Index(ask, `,"method"`)]
	c.send(`{"jsonrpc":"2.0","id":` + id + `,"result":{"roots":[{"uri":"file:///home/ada/project","name":"project"}]}}`)
	fmt.Println(c.next())
	c.close()

	plain := serveExample(rt, Options{}, ProtocolVersion20251125, `{}`)
	plain.call(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"workspace"}}`)
	plain.close()
	// Output:
	// {"jsonrpc":"2.0","id":"mcpstdio-1","method":"roots/list","params":{}}
	// {"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"working in file:///home/ada/project"}]}}
	// served: <nil>
	// {"jsonrpc":"2.0","id":1,"error":{"code":-32021,"message":"Missing required client capability: roots","data":{"requiredCapabilities":{"roots":{}}}}}
	// served: <nil>
}
