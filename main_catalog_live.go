package main

import (
	"context"
	"time"
)

// The reference fixtures that talk to the client while they run: progress, log
// messages and catalog-change announcements (docs/explanation/contract.md,
// "Progress", "Logging" and "Subscriptions").

// fixtureStep is the pause between a fixture's messages, so a client sees
// them arrive over time, as the conformance suite's reference server does.
const fixtureStep = 50 * time.Millisecond

func registerLiveFixtures(rt *Runtime, _ referenceMedia) error {
	tools := []struct {
		tool    Tool
		handler ToolHandler
	}{
		{referenceTool("test_tool_with_progress", "Tests tool that reports progress notifications", noArgumentsSchema), progressFixture},
		{referenceTool("test_tool_with_logging", "Tests tool that emits log messages during execution", noArgumentsSchema), loggingFixture},
		{referenceTool("test_logging_tool", "Diagnostic logging validator tool", noArgumentsSchema), loggingValidator},
		{referenceTool("test_trigger_tool_change", "Announces a tools list change (conformance hook)", noArgumentsSchema), announceFixture(rt, ToolsChanged)},
		{referenceTool("test_trigger_prompt_change", "Announces a prompts list change (conformance hook)", noArgumentsSchema), announceFixture(rt, PromptsChanged)},
	}
	for _, t := range tools {
		if err := rt.AddTool(t.tool, t.handler); err != nil {
			return err
		}
	}
	return nil
}

// pause waits d or until ctx is done.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// progressFixture reports 0, 50 and 100 of 100, a step apart.
func progressFixture(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
	for i, step := range []float64{0, 50, 100} {
		if i > 0 {
			if err := pause(ctx, fixtureStep); err != nil {
				return nil, err
			}
		}
		p := Progress{Progress: step, Total: 100, Message: "Completed step " + formatNumber(step) + " of 100"}
		if err := req.ReportProgress(ctx, p); err != nil {
			return nil, err
		}
	}
	return TextResult("Progress test completed"), nil
}

// loggingFixture logs three info messages, a step apart.
func loggingFixture(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
	for i, msg := range []string{"Tool execution started", "Tool processing data", "Tool execution completed"} {
		if i > 0 {
			if err := pause(ctx, fixtureStep); err != nil {
				return nil, err
			}
		}
		if err := req.Log(ctx, "info", "test_tool_with_logging", msg); err != nil {
			return nil, err
		}
	}
	return TextResult("Tool with logging executed successfully"), nil
}

// loggingValidator logs one info message, which the client sees only when it
// asked for info or below.
func loggingValidator(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
	if err := req.Log(ctx, "info", "test_logging_tool", "Diagnostic trace logging activated"); err != nil {
		return nil, err
	}
	return TextResult("Logging evaluated"), nil
}

// announceFixture announces a change of kind without changing the catalog.
func announceFixture(rt *Runtime, kind ChangeKind) ToolHandler {
	return func(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
		rt.AnnounceListChanged(kind)
		return TextResult("Mutation triggered"), nil
	}
}

func formatNumber(f float64) string {
	b, _ := marshalJSON(f)
	return string(b)
}
