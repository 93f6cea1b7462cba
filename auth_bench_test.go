package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// BenchmarkJWTVerify measures verifying one access token whose key is held,
// for each algorithm.
func BenchmarkJWTVerify(b *testing.B) {
	for _, alg := range []string{algES256, algEdDSA, algRS256, algPS256} {
		b.Run(alg, func(b *testing.B) {
			k := newTestKey(b, "k", alg)
			iss := newTestIssuer(b, k)
			v, err := NewJWTVerifier(JWTVerifierOptions{Issuer: iss.url, Resource: testResource, Logger: quietLogger()})
			if err != nil {
				b.Fatal(err)
			}
			token := k.sign(b, alg, nil, iss.claims(nil))
			if _, err := v.VerifyToken(context.Background(), token); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := v.VerifyToken(context.Background(), token); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkHTTPEchoAuthorized is BenchmarkHTTPEcho with an ES256 access
// token verified on every request.
func BenchmarkHTTPEchoAuthorized(b *testing.B) {
	rt, err := NewRuntime(RuntimeOptions{ServerInfo: Implementation{Name: "bench", Version: "1"}, Tasks: TaskOptions{}})
	if err != nil {
		b.Fatal(err)
	}
	if err := registerReferenceCatalog(rt); err != nil {
		b.Fatal(err)
	}
	k := newTestKey(b, "k", algES256)
	iss := newTestIssuer(b, k)
	v, err := NewJWTVerifier(JWTVerifierOptions{Issuer: iss.url, Resource: testResource, Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	h, err := NewHTTPHandler(rt, HTTPOptions{Auth: &AuthOptions{Resource: testResource, AuthorizationServers: []string{iss.url}, Verifier: v}})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer func() { srv.Close(); h.Close() }()
	token := "Bearer " + k.sign(b, algES256, nil, iss.claims(nil))
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"},` + meta2026 + `}}`
	client := srv.Client()
	b.ReportAllocs()
	for b.Loop() {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", ProtocolVersion20260728)
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", "echo")
		req.Header.Set("Authorization", token)
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
}
