package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// A routing header that appears twice is refused 400 with -32020, whatever
// its values, before anything is served: an intermediary that reads the
// other value would route or authorize another call.
func TestHTTPRepeatedRoutingHeaders(t *testing.T) {
	s := newHTTPTestServer(t, nil, HTTPOptions{})
	session := s.legacySession(ProtocolVersion20251125, `{}`)
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"test_header_param","arguments":{"region":"eu"},` + meta2026 + `}}`
	if err := registerHTTPReferenceTools(s.rt); err != nil {
		t.Fatal(err)
	}
	base := stateless("tools/call", "test_header_param")
	base["Mcp-Param-Region"] = "eu"
	tests := []struct {
		name, method, header, second string
		sessionHeaders               bool
	}{
		{"Mcp-Name", http.MethodPost, "Mcp-Name", "echo", false},
		{"Mcp-Method", http.MethodPost, "Mcp-Method", "tools/list", false},
		{"MCP-Protocol-Version", http.MethodPost, "MCP-Protocol-Version", "2025-11-25", false},
		{"Mcp-Param-Region", http.MethodPost, "Mcp-Param-Region", "us", false},
		{"the same value twice", http.MethodPost, "Mcp-Name", "test_header_param", false},
		{"Mcp-Session-Id of a POST", http.MethodPost, "Mcp-Session-Id", "other", true},
		{"Mcp-Session-Id of a GET", http.MethodGet, "Mcp-Session-Id", "other", true},
		{"Mcp-Session-Id of a DELETE", http.MethodDelete, "Mcp-Session-Id", "other", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			header, body := base, call
			if tt.sessionHeaders {
				header, body = session, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
			}
			if tt.method != http.MethodPost {
				body = ""
			}
			ctx, cancel := context.WithTimeout(context.Background(), failAfter) // a GET served would stream on
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, tt.method, s.url, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			for k, v := range header {
				req.Header.Set(k, v)
			}
			req.Header.Add(tt.header, tt.second)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			got := string(b)
			var msg struct{ Error *RPCError }
			if resp.StatusCode != http.StatusBadRequest || json.Unmarshal([]byte(got), &msg) != nil || msg.Error == nil ||
				msg.Error.Code != CodeHeaderMismatch || !strings.Contains(strings.ToLower(msg.Error.Message), strings.ToLower(tt.header)) {
				t.Fatalf("status %d, body %.300s; want 400 with %d naming %s", resp.StatusCode, got, CodeHeaderMismatch, tt.header)
			}
		})
	}
	// The session is untouched: the refused DELETE did not end it.
	if resp := s.post(session, `{"jsonrpc":"2.0","id":3,"method":"ping"}`); resp.StatusCode != http.StatusOK {
		t.Fatalf("the session after the refused requests: status %d", resp.StatusCode)
	}
}

func TestMediaTypesHonourQualities(t *testing.T) {
	tests := []struct {
		accept    string
		json, sse bool
	}{
		{"application/json, text/event-stream", true, true},
		{"application/json, text/event-stream;q=0", true, false},
		{"application/json,text/event-stream", true, true},
		{"application/json;q=0, text/event-stream", false, true},
		{"application/json; q=0.0, text/event-stream", false, true},
		{"application/json;q=0.001, text/event-stream;q=1.0", true, true},
		{"application/json;q=0, */*", false, true},
		{"*/*;q=0, application/json", true, false},
		{"text/*;q=0, text/event-stream, application/*", true, true},
		{"text/event-stream;q=0, text/*, application/json", true, false},
		{"application/json;q=0, application/json;q=0.5, text/event-stream", true, true},
		{"application/json;q=2, text/event-stream", false, true},
		{"application/json;q=x, text/event-stream", false, true},
		{"APPLICATION/JSON, Text/Event-Stream", true, true},
		{"", false, false},
	}
	for _, tt := range tests {
		if json, sse := mediaTypes([]string{tt.accept}); json != tt.json || sse != tt.sse {
			t.Errorf("mediaTypes(%q) = %v, %v; want %v, %v", tt.accept, json, sse, tt.json, tt.sse)
		}
	}
	if json, sse := mediaTypes(nil); !json || !sse {
		t.Error("no Accept header admits neither type")
	}
}

func TestHTTPAcceptQualityZeroRefusesJSON(t *testing.T) {
	s := newHTTPTestServer(t, nil, HTTPOptions{})
	header := stateless("tools/list", "")
	header["Accept"] = "application/json;q=0, text/event-stream"
	resp := s.post(header, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+meta2026+`}}`)
	if body := readBody(t, resp); resp.StatusCode != http.StatusNotAcceptable {
		t.Fatalf("status %d, body %.300s; want 406", resp.StatusCode, body)
	}
}
