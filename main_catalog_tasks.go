package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"
)

// The reference fixtures of the tasks extension (tasks.go), with the names
// and behaviour the conformance suite's tasks-* scenarios expect: greet runs
// as an ordinary request; slow_compute, failing_job, protocol_error_job,
// confirm_delete and multi_input may run as tasks; test_tool_with_task asks
// a question first (a 2026 multi-round exchange, or an elicitation request in
// the initialize era) and only then becomes a task.

// Input schemas of the tasks fixtures.
const (
	greetSchema       = `{"type":"object","properties":{"name":{"type":"string","description":"Who to greet"}},"required":["name"]}`
	slowComputeSchema = `{"type":"object","properties":{"seconds":{"type":"number","minimum":0,"maximum":600,"description":"How long to compute, in seconds"},"label":{"type":"string","description":"A label for the result"}},"required":["seconds"]}`
	confirmSchema     = `{"type":"object","properties":{"filename":{"type":"string","description":"The file to delete"}},"required":["filename"]}`
	// confirmFormSchema is the form confirm_delete asks the user to fill.
	confirmFormSchema = `{"type":"object","properties":{"confirm":{"type":"boolean","description":"Delete the file?"}},"required":["confirm"]}`
)

// slowComputeStartAfter is how long slow_compute runs as an ordinary request
// before it becomes a task: a call that finishes sooner (seconds: 0) is
// answered at once.
const slowComputeStartAfter = 100 * time.Millisecond

// failingJobDuration is how long failing_job works before it fails.
const failingJobDuration = time.Second

func registerTaskFixtures(rt *Runtime, _ referenceMedia) error {
	optional := &ToolExecution{TaskSupport: TaskOptional}
	tools := []struct {
		tool      Tool
		execution *ToolExecution
		handler   ToolHandler
	}{
		{referenceTool("greet", "Greets by name; never a task", greetSchema), nil, greet},
		{referenceTool("slow_compute", "Computes for the given number of seconds, as a task when the client supports tasks (a call that ends within 100ms is answered at once); reports progress as the task's statusMessage", slowComputeSchema),
			&ToolExecution{TaskSupport: TaskOptional, TaskAfter: slowComputeStartAfter}, slowCompute},
		{referenceTool("failing_job", "A job that runs only as a task and fails after about a second with a tool error (isError)", noArgumentsSchema),
			&ToolExecution{TaskSupport: TaskRequired}, failingJob},
		{referenceTool("protocol_error_job", "A job that fails with a JSON-RPC error: as a task, it ends failed", noArgumentsSchema), optional, protocolErrorJob},
		{referenceTool("confirm_delete", "Asks the user to confirm deleting a file (elicitation), as a task when the client supports tasks", confirmSchema), optional, confirmDelete},
		{referenceTool("multi_input", "Asks the user two questions at once (elicitation), as a task when the client supports tasks", noArgumentsSchema), optional, askTwoAtOnce},
		{referenceTool("test_tool_with_task", "Asks the user's name first, then becomes a task that greets them; runs only as a task", noArgumentsSchema),
			&ToolExecution{TaskSupport: TaskRequired, TaskAfter: Unlimited}, greetAfterAsking},
	}
	for _, t := range tools {
		t.tool.Execution = t.execution
		if err := rt.AddTool(t.tool, t.handler); err != nil {
			return err
		}
	}
	return nil
}

// greet serves greet: "Hello, <name>!".
func greet(_ context.Context, req *HandlerRequest) (*ToolResult, error) {
	var in struct {
		Name string `json:"name"`
	}
	if err := req.Bind(&in); err != nil {
		return nil, err
	}
	return TextResult("Hello, " + in.Name + "!"), nil
}

// slowCompute serves slow_compute: it works for seconds (at most 600),
// reporting its progress each second, and answers "Computed <label> in
// <seconds>s". It honours cancellation.
func slowCompute(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
	var in struct {
		Seconds float64 `json:"seconds"`
		Label   string  `json:"label"`
	}
	if err := req.Bind(&in); err != nil {
		return nil, err
	}
	if in.Seconds < 0 || in.Seconds > maxSleepMs/1000 {
		return nil, fmt.Errorf("slow_compute: seconds must be from 0 to %d", maxSleepMs/1000)
	}
	if in.Label == "" {
		in.Label = "result"
	}
	total := time.Duration(in.Seconds * float64(time.Second))
	done := time.NewTimer(total)
	defer done.Stop()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for elapsed := 1; ; elapsed++ {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-done.C:
			return TextResult(fmt.Sprintf("Computed %s in %gs", in.Label, in.Seconds)), nil
		case <-tick.C:
			msg := fmt.Sprintf("Computing %s: %ds of %gs", in.Label, elapsed, in.Seconds)
			if err := req.ReportProgress(ctx, Progress{Progress: float64(elapsed), Total: in.Seconds, Message: msg}); err != nil {
				return nil, err
			}
		}
	}
}

// failingJob serves failing_job: after about a second it fails with a tool
// error, which a task reports as completed with isError true.
func failingJob(ctx context.Context, _ *HandlerRequest) (*ToolResult, error) {
	timer := time.NewTimer(failingJobDuration)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-timer.C:
		return nil, errors.New("The job failed: its input could not be processed")
	}
}

// protocolErrorJob serves protocol_error_job: it fails with a JSON-RPC
// error, which a task reports as failed with that error.
func protocolErrorJob(context.Context, *HandlerRequest) (*ToolResult, error) {
	return nil, &RPCError{Code: CodeInternalError, Message: "The job failed with a protocol error"}
}

// confirmDelete serves confirm_delete: it asks the user to confirm (key
// "confirm") and answers "Deleted <file>" when they accepted with confirm
// true, else "Kept <file>". Nothing is deleted.
func confirmDelete(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
	var in struct {
		Filename string `json:"filename"`
	}
	if err := req.Bind(&in); err != nil {
		return nil, err
	}
	res, err := req.Elicit(ctx, "confirm", elicitParams{Message: "Delete " + in.Filename + "?", RequestedSchema: json.RawMessage(confirmFormSchema)})
	if err != nil {
		return nil, err
	}
	var form struct {
		Confirm bool `json:"confirm"`
	}
	if res.Action == "accept" && json.Unmarshal(res.Content, &form) == nil && form.Confirm {
		return TextResult("Deleted " + in.Filename), nil
	}
	return TextResult("Kept " + in.Filename), nil
}

// askTwoAtOnce serves multi_input: it asks two questions at the same time
// (keys "first" and "second"), so both are outstanding together, and
// answers "Got <first> and <second>".
func askTwoAtOnce(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
	keys := []string{"first", "second"}
	names := make([]string, len(keys))
	errs := make([]error, len(keys))
	var wg sync.WaitGroup
	for i, key := range keys {
		wg.Go(func() {
			var res *ElicitResult
			res, errs[i] = req.Elicit(ctx, key, formRequest("What is the "+key+" name?", "name", "string"))
			if errs[i] == nil {
				names[i] = formString(res, "name")
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return TextResult(fmt.Sprintf("Got %s and %s", names[0], names[1])), nil
}

// greetAfterAsking serves test_tool_with_task: it asks the user's name
// (key "user_name") while the call is an ordinary request, then becomes a
// task (StartTask), which answers "Hello, <name>!".
func greetAfterAsking(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
	res, err := req.Elicit(ctx, "user_name", formRequest("What is your name?", "name", "string"))
	if err != nil {
		return nil, err
	}
	req.StartTask()
	name := formString(res, "name")
	if name == "" {
		name = "stranger"
	}
	return TextResult("Hello, " + name + "!"), nil
}
