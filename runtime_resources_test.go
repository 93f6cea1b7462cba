package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
)

// staticText is a resource handler answering text.
func staticText(text string) ResourceHandler {
	return func(context.Context, *HandlerRequest) (*ResourceResult, error) {
		return &ResourceResult{Contents: []ResourceContents{{MIMEType: "text/plain", Text: text}}}, nil
	}
}

func TestAddResourceValidation(t *testing.T) {
	rt := newTestRuntime(t, testOptions())
	mustAdd(t, rt.AddResource(Resource{URI: "test://taken", Name: "t"}, staticText("x")))
	mustAdd(t, rt.AddResourceTemplate(ResourceTemplate{URITemplate: "test://t/{id}", Name: "t"}, staticText("x")))
	tests := []struct {
		name    string
		add     func() error
		wantErr string
	}{
		{"resource without scheme", func() error { return rt.AddResource(Resource{URI: "static-text", Name: "n"}, staticText("x")) }, `adding resource "static-text": the URI must be absolute (start with a scheme and ':')`},
		{"resource without name", func() error { return rt.AddResource(Resource{URI: "test://a"}, staticText("x")) }, `adding resource "test://a": a name is required`},
		{"resource nil handler", func() error { return rt.AddResource(Resource{URI: "test://a", Name: "a"}, nil) }, `adding resource "test://a": nil handler`},
		{"resource bad _meta", func() error {
			return rt.AddResource(Resource{URI: "test://a", Name: "a", Meta: json.RawMessage(`[]`)}, staticText("x"))
		}, `adding resource "test://a": _meta must be a JSON object`},
		{"resource duplicate", func() error { return rt.AddResource(Resource{URI: "test://taken", Name: "t"}, staticText("x")) }, `adding resource "test://taken": a resource with that URI is already registered`},
		{"template duplicate", func() error {
			return rt.AddResourceTemplate(ResourceTemplate{URITemplate: "test://t/{id}", Name: "t"}, staticText("x"))
		}, `adding resource template "test://t/{id}": that template is already registered`},
		{"template level 2", func() error {
			return rt.AddResourceTemplate(ResourceTemplate{URITemplate: "test://t/{+path}", Name: "t"}, staticText("x"))
		}, `adding resource template "test://t/{+path}": expression {+path} is not a level-1 variable`},
		{"template without scheme", func() error {
			return rt.AddResourceTemplate(ResourceTemplate{URITemplate: "{scheme}://x", Name: "t"}, staticText("x"))
		}, `adding resource template "{scheme}://x": the URI must be absolute`},
		{"template without name", func() error {
			return rt.AddResourceTemplate(ResourceTemplate{URITemplate: "test://u/{id}"}, staticText("x"))
		}, `adding resource template "test://u/{id}": a name is required`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.add()
			if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want prefix %q", err, tt.wantErr)
			}
		})
	}
}

func TestParseURITemplate(t *testing.T) {
	tests := []struct {
		template string
		wantErr  string
		vars     []string
	}{
		{"test://template/{id}/data", "", []string{"id"}},
		{"file:///{dir}/{name}.{ext}", "", []string{"dir", "name", "ext"}},
		{"x://{a.b}/{c_d}/{e%20f}", "", []string{"a.b", "c_d", "e%20f"}},
		{"x://static", "a URI template needs at least one {variable}", nil},
		{"x://{}", "expression {} is not a level-1 variable", nil},
		{"x://{a,b}", "expression {a,b} is not a level-1 variable", nil},
		{"x://{a*}", "expression {a*} is not a level-1 variable", nil},
		{"x://{a:3}", "expression {a:3} is not a level-1 variable", nil},
		{"x://{#a}", "expression {#a} is not a level-1 variable", nil},
		{"x://{?a}", "expression {?a} is not a level-1 variable", nil},
		{"x://{.a}", "expression {.a} is not a level-1 variable", nil},
		{"x://{a..b}", "expression {a..b} is not a level-1 variable", nil},
		{"x://{a%2}", "expression {a%2} is not a level-1 variable", nil},
		{"x://{a", "unterminated '{' in URI template", nil},
		{"x://a}", "unbalanced '}' in URI template", nil},
		{"x://{a}/{a}", `variable "a" appears twice`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.template, func(t *testing.T) {
			parsed, err := parseURITemplate(tt.template)
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want prefix %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(parsed.vars, tt.vars) {
				t.Errorf("vars = %v, want %v", parsed.vars, tt.vars)
			}
		})
	}
}

func TestURITemplateMatch(t *testing.T) {
	tests := []struct {
		template, uri string
		want          map[string]string // nil: no match
	}{
		{"test://template/{id}/data", "test://template/123/data", map[string]string{"id": "123"}},
		{"test://template/{id}/data", "test://template/a%2Fb%20c/data", map[string]string{"id": "a/b c"}},
		{"test://template/{id}/data", "test://template/a/b/data", nil},
		{"test://template/{id}/data", "test://template//data", nil},
		{"test://template/{id}/data", "test://template/1/data/x", nil},
		{"test://template/{id}/data", "xtest://template/1/data", nil},
		{"test://template/{id}/data", "test://template/%zz/data", nil},
		{"test://t.{id}", "test://tx1", nil}, // the literal dot is not a wildcard
		{"file:///{name}.{ext}", "file:///notes.txt", map[string]string{"name": "notes", "ext": "txt"}},
		{"q://{a}?x={b}", "q://1?x=2", map[string]string{"a": "1", "b": "2"}},
	}
	for _, tt := range tests {
		t.Run(tt.uri, func(t *testing.T) {
			parsed, err := parseURITemplate(tt.template)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := parsed.match(tt.uri)
			if ok != (tt.want != nil) || !maps.Equal(got, tt.want) {
				t.Errorf("match = %v, %v; want %v", got, ok, tt.want)
			}
		})
	}
}

func TestListResources(t *testing.T) {
	rt := newTestRuntime(t, testOptions())
	mustAdd(t, rt.AddResource(Resource{
		URI: "test://static-text", Name: "static-text", Title: "Static", Description: "A static text resource", MIMEType: "text/plain",
		Size: 48, Annotations: &Annotations{Audience: []string{"user"}}, Icons: []Icon{{Src: "https://e/i.svg"}},
	}, staticText("x")))
	mustAdd(t, rt.AddResource(Resource{URI: "test://static-binary", Name: "static-binary", MIMEType: "image/png"}, staticText("x")))
	mustAdd(t, rt.AddResourceTemplate(ResourceTemplate{
		URITemplate: "test://template/{id}/data", Name: "template", Description: "A template", MIMEType: "application/json", Icons: []Icon{{Src: "https://e/t.svg"}},
	}, staticText("x")))

	resources := func(icons string) string {
		return `{"resources":[{"uri":"test://static-binary","name":"static-binary","mimeType":"image/png"},{"uri":"test://static-text","name":"static-text","title":"Static","description":"A static text resource","mimeType":"text/plain","annotations":{"audience":["user"]},"size":48` + icons + `}]`
	}
	templates := func(icons string) string {
		return `{"resourceTemplates":[{"uriTemplate":"test://template/{id}/data","name":"template","description":"A template","mimeType":"application/json"` + icons + `}]`
	}
	wantResult(t, dispatch(rt, legacyRequest(ProtocolVersion20251125, "resources/list", "")), resources(`,"icons":[{"src":"https://e/i.svg"}]`)+`}`)
	wantResult(t, dispatch(rt, legacyRequest(ProtocolVersion20250618, "resources/list", "")), resources("")+`}`)
	wantResult(t, dispatch(rt, statelessRequest("resources/list", "")), resources(`,"icons":[{"src":"https://e/i.svg"}]`)+`,`+listed2026+`}`)
	wantResult(t, dispatch(rt, legacyRequest(ProtocolVersion20251125, "resources/templates/list", "")), templates(`,"icons":[{"src":"https://e/t.svg"}]`)+`}`)
	wantResult(t, dispatch(rt, legacyRequest(ProtocolVersion20250618, "resources/templates/list", "")), templates("")+`}`)
	wantResult(t, dispatch(rt, statelessRequest("resources/templates/list", "")), templates(`,"icons":[{"src":"https://e/t.svg"}]`)+`,`+listed2026+`}`)

	// Only templates: the resource list is empty but served.
	rt = newTestRuntime(t, testOptions())
	mustAdd(t, rt.AddResourceTemplate(ResourceTemplate{URITemplate: "test://{id}", Name: "t"}, staticText("x")))
	wantResult(t, dispatch(rt, legacyRequest(ProtocolVersion20251125, "resources/list", "")), `{"resources":[]}`)
}

func TestReadResource(t *testing.T) {
	rt := newTestRuntime(t, testOptions())
	png := []byte{0x89, 'P', 'N', 'G'}
	mustAdd(t, rt.AddResource(Resource{URI: "test://static-text", Name: "text"}, staticText("This is the content of the static text resource.")))
	mustAdd(t, rt.AddResource(Resource{URI: "test://static-binary", Name: "bin"}, func(context.Context, *HandlerRequest) (*ResourceResult, error) {
		return &ResourceResult{Contents: []ResourceContents{{MIMEType: "image/png", Blob: png}}}, nil
	}))
	mustAdd(t, rt.AddResource(Resource{URI: "test://empty", Name: "empty"}, func(context.Context, *HandlerRequest) (*ResourceResult, error) {
		return &ResourceResult{Contents: []ResourceContents{{URI: "test://empty#part", Text: ""}}, Meta: json.RawMessage(`{"com.example/v":2}`)}, nil
	}))
	mustAdd(t, rt.AddResource(Resource{URI: "test://gone", Name: "gone"}, func(context.Context, *HandlerRequest) (*ResourceResult, error) {
		return nil, fmt.Errorf("looking it up: %w", ErrResourceNotFound)
	}))
	mustAdd(t, rt.AddResource(Resource{URI: "test://broken", Name: "broken"}, func(context.Context, *HandlerRequest) (*ResourceResult, error) {
		return nil, errors.New("disk on fire")
	}))
	mustAdd(t, rt.AddResource(Resource{URI: "test://refused", Name: "refused"}, func(context.Context, *HandlerRequest) (*ResourceResult, error) {
		return nil, &RPCError{Code: CodeInvalidParams, Message: "Refused"}
	}))
	mustAdd(t, rt.AddResource(Resource{URI: "test://template/static/data", Name: "shadow"}, staticText("static wins")))
	mustAdd(t, rt.AddResourceTemplate(ResourceTemplate{URITemplate: "test://template/{id}/data", Name: "template"}, func(_ context.Context, req *HandlerRequest) (*ResourceResult, error) {
		id := req.Variables["id"]
		return &ResourceResult{Contents: []ResourceContents{{
			MIMEType: "application/json",
			Text:     fmt.Sprintf(`{"id":%q,"templateTest":true,"data":"Data for ID: %s"}`, id, id),
		}}}, nil
	}))

	// stateless is the 2026 answer when it is not the legacy one plus the
	// 2026 envelope.
	tests := []struct{ name, uri, legacy, stateless string }{
		{"text", "test://static-text", `{"contents":[{"uri":"test://static-text","mimeType":"text/plain","text":"This is the content of the static text resource."}]}`, ""},
		{"binary", "test://static-binary", `{"contents":[{"uri":"test://static-binary","mimeType":"image/png","blob":"iVBORw=="}]}`, ""},
		{"empty text, own uri, handler _meta", "test://empty",
			`{"contents":[{"uri":"test://empty#part","text":""}],"_meta":{"com.example/v":2}}`,
			`{"contents":[{"uri":"test://empty#part","text":""}],"resultType":"complete",` + cache2026 + `,"_meta":{"com.example/v":2,"io.modelcontextprotocol/serverInfo":{"name":"srv","version":"1.0"}}}`},
		{"template", "test://template/123/data", `{"contents":[{"uri":"test://template/123/data","mimeType":"application/json","text":"{\"id\":\"123\",\"templateTest\":true,\"data\":\"Data for ID: 123\"}"}]}`, ""},
		{"percent-decoded variable", "test://template/a%20b/data", `{"contents":[{"uri":"test://template/a%20b/data","mimeType":"application/json","text":"{\"id\":\"a b\",\"templateTest\":true,\"data\":\"Data for ID: a b\"}"}]}`, ""},
		{"static resource before template", "test://template/static/data", `{"contents":[{"uri":"test://template/static/data","mimeType":"text/plain","text":"static wins"}]}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			params := fmt.Sprintf(`{"uri":%q}`, tt.uri)
			wantResult(t, dispatch(rt, legacyRequest(ProtocolVersion20251125, "resources/read", params)), tt.legacy)
			if tt.stateless == "" {
				tt.stateless = strings.TrimSuffix(tt.legacy, "}") + `,` + listed2026 + `}`
			}
			wantResult(t, dispatch(rt, statelessRequest("resources/read", params)), tt.stateless)
		})
	}

	notFound := []struct{ name, uri string }{
		{"unknown", "test://nonexistent-resource-for-conformance-testing"},
		{"handler says not found", "test://gone"},
		{"template does not match", "test://template/a/b/data"},
	}
	for _, tt := range notFound {
		t.Run(tt.name, func(t *testing.T) {
			params := fmt.Sprintf(`{"uri":%q}`, tt.uri)
			data := fmt.Sprintf(`{"uri":%q}`, tt.uri)
			wantError(t, dispatch(rt, legacyRequest(ProtocolVersion20250618, "resources/read", params)), CodeResourceNotFound, "Resource not found", data)
			wantError(t, dispatch(rt, statelessRequest("resources/read", params)), CodeInvalidParams, "Resource not found", data)
		})
	}
	wantError(t, dispatch(rt, statelessRequest("resources/read", `{"uri":"test://broken"}`)), CodeInternalError, "Internal error", "")
	wantError(t, dispatch(rt, statelessRequest("resources/read", `{"uri":"test://refused"}`)), CodeInvalidParams, "Refused", "")
	wantError(t, dispatch(rt, statelessRequest("resources/read", `{}`)), CodeInvalidParams, "Invalid params: resources/read requires a string uri", "")
	wantError(t, dispatch(rt, statelessRequest("resources/read", `{"uri":["x"]}`)), CodeInvalidParams, "Invalid params: resources/read requires a string uri", "")

	if !rt.RemoveResource("test://static-text") || rt.RemoveResource("test://static-text") {
		t.Error("RemoveResource did not report the removal once")
	}
	wantError(t, dispatch(rt, statelessRequest("resources/read", `{"uri":"test://static-text"}`)), CodeInvalidParams, "Resource not found", `{"uri":"test://static-text"}`)
}
