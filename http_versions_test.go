package main

import (
	"net/http"
	"strings"
	"testing"
)

// TestHTTPOlderVersions: a 2025-03-26 client gets a session of its version
// and results shaped to it (no structuredContent, no title); a client that
// POSTs an initialize proposing 2024-11-05, which predates Streamable HTTP,
// is answered the preferred version instead.
func TestHTTPOlderVersions(t *testing.T) {
	s := newHTTPTestServer(t, nil, HTTPOptions{})
	h := s.legacySession(ProtocolVersion20250326, `{}`)
	resp := s.post(h, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"old"}}}`)
	if body := readBody(t, resp); resp.StatusCode != http.StatusOK || body != `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"old"}]}}`+"\n" {
		t.Fatalf("2025-03-26 tools/call: status %d, body %s", resp.StatusCode, body)
	}
	resp = s.post(h, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
	if body := readBody(t, resp); resp.StatusCode != http.StatusOK || strings.Contains(body, "outputSchema") || !strings.Contains(body, `"name":"echo"`) {
		t.Fatalf("2025-03-26 tools/list: status %d, body %s", resp.StatusCode, body)
	}

	resp = s.post(nil, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	body := readBody(t, resp)
	if resp.StatusCode != http.StatusOK || resp.Header.Get(headerSessionID) == "" || !strings.Contains(body, `"protocolVersion":"2025-11-25"`) {
		t.Fatalf("2024-11-05 initialize over HTTP: status %d, session %q, body %s", resp.StatusCode, resp.Header.Get(headerSessionID), body)
	}
}
