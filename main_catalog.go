package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// The reference catalog is what `go run .` serves: an echo tool, a
// cancellable sleep tool, and the fixtures the official MCP conformance suite
// calls, with the names, texts and data that suite expects.

// Binary fixtures, base64-encoded as the conformance suite knows them.
const (
	// referencePNGBase64 is a 1x1 red RGBA PNG with valid CRCs, the suite's
	// reference image.
	referencePNGBase64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
	// referenceWAVBase64 is a well-formed 46-byte WAV file: mono, 16-bit,
	// 8 kHz, one silent sample. (The suite's own 44-byte value declares two
	// data bytes it lacks; the suite only checks for non-empty data.)
	referenceWAVBase64 = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQIAAAAAAA=="
)

// maxSleepMs is the longest wait the sleep tool accepts, ten minutes.
const maxSleepMs = 600000

// Input schemas of the reference tools.
const (
	noArgumentsSchema = `{"type":"object","properties":{}}`
	echoSchema        = `{"type":"object","properties":{"text":{"type":"string","description":"The text to return"}},"required":["text"]}`
	sleepSchema       = `{"type":"object","properties":{"ms":{"type":"integer","minimum":0,"maximum":600000,"description":"How long to wait, in milliseconds"}},"required":["ms"]}`
	// jsonSchema202012ToolSchema is served byte for byte as the conformance
	// suite defines it: its checks look for $schema, $defs with $anchor,
	// additionalProperties, allOf/anyOf and if/then/else.
	jsonSchema202012ToolSchema = `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","$defs":{"address":{"$anchor":"addressDef","type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"}}}},"properties":{"name":{"type":"string"},"address":{"$ref":"#/$defs/address"},"contactMethod":{"type":"string","enum":["phone","email"]},"phone":{"type":"string"},"email":{"type":"string"}},"allOf":[{"anyOf":[{"required":["phone"]},{"required":["email"]}]}],"if":{"properties":{"contactMethod":{"const":"phone"}},"required":["contactMethod"]},"then":{"required":["phone"]},"else":{"required":["email"]},"additionalProperties":false}`
)

// referenceMedia holds the decoded binary fixtures. The slices are shared by
// every result that carries them and must never be modified.
type referenceMedia struct {
	png []byte
	wav []byte
}

func decodeReferenceMedia() (referenceMedia, error) {
	png, err := base64.StdEncoding.DecodeString(referencePNGBase64)
	if err != nil {
		return referenceMedia{}, fmt.Errorf("decoding the reference PNG: %w", err)
	}
	wav, err := base64.StdEncoding.DecodeString(referenceWAVBase64)
	if err != nil {
		return referenceMedia{}, fmt.Errorf("decoding the reference WAV: %w", err)
	}
	return referenceMedia{png: png, wav: wav}, nil
}

// registerReferenceCatalog registers the reference server's tools, resources,
// prompts and completions on rt. It fails when one of them cannot
// be registered (for example because rt already holds an entry of that name);
// rt then holds the entries registered before the failure and should be
// discarded.
func registerReferenceCatalog(rt *Runtime) error {
	media, err := decodeReferenceMedia()
	if err != nil {
		return fmt.Errorf("reference catalog: %w", err)
	}
	steps := []func(*Runtime, referenceMedia) error{
		registerReferenceApp, // before the echo tool, which links to it
		registerReferenceTools,
		registerReferenceResources,
		registerReferencePrompts,
		registerLiveFixtures,
		registerAskingFixtures,
		registerTaskFixtures,
	}
	for _, register := range steps {
		if err := register(rt, media); err != nil {
			return fmt.Errorf("reference catalog: %w", err)
		}
	}
	return nil
}

// ---- tools ----

func registerReferenceTools(rt *Runtime, m referenceMedia) error {
	// The tools that only build their answer run inline, on the connection's
	// owner (Tool.Inline); sleep and the one that asks the client do not.
	// echo's results show in its app on hosts that render apps
	// (main_apps.go); every host gets the text.
	echo, err := LinkApp(inlineTool(referenceTool("echo", "Returns the given text unchanged, as one text content block", echoSchema)),
		ToolUI{ResourceURI: echoAppURI})
	if err != nil {
		return err
	}
	if err := rt.AddTool(echo, echoText); err != nil {
		return err
	}
	sleep := referenceTool("sleep", "Waits the given number of milliseconds (at most 600000), or until the request is cancelled or times out; for testing client timeouts and cancellation", sleepSchema)
	if err := AddTypedTool(rt, sleep, sleepFor); err != nil {
		return err
	}
	tools := []struct {
		tool    Tool
		handler ToolHandler
	}{
		{inlineTool(referenceTool("test_simple_text", "Tests simple text content response", noArgumentsSchema)),
			fixedToolResult(TextContent("This is a simple text response for testing."))},
		{inlineTool(referenceTool("test_image_content", "Tests image content response", noArgumentsSchema)),
			fixedToolResult(ImageContent(m.png, "image/png"))},
		{inlineTool(referenceTool("test_audio_content", "Tests audio content response", noArgumentsSchema)),
			fixedToolResult(AudioContent(m.wav, "audio/wav"))},
		{inlineTool(referenceTool("test_embedded_resource", "Tests embedded resource content response", noArgumentsSchema)),
			fixedToolResult(EmbeddedResourceContent(ResourceContents{
				URI: "test://embedded-resource", MIMEType: "text/plain", Text: "This is an embedded resource content.",
			}))},
		{inlineTool(referenceTool("test_multiple_content_types", "Tests response with multiple content types (text, image, resource)", noArgumentsSchema)),
			fixedToolResult(
				TextContent("Multiple content types test:"),
				ImageContent(m.png, "image/png"),
				EmbeddedResourceContent(ResourceContents{
					URI: "test://mixed-content-resource", MIMEType: "application/json", Text: `{"test":"data","value":123}`,
				}),
			)},
		{inlineTool(referenceTool("test_error_handling", "Tests error response handling", noArgumentsSchema)), failOnPurpose},
		{inlineTool(referenceTool("json_schema_2020_12_tool", "Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)", jsonSchema202012ToolSchema)), describeArguments},
		{referenceTool("test_missing_capability", "Test tool requiring sampling", noArgumentsSchema), requireSampling},
	}
	for _, t := range tools {
		if err := rt.AddTool(t.tool, t.handler); err != nil {
			return err
		}
	}
	return nil
}

// inlineTool is t run on the connection's owner (Tool.Inline).
func inlineTool(t Tool) Tool {
	t.Inline = true
	return t
}

func referenceTool(name, description, inputSchema string) Tool {
	return Tool{Name: name, Description: description, InputSchema: json.RawMessage(inputSchema)}
}

// fixedToolResult returns a handler that answers every call with content.
func fixedToolResult(content ...Content) ToolHandler {
	return func(context.Context, *HandlerRequest) (*ToolResult, error) {
		return &ToolResult{Content: slices.Clone(content)}, nil
	}
}

// echoInput is the echo tool's arguments: {"text": string}.
type echoInput struct {
	Text string `json:"text"`
}

// echoText serves the echo tool: the text, once, as one text block. It has
// no outputSchema, so no structuredContent repeats the text (a typed tool's
// result carries it twice); sleep shows a typed tool. Its copy of the text
// is a span of its own under the request's when telemetry is on
// (StartSpan), to show a tool's child spans.
func echoText(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
	// One allocation holds the arguments and the result.
	call := new(struct {
		in      echoInput
		result  ToolResult
		content [1]Content
	})
	if err := req.Bind(&call.in); err != nil {
		return nil, err
	}
	if call.in.Text == "" { // "" or null, which Bind leaves as ""
		var probe struct {
			Text *string `json:"text"`
		}
		if req.Bind(&probe); probe.Text == nil {
			return nil, &ArgumentError{Path: "text", Problem: "must be a string"}
		}
	}
	_, span := StartSpan(ctx, "echo copy")
	defer span.End(nil)
	call.content[0] = TextContent(call.in.Text)
	call.result.Content = call.content[:]
	return &call.result, nil
}

// sleepInput and sleepOutput are the sleep tool's arguments and result. Its
// input schema is sleepSchema, which states the bounds of ms.
type sleepInput struct {
	Ms int64 `json:"ms"`
}

type sleepOutput struct {
	SleptMs int64 `json:"sleptMs" jsonschema:"How long the call waited, in milliseconds"`
}

// String is the result's text content: "slept <ms> ms".
func (o sleepOutput) String() string { return fmt.Sprintf("slept %d ms", o.SleptMs) }

// sleepFor serves the sleep tool: {"ms": 0..600000} → waits, then answers
// "slept <ms> ms". When ctx is done first it returns ctx.Err() at once; the
// transport then writes nothing (cancellation) or its timeout error.
func sleepFor(ctx context.Context, _ *HandlerRequest, in sleepInput) (sleepOutput, error) {
	if in.Ms < 0 || in.Ms > maxSleepMs {
		return sleepOutput{}, fmt.Errorf("sleep: ms must be an integer from 0 to %d", maxSleepMs)
	}
	timer := time.NewTimer(time.Duration(in.Ms) * time.Millisecond)
	defer timer.Stop()
	_, span := StartSpan(ctx, "sleep wait")
	select {
	case <-ctx.Done():
		span.End(ctx.Err())
		return sleepOutput{}, ctx.Err()
	case <-timer.C:
		span.End(nil)
		return sleepOutput{SleptMs: in.Ms}, nil
	}
}

// failOnPurpose serves test_error_handling: the tool fails, which the
// runtime answers as a result with isError true.
func failOnPurpose(context.Context, *HandlerRequest) (*ToolResult, error) {
	return nil, errors.New("This tool intentionally returns an error for testing")
}

// describeArguments serves json_schema_2020_12_tool: it reports the
// arguments it received, compacted.
func describeArguments(_ context.Context, req *HandlerRequest) (*ToolResult, error) {
	var args bytes.Buffer
	if json.Compact(&args, req.Arguments) != nil { // the runtime passes valid JSON only
		return nil, errors.New("json_schema_2020_12_tool: the arguments are not valid JSON")
	}
	return TextResult("JSON Schema 2020-12 tool called with: " + args.String()), nil
}

// requireSampling serves test_missing_capability: a client that did not
// declare the sampling capability gets -32021 with
// data.requiredCapabilities {"sampling":{}}; any other gets "Success".
func requireSampling(_ context.Context, req *HandlerRequest) (*ToolResult, error) {
	if err := req.RequireClientCapability("sampling"); err != nil {
		return nil, err
	}
	return TextResult("Success"), nil
}

// ---- resources ----

func registerReferenceResources(rt *Runtime, m referenceMedia) error {
	resources := []struct {
		resource Resource
		contents ResourceContents
	}{
		{
			Resource{URI: "test://static-text", Name: "static-text", Title: "Static Text Resource",
				Description: "A static text resource for testing", MIMEType: "text/plain"},
			ResourceContents{URI: "test://static-text", MIMEType: "text/plain", Text: "This is the content of the static text resource."},
		},
		{
			Resource{URI: "test://static-binary", Name: "static-binary", Title: "Static Binary Resource",
				Description: "A static binary resource (image) for testing", MIMEType: "image/png"},
			ResourceContents{URI: "test://static-binary", MIMEType: "image/png", Blob: m.png},
		},
		{
			Resource{URI: "test://watched-resource", Name: "watched-resource", Title: "Watched Resource",
				Description: "A resource for testing resource subscriptions", MIMEType: "text/plain"},
			ResourceContents{URI: "test://watched-resource", MIMEType: "text/plain", Text: "Watched resource content"},
		},
	}
	for _, r := range resources {
		if err := rt.AddResource(r.resource, fixedResource(r.contents)); err != nil {
			return err
		}
	}
	return rt.AddResourceTemplate(ResourceTemplate{
		URITemplate: "test://template/{id}/data",
		Name:        "template",
		Title:       "Resource Template",
		Description: "A resource template with parameter substitution",
		MIMEType:    "application/json",
	}, readTemplateData)
}

// fixedResource returns a handler that answers every read with contents.
func fixedResource(contents ResourceContents) ResourceHandler {
	return func(context.Context, *HandlerRequest) (*ResourceResult, error) {
		return &ResourceResult{Contents: []ResourceContents{contents}}, nil
	}
}

// templateData is the JSON text test://template/{id}/data reads as.
type templateData struct {
	ID           string `json:"id"`
	TemplateTest bool   `json:"templateTest"`
	Data         string `json:"data"`
}

// readTemplateData serves test://template/{id}/data: for id 123 the text
// {"id":"123","templateTest":true,"data":"Data for ID: 123"}.
func readTemplateData(_ context.Context, req *HandlerRequest) (*ResourceResult, error) {
	id := req.Variables["id"]
	text, err := marshalJSON(templateData{ID: id, TemplateTest: true, Data: "Data for ID: " + id})
	if err != nil {
		return nil, fmt.Errorf("encoding template data for id %q: %w", id, err)
	}
	return &ResourceResult{Contents: []ResourceContents{{URI: req.URI, MIMEType: "application/json", Text: string(text)}}}, nil
}

// ---- prompts and completions ----

func registerReferencePrompts(rt *Runtime, m referenceMedia) error {
	prompts := []struct {
		prompt  Prompt
		handler PromptHandler
	}{
		{
			Prompt{Name: "test_simple_prompt", Title: "Simple Test Prompt", Description: "A simple prompt without arguments"},
			fixedPrompt(userMessage(TextContent("This is a simple prompt for testing."))),
		},
		{
			Prompt{Name: "test_prompt_with_arguments", Description: "A prompt with required arguments", Arguments: []PromptArgument{
				{Name: "arg1", Description: "First test argument", Required: true},
				{Name: "arg2", Description: "Second test argument", Required: true},
			}},
			promptWithArguments,
		},
		{
			Prompt{Name: "test_prompt_with_embedded_resource", Description: "A prompt that includes an embedded resource", Arguments: []PromptArgument{
				{Name: "resourceUri", Description: "URI of the resource to embed", Required: true},
			}},
			promptWithEmbeddedResource,
		},
		{
			Prompt{Name: "test_prompt_with_image", Description: "A prompt that includes image content"},
			fixedPrompt(
				userMessage(ImageContent(m.png, "image/png")),
				userMessage(TextContent("Please analyze the image above.")),
			),
		},
	}
	for _, p := range prompts {
		if err := rt.AddPrompt(p.prompt, p.handler); err != nil {
			return err
		}
	}
	for _, argument := range []string{"arg1", "arg2"} {
		if err := rt.AddPromptCompletion("test_prompt_with_arguments", argument, PrefixCompletion(promptArgumentSuggestions()...)); err != nil {
			return err
		}
	}
	return nil
}

// promptArgumentSuggestions are the completion candidates of
// test_prompt_with_arguments' arguments.
func promptArgumentSuggestions() []string { return []string{"paris", "park", "party"} }

func userMessage(c Content) PromptMessage { return PromptMessage{Role: "user", Content: c} }

// fixedPrompt returns a handler that renders messages whatever the
// arguments.
func fixedPrompt(messages ...PromptMessage) PromptHandler {
	return func(context.Context, *HandlerRequest) (*PromptResult, error) {
		return &PromptResult{Messages: slices.Clone(messages)}, nil
	}
}

// promptWithArguments renders "Prompt with arguments: arg1='…', arg2='…'".
// The runtime has checked that both arguments are present.
func promptWithArguments(_ context.Context, req *HandlerRequest) (*PromptResult, error) {
	var args map[string]string
	if err := req.Bind(&args); err != nil {
		return nil, err
	}
	text := fmt.Sprintf("Prompt with arguments: arg1='%s', arg2='%s'", args["arg1"], args["arg2"])
	return &PromptResult{Messages: []PromptMessage{userMessage(TextContent(text))}}, nil
}

// promptWithEmbeddedResource embeds a text resource at the URI given in
// resourceUri, then asks for it to be processed.
func promptWithEmbeddedResource(_ context.Context, req *HandlerRequest) (*PromptResult, error) {
	var args map[string]string
	if err := req.Bind(&args); err != nil {
		return nil, err
	}
	return &PromptResult{Messages: []PromptMessage{
		userMessage(EmbeddedResourceContent(ResourceContents{
			URI: args["resourceUri"], MIMEType: "text/plain", Text: "Embedded resource content for testing.",
		})),
		userMessage(TextContent("Please process the embedded resource above.")),
	}}, nil
}
