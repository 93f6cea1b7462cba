package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"image/png"
	"strings"
	"sync"
	"testing"
	"time"
)

// Expected values, written out independently of main_catalog.go so that a typo
// there fails here.
const (
	catalogWantPNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
	catalogWantWAV = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQIAAAAAAA=="
	// catalogWantSchema2020 is the conformance suite's inputSchema of
	// json_schema_2020_12_tool.
	catalogWantSchema2020 = `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","$defs":{"address":{"$anchor":"addressDef","type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"}}}},"properties":{"name":{"type":"string"},"address":{"$ref":"#/$defs/address"},"contactMethod":{"type":"string","enum":["phone","email"]},"phone":{"type":"string"},"email":{"type":"string"}},"allOf":[{"anyOf":[{"required":["phone"]},{"required":["email"]}]}],"if":{"properties":{"contactMethod":{"const":"phone"}},"required":["contactMethod"]},"then":{"required":["phone"]},"else":{"required":["email"]},"additionalProperties":false}`
	// catalogServerMeta is the _meta member of every 2026 result of
	// newCatalogRuntime.
	catalogServerMeta = `"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"reference","version":"0.0.1"}}`
)

// catalogVersions are the versions every fixture is checked under.
func catalogVersions() []string {
	return []string{ProtocolVersion20260728, ProtocolVersion20251125, ProtocolVersion20250618}
}

func newCatalogRuntime(t testing.TB) *Runtime {
	t.Helper()
	rt, err := NewRuntime(RuntimeOptions{ServerInfo: Implementation{Name: "reference", Version: "0.0.1"}, Tasks: TaskOptions{}})
	if err != nil {
		t.Fatalf("NewRuntime: %v", err)
	}
	if err := registerReferenceCatalog(rt); err != nil {
		t.Fatalf("registerReferenceCatalog: %v", err)
	}
	return rt
}

// catalogRequest builds request 7 of method under version with the given
// params members (the object's text without braces, "" for none) and client
// capabilities. A 2026 request carries them in params._meta; a legacy one
// carries the synthesized header and the capabilities in its Session, as
// the coordinator hands it over after initialize.
func catalogRequest(version, method, members, clientCaps string) *Request {
	req := &Request{Method: method, ID: json.RawMessage(`7`)}
	if isStatelessVersion(version) {
		meta := fmt.Sprintf(`"_meta":{"io.modelcontextprotocol/protocolVersion":%q,"io.modelcontextprotocol/clientCapabilities":%s}`, version, clientCaps)
		req.Params = json.RawMessage("{" + joinMembers(members, meta) + "}")
		return req
	}
	if members != "" {
		req.Params = json.RawMessage("{" + members + "}")
	}
	req.Header = map[string]string{"mcp-protocol-version": version}
	req.Session = Session{ProtocolVersion: version, ClientInfo: json.RawMessage(`{"name":"cli","version":"1"}`), ClientCapabilities: json.RawMessage(clientCaps)}
	return req
}

func joinMembers(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	return a + "," + b
}

// catalogWant is the exact result text under version for a result whose
// own members are members: as is for the legacy era, with the 2026 envelope
// (and the caching hints of a cacheable result) otherwise.
func catalogWant(version, members string, cacheable bool) string {
	if !isStatelessVersion(version) {
		return "{" + members + "}"
	}
	envelope := `"resultType":"complete"`
	if cacheable {
		envelope += `,"ttlMs":0,"cacheScope":"private"`
	}
	return "{" + joinMembers(members, envelope+","+catalogServerMeta) + "}"
}

func catalogDispatch(rt *Runtime, version, method, members string) Reply {
	return rt.Dispatch(context.Background(), catalogRequest(version, method, members, `{}`))
}

func catalogText(text string) string {
	b, _ := marshalJSON(text)
	return `{"type":"text","text":` + string(b) + `}`
}

// catalogToolFailure is the members of a tool result with isError true.
func catalogToolFailure(text string) string {
	return `"content":[` + catalogText(text) + `],"isError":true`
}

func TestReferenceToolCalls(t *testing.T) {
	rt := newCatalogRuntime(t)
	image := `{"type":"image","data":"` + catalogWantPNG + `","mimeType":"image/png"}`
	const sleepRange = "sleep: ms must be an integer from 0 to 600000"
	const sleepNotInteger = `Invalid arguments: "ms" must be an integer`
	tests := []struct {
		name   string
		params string // tools/call params members
		want   string // result members
	}{
		{"echo", `"name":"echo","arguments":{"text":"hello \"quoted\" <&>\n"}`, `"content":[{"type":"text","text":"hello \"quoted\" <&>\n"}]`},
		{"echo empty text", `"name":"echo","arguments":{"text":""}`, `"content":[{"type":"text","text":""}]`},
		{"echo matches keys exactly", `"name":"echo","arguments":{"Text":"no","te\u0078t":"yes","TEXT":"no"}`, `"content":[{"type":"text","text":"yes"}]`},
		{"echo without the exact key", `"name":"echo","arguments":{"Text":"no"}`, catalogToolFailure("Invalid arguments for tool echo: missing required argument(s): text")},
		{"echo without text", `"name":"echo","arguments":{}`, catalogToolFailure("Invalid arguments for tool echo: missing required argument(s): text")},
		{"echo number", `"name":"echo","arguments":{"text":5}`, catalogToolFailure(`Invalid arguments: "text" must be a string`)},
		{"echo null", `"name":"echo","arguments":{"text":null}`, catalogToolFailure(`Invalid arguments: "text" must be a string`)},
		{"sleep 0 ms", `"name":"sleep","arguments":{"ms":0}`, `"content":[` + catalogText("slept 0 ms") + `],"structuredContent":{"sleptMs":0}`},
		{"sleep binds ms by its exact key", `"name":"sleep","arguments":{"ms":0,"MS":3000}`, `"content":[` + catalogText("slept 0 ms") + `],"structuredContent":{"sleptMs":0}`},
		{"sleep 2 ms written as a float", `"name":"sleep","arguments":{"ms":2.0}`, `"content":[` + catalogText("slept 2 ms") + `],"structuredContent":{"sleptMs":2}`},
		{"sleep without ms", `"name":"sleep"`, catalogToolFailure("Invalid arguments for tool sleep: missing required argument(s): ms")},
		{"sleep negative", `"name":"sleep","arguments":{"ms":-1}`, catalogToolFailure(sleepRange)},
		{"sleep over the cap", `"name":"sleep","arguments":{"ms":600001}`, catalogToolFailure(sleepRange)},
		{"sleep fraction", `"name":"sleep","arguments":{"ms":1.5}`, catalogToolFailure(sleepNotInteger)},
		{"sleep string", `"name":"sleep","arguments":{"ms":"5"}`, catalogToolFailure(sleepNotInteger)},
		{"sleep null", `"name":"sleep","arguments":{"ms":null}`, catalogToolFailure(sleepNotInteger)},
		{"sleep huge exponent", `"name":"sleep","arguments":{"ms":1e400}`, catalogToolFailure(sleepNotInteger + " from -9223372036854775808 to 9223372036854775807")},
		{"simple text without arguments", `"name":"test_simple_text"`, `"content":[` + catalogText("This is a simple text response for testing.") + `]`},
		{"simple text with empty arguments", `"name":"test_simple_text","arguments":{}`, `"content":[` + catalogText("This is a simple text response for testing.") + `]`},
		{"image", `"name":"test_image_content","arguments":{}`, `"content":[` + image + `]`},
		{"audio", `"name":"test_audio_content","arguments":{}`, `"content":[{"type":"audio","data":"` + catalogWantWAV + `","mimeType":"audio/wav"}]`},
		{"embedded resource", `"name":"test_embedded_resource","arguments":{}`,
			`"content":[{"type":"resource","resource":{"uri":"test://embedded-resource","mimeType":"text/plain","text":"This is an embedded resource content."}}]`},
		{"multiple content types", `"name":"test_multiple_content_types","arguments":{}`,
			`"content":[` + catalogText("Multiple content types test:") + `,` + image +
				`,{"type":"resource","resource":{"uri":"test://mixed-content-resource","mimeType":"application/json","text":"{\"test\":\"data\",\"value\":123}"}}]`},
		{"error handling", `"name":"test_error_handling","arguments":{}`, catalogToolFailure("This tool intentionally returns an error for testing")},
		{"json schema 2020-12 tool", `"name":"json_schema_2020_12_tool","arguments":{ "name" : "Ann", "contactMethod":"email","email":"a@example.com","address":{"city":"Oslo"} }`,
			`"content":[` + catalogText(`JSON Schema 2020-12 tool called with: {"name":"Ann","contactMethod":"email","email":"a@example.com","address":{"city":"Oslo"}}`) + `]`},
		{"json schema 2020-12 tool without arguments", `"name":"json_schema_2020_12_tool"`,
			`"content":[` + catalogText(`JSON Schema 2020-12 tool called with: {}`) + `]`},
	}
	for _, tt := range tests {
		for _, version := range catalogVersions() {
			t.Run(tt.name+"/"+version, func(t *testing.T) {
				wantResult(t, catalogDispatch(rt, version, "tools/call", tt.params), catalogWant(version, tt.want, false))
			})
		}
	}
}

// TestReferenceEchoKeepsText compares decoded text, since how non-ASCII
// characters are escaped is the encoder's business.
func TestReferenceEchoKeepsText(t *testing.T) {
	rt := newCatalogRuntime(t)
	texts := []string{"héllo", "line\u2028separator", "emoji 😀", "nul \x00 byte", `<script>&amp;</script>`, strings.Repeat("long ", 10000)}
	for _, text := range texts {
		args, err := json.Marshal(map[string]string{"text": text})
		if err != nil {
			t.Fatal(err)
		}
		for _, version := range catalogVersions() {
			reply := catalogDispatch(rt, version, "tools/call", `"name":"echo","arguments":`+string(args))
			var res struct {
				Content []struct{ Type, Text string }
				IsError bool
			}
			if reply.Error != nil || json.Unmarshal(reply.Result, &res) != nil {
				t.Fatalf("%s: echo %.40q: %s %+v", version, text, reply.Result, reply.Error)
			}
			if res.IsError || len(res.Content) != 1 || res.Content[0].Type != "text" || res.Content[0].Text != text {
				t.Errorf("%s: echo %.40q answered %.200s", version, text, reply.Result)
			}
		}
	}
}

func TestReferenceMissingCapability(t *testing.T) {
	rt := newCatalogRuntime(t)
	tests := []struct {
		name, caps string
		ok         bool
	}{
		{"no capabilities", `{}`, false},
		{"other capabilities", `{"elicitation":{},"roots":{"listChanged":true}}`, false},
		{"sampling not an object", `{"sampling":true}`, false},
		{"sampling declared", `{"sampling":{}}`, true},
	}
	for _, tt := range tests {
		for _, version := range catalogVersions() {
			t.Run(tt.name+"/"+version, func(t *testing.T) {
				req := catalogRequest(version, "tools/call", `"name":"test_missing_capability","arguments":{}`, tt.caps)
				reply := rt.Dispatch(context.Background(), req)
				if tt.ok {
					wantResult(t, reply, catalogWant(version, `"content":[`+catalogText("Success")+`]`, false))
					return
				}
				wantError(t, reply, CodeMissingCapability, "Missing required client capability: sampling", `{"requiredCapabilities":{"sampling":{}}}`)
			})
		}
	}
}

func TestReferenceToolsList(t *testing.T) {
	rt := newCatalogRuntime(t)
	wantNames := []string{
		"confirm_delete", "echo", "failing_job", "greet", "json_schema_2020_12_tool", "multi_input",
		"protocol_error_job", "sleep", "slow_compute", "test_audio_content",
		"test_elicitation", "test_elicitation_sep1034_defaults", "test_elicitation_sep1330_enums",
		"test_embedded_resource", "test_error_handling", "test_image_content",
		"test_input_required_result_capabilities", "test_input_required_result_elicitation",
		"test_input_required_result_list_roots", "test_input_required_result_multi_round",
		"test_input_required_result_multiple_inputs", "test_input_required_result_request_state",
		"test_input_required_result_sampling", "test_input_required_result_tampered_state",
		"test_logging_tool", "test_missing_capability", "test_multiple_content_types", "test_sampling",
		"test_simple_text", "test_streaming_elicitation", "test_tool_with_logging", "test_tool_with_progress",
		"test_tool_with_task", "test_trigger_prompt_change", "test_trigger_tool_change",
	}
	for _, version := range catalogVersions() {
		t.Run(version, func(t *testing.T) {
			reply := catalogDispatch(rt, version, "tools/list", "")
			if reply.Error != nil {
				t.Fatalf("tools/list: error %d %q", reply.Error.Code, reply.Error.Message)
			}
			var raw struct{ Tools json.RawMessage }
			if err := json.Unmarshal(reply.Result, &raw); err != nil {
				t.Fatalf("decoding tools/list %s: %v", reply.Result, err)
			}
			if want := catalogWant(version, `"tools":`+string(raw.Tools), true); string(reply.Result) != want {
				t.Errorf("tools/list result envelope\n got: %s\nwant: %s", reply.Result, want)
			}
			var res struct {
				Tools []struct {
					Name        string
					Description string
					InputSchema json.RawMessage
				}
				NextCursor *string
			}
			if err := json.Unmarshal(reply.Result, &res); err != nil {
				t.Fatalf("decoding tools/list %s: %v", reply.Result, err)
			}
			if res.NextCursor != nil {
				t.Errorf("nextCursor %q on the only page", *res.NextCursor)
			}
			var names []string
			for _, tool := range res.Tools {
				names = append(names, tool.Name)
				if strings.TrimSpace(tool.Description) == "" {
					t.Errorf("tool %s has no description", tool.Name)
				}
				var schema map[string]json.RawMessage
				if err := json.Unmarshal(tool.InputSchema, &schema); err != nil || string(schema["type"]) != `"object"` {
					t.Errorf("tool %s inputSchema %s is not an object schema of type \"object\"", tool.Name, tool.InputSchema)
				}
				if tool.Name == "json_schema_2020_12_tool" && string(tool.InputSchema) != catalogWantSchema2020 {
					t.Errorf("json_schema_2020_12_tool inputSchema changed\n got: %s\nwant: %s", tool.InputSchema, catalogWantSchema2020)
				}
			}
			if strings.Join(names, " ") != strings.Join(wantNames, " ") {
				t.Errorf("tools in order %v, want %v", names, wantNames)
			}
		})
	}
}

// TestReferenceToolSchemas pins the schemas of the tools that take
// arguments; the others take none.
func TestReferenceToolSchemas(t *testing.T) {
	rt := newCatalogRuntime(t)
	want := map[string]string{
		"echo":                     `{"type":"object","properties":{"text":{"type":"string","description":"The text to return"}},"required":["text"]}`,
		"sleep":                    `{"type":"object","properties":{"ms":{"type":"integer","minimum":0,"maximum":600000,"description":"How long to wait, in milliseconds"}},"required":["ms"]}`,
		"json_schema_2020_12_tool": catalogWantSchema2020,
		"test_sampling":            `{"type":"object","properties":{"prompt":{"type":"string","description":"The prompt to send to the LLM"}},"required":["prompt"]}`,
		"test_elicitation":         `{"type":"object","properties":{"message":{"type":"string","description":"The message to show the user"}},"required":["message"]}`,
		"greet":                    greetSchema,
		"slow_compute":             slowComputeSchema,
		"confirm_delete":           confirmSchema,
	}
	var res struct {
		Tools []struct {
			Name        string
			InputSchema json.RawMessage
		}
	}
	if err := json.Unmarshal(catalogDispatch(rt, ProtocolVersion20251125, "tools/list", "").Result, &res); err != nil {
		t.Fatalf("decoding tools/list: %v", err)
	}
	for _, tool := range res.Tools {
		schema, ok := want[tool.Name]
		if !ok {
			schema = `{"type":"object","properties":{}}`
		}
		if string(tool.InputSchema) != schema {
			t.Errorf("tool %s inputSchema\n got: %s\nwant: %s", tool.Name, tool.InputSchema, schema)
		}
	}
}

// doneWatchContext reports, by closing waiting, the first call of Done: the
// point where the sleep tool starts waiting on ctx.
type doneWatchContext struct {
	context.Context
	once    sync.Once
	waiting chan struct{}
}

func (c *doneWatchContext) Done() <-chan struct{} {
	c.once.Do(func() { close(c.waiting) })
	return c.Context.Done()
}

func TestReferenceSleepEndsWithContext(t *testing.T) {
	rt := newCatalogRuntime(t)
	const maxSleep = `"name":"sleep","arguments":{"ms":600000}`
	tests := []struct {
		name string
		// start returns the context to dispatch with and the function that
		// ends it once the tool waits (nil when it is already over).
		start    func() (context.Context, func())
		wantText string
	}{
		{"cancelled while waiting", func() (context.Context, func()) {
			return context.WithCancel(context.Background())
		}, "context canceled"},
		{"deadline already passed", func() (context.Context, func()) {
			ctx, cancel := context.WithDeadline(context.Background(), time.Unix(0, 0))
			cancel()
			return ctx, nil
		}, "context deadline exceeded"},
	}
	for _, tt := range tests {
		for _, version := range catalogVersions() {
			t.Run(tt.name+"/"+version, func(t *testing.T) {
				base, end := tt.start()
				ctx := &doneWatchContext{Context: base, waiting: make(chan struct{})}
				replies := make(chan Reply, 1)
				go func() {
					replies <- rt.Dispatch(ctx, catalogRequest(version, "tools/call", maxSleep, `{}`))
				}()
				select {
				case <-ctx.waiting:
				case reply := <-replies:
					// Both may be ready when the context was over from the
					// start; select picks either.
					select {
					case <-ctx.waiting:
						replies <- reply
					default:
						t.Fatalf("sleep returned before waiting on its context: %s %+v", reply.Result, reply.Error)
					}
				case <-time.After(10 * time.Second):
					t.Fatal("sleep did not wait on its context within 10s")
				}
				if end != nil {
					end()
				}
				select {
				case reply := <-replies:
					wantResult(t, reply, catalogWant(version, catalogToolFailure(tt.wantText), false))
				case <-time.After(10 * time.Second):
					t.Fatal("sleep did not return within 10s of its context ending")
				}
			})
		}
	}
}

func TestReferenceResources(t *testing.T) {
	rt := newCatalogRuntime(t)
	var (
		resources = `"resources":[` +
			`{"uri":"test://static-binary","name":"static-binary","title":"Static Binary Resource","description":"A static binary resource (image) for testing","mimeType":"image/png"},` +
			`{"uri":"test://static-text","name":"static-text","title":"Static Text Resource","description":"A static text resource for testing","mimeType":"text/plain"},` +
			`{"uri":"test://watched-resource","name":"watched-resource","title":"Watched Resource","description":"A resource for testing resource subscriptions","mimeType":"text/plain"},` +
			catalogWantEchoApp + `]`
		templates = `"resourceTemplates":[{"uriTemplate":"test://template/{id}/data","name":"template","title":"Resource Template","description":"A resource template with parameter substitution","mimeType":"application/json"}]`
	)
	reads := []struct{ uri, contents string }{
		{"test://static-text", `{"uri":"test://static-text","mimeType":"text/plain","text":"This is the content of the static text resource."}`},
		{"test://static-binary", `{"uri":"test://static-binary","mimeType":"image/png","blob":"` + catalogWantPNG + `"}`},
		{"test://watched-resource", `{"uri":"test://watched-resource","mimeType":"text/plain","text":"Watched resource content"}`},
		{"test://template/123/data", `{"uri":"test://template/123/data","mimeType":"application/json","text":"{\"id\":\"123\",\"templateTest\":true,\"data\":\"Data for ID: 123\"}"}`},
		{"test://template/a%22b%20c/data", `{"uri":"test://template/a%22b%20c/data","mimeType":"application/json","text":"{\"id\":\"a\\\"b c\",\"templateTest\":true,\"data\":\"Data for ID: a\\\"b c\"}"}`},
	}
	for _, version := range catalogVersions() {
		t.Run(version, func(t *testing.T) {
			wantResult(t, catalogDispatch(rt, version, "resources/list", ""), catalogWant(version, resources, true))
			wantResult(t, catalogDispatch(rt, version, "resources/templates/list", ""), catalogWant(version, templates, true))
			for _, r := range reads {
				reply := catalogDispatch(rt, version, "resources/read", fmt.Sprintf(`"uri":%q`, r.uri))
				wantResult(t, reply, catalogWant(version, `"contents":[`+r.contents+`]`, true))
			}
			const missing = "test://nonexistent-resource-for-conformance-testing"
			code := CodeResourceNotFound
			if isStatelessVersion(version) {
				code = CodeInvalidParams
			}
			wantError(t, catalogDispatch(rt, version, "resources/read", `"uri":"`+missing+`"`), code, "Resource not found", `{"uri":"`+missing+`"}`)
		})
	}
}

func TestReferencePrompts(t *testing.T) {
	rt := newCatalogRuntime(t)
	const list = `"prompts":[` +
		`{"name":"test_input_required_result_prompt","description":"MRTR: prompt that requires elicitation input"},` +
		`{"name":"test_prompt_with_arguments","description":"A prompt with required arguments","arguments":[{"name":"arg1","description":"First test argument","required":true},{"name":"arg2","description":"Second test argument","required":true}]},` +
		`{"name":"test_prompt_with_embedded_resource","description":"A prompt that includes an embedded resource","arguments":[{"name":"resourceUri","description":"URI of the resource to embed","required":true}]},` +
		`{"name":"test_prompt_with_image","description":"A prompt that includes image content"},` +
		`{"name":"test_simple_prompt","title":"Simple Test Prompt","description":"A simple prompt without arguments"}]`
	user := func(content string) string { return `{"role":"user","content":` + content + `}` }
	gets := []struct{ name, params, messages string }{
		{"simple", `"name":"test_simple_prompt"`, user(catalogText("This is a simple prompt for testing."))},
		{"with arguments", `"name":"test_prompt_with_arguments","arguments":{"arg1":"testValue1","arg2":"testValue2"}`,
			user(catalogText("Prompt with arguments: arg1='testValue1', arg2='testValue2'"))},
		{"embedded resource", `"name":"test_prompt_with_embedded_resource","arguments":{"resourceUri":"test://example-resource"}`,
			user(`{"type":"resource","resource":{"uri":"test://example-resource","mimeType":"text/plain","text":"Embedded resource content for testing."}}`) + "," +
				user(catalogText("Please process the embedded resource above."))},
		{"image", `"name":"test_prompt_with_image"`,
			user(`{"type":"image","data":"`+catalogWantPNG+`","mimeType":"image/png"}`) + "," + user(catalogText("Please analyze the image above."))},
	}
	for _, version := range catalogVersions() {
		t.Run(version, func(t *testing.T) {
			wantResult(t, catalogDispatch(rt, version, "prompts/list", ""), catalogWant(version, list, true))
			for _, g := range gets {
				reply := catalogDispatch(rt, version, "prompts/get", g.params)
				wantResult(t, reply, catalogWant(version, `"messages":[`+g.messages+`]`, false))
			}
			wantError(t, catalogDispatch(rt, version, "prompts/get", `"name":"test_prompt_with_arguments","arguments":{"arg2":"x"}`),
				CodeInvalidParams, "Missing required arguments for prompt test_prompt_with_arguments: arg1", `{"missing":["arg1"]}`)
		})
	}
}

func TestReferenceCompletion(t *testing.T) {
	rt := newCatalogRuntime(t)
	ref := func(argument, value string) string {
		return `"ref":{"type":"ref/prompt","name":"test_prompt_with_arguments"},"argument":{"name":"` + argument + `","value":"` + value + `"}`
	}
	tests := []struct{ name, params, completion string }{
		{"the suite's request", ref("arg1", "test"), `{"values":[]}`},
		{"common prefix", ref("arg1", "par"), `{"values":["paris","park","party"],"total":3}`},
		{"ignoring case", ref("arg2", "PARK"), `{"values":["park"],"total":1}`},
		{"empty value lists all", ref("arg2", ""), `{"values":["paris","park","party"],"total":3}`},
	}
	for _, tt := range tests {
		for _, version := range catalogVersions() {
			t.Run(tt.name+"/"+version, func(t *testing.T) {
				reply := catalogDispatch(rt, version, "completion/complete", tt.params)
				wantResult(t, reply, catalogWant(version, `"completion":`+tt.completion, false))
			})
		}
	}
}

func TestReferenceCapabilities(t *testing.T) {
	rt := newCatalogRuntime(t)
	req := &Request{Method: "initialize", ID: json.RawMessage(`1`), Params: json.RawMessage(
		`{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}`)}
	var res struct{ Capabilities json.RawMessage }
	reply := rt.Dispatch(context.Background(), req)
	if reply.Error != nil || json.Unmarshal(reply.Result, &res) != nil {
		t.Fatalf("initialize: %s %+v", reply.Result, reply.Error)
	}
	if want := `{"completions":{},"prompts":{},"resources":{},"tools":{},"extensions":{"io.modelcontextprotocol/tasks":{},"io.modelcontextprotocol/ui":{"mimeTypes":["text/html;profile=mcp-app"]}}}`; string(res.Capabilities) != want {
		t.Errorf("capabilities %s, want %s", res.Capabilities, want)
	}
}

func TestReferenceCatalogRegistersOnce(t *testing.T) {
	rt := newCatalogRuntime(t)
	err := registerReferenceCatalog(rt)
	const want = `reference catalog: adding app "ui://echo/view.html": a resource with that URI is already registered`
	if err == nil || err.Error() != want {
		t.Fatalf("second registration error = %v, want %q", err, want)
	}
}

// TestReferenceMediaIsWellFormed decodes the binary fixtures as a client
// would: the PNG with image/png, the WAV by its RIFF chunk sizes.
func TestReferenceMediaIsWellFormed(t *testing.T) {
	media, err := decodeReferenceMedia()
	if err != nil {
		t.Fatal(err)
	}
	if got := base64.StdEncoding.EncodeToString(media.png); got != catalogWantPNG {
		t.Errorf("PNG is %s, want %s", got, catalogWantPNG)
	}
	img, err := png.Decode(bytes.NewReader(media.png))
	if err != nil {
		t.Fatalf("decoding the PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() != 1 || b.Dy() != 1 {
		t.Errorf("PNG is %dx%d, want 1x1", b.Dx(), b.Dy())
	}
	if r, g, b, a := img.At(0, 0).RGBA(); r != 0xffff || g != 0 || b != 0 || a != 0xffff {
		t.Errorf("PNG pixel is %x %x %x %x, want opaque red", r, g, b, a)
	}

	if got := base64.StdEncoding.EncodeToString(media.wav); got != catalogWantWAV {
		t.Errorf("WAV is %s, want %s", got, catalogWantWAV)
	}
	checkWAV(t, media.wav)
}

// checkWAV checks a canonical PCM WAV file: RIFF size, fmt chunk fields that
// agree with each other, and a data chunk holding exactly the bytes it
// declares.
func checkWAV(t *testing.T, wav []byte) {
	t.Helper()
	le := binary.LittleEndian
	if len(wav) < 44 || string(wav[0:4]) != "RIFF" || string(wav[8:12]) != "WAVE" || string(wav[12:16]) != "fmt " || string(wav[36:40]) != "data" {
		t.Fatalf("WAV header malformed: % x", wav)
	}
	if got := le.Uint32(wav[4:8]); int(got) != len(wav)-8 {
		t.Errorf("RIFF size %d, want %d", got, len(wav)-8)
	}
	channels, rate, byteRate := le.Uint16(wav[22:24]), le.Uint32(wav[24:28]), le.Uint32(wav[28:32])
	blockAlign, bits := le.Uint16(wav[32:34]), le.Uint16(wav[34:36])
	if le.Uint16(wav[20:22]) != 1 || blockAlign != channels*bits/8 || byteRate != rate*uint32(blockAlign) {
		t.Errorf("fmt chunk inconsistent: channels %d rate %d byteRate %d blockAlign %d bits %d", channels, rate, byteRate, blockAlign, bits)
	}
	if got := le.Uint32(wav[40:44]); int(got) != len(wav)-44 || got == 0 {
		t.Errorf("data chunk declares %d bytes, holds %d", got, len(wav)-44)
	}
}
