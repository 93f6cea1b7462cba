package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakePeer stands for the transport's side of a legacy request: it records
// every server-to-client request and answers with answer.
type fakePeer struct {
	answer func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)

	mu    sync.Mutex
	calls []string // "method params"
}

func (p *fakePeer) Notify(context.Context, string, json.RawMessage) error {
	return errors.New("fakePeer: Notify was not expected")
}

func (p *fakePeer) Request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	p.mu.Lock()
	p.calls = append(p.calls, method+" "+string(params))
	p.mu.Unlock()
	return p.answer(ctx, method, params)
}

func (p *fakePeer) recorded() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.calls...)
}

// answering returns a fakePeer that answers every request with result.
func answering(result string) *fakePeer {
	return &fakePeer{answer: func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(result), nil
	}}
}

// Client results used across the tests.
const (
	elicitAccepted = `{"action":"accept","content":{"name":"Alice"}}`
	sampledText    = `{"role":"assistant","content":{"type":"text","text":"Paris"},"model":"m","stopReason":"endTurn"}`
	rootsListed    = `{"roots":[{"uri":"file:///r","name":"R"}]}`
	formParams     = `{"message":"Name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}}`
	samplingAsk    = `{"messages":[{"role":"user","content":{"type":"text","text":"Capital?"}}],"maxTokens":10}`
)

// askingRuntime returns a runtime whose tool, prompt and resource "ask" all
// run handler (the prompt and resource render its text result).
func askingRuntime(t *testing.T, opts RuntimeOptions, handler ToolHandler) *Runtime {
	t.Helper()
	rt := newTestRuntime(t, opts)
	mustAddTool(t, rt, Tool{Name: "ask"}, handler)
	asText := func(ctx context.Context, req *HandlerRequest) (string, error) {
		res, err := handler(ctx, req)
		if err != nil {
			return "", err
		}
		return res.Content[0].Text, nil
	}
	err := rt.AddPrompt(Prompt{Name: "ask"}, func(ctx context.Context, req *HandlerRequest) (*PromptResult, error) {
		text, err := asText(ctx, req)
		if err != nil {
			return nil, err
		}
		return &PromptResult{Messages: []PromptMessage{userMessage(TextContent(text))}}, nil
	})
	if err == nil {
		err = rt.AddResource(Resource{URI: "test://ask", Name: "ask"}, func(ctx context.Context, req *HandlerRequest) (*ResourceResult, error) {
			text, err := asText(ctx, req)
			if err != nil {
				return nil, err
			}
			return &ResourceResult{Contents: []ResourceContents{{Text: text}}}, nil
		})
	}
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

// askOnce is a tool handler asking method with params under key "k" and
// answering with the raw result.
func askOnce(method, params string) ToolHandler {
	return func(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
		var p any
		if params != "" {
			p = json.RawMessage(params)
		}
		raw, err := req.Ask(ctx, "k", method, p)
		if err != nil {
			return nil, err
		}
		return TextResult(string(raw)), nil
	}
}

// legacyAsk is a legacy tools/call of tool "ask" with the given client
// capabilities and peer (nil for none).
func legacyAsk(caps string, peer Peer) *Request {
	r := legacyRequest(ProtocolVersion20251125, "tools/call", `{"name":"ask"}`)
	r.Session.ClientCapabilities = json.RawMessage(caps)
	r.Peer = peer
	return r
}

func toolText(text string) string {
	return `{"content":[` + catalogText(text) + `]}`
}

func toolFailure(text string) string {
	return `{"content":[` + catalogText(text) + `],"isError":true}`
}

func TestAskLegacy(t *testing.T) {
	const allCaps = `{"sampling":{},"elicitation":{},"roots":{}}`
	tests := []struct {
		name, method, params string
		caps                 string
		peer                 *fakePeer // nil: the request has no peer
		want                 string    // exact result; "" when wantErr
		wantErr              *RPCError
		wantCalls            []string
	}{
		{
			name: "sampling answered", method: MethodCreateMessage, params: samplingAsk, caps: allCaps,
			peer: answering(sampledText), want: toolText(sampledText),
			wantCalls: []string{"sampling/createMessage " + samplingAsk},
		},
		{
			name: "elicitation answered", method: MethodElicit, params: formParams, caps: `{"elicitation":{}}`,
			peer: answering(elicitAccepted), want: toolText(elicitAccepted),
			wantCalls: []string{"elicitation/create " + formParams},
		},
		{
			name: "roots answered, nil params sent as {}", method: MethodListRoots, caps: `{"roots":{"listChanged":true}}`,
			peer: answering(rootsListed), want: toolText(rootsListed),
			wantCalls: []string{"roots/list {}"},
		},
		{
			name: "sampling not declared", method: MethodCreateMessage, params: samplingAsk, caps: `{"elicitation":{},"roots":{}}`,
			peer:    answering(sampledText),
			wantErr: &RPCError{Code: CodeMissingCapability, Message: "Missing required client capability: sampling", Data: map[string]any{"requiredCapabilities": map[string]any{"sampling": map[string]any{}}}},
		},
		{
			name: "elicitation declared as true, not an object", method: MethodElicit, params: formParams, caps: `{"elicitation":true}`,
			peer:    answering(elicitAccepted),
			wantErr: &RPCError{Code: CodeMissingCapability, Message: "Missing required client capability: elicitation", Data: map[string]any{"requiredCapabilities": map[string]any{"elicitation": map[string]any{}}}},
		},
		{
			name: "roots not declared", method: MethodListRoots, caps: `{}`, peer: answering(rootsListed),
			wantErr: &RPCError{Code: CodeMissingCapability, Message: "Missing required client capability: roots", Data: map[string]any{"requiredCapabilities": map[string]any{"roots": map[string]any{}}}},
		},
		{
			name: "client error becomes a tool failure, not a JSON-RPC error", method: MethodCreateMessage, params: samplingAsk, caps: allCaps,
			peer: &fakePeer{answer: func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
				return nil, &RPCError{Code: -32600, Message: "User rejected sampling request"}
			}},
			want:      toolFailure("the client answered sampling/createMessage with error -32600: User rejected sampling request"),
			wantCalls: []string{"sampling/createMessage " + samplingAsk},
		},
		{
			name: "invalid client result", method: MethodElicit, params: formParams, caps: allCaps,
			peer:      answering(`{"action":"maybe"}`),
			want:      toolFailure(`elicitation/create: the client's result is invalid: action "maybe" is not accept, decline or cancel`),
			wantCalls: []string{"elicitation/create " + formParams},
		},
		{
			name: "connection ended", method: MethodListRoots, caps: allCaps,
			peer: &fakePeer{answer: func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
				return nil, errors.New("connection closed")
			}},
			want:      toolFailure("roots/list: connection closed"),
			wantCalls: []string{"roots/list {}"},
		},
		{
			name: "no peer", method: MethodListRoots, caps: allCaps,
			want: toolFailure("roots/list: no client connection to send the request on"),
		},
		{
			name: "unsupported method", method: "tools/list", caps: allCaps, peer: answering(`{}`),
			want: toolFailure(`asking the client: unsupported method "tools/list" (want sampling/createMessage, elicitation/create or roots/list)`),
		},
		{
			name: "params not an object", method: MethodElicit, params: `["x"]`, caps: allCaps, peer: answering(elicitAccepted),
			want: toolFailure("asking the client elicitation/create: params must be a JSON object"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := askingRuntime(t, testOptions(), askOnce(tt.method, tt.params))
			var peer Peer
			if tt.peer != nil {
				peer = tt.peer
			}
			reply := dispatch(rt, legacyAsk(tt.caps, peer))
			if tt.wantErr != nil {
				wantError(t, reply, tt.wantErr.Code, tt.wantErr.Message, mustJSON(t, tt.wantErr.Data))
			} else {
				wantResult(t, reply, tt.want)
			}
			var calls []string
			if tt.peer != nil {
				calls = tt.peer.recorded()
			}
			if strings.Join(calls, "\n") != strings.Join(tt.wantCalls, "\n") {
				t.Errorf("requests sent to the client:\n got: %q\nwant: %q", calls, tt.wantCalls)
			}
		})
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	if v == nil {
		return ""
	}
	b, err := marshalJSON(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestAskLegacyPromptAndResource: prompts/get and resources/read handlers
// ask the same way tools do.
func TestAskLegacyPromptAndResource(t *testing.T) {
	rt := askingRuntime(t, testOptions(), askOnce(MethodElicit, formParams))
	for _, tt := range []struct{ method, params, want string }{
		{"prompts/get", `{"name":"ask"}`, `{"messages":[{"role":"user","content":` + catalogText(elicitAccepted) + `}]}`},
		{"resources/read", `{"uri":"test://ask"}`, `{"contents":[{"uri":"test://ask","text":` + quoteJSON(elicitAccepted) + `}]}`},
	} {
		peer := answering(elicitAccepted)
		r := legacyRequest(ProtocolVersion20250618, tt.method, tt.params)
		r.Session.ClientCapabilities = json.RawMessage(`{"elicitation":{}}`)
		r.Peer = peer
		wantResult(t, dispatch(rt, r), tt.want)
		if calls := peer.recorded(); len(calls) != 1 {
			t.Errorf("%s: %d requests sent, want 1", tt.method, len(calls))
		}
	}
}

// blockingPeer announces each request on arrived, then waits for its
// context to end.
func blockingPeer(arrived chan<- context.Context) *fakePeer {
	return &fakePeer{answer: func(ctx context.Context, _ string, _ json.RawMessage) (json.RawMessage, error) {
		arrived <- ctx
		<-ctx.Done()
		return nil, ctx.Err()
	}}
}

// TestAskLegacyWaitEnds covers the two bounds of the wait for the client:
// the handler's context and ClientRequestTimeout.
func TestAskLegacyWaitEnds(t *testing.T) {
	tests := []struct {
		name         string
		timeout      time.Duration
		cancelCaller bool
		wantIs       error
		wantMessage  string
	}{
		{"handler context cancelled", time.Hour, true, context.Canceled, "sampling/createMessage: context canceled"},
		{"client request timeout", time.Millisecond, false, context.DeadlineExceeded, "sampling/createMessage: the client did not answer within 1ms: context deadline exceeded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			handlerErr := make(chan error, 1)
			opts := testOptions()
			opts.ClientRequestTimeout = tt.timeout
			rt := askingRuntime(t, opts, func(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
				_, err := req.CreateMessage(ctx, "k", json.RawMessage(samplingAsk))
				handlerErr <- err
				return nil, err
			})
			arrived := make(chan context.Context, 1)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			replied := make(chan Reply, 1)
			go func() { replied <- rt.Dispatch(ctx, legacyAsk(`{"sampling":{}}`, blockingPeer(arrived))) }()
			peerCtx := <-arrived
			if deadline, ok := peerCtx.Deadline(); !ok || time.Until(deadline) > tt.timeout {
				t.Errorf("the request's context has deadline %v (set %v), want within %v", deadline, ok, tt.timeout)
			}
			if tt.cancelCaller {
				cancel()
			}
			err := <-handlerErr
			if !errors.Is(err, tt.wantIs) || err.Error() != tt.wantMessage {
				t.Errorf("ask error = %v, want %q wrapping %v", err, tt.wantMessage, tt.wantIs)
			}
			<-replied
		})
	}
}

// TestAskLegacyNegativeTimeout: a negative ClientRequestTimeout leaves only
// the handler's context, which here has no deadline.
func TestAskLegacyNegativeTimeout(t *testing.T) {
	opts := testOptions()
	opts.ClientRequestTimeout = -1
	rt := askingRuntime(t, opts, askOnce(MethodListRoots, ""))
	peer := &fakePeer{answer: func(ctx context.Context, _ string, _ json.RawMessage) (json.RawMessage, error) {
		if _, ok := ctx.Deadline(); ok {
			return nil, errors.New("unexpected deadline")
		}
		return json.RawMessage(rootsListed), nil
	}}
	wantResult(t, dispatch(rt, legacyAsk(`{"roots":{}}`, peer)), toolText(rootsListed))
}

func TestAskingOptions(t *testing.T) {
	tests := []struct {
		name                 string
		timeout, ttl         time.Duration
		wantTimeout, wantTTL time.Duration
	}{
		{"defaults", 0, 0, 60 * time.Second, time.Hour},
		{"set", time.Second, time.Minute, time.Second, time.Minute},
		{"negative kept: no timeout, no expiry", -1, -1, -1, -1},
	}
	for _, tt := range tests {
		opts := testOptions()
		opts.ClientRequestTimeout, opts.RequestStateTTL = tt.timeout, tt.ttl
		rt := newTestRuntime(t, opts)
		if rt.clientRequestTimeout != tt.wantTimeout || rt.states.ttl != tt.wantTTL {
			t.Errorf("%s: timeout %v ttl %v, want %v %v", tt.name, rt.clientRequestTimeout, rt.states.ttl, tt.wantTimeout, tt.wantTTL)
		}
	}
}

// ---- 2026-07-28 ----

// allCaps2026 is what the conformance suite declares.
const allCaps2026 = `{"sampling":{},"elicitation":{},"roots":{"listChanged":true}}`

// mrtrRequest is a 2026 request of method with params members (object text
// without braces) and client capabilities caps.
func mrtrRequest(method, members, caps string) *Request {
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps + `}`
	return newRequest(method, "{"+joinMembers(members, meta)+"}")
}

var requestStatePattern = regexp.MustCompile(`"requestState":"([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)"`)

// wantInputRequired checks that reply is an input_required result asking
// exactly inputRequests (JSON text) and returns its requestState.
func wantInputRequired(t *testing.T, reply Reply, inputRequests string) string {
	t.Helper()
	return inputRequiredState(t, reply, inputRequests, serverMeta)
}

// inputRequiredState checks that reply is an input_required result asking
// exactly inputRequests ("" for none) with the server's _meta member meta,
// and returns its requestState.
func inputRequiredState(t *testing.T, reply Reply, inputRequests, meta string) string {
	t.Helper()
	if reply.Error != nil {
		t.Fatalf("got error %d %q, want input_required", reply.Error.Code, reply.Error.Message)
	}
	m := requestStatePattern.FindSubmatch(reply.Result)
	if m == nil {
		t.Fatalf("no requestState in %s", reply.Result)
	}
	members := `"requestState":"STATE","resultType":"input_required",` + meta
	if inputRequests != "" {
		members = `"inputRequests":` + inputRequests + "," + members
	}
	if got := requestStatePattern.ReplaceAllString(string(reply.Result), `"requestState":"STATE"`); got != "{"+members+"}" {
		t.Fatalf("input_required mismatch\n got: %s\nwant: %s", got, "{"+members+"}")
	}
	return string(m[1])
}

// retry returns the params members of a retry with responses and state
// ("" for none).
func retry(name, responses, state string) string {
	members := `"name":"` + name + `"`
	if responses != "" {
		members += `,"inputResponses":` + responses
	}
	if state != "" {
		members += `,"requestState":"` + state + `"`
	}
	return members
}

func completeText(text string) string {
	return `{"content":[` + catalogText(text) + `],` + complete2026 + `}`
}

func TestAskStatelessFirstRoundShape(t *testing.T) {
	rt := askingRuntime(t, testOptions(), askOnce(MethodElicit, formParams))
	want := `{"k":{"method":"elicitation/create","params":` + formParams + `}}`
	for _, r := range []*Request{
		mrtrRequest("tools/call", `"name":"ask"`, allCaps2026),
		mrtrRequest("prompts/get", `"name":"ask"`, allCaps2026),
		mrtrRequest("resources/read", `"uri":"test://ask"`, allCaps2026),
	} {
		t.Run(r.Method, func(t *testing.T) {
			state := wantInputRequired(t, dispatch(rt, r), want)
			// The retry is the same request with the answer and the state.
			r.Params = json.RawMessage(strings.Replace(string(r.Params), `"_meta"`, `"inputResponses":{"k":`+elicitAccepted+`},"requestState":"`+state+`","_meta"`, 1))
			reply := dispatch(rt, r)
			if reply.Error != nil || !strings.Contains(string(reply.Result), `"resultType":"complete"`) || !strings.Contains(string(reply.Result), "Alice") {
				t.Fatalf("retry: %s %+v", reply.Result, reply.Error)
			}
		})
	}
}

// survey asks a (elicitation) and b (sampling) in one round, then c
// (roots), and reports the answers and the handler state it saw.
func survey(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
	a, errA := req.Elicit(ctx, "a", json.RawMessage(formParams))
	b, errB := req.CreateMessage(ctx, "b", json.RawMessage(samplingAsk))
	if err := errors.Join(errA, errB); err != nil {
		return nil, err
	}
	c, err := req.ListRoots(ctx, "c")
	if err != nil {
		return nil, err
	}
	return TextResult(fmt.Sprintf("a=%s b=%s c=%s", a.Content, b.Text(), c[0].URI)), nil
}

const (
	surveyAB = `{"a":{"method":"elicitation/create","params":` + formParams + `},"b":{"method":"sampling/createMessage","params":` + samplingAsk + `}}`
	surveyB  = `{"b":{"method":"sampling/createMessage","params":` + samplingAsk + `}}`
	surveyC  = `{"c":{"method":"roots/list","params":{}}}`
	surveyOK = `a={"name":"Alice"} b=Paris c=file:///r`
)

// TestAskStatelessRounds walks a request through several rounds: missing
// keys are asked again, answered keys are carried in the requestState,
// extra keys are ignored.
func TestAskStatelessRounds(t *testing.T) {
	rt := askingRuntime(t, testOptions(), survey)
	call := func(members string) Reply { return dispatch(rt, mrtrRequest("tools/call", members, allCaps2026)) }

	s1 := wantInputRequired(t, call(retry("ask", "", "")), surveyAB)
	s2 := wantInputRequired(t, call(retry("ask", `{"a":`+elicitAccepted+`}`, s1)), surveyB)
	s3 := wantInputRequired(t, call(retry("ask", `{"b":`+sampledText+`,"unasked":{"x":1}}`, s2)), surveyC)
	wantResult(t, call(retry("ask", `{"c":`+rootsListed+`}`, s3)), completeText(surveyOK))
	if s1 == s2 || s2 == s3 {
		t.Errorf("the requestState did not change between rounds: %q %q %q", s1, s2, s3)
	}

	// An answer carried in the state wins over a different one sent again.
	wantResult(t, call(retry("ask", `{"a":{"action":"accept","content":{"name":"Mallory"}},"c":`+rootsListed+`}`, s3)), completeText(surveyOK))
	// Everything at once, without a state, with extra keys.
	wantResult(t, call(retry("ask", `{"zz":{},"a":`+elicitAccepted+`,"b":`+sampledText+`,"c":`+rootsListed+`}`, "")), completeText(surveyOK))
	// Only wrong keys: the same questions again, never an error.
	wantInputRequired(t, call(retry("ask", `{"wrong_key":{"action":"accept","content":{"data":"wrong"}}}`, "")), surveyAB)
	// Empty inputResponses is no answer.
	wantInputRequired(t, call(retry("ask", `{}`, "")), surveyAB)
}

func TestAskStatelessInvalidParams(t *testing.T) {
	rt := askingRuntime(t, testOptions(), survey)
	const objectOfResults = "Invalid params: inputResponses must be an object of client results by input key"
	tests := []struct {
		name, members, message string
	}{
		{"inputResponses null", `"inputResponses":null`, objectOfResults},
		{"inputResponses array", `"inputResponses":[]`, objectOfResults},
		{"inputResponses string", `"inputResponses":"a"`, objectOfResults},
		{"a response not an object", `"inputResponses":{"a":12345}`, `Invalid params: inputResponses["a"] must be a result object`},
		{"an extra response not an object", `"inputResponses":{"zz":null}`, `Invalid params: inputResponses["zz"] must be a result object`},
		{"elicitation result with a bad action", `"inputResponses":{"a":{"action":"maybe"}}`,
			`Invalid inputResponses: "a" is not a valid elicitation/create result: action "maybe" is not accept, decline or cancel`},
		{"elicitation result with content not an object", `"inputResponses":{"a":{"action":"accept","content":"x"}}`,
			`Invalid inputResponses: "a" is not a valid elicitation/create result: content is not an object`},
		{"sampling result without model", `"inputResponses":{"b":{"role":"assistant","content":{"type":"text","text":"x"}}}`,
			`Invalid inputResponses: "b" is not a valid sampling/createMessage result: want an object with string role and model and a content block or array of blocks`},
		{"sampling result with an untyped block", `"inputResponses":{"b":{"role":"assistant","model":"m","content":[{"text":"x"}]}}`,
			`Invalid inputResponses: "b" is not a valid sampling/createMessage result: content is not a content block or an array of blocks`},
		{"roots without uri", `"inputResponses":{"a":` + elicitAccepted + `,"b":` + sampledText + `,"c":{"roots":[{"name":"x"}]}}`,
			`Invalid inputResponses: "c" is not a valid roots/list result: roots[0] is not an object with a string uri`},
		{"requestState not a string", `"requestState":5`, "Invalid params: requestState must be a string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reply := dispatch(rt, mrtrRequest("tools/call", `"name":"ask",`+tt.members, allCaps2026))
			wantError(t, reply, CodeInvalidParams, tt.message, "")
		})
	}
}

// TestAskStatelessRefusedState: a requestState that was altered, or issued
// for another request or by another runtime, is -32602.
func TestAskStatelessRefusedState(t *testing.T) {
	rt := askingRuntime(t, testOptions(), survey)
	mustAddTool(t, rt, Tool{Name: "other"}, survey)
	first := func(rt *Runtime, method, members string) string {
		return wantInputRequired(t, dispatch(rt, mrtrRequest(method, members, allCaps2026)), surveyAB)
	}
	state := first(rt, "tools/call", `"name":"ask"`)
	otherTool := first(rt, "tools/call", `"name":"other"`)
	prompt := first(rt, "prompts/get", `"name":"ask"`)
	otherRuntime := first(askingRuntime(t, testOptions(), survey), "tools/call", `"name":"ask"`)
	payload, tag, _ := strings.Cut(state, ".")
	_, otherTag, _ := strings.Cut(otherTool, ".")

	tests := []struct{ name, state string }{
		{"suffix appended", state + "-TAMPERED"},
		{"payload character changed", flipChar(payload) + "." + tag},
		{"tag character changed", payload + "." + flipChar(tag)},
		{"tag of another state", payload + "." + otherTag},
		{"no separator", payload + tag},
		{"empty", ""},
		{"issued for another tool", otherTool},
		{"issued for prompts/get of the same name", prompt},
		{"issued by another runtime", otherRuntime},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			members := retry("ask", `{"a":`+elicitAccepted+`}`, "") + `,"requestState":` + quoteJSON(tt.state)
			reply := dispatch(rt, mrtrRequest("tools/call", members, allCaps2026))
			wantError(t, reply, CodeInvalidParams, "requestState integrity check failed", "")
		})
	}
}

// flipChar changes the first character of a base64url string to another
// character of the alphabet.
func flipChar(s string) string {
	if s[0] == 'A' {
		return "B" + s[1:]
	}
	return "A" + s[1:]
}

func TestAskStatelessStateExpires(t *testing.T) {
	opts := testOptions()
	opts.RequestStateTTL = time.Minute
	rt := askingRuntime(t, opts, survey)
	now := time.Unix(1_000_000, 0)
	rt.states.now = func() time.Time { return now }
	state := wantInputRequired(t, dispatch(rt, mrtrRequest("tools/call", `"name":"ask"`, allCaps2026)), surveyAB)
	call := func() Reply {
		return dispatch(rt, mrtrRequest("tools/call", retry("ask", `{"a":`+elicitAccepted+`}`, state), allCaps2026))
	}
	now = now.Add(time.Minute)
	wantInputRequired(t, call(), surveyB) // still valid at the expiry second
	now = now.Add(time.Second)
	wantError(t, call(), CodeInvalidParams, "requestState expired", "")
}

func TestAskStatelessCapabilities(t *testing.T) {
	rt := askingRuntime(t, testOptions(), survey)
	tests := []struct{ name, caps, missing string }{
		{"nothing declared", `{}`, "elicitation"},
		{"elicitation missing; sampling pending too", `{"sampling":{},"roots":{}}`, "elicitation"},
		{"sampling missing; elicitation answered", `{"elicitation":{},"roots":{}}`, "sampling"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reply := dispatch(rt, mrtrRequest("tools/call", retry("ask", `{"a":`+elicitAccepted+`}`, ""), tt.caps))
			wantError(t, reply, CodeMissingCapability, "Missing required client capability: "+tt.missing,
				`{"requiredCapabilities":{"`+tt.missing+`":{}}}`)
		})
	}
}

// TestOnlyToolsPromptsResourcesAsk: no other method ever answers
// input_required, and none looks at inputResponses or requestState.
func TestOnlyToolsPromptsResourcesAsk(t *testing.T) {
	rt := askingRuntime(t, testOptions(), survey)
	askErr := make(chan error, 1)
	if err := rt.AddPrompt(Prompt{Name: "withArg", Arguments: []PromptArgument{{Name: "x"}}}, fixedPrompt()); err != nil {
		t.Fatal(err)
	}
	if err := rt.AddPromptCompletion("withArg", "x", func(ctx context.Context, req *CompletionRequest) (*Completion, error) {
		_, err := req.Elicit(ctx, "k", json.RawMessage(formParams))
		askErr <- err
		if err := req.SetState(1); err == nil {
			t.Error("SetState succeeded in a completion handler")
		}
		return nil, fmt.Errorf("wrapped: %w", ErrInputRequired)
	}); err != nil {
		t.Fatal(err)
	}
	const garbage = `"inputResponses":null,"requestState":5`
	for _, method := range []string{"tools/list", "prompts/list", "resources/list", "resources/templates/list"} {
		reply := dispatch(rt, mrtrRequest(method, garbage, allCaps2026))
		if reply.Error != nil || !strings.Contains(string(reply.Result), `"resultType":"complete"`) {
			t.Errorf("%s: %s %+v", method, reply.Result, reply.Error)
		}
	}
	reply := dispatch(rt, mrtrRequest("completion/complete", `"ref":{"type":"ref/prompt","name":"withArg"},"argument":{"name":"x","value":""},`+garbage, allCaps2026))
	wantError(t, reply, CodeInternalError, "Internal error", "")
	if err := <-askErr; err == nil || errors.Is(err, ErrInputRequired) || !strings.Contains(err.Error(), "only tools/call, prompts/get and resources/read handlers may ask") {
		t.Errorf("Ask in a completion handler = %v", err)
	}
}

// TestAskStatelessHandlerChoices: the runtime answers what the handler
// returns.
func TestAskStatelessHandlerChoices(t *testing.T) {
	tests := []struct {
		name    string
		handler ToolHandler
		check   func(t *testing.T, reply Reply)
	}{
		{
			name: "ErrInputRequired without a question: requestState only",
			handler: func(context.Context, *HandlerRequest) (*ToolResult, error) {
				return nil, ErrInputRequired
			},
			check: func(t *testing.T, reply Reply) { wantInputRequired(t, reply, "") },
		},
		{
			name: "a swallowed ErrInputRequired: the handler's complete result",
			handler: func(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
				if _, err := req.Elicit(ctx, "k", json.RawMessage(formParams)); errors.Is(err, ErrInputRequired) {
					return TextResult("default used"), nil
				}
				return nil, errors.New("unreachable")
			},
			check: func(t *testing.T, reply Reply) { wantResult(t, reply, completeText("default used")) },
		},
		{
			name: "ErrInputRequired wrapped with another failure: input_required",
			handler: func(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
				_, err := req.Elicit(ctx, "k", json.RawMessage(formParams))
				return nil, fmt.Errorf("step one: %w", errors.Join(errors.New("other"), err))
			},
			check: func(t *testing.T, reply Reply) {
				wantInputRequired(t, reply, `{"k":{"method":"elicitation/create","params":`+formParams+`}}`)
			},
		},
		{
			name: "the same key asked twice records it once",
			handler: func(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
				_, err1 := req.ListRoots(ctx, "k")
				_, err2 := req.ListRoots(ctx, "k")
				return nil, errors.Join(err1, err2)
			},
			check: func(t *testing.T, reply Reply) {
				wantInputRequired(t, reply, `{"k":{"method":"roots/list","params":{}}}`)
			},
		},
		{
			name: "empty key",
			handler: func(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
				_, err := req.ListRoots(ctx, "")
				return nil, err
			},
			check: func(t *testing.T, reply Reply) {
				wantResult(t, reply, `{"content":[`+catalogText("asking the client roots/list: empty key")+`],"isError":true,`+complete2026+`}`)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := askingRuntime(t, testOptions(), tt.handler)
			tt.check(t, dispatch(rt, mrtrRequest("tools/call", `"name":"ask"`, allCaps2026)))
		})
	}
}

// TestHandlerState: SetState values reach the next round sealed in the
// requestState (2026) and are visible at once within the call (both eras).
func TestHandlerState(t *testing.T) {
	seen := make(chan string, 1)
	counter := func(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
		var n int
		if st := req.State(); st != nil {
			if err := json.Unmarshal(st, &n); err != nil {
				return nil, err
			}
		}
		if err := req.SetState(n + 1); err != nil {
			return nil, err
		}
		seen <- string(req.State())
		if _, err := req.ListRoots(ctx, fmt.Sprintf("round%d", n)); err != nil {
			return nil, err
		}
		if err := req.SetState(nil); err != nil || req.State() != nil {
			return nil, fmt.Errorf("SetState(nil) = %v, State %s", err, req.State())
		}
		if err := req.SetState(func() {}); err == nil {
			return nil, errors.New("SetState accepted a func")
		}
		return TextResult(fmt.Sprintf("done after %d", n)), nil
	}
	rt := askingRuntime(t, testOptions(), counter)

	state := ""
	for round := range 3 {
		state = wantInputRequired(t, dispatch(rt, mrtrRequest("tools/call", retry("ask", "", state), allCaps2026)),
			fmt.Sprintf(`{"round%d":{"method":"roots/list","params":{}}}`, round))
		if got := <-seen; got != fmt.Sprint(round+1) {
			t.Fatalf("round %d: state %s", round, got)
		}
	}
	wantResult(t, dispatch(rt, mrtrRequest("tools/call", retry("ask", `{"round3":`+rootsListed+`}`, state), allCaps2026)), completeText("done after 3"))
	<-seen

	wantResult(t, dispatch(rt, legacyAsk(`{"roots":{}}`, answering(rootsListed))), toolText("done after 0"))
	if got := <-seen; got != "1" {
		t.Errorf("legacy: state %s", got)
	}
}

// TestAskConcurrently asks from several goroutines of one handler: in 2026
// every question lands in one input_required; in the legacy era every
// request reaches the peer.
func TestAskConcurrently(t *testing.T) {
	const n = 8
	handler := func(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				_, errs[i] = req.ListRoots(ctx, fmt.Sprintf("k%d", i))
				if err := req.SetState(i); err != nil {
					errs[i] = err
				}
				_ = req.State()
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return nil, err
		}
		return TextResult("all answered"), nil
	}
	rt := askingRuntime(t, testOptions(), handler)
	var want []string
	var responses []string
	for i := range n {
		want = append(want, fmt.Sprintf(`"k%d":{"method":"roots/list","params":{}}`, i))
		responses = append(responses, fmt.Sprintf(`"k%d":%s`, i, rootsListed))
	}
	wantInputRequired(t, dispatch(rt, mrtrRequest("tools/call", `"name":"ask"`, allCaps2026)), "{"+strings.Join(want, ",")+"}")
	wantResult(t, dispatch(rt, mrtrRequest("tools/call", retry("ask", "{"+strings.Join(responses, ",")+"}", ""), allCaps2026)), completeText("all answered"))

	peer := answering(rootsListed)
	wantResult(t, dispatch(rt, legacyAsk(`{"roots":{}}`, peer)), toolText("all answered"))
	if calls := peer.recorded(); len(calls) != n {
		t.Errorf("%d requests reached the peer, want %d", len(calls), n)
	}
}

// TestAskLegacyIgnoresMRTRParams: initialize-era requests never read
// inputResponses or requestState, and never answer input_required.
func TestAskLegacyIgnoresMRTRParams(t *testing.T) {
	rt := askingRuntime(t, testOptions(), askOnce(MethodListRoots, ""))
	r := legacyRequest(ProtocolVersion20251125, "tools/call", `{"name":"ask","inputResponses":null,"requestState":"forged"}`)
	r.Session.ClientCapabilities = json.RawMessage(`{"roots":{}}`)
	r.Peer = answering(rootsListed)
	wantResult(t, dispatch(rt, r), toolText(rootsListed))

	rt = askingRuntime(t, testOptions(), func(context.Context, *HandlerRequest) (*ToolResult, error) { return nil, ErrInputRequired })
	wantResult(t, dispatch(rt, legacyAsk(`{}`, nil)), toolFailure("input required from the client"))
}

func TestCreateMessageResultText(t *testing.T) {
	tests := []struct{ content, want string }{
		{`{"type":"text","text":"one"}`, "one"},
		{`[{"type":"text","text":"a"},{"type":"image","data":"","mimeType":"image/png"},{"type":"text","text":"b"}]`, "ab"},
		{`{"type":"image","data":"","mimeType":"image/png"}`, ""},
		{`"not blocks"`, ""},
	}
	for _, tt := range tests {
		r := &CreateMessageResult{Content: json.RawMessage(tt.content)}
		if got := r.Text(); got != tt.want {
			t.Errorf("Text of %s = %q, want %q", tt.content, got, tt.want)
		}
	}
}
