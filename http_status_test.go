package main

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"
)

// A connection hands its transport typed answers: the code of an error
// answer is the error's, a result's is 0, so that no transport parses the
// frame (HTTP picks a 2026 answer's status from it).
func TestFinalFrameCarriesItsCode(t *testing.T) {
	tests := []struct {
		name string
		f    finalFrame
		want int
	}{
		{"error", errorAnswer("7", &RPCError{Code: CodeMethodNotFound, Message: "Method not found: x"}), CodeMethodNotFound},
		{"error, null id", errorAnswer("", errParseFrame), CodeParseError},
		{"result", serveEnvelope(context.Background(), echoDispatcher, new(Request), mustEnvelope(t, `{"jsonrpc":"2.0","id":1,"method":"x","params":{}}`), "1", nil).answer, 0},
		{"envelope error", serveEnvelope(context.Background(), echoDispatcher, new(Request), mustEnvelope(t, `{"jsonrpc":"1.0","id":1,"method":"x"}`), "1", nil).answer, CodeInvalidRequest},
	}
	for _, tt := range tests {
		if tt.f.code != tt.want || tt.f.frame == nil {
			t.Errorf("%s: code %d (frame %q), want %d", tt.name, tt.f.code, tt.f.frame, tt.want)
		}
	}
}

// mustEnvelope decodes line.
func mustEnvelope(t *testing.T, line string) envelope {
	t.Helper()
	env, err := decodeEnvelope([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// isLoopbackHost answers as net.ParseIP and IP.IsLoopback do (zones
// refused, IPv4-mapped addresses unmapped), and for localhost.
func TestIsLoopbackHost(t *testing.T) {
	reference := func(hostport string) bool {
		host := hostWithoutPort(hostport)
		ip := net.ParseIP(host)
		return strings.EqualFold(host, "localhost") || ip != nil && ip.IsLoopback()
	}
	for _, tt := range []struct {
		hostport string
		want     bool
	}{
		{"127.0.0.1", true}, {"127.0.0.1:8080", true}, {"127.9.8.7:1", true}, {"localhost", true}, {"LocalHost:80", true},
		{"[::1]:8080", true}, {"::1", true}, {"[::1]", true}, {"[::ffff:127.0.0.1]:1", true},
		{"[::1%lo]:1", false}, {"[fe80::1%eth0]:1", false}, {"10.0.0.1:80", false}, {"example.com", false},
		{"localhost.example.com", false}, {"", false}, {"[::2]:1", false}, {"0.0.0.0", false},
	} {
		if got := isLoopbackHost(tt.hostport); got != tt.want || got != reference(tt.hostport) {
			t.Errorf("isLoopbackHost(%q) = %v, want %v (net.ParseIP says %v)", tt.hostport, got, tt.want, reference(tt.hostport))
		}
	}
}

// A plain answer goes out with its Content-Length, never chunked, whether
// net/http adds the header (an answer of up to maxImplicitContentLength
// bytes) or the handler does (a longer one), with the prebuilt
// Content-Type and, in a session, Mcp-Session-Id values; the values shared
// by every answer stay as built.
func TestHTTPPlainAnswerHeaders(t *testing.T) {
	s := newHTTPTestServer(t, nil, HTTPOptions{})
	session := s.legacySession(ProtocolVersion20251125, `{}`)
	for _, tt := range []struct {
		name   string
		header map[string]string
		text   string
	}{
		{"2026-07-28, short", stateless(methodToolsCall, "echo"), "hi"},
		{"2026-07-28, long", stateless(methodToolsCall, "echo"), strings.Repeat("x", 3000)},
		{"session, short", session, "hi"},
		{"session, long", session, strings.Repeat("y", 3000)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			meta := ""
			if tt.header[headerSessionID] == "" {
				meta = "," + meta2026
			}
			resp := s.post(tt.header, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"`+tt.text+`"}`+meta+`}}`)
			body := readBody(t, resp)
			switch {
			case resp.StatusCode != http.StatusOK || !strings.Contains(body, `"text":"`+tt.text+`"`):
				t.Fatalf("status %d, body %s", resp.StatusCode, body)
			case resp.ContentLength != int64(len(body)) || len(resp.TransferEncoding) != 0:
				t.Errorf("Content-Length %d, Transfer-Encoding %q for a body of %d bytes", resp.ContentLength, resp.TransferEncoding, len(body))
			case resp.Header.Get("Content-Type") != mediaTypeJSON:
				t.Errorf("Content-Type %q", resp.Header.Get("Content-Type"))
			case resp.Header.Get(headerSessionID) != tt.header[headerSessionID]:
				t.Errorf("Mcp-Session-Id %q, want %q", resp.Header.Get(headerSessionID), tt.header[headerSessionID])
			}
		})
	}
	if v := s.h.headerValues; len(v.json) != 1 || v.json[0] != mediaTypeJSON || len(v.sse) != 1 || v.sse[0] != mediaTypeSSE {
		t.Errorf("the shared header values changed: %q %q", v.json, v.sse)
	}
}

// A POST's record is chosen by its Mcp-Session-Id header before its body is
// read, and a message that goes the other way gets the record of its own
// route: a 2026 request posted with a live session's id is served
// statelessly, an initialize without one starts a session. Bodies on either
// side of the record's room for a body (inlineBodyBytes) are read whole.
func TestHTTPPostRecordEitherWay(t *testing.T) {
	s := newHTTPTestServer(t, nil, HTTPOptions{})
	session := s.legacySession(ProtocolVersion20251125, `{}`) // an initialize without a session id
	call := func(text, meta string) string {
		return `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + text + `"}` + meta + `}}`
	}
	// The length of a 2026 call whose text is n bytes long, and of a session's.
	statelessLen := len(call("", ","+meta2026))
	sessionLen := len(call("", ""))
	withSession := stateless(methodToolsCall, "echo")
	withSession[headerSessionID] = session[headerSessionID]
	for _, tt := range []struct {
		name     string
		header   map[string]string
		meta     string
		textLen  int
		want2026 bool
	}{
		{"2026 with a session id, fits the room", withSession, "," + meta2026, inlineBodyBytes - statelessLen, true},
		{"2026 with a session id, one byte over", withSession, "," + meta2026, inlineBodyBytes - statelessLen + 1, true},
		{"2026, fits the room", stateless(methodToolsCall, "echo"), "," + meta2026, inlineBodyBytes - statelessLen, true},
		{"2026, one byte over", stateless(methodToolsCall, "echo"), "," + meta2026, inlineBodyBytes - statelessLen + 1, true},
		{"session, fits the room", session, "", inlineBodyBytes - sessionLen, false},
		{"session, one byte over", session, "", inlineBodyBytes - sessionLen + 1, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			text := strings.Repeat("z", tt.textLen)
			body := call(text, tt.meta)
			if n := len(body) - inlineBodyBytes; n != 0 && n != 1 {
				t.Fatalf("the body is %d bytes, want %d or one more", len(body), inlineBodyBytes)
			}
			resp := s.post(tt.header, body)
			answer := readBody(t, resp)
			if resp.StatusCode != http.StatusOK || !strings.Contains(answer, `"text":"`+text+`"`) {
				t.Fatalf("status %d, answer %s", resp.StatusCode, answer)
			}
			if got := strings.Contains(answer, `"resultType":"complete"`); got != tt.want2026 {
				t.Errorf("served as 2026-07-28: %v, want %v: %s", got, tt.want2026, answer)
			}
		})
	}
}

// A 2026 POST registers its connection's submitter with the executor only
// when it submits a job: a request an Inline tool serves on the POST's
// goroutine takes no outcome channel and no executor lock, one served by a
// worker has a registered submitter while it runs, and neither leaves one
// behind.
func TestHTTPStatelessSubmitterOnlyForWorkers(t *testing.T) {
	rt := newHTTPCatalogRuntime(t)
	s := newHTTPTestServer(t, rt, HTTPOptions{})
	registered := func() int {
		e := s.h.executor
		e.mu.Lock()
		defer e.mu.Unlock()
		return len(e.submitters)
	}
	for _, inline := range []bool{true, false} {
		name := "on_worker"
		if inline {
			name = "inline"
		}
		seen := -1
		if err := rt.AddTool(Tool{Name: name, Inline: inline, InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
			seen = registered() // the POST waits for this answer: no race on seen
			return TextResult("ok"), nil
		}); err != nil {
			t.Fatal(err)
		}
		resp := s.post(stateless(methodToolsCall, name), `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+name+`","arguments":{},`+meta2026+`}}`)
		if body := readBody(t, resp); resp.StatusCode != http.StatusOK || !strings.Contains(body, `"text":"ok"`) {
			t.Fatalf("%s: status %d, body %s", name, resp.StatusCode, body)
		}
		want := 1
		if inline {
			want = 0
		}
		if seen != want {
			t.Errorf("%s: %d submitters registered while the tool ran, want %d", name, seen, want)
		}
		if n := registered(); n != 0 {
			t.Errorf("%s: %d submitters registered after the answer, want 0", name, n)
		}
	}
}

// hostWithoutPort answers as net.SplitHostPort where that succeeds, and
// returns the address unbracketed where it fails (no port).
func TestHostWithoutPort(t *testing.T) {
	for _, hostport := range []string{
		"127.0.0.1:8080", "127.0.0.1:", "example.com:443", "localhost:80", ":80", "[::1]:8080", "[::ffff:127.0.0.1]:1",
		"[fe80::1%eth0]:1", "::1", "[::1]", "127.0.0.1", "example.com", "", "a:b:c", "[a]b:1", "a]:1", "a[:1",
	} {
		want := strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]")
		if host, _, err := net.SplitHostPort(hostport); err == nil {
			want = host
		}
		if got := hostWithoutPort(hostport); got != want {
			t.Errorf("hostWithoutPort(%q) = %q, want %q", hostport, got, want)
		}
	}
}
