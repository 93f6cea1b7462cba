package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
)

const (
	appsTestURI  = "ui://weather/view"
	appsTestPage = "<!DOCTYPE html><html><head><title>Weather</title></head><body><p>Weather</p></body></html>"
	// appsTestUIMeta is the _meta of appsTestApp's resource and contents.
	appsTestUIMeta = `{"ui":{"csp":{"connectDomains":["https://api.example.com","wss://live.example.com:8443"],` +
		`"resourceDomains":["https://*.cdn.example.com"],"frameDomains":["https://www.youtube.com"],"baseUriDomains":["https://cdn.example.com"]},` +
		`"permissions":{"camera":{},"clipboardWrite":{}},"domain":"a904794854a047f6.claudemcpcontent.com","prefersBorder":false}}`
	// appsClientCaps declare the extension as a host that renders apps
	// does.
	appsClientCaps = `{"extensions":{"io.modelcontextprotocol/ui":{"mimeTypes":["text/html;profile=mcp-app"]}}}`
	// appsExtensionCaps is capabilities.extensions of a Runtime serving an
	// app.
	appsExtensionCaps = `"extensions":{"io.modelcontextprotocol/ui":{"mimeTypes":["text/html;profile=mcp-app"]}}`
)

// appsTestApp is an app with every _meta.ui field set.
func appsTestApp() App {
	return App{
		URI: appsTestURI, Name: "weather-view", Title: "Weather", Description: "A forecast, drawn",
		HTML: appsTestPage,
		UI: AppUI{
			CSP: AppCSP{
				ConnectDomains:  []string{"https://api.example.com", "wss://live.example.com:8443"},
				ResourceDomains: []string{"https://*.cdn.example.com"},
				FrameDomains:    []string{"https://www.youtube.com"},
				BaseURIDomains:  []string{"https://cdn.example.com"},
			},
			Permissions:   AppPermissions{Camera: true, ClipboardWrite: true},
			Domain:        "a904794854a047f6.claudemcpcontent.com",
			PrefersBorder: new(false),
		},
	}
}

// newAppsRuntime returns a Runtime serving appsTestApp.
func newAppsRuntime(t *testing.T) *Runtime {
	t.Helper()
	rt := newTestRuntime(t, testOptions())
	if err := rt.AddApp(appsTestApp()); err != nil {
		t.Fatalf("AddApp: %v", err)
	}
	return rt
}

// mustLinkApp links tool to ui, failing the test when LinkApp refuses.
func mustLinkApp(t *testing.T, tool Tool, ui ToolUI) Tool {
	t.Helper()
	linked, err := LinkApp(tool, ui)
	if err != nil {
		t.Fatalf("LinkApp: %v", err)
	}
	return linked
}

// appsShaped is the exact result of members under version: as is in the
// initialize era, with the 2026 envelope of testOptions otherwise.
func appsShaped(version, members string, cacheable bool) string {
	switch {
	case version != ProtocolVersion20260728:
		return "{" + members + "}"
	case cacheable:
		return "{" + members + "," + listed2026 + "}"
	}
	return "{" + members + "," + complete2026 + "}"
}

// appsRequest is a request of method under version, from a client whose
// capabilities are caps (the Session's in the initialize era, the _meta's in
// 2026); members are params' own members without braces.
func appsRequest(version, method, members, caps string) *Request {
	if version == ProtocolVersion20260728 {
		meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps + `}`
		return newRequest(method, "{"+joinMembers(members, meta)+"}")
	}
	params := ""
	if members != "" {
		params = "{" + members + "}"
	}
	r := legacyRequest(version, method, params)
	r.Session.ClientCapabilities = json.RawMessage(caps)
	return r
}

// TestAppWireShapes checks an app and the tools linked to it on the wire in
// both eras: resources/list and resources/read carry the app MIME type and
// _meta.ui (versions before 2025-06-18 define no _meta, and get none),
// tools/list carries _meta.ui and the deprecated flat key (however the link
// was written), and initialize and server/discover declare the extension.
func TestAppWireShapes(t *testing.T) {
	rt := newAppsRuntime(t)
	mustAddTool(t, rt, mustLinkApp(t, Tool{Name: "forecast", Meta: json.RawMessage(`{"acme/owner":"weather"}`)}, ToolUI{ResourceURI: appsTestURI}), echoTool("sunny"))
	mustAddTool(t, rt, mustLinkApp(t, Tool{Name: "refresh"}, ToolUI{ResourceURI: appsTestURI, Visibility: []string{VisibleToApp}}), echoTool("refreshed"))
	mustAddTool(t, rt, Tool{Name: "radar", Meta: json.RawMessage(`{"ui":{"resourceUri":"ui://weather/view","visibility":["model","app"]}}`)}, echoTool("rain"))
	mustAddTool(t, rt, Tool{Name: "radar_v0", Meta: json.RawMessage(`{"ui/resourceUri":"ui://weather/view"}`)}, echoTool("rain"))

	const (
		resource = `{"uri":"ui://weather/view","name":"weather-view"%s,"description":"A forecast, drawn","mimeType":"text/html;profile=mcp-app","size":%d%s}`
		contents = `{"uri":"ui://weather/view","mimeType":"text/html;profile=mcp-app","text":"%s"%s}`
		tools    = `{"name":"forecast","inputSchema":{"type":"object"}%s},` +
			`{"name":"radar","inputSchema":{"type":"object"}%s},` +
			`{"name":"radar_v0","inputSchema":{"type":"object"}%s},` +
			`{"name":"refresh","inputSchema":{"type":"object"}%s}`
	)
	metas := []string{
		`,"_meta":{"acme/owner":"weather","ui":{"resourceUri":"ui://weather/view"},"ui/resourceUri":"ui://weather/view"}`,
		`,"_meta":{"ui":{"resourceUri":"ui://weather/view","visibility":["model","app"]},"ui/resourceUri":"ui://weather/view"}`,
		`,"_meta":{"ui":{"resourceUri":"ui://weather/view"},"ui/resourceUri":"ui://weather/view"}`,
		`,"_meta":{"ui":{"resourceUri":"ui://weather/view","visibility":["app"]},"ui/resourceUri":"ui://weather/view"}`,
	}
	for _, version := range []string{ProtocolVersion20250326, ProtocolVersion20250618, ProtocolVersion20251125, ProtocolVersion20260728} {
		t.Run(version, func(t *testing.T) {
			title, resourceMeta, toolMetas := `,"title":"Weather"`, `,"_meta":`+appsTestUIMeta, []any{metas[0], metas[1], metas[2], metas[3]}
			if version == ProtocolVersion20250326 { // no titles, no _meta
				title, resourceMeta, toolMetas = "", "", []any{"", "", "", ""}
			}
			wantResult(t, dispatch(rt, appsRequest(version, "resources/list", "", `{}`)),
				appsShaped(version, `"resources":[`+fmt.Sprintf(resource, title, len(appsTestPage), resourceMeta)+`]`, true))
			wantResult(t, dispatch(rt, appsRequest(version, "resources/read", `"uri":"ui://weather/view"`, `{}`)),
				appsShaped(version, `"contents":[`+fmt.Sprintf(contents, appsTestPage, resourceMeta)+`]`, true))
			wantResult(t, dispatch(rt, appsRequest(version, "tools/list", "", `{}`)),
				appsShaped(version, `"tools":[`+fmt.Sprintf(tools, toolMetas...)+`]`, true))
		})
	}
	t.Run("initialize", func(t *testing.T) {
		reply := dispatch(rt, newRequest("initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":`+testClientInfo+`}`))
		wantResult(t, reply, `{"protocolVersion":"2025-11-25","capabilities":{"resources":{},"tools":{},`+appsExtensionCaps+`},"serverInfo":{"name":"srv","version":"1.0"}}`)
	})
	t.Run("server/discover", func(t *testing.T) {
		wantResult(t, dispatch(rt, statelessRequest("server/discover", "")),
			`{"supportedVersions":["2026-07-28","2025-11-25","2025-06-18","2025-03-26","2024-11-05"],"capabilities":{"resources":{},"tools":{},`+appsExtensionCaps+`},`+listed2026+`}`)
	})
}

// TestAppOnlyToolsAreListedAndServed pins what the server does with a tool
// only its app may call (visibility ["app"]): it lists it, with its
// visibility, and serves its calls, to clients that declared the extension
// and to those that did not. The host keeps it from its model; the server
// cannot tell an app's call from the model's, which reach it alike.
func TestAppOnlyToolsAreListedAndServed(t *testing.T) {
	rt := newAppsRuntime(t)
	mustAddTool(t, rt, mustLinkApp(t, Tool{Name: "refresh"}, ToolUI{ResourceURI: appsTestURI, Visibility: []string{VisibleToApp}}), echoTool("refreshed"))
	for _, caps := range []string{`{}`, appsClientCaps} {
		for _, version := range []string{ProtocolVersion20251125, ProtocolVersion20260728} {
			t.Run(version+" "+caps, func(t *testing.T) {
				wantResult(t, dispatch(rt, appsRequest(version, "tools/list", "", caps)), appsShaped(version,
					`"tools":[{"name":"refresh","inputSchema":{"type":"object"},"_meta":{"ui":{"resourceUri":"ui://weather/view","visibility":["app"]},"ui/resourceUri":"ui://weather/view"}}]`, true))
				wantResult(t, dispatch(rt, appsRequest(version, "tools/call", `"name":"refresh"`, caps)),
					appsShaped(version, `"content":[{"type":"text","text":"refreshed"}]`, false))
			})
		}
	}
}

func TestAddAppRefuses(t *testing.T) {
	withUI := func(ui AppUI) App {
		return App{URI: "ui://bad/view", Name: "bad", HTML: appsTestPage, UI: ui}
	}
	csp := func(field, origin string) string {
		return fmt.Sprintf(`adding app "ui://bad/view": _meta.ui.csp.%s: %q is not scheme://host[:port] with scheme http, https, ws or wss`, field, origin)
	}
	tests := []struct {
		name string
		app  App
		want string
	}{
		{"another scheme", App{URI: "https://weather/view", Name: "w", HTML: appsTestPage},
			`adding app "https://weather/view": "https://weather/view" is not a ui:// URI`},
		{"an upper-case scheme", App{URI: "UI://weather/view", Name: "w", HTML: appsTestPage},
			`adding app "UI://weather/view": "UI://weather/view" is not a ui:// URI`},
		{"the scheme alone", App{URI: "ui://", Name: "w", HTML: appsTestPage}, `adding app "ui://": "ui://" is not a ui:// URI`},
		{"not a URI", App{URI: "ui://weather/%zz", Name: "w", HTML: appsTestPage}, `adding app "ui://weather/%zz": "ui://weather/%zz" is not a URI`},
		{"no name", App{URI: "ui://w", HTML: appsTestPage}, `adding app "ui://w": a name is required`},
		{"HTML not UTF-8", App{URI: "ui://w", Name: "w", HTML: "<!DOCTYPE html>\xff"}, `adding app "ui://w": the HTML is not valid UTF-8`},
		{"HTML without a doctype", App{URI: "ui://w", Name: "w", HTML: "<html><body>hi</body></html>"},
			`adding app "ui://w": the HTML is not an HTML5 document: it must start with <!DOCTYPE html>`},
		{"no HTML", App{URI: "ui://w", Name: "w"}, `adding app "ui://w": the HTML is not an HTML5 document: it must start with <!DOCTYPE html>`},
		{"a path", withUI(AppUI{CSP: AppCSP{ConnectDomains: []string{"https://api.example.com/v1"}}}), csp("connectDomains", "https://api.example.com/v1")},
		{"a trailing slash", withUI(AppUI{CSP: AppCSP{ResourceDomains: []string{"https://cdn.example.com/"}}}), csp("resourceDomains", "https://cdn.example.com/")},
		{"a query", withUI(AppUI{CSP: AppCSP{FrameDomains: []string{"https://x.example.com?a=b"}}}), csp("frameDomains", "https://x.example.com?a=b")},
		{"a fragment", withUI(AppUI{CSP: AppCSP{BaseURIDomains: []string{"https://x.example.com#top"}}}), csp("baseUriDomains", "https://x.example.com#top")},
		{"user info", withUI(AppUI{CSP: AppCSP{ConnectDomains: []string{"https://me@x.example.com"}}}), csp("connectDomains", "https://me@x.example.com")},
		{"another scheme", withUI(AppUI{CSP: AppCSP{ConnectDomains: []string{"ftp://x.example.com"}}}), csp("connectDomains", "ftp://x.example.com")},
		{"a keyword", withUI(AppUI{CSP: AppCSP{ConnectDomains: []string{"'self'"}}}), csp("connectDomains", "'self'")},
		{"a CSP injection", withUI(AppUI{CSP: AppCSP{ConnectDomains: []string{"https://x.example.com; script-src *"}}}), csp("connectDomains", "https://x.example.com; script-src *")},
		{"a wildcard host", withUI(AppUI{CSP: AppCSP{ConnectDomains: []string{"https://*"}}}), csp("connectDomains", "https://*")},
		{"a wildcard inside", withUI(AppUI{CSP: AppCSP{ConnectDomains: []string{"https://a.*.example.com"}}}), csp("connectDomains", "https://a.*.example.com")},
		{"no host", withUI(AppUI{CSP: AppCSP{ConnectDomains: []string{"https://"}}}), csp("connectDomains", "https://")},
		{"a domain with a blank", withUI(AppUI{Domain: "a b.example.com"}), `adding app "ui://bad/view": _meta.ui.domain "a b.example.com" holds blanks or control characters`},
		{"a domain with a control character", withUI(AppUI{Domain: "a\x00.example.com"}), `adding app "ui://bad/view": _meta.ui.domain "a\x00.example.com" holds blanks or control characters`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := newTestRuntime(t, testOptions())
			if err := rt.AddApp(tt.app); err == nil || err.Error() != tt.want {
				t.Fatalf("AddApp error = %v, want %s", err, tt.want)
			}
			if caps := rt.capabilities(); caps.Resources != nil || caps.Extensions != nil {
				t.Errorf("a refused app left capabilities %+v", caps)
			}
		})
	}
	t.Run("a URI taken", func(t *testing.T) {
		rt := newAppsRuntime(t)
		const want = `adding app "ui://weather/view": a resource with that URI is already registered`
		if err := rt.AddApp(appsTestApp()); err == nil || err.Error() != want {
			t.Fatalf("AddApp twice: error = %v, want %s", err, want)
		}
	})
	t.Run("valid origins", func(t *testing.T) {
		rt := newTestRuntime(t, testOptions())
		app := withUI(AppUI{CSP: AppCSP{ConnectDomains: []string{"http://localhost:8080", "https://[::1]:443", "wss://*.example.com", "ws://127.0.0.1"}}})
		if err := rt.AddApp(app); err != nil {
			t.Fatal(err)
		}
	})
}

func TestStartsWithHTML5Doctype(t *testing.T) {
	tests := []struct {
		html string
		want bool
	}{
		{"<!DOCTYPE html>", true},
		{"<!doctype HTML><html></html>", true},
		{"\ufeff \n<!-- made by hand -->\n<!-- twice --><!DocType   html  >", true},
		{`<!DOCTYPE html SYSTEM "about:legacy-compat">`, true},
		{`<!doctype html system 'about:legacy-compat' >`, true},
		{"", false},
		{"<html></html>", false},
		{"<!DOCTYPE html", false},
		{"<!DOCTYPEhtml>", false},
		{"<!DOCTYPE htmlx>", false},
		{`<!DOCTYPE HTML PUBLIC "-//W3C//DTD HTML 4.01//EN" "http://www.w3.org/TR/html4/strict.dtd">`, false},
		{`<!DOCTYPE html SYSTEM "about:blank">`, false},
		{`<!DOCTYPE html SYSTEM"about:legacy-compat">`, false},
		{"<!-- never closed <!DOCTYPE html>", false},
		{"text <!DOCTYPE html>", false},
	}
	for _, tt := range tests {
		if got := startsWithHTML5Doctype(tt.html); got != tt.want {
			t.Errorf("startsWithHTML5Doctype(%q) = %v, want %v", tt.html, got, tt.want)
		}
	}
}

// TestLinkApp checks the _meta LinkApp writes: the link in both keys, the
// tool's other members kept.
func TestLinkApp(t *testing.T) {
	tests := []struct {
		name, meta string
		ui         ToolUI
		want       string
	}{
		{"an app", "", ToolUI{ResourceURI: appsTestURI}, `{"ui":{"resourceUri":"ui://weather/view"},"ui/resourceUri":"ui://weather/view"}`},
		{"an app for the app alone", `{"acme/owner":"weather"}`, ToolUI{ResourceURI: appsTestURI, Visibility: []string{VisibleToApp}},
			`{"acme/owner":"weather","ui":{"resourceUri":"ui://weather/view","visibility":["app"]},"ui/resourceUri":"ui://weather/view"}`},
		{"a visibility alone", `{}`, ToolUI{Visibility: []string{VisibleToModel, VisibleToApp}}, `{"ui":{"visibility":["model","app"]}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tool := Tool{Name: "t", Description: "kept"}
			if tt.meta != "" {
				tool.Meta = json.RawMessage(tt.meta)
			}
			linked := mustLinkApp(t, tool, tt.ui)
			if string(linked.Meta) != tt.want || linked.Name != "t" || linked.Description != "kept" {
				t.Fatalf("LinkApp = %+v, want _meta %s", linked, tt.want)
			}
		})
	}
}

func TestLinkAppRefuses(t *testing.T) {
	tests := []struct {
		name string
		meta string
		ui   ToolUI
		want string
	}{
		{"an empty link", "", ToolUI{}, `linking tool "t": a ToolUI needs a ResourceURI or a Visibility`},
		{"another scheme", "", ToolUI{ResourceURI: "https://x"}, `linking tool "t": resourceUri: "https://x" is not a ui:// URI`},
		{"an empty visibility", "", ToolUI{ResourceURI: appsTestURI, Visibility: []string{}},
			`linking tool "t": visibility is empty: list "model", "app" or both, or leave it out for both`},
		{"an unknown caller", "", ToolUI{Visibility: []string{"model", "user"}}, `linking tool "t": visibility "user" is neither "model" nor "app"`},
		{"a caller twice", "", ToolUI{Visibility: []string{"app", "app"}}, `linking tool "t": visibility lists "app" twice`},
		{"_meta not an object", `[1]`, ToolUI{ResourceURI: appsTestURI}, `linking tool "t": _meta must be a JSON object`},
		{"_meta linked already", `{"ui":{}}`, ToolUI{ResourceURI: appsTestURI}, `linking tool "t": its _meta has "ui" already`},
		{"_meta with the flat key", `{"ui/resourceUri":"ui://x"}`, ToolUI{ResourceURI: appsTestURI}, `linking tool "t": its _meta has "ui/resourceUri" already`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tool := Tool{Name: "t"}
			if tt.meta != "" {
				tool.Meta = json.RawMessage(tt.meta)
			}
			if _, err := LinkApp(tool, tt.ui); err == nil || err.Error() != tt.want {
				t.Fatalf("LinkApp error = %v, want %s", err, tt.want)
			}
		})
	}
}

// TestAddToolChecksAppLinks checks the rule AddTool keeps once the Runtime
// serves an app: a link names a served app, its _meta.ui is well formed,
// and the two keys of the link agree (the missing one is filled in).
func TestAddToolChecksAppLinks(t *testing.T) {
	const (
		linked  = `{"ui":{"resourceUri":"ui://weather/view"},"ui/resourceUri":"ui://weather/view"}`
		refused = `adding tool "t": `
	)
	tests := []struct {
		name     string
		meta     string
		wantMeta string // as tools/list sends it
		wantErr  string
	}{
		{"_meta.ui.resourceUri alone", `{"ui":{"resourceUri":"ui://weather/view"}}`, linked, ""},
		{"the flat key alone", `{"ui/resourceUri":"ui://weather/view"}`, linked, ""},
		{"the flat key beside a visibility", `{"ui":{"visibility":["app"]},"ui/resourceUri":"ui://weather/view"}`,
			`{"ui":{"resourceUri":"ui://weather/view","visibility":["app"]},"ui/resourceUri":"ui://weather/view"}`, ""},
		{"both keys", ` { "ui/resourceUri" : "ui://weather/view", "ui" : { "resourceUri" : "ui://weather/view" } } `,
			` { "ui/resourceUri" : "ui://weather/view", "ui" : { "resourceUri" : "ui://weather/view" } } `, ""},
		{"a visibility alone", `{"ui":{"visibility":["app"]}}`, `{"ui":{"visibility":["app"]}}`, ""},
		{"members of its own", `{"ui":{"resourceUri":"ui://weather/view","hint":1},"x":[true]}`,
			`{"ui":{"resourceUri":"ui://weather/view","hint":1},"ui/resourceUri":"ui://weather/view","x":[true]}`, ""},
		{"no link", `{"acme/owner":"weather"}`, `{"acme/owner":"weather"}`, ""},
		{"an app not served", `{"ui":{"resourceUri":"ui://other/view"}}`, "",
			refused + `_meta.ui.resourceUri "ui://other/view" names no app this server serves (AddApp it before the tool)`},
		{"a resource that is no app", `{"ui":{"resourceUri":"ui://plain/page"}}`, "",
			refused + `_meta.ui.resourceUri "ui://plain/page" names no app this server serves (AddApp it before the tool)`},
		{"keys that disagree", `{"ui":{"resourceUri":"ui://weather/view"},"ui/resourceUri":"ui://weather/old"}`, "",
			refused + `_meta["ui/resourceUri"] is "ui://weather/old", but _meta.ui.resourceUri is "ui://weather/view"`},
		{"_meta.ui not an object", `{"ui":"ui://weather/view"}`, "", refused + `_meta.ui must be a JSON object`},
		{"a resourceUri not a string", `{"ui":{"resourceUri":7}}`, "", refused + `_meta.ui.resourceUri must be a string`},
		{"a resourceUri of another scheme", `{"ui":{"resourceUri":"test://static-text"}}`, "", refused + `_meta.ui.resourceUri: "test://static-text" is not a ui:// URI`},
		{"a visibility not an array", `{"ui":{"visibility":"app"}}`, "", refused + `_meta.ui.visibility must be an array of strings`},
		{"a visibility null", `{"ui":{"visibility":null}}`, "", refused + `_meta.ui.visibility must be an array of strings`},
		{"an empty visibility", `{"ui":{"visibility":[]}}`, "", refused + `_meta.ui.visibility is empty: list "model", "app" or both, or leave it out for both`},
		{"an unknown caller", `{"ui":{"visibility":["model","agent"]}}`, "", refused + `_meta.ui.visibility "agent" is neither "model" nor "app"`},
		{"a flat key not a string", `{"ui/resourceUri":true}`, "", refused + `_meta["ui/resourceUri"] must be a string`},
		{"a flat key of another scheme", `{"ui/resourceUri":"https://x"}`, "", refused + `_meta["ui/resourceUri"]: "https://x" is not a ui:// URI`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := newAppsRuntime(t)
			if err := rt.AddResource(Resource{URI: "ui://plain/page", Name: "plain", MIMEType: "text/html"}, textResource("<p>")); err != nil {
				t.Fatal(err)
			}
			err := rt.AddTool(Tool{Name: "t", Meta: json.RawMessage(tt.meta)}, echoTool("x"))
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("AddTool error = %v, want %s", err, tt.wantErr)
				}
				if len(rt.cat.tools.list) != 0 {
					t.Fatal("a refused tool was registered")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var list struct {
				Tools []struct {
					Meta json.RawMessage `json:"_meta"`
				}
			}
			decodeResult(t, dispatch(rt, appsRequest(ProtocolVersion20251125, "tools/list", "", `{}`)), &list)
			if got := string(list.Tools[0].Meta); got != strings.Join(strings.Fields(tt.wantMeta), "") {
				t.Fatalf("tools/list _meta\n got %s\nwant %s", got, tt.wantMeta)
			}
		})
	}
	t.Run("an app resource added as a resource", func(t *testing.T) {
		rt := newAppsRuntime(t)
		if err := rt.AddResource(Resource{URI: "ui://hand/made", Name: "hand", MIMEType: AppMIMEType}, textResource(appsTestPage)); err != nil {
			t.Fatal(err)
		}
		mustAddTool(t, rt, mustLinkApp(t, Tool{Name: "t"}, ToolUI{ResourceURI: "ui://hand/made"}), echoTool("x"))
	})
}

// textResource returns a handler that serves text.
func textResource(text string) ResourceHandler {
	return func(context.Context, *HandlerRequest) (*ResourceResult, error) {
		return &ResourceResult{Contents: []ResourceContents{{Text: text}}}, nil
	}
}

// TestToolsBeforeTheFirstAppAreNotChecked pins AddApp's documented limit: a
// Runtime that never served an app sends a tool's _meta as given.
func TestToolsBeforeTheFirstAppAreNotChecked(t *testing.T) {
	rt := newTestRuntime(t, testOptions())
	const meta = `{"ui":{"resourceUri":"ui://nowhere"}}`
	mustAddTool(t, rt, Tool{Name: "t", Meta: json.RawMessage(meta)}, echoTool("x"))
	wantResult(t, dispatch(rt, appsRequest(ProtocolVersion20251125, "tools/list", "", `{}`)),
		`{"tools":[{"name":"t","inputSchema":{"type":"object"},"_meta":`+meta+`}]}`)
	if err := rt.AddApp(appsTestApp()); err != nil {
		t.Fatal(err)
	}
	if err := rt.AddTool(Tool{Name: "u", Meta: json.RawMessage(meta)}, echoTool("x")); err == nil {
		t.Fatal("after AddApp, AddTool took a link to no app")
	}
}

// TestRemoveApp checks that an app linked to by a tool stays, that the
// extension is declared while an app is served, and what RemoveApp refuses.
func TestRemoveApp(t *testing.T) {
	rt := newAppsRuntime(t)
	second := appsTestApp()
	second.URI, second.Name = "ui://weather/map", "weather-map"
	if err := rt.AddApp(second); err != nil {
		t.Fatal(err)
	}
	if err := rt.AddResource(Resource{URI: "test://plain", Name: "plain"}, textResource("x")); err != nil {
		t.Fatal(err)
	}
	mustAddTool(t, rt, mustLinkApp(t, Tool{Name: "forecast"}, ToolUI{ResourceURI: appsTestURI}), echoTool("x"))
	mustAddTool(t, rt, Tool{Name: "forecast_v0", Meta: json.RawMessage(`{"ui/resourceUri":"ui://weather/view"}`)}, echoTool("x"))
	mustAddTool(t, rt, mustLinkApp(t, Tool{Name: "helper"}, ToolUI{Visibility: []string{VisibleToApp}}), echoTool("x"))

	for uri, want := range map[string]string{
		"ui://weather/none": `removing app "ui://weather/none": no app is served at that URI`,
		"test://plain":      `removing app "test://plain": no app is served at that URI`,
		appsTestURI:         `removing app "ui://weather/view": tools link to it: forecast, forecast_v0`,
	} {
		if err := rt.RemoveApp(uri); err == nil || err.Error() != want {
			t.Errorf("RemoveApp(%q) = %v, want %s", uri, err, want)
		}
	}
	extensions := func() map[string]json.RawMessage { return rt.capabilities().Extensions }
	if _, ok := extensions()[AppsExtension]; !ok {
		t.Fatal("the extension is not declared while two apps are served")
	}
	rt.RemoveTool("forecast")
	rt.RemoveTool("forecast_v0")
	if err := rt.RemoveApp(appsTestURI); err != nil {
		t.Fatalf("RemoveApp once no tool links to it: %v", err)
	}
	if _, ok := extensions()[AppsExtension]; !ok {
		t.Fatal("the extension was withdrawn while an app is still served")
	}
	wantError(t, dispatch(rt, appsRequest(ProtocolVersion20251125, "resources/read", `"uri":"ui://weather/view"`, `{}`)),
		CodeResourceNotFound, "Resource not found", `{"uri":"ui://weather/view"}`)
	if err := rt.RemoveApp(second.URI); err != nil {
		t.Fatal(err)
	}
	if got := extensions(); len(got) != 0 {
		t.Fatalf("with no app served, capabilities.extensions = %s", got)
	}
	if err := rt.RemoveApp(second.URI); err == nil {
		t.Fatal("RemoveApp of an app removed already succeeded")
	}
}

// TestClientAppMIMETypes checks what a handler learns of the client's
// support for apps, in both eras and from each place a client declares it.
func TestClientAppMIMETypes(t *testing.T) {
	ui := func(settings string) string {
		return `{"extensions":{"io.modelcontextprotocol/ui":` + settings + `}}`
	}
	tests := []struct {
		name    string
		version string
		caps    string // the session's in the initialize era, _meta's in 2026
		meta    string // a legacy request's own _meta, "" for none
		want    []string
		renders bool
	}{
		{"initialize declared it", ProtocolVersion20251125, appsClientCaps, "", []string{AppMIMEType}, true},
		{"initialize declared nothing", ProtocolVersion20251125, `{}`, "", nil, false},
		{"the legacy request's _meta declared it", ProtocolVersion20250618, `{}`,
			`"_meta":{"io.modelcontextprotocol/clientCapabilities":` + appsClientCaps + `}`, []string{AppMIMEType}, true},
		{"2026 _meta declared it", ProtocolVersion20260728, appsClientCaps, "", []string{AppMIMEType}, true},
		{"2026 _meta declared nothing", ProtocolVersion20260728, `{"sampling":{}}`, "", nil, false},
		{"other types only", ProtocolVersion20260728, ui(`{"mimeTypes":["text/uri-list"]}`), "", []string{"text/uri-list"}, false},
		{"spelled otherwise", ProtocolVersion20251125, ui(`{"mimeTypes":["TEXT/HTML; profile=mcp-app"]}`), "", []string{"TEXT/HTML; profile=mcp-app"}, true},
		{"another profile", ProtocolVersion20251125, ui(`{"mimeTypes":["text/html;profile=other"]}`), "", []string{"text/html;profile=other"}, false},
		{"HTML without the profile", ProtocolVersion20251125, ui(`{"mimeTypes":["text/html"]}`), "", []string{"text/html"}, false},
		{"mimeTypes not an array", ProtocolVersion20260728, ui(`{"mimeTypes":"text/html;profile=mcp-app"}`), "", nil, false},
		{"entries not strings", ProtocolVersion20260728, ui(`{"mimeTypes":[7,null,"text/html;profile=mcp-app"]}`), "", []string{AppMIMEType}, true},
		{"no mimeTypes", ProtocolVersion20260728, ui(`{}`), "", nil, false},
		{"settings not an object", ProtocolVersion20260728, ui(`true`), "", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := newTestRuntime(t, testOptions())
			var got []string
			var renders bool
			mustAddTool(t, rt, Tool{Name: "probe"}, func(_ context.Context, req *HandlerRequest) (*ToolResult, error) {
				got, renders = req.ClientAppMIMETypes(), req.ClientRendersApps()
				return TextResult("probed"), nil
			})
			reply := dispatch(rt, appsRequest(tt.version, "tools/call", joinMembers(`"name":"probe"`, tt.meta), tt.caps))
			if reply.Error != nil {
				t.Fatalf("tools/call: %+v", reply.Error)
			}
			if !slices.Equal(got, tt.want) || renders != tt.renders {
				t.Fatalf("ClientAppMIMETypes() = %q, ClientRendersApps() = %v; want %q, %v", got, renders, tt.want, tt.renders)
			}
		})
	}
}

// TestClientRendersAppsOverAConnection checks the capability end to end: an
// initialize that declares the extension reaches the handlers of the
// connection's later requests, and a 2026 request on the same connection
// is judged by its own _meta.
func TestClientRendersAppsOverAConnection(t *testing.T) {
	rt := newTestRuntime(t, testOptions())
	mustAddTool(t, rt, Tool{Name: "probe"}, func(_ context.Context, req *HandlerRequest) (*ToolResult, error) {
		return TextResult(fmt.Sprint(req.ClientRendersApps())), nil
	})
	c, _ := startMemory(t, rt, Options{})
	roundTripMemory(t, c, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":`+appsClientCaps+`,"clientInfo":{"name":"host","version":"1"}}}`)
	if got := roundTripMemory(t, c, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"probe"}}`); got != `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"true"}]}}` {
		t.Fatalf("a legacy call after initialize declared the extension: %s", got)
	}
	if got := roundTripMemory(t, c, toolCall("3", "probe", meta2026With(""))); !strings.Contains(got, `"text":"false"`) {
		t.Fatalf("a 2026 call whose _meta declares nothing: %s", got)
	}
}

// TestAppLinksUnderConcurrency races AddApp and RemoveApp against AddTool
// and RemoveTool of a tool linked to the app: whenever the tool is
// registered, the app is served, so a host that lists the tool can always
// read its app.
func TestAppLinksUnderConcurrency(t *testing.T) {
	rt := newTestRuntime(t, testOptions())
	app := appsTestApp()
	if err := rt.AddApp(app); err != nil {
		t.Fatal(err)
	}
	tool := mustLinkApp(t, Tool{Name: "forecast"}, ToolUI{ResourceURI: appsTestURI})
	const rounds = 200
	var wg sync.WaitGroup
	wg.Go(func() {
		for range rounds {
			if rt.RemoveApp(appsTestURI) != nil {
				continue // the tool links to it
			}
			if err := rt.AddApp(app); err != nil {
				t.Errorf("AddApp after RemoveApp: %v", err)
			}
		}
	})
	wg.Go(func() {
		for range rounds {
			if rt.AddTool(tool, echoTool("x")) != nil {
				continue // the app was away
			}
			if reply := dispatch(rt, appsRequest(ProtocolVersion20260728, "resources/read", `"uri":"ui://weather/view"`, `{}`)); reply.Error != nil {
				t.Errorf("the tool is registered, but reading its app answered %+v", reply.Error)
			}
			rt.RemoveTool("forecast")
		}
	})
	wg.Wait()
}
