package main

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// ctxProbeKey is the key a test puts in the caller's context; a handler
// reads it from its own context.
type ctxProbeKey struct{}

// newContextProbeRuntime has one tool, "probe", that answers the value its
// context carries under ctxProbeKey, and whether that context is the
// executor's (it has the request's deadline).
func newContextProbeRuntime(t *testing.T) *Runtime {
	t.Helper()
	rt := newTestRuntime(t, RuntimeOptions{ServerInfo: Implementation{Name: "probe", Version: "1"}})
	err := rt.AddTool(Tool{Name: "probe"}, func(ctx context.Context, _ *HandlerRequest) (*ToolResult, error) {
		v, _ := ctx.Value(ctxProbeKey{}).(string)
		if _, ok := ctx.Deadline(); !ok {
			v += " (no deadline)"
		}
		return TextResult("value: " + v), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

// TestHandlerContextCarriesServeValues: a value put in the context given to
// Serve reads the same inside a tool, while the deadline stays the
// executor's.
func TestHandlerContextCarriesServeValues(t *testing.T) {
	rt := newContextProbeRuntime(t)
	in, out := newFeedReader(), newFrameRecorder()
	ctx := context.WithValue(context.Background(), ctxProbeKey{}, "from Serve")
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, rt, Options{Input: in, Output: out, Logger: quietLogger()}) }()
	in.feed(t, []byte(toolCall("1", "probe", meta2026With(""))+"\n"))
	frame := waitFor(t, out.frames, "the probe's answer")
	if !strings.Contains(frame, `value: from Serve"`) {
		t.Fatalf("answer = %s, want the value from Serve's context with a deadline", frame)
	}
	in.close(nil)
	if err := waitFor(t, done, "Serve to return"); err != nil {
		t.Fatal(err)
	}
}

// TestHandlerContextCarriesHTTPRequestValues: a value a middleware puts in
// the *http.Request's context reads the same inside a tool.
func TestHandlerContextCarriesHTTPRequestValues(t *testing.T) {
	rt := newContextProbeRuntime(t)
	h, err := NewHTTPHandler(rt, HTTPOptions{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	mw := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ctxProbeKey{}, "from the request")))
	})
	srv := httptest.NewServer(mw)
	t.Cleanup(func() { h.endStreams(); srv.Close(); h.Close() })
	s := &httpTestServer{t: t, url: srv.URL + "/mcp", h: h, rt: rt}
	resp := s.post(stateless("tools/call", "probe"), toolCall("1", "probe", meta2026With("")))
	if body := readBody(t, resp); !strings.Contains(body, `value: from the request"`) {
		t.Fatalf("answer = %s, want the value from the request's context with a deadline", body)
	}
}

// TestRequestSessionID: every message of a stdio connection carries the same
// non-empty SessionID, another connection another one; over HTTP it is the
// session's Mcp-Session-Id, and "" for a 2026 request.
func TestRequestSessionID(t *testing.T) {
	ids := make(chan string, 16)
	d := DispatcherFunc(func(_ context.Context, req *Request) Reply {
		ids <- req.SessionID
		return Reply{Result: []byte(`{}`)}
	})
	serveTwo := func() [2]string {
		h := startHarnessWith(t, Options{}, d)
		h.roundTrip(`{"jsonrpc":"2.0","id":1,"method":"a"}`)
		h.roundTrip(`{"jsonrpc":"2.0","id":2,"method":"b"}`)
		h.finish()
		return [2]string{<-ids, <-ids}
	}
	first, second := serveTwo(), serveTwo()
	if first[0] == "" || first[0] != first[1] || second[0] != second[1] || first[0] == second[0] {
		t.Fatalf("stdio session ids = %q then %q, want one non-empty id per connection", first, second)
	}

	s := newHTTPTestServer(t, nil, HTTPOptions{Logger: quietLogger()})
	var got []string
	rt := s.rt
	err := rt.AddTool(Tool{Name: "session_id"}, func(_ context.Context, req *HandlerRequest) (*ToolResult, error) {
		return TextResult("session " + req.SessionID), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	resp := s.post(nil, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`)
	sid := resp.Header.Get("Mcp-Session-Id")
	readBody(t, resp)
	body := readBody(t, s.post(map[string]string{"Mcp-Session-Id": sid}, toolCall("2", "session_id", "")))
	got = append(got, body)
	body = readBody(t, s.post(stateless("tools/call", "session_id"), toolCall("3", "session_id", meta2026With(""))))
	got = append(got, body)
	if sid == "" || !strings.Contains(got[0], "session "+sid+`"`) || !strings.Contains(got[1], `"session "`) {
		t.Fatalf("HTTP answers = %q, want the session id %q, then none", got, sid)
	}
}

// A job's context carries its caller's values and none of its cancellation:
// a context derived from the job's ends when the job is cancelled, not when
// the caller's context is, and context.Cause reports the job's own end.
func TestJobContextDetachedFromCallerCancellation(t *testing.T) {
	e, err := NewExecutor(ExecutorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	sub := e.newSubmitter()
	defer sub.close()
	caller, cancelCaller := context.WithCancelCause(context.WithValue(context.Background(), ctxProbeKey{}, "v"))
	type seen struct {
		value                       any
		derivedDoneAfterCallerEnded bool
		causeAfterCallerEnded       error
		causeAfterCancel            error
	}
	callerEnded, cancelled, result := make(chan struct{}), make(chan struct{}), make(chan seen, 1)
	j := &job{key: "k", indexed: true, work: workFunc(func(ctx context.Context) any {
		derived, stop := context.WithCancel(ctx)
		defer stop()
		var s seen
		s.value = ctx.Value(ctxProbeKey{})
		<-callerEnded
		select {
		case <-derived.Done():
			s.derivedDoneAfterCallerEnded = true
		default:
		}
		s.causeAfterCallerEnded = context.Cause(ctx)
		close(cancelled)
		<-derived.Done()
		s.causeAfterCancel = context.Cause(ctx)
		result <- s
		return nil
	})}
	j.ctx.values = caller
	if _, err := sub.submit(j, -1); err != nil {
		t.Fatal(err)
	}
	cancelCaller(errors.New("the caller went away"))
	close(callerEnded)
	<-cancelled
	sub.cancel("k")
	got := waitFor(t, result, "the job to see its cancellation")
	if got.value != "v" || got.derivedDoneAfterCallerEnded || got.causeAfterCallerEnded != nil || !errors.Is(got.causeAfterCancel, context.Canceled) {
		t.Fatalf("the job saw %+v; want the value, a derived context live after the caller ended, no cause then, context.Canceled after its own cancel", got)
	}
}

// BenchmarkJobContextValue looks a value up in a job's context, through a
// caller's context of a few layers, as a handler reading the principal or a
// trace does.
func BenchmarkJobContextValue(b *testing.B) {
	e, err := NewExecutor(ExecutorOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	sub := e.newSubmitter()
	defer sub.close()
	caller, cancel := context.WithCancel(context.WithValue(context.Background(), ctxProbeKey{}, "v"))
	defer cancel()
	done := make(chan struct{})
	j := &job{key: "k", indexed: true, work: workFunc(func(ctx context.Context) any {
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			if ctx.Value(ctxProbeKey{}) != "v" {
				b.Error("the caller's value is missing")
			}
		}
		b.StopTimer()
		close(done)
		return nil
	})}
	j.ctx.values = caller
	if _, err := sub.submit(j, -1); err != nil {
		b.Fatal(err)
	}
	<-done
}
