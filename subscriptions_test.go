package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// subscriptionRuntime is a runtime with opts serving the tool "t1", the
// resources test://a and test://b and the template test://t/{id}.
func subscriptionRuntime(t *testing.T, opts RuntimeOptions) *Runtime {
	t.Helper()
	opts.ServerInfo = Implementation{Name: "srv", Version: "1.0"}
	rt := newTestRuntime(t, opts)
	mustAddTool(t, rt, Tool{Name: "t1"}, echoTool("one"))
	for _, uri := range []string{"test://a", "test://b"} {
		if err := rt.AddResource(Resource{URI: uri, Name: uri}, staticText(uri)); err != nil {
			t.Fatal(err)
		}
	}
	if err := rt.AddResourceTemplate(ResourceTemplate{URITemplate: "test://t/{id}", Name: "t"}, staticText("t")); err != nil {
		t.Fatal(err)
	}
	return rt
}

// allChanges advertises every kind of change.
func allChanges() RuntimeOptions {
	return RuntimeOptions{ToolsListChanged: true, PromptsListChanged: true, ResourcesListChanged: true, ResourcesSubscribe: true}
}

func listenLine(id, notifications string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"subscriptions/listen","params":{` + meta2026With("") + `,"notifications":` + notifications + `}}`
}

// ackFrame is the acknowledgement of listen id with the honoured subset.
func ackFrame(id, honoured string) string {
	return `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":` + honoured + `,"_meta":{"io.modelcontextprotocol/subscriptionId":` + id + `}}}` + "\n"
}

// taggedFrame is a change notification on listen stream id; members are the
// params members before _meta ("" or e.g. `"uri":"test://a",`).
func taggedFrame(method, id, members string) string {
	return `{"jsonrpc":"2.0","method":"` + method + `","params":{` + members + `"_meta":{"io.modelcontextprotocol/subscriptionId":` + id + `}}}` + "\n"
}

// legacyFrame is an initialize-era change notification; params "" for none.
func legacyFrame(method, params string) string {
	if params == "" {
		return `{"jsonrpc":"2.0","method":"` + method + `"}` + "\n"
	}
	return `{"jsonrpc":"2.0","method":"` + method + `","params":` + params + `}` + "\n"
}

// listen opens a stream and checks its acknowledgement.
func (h *harness) listen(id, asked, honoured string) {
	h.t.Helper()
	h.send(listenLine(id, asked))
	h.expect(ackFrame(id, honoured))
}

// The first frame of a stream acknowledges the honoured subset of what was
// asked, tagged with the listen id in its own JSON type.
func TestListenAcknowledgesHonouredSubset(t *testing.T) {
	tests := []struct {
		name           string
		opts           RuntimeOptions
		id             string
		asked, honours string
	}{
		{"string id", allChanges(), `"s1"`, `{"toolsListChanged":true}`, `{"toolsListChanged":true}`},
		{"integer id", allChanges(), `7`, `{"resourcesListChanged":true}`, `{"resourcesListChanged":true}`},
		{"negative integer id", allChanges(), `-12`, `{}`, `{}`},
		{
			"everything; prompts not served, unknown URI dropped", allChanges(), `"all"`,
			`{"toolsListChanged":true,"promptsListChanged":true,"resourcesListChanged":true,"resourceSubscriptions":["test://a","test://missing","test://t/9"]}`,
			`{"toolsListChanged":true,"resourcesListChanged":true,"resourceSubscriptions":["test://a","test://t/9"]}`,
		},
		{"listChanged not advertised", RuntimeOptions{ResourcesSubscribe: true}, `1`, `{"toolsListChanged":true,"resourcesListChanged":true}`, `{}`},
		{"subscribe not advertised", RuntimeOptions{ToolsListChanged: true}, `2`, `{"toolsListChanged":true,"resourceSubscriptions":["test://a"]}`, `{"toolsListChanged":true}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := startHarnessWith(t, Options{}, subscriptionRuntime(t, tc.opts))
			h.listen(tc.id, tc.asked, tc.honours)
			h.noFramesLeft()
		})
	}
}

// A refused listen request is answered as any request and does not stay in
// flight.
func TestListenBadParams(t *testing.T) {
	h := startHarnessWith(t, Options{}, subscriptionRuntime(t, allChanges()))
	tooMany := make([]string, maxListenResources+1)
	for i := range tooMany {
		tooMany[i] = fmt.Sprintf("test://t/%d", i)
	}
	manyURIs, _ := json.Marshal(tooMany)
	tests := []struct{ name, line, want string }{
		{"no notifications", `{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{` + meta2026With("") + `}}`,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid params: subscriptions/listen requires a notifications object"}}`},
		{"too many resources", listenLine("1", `{"resourceSubscriptions":`+string(manyURIs)+`}`),
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid params: at most 1000 resourceSubscriptions"}}`},
		{"URI too long", listenLine("1", `{"resourceSubscriptions":["test://a","test://t/`+strings.Repeat("x", maxSubscriptionURIBytes)+`"]}`),
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"URI exceeds the 1000-byte limit"}}`},
		{"no 2026 _meta", `{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{}}}`,
			`~"id":1,"error":{"code":-32602,"message":"Missing _meta`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := h.roundTrip(tc.line)
			if want, ok := strings.CutPrefix(tc.want, "~"); ok && !strings.Contains(got, want) || !ok && got != tc.want+"\n" {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
	h.listen("1", `{}`, `{}`) // id 1 was never left in flight
	h.noFramesLeft()
}

// Changes reach, tagged, exactly the streams that asked for them; nothing
// untagged is sent on a connection that never ran initialize.
func TestListenForwardsOnlyRequestedChanges(t *testing.T) {
	rt := subscriptionRuntime(t, allChanges())
	h := startHarnessWith(t, Options{}, rt)
	// Frames of one change are written in the order of the streams' ids.
	h.listen(`"a"`, `{"toolsListChanged":true}`, `{"toolsListChanged":true}`)
	h.listen(`2`, `{"resourcesListChanged":true,"resourceSubscriptions":["test://a","test://t/1"]}`, `{"resourcesListChanged":true,"resourceSubscriptions":["test://a","test://t/1"]}`)
	h.listen(`"c"`, `{}`, `{}`)

	toolsA := taggedFrame("notifications/tools/list_changed", `"a"`, "")
	updated := func(uri string) string {
		return taggedFrame("notifications/resources/updated", "2", `"uri":"`+uri+`",`)
	}
	steps := []changeStep{
		{"AddTool", func() { mustAddTool(t, rt, Tool{Name: "t2"}, echoTool("two")) }, toolsA},
		{"resource listed", func() { rt.NotifyResourceUpdated("test://a") }, updated("test://a")},
		{"templated resource listed", func() { rt.NotifyResourceUpdated("test://t/1") }, updated("test://t/1")},
		{"AnnounceListChanged tools", func() { rt.AnnounceListChanged(ToolsChanged) }, toolsA},
		{"AddResource", func() {
			if err := rt.AddResource(Resource{URI: "test://new", Name: "new"}, staticText("new")); err != nil {
				t.Fatal(err)
			}
		}, taggedFrame("notifications/resources/list_changed", "2", "")},
		{"resource not listed, then RemoveTool", func() {
			rt.NotifyResourceUpdated("test://b")
			rt.RemoveTool("t2")
		}, toolsA},
		{"prompts asked by nobody, then a listed resource", func() {
			rt.AnnounceListChanged(PromptsChanged)
			rt.NotifyResourceUpdated("test://a")
		}, updated("test://a")},
	}
	h.runSteps(steps)
}

// Over MaxSubscriptions a listen request is refused; closing a stream makes
// room again.
func TestListenCapacity(t *testing.T) {
	h := startHarnessWith(t, Options{MaxSubscriptions: 2}, subscriptionRuntime(t, allChanges()))
	h.listen(`"a"`, `{}`, `{}`)
	h.listen(`"b"`, `{}`, `{}`)
	full := `{"jsonrpc":"2.0","id":"c","error":{"code":-32603,"message":"Server subscription capacity exhausted"}}` + "\n"
	if got := h.roundTrip(listenLine(`"c"`, `{}`)); got != full {
		t.Fatalf("got %s, want %s", got, full)
	}
	h.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a"}}`)
	h.listen(`"c"`, `{}`, `{}`)
	if got := h.roundTrip(listenLine(`"d"`, `{}`)); !strings.Contains(got, "Server subscription capacity exhausted") {
		t.Fatalf("got %s", got)
	}
	h.noFramesLeft()
}

// The listen id stays in flight while the stream is open; cancelling closes
// the stream without a reply, stops its notifications, and frees the id.
func TestListenIDInFlightUntilCancelled(t *testing.T) {
	rt := subscriptionRuntime(t, allChanges())
	h := startHarnessWith(t, Options{}, rt)
	h.listen(`"s"`, `{"toolsListChanged":true}`, `{"toolsListChanged":true}`)
	h.listen(`"t"`, `{"toolsListChanged":true}`, `{"toolsListChanged":true}`)
	h.listen(`5`, `{}`, `{}`)
	for _, tc := range []struct{ id, line string }{
		{`"s"`, `{"jsonrpc":"2.0","id":"s","method":"tools/list","params":{` + meta2026With("") + `}}`},
		{`"s"`, listenLine(`"s"`, `{}`)},
		{`5`, `{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{` + meta2026With("") + `}}`},
	} {
		h.expectAnswer(tc.line, `{"jsonrpc":"2.0","id":`+tc.id+`,"error":{"code":-32600,"message":"Duplicate in-flight request id"}}`+"\n")
	}

	h.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"s","reason":"done"}}`)
	h.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}}`)
	h.sync() // no reply was written for the cancellations
	rt.AnnounceListChanged(ToolsChanged)
	h.expect(taggedFrame("notifications/tools/list_changed", `"t"`, ""))
	h.sync() // "s" got nothing: its frame would have come before "t"'s

	if got := decodeFrame(t, h.roundTrip(`{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{`+meta2026With("")+`}}`)); string(got.ID) != "5" || got.Error != nil {
		t.Fatalf("id 5 not reusable after cancel: %+v", got)
	}
	h.listen(`"s"`, `{"toolsListChanged":true}`, `{"toolsListChanged":true}`)
	rt.AnnounceListChanged(ToolsChanged)
	h.expect(taggedFrame("notifications/tools/list_changed", `"s"`, ""))
	h.expect(taggedFrame("notifications/tools/list_changed", `"t"`, ""))
	h.noFramesLeft()
}

// At end of input open streams close with no final message, even while a
// request still drains, and Serve returns nil.
func TestListenStreamsCloseAtEndOfInput(t *testing.T) {
	t.Run("idle", func(t *testing.T) {
		h := startHarnessWith(t, Options{}, subscriptionRuntime(t, allChanges()))
		h.listen(`"a"`, `{"toolsListChanged":true}`, `{"toolsListChanged":true}`)
		h.listen(`1`, `{"resourceSubscriptions":["test://a"]}`, `{"resourceSubscriptions":["test://a"]}`)
		h.noFramesLeft()
	})
	t.Run("while a request drains", func(t *testing.T) {
		rt := subscriptionRuntime(t, allChanges())
		asked := make(chan error, 1)
		release := make(chan struct{})
		mustAddTool(t, rt, Tool{Name: "hold"}, func(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
			// Fails with ErrNoClientInput once the transport has handled
			// the end of input.
			_, err := req.peer.Request(context.Background(), "roots/list", nil)
			asked <- err
			<-release
			return TextResult("held"), nil
		})
		h := startHarnessWith(t, Options{}, rt)
		h.listen(`"a"`, `{"toolsListChanged":true}`, `{"toolsListChanged":true}`)
		h.send(toolCall("1", "hold", meta2026With("")))
		h.expect(`{"jsonrpc":"2.0","id":"mcpstdio-1","method":"roots/list"}` + "\n")
		h.in.close(nil)
		if err := waitFor(t, asked, "the end of input to reach the handler"); !errors.Is(err, ErrNoClientInput) {
			t.Fatalf("Peer.Request = %v", err)
		}
		rt.AnnounceListChanged(ToolsChanged) // the stream is closed: nothing for it
		close(release)
		err, rest := h.wait()
		if err != nil || len(rest) != 1 || !strings.Contains(rest[0], `"id":1,"result":{"content":[{"type":"text","text":"held"}]`) {
			t.Fatalf("Serve = %v, frames %q; want nil and only the response", err, rest)
		}
	})
}

// A listen request still being dispatched when the input ends opens no
// stream: nothing is written for it and Serve returns nil.
func TestListenFinishingAfterEndOfInputOpensNothing(t *testing.T) {
	asked := make(chan error, 1)
	release := make(chan struct{})
	d := methodDispatcher{"subscriptions/listen": func(ctx context.Context, req *Request) Reply {
		_, err := req.Peer.Request(context.Background(), "roots/list", nil)
		asked <- err
		<-release
		return Reply{Listen: &ListenFilter{ToolsListChanged: true, Notifications: json.RawMessage(`{"toolsListChanged":true}`)}}
	}}
	h := startHarnessWith(t, Options{}, d)
	h.send(listenLine(`"s"`, `{"toolsListChanged":true}`))
	h.expect(`{"jsonrpc":"2.0","id":"mcpstdio-1","method":"roots/list"}` + "\n")
	h.in.close(nil)
	if err := waitFor(t, asked, "the end of input to reach the handler"); !errors.Is(err, ErrNoClientInput) {
		t.Fatalf("Peer.Request = %v", err)
	}
	close(release)
	if err, rest := h.wait(); err != nil || len(rest) != 0 {
		t.Fatalf("Serve = %v, frames %q; want nil and nothing", err, rest)
	}
}

// A write failure on a stream ends the connection: Serve returns the output
// error.
func TestListenOutputFailureEndsServe(t *testing.T) {
	rt := subscriptionRuntime(t, allChanges())
	w := newSwitchWriter()
	h := startHarnessWith(t, Options{Output: w}, rt)
	h.send(listenLine(`"s"`, `{"toolsListChanged":true}`))
	if got, want := waitFor(t, w.frames, "the acknowledgement"), ackFrame(`"s"`, `{"toolsListChanged":true}`); got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	w.failing.Store(true)
	rt.AnnounceListChanged(ToolsChanged)
	err := waitFor(t, h.done, "Serve to return")
	h.ended = true
	var oe *OutputError
	if !errors.As(err, &oe) || !errors.Is(err, errSwitchedOff) {
		t.Fatalf("Serve = %v, want an *OutputError caused by the failed write", err)
	}
	if n := w.failed.Load(); n != 1 {
		t.Fatalf("%d failed writes, want 1", n)
	}
}

func subscribeLine(id, method, uri string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"resources/` + method + `","params":{"uri":"` + uri + `"}}`
}

// Initialize era: resources/subscribe and unsubscribe answer {}; updates of
// subscribed URIs only are sent as notifications/resources/updated.
func TestLegacyResourceSubscriptions(t *testing.T) {
	rt := subscriptionRuntime(t, RuntimeOptions{ResourcesSubscribe: true, ToolsListChanged: true})
	h := startHarnessWith(t, Options{}, rt)
	h.initialize("2025-11-25")
	h.expectAnswer(subscribeLine("1", "subscribe", "test://a"), `{"jsonrpc":"2.0","id":1,"result":{}}`+"\n")
	h.expectAnswer(subscribeLine("2", "subscribe", "test://nope"), `{"jsonrpc":"2.0","id":2,"error":{"code":-32002,"message":"Resource not found","data":{"uri":"test://nope"}}}`+"\n")
	h.expectAnswer(`{"jsonrpc":"2.0","id":3,"method":"resources/subscribe","params":{}}`, `{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"Invalid params: resources/subscribe requires a string uri"}}`+"\n")
	h.expectAnswer(subscribeLine("4", "subscribe", "test://t/5"), `{"jsonrpc":"2.0","id":4,"result":{}}`+"\n")

	toolsChanged := legacyFrame("notifications/tools/list_changed", "")
	updated := func(uri string) string { return legacyFrame("notifications/resources/updated", `{"uri":"`+uri+`"}`) }
	steps := []changeStep{
		{"not subscribed, then subscribed", func() {
			rt.NotifyResourceUpdated("test://b")
			rt.NotifyResourceUpdated("test://nope")
			rt.NotifyResourceUpdated("test://a")
		}, updated("test://a")},
		{"templated URI", func() { rt.NotifyResourceUpdated("test://t/5") }, updated("test://t/5")},
		{"unsubscribe", func() {
			h.expectAnswer(subscribeLine("5", "unsubscribe", "test://a"), `{"jsonrpc":"2.0","id":5,"result":{}}`+"\n")
			rt.NotifyResourceUpdated("test://a")
			rt.AnnounceListChanged(ToolsChanged)
		}, toolsChanged},
		{"unsubscribe an unknown URI", func() {
			h.expectAnswer(subscribeLine("6", "unsubscribe", "test://never"), `{"jsonrpc":"2.0","id":6,"result":{}}`+"\n")
			rt.NotifyResourceUpdated("test://t/5")
		}, updated("test://t/5")},
	}
	h.runSteps(steps)
}

// Initialize era: the URIs subscribed count against MaxSubscriptions, together
// with listen streams; a URI subscribed again does not count twice; over the
// limit, or for a URI over maxSubscriptionURIBytes, the subscription is
// refused -32602 and not recorded; unsubscribing makes room again.
func TestLegacySubscriptionLimits(t *testing.T) {
	rt := subscriptionRuntime(t, allChanges())
	h := startHarnessWith(t, Options{MaxSubscriptions: 3}, rt)
	h.initialize("2025-11-25")
	ok := func(id string) string { return `{"jsonrpc":"2.0","id":` + id + `,"result":{}}` + "\n" }
	limit := func(id string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32602,"message":"Subscription limit reached (3)"}}` + "\n"
	}
	longURI := "test://t/" + strings.Repeat("x", maxSubscriptionURIBytes-len("test://t/"))
	tooLong := func(id string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32602,"message":"URI exceeds the 1000-byte limit"}}` + "\n"
	}
	h.expectAnswer(subscribeLine("1", "subscribe", "test://a"), ok("1"))
	h.expectAnswer(subscribeLine("2", "subscribe", "test://a"), ok("2")) // counted once
	h.expectAnswer(subscribeLine("3", "subscribe", longURI), ok("3"))    // exactly at the URI limit
	h.expectAnswer(subscribeLine("4", "subscribe", longURI+"x"), tooLong("4"))
	h.expectAnswer(subscribeLine("5", "subscribe", "test://nope"+strings.Repeat("x", maxSubscriptionURIBytes)), tooLong("5"))
	h.listen(`"s"`, `{}`, `{}`) // the third subscription
	h.expectAnswer(subscribeLine("6", "subscribe", "test://b"), limit("6"))
	h.expectAnswer(subscribeLine("7", "subscribe", "test://a"), ok("7")) // already held: still fine
	full := `{"jsonrpc":"2.0","id":"s2","error":{"code":-32603,"message":"Server subscription capacity exhausted"}}` + "\n"
	h.expectAnswer(listenLine(`"s2"`, `{}`), full)

	updated := func(uri string) string { return legacyFrame("notifications/resources/updated", `{"uri":"`+uri+`"}`) }
	steps := []changeStep{
		{"a refused URI was not recorded", func() {
			rt.NotifyResourceUpdated("test://b")
			rt.NotifyResourceUpdated("test://a")
		}, updated("test://a")},
		{"unsubscribing makes room", func() {
			h.expectAnswer(subscribeLine("8", "unsubscribe", "test://a"), ok("8"))
			h.expectAnswer(subscribeLine("9", "subscribe", "test://b"), ok("9"))
			h.expectAnswer(subscribeLine("10", "subscribe", "test://a"), limit("10"))
			rt.NotifyResourceUpdated("test://a")
			rt.NotifyResourceUpdated("test://b")
		}, updated("test://b")},
	}
	h.runSteps(steps)
}

// The coordinator enforces the limits whatever the dispatcher: a success
// reply that subscribes over the limit, or to an over-long URI, is answered
// with the error instead.
func TestLegacySubscriptionLimitsOfAnyDispatcher(t *testing.T) {
	d := methodDispatcher{"sub": func(_ context.Context, req *Request) Reply {
		var p struct{ URI string }
		json.Unmarshal(req.Params, &p)
		return Reply{Result: json.RawMessage(`{}`), Subscribe: p.URI}
	}}
	h := startHarnessWith(t, Options{MaxSubscriptions: 1}, d)
	line := func(id, uri string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"sub","params":{"uri":"` + uri + `"}}`
	}
	h.expectAnswer(line("1", "x://1"), `{"jsonrpc":"2.0","id":1,"result":{}}`+"\n")
	h.expectAnswer(line("2", "x://1"), `{"jsonrpc":"2.0","id":2,"result":{}}`+"\n")
	h.expectAnswer(line("3", "x://2"), `{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"Subscription limit reached (1)"}}`+"\n")
	h.expectAnswer(line("4", strings.Repeat("x", maxSubscriptionURIBytes+1)), `{"jsonrpc":"2.0","id":4,"error":{"code":-32602,"message":"URI exceeds the 1000-byte limit"}}`+"\n")
	h.noFramesLeft()
}

// Initialize era: list_changed notifications follow catalog changes of the
// kinds whose listChanged the runtime advertises, and only those.
func TestLegacyListChanged(t *testing.T) {
	addPrompt := func(rt *Runtime) {
		if err := rt.AddPrompt(Prompt{Name: "p2"}, emptyPrompt); err != nil {
			t.Fatal(err)
		}
	}
	addResource := func(rt *Runtime) {
		if err := rt.AddResource(Resource{URI: "test://new", Name: "new"}, staticText("new")); err != nil {
			t.Fatal(err)
		}
	}
	tools := legacyFrame("notifications/tools/list_changed", "")
	prompts := legacyFrame("notifications/prompts/list_changed", "")
	resources := legacyFrame("notifications/resources/list_changed", "")
	tests := []struct {
		name   string
		opts   RuntimeOptions
		change func(rt *Runtime)
		want   []string
	}{
		{"tools advertised", RuntimeOptions{ToolsListChanged: true}, func(rt *Runtime) {
			mustAddTool(t, rt, Tool{Name: "t2"}, echoTool("two"))
			rt.RemoveTool("t2")
			rt.RemoveTool("t2") // not registered: no change
		}, []string{tools, tools}},
		{"tools not advertised", RuntimeOptions{PromptsListChanged: true, ResourcesListChanged: true}, func(rt *Runtime) {
			mustAddTool(t, rt, Tool{Name: "t2"}, echoTool("two"))
			rt.RemoveTool("t2")
			rt.AnnounceListChanged(ToolsChanged)
		}, nil},
		{"prompts advertised", RuntimeOptions{PromptsListChanged: true}, func(rt *Runtime) {
			addPrompt(rt)
			rt.RemovePrompt("p2")
			mustAddTool(t, rt, Tool{Name: "t2"}, echoTool("two"))
		}, []string{prompts, prompts}},
		{"resources advertised", RuntimeOptions{ResourcesListChanged: true}, func(rt *Runtime) {
			addResource(rt)
			rt.RemoveResource("test://new")
			addPrompt(rt)
		}, []string{resources, resources}},
		{"nothing advertised", RuntimeOptions{}, func(rt *Runtime) {
			mustAddTool(t, rt, Tool{Name: "t2"}, echoTool("two"))
			addPrompt(rt)
			addResource(rt)
		}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.ResourcesSubscribe = true
			rt := subscriptionRuntime(t, tc.opts)
			h := startHarnessWith(t, Options{}, rt)
			h.initialize("2025-06-18")
			h.expectAnswer(subscribeLine("1", "subscribe", "test://a"), `{"jsonrpc":"2.0","id":1,"result":{}}`+"\n")
			tc.change(rt)
			rt.NotifyResourceUpdated("test://a") // marks the end of the changes' frames
			marker := legacyFrame("notifications/resources/updated", `{"uri":"test://a"}`)
			var got []string
			for f := h.next(); f != marker; f = h.next() {
				got = append(got, f)
			}
			if strings.Join(got, "") != strings.Join(tc.want, "") {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
			h.noFramesLeft()
		})
	}
}

// Before initialize a connection gets no untagged list_changed: only its
// listen streams hear of changes.
func TestNoLegacyListChangedBeforeInitialize(t *testing.T) {
	rt := subscriptionRuntime(t, allChanges())
	h := startHarnessWith(t, Options{}, rt)
	h.listen(`"s"`, `{"toolsListChanged":true}`, `{"toolsListChanged":true}`)
	mustAddTool(t, rt, Tool{Name: "t2"}, echoTool("two"))
	h.expect(taggedFrame("notifications/tools/list_changed", `"s"`, ""))
	h.sync()
	h.noFramesLeft()
}

// The server can end every open stream: each gets its final response, tagged
// with its subscriptionId, and its id is free again.
func TestEndSubscriptionsSendsFinalResponses(t *testing.T) {
	rt := subscriptionRuntime(t, allChanges())
	h := startHarnessWith(t, Options{}, rt)
	h.listen(`"a"`, `{"toolsListChanged":true}`, `{"toolsListChanged":true}`)
	h.listen(`7`, `{"toolsListChanged":true}`, `{"toolsListChanged":true}`)
	rt.EndSubscriptions()
	h.expect(`{"jsonrpc":"2.0","id":"a","result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/subscriptionId":"a"}}}` + "\n")
	h.expect(`{"jsonrpc":"2.0","id":7,"result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/subscriptionId":7}}}` + "\n")
	rt.AnnounceListChanged(ToolsChanged) // no stream is open any more
	h.sync()
	h.listen(`7`, `{}`, `{}`)
	h.noFramesLeft()
}

// changeStep is one change a test makes and the frame it must produce next.
type changeStep struct {
	name   string
	change func()
	want   string // the next frame: any other frame before it is a failure
}

// runSteps makes each change in turn and expects its frame next, then that
// nothing else is written.
func (h *harness) runSteps(steps []changeStep) {
	h.t.Helper()
	for _, s := range steps {
		s.change()
		if got := h.next(); got != s.want {
			h.t.Fatalf("%s: got %s, want %s", s.name, got, s.want)
		}
	}
	h.sync()
	h.noFramesLeft()
}

// TestChangeWatcherMayTouchTheCatalog registers a tool whose change
// announcement reaches a watcher that registers another tool and watches and
// stops watching: no lock of the runtime is held while watchers run, so
// none of it deadlocks, and the nested change is announced too.
func TestChangeWatcherMayTouchTheCatalog(t *testing.T) {
	opts := testOptions()
	opts.ToolsListChanged = true
	rt := newTestRuntime(t, opts)
	handler := func(context.Context, *HandlerRequest) (*ToolResult, error) { return TextResult("ok"), nil }
	changes := make(chan ChangeKind, 8)
	stop := rt.WatchChanges(func(c Change) {
		changes <- c.Kind
		if rt.capabilities().Tools == nil {
			t.Error("the watcher does not see the tool whose addition it was told of")
		}
		if err := rt.AddTool(Tool{Name: "second"}, handler); err != nil && !strings.Contains(err.Error(), "already registered") {
			t.Errorf("AddTool from a watcher: %v", err)
		}
		rt.WatchChanges(func(Change) {})()
	})
	defer stop()
	done := make(chan error, 1)
	go func() { done <- rt.AddTool(Tool{Name: "first"}, handler) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute): // a fail-safe, not a measurement
		t.Fatal("AddTool did not return: a watcher that touches the catalog deadlocked")
	}
	for want := 2; want > 0; want-- {
		select {
		case kind := <-changes:
			if kind != ToolsChanged {
				t.Errorf("change %v, want ToolsChanged", kind)
			}
		default:
			t.Fatalf("%d ToolsChanged announcements missing (one for each tool)", want)
		}
	}
}
