package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// Test fixtures shared by the runtime and dialect tests.
const (
	// meta2026 is a minimal valid 2026-07-28 _meta member.
	meta2026 = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	// serverMeta is the _meta every 2026 result of testOptions carries.
	serverMeta = `"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"srv","version":"1.0"}}`
	// cache2026 are the default caching hints of 2026 cacheable results.
	cache2026 = `"ttlMs":0,"cacheScope":"private"`
	// complete2026 ends every 2026 non-cacheable result.
	complete2026 = `"resultType":"complete",` + serverMeta
	// listed2026 ends every 2026 cacheable result.
	listed2026     = `"resultType":"complete",` + cache2026 + `,` + serverMeta
	testClientInfo = `{"name":"cli","version":"0.1"}`
	testClientCaps = `{"sampling":{}}`
)

// testOptions are the options of a test's runtime: the reference catalog's
// task fixtures need the tasks extension.
func testOptions() RuntimeOptions {
	return RuntimeOptions{ServerInfo: Implementation{Name: "srv", Version: "1.0"}, Tasks: TaskOptions{}}
}

func newTestRuntime(t *testing.T, opts RuntimeOptions) *Runtime {
	t.Helper()
	rt, err := NewRuntime(opts)
	if err != nil {
		t.Fatalf("NewRuntime: %v", err)
	}
	return rt
}

// newRequest builds a request with id 1; params "" means none.
func newRequest(method, params string) *Request {
	r := &Request{Method: method, ID: json.RawMessage(`1`)}
	if params != "" {
		r.Params = json.RawMessage(params)
	}
	return r
}

// legacyRequest is a request on a connection that negotiated version, as the
// coordinator hands it over: with the synthesized header and the Session.
func legacyRequest(version, method, params string) *Request {
	r := newRequest(method, params)
	r.Header = map[string]string{headerProtocolVersion: version}
	r.Session = Session{
		ProtocolVersion:    version,
		ClientInfo:         json.RawMessage(testClientInfo),
		ClientCapabilities: json.RawMessage(testClientCaps),
	}
	return r
}

// statelessRequest adds meta2026 to params ("" or an object).
func statelessRequest(method, params string) *Request {
	return newRequest(method, with2026(params))
}

func with2026(params string) string {
	if params == "" || params == "{}" {
		return "{" + meta2026 + "}"
	}
	return "{" + meta2026 + "," + params[1:]
}

func dispatch(rt *Runtime, r *Request) Reply { return rt.Dispatch(context.Background(), r) }

// wantResult checks that reply is the exact result want.
func wantResult(t *testing.T, reply Reply, want string) {
	t.Helper()
	if reply.Error != nil {
		t.Fatalf("got error %d %q (data %v), want result %s", reply.Error.Code, reply.Error.Message, reply.Error.Data, want)
	}
	if string(reply.Result) != want {
		t.Fatalf("result mismatch\n got: %s\nwant: %s", reply.Result, want)
	}
}

// wantError checks the error's code and message, and its data encoded as
// JSON ("" for no data).
func wantError(t *testing.T, reply Reply, code int, message, data string) {
	t.Helper()
	if reply.Error == nil {
		t.Fatalf("got result %s, want error %d %q", reply.Result, code, message)
	}
	if reply.Error.Code != code || reply.Error.Message != message {
		t.Fatalf("got error %d %q, want %d %q", reply.Error.Code, reply.Error.Message, code, message)
	}
	gotData := ""
	if reply.Error.Data != nil {
		b, err := marshalJSON(reply.Error.Data)
		if err != nil {
			t.Fatalf("encoding error data: %v", err)
		}
		gotData = string(b)
	}
	if gotData != data {
		t.Fatalf("error data\n got: %s\nwant: %s", gotData, data)
	}
}

// decodeResult decodes a successful reply's result into v.
func decodeResult(t *testing.T, reply Reply, v any) {
	t.Helper()
	if reply.Error != nil {
		t.Fatalf("got error %d %q", reply.Error.Code, reply.Error.Message)
	}
	if err := json.Unmarshal(reply.Result, v); err != nil {
		t.Fatalf("decoding result %s: %v", reply.Result, err)
	}
}

func echoTool(text string) ToolHandler {
	return func(context.Context, *HandlerRequest) (*ToolResult, error) { return TextResult(text), nil }
}

func mustAddTool(t *testing.T, rt *Runtime, tool Tool, h ToolHandler) {
	t.Helper()
	if err := rt.AddTool(tool, h); err != nil {
		t.Fatal(err)
	}
}

func TestNewRuntimeOptions(t *testing.T) {
	base := testOptions
	tests := []struct {
		name    string
		modify  func(*RuntimeOptions)
		wantErr string
	}{
		{"defaults", func(*RuntimeOptions) {}, ""},
		{"no name", func(o *RuntimeOptions) { o.ServerInfo.Name = "" }, "mcpstdio: RuntimeOptions.ServerInfo.Name is required"},
		{"no version", func(o *RuntimeOptions) { o.ServerInfo.Version = "" }, "mcpstdio: RuntimeOptions.ServerInfo.Version is required"},
		{"empty version list", func(o *RuntimeOptions) { o.ProtocolVersions = []string{} }, "mcpstdio: RuntimeOptions.ProtocolVersions: no protocol versions enabled"},
		{"unknown version", func(o *RuntimeOptions) { o.ProtocolVersions = []string{"2024-10-07"} }, `mcpstdio: RuntimeOptions.ProtocolVersions: unknown protocol version "2024-10-07" (known: 2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05)`},
		{"repeated version", func(o *RuntimeOptions) {
			o.ProtocolVersions = []string{ProtocolVersion20250618, ProtocolVersion20250618}
		}, `mcpstdio: RuntimeOptions.ProtocolVersions: protocol version "2025-06-18" listed twice`},
		{"negative page size", func(o *RuntimeOptions) { o.PageSize = -1 }, "mcpstdio: RuntimeOptions.PageSize must be >= 0, got -1"},
		{"negative ttl", func(o *RuntimeOptions) { o.CacheTTLMs = -5 }, "mcpstdio: RuntimeOptions.CacheTTLMs must be >= 0, got -5"},
		{"bad scope", func(o *RuntimeOptions) { o.CacheScope = "shared" }, `mcpstdio: RuntimeOptions.CacheScope "shared" is neither "private" nor "public"`},
		{"public scope", func(o *RuntimeOptions) { o.CacheScope = CacheScopePublic }, ""},
		{"32-byte state key", func(o *RuntimeOptions) { o.StateKey = make([]byte, 32) }, ""},
		{"31-byte state key", func(o *RuntimeOptions) { o.StateKey = make([]byte, 31) }, "mcpstdio: RuntimeOptions.StateKey is 31 bytes, want at least 32"},
		{"empty state key", func(o *RuntimeOptions) { o.StateKey = []byte{} }, "mcpstdio: RuntimeOptions.StateKey is 0 bytes, want at least 32"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := base()
			tt.modify(&opts)
			rt, err := NewRuntime(opts)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("NewRuntime: %v", err)
				}
				return
			}
			if err == nil || err.Error() != tt.wantErr {
				t.Fatalf("NewRuntime error = %v, want %q", err, tt.wantErr)
			}
			if rt != nil {
				t.Fatal("NewRuntime returned a runtime with an error")
			}
		})
	}
}

func TestNewRuntimeDefaults(t *testing.T) {
	rt := newTestRuntime(t, testOptions())
	if got := strings.Join(rt.ProtocolVersions(), ","); got != "2026-07-28,2025-11-25,2025-06-18,2025-03-26,2024-11-05" {
		t.Errorf("ProtocolVersions = %s", got)
	}
	if rt.pageSize != 100 || rt.ttlMs != 0 || rt.cacheScope != CacheScopePrivate {
		t.Errorf("defaults: page size %d, ttl %d, scope %q", rt.pageSize, rt.ttlMs, rt.cacheScope)
	}
	// The runtime keeps its own copy of the version list.
	opts := testOptions()
	opts.ProtocolVersions = []string{ProtocolVersion20250618}
	rt = newTestRuntime(t, opts)
	opts.ProtocolVersions[0] = ProtocolVersion20260728
	if got := rt.ProtocolVersions(); got[0] != ProtocolVersion20250618 {
		t.Errorf("ProtocolVersions changed with the caller's slice: %v", got)
	}
}

func TestUnknownMethod(t *testing.T) {
	rt := newTestRuntime(t, testOptions())
	wantError(t, dispatch(rt, statelessRequest("tools/frobnicate", "")), CodeMethodNotFound, "Method not found: tools/frobnicate", "")
	wantError(t, dispatch(rt, legacyRequest(ProtocolVersion20251125, "tools/frobnicate", "")), CodeMethodNotFound, "Method not found: tools/frobnicate", "")
}

func TestNotificationsGetNoReply(t *testing.T) {
	rt := newTestRuntime(t, testOptions())
	calls := 0
	mustAddTool(t, rt, Tool{Name: "t"}, func(context.Context, *HandlerRequest) (*ToolResult, error) {
		calls++
		return nil, nil
	})
	for _, r := range []*Request{
		{Method: "notifications/initialized"},
		{Method: "notifications/initialized", Header: map[string]string{headerProtocolVersion: ProtocolVersion20251125}},
		{Method: "tools/call", Params: json.RawMessage(with2026(`{"name":"t"}`))},
		{Method: "notifications/whatever", Params: json.RawMessage(`{"_meta":5}`)},
	} {
		reply := dispatch(rt, r)
		if reply.Result != nil || reply.Error != nil || reply.Initialized != nil {
			t.Errorf("%s: notification got reply %+v", r.Method, reply)
		}
	}
	if calls != 0 {
		t.Errorf("a notification ran a tool %d times", calls)
	}
}

// TestPagination pages 5 items 2 at a time in every list, following the
// cursors, then checks forged, foreign and stale cursors.
func TestPagination(t *testing.T) {
	opts := testOptions()
	opts.PageSize = 2
	rt := newTestRuntime(t, opts)
	names := []string{"e", "c", "a", "d", "b"} // registered out of order
	for _, n := range names {
		mustAddTool(t, rt, Tool{Name: n}, echoTool(n))
		if err := rt.AddPrompt(Prompt{Name: n}, func(context.Context, *HandlerRequest) (*PromptResult, error) { return nil, nil }); err != nil {
			t.Fatal(err)
		}
		if err := rt.AddResource(Resource{URI: "test://" + n, Name: n}, staticText("x")); err != nil {
			t.Fatal(err)
		}
		if err := rt.AddResourceTemplate(ResourceTemplate{URITemplate: "test://" + n + "/{id}", Name: n}, staticText("x")); err != nil {
			t.Fatal(err)
		}
	}
	lists := []struct {
		method, field, key string
		want               []string
	}{
		{"tools/list", "tools", "name", []string{"a", "b", "c", "d", "e"}},
		{"prompts/list", "prompts", "name", []string{"a", "b", "c", "d", "e"}},
		{"resources/list", "resources", "uri", []string{"test://a", "test://b", "test://c", "test://d", "test://e"}},
		{"resources/templates/list", "resourceTemplates", "uriTemplate", []string{"test://a/{id}", "test://b/{id}", "test://c/{id}", "test://d/{id}", "test://e/{id}"}},
	}
	for _, l := range lists {
		t.Run(l.method, func(t *testing.T) {
			for _, dialect := range []string{"legacy", "stateless"} {
				got, cursors := walkPages(t, rt, dialect, l.method, l.field, l.key)
				if strings.Join(got, " ") != strings.Join(l.want, " ") {
					t.Errorf("%s pages = %v, want %v", dialect, got, l.want)
				}
				if len(cursors) != 2 {
					t.Errorf("%s: %d cursors for 5 items at 2 a page, want 2", dialect, len(cursors))
				}
			}
		})
	}

	_, toolCursors := walkPages(t, rt, "stateless", "tools/list", "tools", "name")
	_, promptCursors := walkPages(t, rt, "stateless", "prompts/list", "prompts", "name")
	forged := []byte(toolCursors[0])
	forged[3] ^= 1
	other := newTestRuntime(t, opts)
	mustAddTool(t, other, Tool{Name: "a"}, echoTool("a"))
	mustAddTool(t, other, Tool{Name: "b"}, echoTool("b"))
	mustAddTool(t, other, Tool{Name: "c"}, echoTool("c"))
	_, otherCursors := walkPages(t, other, "stateless", "tools/list", "tools", "name")

	bad := []struct{ name, cursor string }{
		{"forged", string(forged)},
		{"not base64", "!!!"},
		{"truncated", toolCursors[0][:20]},
		{"other list", promptCursors[0]},
		{"other runtime", otherCursors[0]},
	}
	for _, b := range bad {
		t.Run(b.name, func(t *testing.T) {
			reply := dispatch(rt, statelessRequest("tools/list", fmt.Sprintf(`{"cursor":%q}`, b.cursor)))
			wantError(t, reply, CodeInvalidParams, "Invalid cursor", "")
		})
	}

	// A change to the tools makes tool cursors stale, not prompt cursors.
	mustAddTool(t, rt, Tool{Name: "f"}, echoTool("f"))
	wantError(t, dispatch(rt, statelessRequest("tools/list", fmt.Sprintf(`{"cursor":%q}`, toolCursors[0]))), CodeInvalidParams, "Invalid cursor", "")
	if reply := dispatch(rt, statelessRequest("prompts/list", fmt.Sprintf(`{"cursor":%q}`, promptCursors[0]))); reply.Error != nil {
		t.Errorf("prompt cursor after a tool change: %+v", reply.Error)
	}
	rt.RemoveTool("f")
	wantError(t, dispatch(rt, statelessRequest("tools/list", fmt.Sprintf(`{"cursor":%q}`, toolCursors[0]))), CodeInvalidParams, "Invalid cursor", "")

	wantError(t, dispatch(rt, statelessRequest("tools/list", `{"cursor":7}`)), CodeInvalidParams, "Invalid params: cursor must be a string", "")
}

// walkPages lists method from the first page to the last, returning the keys
// listed and the cursors followed. Every page but the last must carry
// nextCursor; the last must not.
func walkPages(t *testing.T, rt *Runtime, dialect, method, field, key string) (keys, cursors []string) {
	t.Helper()
	cursor := ""
	for page := 0; ; page++ {
		params := "{}"
		if cursor != "" {
			params = fmt.Sprintf(`{"cursor":%q}`, cursor)
		}
		r := legacyRequest(ProtocolVersion20251125, method, params)
		if dialect == "stateless" {
			r = statelessRequest(method, params)
		}
		var res map[string]json.RawMessage
		decodeResult(t, dispatch(rt, r), &res)
		var items []map[string]any
		if err := json.Unmarshal(res[field], &items); err != nil {
			t.Fatalf("page %d: %s: %v", page, res[field], err)
		}
		for _, it := range items {
			keys = append(keys, it[key].(string))
		}
		next, ok := res["nextCursor"]
		if !ok {
			return keys, cursors
		}
		if err := json.Unmarshal(next, &cursor); err != nil || cursor == "" {
			t.Fatalf("page %d: bad nextCursor %s", page, next)
		}
		cursors = append(cursors, cursor)
		if page > 10 {
			t.Fatal("pagination does not end")
		}
	}
}

// TestConcurrentCallsAndRegistration runs tools/call and tools/list in
// parallel with AddTool and RemoveTool; run with -race.
func TestConcurrentCallsAndRegistration(t *testing.T) {
	opts := testOptions()
	opts.PageSize = 3
	rt := newTestRuntime(t, opts)
	mustAddTool(t, rt, Tool{Name: "stable"}, echoTool("ok"))

	const workers, rounds = 8, 50
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := range workers {
		wg.Go(func() {
			<-start
			for i := range rounds {
				reply := dispatch(rt, statelessRequest("tools/call", `{"name":"stable"}`))
				if want := `{"content":[{"type":"text","text":"ok"}],` + complete2026 + `}`; string(reply.Result) != want {
					t.Errorf("worker %d round %d: tools/call = %s %+v", w, i, reply.Result, reply.Error)
				}
				if reply := dispatch(rt, legacyRequest(ProtocolVersion20250618, "tools/list", "")); reply.Error != nil {
					t.Errorf("worker %d round %d: tools/list: %+v", w, i, reply.Error)
				}
			}
		})
	}
	wg.Go(func() {
		<-start
		for i := range rounds {
			name := fmt.Sprintf("dyn%d", i)
			if err := rt.AddTool(Tool{Name: name}, echoTool(name)); err != nil {
				t.Error(err)
			}
			if i%2 == 0 && !rt.RemoveTool(name) {
				t.Errorf("RemoveTool(%s) = false", name)
			}
		}
	})
	close(start)
	wg.Wait()

	_, cursors := walkPages(t, rt, "legacy", "tools/list", "tools", "name")
	if want := (1 + rounds/2 + 2) / 3; len(cursors) != want-1 {
		t.Errorf("%d cursors, want %d", len(cursors), want-1)
	}
}

func TestHandlerPanicIsInternalError(t *testing.T) {
	var logs bytes.Buffer
	opts := testOptions()
	opts.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	rt := newTestRuntime(t, opts)
	mustAddTool(t, rt, Tool{Name: "boom"}, func(context.Context, *HandlerRequest) (*ToolResult, error) { panic("secret cause") })
	if err := rt.AddPrompt(Prompt{Name: "boom"}, func(context.Context, *HandlerRequest) (*PromptResult, error) { panic("secret cause") }); err != nil {
		t.Fatal(err)
	}
	if err := rt.AddResource(Resource{URI: "test://boom", Name: "boom"}, func(context.Context, *HandlerRequest) (*ResourceResult, error) { panic("secret cause") }); err != nil {
		t.Fatal(err)
	}
	for _, r := range []*Request{
		statelessRequest("tools/call", `{"name":"boom"}`),
		legacyRequest(ProtocolVersion20251125, "prompts/get", `{"name":"boom"}`),
		statelessRequest("resources/read", `{"uri":"test://boom"}`),
	} {
		logs.Reset()
		wantError(t, dispatch(rt, r), CodeInternalError, "Internal error", "")
		if !strings.Contains(logs.String(), "secret cause") || !strings.Contains(logs.String(), "handler panicked") {
			t.Errorf("%s: panic not logged: %s", r.Method, logs.String())
		}
	}
}

func TestHandlerRequestFields(t *testing.T) {
	rt := newTestRuntime(t, testOptions())
	got := make(chan *HandlerRequest, 1)
	mustAddTool(t, rt, Tool{Name: "probe"}, func(_ context.Context, req *HandlerRequest) (*ToolResult, error) {
		got <- req
		return nil, nil
	})
	tests := []struct {
		name                  string
		req                   *Request
		version, info, caps   string
		meta, args            string
		hasSampling           bool
		requireSamplingErrMsg string
	}{
		{
			name: "legacy", req: legacyRequest(ProtocolVersion20250618, "tools/call", `{"name":"probe","arguments":{"a":1},"_meta":{"progressToken":7}}`),
			version: ProtocolVersion20250618, info: testClientInfo, caps: testClientCaps,
			meta: `{"progressToken":7}`, args: `{"a":1}`, hasSampling: true,
		},
		{
			name: "stateless", req: newRequest("tools/call", `{"name":"probe","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}},"io.modelcontextprotocol/clientInfo":{"name":"x","version":"2"}}}`),
			version: ProtocolVersion20260728, info: `{"name":"x","version":"2"}`, caps: `{"elicitation":{}}`,
			meta:                  `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}},"io.modelcontextprotocol/clientInfo":{"name":"x","version":"2"}}`,
			args:                  `{}`,
			requireSamplingErrMsg: "Missing required client capability: sampling",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if reply := dispatch(rt, tt.req); reply.Error != nil {
				t.Fatalf("tools/call: %+v", reply.Error)
			}
			req := <-got
			if req.Method != "tools/call" || req.Name != "probe" || req.ProtocolVersion != tt.version {
				t.Errorf("method %q name %q version %q", req.Method, req.Name, req.ProtocolVersion)
			}
			if string(req.ClientInfo) != tt.info || string(req.ClientCapabilities) != tt.caps {
				t.Errorf("client info %s caps %s", req.ClientInfo, req.ClientCapabilities)
			}
			if string(req.Meta) != tt.meta || string(req.Arguments) != tt.args {
				t.Errorf("meta %s arguments %s", req.Meta, req.Arguments)
			}
			if req.HasClientCapability("sampling") != tt.hasSampling {
				t.Errorf("HasClientCapability(sampling) = %v", !tt.hasSampling)
			}
			err := req.RequireClientCapability("sampling")
			if tt.requireSamplingErrMsg == "" {
				if err != nil {
					t.Errorf("RequireClientCapability: %v", err)
				}
				return
			}
			rerr, ok := err.(*RPCError)
			if !ok || rerr.Code != CodeMissingCapability || rerr.Message != tt.requireSamplingErrMsg {
				t.Fatalf("RequireClientCapability = %v", err)
			}
			if data, _ := marshalJSON(rerr.Data); string(data) != `{"requiredCapabilities":{"sampling":{}}}` {
				t.Errorf("data = %s", data)
			}
		})
	}
}

func TestParamsNotAnObject(t *testing.T) {
	rt := newTestRuntime(t, testOptions())
	wantError(t, dispatch(rt, newRequest("ping", `[1]`)), CodeInvalidParams, "Invalid params: params must be an object", "")
}

func ExampleRuntime() {
	rt, err := NewRuntime(RuntimeOptions{ServerInfo: Implementation{Name: "demo", Version: "1.0"}})
	if err != nil {
		panic(err)
	}
	err = rt.AddTool(Tool{
		Name:        "echo",
		Description: "Echoes its text",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`),
	}, func(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
		var args struct {
			Text string `json:"text"`
		}
		if err := req.Bind(&args); err != nil {
			return nil, err // becomes an isError result
		}
		return TextResult(args.Text), nil
	})
	if err != nil {
		panic(err)
	}
	// region dispatch
	reply := rt.Dispatch(context.Background(), &Request{
		Method: "tools/call",
		ID:     json.RawMessage(`1`),
		Params: json.RawMessage(`{"name":"echo","arguments":{"text":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}`),
	})
	fmt.Println(string(reply.Result))
	// endregion dispatch

	// Output: {"content":[{"type":"text","text":"hi"}],"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"demo","version":"1.0"}}}
}
