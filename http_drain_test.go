package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// drainFixture is an HTTPHandler mounted at /mcp of an http.Server that
// serves an HTTPListener on a loopback port, as the documentation says to
// serve it: the reference catalog with a tool that blocks until released,
// and the handler's log messages on a channel.
type drainFixture struct {
	t        *testing.T
	h        *HTTPHandler
	srv      *http.Server
	addr     string
	accepted chan net.Conn // server side of each new connection
	started  chan struct{} // a "block" call started
	release  chan struct{} // closing it ends every "block" call
	logged   chan string   // the handler's log messages
	served   chan error    // srv.Serve's result
}

func newDrainFixture(t *testing.T, opts HTTPOptions) *drainFixture {
	t.Helper()
	f := &drainFixture{t: t, accepted: make(chan net.Conn, 16), started: make(chan struct{}, 16),
		release: make(chan struct{}), logged: make(chan string, 64), served: make(chan error, 1)}
	rt := newHTTPCatalogRuntime(t)
	if err := rt.AddTool(Tool{Name: "block"}, func(ctx context.Context, _ *HandlerRequest) (*ToolResult, error) {
		f.started <- struct{}{}
		select {
		case <-f.release:
			return TextResult("released"), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}); err != nil {
		t.Fatal(err)
	}
	opts.Logger = slog.New(messageHandler{f.logged})
	h, err := NewHTTPHandler(rt, opts)
	if err != nil {
		t.Fatal(err)
	}
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := NewHTTPListener(tcp, HTTPListenerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f.h, f.addr = h, ln.Addr().String()
	mux := http.NewServeMux()
	mux.Handle(mcpPath, h)
	f.srv = &http.Server{Handler: mux, ConnState: func(c net.Conn, state http.ConnState) {
		ln.ConnState(c, state)
		if state == http.StateNew {
			f.accepted <- c
		}
	}}
	go func() { f.served <- f.srv.Serve(ln) }()
	t.Cleanup(func() {
		f.srv.Close()
		h.Close()
	})
	return f
}

// client returns an httpTestServer that sends its requests to the fixture.
func (f *drainFixture) client() *httpTestServer {
	return &httpTestServer{t: f.t, url: "http://" + f.addr + mcpPath, h: f.h}
}

// shutdown runs h.Shutdown and then srv.Shutdown, as the documentation
// says, with ctx; it returns both results once both returned, and a third
// error when calls of the handler were still running as its Shutdown
// returned.
func (f *drainFixture) shutdown(ctx context.Context) <-chan [3]error {
	done := make(chan [3]error, 1)
	go func() {
		var errs [3]error
		errs[0] = f.h.Shutdown(ctx)
		if n := f.h.drain.calls.n.Load(); n != 0 {
			errs[2] = fmt.Errorf("%d calls of ServeHTTP running", n)
		}
		errs[1] = f.srv.Shutdown(ctx)
		done <- errs
	}()
	return done
}

// drained checks what shutdown returned: nil from both, no call of the
// handler running once its Shutdown returned, and Serve's
// http.ErrServerClosed.
func (f *drainFixture) drained(shut <-chan [3]error) {
	f.t.Helper()
	errs := <-shut
	if errs[0] != nil || errs[1] != nil {
		f.t.Fatalf("HTTPHandler.Shutdown: %v, http.Server.Shutdown: %v; want nil and nil", errs[0], errs[1])
	}
	if n := errs[2]; n != nil {
		f.t.Fatalf("HTTPHandler.Shutdown returned with %v", n)
	}
	if err := <-f.served; !errors.Is(err, http.ErrServerClosed) {
		f.t.Fatalf("Serve: %v, want http.ErrServerClosed", err)
	}
}

// messageHandler is a slog.Handler that puts each record's message on a
// channel, dropping it when the channel is full.
type messageHandler struct{ messages chan<- string }

func (m messageHandler) Enabled(context.Context, slog.Level) bool { return true }
func (m messageHandler) Handle(_ context.Context, r slog.Record) error {
	select {
	case m.messages <- r.Message:
	default:
	}
	return nil
}
func (m messageHandler) WithAttrs([]slog.Attr) slog.Handler { return m }
func (m messageHandler) WithGroup(string) slog.Handler      { return m }

// waitLogged returns once the handler logged message.
func (f *drainFixture) waitLogged(message string) {
	f.t.Helper()
	for got := range f.logged {
		if got == message {
			return
		}
	}
}

// dial opens a connection and returns it with the server's side of it.
func (f *drainFixture) dial() (client, server net.Conn) {
	f.t.Helper()
	c, err := net.Dial("tcp", f.addr)
	if err != nil {
		f.t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(failAfter))
	f.t.Cleanup(func() { c.Close() })
	return c, <-f.accepted
}

// callBlock sends a 2026 tools/call of "block" on a connection of its own
// and returns once the handler runs; the response arrives on the channel.
func (f *drainFixture) callBlock() <-chan string {
	f.t.Helper()
	c, _ := f.dial()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"block",` + meta2026 + `}}`
	_, err := io.WriteString(c, "POST /mcp HTTP/1.1\r\nHost: "+f.addr+"\r\nContent-Type: application/json\r\n"+
		"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: block\r\n"+
		"Content-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body)
	if err != nil {
		f.t.Fatal(err)
	}
	<-f.started
	answer := make(chan string, 1)
	go func() {
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			answer <- "error: " + err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		answer <- resp.Status + " " + string(b)
	}()
	return answer
}

// trickle starts a POST whose body never finishes: it returns once the
// handler is reading the body (the server sent 100 Continue), with what the
// client reads from then on.
func (f *drainFixture) trickle() <-chan string {
	f.t.Helper()
	c, _ := f.dial()
	if _, err := io.WriteString(c, "POST /mcp HTTP/1.1\r\nHost: "+f.addr+"\r\nContent-Type: application/json\r\n"+
		"Accept: application/json, text/event-stream\r\nExpect: 100-continue\r\nContent-Length: 1000\r\n\r\n"); err != nil {
		f.t.Fatal(err)
	}
	r := bufio.NewReader(c)
	if line, err := r.ReadString('\n'); err != nil || !strings.HasPrefix(line, "HTTP/1.1 100") {
		f.t.Fatalf("after the headers: %q (%v), want 100 Continue", line, err)
	}
	if line, err := r.ReadString('\n'); err != nil || line != "\r\n" {
		f.t.Fatalf("after 100 Continue: %q (%v)", line, err)
	}
	if _, err := io.WriteString(c, `{"jsonrpc":"2.0",`); err != nil {
		f.t.Fatal(err)
	}
	rest := make(chan string, 1)
	go func() {
		b, err := io.ReadAll(r)
		rest <- string(b) + errString(err)
	}()
	return rest
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return " error: " + err.Error()
}

// TestHTTPShutdownDrainsStreamsAndRequests: Shutdown ends an open GET
// stream at once, answers a new request "Server shutting down", lets the
// request in flight finish with its result, and returns nil only then; the
// server's Shutdown after it returns nil too.
func TestHTTPShutdownDrainsStreamsAndRequests(t *testing.T) {
	f := newDrainFixture(t, HTTPOptions{})
	s := f.client()
	session := s.legacySession(ProtocolVersion20251125, `{}`)
	ctx, cancel := context.WithTimeout(t.Context(), failAfter) // a stream that does not end fails the test
	defer cancel()
	get := s.do(ctx, http.MethodGet, map[string]string{headerSessionID: session[headerSessionID], "Accept": "text/event-stream"}, "")
	defer get.Body.Close()
	stream := newSSEReader(t, get)
	if ev, err := stream.next(); err != nil || ev.id == "" {
		t.Fatalf("the GET stream's priming event: %+v, %v", ev, err)
	}
	answer := f.callBlock()
	shut := f.shutdown(context.Background())
	f.waitLogged("mcpstdio: HTTP drain started")
	if ev, err := stream.next(); err != io.EOF {
		t.Fatalf("the GET stream after Shutdown started: %+v, %v; want its end", ev, err)
	}
	late := s.post(stateless("tools/list", ""), rawListBody)
	if body := readBody(t, late); !strings.Contains(body, `"code":-32603`) || !strings.Contains(body, errShuttingDown.Message) {
		t.Fatalf("a request after Shutdown started: status %d, body %s; want -32603 %q", late.StatusCode, body, errShuttingDown.Message)
	}
	select {
	case errs := <-shut:
		t.Fatalf("Shutdown returned %v with a request in flight", errs)
	default:
	}
	close(f.release)
	if got := <-answer; !strings.HasPrefix(got, "200 OK") || !strings.Contains(got, "released") {
		t.Fatalf("the request in flight got %q, want its result", got)
	}
	f.drained(shut)
}

// TestHTTPShutdownTakesAnswersToRequestsInFlight: while a request waits for
// the client's answer to its elicitation, Shutdown still takes the POST
// that carries it, on a new connection, and the request finishes.
func TestHTTPShutdownTakesAnswersToRequestsInFlight(t *testing.T) {
	f := newDrainFixture(t, HTTPOptions{})
	s := f.client()
	session := s.legacySession(ProtocolVersion20251125, `{"elicitation":{}}`)
	resp := s.post(session, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"test_elicitation","arguments":{"message":"Who are you?"}}}`)
	defer resp.Body.Close()
	events := newSSEReader(t, resp)
	var ask struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if got := events.nextMessage(); json.Unmarshal([]byte(got), &ask) != nil || ask.Method != "elicitation/create" {
		t.Fatalf("event %s, want an elicitation/create request", got)
	}
	shut := f.shutdown(context.Background())
	f.waitLogged("mcpstdio: HTTP drain started")
	answer := s.post(session, `{"jsonrpc":"2.0","id":`+string(ask.ID)+`,"result":{"action":"accept","content":{"username":"ada","email":"ada@example.com"}}}`)
	if body := readBody(t, answer); answer.StatusCode != http.StatusAccepted {
		t.Fatalf("posting the answer during the drain: status %d, body %s; want 202", answer.StatusCode, body)
	}
	if got := events.nextMessage(); !strings.Contains(got, `"id":5,"result"`) || !strings.Contains(got, "accept") {
		t.Fatalf("final event %s, want the tool's result with the client's answer", got)
	}
	f.drained(shut)
}

// TestHTTPShutdownClosesUnusedConnections: the server's Shutdown after the
// handler's closes a connection on which no request arrived at once (the
// HTTPListener's Close), rather than waiting 5 seconds for it.
func TestHTTPShutdownClosesUnusedConnections(t *testing.T) {
	f := newDrainFixture(t, HTTPOptions{})
	unused, _ := f.dial()
	shut := f.shutdown(context.Background())
	if n, err := unused.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Fatalf("the unused connection: read %d bytes, %v; want EOF", n, err)
	}
	f.drained(shut)
}

// TestHTTPShutdownCutsBodyReads: once no message is in flight, a client
// trickling a body is answered 503 "Server shutting down" and its
// connection closed, without waiting for ReadBodyTimeout (an hour here),
// while the request in flight before it still gets its result.
func TestHTTPShutdownCutsBodyReads(t *testing.T) {
	f := newDrainFixture(t, HTTPOptions{ReadBodyTimeout: time.Hour})
	answer := f.callBlock()
	trickled := f.trickle()
	shut := f.shutdown(context.Background())
	f.waitLogged("mcpstdio: HTTP drain started")
	close(f.release)
	if got := <-answer; !strings.HasPrefix(got, "200 OK") || !strings.Contains(got, "released") {
		t.Fatalf("the request in flight got %q, want its result", got)
	}
	got := <-trickled
	if !strings.HasPrefix(got, "HTTP/1.1 503") || !strings.Contains(got, errShuttingDown.Message) || !strings.Contains(got, "Connection: close") {
		t.Fatalf("the trickling client read %q, want 503 %q and the connection closed", got, errShuttingDown.Message)
	}
	f.drained(shut)
}

// TestHTTPShutdownContextEnds: when ctx ends before the request in flight
// is answered, Shutdown returns ctx's error and closes the handler: the
// request is cancelled and answered.
func TestHTTPShutdownContextEnds(t *testing.T) {
	f := newDrainFixture(t, HTTPOptions{RequestTimeout: -1})
	answer := f.callBlock()
	ctx, cancel := context.WithCancel(context.Background())
	shut := make(chan error, 1)
	go func() { shut <- f.h.Shutdown(ctx) }()
	f.waitLogged("mcpstdio: HTTP drain started")
	cancel()
	if err := <-shut; !errors.Is(err, context.Canceled) {
		t.Fatalf("Shutdown: %v, want context.Canceled", err)
	}
	if got := <-answer; strings.Contains(got, "released") {
		t.Fatalf("the request in flight got %q, want it cancelled", got)
	}
}
