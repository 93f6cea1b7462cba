package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestHTTPHandlerServesWhereMounted: the handler serves MCP at whatever
// path a mux routes to it, a 2025-11-25 session (initialize, a call, its GET
// stream, DELETE) and a 2026-07-28 POST alike: at a path of a ServeMux,
// under http.StripPrefix, and as a server's only handler.
func TestHTTPHandlerServesWhereMounted(t *testing.T) {
	tests := []struct {
		name  string
		mount func(h http.Handler) http.Handler
		path  string // where clients reach it
	}{
		{"a ServeMux path", func(h http.Handler) http.Handler {
			mux := http.NewServeMux()
			mux.Handle("/api/mcp", h)
			return mux
		}, "/api/mcp"},
		{"under http.StripPrefix", func(h http.Handler) http.Handler {
			mux := http.NewServeMux()
			mux.Handle("/tenants/acme/", http.StripPrefix("/tenants/acme", h))
			return mux
		}, "/tenants/acme/mcp"},
		{"the server's handler", func(h http.Handler) http.Handler { return h }, "/anything"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := NewHTTPHandler(newHTTPCatalogRuntime(t), HTTPOptions{Logger: quietLogger()})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(tt.mount(h))
			t.Cleanup(func() {
				h.endStreams()
				srv.Close()
				h.Close()
			})
			s := &httpTestServer{t: t, url: srv.URL + tt.path, h: h}

			echo := func(id, meta string) string {
				return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}` + meta + `}}`
			}
			resp := s.post(stateless("tools/call", "echo"), echo("1", ","+meta2026))
			if body := readBody(t, resp); resp.StatusCode != http.StatusOK || !strings.Contains(body, `"text":"hi"`) {
				t.Fatalf("a 2026 tools/call: status %d, body %s", resp.StatusCode, body)
			}

			session := s.legacySession(ProtocolVersion20251125, `{}`)
			resp = s.post(session, echo("2", ""))
			if body := readBody(t, resp); resp.StatusCode != http.StatusOK || !strings.Contains(body, `"text":"hi"`) {
				t.Fatalf("a session's tools/call: status %d, body %s", resp.StatusCode, body)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			get := s.do(ctx, http.MethodGet, map[string]string{headerSessionID: session[headerSessionID], "Accept": "text/event-stream"}, "")
			defer get.Body.Close()
			if ev, err := newSSEReader(t, get).next(); err != nil || ev.id == "" {
				t.Fatalf("the session's GET stream: %+v, %v; want its priming event", ev, err)
			}
			resp = s.do(context.Background(), http.MethodDelete, session, "")
			if readBody(t, resp); resp.StatusCode != http.StatusNoContent {
				t.Fatalf("DELETE: status %d, want 204", resp.StatusCode)
			}
			resp = s.post(session, echo("3", ""))
			if readBody(t, resp); resp.StatusCode != http.StatusNotFound {
				t.Fatalf("after DELETE: status %d, want 404", resp.StatusCode)
			}
		})
	}
}
