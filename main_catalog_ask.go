package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// The reference fixtures that ask the client for input
// (docs/explanation/contract.md, "Asking the client"): the conformance suite's
// sampling and elicitation tools, the multi-round-trip
// (test_input_required_result_*) tools and prompt, and
// test_streaming_elicitation. Each handler serves both eras unchanged: in the
// initialize era its questions are server-to-client requests, in 2026-07-28
// they become input_required results (ask.go).

// Input schemas of the asking tools that take arguments.
const (
	samplingToolSchema    = `{"type":"object","properties":{"prompt":{"type":"string","description":"The prompt to send to the LLM"}},"required":["prompt"]}`
	elicitationToolSchema = `{"type":"object","properties":{"message":{"type":"string","description":"The message to show the user"}},"required":["message"]}`
)

// elicitation/create params the conformance suite checks key by key
// (SEP-1034 defaults, SEP-1330 enum shapes). Sent verbatim.
const (
	sep1034ElicitParams = `{"message":"Please review and update the form fields with defaults","requestedSchema":{"type":"object","properties":{"name":{"type":"string","description":"User name","default":"John Doe"},"age":{"type":"integer","description":"User age","default":30},"score":{"type":"number","description":"User score","default":95.5},"status":{"type":"string","description":"User status","enum":["active","inactive","pending"],"default":"active"},"verified":{"type":"boolean","description":"Verification status","default":true}},"required":[]}}`
	sep1330ElicitParams = `{"message":"Please select options from the enum fields","requestedSchema":{"type":"object","properties":{"untitledSingle":{"type":"string","description":"Select one option","enum":["option1","option2","option3"]},"titledSingle":{"type":"string","description":"Select one option with titles","oneOf":[{"const":"value1","title":"First Option"},{"const":"value2","title":"Second Option"},{"const":"value3","title":"Third Option"}]},"legacyEnum":{"type":"string","description":"Select one option (legacy)","enum":["opt1","opt2","opt3"],"enumNames":["Option One","Option Two","Option Three"]},"untitledMulti":{"type":"array","description":"Select multiple options","minItems":1,"maxItems":3,"items":{"type":"string","enum":["option1","option2","option3"]}},"titledMulti":{"type":"array","description":"Select multiple options with titles","minItems":1,"maxItems":3,"items":{"anyOf":[{"const":"value1","title":"First Choice"},{"const":"value2","title":"Second Choice"},{"const":"value3","title":"Third Choice"}]}}},"required":[]}}`
	// userInfoSchema is test_elicitation's requestedSchema.
	userInfoSchema = `{"type":"object","properties":{"username":{"type":"string","description":"User's response"},"email":{"type":"string","description":"User's email address"}},"required":["username","email"]}`
)

// elicitParams are the params of a form-mode elicitation/create.
type elicitParams struct {
	Message         string          `json:"message"`
	RequestedSchema json.RawMessage `json:"requestedSchema"`
}

// formRequest asks for one required field of the given JSON type.
func formRequest(message, field, fieldType string) elicitParams {
	schema := fmt.Sprintf(`{"type":"object","properties":{%s:{"type":%s}},"required":[%[1]s]}`, quoteJSON(field), quoteJSON(fieldType))
	return elicitParams{Message: message, RequestedSchema: json.RawMessage(schema)}
}

func quoteJSON(s string) string {
	b, _ := marshalJSON(s) // a string always encodes
	return string(b)
}

// samplingParams are the params of a one-message sampling/createMessage.
type samplingParams struct {
	Messages  []PromptMessage `json:"messages"`
	MaxTokens int             `json:"maxTokens"`
}

func samplingRequest(text string, maxTokens int) samplingParams {
	return samplingParams{Messages: []PromptMessage{userMessage(TextContent(text))}, MaxTokens: maxTokens}
}

func registerAskingFixtures(rt *Runtime, _ referenceMedia) error {
	tools := []struct {
		tool    Tool
		handler ToolHandler
	}{
		{referenceTool("test_sampling", "Tests server-initiated sampling (LLM completion request)", samplingToolSchema), sampleLLM},
		{referenceTool("test_elicitation", "Tests server-initiated elicitation (user input request)", elicitationToolSchema), elicitUserInfo},
		{referenceTool("test_elicitation_sep1034_defaults", "Tests elicitation with default values per SEP-1034", noArgumentsSchema),
			elicitFixedForm(json.RawMessage(sep1034ElicitParams))},
		{referenceTool("test_elicitation_sep1330_enums", "Tests elicitation with enum schema improvements per SEP-1330", noArgumentsSchema),
			elicitFixedForm(json.RawMessage(sep1330ElicitParams))},
		{referenceTool("test_streaming_elicitation", "Diagnostic tool validating response progress streams", noArgumentsSchema), streamingElicitation},
		{referenceTool("test_input_required_result_elicitation", "MRTR: returns InputRequiredResult with elicitation request", noArgumentsSchema), greetByName},
		{referenceTool("test_input_required_result_sampling", "MRTR: returns InputRequiredResult with sampling request", noArgumentsSchema), askCapital},
		{referenceTool("test_input_required_result_list_roots", "MRTR: returns InputRequiredResult with roots/list request", noArgumentsSchema), countRoots},
		{referenceTool("test_input_required_result_request_state", "MRTR: returns InputRequiredResult with requestState", noArgumentsSchema), confirmWithState},
		{referenceTool("test_input_required_result_multiple_inputs", "MRTR: returns InputRequiredResult with multiple input requests", noArgumentsSchema), askThreeAtOnce},
		{referenceTool("test_input_required_result_multi_round", "MRTR: multi-round InputRequiredResult workflow", noArgumentsSchema), askInTwoRounds},
		{referenceTool("test_input_required_result_tampered_state", "MRTR: HMAC-signed requestState integrity test", noArgumentsSchema), confirmIntegrity},
		{referenceTool("test_input_required_result_capabilities", "MRTR: respects client capabilities in inputRequests", noArgumentsSchema), askDeclaredCapabilities},
	}
	for _, t := range tools {
		if err := rt.AddTool(t.tool, t.handler); err != nil {
			return err
		}
	}
	return rt.AddPrompt(Prompt{Name: "test_input_required_result_prompt", Description: "MRTR: prompt that requires elicitation input"}, promptWithContext)
}

// formString returns the string field of an accepted form, "" when the form
// was not accepted or the field is missing or not a string.
func formString(res *ElicitResult, field string) string {
	var form map[string]json.RawMessage
	if res.Action != "accept" || json.Unmarshal(res.Content, &form) != nil {
		return ""
	}
	s, _ := decodeString(form[field])
	return s
}

// describeElicitation renders "action=<action>, content=<compact JSON>".
func describeElicitation(res *ElicitResult) string {
	var content bytes.Buffer
	if res.Content == nil || json.Compact(&content, res.Content) != nil {
		content.Reset()
		content.WriteString("{}")
	}
	return fmt.Sprintf("action=%s, content=%s", res.Action, content.String())
}

// sampleLLM serves test_sampling: it asks the client's LLM the prompt
// argument and answers "LLM response: <text>".
func sampleLLM(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
	var args struct {
		Prompt string `json:"prompt"`
	}
	if err := req.Bind(&args); err != nil {
		return nil, err
	}
	res, err := req.CreateMessage(ctx, "llm_response", samplingRequest(args.Prompt, 100))
	if err != nil {
		return nil, err
	}
	return TextResult("LLM response: " + res.Text()), nil
}

// elicitUserInfo serves test_elicitation: it asks for a username and an
// email with the message argument.
func elicitUserInfo(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
	var args struct {
		Message string `json:"message"`
	}
	if err := req.Bind(&args); err != nil {
		return nil, err
	}
	res, err := req.Elicit(ctx, "user_info", elicitParams{Message: args.Message, RequestedSchema: json.RawMessage(userInfoSchema)})
	if err != nil {
		return nil, err
	}
	return TextResult("User response: " + describeElicitation(res)), nil
}

// elicitFixedForm returns a handler that asks params and reports the
// answer.
func elicitFixedForm(params json.RawMessage) ToolHandler {
	return func(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
		res, err := req.Elicit(ctx, "form", params)
		if err != nil {
			return nil, err
		}
		return TextResult("Elicitation completed: " + describeElicitation(res)), nil
	}
}

// confirmParams is the "Please confirm" question of several fixtures.
func confirmParams() elicitParams { return formRequest("Please confirm", "ok", "boolean") }

// streamingElicitation serves test_streaming_elicitation: a client that
// declared elicitation is asked to confirm first; then "Streaming complete".
// In 2026 the question is an input_required result, never a request on the
// response stream.
func streamingElicitation(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
	if req.HasClientCapability("elicitation") {
		if _, err := req.Elicit(ctx, "confirm", confirmParams()); err != nil {
			return nil, err
		}
	}
	return TextResult("Streaming complete"), nil
}

// greetByName serves test_input_required_result_elicitation: key user_name.
func greetByName(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
	res, err := req.Elicit(ctx, "user_name", formRequest("What is your name?", "name", "string"))
	if err != nil {
		return nil, err
	}
	if name := formString(res, "name"); name != "" {
		return TextResult("Hello, " + name + "!"), nil
	}
	return TextResult("No name given (action=" + res.Action + ")"), nil
}

// askCapital serves test_input_required_result_sampling: key
// capital_question.
func askCapital(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
	res, err := req.CreateMessage(ctx, "capital_question", samplingRequest("What is the capital of France?", 100))
	if err != nil {
		return nil, err
	}
	return TextResult("Sampling result: " + res.Text()), nil
}

// countRoots serves test_input_required_result_list_roots: key
// client_roots.
func countRoots(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
	roots, err := req.ListRoots(ctx, "client_roots")
	if err != nil {
		return nil, err
	}
	return TextResult(describeRoots(roots)), nil
}

// describeRoots renders "Found N root(s): uri, uri".
func describeRoots(roots []Root) string {
	uris := make([]string, len(roots))
	for i, r := range roots {
		uris[i] = r.URI
	}
	return fmt.Sprintf("Found %d root(s): %s", len(roots), strings.Join(uris, ", "))
}

// requestStateKind is the handler state test_input_required_result_request_state
// sets in its first round and checks in its last.
type requestStateKind struct {
	Kind string `json:"kind"`
}

// confirmWithState serves test_input_required_result_request_state: it sets
// its own state, asks to confirm (key confirm), and completes once the state
// came back intact.
func confirmWithState(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
	if req.State() == nil {
		if err := req.SetState(requestStateKind{Kind: "request-state"}); err != nil {
			return nil, err
		}
	}
	if _, err := req.Elicit(ctx, "confirm", confirmParams()); err != nil {
		return nil, err
	}
	var state requestStateKind
	if json.Unmarshal(req.State(), &state) != nil || state.Kind != "request-state" {
		return nil, fmt.Errorf("the handler state did not survive the round trip: %s", req.State())
	}
	return TextResult("state-ok: requestState validated"), nil
}

// askThreeAtOnce serves test_input_required_result_multiple_inputs: three
// questions (user_name, greeting, client_roots) asked in one round.
func askThreeAtOnce(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
	name, errName := req.Elicit(ctx, "user_name", formRequest("What is your name?", "name", "string"))
	greeting, errGreeting := req.CreateMessage(ctx, "greeting", samplingRequest("Generate a greeting", 50))
	roots, errRoots := req.ListRoots(ctx, "client_roots")
	if err := errors.Join(errName, errGreeting, errRoots); err != nil {
		return nil, err
	}
	return TextResult(fmt.Sprintf("Name: %s; Greeting: %s; Roots: %d", formString(name, "name"), greeting.Text(), len(roots))), nil
}

// askInTwoRounds serves test_input_required_result_multi_round: step2 is
// only asked once step1 is answered, so a 2026 client needs three rounds.
func askInTwoRounds(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
	name, err := req.Elicit(ctx, "step1", formRequest("Step 1: What is your name?", "name", "string"))
	if err != nil {
		return nil, err
	}
	color, err := req.Elicit(ctx, "step2", formRequest("Step 2: What is your favorite color?", "color", "string"))
	if err != nil {
		return nil, err
	}
	return TextResult(fmt.Sprintf("Multi-round complete for %s who likes %s", formString(name, "name"), formString(color, "color"))), nil
}

// confirmIntegrity serves test_input_required_result_tampered_state: the
// runtime refuses a tampered requestState before the handler runs, so
// reaching the end means the state verified.
func confirmIntegrity(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
	if _, err := req.Elicit(ctx, "confirm", confirmParams()); err != nil {
		return nil, err
	}
	return TextResult("integrity-ok: state verified"), nil
}

// askDeclaredCapabilities serves test_input_required_result_capabilities: it
// asks only what the client declared it supports (elicit_input,
// sample_input, client_roots), all in one round.
func askDeclaredCapabilities(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
	var received []string
	var errs []error
	collect := func(key string, err error) {
		if err != nil {
			errs = append(errs, err)
			return
		}
		received = append(received, key)
	}
	asked := 0
	if req.HasClientCapability("elicitation") {
		asked++
		_, err := req.Elicit(ctx, "elicit_input", formRequest("Elicitation input", "value", "string"))
		collect("elicit_input", err)
	}
	if req.HasClientCapability("sampling") {
		asked++
		_, err := req.CreateMessage(ctx, "sample_input", samplingRequest("Sample request", 50))
		collect("sample_input", err)
	}
	if req.HasClientCapability("roots") {
		asked++
		_, err := req.ListRoots(ctx, "client_roots")
		collect("client_roots", err)
	}
	if asked == 0 {
		return TextResult("No supported capabilities declared"), nil
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return TextResult("capabilities-ok: received " + strings.Join(received, ",")), nil
}

// promptWithContext serves the prompt test_input_required_result_prompt:
// key user_context.
func promptWithContext(ctx context.Context, req *HandlerRequest) (*PromptResult, error) {
	res, err := req.Elicit(ctx, "user_context", formRequest("What context should the prompt use?", "context", "string"))
	if err != nil {
		return nil, err
	}
	text := "Prompt with context: " + formString(res, "context")
	return &PromptResult{Messages: []PromptMessage{userMessage(TextContent(text))}}, nil
}
