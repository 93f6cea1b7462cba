package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
)

// Tasks: a tool whose calls may take long declares task support; a client
// that declared the extension gets a task at once and reads the result
// later with tasks/get (or hears of it on a listen stream that names the
// task).
func ExampleToolExecution() {
	// region tasks
	rt, err := NewRuntime(RuntimeOptions{
		ServerInfo: Implementation{Name: "reports", Version: "1.0.0"},
		Tasks:      TaskOptions{}, // in memory, default bounds
	})
	if err != nil {
		log.Fatal(err)
	}
	release := make(chan struct{})
	err = rt.AddTool(Tool{Name: "report", Description: "Builds the monthly report",
		Execution: &ToolExecution{TaskSupport: TaskOptional}, // TaskAfter 0: a task before the handler starts
	}, func(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
		select {
		case <-release: // the work; ctx ends on tasks/cancel and at the task's TTL
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return TextResult("report ready"), nil
	})
	// endregion tasks
	if err != nil {
		log.Fatal(err)
	}
	c := serveExample(rt, Options{}, ProtocolVersion20260728, "")
	tasksMeta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`
	c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"report",` + tasksMeta + `}}`)
	var created struct {
		Result struct{ ResultType, TaskID, Status string }
	}
	json.Unmarshal([]byte(c.next()), &created)
	fmt.Println(created.Result.ResultType, created.Result.Status)
	id := created.Result.TaskID

	c.send(`{"jsonrpc":"2.0","id":2,"method":"subscriptions/listen","params":{"notifications":{"taskIds":["` + id + `"]},` + tasksMeta + `}}`)
	c.next() // the acknowledgement
	close(release)
	var changed struct {
		Method string
		Params struct{ Status string }
	}
	json.Unmarshal([]byte(c.next()), &changed)
	fmt.Println(changed.Method, changed.Params.Status)

	c.send(`{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"taskId":"` + id + `",` + tasksMeta + `}}`)
	var got struct {
		Result struct {
			Status string
			Result json.RawMessage
		}
	}
	json.Unmarshal([]byte(c.next()), &got)
	fmt.Println(got.Result.Status, string(got.Result.Result))
	c.close()
	// Output:
	// task working
	// notifications/tasks completed
	// completed {"content":[{"type":"text","text":"report ready"}],"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"reports","version":"1.0.0"}}}
	// served: <nil>
}
