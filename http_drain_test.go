package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// drainFixture is an HTTPHandler served by an http.Server on a loopback
// port, with ConnState installed, a tool that blocks until released, and
// the handler's log messages on a channel.
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
	rt := newTestRuntime(t, testOptions())
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
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f.h, f.addr = h, ln.Addr().String()
	f.srv = &http.Server{Handler: h, ConnState: func(c net.Conn, state http.ConnState) {
		h.ConnState(c, state)
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

// TestHTTPShutdownClosesUnusedConnectionsAtOnce: Shutdown closes a
// connection that never carried a request as soon as it starts, while a
// request is still in flight, then lets that request finish and returns nil.
func TestHTTPShutdownClosesUnusedConnectionsAtOnce(t *testing.T) {
	f := newDrainFixture(t, HTTPOptions{})
	_, unused := f.dial()
	answer := f.callBlock()
	shut := make(chan error, 1)
	go func() { shut <- f.h.Shutdown(context.Background(), f.srv) }()
	f.waitLogged("mcpstdio: HTTP drain started")
	// A closed net.Conn refuses a deadline at once; an open one takes it.
	if err := unused.SetReadDeadline(time.Time{}); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("the unused connection is open once the drain started (SetReadDeadline: %v)", err)
	}
	close(f.release)
	if got := <-answer; !strings.HasPrefix(got, "200 OK") || !strings.Contains(got, "released") {
		t.Fatalf("the request in flight got %q, want its result", got)
	}
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := <-f.served; !errors.Is(err, http.ErrServerClosed) {
		t.Fatalf("Serve: %v, want http.ErrServerClosed", err)
	}
}

// TestHTTPShutdownCutsSlowClients: once the request in flight is answered,
// a client still trickling a body is cut after the grace period, without
// waiting for ReadBodyTimeout (an hour here) and without an answer.
func TestHTTPShutdownCutsSlowClients(t *testing.T) {
	f := newDrainFixture(t, HTTPOptions{WriteTimeout: 10 * time.Millisecond, ReadBodyTimeout: time.Hour})
	answer := f.callBlock()
	trickled := f.trickle()
	shut := make(chan error, 1)
	go func() { shut <- f.h.Shutdown(context.Background(), f.srv) }()
	f.waitLogged("mcpstdio: HTTP drain started")
	close(f.release)
	if got := <-answer; !strings.HasPrefix(got, "200 OK") || !strings.Contains(got, "released") {
		t.Fatalf("the request in flight got %q, want its result", got)
	}
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if got := <-trickled; strings.Contains(got, "HTTP/1.1") {
		t.Fatalf("the trickling client read %q, want the connection cut without an answer", got)
	}
}

// TestHTTPShutdownContextEnds: when ctx ends before the request in flight
// is answered, Shutdown cuts every connection and returns ctx's error; the
// request is cancelled.
func TestHTTPShutdownContextEnds(t *testing.T) {
	f := newDrainFixture(t, HTTPOptions{RequestTimeout: -1})
	answer := f.callBlock()
	ctx, cancel := context.WithCancel(context.Background())
	shut := make(chan error, 1)
	go func() { shut <- f.h.Shutdown(ctx, f.srv) }()
	f.waitLogged("mcpstdio: HTTP drain started")
	cancel()
	if err := <-shut; !errors.Is(err, context.Canceled) {
		t.Fatalf("Shutdown: %v, want context.Canceled", err)
	}
	if got := <-answer; !strings.HasPrefix(got, "error:") {
		t.Fatalf("the request in flight got %q, want its connection cut", got)
	}
}
