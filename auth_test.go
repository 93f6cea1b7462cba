package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// testResource is the resource URI the gate tests configure; the server
// itself listens on loopback.
const testResource = "https://mcp.example.test/mcp"

// staticVerifier accepts the tokens it maps to principals and refuses the
// rest with the reason "unknown token".
type staticVerifier map[string]*Principal

func (v staticVerifier) VerifyToken(_ context.Context, token string) (*Principal, error) {
	if p, ok := v[token]; ok {
		return p, nil
	}
	return nil, tokenError("unknown token", nil)
}

// testPrincipals: alice (two tokens, one with mcp:admin), bob, and a client
// acting on its own behalf whose client id is "alice".
var testPrincipals = staticVerifier{
	"alice-1":      {Subject: "alice", ClientID: "app", Scopes: []string{"mcp:read"}},
	"alice-2":      {Subject: "alice", ClientID: "app", Scopes: []string{"mcp:read", "mcp:admin"}},
	"bob":          {Subject: "bob", ClientID: "app", Scopes: []string{"mcp:read"}},
	"client-alice": {ClientID: "alice", Scopes: []string{"mcp:read"}},
	"no-scope":     {Subject: "carol", ClientID: "app"},
}

// newAuthTestServer serves the reference catalog plus a "whoami" tool behind
// the gate with testPrincipals, mcp:read required and mcp:admin for echo.
func newAuthTestServer(t *testing.T, opts HTTPOptions) *httpTestServer {
	t.Helper()
	opts.Logger = quietLogger()
	opts.Auth = &AuthOptions{
		Resource:             testResource,
		AuthorizationServers: []string{"https://as.example.test"},
		Verifier:             testPrincipals,
		Scopes:               []string{"mcp:read"},
		ToolScopes:           map[string][]string{"echo": {"mcp:admin"}},
	}
	return newHTTPTestServer(t, newWhoamiRuntime(t), opts)
}

// newWhoamiRuntime is the reference catalog plus a "whoami" tool, which
// answers the principal of its request and its scopes.
func newWhoamiRuntime(t *testing.T) *Runtime {
	t.Helper()
	rt := newHTTPCatalogRuntime(t)
	err := rt.AddTool(Tool{Name: "whoami"}, func(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
		fromCtx := PrincipalFromContext(ctx)
		if req.Principal == nil || fromCtx != req.Principal {
			return TextResult("no principal"), nil
		}
		return TextResult("principal " + req.Principal.ID() + " scopes " + strings.Join(req.Principal.Scopes, " ")), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

// bearer returns header with Authorization: Bearer token added.
func bearer(token string, header map[string]string) map[string]string {
	h := map[string]string{"Authorization": "Bearer " + token}
	for k, v := range header {
		h[k] = v
	}
	return h
}

const (
	wantMetadataURL = `resource_metadata="https://mcp.example.test/.well-known/oauth-protected-resource/mcp"`
	echoCall2026    = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},` + meta2026 + `}}`
)

// TestAuthMetadata: ProtectedResourceMetadata names the path the
// challenges point to; mounted there, its handler answers without a token
// and describes the resource, and refuses other methods. Without Auth there
// is none.
func TestAuthMetadata(t *testing.T) {
	s := newAuthTestServer(t, HTTPOptions{})
	base := strings.TrimSuffix(s.url, "/mcp")
	want := `{"resource":"https://mcp.example.test/mcp","authorization_servers":["https://as.example.test"],"scopes_supported":["mcp:read","mcp:admin"],"bearer_methods_supported":["header"]}`
	if path, _ := s.h.ProtectedResourceMetadata(); !strings.Contains(wantMetadataURL, `"https://mcp.example.test`+path+`"`) {
		t.Fatalf("ProtectedResourceMetadata's path %q, want that of the challenges' %s", path, wantMetadataURL)
	}
	plain := newHTTPTestServer(t, nil, HTTPOptions{})
	if path, handler := plain.h.ProtectedResourceMetadata(); path != "" || handler != nil {
		t.Fatalf("without Auth: ProtectedResourceMetadata returned %q, %v; want none", path, handler)
	}
	for _, path := range []string{"/.well-known/oauth-protected-resource/mcp"} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		if body := readBody(t, resp); resp.StatusCode != 200 || body != want || resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("GET %s: status %d, type %q, body %s; want 200 and %s", path, resp.StatusCode, resp.Header.Get("Content-Type"), body, want)
		}
		resp, err = http.Post(base+path, "application/json", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		if readBody(t, resp); resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("POST %s: status %d, want 405", path, resp.StatusCode)
		}
	}
}

// TestAuthChallenges: what the gate answers each kind of request, with its
// exact challenge.
func TestAuthChallenges(t *testing.T) {
	s := newAuthTestServer(t, HTTPOptions{AllowedHosts: []string{"evil.example"}})
	tests := []struct {
		name      string
		url       string // appended to the endpoint's URL
		header    map[string]string
		body      string
		status    int
		challenge string // "" when none is expected
	}{
		{name: "no token", header: stateless("tools/call", "whoami"), status: 401,
			challenge: `Bearer ` + wantMetadataURL + `, scope="mcp:read"`},
		{name: "another scheme", header: map[string]string{"Authorization": "Basic YWxpY2U6cHc="}, status: 401,
			challenge: `Bearer ` + wantMetadataURL + `, scope="mcp:read"`},
		{name: "unknown token", header: bearer("forged", stateless("tools/call", "whoami")), status: 401,
			challenge: `Bearer error="invalid_token", error_description="unknown token", ` + wantMetadataURL + `, scope="mcp:read"`},
		{name: "not a token68", header: map[string]string{"Authorization": "Bearer a b"}, status: 400,
			challenge: `Bearer error="invalid_request", error_description="the Bearer credential is not a token68", ` + wantMetadataURL + `, scope="mcp:read"`},
		{name: "token in the query string", url: "?access_token=alice-1", header: stateless("tools/call", "whoami"), status: 400,
			challenge: `Bearer error="invalid_request", error_description="access tokens are accepted in the Authorization header only", ` + wantMetadataURL + `, scope="mcp:read"`},
		{name: "token in the query string and the header", url: "?access_token=alice-1", header: bearer("alice-1", stateless("tools/call", "whoami")), status: 400,
			challenge: `Bearer error="invalid_request", error_description="access tokens are accepted in the Authorization header only", ` + wantMetadataURL + `, scope="mcp:read"`},
		{name: "token without the request scope", header: bearer("no-scope", stateless("tools/call", "whoami")), status: 403,
			challenge: `Bearer error="insufficient_scope", error_description="the access token lacks a scope every request needs", ` + wantMetadataURL + `, scope="mcp:read"`},
		{name: "tool scope missing", header: bearer("alice-1", stateless("tools/call", "echo")), body: echoCall2026, status: 403,
			challenge: `Bearer error="insufficient_scope", error_description="the tool echo needs more scopes", ` + wantMetadataURL + `, scope="mcp:read mcp:admin"`},
		{name: "tool scope granted", header: bearer("alice-2", stateless("tools/call", "echo")), body: echoCall2026, status: 200},
		{name: "challenge ignores a spoofed Host", header: map[string]string{"Host": "evil.example"}, status: 401,
			challenge: `Bearer ` + wantMetadataURL + `, scope="mcp:read"`},
		{name: "valid token", header: bearer("alice-1", stateless("tools/call", "whoami")), status: 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := tt.body
			if body == "" {
				body = toolCall("1", "whoami", meta2026)
			}
			req, err := http.NewRequest(http.MethodPost, s.url+tt.url, strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			for k, v := range tt.header {
				if k == "Host" {
					req.Host = v
				} else {
					req.Header.Set(k, v)
				}
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			got := readBody(t, resp)
			if resp.StatusCode != tt.status || resp.Header.Get("WWW-Authenticate") != tt.challenge {
				t.Fatalf("status %d, WWW-Authenticate %q, body %s\nwant %d, %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), got, tt.status, tt.challenge)
			}
			if tt.status != 200 && !strings.Contains(got, `"error":{"code":-32600`) {
				t.Fatalf("body %s, want a JSON-RPC error", got)
			}
		})
	}
}

// TestAuthTwoAuthorizationHeaders: a request with two Authorization headers
// is refused 400 whatever they hold.
func TestAuthTwoAuthorizationHeaders(t *testing.T) {
	s := newAuthTestServer(t, HTTPOptions{})
	req, err := http.NewRequest(http.MethodPost, s.url, strings.NewReader(toolCall("1", "whoami", meta2026)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Add("Authorization", "Bearer alice-1")
	req.Header.Add("Authorization", "Bearer bob")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if readBody(t, resp); resp.StatusCode != 400 || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `error="invalid_request", error_description="more than one Authorization header"`) {
		t.Fatalf("status %d, WWW-Authenticate %q; want 400 invalid_request", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
}

// TestAuthPrincipalReachesHandler: the handler sees the token's principal in
// HandlerRequest and in its context, in both eras.
func TestAuthPrincipalReachesHandler(t *testing.T) {
	s := newAuthTestServer(t, HTTPOptions{})
	body := readBody(t, s.post(bearer("alice-2", stateless("tools/call", "whoami")), toolCall("1", "whoami", meta2026)))
	if !strings.Contains(body, `"text":"principal alice scopes mcp:read mcp:admin"`) {
		t.Fatalf("2026 whoami: %s", body)
	}
	h := s.authSession("client-alice", ProtocolVersion20251125)
	body = readBody(t, s.post(bearer("client-alice", h), toolCall("2", "whoami", "")))
	if !strings.Contains(body, `"text":"principal alice scopes mcp:read"`) {
		t.Fatalf("2025-11-25 whoami: %s", body)
	}
}

// authSession initializes a session with token and returns its headers
// (without the token).
func (s *httpTestServer) authSession(token, version string) map[string]string {
	s.t.Helper()
	resp := s.post(bearer(token, nil), `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+version+`","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	body := readBody(s.t, resp)
	id := resp.Header.Get(headerSessionID)
	if resp.StatusCode != 200 || id == "" {
		s.t.Fatalf("initialize with %s: status %d, session %q, body %s", token, resp.StatusCode, id, body)
	}
	return map[string]string{headerSessionID: id, "MCP-Protocol-Version": version}
}

// TestAuthSessionBelongsToPrincipal: a session belongs to the principal
// that created it, not to its token: another token of the same principal
// keeps it, another principal's token (even a client whose id equals the
// owner's subject) gets 404 on POST, GET and DELETE, and the session lives
// on for its owner.
func TestAuthSessionBelongsToPrincipal(t *testing.T) {
	s := newAuthTestServer(t, HTTPOptions{})
	h := s.authSession("alice-1", ProtocolVersion20251125)
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	if resp := s.post(bearer("alice-2", h), list); resp.StatusCode != 200 || !strings.Contains(readBody(t, resp), `"whoami"`) {
		t.Fatalf("tools/list with alice's other token: status %d", resp.StatusCode)
	}
	for _, intruder := range []string{"bob", "client-alice"} {
		resp := s.post(bearer(intruder, h), list)
		if body := readBody(t, resp); resp.StatusCode != http.StatusNotFound {
			t.Errorf("POST by %s: status %d, body of %d bytes; want 404", intruder, resp.StatusCode, len(body))
		}
		resp = s.do(context.Background(), http.MethodGet, bearer(intruder, map[string]string{headerSessionID: h[headerSessionID], "Accept": "text/event-stream"}), "")
		if resp.Body.Close(); resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET by %s: status %d; want 404", intruder, resp.StatusCode)
		}
		resp = s.do(context.Background(), http.MethodDelete, bearer(intruder, h), "")
		if readBody(t, resp); resp.StatusCode != http.StatusNotFound {
			t.Errorf("DELETE by %s: status %d; want 404", intruder, resp.StatusCode)
		}
	}
	if resp := s.post(bearer("alice-1", h), list); resp.StatusCode != 200 {
		t.Fatalf("tools/list by alice after the intruders: status %d", resp.StatusCode)
	}
	resp := s.do(context.Background(), http.MethodDelete, bearer("alice-2", h), "")
	if readBody(t, resp); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE by alice: status %d, want 204", resp.StatusCode)
	}
}

// TestNewHTTPHandlerValidatesAuth: invalid AuthOptions are errors naming
// the option.
func TestNewHTTPHandlerValidatesAuth(t *testing.T) {
	rt := newTestRuntime(t, testOptions())
	valid := func() *AuthOptions {
		return &AuthOptions{Resource: testResource, AuthorizationServers: []string{"https://as.example.test"}, Verifier: testPrincipals}
	}
	tests := []struct {
		name   string
		change func(*AuthOptions)
		want   string
	}{
		{"no verifier", func(o *AuthOptions) { o.Verifier = nil }, "Auth.Verifier is required"},
		{"no resource", func(o *AuthOptions) { o.Resource = "" }, "Auth.Resource"},
		{"resource over http", func(o *AuthOptions) { o.Resource = "http://mcp.example.test/mcp" }, "must use https"},
		{"resource with a fragment", func(o *AuthOptions) { o.Resource = "https://mcp.example.test/mcp#x" }, "without a fragment"},
		{"no issuer", func(o *AuthOptions) { o.AuthorizationServers = nil }, "at least one issuer"},
		{"issuer over http", func(o *AuthOptions) { o.AuthorizationServers = []string{"http://as.example.test"} }, "must use https"},
		{"issuer with a query", func(o *AuthOptions) { o.AuthorizationServers = []string{"https://as.example.test?x=1"} }, "without query"},
		{"scope with a quote", func(o *AuthOptions) { o.Scopes = []string{`a"b`} }, "is not a scope"},
		{"tool scope with a space", func(o *AuthOptions) { o.ToolScopes = map[string][]string{"echo": {"a b"}} }, "is not a scope"},
	}
	for _, tt := range tests {
		opts := valid()
		tt.change(opts)
		if _, err := NewHTTPHandler(rt, HTTPOptions{Auth: opts}); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want one containing %q", tt.name, err, tt.want)
		}
	}
	opts := valid()
	opts.Resource = "http://127.0.0.1:8080/mcp"
	h, err := NewHTTPHandler(rt, HTTPOptions{Auth: opts})
	if err != nil {
		t.Fatalf("a loopback http resource: %v", err)
	}
	h.Close()
}

// TestAuthMetadataDocumentFields: the document is valid JSON with the
// fields RFC 9728 names, ScopesSupported overriding the default.
func TestAuthMetadataDocumentFields(t *testing.T) {
	g, err := newAuthGate(&AuthOptions{Resource: "https://x.example/", AuthorizationServers: []string{"https://as.example"}, Verifier: testPrincipals,
		ScopesSupported: []string{"a"}, Scopes: []string{"b"}, ResourceName: "X"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(g.metadata, &doc); err != nil {
		t.Fatal(err)
	}
	if doc["resource_name"] != "X" || len(doc["scopes_supported"].([]any)) != 1 || g.resourceMetadata != "https://x.example/.well-known/oauth-protected-resource" {
		t.Fatalf("metadata %s at %s", g.metadata, g.resourceMetadata)
	}
}
