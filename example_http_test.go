package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"
)

// examplePost sends a 2026-07-28 POST to url and prints the answer's status
// and body; token, when not "", is sent as a bearer token.
func examplePost(url, token, method, name, params string) {
	body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":{` + params + `,` + meta2026 + `}}`
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		log.Fatal(err)
	}
	// region headers
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method) // the body's method
	if name != "" {
		req.Header.Set("Mcp-Name", name) // tools/call: the tool; prompts/get: the prompt; resources/read: the URI
	}
	// endregion headers
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, strings.TrimSpace(string(answer)))
	if challenge := resp.Header.Get("WWW-Authenticate"); challenge != "" {
		fmt.Println("WWW-Authenticate:", challenge)
	}
}

// Serving over Streamable HTTP: NewHTTPHandler is an http.Handler that
// answers at HTTPOptions.Path (default /mcp); mount it on your mux beside
// your other handlers.
func ExampleNewHTTPHandler() {
	rt, err := NewRuntime(RuntimeOptions{ServerInfo: Implementation{Name: "hello", Version: "1.0.0"}})
	if err == nil {
		err = rt.AddTool(Tool{Name: "hello", Description: "Says hello"}, func(context.Context, *HandlerRequest) (*ToolResult, error) {
			return TextResult("Hello!"), nil
		})
	}
	if err != nil {
		log.Fatal(err)
	}
	// region mount
	h, err := NewHTTPHandler(rt, HTTPOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close() // after the server has stopped: ends sessions, cancels what still runs
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	srv := httptest.NewServer(mux) // in production: an http.Server, drained with HTTPHandler.Shutdown
	defer srv.Close()
	// endregion mount
	examplePost(srv.URL+"/mcp", "", "tools/call", "hello", `"name":"hello"`)
	examplePost(srv.URL+"/mcp", "", "tools/call", "", `"name":"hello"`)
	// Output:
	// 200 {"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"Hello!"}],"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"hello","version":"1.0.0"}}}}
	// 400 {"jsonrpc":"2.0","id":1,"error":{"code":-32020,"message":"Header mismatch: required header Mcp-Name is missing"}}
}

// region verifier
// staticTokens is a TokenVerifier of tokens known in advance, standing in
// for NewJWTVerifier or NewIntrospectionVerifier (which ask an
// authorization server).
type staticTokens map[string]*Principal

func (s staticTokens) VerifyToken(ctx context.Context, token string) (*Principal, error) {
	if p, ok := s[token]; ok {
		return p, nil
	}
	return nil, &TokenError{Reason: "unknown token"} // answered 401 invalid_token
}

// endregion verifier

// Authorization: with HTTPOptions.Auth every request needs a bearer token
// its Verifier accepts; the principal reaches handlers, and
// RuntimeOptions.Policy decides what each principal sees and calls.
func ExampleAuthOptions() {
	// region policy
	onlyAdmins := func(p *Principal, item CatalogItem) error {
		if item.Kind == ItemTool && item.Name == "deploy" && !p.HasScope("admin") {
			return errors.New("admins only") // answered -32003 "Access denied"; its text is not sent
		}
		return nil
	}
	rt, err := NewRuntime(RuntimeOptions{ServerInfo: Implementation{Name: "ops", Version: "1.0.0"}, Policy: onlyAdmins})
	// endregion policy
	if err != nil {
		log.Fatal(err)
	}
	err = errors.Join(
		rt.AddTool(Tool{Name: "whoami"}, func(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
			return TextResult(req.Principal.Subject), nil
		}),
		rt.AddTool(Tool{Name: "deploy"}, func(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
			return TextResult("deployed"), nil
		}))
	if err != nil {
		log.Fatal(err)
	}
	// region auth
	h, err := NewHTTPHandler(rt, HTTPOptions{Auth: &AuthOptions{
		Resource:             "https://mcp.example.com/mcp", // the URL clients use, the tokens' audience
		AuthorizationServers: []string{"https://auth.example.com"},
		Verifier: staticTokens{
			"t-ada":   {Subject: "ada", Scopes: []string{"mcp", "admin"}},
			"t-grace": {Subject: "grace", Scopes: []string{"mcp"}},
		},
		Scopes: []string{"mcp"}, // every request needs them
	}})
	// endregion auth
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close()
	srv := httptest.NewServer(h) // at /: the handler also serves /.well-known/oauth-protected-resource/mcp
	defer srv.Close()
	examplePost(srv.URL+"/mcp", "", "tools/call", "whoami", `"name":"whoami"`)
	examplePost(srv.URL+"/mcp", "t-grace", "tools/call", "whoami", `"name":"whoami"`)
	examplePost(srv.URL+"/mcp", "t-grace", "tools/call", "deploy", `"name":"deploy"`)
	examplePost(srv.URL+"/mcp", "t-ada", "tools/call", "deploy", `"name":"deploy"`)
	// Output:
	// 401 {"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Unauthorized"}}
	// WWW-Authenticate: Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", scope="mcp"
	// 200 {"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"grace"}],"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"ops","version":"1.0.0"}}}}
	// 200 {"jsonrpc":"2.0","id":1,"error":{"code":-32003,"message":"Access denied"}}
	// 200 {"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"deployed"}],"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"ops","version":"1.0.0"}}}}
}

// Graceful shutdown: HTTPHandler.Shutdown ends the handler's streams, lets
// the requests in flight finish and closes the handler; then the
// http.Server's own Shutdown closes its connections.
func ExampleHTTPHandler_Shutdown() {
	rt, err := NewRuntime(RuntimeOptions{ServerInfo: Implementation{Name: "hello", Version: "1.0.0"}})
	if err == nil {
		err = rt.AddTool(Tool{Name: "hello"}, func(context.Context, *HandlerRequest) (*ToolResult, error) {
			return TextResult("Hello!"), nil
		})
	}
	if err != nil {
		log.Fatal(err)
	}
	// region shutdown
	h, err := NewHTTPHandler(rt, HTTPOptions{})
	if err != nil {
		log.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	// endregion shutdown
	examplePost("http://"+ln.Addr().String()+"/mcp", "", "tools/call", "hello", `"name":"hello"`)
	// region shutdown
	// On SIGTERM, say: requests in flight have their RequestTimeout (30s) to finish.
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	if err := h.Shutdown(ctx); err != nil {
		log.Print("drain cut short: ", err)
	}
	if err := srv.Shutdown(ctx); err != nil {
		srv.Close()
	}
	// endregion shutdown
	fmt.Println(<-served)
	// Output:
	// 200 {"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"Hello!"}],"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"hello","version":"1.0.0"}}}}
	// http: Server closed
}
