package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"strings"
	"testing"
)

// The header constants the transport looks up in an http.Header are in
// net/http's canonical form, so that a lookup costs no canonicalization.
func TestHTTPHeaderKeysCanonical(t *testing.T) {
	if got := textproto.CanonicalMIMEHeaderKey(headerProtocolVersion); got != httpHeaderProtocolVersion {
		t.Errorf("httpHeaderProtocolVersion %q, want %q, the canonical form of %q", httpHeaderProtocolVersion, got, headerProtocolVersion)
	}
	for _, name := range []string{headerSessionID, headerMethod, headerName, headerParamPrefix, headerOrigin, headerContentType, headerAccept, headerTraceparent, headerTracestate} {
		if got := textproto.CanonicalMIMEHeaderKey(name); got != name {
			t.Errorf("header constant %q is not canonical (%q)", name, got)
		}
	}
}

// A Dispatcher other than the Runtime gets every header of its POST in
// Request.Header, lower-case names and the first value of each, trimmed, in
// a 2026 request and in a session; in a session without
// MCP-Protocol-Version it carries the negotiated version.
func TestHTTPRequestHeaderReachesDispatcher(t *testing.T) {
	d := DispatcherFunc(func(_ context.Context, req *Request) Reply {
		switch {
		case req.ID == nil:
			return Reply{}
		case req.Method == methodInitialize:
			return Reply{Result: json.RawMessage(`{}`), Initialized: &Session{ProtocolVersion: ProtocolVersion20250326}}
		}
		result, err := json.Marshal(req.Header)
		if err != nil {
			return Reply{Error: &RPCError{Code: CodeInternalError, Message: err.Error()}}
		}
		return Reply{Result: result}
	})
	h, err := NewHTTPHandler(d, HTTPOptions{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() { srv.Close(); h.Close() })
	post := func(header http.Header, body string) (*http.Response, map[string]string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/mcp", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header = header
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var answer struct{ Result map[string]string }
		if err := json.Unmarshal([]byte(readBody(t, resp)), &answer); err != nil {
			t.Fatal(err)
		}
		return resp, answer.Result
	}
	check := func(what string, got map[string]string, want map[string]string) {
		t.Helper()
		for name, value := range want {
			if got[name] != value {
				t.Errorf("%s: Request.Header[%q] = %q, want %q (all: %v)", what, name, got[name], value, got)
			}
		}
	}

	stateless := http.Header{
		"Mcp-Protocol-Version": {ProtocolVersion20260728},
		"Mcp-Method":           {"headers/show"},
		"X-Trace-Id":           {"  trace-1 "},
		"X-Repeated":           {"first", "second"},
	}
	_, got := post(stateless, `{"jsonrpc":"2.0","id":1,"method":"headers/show","params":{`+binMeta2026+`}}`)
	check("2026-07-28", got, map[string]string{
		"mcp-protocol-version": ProtocolVersion20260728, "mcp-method": "headers/show",
		"x-trace-id": "trace-1", "x-repeated": "first", "content-type": "application/json",
	})

	resp, _ := post(http.Header{}, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	session := resp.Header.Get(headerSessionID)
	if session == "" {
		t.Fatal("initialize opened no session")
	}
	_, got = post(http.Header{headerSessionID: {session}, "X-Trace-Id": {"trace-2"}}, `{"jsonrpc":"2.0","id":2,"method":"headers/show"}`)
	check("in a session", got, map[string]string{
		"mcp-protocol-version": ProtocolVersion20250326, "x-trace-id": "trace-2",
		"mcp-session-id": session, "content-type": "application/json",
	})
}
