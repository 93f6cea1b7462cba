package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Mounting the handler in a program's own http.ServeMux: MCP at /api/mcp
// beside the program's other routes, the authorization metadata at its
// well-known path, and a drain when the program stops.
func ExampleNewHTTPHandler_mount() {
	rt, err := NewRuntime(RuntimeOptions{ServerInfo: Implementation{Name: "notes", Version: "1.0.0"}})
	if err != nil {
		log.Fatal(err)
	}
	var verifier TokenVerifier = noTokens{} // a real server: NewJWTVerifier or NewIntrospectionVerifier

	// region mount
	h, err := NewHTTPHandler(rt, HTTPOptions{Auth: &AuthOptions{
		Resource:             "https://notes.example.com/api/mcp",
		AuthorizationServers: []string{"https://auth.example.com"},
		Verifier:             verifier,
	}})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/api/mcp", h)
	mux.Handle(h.ProtectedResourceMetadata()) // at /.well-known/oauth-protected-resource/api/mcp
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	// endregion mount

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go srv.Serve(ln)
	base := "http://" + ln.Addr().String()

	// A client without a token is told where the metadata is, and finds it
	// there.
	resp, err := http.Post(base+"/api/mcp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		log.Fatal(err)
	}
	resp.Body.Close()
	challenge := resp.Header.Get("WWW-Authenticate")
	fmt.Println(resp.StatusCode, challenge)
	_, metadataURL, _ := strings.Cut(challenge, `resource_metadata="`)
	metadataURL, _, _ = strings.Cut(metadataURL, `"`)
	u, err := url.Parse(metadataURL)
	if err != nil {
		log.Fatal(err)
	}
	resp, err = http.Get(base + u.Path)
	if err != nil {
		log.Fatal(err)
	}
	doc, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.StatusCode, string(doc))

	// region shutdown
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	// The handler first: streams end, requests in flight finish, and
	// clients can still answer the server's questions to them.
	if err := h.Shutdown(ctx); err != nil {
		log.Print("drain cut short: ", err)
	}
	// Then the server: no new connections, idle ones closed.
	if err := srv.Shutdown(ctx); err != nil {
		srv.Close()
	}
	// endregion shutdown

	// Output:
	// 401 Bearer resource_metadata="https://notes.example.com/.well-known/oauth-protected-resource/api/mcp"
	// 200 {"resource":"https://notes.example.com/api/mcp","authorization_servers":["https://auth.example.com"],"bearer_methods_supported":["header"]}
}

// noTokens is a TokenVerifier that accepts no token.
type noTokens struct{}

func (noTokens) VerifyToken(context.Context, string) (*Principal, error) {
	return nil, ErrInvalidToken
}
