package main

import (
	"context"
	"errors"
	"fmt"
	"log"
)

// Application notifications: Transport.Notify sends a notification of the
// application's own, one of the methods Options.NotificationMethods allows,
// through the same writer as the answers.
func ExampleTransport_Notify() {
	rt, err := NewRuntime(RuntimeOptions{ServerInfo: Implementation{Name: "clock", Version: "1.0.0"}})
	if err != nil {
		log.Fatal(err)
	}
	// region notify
	tr, client, err := NewMemoryTransport(rt, Options{
		NotificationMethods: []string{"notifications/clock/tick"}, // the only methods Notify may send
	})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	served := make(chan error, 1)
	go func() { served <- tr.Serve(ctx) }()
	// endregion notify
	c := &exampleClient{MemoryClient: client, served: served}
	c.call(`{"jsonrpc":"2.0","id":1,"method":"ping"}`) // Serve has started: Notify would fail with ErrClosed before
	// region notify
	if err := tr.Notify(ctx, "notifications/clock/tick", map[string]int{"second": 1}); err != nil {
		log.Print(err) // ErrClosed, ErrTransportDown, an *OutputError, or ctx's error
	}
	err = tr.Notify(ctx, "notifications/other", nil)
	fmt.Println(errors.Is(err, ErrInvalidNotification))
	// endregion notify
	fmt.Println(c.next())
	c.close()
	// Output:
	// {"jsonrpc":"2.0","id":1,"result":{}}
	// true
	// {"jsonrpc":"2.0","method":"notifications/clock/tick","params":{"second":1}}
	// served: <nil>
}

// Resource updates in the initialize era: a client subscribes to a URI
// (RuntimeOptions.ResourcesSubscribe), and NotifyResourceUpdated tells it
// when the resource changed.
func ExampleRuntime_NotifyResourceUpdated() {
	rt, err := NewRuntime(RuntimeOptions{ServerInfo: Implementation{Name: "notes", Version: "1.0.0"}, ResourcesSubscribe: true})
	if err != nil {
		log.Fatal(err)
	}
	note := "Buy milk"
	err = rt.AddResource(Resource{URI: "notes://today", Name: "today"}, func(context.Context, *HandlerRequest) (*ResourceResult, error) {
		return &ResourceResult{Contents: []ResourceContents{{Text: note}}}, nil
	})
	if err != nil {
		log.Fatal(err)
	}
	c := serveExample(rt, Options{}, ProtocolVersion20251125, `{}`)
	c.call(`{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"notes://today"}}`)
	// region updated
	rt.NotifyResourceUpdated("notes://today") // every connection subscribed to it is told
	// endregion updated
	fmt.Println(c.next())
	c.close()
	// Output:
	// {"jsonrpc":"2.0","id":1,"result":{}}
	// {"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"notes://today"}}
	// served: <nil>
}

// Subscriptions in 2026-07-28: one subscriptions/listen request opens a
// stream of the notifications it names, each tagged with the listen
// request's id, until the client cancels it or the server ends it.
func ExampleRuntime_EndSubscriptions() {
	rt, err := NewRuntime(RuntimeOptions{ServerInfo: Implementation{Name: "notes", Version: "1.0.0"},
		ResourcesSubscribe: true, ToolsListChanged: true})
	if err != nil {
		log.Fatal(err)
	}
	err = errors.Join(
		rt.AddResource(Resource{URI: "notes://today", Name: "today"}, func(context.Context, *HandlerRequest) (*ResourceResult, error) {
			return &ResourceResult{Contents: []ResourceContents{{Text: "Buy milk"}}}, nil
		}),
		rt.AddTool(Tool{Name: "add", Description: "Adds a note"}, func(context.Context, *HandlerRequest) (*ToolResult, error) {
			return TextResult("added"), nil
		}))
	if err != nil {
		log.Fatal(err)
	}
	c := serveExample(rt, Options{}, ProtocolVersion20260728, "")
	c.send(`{"jsonrpc":"2.0","id":"l1","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true,"resourceSubscriptions":["notes://today"]},` + meta2026 + `}}`)
	fmt.Println(c.next()) // the acknowledgement: the stream is open
	rt.NotifyResourceUpdated("notes://today")
	fmt.Println(c.next())
	// region list-changed
	err = rt.AddTool(Tool{Name: "clear", Description: "Clears the notes"}, func(context.Context, *HandlerRequest) (*ToolResult, error) {
		return TextResult("cleared"), nil
	}) // a change of the catalog: list_changed to every client that asked for it
	// endregion list-changed
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(c.next())
	rt.EndSubscriptions()
	fmt.Println(c.next())
	c.close()
	// Output:
	// {"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"toolsListChanged":true,"resourceSubscriptions":["notes://today"]},"_meta":{"io.modelcontextprotocol/subscriptionId":"l1"}}}
	// {"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"notes://today","_meta":{"io.modelcontextprotocol/subscriptionId":"l1"}}}
	// {"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"l1"}}}
	// {"jsonrpc":"2.0","id":"l1","result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/subscriptionId":"l1"}}}
	// served: <nil>
}
