package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// seenMessage is what a middleware saw of one message.
type seenMessage struct {
	method, id, params string
	principal          string
	session            Session
	sessionID          string
	header             map[string]string
}

// recordingMiddleware passes every message on, after sending what it saw of
// it to seen, which must have room.
func recordingMiddleware(seen chan<- seenMessage) Middleware {
	return func(next Dispatcher) Dispatcher {
		return DispatcherFunc(func(ctx context.Context, req *Request) Reply {
			seen <- seenMessage{
				method: req.Method, id: string(req.ID), params: string(req.Params),
				principal: PrincipalFromContext(ctx).ID(),
				session:   req.Session, sessionID: req.SessionID, header: req.Header,
			}
			return next.Dispatch(ctx, req)
		})
	}
}

// seenMethods returns the methods of what seen holds now.
func seenMethods(seen <-chan seenMessage) []string {
	var methods []string
	for {
		select {
		case m := <-seen:
			methods = append(methods, m.method)
		default:
			return methods
		}
	}
}

// seenMethod waits for the middleware to see a message of method, skipping
// others, and returns it.
func seenMethod(t *testing.T, seen <-chan seenMessage, method string) seenMessage {
	t.Helper()
	for {
		if m := waitFor(t, seen, "the middleware to see "+method); m.method == method {
			return m
		}
	}
}

// startMemoryAs serves d over an in-memory pair whose Serve context carries
// p, as an application serving stdio for a known user does.
func startMemoryAs(t *testing.T, d Dispatcher, p *Principal) (*MemoryClient, <-chan error) {
	t.Helper()
	tr, client, err := NewMemoryTransport(d, Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	done, returned := make(chan error, 1), make(chan struct{})
	go func() {
		done <- tr.Serve(ContextWithPrincipal(context.Background(), p))
		close(returned)
	}()
	t.Cleanup(func() {
		client.Close()
		waitFor(t, returned, "Serve to return")
	})
	return client, done
}

// A middleware answers a request itself with an error (the handler never
// runs) or passes it to the Runtime; a notification it answers gets
// nothing.
func TestMiddlewareAnswersOrPasses(t *testing.T) {
	rt := newTestRuntime(t, RuntimeOptions{ServerInfo: Implementation{Name: "t", Version: "1"}})
	ran := make(chan string, 10)
	for _, name := range []string{"open", "closed"} {
		mustAddTool(t, rt, Tool{Name: name}, func(context.Context, *HandlerRequest) (*ToolResult, error) {
			ran <- name
			return TextResult(name), nil
		})
	}
	closed := &RPCError{Code: -32010, Message: "Tool closed"}
	rt.Use(func(next Dispatcher) Dispatcher {
		return DispatcherFunc(func(ctx context.Context, req *Request) Reply {
			if strings.Contains(string(req.Params), `"name":"closed"`) || req.Method == "notifications/closed" {
				return Reply{Error: closed}
			}
			return next.Dispatch(ctx, req)
		})
	})
	h := startHarnessWith(t, Options{}, rt)
	tests := []struct {
		name, line, want, ran string
	}{
		{"passes", toolCall("1", "open", meta2026), `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"open"}],"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"t","version":"1"}}}}` + "\n", "open"},
		{"answers", toolCall("2", "closed", meta2026), `{"jsonrpc":"2.0","id":2,"error":{"code":-32010,"message":"Tool closed"}}` + "\n", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h.expectAnswer(tc.line, tc.want)
			select {
			case name := <-ran:
				if name != tc.ran {
					t.Fatalf("the handler of %s ran, want %q", name, tc.ran)
				}
			default:
				if tc.ran != "" {
					t.Fatalf("the handler of %s did not run", tc.ran)
				}
			}
		})
	}
	h.send(`{"jsonrpc":"2.0","method":"notifications/closed"}`)
	h.noFramesLeft()
	if len(ran) != 0 {
		t.Fatalf("the handler of %s ran after the others", <-ran)
	}
}

// Middleware run outermost first: the first given to Use outside the later
// ones, an earlier Use's outside a later one's; and each Middleware is
// called once, however many Use calls follow it.
func TestMiddlewareOrder(t *testing.T) {
	rt := newTestRuntime(t, testOptions())
	var mu sync.Mutex
	var trace []string
	note := func(s string) {
		mu.Lock()
		trace = append(trace, s)
		mu.Unlock()
	}
	built := map[string]int{}
	layer := func(name string) Middleware {
		return func(next Dispatcher) Dispatcher {
			built[name]++
			return DispatcherFunc(func(ctx context.Context, req *Request) Reply {
				note(name + ">")
				defer note("<" + name)
				return next.Dispatch(ctx, req)
			})
		}
	}
	mustAddTool(t, rt, Tool{Name: "t"}, func(context.Context, *HandlerRequest) (*ToolResult, error) {
		note("handler")
		return TextResult("t"), nil
	})
	rt.Use(layer("a"), layer("b"))
	rt.Use(layer("c"))
	rt.Use()
	if r := dispatch(rt, statelessRequest("tools/call", `{"name":"t"}`)); r.Error != nil {
		t.Fatal(r.Error)
	}
	if want := []string{"a>", "b>", "c>", "handler", "<c", "<b", "<a"}; !slices.Equal(trace, want) {
		t.Fatalf("trace %v, want %v", trace, want)
	}
	if want := map[string]int{"a": 1, "b": 1, "c": 1}; fmt.Sprint(built) != fmt.Sprint(want) {
		t.Fatalf("middleware built %v times, want once each", built)
	}
}

// A middleware sees each message's method, params, principal, session and
// headers, on stdio (the principal from Serve's context) and over HTTP (the
// principal from the bearer token; every header of the POST, where the
// Runtime alone is given none). Every notification but
// notifications/cancelled passes through it.
func TestMiddlewareSeesTheRequest(t *testing.T) {
	probe := func(rt *Runtime, entered chan<- struct{}) {
		mustAddTool(t, rt, Tool{Name: "probe"}, echoTool("probed"))
		mustAddTool(t, rt, Tool{Name: "block"}, func(ctx context.Context, _ *HandlerRequest) (*ToolResult, error) {
			entered <- struct{}{}
			<-ctx.Done()
			return nil, ctx.Err()
		})
	}
	t.Run("stdio", func(t *testing.T) {
		rt := newTestRuntime(t, testOptions())
		entered := make(chan struct{}, 1)
		probe(rt, entered)
		seen := make(chan seenMessage, 100)
		rt.Use(recordingMiddleware(seen))
		c, done := startMemoryAs(t, rt, &Principal{Subject: "alice"})
		roundTripMemory(t, c, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
		ctx := context.Background()
		c.Send(ctx, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
		roundTripMemory(t, c, `{"jsonrpc":"2.0","id":"p","method":"tools/call","params":{"name":"probe","arguments":{"n":1}}}`)
		c.Send(ctx, []byte(`{"jsonrpc":"2.0","id":"b","method":"tools/call","params":{"name":"block"}}`))
		waitFor(t, entered, "the blocking handler")
		c.Send(ctx, []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"b"}}`))
		c.Close()
		if err := waitFor(t, done, "Serve to return"); err != nil {
			t.Fatal(err)
		}
		all := make([]seenMessage, 0, len(seen))
		for len(seen) > 0 {
			all = append(all, <-seen)
		}
		var methods []string
		for _, m := range all {
			methods = append(methods, m.method)
		}
		slices.Sort(methods)
		if want := []string{"initialize", "notifications/initialized", "tools/call", "tools/call"}; !slices.Equal(methods, want) {
			t.Fatalf("the middleware saw %v, want %v", methods, want)
		}
		var call seenMessage
		for _, m := range all {
			if m.id == `"p"` {
				call = m
			}
		}
		if call.params != `{"name":"probe","arguments":{"n":1}}` || call.principal != "alice" ||
			call.session.ProtocolVersion != ProtocolVersion20251125 || call.sessionID == "" ||
			call.header[headerProtocolVersion] != ProtocolVersion20251125 {
			t.Fatalf("the middleware saw %+v", call)
		}
	})
	t.Run("HTTP", func(t *testing.T) {
		s := newAuthTestServer(t, HTTPOptions{})
		seen := make(chan seenMessage, 100)
		s.rt.Use(recordingMiddleware(seen))
		header := bearer("bob", stateless("tools/call", "whoami"))
		header["X-Request-Tag"] = "t1"
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami","arguments":{},` + meta2026 + `}}`
		if resp := s.post(header, body); resp.StatusCode != http.StatusOK || !strings.Contains(readBody(t, resp), "principal bob") {
			t.Fatalf("2026 tools/call: status %d", resp.StatusCode)
		}
		call := seenMethod(t, seen, "tools/call")
		if call.params != `{"name":"whoami","arguments":{},`+meta2026+`}` || call.principal != "bob" || call.sessionID != "" ||
			call.header["x-request-tag"] != "t1" || call.header["mcp-name"] != "whoami" {
			t.Fatalf("2026: the middleware saw %+v", call)
		}

		session := s.legacySessionWith(ProtocolVersion20251125, `{}`, bearer("bob", map[string]string{"X-Request-Tag": "t2"}))
		if m := seenMethod(t, seen, "notifications/initialized"); m.sessionID != session[headerSessionID] {
			t.Fatalf("notifications/initialized seen in session %q, want %q", m.sessionID, session[headerSessionID])
		}
		if resp := s.post(session, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); resp.StatusCode != http.StatusOK {
			t.Fatalf("tools/list in a session: status %d", resp.StatusCode)
		}
		list := seenMethod(t, seen, "tools/list")
		if list.principal != "bob" || list.sessionID != session[headerSessionID] || list.session.ProtocolVersion != ProtocolVersion20251125 ||
			list.header["x-request-tag"] != "t2" || list.header[headerProtocolVersion] != ProtocolVersion20251125 {
			t.Fatalf("in a session: the middleware saw %+v", list)
		}
	})
}

// With middleware installed, catalog changes still reach clients: the
// initialize era's list_changed and 2026 listen streams, on stdio and over
// HTTP.
func TestMiddlewareKeepsChangeNotifications(t *testing.T) {
	addTool := func(t *testing.T, rt *Runtime, name string) {
		mustAddTool(t, rt, Tool{Name: name}, echoTool(name))
	}
	t.Run("stdio initialize era", func(t *testing.T) {
		rt := subscriptionRuntime(t, RuntimeOptions{ToolsListChanged: true})
		seen := make(chan seenMessage, 100)
		rt.Use(recordingMiddleware(seen))
		h := startHarnessWith(t, Options{}, rt)
		h.initialize(ProtocolVersion20250618)
		seenMethod(t, seen, "notifications/initialized")
		addTool(t, rt, "late")
		h.expect(legacyFrame("notifications/tools/list_changed", ""))
		h.noFramesLeft()
	})
	t.Run("stdio listen stream", func(t *testing.T) {
		rt := subscriptionRuntime(t, RuntimeOptions{ToolsListChanged: true})
		seen := make(chan seenMessage, 100)
		rt.Use(recordingMiddleware(seen))
		h := startHarnessWith(t, Options{}, rt)
		h.listen(`"s"`, `{"toolsListChanged":true}`, `{"toolsListChanged":true}`)
		seenMethod(t, seen, "subscriptions/listen")
		addTool(t, rt, "late")
		h.expect(taggedFrame("notifications/tools/list_changed", `"s"`, ""))
		h.noFramesLeft()
	})
	t.Run("HTTP session stream", func(t *testing.T) {
		s := newHTTPTestServer(t, nil, HTTPOptions{})
		seen := make(chan seenMessage, 100)
		s.rt.Use(recordingMiddleware(seen))
		session := s.legacySession(ProtocolVersion20250618, `{}`)
		seenMethod(t, seen, "notifications/initialized")
		get := s.do(context.Background(), http.MethodGet, map[string]string{headerSessionID: session[headerSessionID], "Accept": "text/event-stream"}, "")
		defer get.Body.Close()
		events := newSSEReader(t, get)
		addTool(t, s.rt, "late")
		if got := events.nextMessage(); got != `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}` {
			t.Fatalf("GET stream: %s, want tools/list_changed", got)
		}
	})
	t.Run("HTTP listen stream", func(t *testing.T) {
		s := newHTTPTestServer(t, nil, HTTPOptions{})
		seen := make(chan seenMessage, 100)
		s.rt.Use(recordingMiddleware(seen))
		resp := s.post(stateless("subscriptions/listen", ""), `{"jsonrpc":"2.0","id":"L","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},`+meta2026+`}}`)
		defer resp.Body.Close()
		events := newSSEReader(t, resp)
		if got := events.nextMessage(); !strings.Contains(got, "notifications/subscriptions/acknowledged") {
			t.Fatalf("first event %s, want the acknowledgement", got)
		}
		seenMethod(t, seen, "subscriptions/listen")
		addTool(t, s.rt, "late")
		if got := events.nextMessage(); !strings.Contains(got, "notifications/tools/list_changed") || !strings.Contains(got, `subscriptionId":"L"`) {
			t.Fatalf("event %s, want the tagged tools/list_changed", got)
		}
	})
}

// With middleware installed, a call becomes a task, the task runs to its end
// after the call was answered, and the tasks extension's requests pass
// through the middleware.
func TestMiddlewareKeepsTasks(t *testing.T) {
	e := newTaskEnv(t, TaskOptions{})
	g := newGate()
	e.addTool("job", TaskOptional, 0, g.handler)
	seen := make(chan seenMessage, 100)
	e.rt.Use(recordingMiddleware(seen))
	h := startHarnessWith(t, Options{}, e.rt)
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + tasksCaps + `}`
	created := decodeFrame(t, h.roundTrip(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"job",`+meta+`}}`))
	if !strings.Contains(string(created.Result), `"taskId":"task-1","status":"working"`) {
		t.Fatalf("tools/call answered %s", created.Result)
	}
	waitFor(t, g.entered, "the task's handler")
	g.release <- gateResult{res: TextResult("built")}
	e.awaitStatus("task-1", TaskCompleted)
	got := decodeFrame(t, h.roundTrip(`{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"taskId":"task-1",`+meta+`}}`))
	if !strings.Contains(string(got.Result), `"status":"completed"`) || !strings.Contains(string(got.Result), `"text":"built"`) {
		t.Fatalf("tasks/get answered %s", got.Result)
	}
	h.noFramesLeft()
	if methods := seenMethods(seen); !slices.Equal(methods, []string{"tools/call", "tasks/get"}) {
		t.Fatalf("the middleware saw %v, want tools/call and tasks/get", methods)
	}
}

// With middleware installed, an Inline tool's call still runs on the owner,
// middleware included: it is answered while the only worker is busy and
// there is no queue, where a call for a worker is refused.
func TestMiddlewareKeepsInlineTools(t *testing.T) {
	entered, release := make(chan struct{}, 1), make(chan struct{})
	rt := inlineRuntime(t, entered, release)
	seen := make(chan seenMessage, 100)
	rt.Use(recordingMiddleware(seen))
	h := startHarnessWith(t, Options{MaxConcurrency: 1, MaxQueue: None}, rt)
	h.send(inlineCall(1, "slow", ""))
	waitFor(t, entered, "the slow tool")
	h.expectAnswer(inlineCall(2, "quick", ""), toolAnswer(2, "quick"))
	h.expectAnswer(inlineCall(3, "slow", ""), `{"jsonrpc":"2.0","id":3,"error":{"code":-32603,"message":"Server execution capacity exhausted"}}`+"\n")
	if m := seenMethod(t, seen, "tools/call"); m.id != "1" {
		t.Fatalf("first seen: call %s", m.id)
	}
	if m := seenMethod(t, seen, "tools/call"); m.id != "2" {
		t.Fatalf("second seen: call %s, want the inline call 2", m.id)
	}
	close(release)
	h.expect(toolAnswer(1, "slow"))
	h.noFramesLeft()
}

// A middleware that panics fails the request it was serving, answered
// -32603 "Request worker failed" whether a worker or the connection's owner
// (an inline call) ran it, and the connection goes on.
func TestMiddlewarePanicFailsItsRequest(t *testing.T) {
	rt := inlineRuntime(t, make(chan struct{}, 1), make(chan struct{}))
	mustAddTool(t, rt, Tool{Name: "worker"}, echoTool("worker"))
	rt.Use(func(next Dispatcher) Dispatcher {
		return DispatcherFunc(func(ctx context.Context, req *Request) Reply {
			if strings.Contains(string(req.Params), `"panic":true`) {
				panic("middleware panic")
			}
			return next.Dispatch(ctx, req)
		})
	})
	h := startHarnessWith(t, Options{}, rt)
	failed := `{"jsonrpc":"2.0","id":%d,"error":{"code":-32603,"message":"Request worker failed"}}` + "\n"
	for i, tool := range []string{"quick", "worker"} {
		h.expectAnswer(inlineCall(2*i+1, tool, `,"panic":true`), fmt.Sprintf(failed, 2*i+1))
		h.expectAnswer(inlineCall(2*i+2, tool, ""), toolAnswer(2*i+2, tool))
	}
	h.noFramesLeft()
}

// A middleware may keep the Request and the Reply it saw after it returned:
// the transport's next messages change neither, though they are inline
// calls, whose records the transports reuse (a stdio connection's, a 2026
// POST's) and whose answers a 2026 POST builds in the buffer it keeps for
// the next one.
func TestMiddlewareMayKeepRequestAndReply(t *testing.T) {
	params := func(i int) string {
		return `{"name":"echo","arguments":{"text":"text ` + fmt.Sprint(i) + `"},` + meta2026 + `}`
	}
	echo := func(i int) string {
		return `{"jsonrpc":"2.0","id":` + fmt.Sprint(i) + `,"method":"tools/call","params":` + params(i) + `}`
	}
	for _, tc := range []struct {
		name  string
		serve func(t *testing.T, rt *Runtime) (call func(body string) string)
	}{
		{"stdio", func(t *testing.T, rt *Runtime) func(string) string {
			c, _ := startMemoryAs(t, rt, nil)
			return func(body string) string { return roundTripMemory(t, c, body) }
		}},
		{"HTTP", func(t *testing.T, rt *Runtime) func(string) string {
			s := newHTTPTestServer(t, rt, HTTPOptions{})
			return func(body string) string {
				return readBody(t, s.post(stateless("tools/call", "echo"), body))
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := newCatalogRuntime(t)
			type kept struct {
				req   *Request
				reply Reply
			}
			const calls = 10
			keep := make(chan kept, calls)
			rt.Use(func(next Dispatcher) Dispatcher {
				return DispatcherFunc(func(ctx context.Context, req *Request) Reply {
					reply := next.Dispatch(ctx, req)
					keep <- kept{req, reply}
					return reply
				})
			})
			call := tc.serve(t, rt)
			for i := range calls {
				if answer := call(echo(i)); !strings.Contains(answer, fmt.Sprintf(`"text":"text %d"`, i)) {
					t.Fatalf("call %d answered %s", i, answer)
				}
			}
			for i := range calls {
				k := waitFor(t, keep, "a kept call")
				if k.req.Method != "tools/call" || string(k.req.ID) != fmt.Sprint(i) || string(k.req.Params) != params(i) {
					t.Errorf("kept request %d is now %s %s %s", i, k.req.Method, k.req.ID, k.req.Params)
				}
				if !strings.Contains(string(k.reply.Result), fmt.Sprintf(`"text":"text %d"`, i)) {
					t.Errorf("kept result %d is now %s", i, k.reply.Result)
				}
			}
		})
	}
}

// A middleware sees what a handler asks the client (initialize era) through
// the Peer of the Request it hands on.
func TestMiddlewareWatchesServerToClientRequests(t *testing.T) {
	rt := newTestRuntime(t, testOptions())
	mustAddTool(t, rt, Tool{Name: "roots"}, func(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
		roots, err := req.ListRoots(ctx, "r")
		if err != nil {
			return nil, err
		}
		return TextResult(fmt.Sprintf("%d roots", len(roots))), nil
	})
	asked := make(chan string, 10)
	rt.Use(func(next Dispatcher) Dispatcher {
		return DispatcherFunc(func(ctx context.Context, req *Request) Reply {
			if req.Peer == nil {
				return next.Dispatch(ctx, req)
			}
			watched := *req
			watched.Peer = watchingPeer{req.Peer, asked}
			return next.Dispatch(ctx, &watched)
		})
	})
	h := startHarnessWith(t, Options{}, rt)
	h.roundTrip(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"roots":{}},"clientInfo":{"name":"cli","version":"0.1"}}}`)
	h.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"roots"}}`)
	ask := decodeFrame(t, h.next())
	if ask.Method != "roots/list" {
		t.Fatalf("the server asked %+v, want roots/list", ask)
	}
	h.send(`{"jsonrpc":"2.0","id":` + string(ask.ID) + `,"result":{"roots":[{"uri":"file:///a"},{"uri":"file:///b"}]}}`)
	if got := decodeFrame(t, h.next()); !strings.Contains(string(got.Result), `"text":"2 roots"`) {
		t.Fatalf("tools/call answered %+v", got)
	}
	if got := waitFor(t, asked, "the watched request"); got != `roots/list -> {"roots":[{"uri":"file:///a"},{"uri":"file:///b"}]}` {
		t.Fatalf("the middleware's Peer saw %s", got)
	}
	h.noFramesLeft()
}

// watchingPeer is a Peer that reports each request the handler sends, with
// the client's answer, to asked.
type watchingPeer struct {
	Peer
	asked chan<- string
}

func (p watchingPeer) Request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	result, err := p.Peer.Request(ctx, method, params)
	if err != nil {
		p.asked <- fmt.Sprintf("%s -> %v", method, err)
	} else {
		p.asked <- fmt.Sprintf("%s -> %s", method, result)
	}
	return result, err
}

// Use panics on a nil Middleware or one that returns a nil Dispatcher, and
// then installs none of those given with it.
func TestUseRefusesNil(t *testing.T) {
	passed := 0
	counting := func(next Dispatcher) Dispatcher {
		return DispatcherFunc(func(ctx context.Context, req *Request) Reply {
			passed++
			return next.Dispatch(ctx, req)
		})
	}
	for _, tc := range []struct {
		name string
		bad  Middleware
		want string
	}{
		{"nil", nil, "mcpstdio: Runtime.Use: middleware 1 is nil"},
		{"returns nil", func(Dispatcher) Dispatcher { return nil }, "mcpstdio: Runtime.Use: middleware 1 returned a nil Dispatcher"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := newTestRuntime(t, testOptions())
			func() {
				defer func() {
					if got := fmt.Sprint(recover()); got != tc.want {
						t.Fatalf("Use panicked with %q, want %q", got, tc.want)
					}
				}()
				rt.Use(counting, tc.bad)
			}()
			passed = 0
			dispatch(rt, statelessRequest("server/discover", ""))
			if passed != 0 || rt.usesMiddleware() {
				t.Fatalf("after the panic the middleware given with the bad one passed %d messages", passed)
			}
		})
	}
}

// Use is safe while the Runtime serves: dispatches running alongside it
// pass through the middleware installed so far (each Use waits until one
// passed through what it installed, so that the next runs alongside
// dispatches), and once Use returned every message passes through all of
// it.
func TestUseWhileServing(t *testing.T) {
	rt := newCatalogRuntime(t)
	const layers = 20
	var mu sync.Mutex
	passed := map[int]int{}
	reached := make([]chan struct{}, layers)
	layer := func(n int) Middleware {
		reached[n] = make(chan struct{}, 1)
		return func(next Dispatcher) Dispatcher {
			return DispatcherFunc(func(ctx context.Context, req *Request) Reply {
				mu.Lock()
				passed[n]++
				mu.Unlock()
				select {
				case reached[n] <- struct{}{}:
				default:
				}
				return next.Dispatch(ctx, req)
			})
		}
	}
	call := func() Reply {
		return dispatch(rt, statelessRequest("tools/call", `{"name":"echo","arguments":{"text":"x"}}`))
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if r := call(); r.Error != nil {
					t.Error(r.Error)
					return
				}
			}
		})
	}
	for n := range layers {
		rt.Use(layer(n))
		waitFor(t, reached[n], fmt.Sprintf("a dispatch through layer %d", n))
	}
	close(stop)
	wg.Wait()
	mu.Lock()
	clear(passed)
	mu.Unlock()
	call()
	for n := range layers {
		if passed[n] != 1 {
			t.Fatalf("after Use: layer %d passed %d messages of one, all: %v", n, passed[n], passed)
		}
	}
}

// lockedBuffer is a bytes.Buffer safe for a logger and a test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// An inline call that holds its connection's owner longer than
// inlineBlockThreshold, in its handler or its middleware, is logged once
// per tool with the tool's name; a call that takes no longer, and a call a
// worker serves however long it takes, are not. The runtime's clock is the
// test's: a blocked call is one during which the test moved it on.
func TestInlineCallThatBlocksIsLogged(t *testing.T) {
	var logs lockedBuffer
	rt := newTestRuntime(t, RuntimeOptions{ServerInfo: Implementation{Name: "t", Version: "1"},
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	clock := newFakeClock()
	rt.now = clock.Now
	entered, release := make(chan string), make(chan struct{})
	wait := func(name string) {
		entered <- name
		<-release
	}
	tools := []struct {
		name           string
		inline         bool
		handlerWaits   bool
		middlewareWait bool
	}{
		{"handler_blocks", true, true, false},
		{"middleware_blocks", true, false, true},
		{"quick", true, false, false},
		{"at_threshold", true, true, false},
		{"worker", false, true, false},
	}
	for _, tool := range tools {
		mustAddTool(t, rt, Tool{Name: tool.name, Inline: tool.inline}, func(context.Context, *HandlerRequest) (*ToolResult, error) {
			if tool.handlerWaits {
				wait(tool.name)
			}
			return TextResult("done"), nil
		})
		if tool.middlewareWait {
			rt.Use(func(next Dispatcher) Dispatcher {
				return DispatcherFunc(func(ctx context.Context, req *Request) Reply {
					if strings.Contains(string(req.Params), `"name":"`+tool.name+`"`) {
						wait(tool.name)
					}
					return next.Dispatch(ctx, req)
				})
			})
		}
	}
	h := startHarnessWith(t, Options{}, rt)
	id := 0
	call := func(tool string, waits bool, held time.Duration) {
		t.Helper()
		id++
		h.send(inlineCall(id, tool, ""))
		if waits {
			if got := waitFor(t, entered, "the call to wait"); got != tool {
				t.Fatalf("%s waits, want %s", got, tool)
			}
			clock.advance(held)
			release <- struct{}{}
		}
		if got := decodeFrame(t, h.next()); got.Error != nil || !strings.Contains(string(got.Result), "done") {
			t.Fatalf("%s answered %+v", tool, got)
		}
	}
	over := inlineBlockThreshold + time.Millisecond
	for range 2 {
		call("handler_blocks", true, over)
		call("middleware_blocks", true, over)
		call("quick", false, 0)
		call("at_threshold", true, inlineBlockThreshold)
		call("worker", true, time.Second)
	}
	h.noFramesLeft()
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	var logged []string
	for _, line := range lines {
		_, tool, ok := strings.Cut(line, " tool=")
		if !ok || !strings.Contains(line, "level=WARN") || !strings.Contains(line, "held=6ms threshold=5ms") {
			t.Fatalf("log line %q, want a warning naming the tool, how long it held the owner and the threshold", line)
		}
		logged = append(logged, strings.Fields(tool)[0])
	}
	if want := []string{"handler_blocks", "middleware_blocks"}; !slices.Equal(logged, want) {
		t.Fatalf("logged %v, want %v", logged, want)
	}
}

// The rate limit of the examples keeps at most maxPrincipals buckets: a new
// principal beyond them is refused while every bucket is in use, and takes
// the place of one that has refilled.
func TestRateLimitExampleBoundsItsBuckets(t *testing.T) {
	rt := newCatalogRuntime(t)
	clock := newFakeClock()
	rt.Use(rateLimit(1, 1, 1, clock.Now))
	call := func(who string) *RPCError {
		ctx := ContextWithPrincipal(context.Background(), &Principal{Subject: who})
		return rt.Dispatch(ctx, statelessRequest("tools/call", `{"name":"echo","arguments":{"text":"x"}}`)).Error
	}
	steps := []struct {
		who     string
		advance time.Duration
		refused bool
	}{
		{"alice", 0, false},
		{"alice", 0, true},          // her bucket is empty
		{"bob", 0, true},            // alice's bucket is the one there may be, and in use
		{"bob", time.Second, false}, // alice's has refilled: bob takes its place
		{"alice", 0, true},          // and bob's bucket is in use
	}
	for i, step := range steps {
		clock.advance(step.advance)
		if rerr := call(step.who); (rerr != nil) != step.refused || rerr != nil && rerr.Code != codeRateLimited {
			t.Fatalf("step %d, %s: error %v, want refused %v", i, step.who, rerr, step.refused)
		}
	}
}
