package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// httpTestServer is an HTTPHandler serving rt on a real loopback listener.
type httpTestServer struct {
	t   *testing.T
	url string
	h   *HTTPHandler
	rt  *Runtime
}

// newHTTPTestServer serves rt through an HTTPHandler mounted at /mcp of a
// ServeMux, as the command mounts it, with the protected resource metadata
// at its path when opts has Auth.
func newHTTPTestServer(t *testing.T, rt *Runtime, opts HTTPOptions) *httpTestServer {
	t.Helper()
	if rt == nil {
		rt = newHTTPCatalogRuntime(t)
	}
	h, err := NewHTTPHandler(rt, opts)
	if err != nil {
		t.Fatalf("NewHTTPHandler: %v", err)
	}
	mux := http.NewServeMux()
	mux.Handle(mcpPath, h)
	if path, metadata := h.ProtectedResourceMetadata(); metadata != nil {
		mux.Handle(path, metadata)
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		h.endStreams()
		srv.Close()
		h.Close()
	})
	return &httpTestServer{t: t, url: srv.URL + "/mcp", h: h, rt: rt}
}

// newHTTPCatalogRuntime is the reference catalog with the options the
// command serves it with: logging and list changes announced.
func newHTTPCatalogRuntime(t *testing.T) *Runtime {
	t.Helper()
	rt := newTestRuntime(t, RuntimeOptions{
		ServerInfo: Implementation{Name: "reference", Version: "0.0.1"},
		Logging:    true, ToolsListChanged: true, ResourcesSubscribe: true, ResourcesListChanged: true,
		Tasks: TaskOptions{},
	})
	if err := registerReferenceCatalog(rt); err != nil {
		t.Fatalf("registerReferenceCatalog: %v", err)
	}
	return rt
}

// do sends method to the endpoint with the base headers of a client
// (Content-Type and Accept) overridden by header; a header set to "" is
// removed.
func (s *httpTestServer) do(ctx context.Context, method string, header map[string]string, body string) *http.Response {
	s.t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, s.url, strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		switch {
		case k == "Host":
			req.Host = v
		case v == "":
			req.Header.Del(k)
		default:
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, s.url, err)
	}
	return resp
}

func (s *httpTestServer) post(header map[string]string, body string) *http.Response {
	s.t.Helper()
	return s.do(context.Background(), http.MethodPost, header, body)
}

// stateless returns the mirrored headers of a 2026 request.
func stateless(method, name string) map[string]string {
	h := map[string]string{"MCP-Protocol-Version": ProtocolVersion20260728, "Mcp-Method": method}
	if name != "" {
		h["Mcp-Name"] = name
	}
	return h
}

func readBody(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the body: %v", err)
	}
	return string(b)
}

// sseEvent is one parsed Server-Sent Event.
type sseEvent struct {
	id, data string
	retry    bool
}

// sseReader parses the events of an SSE response.
type sseReader struct {
	t *testing.T
	r *bufio.Reader
}

func newSSEReader(t *testing.T, resp *http.Response) *sseReader {
	t.Helper()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q, want text/event-stream", ct)
	}
	return &sseReader{t: t, r: bufio.NewReader(resp.Body)}
}

// next returns the next event, skipping comments; io.EOF at the end.
func (s *sseReader) next() (sseEvent, error) {
	var ev sseEvent
	seen := false
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			return ev, err
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "" && seen:
			return ev, nil
		case line == "", strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "id: "):
			ev.id, seen = line[4:], true
		case strings.HasPrefix(line, "retry: "):
			ev.retry, seen = true, true
		case strings.HasPrefix(line, "data: "):
			ev.data, seen = line[6:], true
		case strings.HasPrefix(line, "event: "):
			seen = true
		}
	}
}

// nextMessage returns the data of the next event that carries a message.
func (s *sseReader) nextMessage() string {
	s.t.Helper()
	for {
		ev, err := s.next()
		if err != nil {
			s.t.Fatalf("reading the SSE stream: %v", err)
		}
		if ev.data != "" {
			return ev.data
		}
	}
}

func TestHTTPStatusAndHeaderRules(t *testing.T) {
	s := newHTTPTestServer(t, nil, HTTPOptions{})
	list2026 := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + meta2026 + `}}`
	echo2026 := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},` + meta2026 + `}}`
	header := func(base map[string]string, kv ...string) map[string]string {
		h := map[string]string{}
		for k, v := range base {
			h[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			h[kv[i]] = kv[i+1]
		}
		return h
	}
	tests := []struct {
		name       string
		method     string
		header     map[string]string
		body       string
		wantStatus int
		wantCode   int    // JSON-RPC error code of the body; 0 for none checked
		wantInBody string // a substring of the body
		wantHeader [2]string
	}{
		{name: "2026 tools/list", method: "POST", header: stateless("tools/list", ""), body: list2026, wantStatus: 200, wantInBody: `"tools":[`},
		{name: "GET without session", method: "GET", wantStatus: 405, wantHeader: [2]string{"Allow", "POST"}},
		{name: "DELETE without session", method: "DELETE", wantStatus: 405, wantHeader: [2]string{"Allow", "POST"}},
		{name: "PUT", method: "PUT", wantStatus: 405, wantHeader: [2]string{"Allow", "GET, POST, DELETE"}},
		{name: "other path", method: "POST", header: header(stateless("tools/list", ""), "X-Path", "x"), body: list2026, wantStatus: 200},
		{name: "not JSON content", method: "POST", header: header(stateless("tools/list", ""), "Content-Type", "text/plain"), body: list2026, wantStatus: 415},
		{name: "JSON with charset", method: "POST", header: header(stateless("tools/list", ""), "Content-Type", "application/json; charset=utf-8"), body: list2026, wantStatus: 200},
		{name: "Accept lacks SSE", method: "POST", header: header(stateless("tools/list", ""), "Accept", "application/json"), body: list2026, wantStatus: 406},
		{name: "Accept lacks JSON", method: "POST", header: header(stateless("tools/list", ""), "Accept", "text/event-stream"), body: list2026, wantStatus: 406},
		{name: "Accept wildcard", method: "POST", header: header(stateless("tools/list", ""), "Accept", "*/*"), body: list2026, wantStatus: 200},
		{name: "foreign Origin", method: "POST", header: header(stateless("tools/list", ""), "Origin", "http://evil.example.com"), body: list2026, wantStatus: 403},
		{name: "loopback Origin", method: "POST", header: header(stateless("tools/list", ""), "Origin", "http://localhost:3000"), body: list2026, wantStatus: 200},
		{name: "foreign Host", method: "POST", header: header(stateless("tools/list", ""), "Host", "evil.example.com"), body: list2026, wantStatus: 403},
		{name: "unparsable JSON", method: "POST", header: stateless("tools/list", ""), body: `{"jsonrpc":`, wantStatus: 400, wantCode: CodeParseError},
		{name: "duplicate key", method: "POST", header: stateless("tools/list", ""), body: `{"id":1,"id":2}`, wantStatus: 400, wantCode: CodeParseError},
		{name: "batch", method: "POST", header: stateless("tools/list", ""), body: `[` + list2026 + `]`, wantStatus: 400, wantCode: CodeInvalidRequest},
		{name: "missing Mcp-Method", method: "POST", header: header(stateless("tools/list", ""), "Mcp-Method", ""), body: list2026, wantStatus: 400, wantCode: CodeHeaderMismatch},
		{name: "Mcp-Method mismatch", method: "POST", header: stateless("prompts/list", ""), body: list2026, wantStatus: 400, wantCode: CodeHeaderMismatch},
		{name: "Mcp-Method is case-sensitive", method: "POST", header: stateless("TOOLS/LIST", ""), body: list2026, wantStatus: 400, wantCode: CodeHeaderMismatch},
		{name: "header names are not", method: "POST", header: map[string]string{"MCP-Protocol-Version": "2026-07-28", "MCP-METHOD": "tools/list"}, body: list2026, wantStatus: 200},
		{name: "missing MCP-Protocol-Version", method: "POST", header: header(stateless("tools/list", ""), "MCP-Protocol-Version", ""), body: list2026, wantStatus: 400, wantCode: CodeHeaderMismatch},
		{name: "MCP-Protocol-Version mismatch", method: "POST", header: header(stateless("tools/list", ""), "MCP-Protocol-Version", "2025-11-25"), body: list2026, wantStatus: 400, wantCode: CodeHeaderMismatch},
		{name: "Mcp-Name matches", method: "POST", header: stateless("tools/call", "echo"), body: echo2026, wantStatus: 200, wantInBody: `"text":"hi"`},
		{name: "Mcp-Name with spaces around", method: "POST", header: stateless("tools/call", "  echo "), body: echo2026, wantStatus: 200},
		{name: "Mcp-Name in Base64", method: "POST", header: stateless("tools/call", "=?base64?ZWNobw==?="), body: echo2026, wantStatus: 200},
		{name: "Mcp-Name mismatch", method: "POST", header: stateless("tools/call", "sleep"), body: echo2026, wantStatus: 400, wantCode: CodeHeaderMismatch},
		{name: "Mcp-Name missing", method: "POST", header: stateless("tools/call", ""), body: echo2026, wantStatus: 400, wantCode: CodeHeaderMismatch},
		{name: "Mcp-Name of resources/read", method: "POST", header: stateless("resources/read", "test://missing"),
			body: `{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"test://other",` + meta2026 + `}}`, wantStatus: 400, wantCode: CodeHeaderMismatch},
		{name: "unknown method", method: "POST", header: stateless("nope/nope", ""), body: `{"jsonrpc":"2.0","id":4,"method":"nope/nope","params":{` + meta2026 + `}}`, wantStatus: 404, wantCode: CodeMethodNotFound},
		{name: "invalid params", method: "POST", header: stateless("tools/call", "nosuchtool"),
			body: `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"nosuchtool",` + meta2026 + `}}`, wantStatus: 400, wantCode: CodeInvalidParams},
		{name: "unsupported version", method: "POST", header: header(stateless("tools/list", ""), "MCP-Protocol-Version", "2099-01-01"),
			body: `{"jsonrpc":"2.0","id":6,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}`, wantStatus: 400, wantCode: CodeUnsupportedVersion},
		{name: "missing capability", method: "POST", header: stateless("tools/call", "test_missing_capability"),
			body: `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"test_missing_capability",` + meta2026 + `}}`, wantStatus: 400, wantCode: CodeMissingCapability},
		{name: "2026 notification", method: "POST", body: `{"jsonrpc":"2.0","method":"notifications/whatever","params":{` + meta2026 + `}}`, wantStatus: 202},
		{name: "request without session or _meta", method: "POST", header: map[string]string{"MCP-Protocol-Version": "2025-11-25"}, body: `{"jsonrpc":"2.0","id":8,"method":"tools/list"}`, wantStatus: 400},
		{name: "unknown session", method: "POST", header: map[string]string{"Mcp-Session-Id": "nope", "MCP-Protocol-Version": "2025-11-25"}, body: `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`, wantStatus: 404},
		{name: "GET of an unknown session", method: "GET", header: map[string]string{"Mcp-Session-Id": "nope"}, wantStatus: 404},
		{name: "DELETE of an unknown session", method: "DELETE", header: map[string]string{"Mcp-Session-Id": "nope"}, wantStatus: 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := s.url
			if tt.header["X-Path"] != "" {
				s.url = strings.TrimSuffix(s.url, "/mcp") + "/other"
				defer func() { s.url = u }()
				tt.wantStatus = 404
			}
			resp := s.do(context.Background(), tt.method, tt.header, tt.body)
			body := readBody(t, resp)
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("status %d, want %d; body %s", resp.StatusCode, tt.wantStatus, body)
			}
			if tt.wantCode != 0 {
				var msg struct {
					Error *RPCError `json:"error"`
				}
				if err := json.Unmarshal([]byte(body), &msg); err != nil || msg.Error == nil || msg.Error.Code != tt.wantCode {
					t.Fatalf("body %s, want a JSON-RPC error %d", body, tt.wantCode)
				}
			}
			if !strings.Contains(body, tt.wantInBody) {
				t.Fatalf("body %s, want it to contain %s", body, tt.wantInBody)
			}
			if k := tt.wantHeader[0]; k != "" && resp.Header.Get(k) != tt.wantHeader[1] {
				t.Fatalf("%s: %q, want %q", k, resp.Header.Get(k), tt.wantHeader[1])
			}
		})
	}
}

func TestHTTPParamHeaders(t *testing.T) {
	rt := newTestRuntime(t, testOptions())
	schema := `{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"n":{"type":"integer","x-mcp-header":"N"},"opt":{"type":"object","properties":{"flag":{"type":"boolean","x-mcp-header":"Flag"}}}},"required":["region"]}`
	if err := rt.AddTool(Tool{Name: "where", InputSchema: json.RawMessage(schema)}, func(context.Context, *HandlerRequest) (*ToolResult, error) {
		return TextResult("ok"), nil
	}); err != nil {
		t.Fatal(err)
	}
	s := newHTTPTestServer(t, rt, HTTPOptions{})
	call := func(args string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"where","arguments":` + args + `,` + meta2026 + `}}`
	}
	tests := []struct {
		name   string
		args   string
		header map[string]string
		want   int
	}{
		{"plain", `{"region":"us-west1"}`, map[string]string{"Mcp-Param-Region": "us-west1"}, 200},
		{"Base64", `{"region":"Hello, 世界"}`, map[string]string{"Mcp-Param-Region": "=?base64?SGVsbG8sIOS4lueVjA==?="}, 200},
		{"bad padding", `{"region":"Hello"}`, map[string]string{"Mcp-Param-Region": "=?base64?SGVsbG8?="}, 400},
		{"bad characters", `{"region":"Hello"}`, map[string]string{"Mcp-Param-Region": "=?base64?SGVs!!!bG8=?="}, 400},
		{"no suffix is literal", `{"region":"=?base64?SGVsbG8="}`, map[string]string{"Mcp-Param-Region": "=?base64?SGVsbG8="}, 200},
		{"missing", `{"region":"x"}`, nil, 400},
		{"mismatch", `{"region":"x"}`, map[string]string{"Mcp-Param-Region": "y"}, 400},
		{"integer compared as a number", `{"region":"x","n":42}`, map[string]string{"Mcp-Param-Region": "x", "Mcp-Param-N": "42.0"}, 200},
		{"integer mismatch", `{"region":"x","n":42}`, map[string]string{"Mcp-Param-Region": "x", "Mcp-Param-N": "43"}, 400},
		{"nested boolean", `{"region":"x","opt":{"flag":true}}`, map[string]string{"Mcp-Param-Region": "x", "Mcp-Param-Flag": "true"}, 200},
		{"nested boolean missing", `{"region":"x","opt":{"flag":false}}`, map[string]string{"Mcp-Param-Region": "x"}, 400},
		{"null value needs no header", `{"region":"x","n":null}`, map[string]string{"Mcp-Param-Region": "x"}, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := stateless("tools/call", "where")
			for k, v := range tt.header {
				h[k] = v
			}
			resp := s.post(h, call(tt.args))
			body := readBody(t, resp)
			if resp.StatusCode != tt.want {
				t.Fatalf("status %d, want %d; body %s", resp.StatusCode, tt.want, body)
			}
			if tt.want == 400 && !strings.Contains(body, `"code":-32020`) {
				t.Fatalf("body %s, want -32020", body)
			}
		})
	}
}

func TestHTTPStatelessProgressStreamsBeforeResult(t *testing.T) {
	s := newHTTPTestServer(t, nil, HTTPOptions{})
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"progressToken":"p1"}`
	resp := s.post(stateless("tools/call", "test_tool_with_progress"),
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"test_tool_with_progress","arguments":{},`+meta+`}}`)
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	events := newSSEReader(t, resp)
	for _, want := range []string{`"progress":0`, `"progress":50`, `"progress":100`} {
		if got := events.nextMessage(); !strings.Contains(got, `"method":"notifications/progress"`) || !strings.Contains(got, want) {
			t.Fatalf("event %s, want progress %s", got, want)
		}
	}
	if got := events.nextMessage(); !strings.Contains(got, `"id":7,"result":`) || !strings.Contains(got, "Progress test completed") {
		t.Fatalf("last event %s, want the result", got)
	}
	if _, err := events.next(); err != io.EOF {
		t.Fatalf("after the result: %v, want the end of the stream", err)
	}
}

// legacySession runs initialize and notifications/initialized and returns
// the session's headers.
func (s *httpTestServer) legacySession(version, capabilities string) map[string]string {
	s.t.Helper()
	return s.legacySessionWith(version, capabilities, nil)
}

// legacySessionWith is legacySession with more headers on every request,
// initialize included; they are in the headers it returns.
func (s *httpTestServer) legacySessionWith(version, capabilities string, extra map[string]string) map[string]string {
	s.t.Helper()
	resp := s.post(extra, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+version+`","capabilities":`+capabilities+`,"clientInfo":{"name":"t","version":"1"}}}`)
	body := readBody(s.t, resp)
	id := resp.Header.Get(headerSessionID)
	if resp.StatusCode != 200 || id == "" || !strings.Contains(body, `"protocolVersion":"`+version+`"`) {
		s.t.Fatalf("initialize: status %d, session %q, body %s", resp.StatusCode, id, body)
	}
	for _, c := range id {
		if c < 0x21 || c > 0x7e {
			s.t.Fatalf("session id %q has a character outside visible ASCII", id)
		}
	}
	h := map[string]string{headerSessionID: id, "MCP-Protocol-Version": version}
	for k, v := range extra {
		h[k] = v
	}
	if version == ProtocolVersion20250326 {
		delete(h, "MCP-Protocol-Version") // that header came in 2025-06-18
	}
	resp = s.post(h, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if body := readBody(s.t, resp); resp.StatusCode != http.StatusAccepted || body != "" {
		s.t.Fatalf("notifications/initialized: status %d, body %q; want 202 and no body", resp.StatusCode, body)
	}
	return h
}

func TestHTTPLegacySessionLifecycle(t *testing.T) {
	for _, version := range []string{ProtocolVersion20251125, ProtocolVersion20250618, ProtocolVersion20250326} {
		t.Run(version, func(t *testing.T) {
			s := newHTTPTestServer(t, nil, HTTPOptions{})
			h := s.legacySession(version, `{}`)

			resp := s.post(h, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
			if body := readBody(t, resp); resp.StatusCode != 200 || !strings.Contains(body, `"name":"echo"`) || strings.Contains(body, "resultType") {
				t.Fatalf("tools/list: status %d, body %s", resp.StatusCode, body)
			}
			if resp.Header.Get(headerSessionID) != h[headerSessionID] {
				t.Fatalf("tools/list answered with session %q", resp.Header.Get(headerSessionID))
			}

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			get := s.do(ctx, http.MethodGet, map[string]string{headerSessionID: h[headerSessionID], "Accept": "text/event-stream"}, "")
			defer get.Body.Close()
			if get.StatusCode != 200 {
				t.Fatalf("GET: status %d", get.StatusCode)
			}
			events := newSSEReader(t, get)
			if version == ProtocolVersion20251125 {
				if ev, err := events.next(); err != nil || ev.id == "" || ev.data != "" || !ev.retry {
					t.Fatalf("first event %+v (%v), want the priming event: an id, a retry, no data", ev, err)
				}
			}
			second := s.do(ctx, http.MethodGet, map[string]string{headerSessionID: h[headerSessionID], "Accept": "text/event-stream"}, "")
			if readBody(t, second); second.StatusCode != http.StatusConflict {
				t.Fatalf("second GET: status %d, want 409", second.StatusCode)
			}
			if err := s.rt.AddTool(Tool{Name: "late"}, func(context.Context, *HandlerRequest) (*ToolResult, error) { return TextResult(""), nil }); err != nil {
				t.Fatal(err)
			}
			if got := events.nextMessage(); got != `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}` {
				t.Fatalf("GET stream: %s, want tools/list_changed", got)
			}

			resp = s.do(context.Background(), http.MethodDelete, h, "")
			if readBody(t, resp); resp.StatusCode != http.StatusNoContent {
				t.Fatalf("DELETE: status %d", resp.StatusCode)
			}
			if _, err := events.next(); err == nil {
				t.Fatal("the GET stream is still open after DELETE")
			}
			resp = s.post(h, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
			if readBody(t, resp); resp.StatusCode != http.StatusNotFound {
				t.Fatalf("tools/list after DELETE: status %d, want 404", resp.StatusCode)
			}
		})
	}
}

func TestHTTPLegacySessionState(t *testing.T) {
	s := newHTTPTestServer(t, nil, HTTPOptions{})
	h := s.legacySession(ProtocolVersion20251125, `{}`)
	other := s.legacySession(ProtocolVersion20251125, `{}`)
	// The log level is the session's: test_logging_tool logs at info.
	resp := s.post(h, `{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"info"}}`)
	if body := readBody(t, resp); resp.StatusCode != 200 || body != `{"jsonrpc":"2.0","id":2,"result":{}}`+"\n" {
		t.Fatalf("logging/setLevel: %d %s", resp.StatusCode, body)
	}
	call := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"test_logging_tool","arguments":{}}}`
	resp = s.post(h, call)
	defer resp.Body.Close()
	events := newSSEReader(t, resp)
	var logged sseEvent
	for logged.data == "" {
		var err error
		if logged, err = events.next(); err != nil {
			t.Fatal(err)
		}
	}
	if !strings.Contains(logged.data, `"method":"notifications/message"`) || logged.id == "" {
		t.Fatalf("first event %+v, want the log message with an id", logged)
	}
	if got := events.nextMessage(); !strings.Contains(got, `"id":3,"result"`) {
		t.Fatalf("second event %s, want the result", got)
	}
	if _, err := events.next(); err != io.EOF {
		t.Fatalf("after the result: %v, want the end of the stream", err)
	}
	// The client got the whole stream: the session keeps nothing to resume.
	resume := s.do(context.Background(), http.MethodGet, map[string]string{headerSessionID: h[headerSessionID], "Accept": "text/event-stream", headerLastEventID: logged.id}, "")
	if readBody(t, resume); resume.StatusCode != http.StatusBadRequest {
		t.Fatalf("resuming a delivered stream: status %d, want 400", resume.StatusCode)
	}
	resp = s.post(other, call)
	if body := readBody(t, resp); resp.Header.Get("Content-Type") != "application/json" || strings.Contains(body, "notifications/message") {
		t.Fatalf("the other session got %s %s, want only the result", resp.Header.Get("Content-Type"), body)
	}
	// Duplicate in-flight ids are refused within a session, but other
	// sessions have their own ids.
	resp = s.post(map[string]string{headerSessionID: h[headerSessionID], "MCP-Protocol-Version": "2025-06-18"}, `{"jsonrpc":"2.0","id":4,"method":"ping"}`)
	if readBody(t, resp); resp.StatusCode != 400 {
		t.Fatalf("a version header other than the negotiated one: status %d, want 400", resp.StatusCode)
	}
}

func TestHTTPElicitationRoundTrip(t *testing.T) {
	s := newHTTPTestServer(t, nil, HTTPOptions{})
	h := s.legacySession(ProtocolVersion20251125, `{"elicitation":{}}`)
	resp := s.post(h, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"test_elicitation","arguments":{"message":"Who are you?"}}}`)
	defer resp.Body.Close()
	events := newSSEReader(t, resp)
	var ask struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if got := events.nextMessage(); json.Unmarshal([]byte(got), &ask) != nil || ask.Method != "elicitation/create" || ask.ID == nil {
		t.Fatalf("event %s, want an elicitation/create request", got)
	}
	answer := s.post(h, `{"jsonrpc":"2.0","id":`+string(ask.ID)+`,"result":{"action":"accept","content":{"username":"ada","email":"ada@example.com"}}}`)
	if body := readBody(t, answer); answer.StatusCode != http.StatusAccepted || body != "" {
		t.Fatalf("posting the response: status %d, body %q; want 202", answer.StatusCode, body)
	}
	if got := events.nextMessage(); !strings.Contains(got, `"id":5,"result"`) || !strings.Contains(got, "accept") {
		t.Fatalf("final event %s, want the tool's result with the client's answer", got)
	}
}

func TestHTTPClientDisconnectCancelsRequest(t *testing.T) {
	rt := newTestRuntime(t, testOptions())
	started, cancelled := make(chan struct{}), make(chan error, 1)
	if err := rt.AddTool(Tool{Name: "block"}, func(ctx context.Context, _ *HandlerRequest) (*ToolResult, error) {
		close(started)
		<-ctx.Done()
		cancelled <- ctx.Err()
		return nil, ctx.Err()
	}); err != nil {
		t.Fatal(err)
	}
	s := newHTTPTestServer(t, rt, HTTPOptions{RequestTimeout: -1})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"block",`+meta2026+`}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range stateless("tools/call", "block") {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	<-started
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("client: %v, want its own cancellation", err)
	}
	select {
	case err := <-cancelled:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("handler's context: %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the handler was not cancelled when the client went away")
	}
}

// countingReader yields n bytes of 'x', counting what was read.
type countingReader struct {
	n    int64
	read atomic.Int64
}

func (r *countingReader) Read(p []byte) (int, error) {
	left := r.n - r.read.Load()
	if left <= 0 {
		return 0, io.EOF
	}
	n := min(int64(len(p)), left)
	for i := range p[:n] {
		p[i] = 'x'
	}
	r.read.Add(n)
	return int(n), nil
}

func TestHTTPBodyOverLimit(t *testing.T) {
	const limit = 1000
	s := newHTTPTestServer(t, nil, HTTPOptions{MaxBodyBytes: limit})
	for _, chunked := range []bool{false, true} {
		body := &countingReader{n: 64 << 20}
		req, _ := http.NewRequest(http.MethodPost, s.url, body)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.ContentLength = body.n
		if chunked {
			req.ContentLength = -1
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("chunked %v: %v", chunked, err)
		}
		text := readBody(t, resp)
		if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(text, "1000-byte limit") {
			t.Fatalf("chunked %v: status %d, body %s; want 413", chunked, resp.StatusCode, text)
		}
		if read := body.read.Load(); read > 8<<20 {
			t.Fatalf("chunked %v: the client sent %d of %d bytes; the server should stop reading past the limit", chunked, read, body.n)
		}
	}
}

func TestNewHTTPHandlerValidatesOptions(t *testing.T) {
	rt := newTestRuntime(t, testOptions())
	e := newTestExecutor(t, ExecutorOptions{})
	for _, opts := range []HTTPOptions{
		{MaxBodyBytes: -1},
		{MaxSessions: -1},
		{KeepAlive: -1},
		{AllowedOrigins: []string{"example.com"}},
		{Executor: e, MaxConcurrency: 4},
		{MaxConcurrency: -1},
	} {
		if h, err := NewHTTPHandler(rt, opts); err == nil {
			h.Close()
			t.Errorf("NewHTTPHandler(%+v) succeeded, want an error", opts)
		}
	}
	if _, err := NewHTTPHandler(nil, HTTPOptions{}); err == nil {
		t.Error("NewHTTPHandler(nil) succeeded")
	}
}

func TestHTTPLegacyStreamResumesAfterLastEventID(t *testing.T) {
	rt := newTestRuntime(t, testOptions())
	proceed := make(chan struct{})
	if err := rt.AddTool(Tool{Name: "steps"}, func(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
		if err := req.ReportProgress(ctx, Progress{Progress: 1}); err != nil {
			return nil, err
		}
		<-proceed
		if err := req.ReportProgress(ctx, Progress{Progress: 2}); err != nil {
			return nil, err
		}
		return TextResult("all steps done"), nil
	}); err != nil {
		t.Fatal(err)
	}
	s := newHTTPTestServer(t, rt, HTTPOptions{})
	h := s.legacySession(ProtocolVersion20251125, `{}`)
	ctx, cancel := context.WithCancel(context.Background())
	resp := s.do(ctx, http.MethodPost, h, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"steps","_meta":{"progressToken":"t"}}}`)
	events := newSSEReader(t, resp)
	priming, err := events.next()
	if err != nil || priming.id == "" || priming.data != "" || !priming.retry {
		t.Fatalf("first event %+v (%v), want the priming event", priming, err)
	}
	first, err := events.next()
	if err != nil || first.id == "" || !strings.Contains(first.data, `"progress":1`) {
		t.Fatalf("second event %+v (%v), want progress 1 with an id", first, err)
	}
	cancel() // the client loses the connection; the request runs on
	resp.Body.Close()
	close(proceed)

	resumed := s.do(context.Background(), http.MethodGet, map[string]string{
		headerSessionID: h[headerSessionID], "Accept": "text/event-stream", headerLastEventID: first.id,
	}, "")
	defer resumed.Body.Close()
	if resumed.StatusCode != 200 {
		t.Fatalf("GET with Last-Event-ID: status %d", resumed.StatusCode)
	}
	replay := newSSEReader(t, resumed)
	if ev, err := replay.next(); err != nil || !strings.Contains(ev.data, `"progress":2`) || ev.id == "" || ev.id == first.id {
		t.Fatalf("first replayed event %+v (%v), want progress 2 with a new id", ev, err)
	}
	if ev, err := replay.next(); err != nil || !strings.Contains(ev.data, `"id":9,"result"`) || !strings.Contains(ev.data, "all steps done") {
		t.Fatalf("second replayed event %+v (%v), want the result", ev, err)
	}
	if _, err := replay.next(); err != io.EOF {
		t.Fatalf("after the result: %v, want the end of the resumed stream", err)
	}
	bad := s.do(context.Background(), http.MethodGet, map[string]string{
		headerSessionID: h[headerSessionID], "Accept": "text/event-stream", headerLastEventID: "999-1",
	}, "")
	if readBody(t, bad); bad.StatusCode != http.StatusBadRequest {
		t.Fatalf("GET with an unknown Last-Event-ID: status %d, want 400", bad.StatusCode)
	}
}

func TestHTTPListenStream(t *testing.T) {
	s := newHTTPTestServer(t, nil, HTTPOptions{MaxSubscriptions: 1})
	listen := `{"jsonrpc":"2.0","id":"L","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` + meta2026 + `}}`
	resp := s.post(stateless("subscriptions/listen", ""), listen)
	defer resp.Body.Close()
	events := newSSEReader(t, resp)
	if got := events.nextMessage(); !strings.Contains(got, "notifications/subscriptions/acknowledged") || !strings.Contains(got, `"io.modelcontextprotocol/subscriptionId":"L"`) {
		t.Fatalf("first event %s, want the acknowledgement", got)
	}
	second := s.post(stateless("subscriptions/listen", ""), strings.Replace(listen, `"L"`, `"M"`, 1))
	if body := readBody(t, second); second.StatusCode != http.StatusInternalServerError || !strings.Contains(body, "subscription capacity") {
		t.Fatalf("a listen stream beyond MaxSubscriptions: status %d, body %s", second.StatusCode, body)
	}
	if err := s.rt.AddTool(Tool{Name: "late"}, func(context.Context, *HandlerRequest) (*ToolResult, error) { return TextResult(""), nil }); err != nil {
		t.Fatal(err)
	}
	if got := events.nextMessage(); !strings.Contains(got, "notifications/tools/list_changed") || !strings.Contains(got, `subscriptionId":"L"`) {
		t.Fatalf("event %s, want the tagged tools/list_changed", got)
	}
	shut := make(chan error, 1)
	go func() { shut <- s.h.Shutdown(context.Background()) }()
	if _, err := events.next(); err == nil {
		t.Fatal("the listen stream is still open after Shutdown")
	}
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}

func TestHTTPGetStreamKeepAlive(t *testing.T) {
	s := newHTTPTestServer(t, nil, HTTPOptions{KeepAlive: time.Millisecond})
	h := s.legacySession(ProtocolVersion20250618, `{}`)
	resp := s.do(context.Background(), http.MethodGet, map[string]string{headerSessionID: h[headerSessionID], "Accept": "text/event-stream"}, "")
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	line, err := r.ReadString('\n')
	if err != nil || line != ": keep-alive\n" {
		t.Fatalf("first line %q (%v), want a keep-alive comment", line, err)
	}
}

// A session idle for SessionIdleTimeout has ended: a request to it is
// answered 404, and its place is free.
func TestHTTPSessionIdleExpiry(t *testing.T) {
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	idle := newHTTPTestServer(t, nil, HTTPOptions{MaxSessions: 1, SessionIdleTimeout: time.Nanosecond})
	resp := idle.post(nil, init)
	readBody(t, resp)
	id := resp.Header.Get(headerSessionID)
	if resp.StatusCode != 200 || id == "" {
		t.Fatalf("initialize: status %d, session %q", resp.StatusCode, id)
	}
	resp = idle.post(map[string]string{headerSessionID: id}, `{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	if readBody(t, resp); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("a request to an expired session: status %d, want 404", resp.StatusCode)
	}
	resp = idle.post(nil, init)
	if readBody(t, resp); resp.StatusCode != 200 || resp.Header.Get(headerSessionID) == "" {
		t.Fatalf("initialize after the only session expired: status %d, want a new session", resp.StatusCode)
	}
}

func TestHTTPExecutorClosedAnswersRunningRequest(t *testing.T) {
	rt := newTestRuntime(t, testOptions())
	started := make(chan struct{})
	if err := rt.AddTool(Tool{Name: "block"}, func(ctx context.Context, _ *HandlerRequest) (*ToolResult, error) {
		close(started)
		<-ctx.Done()
		return nil, ctx.Err()
	}); err != nil {
		t.Fatal(err)
	}
	e := newTestExecutor(t, ExecutorOptions{})
	s := newHTTPTestServer(t, rt, HTTPOptions{Executor: e})
	go func() {
		<-started
		e.Close()
	}()
	resp := s.post(stateless("tools/call", "block"), `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"block",`+meta2026+`}}`)
	if body := readBody(t, resp); resp.StatusCode != http.StatusInternalServerError || !strings.Contains(body, "Request worker failed") {
		t.Fatalf("status %d, body %s; want 500 Request worker failed", resp.StatusCode, body)
	}
}

func TestHTTPResourceSubscriptionsAreSessions(t *testing.T) {
	s := newHTTPTestServer(t, nil, HTTPOptions{})
	subscribed, other := s.legacySession(ProtocolVersion20250618, `{}`), s.legacySession(ProtocolVersion20250618, `{}`)
	resp := s.post(subscribed, `{"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":"test://static-text"}}`)
	if body := readBody(t, resp); resp.StatusCode != 200 || !strings.Contains(body, `"result":{}`) {
		t.Fatalf("resources/subscribe: %d %s", resp.StatusCode, body)
	}
	open := func(h map[string]string) *sseReader {
		resp := s.do(context.Background(), http.MethodGet, map[string]string{headerSessionID: h[headerSessionID], "Accept": "text/event-stream"}, "")
		t.Cleanup(func() { resp.Body.Close() })
		return newSSEReader(t, resp)
	}
	a, b := open(subscribed), open(other)
	s.rt.NotifyResourceUpdated("test://static-text")
	s.rt.AnnounceListChanged(ToolsChanged)
	if got := a.nextMessage(); got != `{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"test://static-text"}}` {
		t.Fatalf("subscribed session: %s, want resources/updated", got)
	}
	for name, events := range map[string]*sseReader{"subscribed": a, "other": b} {
		if got := events.nextMessage(); got != `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}` {
			t.Fatalf("%s session: %s, want tools/list_changed (and no update before it)", name, got)
		}
	}
}

func TestHTTPSessionSubscriptionLimit(t *testing.T) {
	s := newHTTPTestServer(t, nil, HTTPOptions{MaxSubscriptions: 1})
	h := s.legacySession(ProtocolVersion20251125, `{}`)
	for i, tt := range []struct {
		uri, want string
	}{
		{"test://static-text", `"result":{}`},
		{"test://static-text", `"result":{}`}, // subscribed already: it does not count twice
		{"test://static-binary", `"code":-32602`},
	} {
		resp := s.post(h, `{"jsonrpc":"2.0","id":`+string(rune('2'+i))+`,"method":"resources/subscribe","params":{"uri":"`+tt.uri+`"}}`)
		if body := readBody(t, resp); !strings.Contains(body, tt.want) {
			t.Fatalf("subscribe %s: %s, want %s", tt.uri, body, tt.want)
		}
	}
}

func TestHTTPInflightBytesBudget(t *testing.T) {
	rt := newTestRuntime(t, testOptions())
	started, release := make(chan struct{}), make(chan struct{})
	if err := rt.AddTool(Tool{Name: "hold"}, func(ctx context.Context, _ *HandlerRequest) (*ToolResult, error) {
		close(started)
		<-release
		return TextResult("held"), nil
	}); err != nil {
		t.Fatal(err)
	}
	s := newHTTPTestServer(t, rt, HTTPOptions{MaxInflightBytes: 300})
	hold := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"hold",` + meta2026 + `}}`
	first := make(chan string, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, s.url, strings.NewReader(hold))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range stateless("tools/call", "hold") {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			first <- err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		first <- string(b)
	}()
	<-started
	resp := s.post(stateless("tools/call", "hold"), strings.Replace(hold, `"id":1`, `"id":2,"pad":"`+strings.Repeat("x", 100)+`"`, 1))
	// Refused before it is read, so with no id to answer.
	if body := readBody(t, resp); resp.StatusCode != http.StatusServiceUnavailable || strings.TrimSpace(body) != `{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"Server execution capacity exhausted"}}` {
		t.Fatalf("a body beyond the in-flight budget: status %d, body %s", resp.StatusCode, body)
	}
	close(release)
	if body := <-first; !strings.Contains(body, "held") {
		t.Fatalf("first request: %s", body)
	}
}

func TestHTTPStalledClientFailsTheStream(t *testing.T) {
	ended := make(chan error, 1)
	big := json.RawMessage(`{"pad":"` + strings.Repeat("x", 64<<10) + `"}`)
	d := DispatcherFunc(func(ctx context.Context, req *Request) Reply {
		for req.ID != nil {
			if err := req.Peer.Notify(ctx, "notifications/flood", big); err != nil {
				ended <- err
				return Reply{Error: internalError()}
			}
		}
		return Reply{}
	})
	h, err := NewHTTPHandler(d, HTTPOptions{WriteTimeout: 50 * time.Millisecond, RequestTimeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer func() { srv.Close(); h.Close() }()
	s := &httpTestServer{t: t, url: srv.URL + "/mcp"}
	resp := s.post(stateless("flood", ""), `{"jsonrpc":"2.0","id":1,"method":"flood","params":{`+meta2026+`}}`)
	defer resp.Body.Close()
	// Never read: the server's writes stall, time out, and end the request.
	select {
	case err := <-ended:
		if err == nil {
			t.Fatal("Notify succeeded")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the handler is still writing to a client that stopped reading")
	}
}

// A stream resumed while its first connection is still open goes on only on
// the resuming one: no message is sent on two streams.
func TestHTTPResumedStreamLeavesItsFirstConnection(t *testing.T) {
	rt := newTestRuntime(t, testOptions())
	proceed := make(chan struct{})
	if err := rt.AddTool(Tool{Name: "steps"}, func(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
		if err := req.ReportProgress(ctx, Progress{Progress: 1}); err != nil {
			return nil, err
		}
		<-proceed
		return TextResult("done"), nil
	}); err != nil {
		t.Fatal(err)
	}
	s := newHTTPTestServer(t, rt, HTTPOptions{})
	h := s.legacySession(ProtocolVersion20250618, `{}`)
	resp := s.post(h, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"steps","_meta":{"progressToken":"t"}}}`)
	defer resp.Body.Close()
	first := newSSEReader(t, resp)
	progress, err := first.next()
	if err != nil || progress.id == "" || !strings.Contains(progress.data, "notifications/progress") {
		t.Fatalf("first event %+v (%v), want progress with an id (2025-06-18 sends no priming event)", progress, err)
	}
	resumed := s.do(context.Background(), http.MethodGet, map[string]string{
		headerSessionID: h[headerSessionID], "Accept": "text/event-stream", headerLastEventID: progress.id,
	}, "")
	defer resumed.Body.Close()
	close(proceed)
	if got := newSSEReader(t, resumed).nextMessage(); !strings.Contains(got, `"id":9,"result"`) {
		t.Fatalf("resumed stream: %s, want the result", got)
	}
	if ev, err := first.next(); err != io.EOF {
		t.Fatalf("first connection: %+v (%v), want its end without the result", ev, err)
	}
}

func TestHTTPAllowedHostsAndOrigins(t *testing.T) {
	s := newHTTPTestServer(t, nil, HTTPOptions{AllowedHosts: []string{"mcp.example.com"}, AllowedOrigins: []string{"https://app.example.com"}})
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + meta2026 + `}}`
	for _, tt := range []struct {
		host, origin string
		want         int
	}{
		{"mcp.example.com", "", 200},
		{"MCP.example.com:8443", "", 200},
		{"other.example.com", "", 403},
		{"localhost", "https://app.example.com", 200},
		{"localhost", "https://evil.example.com", 403},
		{"localhost", "null", 403},
		{"[::1]:9", "http://[::1]:9", 200},
	} {
		h := stateless("tools/list", "")
		h["Host"] = tt.host
		if tt.origin != "" {
			h["Origin"] = tt.origin
		}
		resp := s.post(h, list)
		if readBody(t, resp); resp.StatusCode != tt.want {
			t.Errorf("Host %q, Origin %q: status %d, want %d", tt.host, tt.origin, resp.StatusCode, tt.want)
		}
	}
}

// The Runtime counts its tools whose schemas name an x-mcp-header, as tools
// are added and removed: while it counts none, the HTTP transport looks up
// no schema for a tools/call.
func TestRuntimeCountsParamHeaderTools(t *testing.T) {
	rt := newTestRuntime(t, testOptions())
	handler := func(context.Context, *HandlerRequest) (*ToolResult, error) { return TextResult("ok"), nil }
	start := rt.paramHeaderTools()
	add := func(name, schema string) {
		t.Helper()
		if err := rt.AddTool(Tool{Name: name, InputSchema: json.RawMessage(schema)}, handler); err != nil {
			t.Fatal(err)
		}
	}
	annotated := `{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`
	add("plain", `{"type":"object","properties":{"region":{"type":"string"}}}`)
	add("where", annotated)
	if err := rt.AddTool(Tool{Name: "where", InputSchema: json.RawMessage(annotated)}, handler); err == nil {
		t.Fatal("a second tool named where was added")
	}
	if got := rt.paramHeaderTools(); got != start+1 {
		t.Fatalf("after adding one annotated tool (and one refused): %d, want %d", got, start+1)
	}
	rt.RemoveTool("plain")
	rt.RemoveTool("nosuch")
	if got := rt.paramHeaderTools(); got != start+1 {
		t.Fatalf("after removing a tool without annotations and none: %d, want %d", got, start+1)
	}
	rt.RemoveTool("where")
	if got := rt.paramHeaderTools(); got != start {
		t.Fatalf("after removing the annotated tool: %d, want %d", got, start)
	}
}
