package main

import (
	"encoding/json"
	"strings"
	"testing"
)

const (
	allVersionsData = `"supported":["2026-07-28","2025-11-25","2025-06-18","2025-03-26","2024-11-05"]`
	badCapsMsg      = `Invalid _meta: "io.modelcontextprotocol/clientCapabilities" must be an object`
	badInfoMsg      = `Invalid _meta: "io.modelcontextprotocol/clientInfo" must be an object with string name and version`
	badTokenMsg     = `Invalid _meta: progressToken must be a string of at most 256 bytes or a 64-bit integer`
	badLevelMsg     = `Invalid _meta: "io.modelcontextprotocol/logLevel" must be one of debug, info, notice, warning, error, critical, alert, emergency`
	noMetaMsg       = `Missing _meta: requests without initialize must carry params._meta["io.modelcontextprotocol/protocolVersion"]`
	noVersionMsg    = `Missing _meta["io.modelcontextprotocol/protocolVersion"]: requests without initialize must carry it`
)

// meta builds a params object whose _meta is the 2026 version and
// capabilities plus extra members (a JSON fragment, may be "").
func meta(extra string) string {
	m := `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}`
	if extra != "" {
		m += "," + extra
	}
	return `{"_meta":{` + m + `}}`
}

// TestMetaValidationErrors covers every -32602 and -32022 of
// docs/explanation/contract.md, "Dialects" for requests without a negotiated
// header.
func TestMetaValidationErrors(t *testing.T) {
	rt := newTestRuntime(t, testOptions())
	mustAddTool(t, rt, Tool{Name: "t"}, echoTool("x"))
	long := strings.Repeat("x", 257)
	tests := []struct {
		name, method, params string
		code                 int
		message, data        string
	}{
		{"_meta not an object", "tools/list", `{"_meta":5}`, CodeInvalidParams, "Invalid _meta: must be an object", ""},
		{"_meta null", "tools/list", `{"_meta":null}`, CodeInvalidParams, "Invalid _meta: must be an object", ""},
		{"version not a string", "tools/list", `{"_meta":{"io.modelcontextprotocol/protocolVersion":20260728,"io.modelcontextprotocol/clientCapabilities":{}}}`, CodeInvalidParams, `Invalid _meta: "io.modelcontextprotocol/protocolVersion" must be a string`, ""},
		{"version null", "tools/list", `{"_meta":{"io.modelcontextprotocol/protocolVersion":null}}`, CodeInvalidParams, `Invalid _meta: "io.modelcontextprotocol/protocolVersion" must be a string`, ""},
		{"unknown version", "tools/list", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"v999.0.0","io.modelcontextprotocol/clientCapabilities":{}}}`, CodeUnsupportedVersion, "Unsupported protocol version", `{` + allVersionsData + `,"requested":"v999.0.0"}`},
		{"unknown version checked before capabilities", "server/discover", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01"}}`, CodeUnsupportedVersion, "Unsupported protocol version", `{` + allVersionsData + `,"requested":"2099-01-01"}`},
		{"legacy version in _meta", "tools/list", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25","io.modelcontextprotocol/clientCapabilities":{}}}`, CodeUnsupportedVersion, "Unsupported protocol version", `{` + allVersionsData + `,"requested":"2025-11-25"}`},
		{"capabilities missing", "server/discover", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`, CodeInvalidParams, `Missing _meta["io.modelcontextprotocol/clientCapabilities"]: a 2026-07-28 request must declare its client capabilities`, ""},
		{"capabilities an array", "tools/list", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":[]}}`, CodeInvalidParams, badCapsMsg, ""},
		{"capabilities null", "tools/list", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":null}}`, CodeInvalidParams, badCapsMsg, ""},
		{"clientInfo without version", "tools/list", meta(`"io.modelcontextprotocol/clientInfo":{"name":"c"}`), CodeInvalidParams, badInfoMsg, ""},
		{"clientInfo name not a string", "tools/list", meta(`"io.modelcontextprotocol/clientInfo":{"name":1,"version":"1"}`), CodeInvalidParams, badInfoMsg, ""},
		{"clientInfo a string", "tools/list", meta(`"io.modelcontextprotocol/clientInfo":"c 1.0"`), CodeInvalidParams, badInfoMsg, ""},
		{"progressToken a float", "tools/list", meta(`"progressToken":1.5`), CodeInvalidParams, badTokenMsg, ""},
		{"progressToken beyond int64", "tools/list", meta(`"progressToken":9223372036854775808`), CodeInvalidParams, badTokenMsg, ""},
		{"progressToken too long", "tools/list", meta(`"progressToken":"` + long + `"`), CodeInvalidParams, badTokenMsg, ""},
		{"progressToken a bool", "tools/list", meta(`"progressToken":true`), CodeInvalidParams, badTokenMsg, ""},
		{"progressToken null", "tools/list", meta(`"progressToken":null`), CodeInvalidParams, badTokenMsg, ""},
		{"logLevel unknown", "tools/list", meta(`"io.modelcontextprotocol/logLevel":"verbose"`), CodeInvalidParams, badLevelMsg, ""},
		{"logLevel not a string", "tools/list", meta(`"io.modelcontextprotocol/logLevel":3`), CodeInvalidParams, badLevelMsg, ""},
		{"no _meta", "tools/list", `{}`, CodeInvalidParams, noMetaMsg, ""},
		{"no params", "tools/list", ``, CodeInvalidParams, noMetaMsg, ""},
		{"discover without _meta", "server/discover", `{}`, CodeInvalidParams, noMetaMsg, ""},
		{"unknown method without _meta", "unknown/method", ``, CodeInvalidParams, noMetaMsg, ""},
		{"_meta without version", "server/discover", `{"_meta":{"io.modelcontextprotocol/clientCapabilities":{}}}`, CodeInvalidParams, noVersionMsg, ""},
		{"legacy progressToken invalid before initialize", "ping", `{"_meta":{"progressToken":[1]}}`, CodeInvalidParams, badTokenMsg, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantError(t, dispatch(rt, newRequest(tt.method, tt.params)), tt.code, tt.message, tt.data)
		})
	}
}

// TestResolveFields checks what dialect selection hands on for valid input.
func TestResolveFields(t *testing.T) {
	vs := versionSet(defaultProtocolVersions())
	long := strings.Repeat("y", 256)
	tests := []struct {
		name                string
		req                 *Request
		era                 era
		version, info, caps string
		token, level        string
	}{
		{"minimal 2026", newRequest("tools/list", meta("")), eraStateless, ProtocolVersion20260728, "", "{}", "", ""},
		{"full 2026", newRequest("tools/list", meta(`"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1","title":"C"},"progressToken":"tok","io.modelcontextprotocol/logLevel":"debug","com.example/x":1`)),
			eraStateless, ProtocolVersion20260728, `{"name":"c","version":"1","title":"C"}`, "{}", `"tok"`, "debug"},
		{"int64 min progress token", newRequest("tools/list", meta(`"progressToken":-9223372036854775808`)), eraStateless, ProtocolVersion20260728, "", "{}", "-9223372036854775808", ""},
		{"256-byte progress token", newRequest("tools/list", meta(`"progressToken":"`+long+`"`)), eraStateless, ProtocolVersion20260728, "", "{}", `"` + long + `"`, ""},
		{"2026 _meta wins over the header", func() *Request {
			r := legacyRequest(ProtocolVersion20251125, "tools/list", meta(""))
			return r
		}(), eraStateless, ProtocolVersion20260728, "", "{}", "", ""},
		{"legacy header", legacyRequest(ProtocolVersion20250618, "tools/list", `{"_meta":{"progressToken":5,"io.modelcontextprotocol/logLevel":"nonsense"}}`),
			eraLegacy, ProtocolVersion20250618, testClientInfo, testClientCaps, "5", ""},
		{"unnegotiated", newRequest("ping", ""), eraUnnegotiated, "", "", "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var params paramsObject
			if rerr := decodeParams(tt.req, &params); rerr != nil {
				t.Fatal(rerr)
			}
			var info dialectInfo
			if rerr := vs.resolve(tt.req, &params, &info); rerr != nil {
				t.Fatalf("resolve: %d %s", rerr.Code, rerr.Message)
			}
			if info.era != tt.era || info.version != tt.version {
				t.Errorf("era %d version %q, want %d %q", info.era, info.version, tt.era, tt.version)
			}
			if string(info.clientInfo) != tt.info || string(info.clientCapabilities) != tt.caps {
				t.Errorf("clientInfo %s caps %s, want %s %s", info.clientInfo, info.clientCapabilities, tt.info, tt.caps)
			}
			if string(info.progressToken) != tt.token || info.logLevel != tt.level {
				t.Errorf("progressToken %s logLevel %q, want %s %q", info.progressToken, info.logLevel, tt.token, tt.level)
			}
		})
	}
}

func TestHeaderSelection(t *testing.T) {
	rt := newTestRuntime(t, testOptions())
	mustAddTool(t, rt, Tool{Name: "t"}, echoTool("x"))
	legacyList := `{"tools":[{"name":"t","inputSchema":{"type":"object"}}]}`

	wantResult(t, dispatch(rt, legacyRequest(ProtocolVersion20251125, "tools/list", "")), legacyList)
	wantResult(t, dispatch(rt, legacyRequest(ProtocolVersion20250618, "tools/list", "{}")), legacyList)
	// The synthesized header never overrides a request's own 2026 _meta.
	wantResult(t, dispatch(rt, legacyRequest(ProtocolVersion20251125, "tools/list", meta(""))),
		`{"tools":[{"name":"t","inputSchema":{"type":"object"}}],`+listed2026+`}`)
	wantError(t, dispatch(rt, legacyRequest("2099-01-01", "tools/list", "")), CodeUnsupportedVersion, "Unsupported protocol version", `{`+allVersionsData+`,"requested":"2099-01-01"}`)
	// A 2026 header without _meta is a stateless request missing its _meta.
	wantError(t, dispatch(rt, legacyRequest(ProtocolVersion20260728, "tools/list", "")), CodeInvalidParams, noMetaMsg, "")
	wantError(t, dispatch(rt, legacyRequest(ProtocolVersion20260728, "tools/list", `{"_meta":{}}`)), CodeInvalidParams, noVersionMsg, "")
	// Legacy-only and unknown methods.
	wantError(t, dispatch(rt, legacyRequest(ProtocolVersion20251125, "server/discover", "")), CodeMethodNotFound, "Method not found: server/discover", "")
	wantResult(t, dispatch(rt, legacyRequest(ProtocolVersion20251125, "ping", "")), `{}`)
}

func TestPing(t *testing.T) {
	rt := newTestRuntime(t, testOptions())
	wantResult(t, dispatch(rt, newRequest("ping", "")), `{}`)
	wantResult(t, dispatch(rt, newRequest("ping", `{}`)), `{}`)
	wantResult(t, dispatch(rt, legacyRequest(ProtocolVersion20250618, "ping", "")), `{}`)
	wantError(t, dispatch(rt, statelessRequest("ping", "")), CodeMethodNotFound, "Method not found: ping", "")
}

// TestStatelessRemovedMethods: initialize-era methods sent with 2026 _meta
// are unknown methods.
func TestStatelessRemovedMethods(t *testing.T) {
	rt := newTestRuntime(t, testOptions())
	if err := rt.AddResource(Resource{URI: "test://r", Name: "r"}, staticText("x")); err != nil {
		t.Fatal(err)
	}
	for _, method := range []string{"initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe", "notifications/initialized", "unknown/method"} {
		wantError(t, dispatch(rt, statelessRequest(method, `{"uri":"test://r","level":"info"}`)), CodeMethodNotFound, "Method not found: "+method, "")
	}
}

func richServerOptions() RuntimeOptions {
	opts := testOptions()
	opts.ServerInfo = Implementation{
		Name: "srv", Title: "Server", Version: "1.0", Description: "does things",
		WebsiteURL: "https://example.com", Icons: []Icon{{Src: "https://example.com/i.png", MIMEType: "image/png", Sizes: []string{"48x48"}}},
	}
	opts.Instructions = "be nice"
	return opts
}

const (
	richInfo2025 = `{"name":"srv","title":"Server","version":"1.0"}`
	richInfoFull = `{"name":"srv","title":"Server","version":"1.0","description":"does things","websiteUrl":"https://example.com","icons":[{"src":"https://example.com/i.png","mimeType":"image/png","sizes":["48x48"]}]}`
)

func TestInitialize(t *testing.T) {
	rt := newTestRuntime(t, richServerOptions())
	mustAddTool(t, rt, Tool{Name: "t"}, echoTool("x"))
	initParams := func(version string) string {
		return `{"protocolVersion":"` + version + `","capabilities":{"roots":{}},"clientInfo":{"name":"c","version":"1"}}`
	}
	result := func(version, info string) string {
		return `{"protocolVersion":"` + version + `","capabilities":{"tools":{}},"serverInfo":` + info + `,"instructions":"be nice"}`
	}
	tests := []struct {
		name, params, want, version string
	}{
		{"2025-06-18 omits newer Implementation fields", initParams("2025-06-18"), result("2025-06-18", richInfo2025), "2025-06-18"},
		{"2025-11-25 sends them", initParams("2025-11-25"), result("2025-11-25", richInfoFull), "2025-11-25"},
		{"2026 proposal gets the first legacy version", initParams("2026-07-28"), result("2025-11-25", richInfoFull), "2025-11-25"},
		{"unknown proposal gets the first legacy version", initParams("1999-01-01"), result("2025-11-25", richInfoFull), "2025-11-25"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reply := dispatch(rt, newRequest("initialize", tt.params))
			wantResult(t, reply, tt.want)
			s := reply.Initialized
			if s == nil {
				t.Fatal("Initialized not set")
			}
			if s.ProtocolVersion != tt.version || string(s.ClientInfo) != `{"name":"c","version":"1"}` || string(s.ClientCapabilities) != `{"roots":{}}` {
				t.Errorf("Initialized = %+v (%s, %s)", s, s.ClientInfo, s.ClientCapabilities)
			}
		})
	}

	t.Run("repeated initialize renegotiates", func(t *testing.T) {
		reply := dispatch(rt, legacyRequest(ProtocolVersion20250618, "initialize", initParams("2025-11-25")))
		wantResult(t, reply, result("2025-11-25", richInfoFull))
		if reply.Initialized == nil || reply.Initialized.ProtocolVersion != "2025-11-25" {
			t.Errorf("Initialized = %+v", reply.Initialized)
		}
	})
	t.Run("initialize with 2026 _meta is unknown", func(t *testing.T) {
		wantError(t, dispatch(rt, newRequest("initialize", with2026(initParams("2025-11-25")))), CodeMethodNotFound, "Method not found: initialize", "")
	})

	const (
		noVersion = "Invalid params: initialize requires a string protocolVersion"
		noCaps    = "Invalid params: initialize requires a capabilities object"
		noInfo    = "Invalid params: initialize requires clientInfo with string name and version"
	)
	errs := []struct{ name, params, message string }{
		{"no params", "", noVersion},
		{"empty params", `{}`, noVersion},
		{"version a number", `{"protocolVersion":2025,"capabilities":{},"clientInfo":{"name":"c","version":"1"}}`, noVersion},
		{"version null", `{"protocolVersion":null,"capabilities":{},"clientInfo":{"name":"c","version":"1"}}`, noVersion},
		{"capabilities missing", `{"protocolVersion":"2025-11-25","clientInfo":{"name":"c","version":"1"}}`, noCaps},
		{"capabilities an array", `{"protocolVersion":"2025-11-25","capabilities":[],"clientInfo":{"name":"c","version":"1"}}`, noCaps},
		{"clientInfo missing", `{"protocolVersion":"2025-11-25","capabilities":{}}`, noInfo},
		{"clientInfo without version", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c"}}`, noInfo},
		{"clientInfo version a number", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":1}}`, noInfo},
		{"clientInfo name null", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":null,"version":"1"}}`, noInfo},
	}
	for _, tt := range errs {
		t.Run(tt.name, func(t *testing.T) {
			reply := dispatch(rt, newRequest("initialize", tt.params))
			wantError(t, reply, CodeInvalidParams, tt.message, "")
			if reply.Initialized != nil {
				t.Error("Initialized set on an error")
			}
		})
	}
}

// TestVersionListHonoured: a disabled version is never negotiated,
// discovered or served.
func TestVersionListHonoured(t *testing.T) {
	opts := testOptions()
	opts.ProtocolVersions = []string{ProtocolVersion20250618}
	rt := newTestRuntime(t, opts)
	mustAddTool(t, rt, Tool{Name: "t"}, echoTool("x"))
	only := `"supported":["2025-06-18"]`

	for _, proposed := range []string{"2025-11-25", "2026-07-28", "2025-06-18"} {
		reply := dispatch(rt, newRequest("initialize", `{"protocolVersion":"`+proposed+`","capabilities":{},"clientInfo":{"name":"c","version":"1"}}`))
		wantResult(t, reply, `{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"srv","version":"1.0"}}`)
	}
	wantError(t, dispatch(rt, statelessRequest("server/discover", "")), CodeUnsupportedVersion, "Unsupported protocol version", `{`+only+`,"requested":"2026-07-28"}`)
	wantError(t, dispatch(rt, statelessRequest("tools/list", "")), CodeUnsupportedVersion, "Unsupported protocol version", `{`+only+`,"requested":"2026-07-28"}`)
	wantError(t, dispatch(rt, legacyRequest(ProtocolVersion20251125, "tools/list", "")), CodeUnsupportedVersion, "Unsupported protocol version", `{`+only+`,"requested":"2025-11-25"}`)
	wantError(t, dispatch(rt, legacyRequest(ProtocolVersion20260728, "tools/list", "")), CodeUnsupportedVersion, "Unsupported protocol version", `{`+only+`,"requested":"2026-07-28"}`)
	wantResult(t, dispatch(rt, legacyRequest(ProtocolVersion20250618, "tools/list", "")), `{"tools":[{"name":"t","inputSchema":{"type":"object"}}]}`)

	t.Run("preference order", func(t *testing.T) {
		opts := testOptions()
		opts.ProtocolVersions = []string{ProtocolVersion20250618, ProtocolVersion20251125}
		rt := newTestRuntime(t, opts)
		var res struct{ ProtocolVersion string }
		decodeResult(t, dispatch(rt, newRequest("initialize", `{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"c","version":"1"}}`)), &res)
		if res.ProtocolVersion != ProtocolVersion20250618 {
			t.Errorf("negotiated %s, want the most preferred 2025-06-18", res.ProtocolVersion)
		}
	})

	t.Run("stateless only", func(t *testing.T) {
		opts := testOptions()
		opts.ProtocolVersions = []string{ProtocolVersion20260728}
		rt := newTestRuntime(t, opts)
		reply := dispatch(rt, newRequest("initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}`))
		wantError(t, reply, CodeInvalidParams,
			"Unsupported protocol version: this server does not support initialize; it serves 2026-07-28 with per-request params._meta",
			`{"supported":["2026-07-28"],"requested":"2025-11-25"}`)
		if reply.Initialized != nil {
			t.Error("Initialized set on an error")
		}
		wantResult(t, dispatch(rt, statelessRequest("server/discover", "")), `{"supportedVersions":["2026-07-28"],"capabilities":{},`+listed2026+`}`)
	})
}

func TestDiscover(t *testing.T) {
	rt := newTestRuntime(t, richServerOptions())
	mustAddTool(t, rt, Tool{Name: "t"}, echoTool("x"))
	wantResult(t, dispatch(rt, statelessRequest("server/discover", "")),
		`{"supportedVersions":["2026-07-28","2025-11-25","2025-06-18","2025-03-26","2024-11-05"],"capabilities":{"tools":{}},"instructions":"be nice","resultType":"complete","ttlMs":0,"cacheScope":"private","_meta":{"io.modelcontextprotocol/serverInfo":`+richInfoFull+`}}`)

	opts := testOptions()
	opts.CacheTTLMs = 60000
	opts.CacheScope = CacheScopePublic
	opts.ToolsListChanged = true
	rt = newTestRuntime(t, opts)
	mustAddTool(t, rt, Tool{Name: "t"}, echoTool("x"))
	wantResult(t, dispatch(rt, statelessRequest("server/discover", "")),
		`{"supportedVersions":["2026-07-28","2025-11-25","2025-06-18","2025-03-26","2024-11-05"],"capabilities":{"tools":{"listChanged":true}},"resultType":"complete","ttlMs":60000,"cacheScope":"public",`+serverMeta+`}`)
	wantResult(t, dispatch(rt, statelessRequest("tools/list", "")),
		`{"tools":[{"name":"t","inputSchema":{"type":"object"}}],"resultType":"complete","ttlMs":60000,"cacheScope":"public",`+serverMeta+`}`)
	wantError(t, dispatch(rt, legacyRequest(ProtocolVersion20251125, "server/discover", "")), CodeMethodNotFound, "Method not found: server/discover", "")
}

// TestCapabilitiesExact: capabilities name exactly what is registered, and a
// method of a kind that is not registered is unknown.
func TestCapabilitiesExact(t *testing.T) {
	noPrompt := func(*testing.T, *Runtime) {}
	tests := []struct {
		name     string
		opts     func(*RuntimeOptions)
		register func(*testing.T, *Runtime)
		caps     string
		found    []string // methods served; the other catalog methods are -32601
	}{
		{"empty", nil, noPrompt, `{}`, nil},
		{"tool", nil, func(t *testing.T, rt *Runtime) { mustAddTool(t, rt, Tool{Name: "t"}, echoTool("x")) }, `{"tools":{}}`, []string{"tools/list", "tools/call"}},
		{"tool, listChanged", func(o *RuntimeOptions) { o.ToolsListChanged, o.PromptsListChanged = true, true }, func(t *testing.T, rt *Runtime) { mustAddTool(t, rt, Tool{Name: "t"}, echoTool("x")) }, `{"tools":{"listChanged":true}}`, []string{"tools/list", "tools/call"}},
		{"resource", nil, func(t *testing.T, rt *Runtime) {
			mustAdd(t, rt.AddResource(Resource{URI: "test://r", Name: "r"}, staticText("x")))
		}, `{"resources":{}}`, []string{"resources/list", "resources/templates/list", "resources/read"}},
		{"template, listChanged", func(o *RuntimeOptions) { o.ResourcesListChanged = true }, func(t *testing.T, rt *Runtime) {
			mustAdd(t, rt.AddResourceTemplate(ResourceTemplate{URITemplate: "test://{id}", Name: "r"}, staticText("x")))
		}, `{"resources":{"listChanged":true}}`, []string{"resources/list", "resources/templates/list", "resources/read"}},
		{"prompt", nil, func(t *testing.T, rt *Runtime) { mustAdd(t, rt.AddPrompt(Prompt{Name: "p"}, emptyPrompt)) }, `{"prompts":{}}`, []string{"prompts/list", "prompts/get"}},
		{"prompt with completion", func(o *RuntimeOptions) { o.PromptsListChanged = true }, func(t *testing.T, rt *Runtime) {
			mustAdd(t, rt.AddPrompt(Prompt{Name: "p", Arguments: []PromptArgument{{Name: "a"}}}, emptyPrompt))
			mustAdd(t, rt.AddPromptCompletion("p", "a", PrefixCompletion("x")))
		}, `{"completions":{},"prompts":{"listChanged":true}}`, []string{"prompts/list", "prompts/get", "completion/complete"}},
		{"prompt removed with its completion", nil, func(t *testing.T, rt *Runtime) {
			mustAdd(t, rt.AddPrompt(Prompt{Name: "p", Arguments: []PromptArgument{{Name: "a"}}}, emptyPrompt))
			mustAdd(t, rt.AddPromptCompletion("p", "a", PrefixCompletion("x")))
			rt.RemovePrompt("p")
		}, `{}`, nil},
		{"tool removed", nil, func(t *testing.T, rt *Runtime) {
			mustAddTool(t, rt, Tool{Name: "t"}, echoTool("x"))
			rt.RemoveTool("t")
		}, `{}`, nil},
		{"template removed with its completion", nil, func(t *testing.T, rt *Runtime) {
			mustAdd(t, rt.AddResourceTemplate(ResourceTemplate{URITemplate: "test://{id}", Name: "r"}, staticText("x")))
			mustAdd(t, rt.AddTemplateCompletion("test://{id}", "id", PrefixCompletion("1")))
			rt.RemoveResourceTemplate("test://{id}")
		}, `{}`, nil},
	}
	catalogMethods := []string{"tools/list", "tools/call", "resources/list", "resources/templates/list", "resources/read", "prompts/list", "prompts/get", "completion/complete"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := testOptions()
			if tt.opts != nil {
				tt.opts(&opts)
			}
			rt := newTestRuntime(t, opts)
			tt.register(t, rt)
			var initRes struct{ Capabilities json.RawMessage }
			decodeResult(t, dispatch(rt, newRequest("initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}`)), &initRes)
			if string(initRes.Capabilities) != tt.caps {
				t.Errorf("initialize capabilities %s, want %s", initRes.Capabilities, tt.caps)
			}
			var discRes struct{ Capabilities json.RawMessage }
			decodeResult(t, dispatch(rt, statelessRequest("server/discover", "")), &discRes)
			if string(discRes.Capabilities) != tt.caps {
				t.Errorf("discover capabilities %s, want %s", discRes.Capabilities, tt.caps)
			}
			for _, m := range catalogMethods {
				for _, r := range []*Request{statelessRequest(m, ""), legacyRequest(ProtocolVersion20251125, m, "")} {
					reply := dispatch(rt, r)
					notFound := reply.Error != nil && reply.Error.Code == CodeMethodNotFound
					if served := containsString(tt.found, m); served == notFound {
						t.Errorf("%s: served=%v but reply %+v", m, served, reply.Error)
					}
				}
			}
		})
	}
}

func mustAdd(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// TestIsImplementation checks the member scan of isImplementation against
// encoding/json, which defines the answer.
func TestIsImplementation(t *testing.T) {
	for _, raw := range []string{
		`{"name":"c","version":"1"}`,
		`{"version":"1","title":"C","name":"c"}`,
		` { "name" : "c" , "version" : "1" } `,
		`{"n\u0061me":"c","version":"1"}`,
		`{"name":"c"}`,
		`{"version":"1"}`,
		`{}`,
		`{"name":null,"version":"1"}`,
		`{"name":"c","version":null}`,
		`{"name":1,"version":"1"}`,
		`{"name":"c","version":{"major":1}}`,
		`{"name":"c","version":["1"]}`,
		`{"name":"c","version":true}`,
		`{"Name":"c","version":"1"}`,
		`{"name":"c","VERSION":"1"}`,
		`{"name":"c","version":"1","Version":2}`,
		`{"name":"c","version":"1","NAME":null}`,
		`{"name":"c","ver\u017fion":"1"}`,
		`{"name":"c","vers\u0130on":"1"}`,
		`{"name":"c","vers\u0131on":"1"}`,
		`{"n\u0130me":"c","version":"1"}`,
		`{"name":"c","version":"1","\u212aey":0,"é":1}`,
		`{"nam":"c","versions":"1"}`,
		`{"meta":{"name":"c","version":"1"}}`,
		`"c 1.0"`,
		`["c","1"]`,
		`null`,
	} {
		if got, want := isImplementation(json.RawMessage(raw)), decodesAsImplementation(json.RawMessage(raw)); got != want {
			t.Errorf("isImplementation(%s) = %v, encoding/json says %v", raw, got, want)
		}
	}
}

// TestDecodeParamsValidation checks that only params the transport admitted
// skip validation: a direct caller's, and an admitted Request's copy whose
// Params were replaced, are validated.
func TestDecodeParamsValidation(t *testing.T) {
	const bad = `{"name":"a","name":"b"}` // a duplicate key
	env, err := decodeEnvelope([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"name":"a"}}`))
	if err != nil {
		t.Fatal(err)
	}
	admitted := new(Request)
	if ok, rerr := admit(admitted, env, "1"); !ok {
		t.Fatal(rerr)
	}
	if !admitted.paramsValidated() {
		t.Fatal("admitted params are not marked validated")
	}
	replaced := *admitted
	replaced.Params = json.RawMessage(bad)
	for _, req := range []*Request{newRequest("tools/list", bad), &replaced} {
		if req.paramsValidated() {
			t.Errorf("params %s are marked validated", req.Params)
		}
		var p paramsObject
		if rerr := decodeParams(req, &p); rerr == nil || rerr.Message != "Invalid params: params must be an object" {
			t.Errorf("decodeParams(%s) = %v, want the -32602", req.Params, rerr)
		}
	}
}

// TestScanParams checks that the members picked out in one scan are those
// lookupMember finds.
func TestScanParams(t *testing.T) {
	for _, raw := range []string{
		`{}`,
		`{"name":"echo","arguments":{"name":"inner","cursor":1},"_meta":{"name":2}}`,
		` { "n\u0061me" : "x" , "uri":"file:///a", "cursor" : "c", "requestState":"s","inputResponses":{"k":{}} } `,
		`{"x":[{"name":1}],"\u0063ursor":null,"_met\u0061":{}}`,
	} {
		var p paramsObject
		p.scan(json.RawMessage(raw))
		for name, got := range map[string]json.RawMessage{
			"_meta": p.meta, "name": p.name, "arguments": p.arguments, "uri": p.uri,
			"cursor": p.cursor, "requestState": p.requestState, "inputResponses": p.inputResponses,
		} {
			if want, _ := lookupMember([]byte(raw), name); string(got) != string(want) || (got == nil) != (want == nil) {
				t.Errorf("paramsObject.scan(%s).%s = %q, want %q", raw, name, got, want)
			}
		}
	}
	meta := `{"progressToken":7,"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},` +
		`"io.modelcontextprotocol/client\u0049nfo":{"name":"c","version":"1"},"io.modelcontextprotocol/logLevel":"info","other":0}`
	var m metaObject
	m.scan(json.RawMessage(meta))
	for name, got := range map[string]json.RawMessage{
		metaKeyProtocolVersion: m.protocolVersion, metaKeyClientCapabilities: m.clientCapabilities,
		metaKeyClientInfo: m.clientInfo, metaKeyLogLevel: m.logLevel, metaKeyProgressToken: m.progressToken,
	} {
		if want, _ := lookupMember([]byte(meta), name); string(got) != string(want) || got == nil {
			t.Errorf("_meta[%q] = %q, want %q", name, got, want)
		}
	}
}
