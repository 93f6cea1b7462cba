package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// failAfter bounds how long a test waits for an answer that must come: a
// broken bridge fails the test instead of hanging it.
const failAfter = 30 * time.Second

// testLimits are the bounds of the bridges under test.
var testLimits = limits{maxMessage: 1 << 20, maxQueued: 64, maxBacklog: 8, maxSessions: 8}

// startBridge serves a bridge to scripted servers on a loopback port.
func startBridge(t *testing.T) (*bridge, string) {
	t.Helper()
	return startBridgeWith(t, testLimits)
}

func startBridgeWith(t *testing.T, lim limits) (*bridge, string) {
	t.Helper()
	b := newBridge(scriptedArgv(t), "/mcp", lim, io.Discard, log.New(io.Discard, "", 0))
	b.checkHost = true
	srv := httptest.NewServer(b)
	t.Cleanup(func() {
		srv.Close()
		b.close()
	})
	return b, srv.URL + "/mcp"
}

// request is one HTTP request to the bridge.
type request struct {
	method           string // POST when empty
	header           map[string]string
	body             string
	noDefaultHeaders bool // send only header: no Accept, Content-Type
}

// answer is what came back: the status, the headers and, for an SSE
// stream, each event's data; else the body.
type answer struct {
	status int
	header http.Header
	body   []byte
	events []string
}

// do sends req to url and reads the whole answer.
func do(t *testing.T, ctx context.Context, url string, req request) answer {
	t.Helper()
	resp := send(t, ctx, url, req)
	defer resp.Body.Close()
	a := answer{status: resp.StatusCode, header: resp.Header}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		events := newEventReader(resp.Body)
		for {
			data, ok := events.next()
			if !ok {
				break
			}
			a.events = append(a.events, data)
		}
		return a
	}
	a.body, _ = io.ReadAll(resp.Body)
	return a
}

// send sends req to url and returns the response, its body unread.
func send(t *testing.T, ctx context.Context, url string, req request) *http.Response {
	t.Helper()
	method := req.method
	if method == "" {
		method = http.MethodPost
	}
	var body io.Reader
	if req.body != "" {
		body = strings.NewReader(req.body)
	}
	hr, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	if !req.noDefaultHeaders {
		hr.Header.Set("Accept", "application/json, text/event-stream")
		hr.Header.Set("Content-Type", "application/json")
	}
	for k, v := range req.header {
		if k == "Host" {
			hr.Host = v
			continue
		}
		hr.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// eventReader reads the data of an SSE stream's events.
type eventReader struct{ r *bufio.Reader }

func newEventReader(r io.Reader) *eventReader { return &eventReader{bufio.NewReader(r)} }

// next returns the data of the next event; false at the stream's end.
func (e *eventReader) next() (string, bool) {
	var data []string
	for {
		line, err := e.r.ReadString('\n')
		if err != nil {
			return "", false
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "" && len(data) > 0:
			return strings.Join(data, "\n"), true
		case strings.HasPrefix(line, "data: "):
			data = append(data, strings.TrimPrefix(line, "data: "))
		}
	}
}

func withTimeout(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), failAfter)
	t.Cleanup(cancel)
	return ctx
}

// call2026 is a 2026-07-28 tools/call of tool with arguments, id and, when
// progress is not empty, a progress token; and the headers that mirror it.
func call2026(id, tool, arguments, progress string) request {
	meta := `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}`
	if progress != "" {
		meta += `,"progressToken":` + progress
	}
	return request{
		header: map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": tool},
		body:   `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + arguments + `,"_meta":{` + meta + `}}}`,
	}
}

// callInSession is an initialize-era tools/call in session.
func callInSession(session, id, tool, arguments string) request {
	return request{
		header: map[string]string{"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"},
		body:   `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + arguments + `}}`,
	}
}

// response is the part of a JSON-RPC response the tests read.
type response struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result struct {
		Content []struct{ Text string } `json:"content"`
	} `json:"result"`
	Error *struct {
		Code    int
		Message string
	} `json:"error"`
}

func decode(t *testing.T, data []byte) response {
	t.Helper()
	var r response
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatalf("not a JSON-RPC message: %s", data)
	}
	return r
}

// text is the text of a tool's answer.
func (r response) text() string {
	if len(r.Result.Content) == 0 {
		return ""
	}
	return r.Result.Content[0].Text
}

// initialize opens a session of version 2025-11-25 and returns its id.
func initialize(t *testing.T, ctx context.Context, url string) string {
	t.Helper()
	a := do(t, ctx, url, request{body: `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`})
	if a.status != http.StatusOK || a.header.Get("Mcp-Session-Id") == "" {
		t.Fatalf("initialize: status %d, session %q, body %s", a.status, a.header.Get("Mcp-Session-Id"), a.body)
	}
	return a.header.Get("Mcp-Session-Id")
}

// A session lives from its initialize to its DELETE: its answers carry its
// id, a GET opens its stream, a request that names another version is
// refused, and once deleted it is not found.
func TestSessionLifecycle(t *testing.T) {
	_, url := startBridge(t)
	ctx := withTimeout(t)
	session := initialize(t, ctx, url)
	if a := do(t, ctx, url, request{header: map[string]string{"Mcp-Session-Id": session}, body: `{"jsonrpc":"2.0","method":"notifications/initialized"}`}); a.status != http.StatusAccepted {
		t.Fatalf("notifications/initialized: status %d", a.status)
	}
	a := do(t, ctx, url, callInSession(session, "1", "echo", `{"text":"hi"}`))
	if r := decode(t, a.body); a.status != http.StatusOK || a.header.Get("Mcp-Session-Id") != session || string(r.ID) != "1" || r.text() != "hi" {
		t.Fatalf("echo: status %d, session %q, body %s", a.status, a.header.Get("Mcp-Session-Id"), a.body)
	}
	wrongVersion := callInSession(session, "2", "echo", `{"text":"hi"}`)
	wrongVersion.header["MCP-Protocol-Version"] = "2025-06-18"
	if a := do(t, ctx, url, wrongVersion); a.status != http.StatusBadRequest {
		t.Fatalf("a request naming another version than the session's: status %d", a.status)
	}
	get := send(t, ctx, url, request{method: http.MethodGet, header: map[string]string{"Mcp-Session-Id": session, "Accept": "text/event-stream"}, noDefaultHeaders: true})
	get.Body.Close()
	if get.StatusCode != http.StatusOK || get.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET: status %d, Content-Type %q", get.StatusCode, get.Header.Get("Content-Type"))
	}
	if a := do(t, ctx, url, request{method: http.MethodDelete, header: map[string]string{"Mcp-Session-Id": session}}); a.status != http.StatusNoContent {
		t.Fatalf("DELETE: status %d", a.status)
	}
	if a := do(t, ctx, url, callInSession(session, "3", "echo", `{"text":"hi"}`)); a.status != http.StatusNotFound {
		t.Fatalf("a deleted session's request: status %d", a.status)
	}
}

// An initialize the server refuses leaves no session: its error goes back
// without an Mcp-Session-Id.
func TestRefusedInitializeLeavesNoSession(t *testing.T) {
	b, url := startBridge(t)
	ctx := withTimeout(t)
	a := do(t, ctx, url, request{body: `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"bad","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`})
	if r := decode(t, a.body); a.status != http.StatusOK || a.header.Get("Mcp-Session-Id") != "" || r.Error == nil || r.Error.Code != codeInvalidParams {
		t.Fatalf("a refused initialize: status %d, session %q, body %s", a.status, a.header.Get("Mcp-Session-Id"), a.body)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.sessions) != 0 {
		t.Fatalf("%d sessions after a refused initialize", len(b.sessions))
	}
}

// What the server sends before its answer turns the answer into an SSE
// stream: a progress notification and a log message, then the answer.
func TestMessagesBeforeTheAnswerStream(t *testing.T) {
	_, url := startBridge(t)
	ctx := withTimeout(t)
	a := do(t, ctx, url, call2026("5", "progress", `{}`, `"p5"`))
	if a.status != http.StatusOK || len(a.events) != 3 {
		t.Fatalf("status %d, events %q, body %s", a.status, a.events, a.body)
	}
	methods := []string{decode(t, []byte(a.events[0])).Method, decode(t, []byte(a.events[1])).Method}
	if last := decode(t, []byte(a.events[2])); methods[0] != "notifications/progress" || methods[1] != "notifications/message" || string(last.ID) != "5" || last.text() != "done" {
		t.Fatalf("events %q", a.events)
	}
}

// The server's request to the client goes out on the stream of the request
// it serves, and the client's response, POSTed, reaches the server.
func TestServerRequestRoundTrip(t *testing.T) {
	_, url := startBridge(t)
	ctx := withTimeout(t)
	session := initialize(t, ctx, url)
	resp := send(t, ctx, url, callInSession(session, "9", "sample", `{}`))
	defer resp.Body.Close()
	events := newEventReader(resp.Body)
	first, ok := events.next()
	if r := decode(t, []byte(first)); !ok || r.Method != "sampling/createMessage" || string(r.ID) != `"s1"` {
		t.Fatalf("first event %q", first)
	}
	reply := request{header: map[string]string{"Mcp-Session-Id": session}, body: `{"jsonrpc":"2.0","id":"s1","result":{"role":"assistant","model":"m","content":{"type":"text","text":"a poem"}}}`}
	if a := do(t, ctx, url, reply); a.status != http.StatusAccepted {
		t.Fatalf("the client's response: status %d", a.status)
	}
	last, ok := events.next()
	if r := decode(t, []byte(last)); !ok || string(r.ID) != "9" || r.text() != "sampled: a poem" {
		t.Fatalf("answer %q", last)
	}
}

// A message that belongs to no open request waits for the session's GET
// stream.
func TestBacklogGoesToTheGetStream(t *testing.T) {
	_, url := startBridge(t)
	ctx := withTimeout(t)
	session := initialize(t, ctx, url)
	if a := do(t, ctx, url, callInSession(session, "1", "unsolicited", `{}`)); decode(t, a.body).text() != "answered" {
		t.Fatalf("unsolicited: %s", a.body)
	}
	resp := send(t, ctx, url, request{method: http.MethodGet, header: map[string]string{"Mcp-Session-Id": session, "Accept": "text/event-stream"}, noDefaultHeaders: true})
	defer resp.Body.Close()
	data, ok := newEventReader(resp.Body).next()
	if r := decode(t, []byte(data)); !ok || r.Method != "notifications/tools/list_changed" {
		t.Fatalf("the GET stream's first event: %q", data)
	}
}

// Stateless requests share one child; one whose id an outstanding request
// has already is relayed under an id of the bridge's, and each answer goes
// back under its client's id.
func TestStatelessIDsNeverCollide(t *testing.T) {
	_, url := startBridge(t)
	ctx := withTimeout(t)
	resp := send(t, ctx, url, call2026("1", "hold", `{}`, `"held"`))
	defer resp.Body.Close()
	held := newEventReader(resp.Body)
	if data, ok := held.next(); !ok || decode(t, []byte(data)).Method != "notifications/progress" {
		t.Fatalf("hold's first event: %q", data)
	}
	a := do(t, ctx, url, call2026("1", "whoami", `{}`, ""))
	if r := decode(t, a.body); string(r.ID) != "1" || r.text() == "1" || r.text() == "" {
		t.Fatalf("the second request with id 1: the server saw id %q, the client got %s", r.text(), a.body)
	}
	if a := do(t, ctx, url, call2026("2", "release", `{}`, "")); decode(t, a.body).text() != "released all" {
		t.Fatalf("release: %s", a.body)
	}
	data, ok := held.next()
	if r := decode(t, []byte(data)); !ok || string(r.ID) != "1" || r.text() != "released" {
		t.Fatalf("the held request's answer: %q", data)
	}
}

// A 2026-07-28 client that closes its response cancels the request: the
// server gets notifications/cancelled for it.
func TestStatelessClientThatLeavesCancels(t *testing.T) {
	_, url := startBridge(t)
	ctx := withTimeout(t)
	leaving, leave := context.WithCancel(ctx)
	resp := send(t, leaving, url, call2026("7", "hold", `{}`, `"seven"`))
	if data, ok := newEventReader(resp.Body).next(); !ok || decode(t, []byte(data)).Method != "notifications/progress" {
		t.Fatalf("hold's first event: %q", data)
	}
	leave()
	resp.Body.Close()
	a := do(t, ctx, url, call2026("8", "awaitCancel", `{"requestId":7}`, ""))
	if r := decode(t, a.body); r.text() != "cancelled 7" {
		t.Fatalf("awaitCancel: %s", a.body)
	}
}

// A session whose server exits is gone: the request in flight and every
// later one get 404.
func TestSessionEndsWithItsChild(t *testing.T) {
	_, url := startBridge(t)
	ctx := withTimeout(t)
	session := initialize(t, ctx, url)
	if a := do(t, ctx, url, callInSession(session, "1", "exit", `{}`)); a.status != http.StatusNotFound {
		t.Fatalf("the request the server died on: status %d, body %s", a.status, a.body)
	}
	if a := do(t, ctx, url, callInSession(session, "2", "echo", `{"text":"hi"}`)); a.status != http.StatusNotFound {
		t.Fatalf("a later request: status %d", a.status)
	}
}

// A stateless request's headers must mirror its body, or it is refused 400
// with -32020 and never reaches the server; a 2026-07-28 error has its
// HTTP status.
func TestStatelessHeadersAndStatuses(t *testing.T) {
	_, url := startBridge(t)
	ctx := withTimeout(t)
	encoded := func(s string) string { return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(s)) + "?=" }
	tests := []struct {
		name   string
		edit   func(r *request)
		status int
		code   int // the error's, 0 for an answer
	}{
		{"mirrored", func(*request) {}, http.StatusOK, 0},
		{"name in Base64", func(r *request) { r.header["Mcp-Name"] = encoded("echo") }, http.StatusOK, 0},
		{"no Mcp-Method", func(r *request) { delete(r.header, "Mcp-Method") }, http.StatusBadRequest, codeHeaderMismatch},
		{"another method", func(r *request) { r.header["Mcp-Method"] = "tools/list" }, http.StatusBadRequest, codeHeaderMismatch},
		{"another name", func(r *request) { r.header["Mcp-Name"] = "other" }, http.StatusBadRequest, codeHeaderMismatch},
		{"no Mcp-Name", func(r *request) { delete(r.header, "Mcp-Name") }, http.StatusBadRequest, codeHeaderMismatch},
		{"another version", func(r *request) { r.header["MCP-Protocol-Version"] = "2026-08-01" }, http.StatusBadRequest, codeHeaderMismatch},
		{"broken Base64", func(r *request) { r.header["Mcp-Name"] = "=?base64?!!?=" }, http.StatusBadRequest, codeHeaderMismatch},
		{"not ASCII", func(r *request) { r.header["Mcp-Name"] = "\xc3\xa9cho" }, http.StatusBadRequest, codeHeaderMismatch},
		{"unknown tool", func(r *request) { *r = call2026("3", "nosuch", `{}`, "") }, http.StatusBadRequest, codeInvalidParams},
		{"unknown method", func(r *request) {
			r.header["Mcp-Method"] = "nosuch/method"
			r.body = `{"jsonrpc":"2.0","id":3,"method":"nosuch/method","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`
		}, http.StatusNotFound, codeMethodNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := call2026("3", "echo", `{"text":"hi"}`, "")
			tt.edit(&req)
			a := do(t, ctx, url, req)
			r := decode(t, a.body)
			failed := a.status != tt.status || string(r.ID) != "3"
			if tt.code == 0 {
				failed = failed || r.Error != nil || r.text() != "hi"
			} else {
				failed = failed || r.Error == nil || r.Error.Code != tt.code
			}
			if failed {
				t.Fatalf("status %d (want %d), body %s (want error code %d, 0: none)", a.status, tt.status, a.body, tt.code)
			}
		})
	}
}

// The HTTP rules the bridge keeps itself: the Host and Origin check of a
// loopback listener, the methods, Accept, Content-Type, the body's size and
// shape, and the headers of GET and DELETE.
func TestHTTPRules(t *testing.T) {
	_, url := startBridge(t)
	ctx := withTimeout(t)
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`
	pingHeaders := func(extra map[string]string) map[string]string {
		h := map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "ping"}
		for k, v := range extra {
			h[k] = v
		}
		return h
	}
	tests := []struct {
		name   string
		req    request
		status int
	}{
		{"a loopback Origin", request{header: pingHeaders(map[string]string{"Origin": "http://localhost:3000"}), body: ping}, http.StatusOK},
		{"another Host", request{header: pingHeaders(map[string]string{"Host": "evil.example"}), body: ping}, http.StatusForbidden},
		{"another Origin", request{header: pingHeaders(map[string]string{"Origin": "http://evil.example"}), body: ping}, http.StatusForbidden},
		{"PUT", request{method: http.MethodPut, body: ping}, http.StatusMethodNotAllowed},
		{"no SSE in Accept", request{header: pingHeaders(map[string]string{"Accept": "application/json"}), body: ping}, http.StatusNotAcceptable},
		{"text/plain", request{header: pingHeaders(map[string]string{"Content-Type": "text/plain"}), body: ping}, http.StatusUnsupportedMediaType},
		{"too large", request{header: pingHeaders(nil), body: `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", testLimits.maxMessage) + `"}}`}, http.StatusRequestEntityTooLarge},
		{"a batch", request{header: pingHeaders(nil), body: "[" + ping + "]"}, http.StatusBadRequest},
		{"not JSON", request{header: pingHeaders(nil), body: `{"jsonrpc":`}, http.StatusBadRequest},
		{"no method, no result", request{header: pingHeaders(nil), body: `{"jsonrpc":"2.0","id":1}`}, http.StatusBadRequest},
		{"a response without a session", request{header: pingHeaders(nil), body: `{"jsonrpc":"2.0","id":1,"result":{}}`}, http.StatusBadRequest},
		{"a session's request without its id", request{header: map[string]string{"MCP-Protocol-Version": "2025-11-25"}, body: `{"jsonrpc":"2.0","id":1,"method":"ping"}`}, http.StatusBadRequest},
		{"an unknown session", request{header: map[string]string{"Mcp-Session-Id": "nosuch"}, body: `{"jsonrpc":"2.0","id":1,"method":"ping"}`}, http.StatusNotFound},
		{"GET without a session", request{method: http.MethodGet, header: map[string]string{"Accept": "text/event-stream"}, noDefaultHeaders: true}, http.StatusMethodNotAllowed},
		{"DELETE without a session", request{method: http.MethodDelete}, http.StatusMethodNotAllowed},
		{"a stateless notification", request{header: pingHeaders(map[string]string{"Mcp-Method": "notifications/roots/list_changed"}), body: `{"jsonrpc":"2.0","method":"notifications/roots/list_changed","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`}, http.StatusAccepted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if a := do(t, ctx, url, tt.req); a.status != tt.status {
				t.Fatalf("status %d, want %d; body %s", a.status, tt.status, a.body)
			}
		})
	}
	t.Run("another path", func(t *testing.T) {
		if a := do(t, ctx, strings.TrimSuffix(url, "/mcp")+"/other", request{header: pingHeaders(nil), body: ping}); a.status != http.StatusNotFound {
			t.Fatalf("status %d", a.status)
		}
	})
}

// Concurrent sessions each have a child of their own, and every answer
// reaches its own client.
func TestConcurrentSessions(t *testing.T) {
	_, url := startBridge(t)
	ctx := withTimeout(t)
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for i := range 4 {
		wg.Go(func() {
			session := initialize(t, ctx, url)
			for j := range 5 {
				text := strings.Repeat(string(rune('a'+i)), j+1)
				a := do(t, ctx, url, callInSession(session, "1", "echo", `{"text":"`+text+`"}`))
				if got := decode(t, a.body).text(); got != text {
					errs <- "session " + session + " got " + got + ", want " + text
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// A request whose client went away is relayed no further; an answer the
// router cannot place is dropped, logged.
func TestRouterDropsAnswersNoOneWaitsFor(t *testing.T) {
	var logged bytes.Buffer
	r := &router{calls: map[string]*exchange{}, lim: testLimits, log: log.New(&logged, "", 0), label: "t"}
	x := &exchange{clientID: json.RawMessage(`1`), box: newMailbox(testLimits.maxQueued)}
	r.register(x)
	r.unregister(x)
	r.route([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`))
	if msgs, _, _ := x.box.take(); len(msgs) != 0 || !strings.Contains(logged.String(), "dropped an answer") {
		t.Fatalf("an answer for a closed exchange: delivered %q, logged %q", msgs, logged.String())
	}
}

// At most maxSessions sessions live: an initialize beyond is refused 503,
// and one that ends makes room.
func TestSessionsAreBounded(t *testing.T) {
	lim := testLimits
	lim.maxSessions = 1
	_, url := startBridgeWith(t, lim)
	ctx := withTimeout(t)
	first := initialize(t, ctx, url)
	init := request{body: `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`}
	a := do(t, ctx, url, init)
	if r := decode(t, a.body); a.status != http.StatusServiceUnavailable || a.header.Get("Mcp-Session-Id") != "" || r.Error == nil || string(r.ID) != "0" {
		t.Fatalf("an initialize beyond the bound: status %d, session %q, body %s", a.status, a.header.Get("Mcp-Session-Id"), a.body)
	}
	if a := do(t, ctx, url, request{method: http.MethodDelete, header: map[string]string{"Mcp-Session-Id": first}}); a.status != http.StatusNoContent {
		t.Fatalf("DELETE: status %d", a.status)
	}
	initialize(t, ctx, url)
}
