package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func emptyPrompt(context.Context, *HandlerRequest) (*PromptResult, error) { return nil, nil }

func TestAddPromptValidation(t *testing.T) {
	rt := newTestRuntime(t, testOptions())
	mustAdd(t, rt.AddPrompt(Prompt{Name: "taken", Arguments: []PromptArgument{{Name: "a"}}}, emptyPrompt))
	mustAdd(t, rt.AddResourceTemplate(ResourceTemplate{URITemplate: "test://{id}", Name: "t"}, staticText("x")))
	tests := []struct {
		name    string
		add     func() error
		wantErr string
	}{
		{"no name", func() error { return rt.AddPrompt(Prompt{}, emptyPrompt) }, `adding prompt "": a name is required`},
		{"duplicate", func() error { return rt.AddPrompt(Prompt{Name: "taken"}, emptyPrompt) }, `adding prompt "taken": a prompt of that name is already registered`},
		{"unnamed argument", func() error { return rt.AddPrompt(Prompt{Name: "p", Arguments: []PromptArgument{{}}}, emptyPrompt) }, `adding prompt "p": argument 0 has no name`},
		{"repeated argument", func() error {
			return rt.AddPrompt(Prompt{Name: "p", Arguments: []PromptArgument{{Name: "a"}, {Name: "a"}}}, emptyPrompt)
		}, `adding prompt "p": argument "a" is declared twice`},
		{"bad _meta", func() error { return rt.AddPrompt(Prompt{Name: "p", Meta: json.RawMessage(`1`)}, emptyPrompt) }, `adding prompt "p": _meta must be a JSON object`},
		{"nil handler", func() error { return rt.AddPrompt(Prompt{Name: "p"}, nil) }, `adding prompt "p": nil handler`},
		{"completion for unknown prompt", func() error { return rt.AddPromptCompletion("nope", "a", PrefixCompletion()) }, `adding completion for prompt "nope": no such prompt`},
		{"completion for unknown argument", func() error { return rt.AddPromptCompletion("taken", "b", PrefixCompletion()) }, `adding completion for prompt "taken": it has no argument "b"`},
		{"nil completion handler", func() error { return rt.AddPromptCompletion("taken", "a", nil) }, `adding completion for prompt "taken" argument "a": nil handler`},
		{"completion for unknown template", func() error { return rt.AddTemplateCompletion("test://{x}", "x", PrefixCompletion()) }, `adding completion for template "test://{x}": no such template`},
		{"completion for unknown variable", func() error { return rt.AddTemplateCompletion("test://{id}", "x", PrefixCompletion()) }, `adding completion for template "test://{id}": it has no variable "x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.add(); err == nil || err.Error() != tt.wantErr {
				t.Fatalf("error = %v, want %q", err, tt.wantErr)
			}
		})
	}
	mustAdd(t, rt.AddPromptCompletion("taken", "a", PrefixCompletion()))
	if err := rt.AddPromptCompletion("taken", "a", PrefixCompletion()); err == nil || err.Error() != `adding completion for prompt "taken" argument "a": a completion handler is already registered` {
		t.Errorf("second completion handler: %v", err)
	}
}

func TestPrompts(t *testing.T) {
	rt := newTestRuntime(t, testOptions())
	png := []byte{1, 2, 3}
	mustAdd(t, rt.AddPrompt(Prompt{Name: "test_simple_prompt", Description: "A simple prompt"}, func(context.Context, *HandlerRequest) (*PromptResult, error) {
		return &PromptResult{Messages: []PromptMessage{{Role: "user", Content: TextContent("This is a simple prompt for testing.")}}}, nil
	}))
	mustAdd(t, rt.AddPrompt(Prompt{
		Name: "test_prompt_with_arguments", Title: "With arguments", Description: "A prompt with arguments",
		Arguments: []PromptArgument{{Name: "arg1", Description: "First", Required: true}, {Name: "arg2", Required: true}, {Name: "style"}},
		Icons:     []Icon{{Src: "https://e/p.png"}},
	}, func(_ context.Context, req *HandlerRequest) (*PromptResult, error) {
		var args map[string]string
		if err := req.Bind(&args); err != nil {
			return nil, err
		}
		return &PromptResult{
			Description: "rendered",
			Messages:    []PromptMessage{{Role: "user", Content: TextContent(fmt.Sprintf("Prompt with arguments: arg1='%s', arg2='%s'", args["arg1"], args["arg2"]))}},
		}, nil
	}))
	mustAdd(t, rt.AddPrompt(Prompt{Name: "test_prompt_with_image", Meta: json.RawMessage(`{"com.example/p":true}`)}, func(context.Context, *HandlerRequest) (*PromptResult, error) {
		return &PromptResult{Messages: []PromptMessage{
			{Role: "user", Content: ImageContent(png, "image/png")},
			{Role: "assistant", Content: TextContent("Please analyze the image above.")},
		}, Meta: json.RawMessage(`{"com.example/r":1}`)}, nil
	}))
	mustAdd(t, rt.AddPrompt(Prompt{Name: "failing"}, func(context.Context, *HandlerRequest) (*PromptResult, error) {
		return nil, errors.New("template missing")
	}))
	mustAdd(t, rt.AddPrompt(Prompt{Name: "refusing"}, func(context.Context, *HandlerRequest) (*PromptResult, error) {
		return nil, &RPCError{Code: CodeInvalidParams, Message: "arg1 must be short", Data: map[string]int{"max": 3}}
	}))
	mustAdd(t, rt.AddPrompt(Prompt{Name: "empty"}, emptyPrompt))

	list := func(icons string) string {
		return `{"prompts":[{"name":"empty"},{"name":"failing"},{"name":"refusing"},` +
			`{"name":"test_prompt_with_arguments","title":"With arguments","description":"A prompt with arguments","arguments":[{"name":"arg1","description":"First","required":true},{"name":"arg2","required":true},{"name":"style"}]` + icons + `},` +
			`{"name":"test_prompt_with_image","_meta":{"com.example/p":true}},{"name":"test_simple_prompt","description":"A simple prompt"}]`
	}
	wantResult(t, dispatch(rt, legacyRequest(ProtocolVersion20251125, "prompts/list", "")), list(`,"icons":[{"src":"https://e/p.png"}]`)+`}`)
	wantResult(t, dispatch(rt, legacyRequest(ProtocolVersion20250618, "prompts/list", "")), list("")+`}`)
	wantResult(t, dispatch(rt, statelessRequest("prompts/list", "")), list(`,"icons":[{"src":"https://e/p.png"}]`)+`,`+listed2026+`}`)

	gets := []struct{ name, params, legacy, stateless string }{
		{"simple", `{"name":"test_simple_prompt"}`, `{"messages":[{"role":"user","content":{"type":"text","text":"This is a simple prompt for testing."}}]}`, ""},
		{"with arguments", `{"name":"test_prompt_with_arguments","arguments":{"arg1":"hello","arg2":"world"}}`,
			`{"description":"rendered","messages":[{"role":"user","content":{"type":"text","text":"Prompt with arguments: arg1='hello', arg2='world'"}}]}`, ""},
		{"image and handler _meta", `{"name":"test_prompt_with_image"}`,
			`{"messages":[{"role":"user","content":{"type":"image","data":"AQID","mimeType":"image/png"}},{"role":"assistant","content":{"type":"text","text":"Please analyze the image above."}}],"_meta":{"com.example/r":1}}`,
			`{"messages":[{"role":"user","content":{"type":"image","data":"AQID","mimeType":"image/png"}},{"role":"assistant","content":{"type":"text","text":"Please analyze the image above."}}],"resultType":"complete","_meta":{"com.example/r":1,"io.modelcontextprotocol/serverInfo":{"name":"srv","version":"1.0"}}}`},
		{"nil result", `{"name":"empty","arguments":{}}`, `{"messages":[]}`, ""},
	}
	for _, tt := range gets {
		t.Run(tt.name, func(t *testing.T) {
			wantResult(t, dispatch(rt, legacyRequest(ProtocolVersion20251125, "prompts/get", tt.params)), tt.legacy)
			if tt.stateless == "" {
				tt.stateless = strings.TrimSuffix(tt.legacy, "}") + "," + complete2026 + "}"
			}
			wantResult(t, dispatch(rt, statelessRequest("prompts/get", tt.params)), tt.stateless)
		})
	}

	errs := []struct {
		name, params  string
		code          int
		message, data string
	}{
		{"unknown prompt", `{"name":"nope"}`, CodeInvalidParams, "Unknown prompt: nope", ""},
		{"name missing", `{}`, CodeInvalidParams, "Invalid params: prompts/get requires a string name", ""},
		{"name not a string", `{"name":{}}`, CodeInvalidParams, "Invalid params: prompts/get requires a string name", ""},
		{"all required missing", `{"name":"test_prompt_with_arguments"}`, CodeInvalidParams, "Missing required arguments for prompt test_prompt_with_arguments: arg1, arg2", `{"missing":["arg1","arg2"]}`},
		{"one required missing", `{"name":"test_prompt_with_arguments","arguments":{"arg1":"x","style":"y"}}`, CodeInvalidParams, "Missing required arguments for prompt test_prompt_with_arguments: arg2", `{"missing":["arg2"]}`},
		{"argument not a string", `{"name":"test_prompt_with_arguments","arguments":{"arg1":1,"arg2":"x"}}`, CodeInvalidParams, "Invalid params: prompt arguments must be an object of strings", ""},
		{"arguments an array", `{"name":"test_simple_prompt","arguments":[]}`, CodeInvalidParams, "Invalid params: prompt arguments must be an object of strings", ""},
		{"handler error", `{"name":"failing"}`, CodeInternalError, "Internal error", ""},
		{"handler RPC error", `{"name":"refusing"}`, CodeInvalidParams, "arg1 must be short", `{"max":3}`},
	}
	for _, tt := range errs {
		t.Run(tt.name, func(t *testing.T) {
			wantError(t, dispatch(rt, statelessRequest("prompts/get", tt.params)), tt.code, tt.message, tt.data)
		})
	}
}

func TestComplete(t *testing.T) {
	rt := newTestRuntime(t, testOptions())
	mustAdd(t, rt.AddPrompt(Prompt{Name: "p", Arguments: []PromptArgument{{Name: "city"}, {Name: "plain"}, {Name: "many"}, {Name: "ctx"}}}, emptyPrompt))
	mustAdd(t, rt.AddResourceTemplate(ResourceTemplate{URITemplate: "test://template/{id}/data", Name: "t"}, staticText("x")))
	mustAdd(t, rt.AddPromptCompletion("p", "city", PrefixCompletion("paris", "Park", "party", "rome")))
	mustAdd(t, rt.AddPromptCompletion("p", "many", func(context.Context, *CompletionRequest) (*Completion, error) {
		values := make([]string, 150)
		for i := range values {
			values[i] = fmt.Sprint(i)
		}
		return &Completion{Values: values}, nil
	}))
	mustAdd(t, rt.AddPromptCompletion("p", "ctx", func(_ context.Context, req *CompletionRequest) (*Completion, error) {
		return &Completion{Values: []string{req.Name + ":" + req.Argument + "=" + req.Value + ";city=" + req.Context["city"] + ";" + req.ProtocolVersion}, HasMore: true, Total: 9}, nil
	}))
	mustAdd(t, rt.AddTemplateCompletion("test://template/{id}/data", "id", func(_ context.Context, req *CompletionRequest) (*Completion, error) {
		if req.Value == "boom" {
			return nil, errors.New("index offline")
		}
		return &Completion{Values: []string{req.URI + " " + req.Value + "1"}}, nil
	}))

	promptRef := func(arg, value string) string {
		return `{"ref":{"type":"ref/prompt","name":"p"},"argument":{"name":"` + arg + `","value":"` + value + `"}}`
	}
	tests := []struct{ name, params, legacy string }{
		{"prefix, ignoring case", promptRef("city", "PAR"), `{"completion":{"values":["paris","Park","party"],"total":3}}`},
		{"no match", promptRef("city", "x"), `{"completion":{"values":[]}}`},
		{"argument without handler", promptRef("plain", "a"), `{"completion":{"values":[]}}`},
		{"cut to 100", promptRef("many", ""), `{"completion":{"values":[` + quotedRange(100) + `],"total":150,"hasMore":true}}`},
		{"request fields", `{"ref":{"type":"ref/prompt","name":"p"},"argument":{"name":"ctx","value":"v"},"context":{"arguments":{"city":"rome"}}}`, `{"completion":{"values":["p:ctx=v;city=rome;2025-11-25"],"total":9,"hasMore":true}}`},
		{"template variable", `{"ref":{"type":"ref/resource","uri":"test://template/{id}/data"},"argument":{"name":"id","value":"4"}}`, `{"completion":{"values":["test://template/{id}/data 41"]}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantResult(t, dispatch(rt, legacyRequest(ProtocolVersion20251125, "completion/complete", tt.params)), tt.legacy)
			if tt.name != "request fields" {
				wantResult(t, dispatch(rt, statelessRequest("completion/complete", tt.params)), strings.TrimSuffix(tt.legacy, "}")+","+complete2026+"}")
			}
		})
	}

	const shapeMsg = "Invalid params: completion/complete requires ref {type, name|uri}, argument {name, value} and optional context {arguments: object of strings}"
	errs := []struct {
		name, params string
		code         int
		message      string
	}{
		{"unknown prompt", `{"ref":{"type":"ref/prompt","name":"q"},"argument":{"name":"city","value":""}}`, CodeInvalidParams, "Unknown prompt: q"},
		{"unknown argument", promptRef("country", ""), CodeInvalidParams, `Unknown argument "country" of prompt p`},
		{"unknown template", `{"ref":{"type":"ref/resource","uri":"test://template/1/data"},"argument":{"name":"id","value":""}}`, CodeInvalidParams, "Unknown resource template: test://template/1/data"},
		{"unknown variable", `{"ref":{"type":"ref/resource","uri":"test://template/{id}/data"},"argument":{"name":"x","value":""}}`, CodeInvalidParams, `Unknown variable "x" of resource template test://template/{id}/data`},
		{"unknown ref type", `{"ref":{"type":"ref/tool","name":"p"},"argument":{"name":"city","value":""}}`, CodeInvalidParams, `Invalid params: unknown ref type "ref/tool" (want ref/prompt or ref/resource)`},
		{"ref without type", `{"ref":{"name":"p"},"argument":{"name":"city","value":""}}`, CodeInvalidParams, "Invalid params: completion/complete requires ref.type"},
		{"prompt ref without name", `{"ref":{"type":"ref/prompt"},"argument":{"name":"city","value":""}}`, CodeInvalidParams, "Invalid params: a ref/prompt requires a string name"},
		{"resource ref without uri", `{"ref":{"type":"ref/resource"},"argument":{"name":"id","value":""}}`, CodeInvalidParams, "Invalid params: a ref/resource requires a string uri"},
		{"argument without value", `{"ref":{"type":"ref/prompt","name":"p"},"argument":{"name":"city"}}`, CodeInvalidParams, "Invalid params: completion/complete requires argument with string name and value"},
		{"ref not an object", `{"ref":"p","argument":{"name":"city","value":""}}`, CodeInvalidParams, shapeMsg},
		{"context argument not a string", `{"ref":{"type":"ref/prompt","name":"p"},"argument":{"name":"city","value":""},"context":{"arguments":{"a":1}}}`, CodeInvalidParams, shapeMsg},
		{"handler error", `{"ref":{"type":"ref/resource","uri":"test://template/{id}/data"},"argument":{"name":"id","value":"boom"}}`, CodeInternalError, "Internal error"},
	}
	for _, tt := range errs {
		t.Run(tt.name, func(t *testing.T) {
			wantError(t, dispatch(rt, statelessRequest("completion/complete", tt.params)), tt.code, tt.message, "")
		})
	}
}

func quotedRange(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf("%q", fmt.Sprint(i))
	}
	return strings.Join(parts, ",")
}
