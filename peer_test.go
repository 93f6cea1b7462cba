package main

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"
)

// peerAnswer is what a handler's Peer.Request returned.
type peerAnswer struct {
	result json.RawMessage
	err    error
}

// askingDispatcher serves "ask", which sends the request's params to the
// client as a server-to-client sampling/createMessage request with a
// background context, reports what came back on answers, and answers
// {"answer": result}, or the client's error as "client refused: <message>",
// or -32603 for any other failure. "askWithCtx" does the same with the
// handler's context.
func askingDispatcher(answers chan<- peerAnswer) methodDispatcher {
	ask := func(ctx context.Context, req *Request) Reply {
		res, err := req.Peer.Request(ctx, "sampling/createMessage", req.Params)
		answers <- peerAnswer{result: res, err: err}
		if rpcErr, ok := errors.AsType[*RPCError](err); ok {
			return Reply{Error: &RPCError{Code: rpcErr.Code, Message: "client refused: " + rpcErr.Message}}
		}
		if err != nil {
			return Reply{Error: &RPCError{Code: CodeInternalError, Message: "asking the client failed"}}
		}
		return Reply{Result: json.RawMessage(`{"answer":` + string(res) + `}`)}
	}
	return methodDispatcher{
		"ask":        func(_ context.Context, req *Request) Reply { return ask(context.Background(), req) },
		"askWithCtx": ask,
	}
}

func startAskingHarness(t *testing.T, opts Options) (*harness, chan peerAnswer) {
	t.Helper()
	answers := make(chan peerAnswer, 100)
	return startHarnessWith(t, opts, askingDispatcher(answers)), answers
}

// A server-to-client request carries a server-chosen id and the method and
// params; the client's result or error comes back to the waiting handler.
func TestServerRequestRoundTrip(t *testing.T) {
	h, answers := startAskingHarness(t, Options{})
	h.expectAnswer(`{"jsonrpc":"2.0","id":1,"method":"ask","params":{"q":"first"}}`,
		`{"jsonrpc":"2.0","id":"mcpstdio-1","method":"sampling/createMessage","params":{"q":"first"}}`+"\n")
	h.expectAnswer(`{"jsonrpc":"2.0","id":"mcpstdio-1","result":{"text":"hi"}}`, `{"jsonrpc":"2.0","id":1,"result":{"answer":{"text":"hi"}}}`+"\n")
	if a := waitFor(t, answers, "the answer"); a.err != nil || string(a.result) != `{"text":"hi"}` {
		t.Fatalf("Peer.Request = %s, %v", a.result, a.err)
	}

	h.expectAnswer(`{"jsonrpc":"2.0","id":"two","method":"ask"}`, `{"jsonrpc":"2.0","id":"mcpstdio-2","method":"sampling/createMessage"}`+"\n")
	h.expectAnswer(`{"jsonrpc":"2.0","id":"mcpstdio-2","error":{"code":-1,"message":"User rejected","data":{"why":"no"}}}`,
		`{"jsonrpc":"2.0","id":"two","error":{"code":-1,"message":"client refused: User rejected"}}`+"\n")
	a := waitFor(t, answers, "the answer")
	rpcErr, ok := errors.AsType[*RPCError](a.err)
	if !ok || rpcErr.Code != -1 || rpcErr.Message != "User rejected" || !jsonEqual(t, mustMarshal(t, rpcErr.Data), `{"why":"no"}`) {
		t.Fatalf("Peer.Request error = %#v, want the client's *RPCError", a.err)
	}

	h.expectAnswer(`{"jsonrpc":"2.0","id":3,"method":"ask","params":{}}`, `{"jsonrpc":"2.0","id":"mcpstdio-3","method":"sampling/createMessage","params":{}}`+"\n")
	h.expectAnswer(`{"jsonrpc":"2.0","id":"mcpstdio-3","error":"not an object"}`, `{"jsonrpc":"2.0","id":3,"error":{"code":-32603,"message":"client refused: malformed error response from the client"}}`+"\n")
	waitFor(t, answers, "the answer")
	h.noFramesLeft()
}

func mustMarshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Two requests waiting at once each get their own answer, whatever the order
// of the client's responses.
func TestServerRequestsAnsweredOutOfOrder(t *testing.T) {
	h, _ := startAskingHarness(t, Options{})
	h.expectAnswer(`{"jsonrpc":"2.0","id":10,"method":"ask","params":{"n":10}}`, `{"jsonrpc":"2.0","id":"mcpstdio-1","method":"sampling/createMessage","params":{"n":10}}`+"\n")
	h.expectAnswer(`{"jsonrpc":"2.0","id":11,"method":"ask","params":{"n":11}}`, `{"jsonrpc":"2.0","id":"mcpstdio-2","method":"sampling/createMessage","params":{"n":11}}`+"\n")
	h.expectAnswer(`{"jsonrpc":"2.0","id":"mcpstdio-2","result":{"for":11}}`, `{"jsonrpc":"2.0","id":11,"result":{"answer":{"for":11}}}`+"\n")
	h.expectAnswer(`{"jsonrpc":"2.0","id":"mcpstdio-1","result":{"for":10}}`, `{"jsonrpc":"2.0","id":10,"result":{"answer":{"for":10}}}`+"\n")
	h.noFramesLeft()
}

// Responses whose id names no waiting server-to-client request are dropped
// without an answer and disturb nothing, not even a client request with that
// id; client ids and server ids never collide.
func TestServerRequestIgnoresOtherResponses(t *testing.T) {
	h, answers := startAskingHarness(t, Options{})
	h.expectAnswer(`{"jsonrpc":"2.0","id":5,"method":"ask"}`, `{"jsonrpc":"2.0","id":"mcpstdio-1","method":"sampling/createMessage"}`+"\n")
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":5,"result":{"wrong":"the client's own request id"}}`,
		`{"jsonrpc":"2.0","id":"5","error":{"code":1,"message":"wrong"}}`,
		`{"jsonrpc":"2.0","id":"mcpstdio-2","result":{"wrong":"not sent yet"}}`,
		`{"jsonrpc":"2.0","id":"mcpstdio-0","result":{}}`,
		`{"jsonrpc":"2.0","id":null,"result":{}}`,
		`{"jsonrpc":"2.0","id":[1],"result":{}}`,
		`{"jsonrpc":"2.0","result":{}}`,
	} {
		h.send(line)
	}
	h.sync()
	select {
	case a := <-answers:
		t.Fatalf("a stray response reached the handler: %s %v", a.result, a.err)
	default:
	}
	h.expectAnswer(`{"jsonrpc":"2.0","id":"mcpstdio-1","result":{"ok":1}}`, `{"jsonrpc":"2.0","id":5,"result":{"answer":{"ok":1}}}`+"\n")
	h.send(`{"jsonrpc":"2.0","id":"mcpstdio-1","result":{"ok":"repeated"}}`)
	h.sync()

	// A client request whose id is the server's next id.
	h.expectAnswer(`{"jsonrpc":"2.0","id":"mcpstdio-2","method":"ask"}`, `{"jsonrpc":"2.0","id":"mcpstdio-2","method":"sampling/createMessage"}`+"\n")
	h.expectAnswer(`{"jsonrpc":"2.0","id":"mcpstdio-2","result":{"same":"id"}}`, `{"jsonrpc":"2.0","id":"mcpstdio-2","result":{"answer":{"same":"id"}}}`+"\n")
	h.noFramesLeft()
}

// When the request that asked ends (cancelled or timed out), its waiting
// Peer.Request returns an error at once, nothing is written for it, and a
// late response from the client is dropped.
func TestServerRequestEndsWithItsRequest(t *testing.T) {
	cancel9 := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9}}`
	tests := []struct {
		name      string
		opts      Options
		method    string
		cancel    bool   // send notifications/cancelled for the request
		wantFrame string // a frame written for the request besides its server-to-client request
		wantErr   func(error) bool
	}{
		{"cancelled", Options{}, "ask", true, "", func(err error) bool { return errors.Is(err, ErrRequestEnded) }},
		{"cancelled, handler's context", Options{}, "askWithCtx", true, "", func(err error) bool {
			return errors.Is(err, ErrRequestEnded) || errors.Is(err, context.Canceled)
		}},
		{"timed out", Options{RequestTimeout: 50 * time.Millisecond}, "ask", false,
			`{"jsonrpc":"2.0","id":9,"error":{"code":-32603,"message":"Request execution timed out"}}` + "\n",
			func(err error) bool { return errors.Is(err, ErrRequestEnded) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, answers := startAskingHarness(t, tc.opts)
			h.send(`{"jsonrpc":"2.0","id":9,"method":"` + tc.method + `"}`)
			request := `{"jsonrpc":"2.0","id":"mcpstdio-1","method":"sampling/createMessage"}` + "\n"
			if tc.cancel {
				h.expect(request)
				h.send(cancel9)
			} else if got := h.next(); got == request { // a slow handler may time out before asking
				h.expect(tc.wantFrame)
			} else if got != tc.wantFrame {
				t.Fatalf("got %s, want %s", got, tc.wantFrame)
			}
			if a := waitFor(t, answers, "Peer.Request to return"); !tc.wantErr(a.err) {
				t.Fatalf("Peer.Request = %s, %v", a.result, a.err)
			}
			h.send(`{"jsonrpc":"2.0","id":"mcpstdio-1","result":{"late":true}}`)
			h.sync()
			h.noFramesLeft()
		})
	}
}

// At end of input a waiting Peer.Request fails with ErrNoClientInput, and a
// later one fails at once without writing anything; the request is still
// answered before Serve returns nil.
func TestServerRequestAtEndOfInput(t *testing.T) {
	errs := make(chan error, 2)
	d := methodDispatcher{"askTwice": func(ctx context.Context, req *Request) Reply {
		for range 2 {
			_, err := req.Peer.Request(context.Background(), "roots/list", nil)
			errs <- err
		}
		return Reply{Result: json.RawMessage(`{"asked":2}`)}
	}}
	h := startHarnessWith(t, Options{}, d)
	h.expectAnswer(`{"jsonrpc":"2.0","id":1,"method":"askTwice"}`, `{"jsonrpc":"2.0","id":"mcpstdio-1","method":"roots/list"}`+"\n")
	h.in.close(nil)
	for i := range 2 {
		if err := waitFor(t, errs, "Peer.Request to return"); !errors.Is(err, ErrNoClientInput) {
			t.Fatalf("Peer.Request %d = %v, want ErrNoClientInput", i+1, err)
		}
	}
	err, rest := h.wait()
	if err != nil || len(rest) != 1 || rest[0] != `{"jsonrpc":"2.0","id":1,"result":{"asked":2}}`+"\n" {
		t.Fatalf("Serve = %v, frames %q; want nil and only the response", err, rest)
	}
}

// A terminal output failure ends a waiting Peer.Request at once.
func TestServerRequestOutputFailure(t *testing.T) {
	w := newSwitchWriter()
	answers := make(chan peerAnswer, 1)
	h := startHarnessWith(t, Options{Output: w}, askingDispatcher(answers))
	h.send(`{"jsonrpc":"2.0","id":1,"method":"ask"}`)
	if got := waitFor(t, w.frames, "the server-to-client request"); got != `{"jsonrpc":"2.0","id":"mcpstdio-1","method":"sampling/createMessage"}`+"\n" {
		t.Fatalf("got %s", got)
	}
	w.failing.Store(true)
	h.send("unparsable") // its answer is the write that fails
	if err := waitFor(t, h.done, "Serve to return"); !errors.Is(err, ErrOutputFailed) || !errors.Is(err, errSwitchedOff) {
		t.Fatalf("Serve = %v", err)
	}
	h.ended = true
	if a := waitFor(t, answers, "Peer.Request to return"); !errors.Is(a.err, ErrClosed) {
		t.Fatalf("Peer.Request = %s, %v after the output failed, want ErrClosed", a.result, a.err)
	}
}

// Peer.Notify writes a notification as part of the request's output, before
// its response. Params that are not a JSON object are refused, for
// Peer.Request too, and nothing is written for them.
func TestPeerNotify(t *testing.T) {
	results := make(chan error, 10)
	d := methodDispatcher{"notify": func(ctx context.Context, req *Request) Reply {
		for _, params := range []string{`{"a":[1, 2]}`, ``, `[1]`, `"text"`, `{"a":`, `{"a":1}}`} {
			var raw json.RawMessage
			if params != "" {
				raw = json.RawMessage(params)
			}
			results <- req.Peer.Notify(ctx, "notifications/custom", raw)
		}
		_, err := req.Peer.Request(ctx, "roots/list", json.RawMessage(`[1]`))
		results <- err
		return Reply{Result: json.RawMessage(`{}`)}
	}}
	h := startHarnessWith(t, Options{}, d)
	h.send(`{"jsonrpc":"2.0","id":1,"method":"notify"}`)
	h.expect(`{"jsonrpc":"2.0","method":"notifications/custom","params":{"a":[1,2]}}` + "\n")
	h.expect(`{"jsonrpc":"2.0","method":"notifications/custom"}` + "\n")
	h.expect(`{"jsonrpc":"2.0","id":1,"result":{}}` + "\n")
	for i := range 2 {
		if err := waitFor(t, results, "Notify's result"); err != nil {
			t.Errorf("Notify %d = %v", i, err)
		}
	}
	for i := range 4 {
		if err := waitFor(t, results, "Notify's result"); !errors.Is(err, ErrInvalidNotification) {
			t.Errorf("Notify with bad params %d = %v, want ErrInvalidNotification", i, err)
		}
	}
	if err := waitFor(t, results, "Request's result"); err == nil {
		t.Error("Request with array params succeeded")
	}
	h.noFramesLeft()
}

// Once its request has been answered or cancelled, a Peer refuses with
// ErrRequestEnded and writes nothing, also once Serve has returned (ErrClosed
// is for a request the end of the connection cut).
func TestPeerAfterRequestEnded(t *testing.T) {
	tests := []struct {
		name string
		end  func(t *testing.T, h *harness, finish chan<- struct{}, ctxDone <-chan struct{})
	}{
		{"answered", func(t *testing.T, h *harness, finish chan<- struct{}, _ <-chan struct{}) {
			close(finish)
			h.expect(`{"jsonrpc":"2.0","id":1,"result":{"finished":true}}` + "\n")
		}},
		{"cancelled", func(t *testing.T, h *harness, _ chan<- struct{}, ctxDone <-chan struct{}) {
			h.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
			waitFor(t, ctxDone, "the handler's context to end")
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			peers := make(chan Peer, 1)
			finish := make(chan struct{})
			ctxDone := make(chan struct{}, 1)
			d := methodDispatcher{"stash": func(ctx context.Context, req *Request) Reply {
				peers <- req.Peer
				select {
				case <-finish:
					return Reply{Result: json.RawMessage(`{"finished":true}`)}
				case <-ctx.Done():
					ctxDone <- struct{}{}
					return Reply{Result: json.RawMessage(`{"cancelled":true}`)}
				}
			}}
			h := startHarnessWith(t, Options{}, d)
			h.send(`{"jsonrpc":"2.0","id":1,"method":"stash"}`)
			peer := waitFor(t, peers, "the handler to start")
			tc.end(t, h, finish, ctxDone)
			notify := func() error { return peer.Notify(context.Background(), "notifications/late", nil) }
			if err := returnsWithin(t, "Peer.Notify", notify); !errors.Is(err, ErrRequestEnded) {
				t.Errorf("Notify = %v, want ErrRequestEnded", err)
			}
			request := func() error {
				_, err := peer.Request(context.Background(), "roots/list", nil)
				return err
			}
			if err := returnsWithin(t, "Peer.Request", request); !errors.Is(err, ErrRequestEnded) {
				t.Errorf("Request = %v, want ErrRequestEnded", err)
			}
			h.sync()
			h.noFramesLeft()
			if err := returnsWithin(t, "Peer.Notify", notify); !errors.Is(err, ErrRequestEnded) {
				t.Errorf("Notify after Serve returned = %v, want ErrRequestEnded", err)
			}
			if err := returnsWithin(t, "Peer.Request", request); !errors.Is(err, ErrRequestEnded) {
				t.Errorf("Request after Serve returned = %v, want ErrRequestEnded", err)
			}
		})
	}
}
