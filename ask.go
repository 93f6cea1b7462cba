package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
)

// Asking the client for input (docs/explanation/contract.md, "Asking the
// client"). A tool, prompt or resource handler asks through its HandlerRequest
// with one call that works in both eras:
//
//   - initialize era: the call sends a server-to-client JSON-RPC request
//     through the transport's Peer and blocks until the client answers, the
//     handler's context ends, or ClientRequestTimeout passes;
//   - 2026-07-28: the call never blocks. When the retried request carries the
//     answer under the call's key (in inputResponses, or in the requestState
//     of an earlier round) the call returns it; otherwise it records the
//     question and returns an error wrapping ErrInputRequired, which the
//     handler returns, and the runtime answers the request with
//     {resultType: "input_required", inputRequests, requestState}.
//
// So one handler serves both eras when it returns the errors of these calls
// unchanged (or wrapped with %w). To ask several questions in one 2026 round,
// make all the calls before looking at their errors and return
// errors.Join(...) of them.

// The methods a handler may ask the client.
const (
	MethodCreateMessage = methodSamplingCreateMessage
	MethodElicit        = methodElicitationCreate
	MethodListRoots     = methodRootsList
)

// ErrInputRequired is wrapped by the error an ask returns, in 2026-07-28,
// when the request does not carry the answer yet. A tools/call, prompts/get
// or resources/read handler that returns it (errors.Is) is answered with an
// input_required result naming every question asked and not yet answered.
// An *RPCError returned alongside (errors.Join) takes precedence. Asks never
// return it in the initialize era, where a handler returning it is answered
// like any other failure.
var ErrInputRequired = errors.New("input required from the client")

// ErrVersionLacksMethod is wrapped by the error an ask returns, without
// sending anything, when the request's protocol version does not define the
// method: elicitation/create before 2025-06-18.
var ErrVersionLacksMethod = errors.New("the request's protocol version does not define this method")

// Defaults of the asking options.
const (
	defaultClientRequestTimeout = 60 * time.Second
	defaultRequestStateTTL      = time.Hour
)

// askCapability returns the client capability that method needs.
func askCapability(method string) (string, bool) {
	switch method {
	case MethodCreateMessage:
		return "sampling", true
	case MethodElicit:
		return "elicitation", true
	case MethodListRoots:
		return "roots", true
	}
	return "", false
}

// ClientError is the JSON-RPC error a client answered a server-to-client
// request with (initialize era). It is deliberately not an *RPCError: a tool
// handler that returns it produces a result with isError true, never the
// client's error sent back as the server's own.
type ClientError struct {
	Method  string // the request the client refused
	Code    int
	Message string
	Data    any
}

func (e *ClientError) Error() string {
	return fmt.Sprintf("the client answered %s with error %d: %s", e.Method, e.Code, e.Message)
}

// ElicitResult is the client's answer to elicitation/create.
type ElicitResult struct {
	// Action is "accept", "decline" or "cancel".
	Action string `json:"action"`
	// Content is the submitted form, a JSON object; nil unless accepted.
	Content json.RawMessage `json:"content,omitempty"`
}

// CreateMessageResult is the client's answer to sampling/createMessage.
type CreateMessageResult struct {
	Role       string `json:"role"`
	Model      string `json:"model"`
	StopReason string `json:"stopReason,omitempty"`
	// Content is one content block (an object) or an array of them.
	Content json.RawMessage `json:"content"`
}

// Text returns the text of the result's text blocks, concatenated.
func (r *CreateMessageResult) Text() string {
	var blocks []struct{ Type, Text string }
	if isJSONObject(r.Content) {
		var one struct{ Type, Text string }
		if json.Unmarshal(r.Content, &one) == nil {
			blocks = append(blocks, one)
		}
	} else if json.Unmarshal(r.Content, &blocks) != nil {
		return ""
	}
	var text strings.Builder
	for _, b := range blocks {
		if b.Type == ContentText {
			text.WriteString(b.Text)
		}
	}
	return text.String()
}

// Root is one entry of the client's answer to roots/list.
type Root struct {
	URI  string `json:"uri"`
	Name string `json:"name,omitempty"`
}

// Ask asks the client method (MethodCreateMessage, MethodElicit or
// MethodListRoots) with params (a JSON object: a json.RawMessage, or any
// value encoding/json encodes as one; nil means {}) and returns the client's
// result, checked to have the shape the method defines.
//
// key names the question within the request; in 2026-07-28 it is the key of
// inputRequests and inputResponses and must stay the same across rounds.
// Once answered, a key keeps its answer in every later round of the
// request: to ask again, use another key.
//
// In a call that became a task (tasks.go), in either era, the question is
// one of the task's inputRequests instead: the call blocks until the
// client answers it with tasks/update, the task is cancelled, or ctx ends.
// Answers the request got before it became a task (2026) are kept.
//
// Errors:
//   - the request's protocol version does not define the method
//     (elicitation before 2025-06-18): an error wrapping
//     ErrVersionLacksMethod, nothing sent;
//   - the client did not declare the capability the method needs (sampling,
//     elicitation or roots; from initialize, or from the 2026 request's
//     _meta): an *RPCError -32021 with data.requiredCapabilities, nothing
//     sent;
//   - 2026, not answered yet: an error wrapping ErrInputRequired;
//   - 2026, the answer in inputResponses has the wrong shape: an *RPCError
//     -32602;
//   - initialize era: a *ClientError when the client answered with an error;
//     the handler context's error when it ended first; an error wrapping
//     context.DeadlineExceeded after ClientRequestTimeout; an error when the
//     client's result has the wrong shape or the connection ended;
//   - a handler other than a tool, prompt or resource handler, an empty key,
//     another method or params that are not an object: a plain error.
//
// Safe for concurrent use by the handler's goroutines.
func (r *HandlerRequest) Ask(ctx context.Context, key, method string, params any) (json.RawMessage, error) {
	capability, ok := askCapability(method)
	if !ok {
		return nil, fmt.Errorf("asking the client: unsupported method %q (want %s, %s or %s)", method, MethodCreateMessage, MethodElicit, MethodListRoots)
	}
	if key == "" {
		return nil, fmt.Errorf("asking the client %s: empty key", method)
	}
	if !r.ask.enabled {
		return nil, fmt.Errorf("asking the client %s: only tools/call, prompts/get and resources/read handlers may ask", method)
	}
	if !dialectOf(r.ProtocolVersion).definesClientRequest(method) {
		return nil, fmt.Errorf("asking the client %s: %w (the request is served at %s)", method, ErrVersionLacksMethod, r.ProtocolVersion)
	}
	encoded, err := encodeAskParams(params)
	if err != nil {
		return nil, fmt.Errorf("asking the client %s: %w", method, err)
	}
	if err := r.RequireClientCapability(capability); err != nil {
		return nil, err
	}
	if r.task != nil && r.task.enterAsk() {
		return r.task.ask(ctx, key, method, withTraceparentFromContext(ctx, encoded))
	}
	if r.ask.stateless {
		return r.ask.answer(key, method, withTraceparentFromContext(ctx, encoded))
	}
	return r.ask.request(ctx, method, encoded)
}

// Elicit asks the client elicitation/create with params ({message,
// requestedSchema} or a URL-mode request) and returns its decoded answer.
// Errors as for Ask.
func (r *HandlerRequest) Elicit(ctx context.Context, key string, params any) (*ElicitResult, error) {
	raw, err := r.Ask(ctx, key, MethodElicit, params)
	if err != nil {
		return nil, err
	}
	return decodeElicitResult(raw)
}

// CreateMessage asks the client sampling/createMessage with params
// ({messages, maxTokens, ...}) and returns its decoded answer. Errors as for
// Ask.
func (r *HandlerRequest) CreateMessage(ctx context.Context, key string, params any) (*CreateMessageResult, error) {
	raw, err := r.Ask(ctx, key, MethodCreateMessage, params)
	if err != nil {
		return nil, err
	}
	return decodeCreateMessageResult(raw)
}

// ListRoots asks the client roots/list and returns its roots. Errors as for
// Ask.
func (r *HandlerRequest) ListRoots(ctx context.Context, key string) ([]Root, error) {
	raw, err := r.Ask(ctx, key, MethodListRoots, nil)
	if err != nil {
		return nil, err
	}
	return decodeListRootsResult(raw)
}

// State returns the handler's state: the value last given to SetState in
// this request, or else the one a 2026 requestState carried from the
// previous round; nil when there is none.
func (r *HandlerRequest) State() json.RawMessage {
	if !r.ask.enabled {
		return nil
	}
	r.ask.mu.Lock()
	defer r.ask.mu.Unlock()
	return r.ask.handlerState
}

// SetState replaces the handler's state with v encoded as JSON (nil
// clears it). In 2026-07-28 an input_required answer carries it, sealed in
// the requestState, to the next round, where State returns it; the client
// can read it but not alter it. It fails for a value encoding/json cannot
// encode, or outside a tool, prompt or resource handler.
func (r *HandlerRequest) SetState(v any) error {
	if !r.ask.enabled {
		return errors.New("SetState: only tools/call, prompts/get and resources/read handlers have a state")
	}
	var raw json.RawMessage
	if v != nil {
		encoded, err := marshalJSON(v)
		if err != nil {
			return fmt.Errorf("SetState: %w", err)
		}
		if string(encoded) != "null" {
			raw = encoded
		}
	}
	r.ask.mu.Lock()
	defer r.ask.mu.Unlock()
	r.ask.handlerState = raw
	return nil
}

// encodeAskParams encodes the params of a question; they must form a JSON
// object.
func encodeAskParams(params any) (json.RawMessage, error) {
	if params == nil {
		return json.RawMessage(`{}`), nil
	}
	encoded, err := marshalJSON(params)
	if err != nil {
		return nil, fmt.Errorf("encoding params: %w", err)
	}
	if !isJSONObject(encoded) {
		return nil, errors.New("params must be a JSON object")
	}
	return encoded, nil
}

// InputRequest is one question to the client: an entry of the inputRequests
// of a 2026 input_required result, or of a task waiting for input.
type InputRequest struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// askState is the asking state of one tools/call, prompts/get or
// resources/read, part of its HandlerRequest. The runtime sets it up
// (startAsking) before the handler runs and reads its outcome after the
// handler returned; the handler's goroutines use it in between, under mu.
type askState struct {
	// Set by startAsking; read-only afterwards.
	enabled   bool // the request may ask; false for other methods
	stateless bool
	method    string        // the request's method
	subject   string        // the tool or prompt name, or the resource URI
	peer      Peer          // initialize era; nil when there is no client
	timeout   time.Duration // initialize era; <= 0: only the handler's ctx
	// responses are the retry's inputResponses (2026), each a JSON object.
	responses map[string]json.RawMessage
	// carried are the answers of earlier rounds, from the verified
	// requestState (2026).
	carried map[string]storedAnswer

	mu           sync.Mutex
	handlerState json.RawMessage
	used         map[string]storedAnswer // answers returned this round (2026)
	pending      map[string]InputRequest // questions not answered yet (2026)
}

// request sends one server-to-client request (initialize era) and waits for
// the client's result, at most a.timeout within ctx.
func (a *askState) request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	if a.peer == nil {
		return nil, fmt.Errorf("%s: no client connection to send the request on", method)
	}
	wait, cancel := ctx, context.CancelFunc(func() {})
	if a.timeout > 0 {
		wait, cancel = context.WithTimeout(ctx, a.timeout)
	}
	defer cancel()
	result, err := a.peer.Request(wait, method, params)
	if err == nil {
		if err := checkAnswer(method, result); err != nil {
			return nil, fmt.Errorf("%s: the client's result is invalid: %w", method, err)
		}
		return result, nil
	}
	if rerr, ok := errors.AsType[*RPCError](err); ok {
		return nil, &ClientError{Method: method, Code: rerr.Code, Message: rerr.Message, Data: rerr.Data}
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("%s: %w", method, ctx.Err())
	}
	if wait.Err() != nil {
		return nil, fmt.Errorf("%s: the client did not answer within %v: %w", method, a.timeout, context.DeadlineExceeded)
	}
	return nil, fmt.Errorf("%s: %w", method, err)
}

// answer returns the 2026 answer to the question key: an earlier round's
// (from the requestState) when it answered the same method, else the retry's
// inputResponses entry once its shape checks out. An unanswered question is
// recorded for the input_required result.
func (a *askState) answer(key, method string, params json.RawMessage) (json.RawMessage, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.used == nil {
		a.used, a.pending = map[string]storedAnswer{}, map[string]InputRequest{}
	}
	if ans, ok := a.used[key]; ok && ans.Method == method {
		return ans.Result, nil
	}
	if ans, ok := a.carried[key]; ok && ans.Method == method {
		a.used[key] = ans
		return ans.Result, nil
	}
	if result, ok := a.responses[key]; ok {
		if err := checkAnswer(method, result); err != nil {
			return nil, invalidParams(fmt.Sprintf("Invalid inputResponses: %q is not a valid %s result: %v", key, method, err))
		}
		a.used[key] = storedAnswer{Method: method, Result: result}
		return result, nil
	}
	a.pending[key] = InputRequest{Method: method, Params: params}
	return nil, fmt.Errorf("%w: %s %q", ErrInputRequired, method, key)
}

// earlierAnswer returns the 2026 answer the request obtained for key and
// method in this round or carried from an earlier one, if any.
func (a *askState) earlierAnswer(key, method string) (json.RawMessage, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, answers := range []map[string]storedAnswer{a.used, a.carried} {
		if ans, ok := answers[key]; ok && ans.Method == method {
			return ans.Result, true
		}
	}
	return nil, false
}

// outcome returns the unanswered questions and the state to seal for the
// next round: this round's answers and the handler's state.
func (a *askState) outcome() (map[string]InputRequest, sealedState) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return maps.Clone(a.pending), sealedState{Answers: maps.Clone(a.used), Handler: a.handlerState}
}

// checkAnswer checks that result has the shape of method's result.
func checkAnswer(method string, result json.RawMessage) error {
	var err error
	switch method {
	case MethodElicit:
		_, err = decodeElicitResult(result)
	case MethodCreateMessage:
		_, err = decodeCreateMessageResult(result)
	case MethodListRoots:
		_, err = decodeListRootsResult(result)
	default:
		err = fmt.Errorf("unsupported method %q", method)
	}
	return err
}

func decodeElicitResult(raw json.RawMessage) (*ElicitResult, error) {
	var res ElicitResult
	if !isJSONObject(raw) || json.Unmarshal(raw, &res) != nil {
		return nil, errors.New("want an object with a string action and an optional content object")
	}
	switch res.Action {
	case "accept", "decline", "cancel":
	default:
		return nil, fmt.Errorf("action %q is not accept, decline or cancel", res.Action)
	}
	if res.Content != nil && !isJSONObject(res.Content) {
		return nil, errors.New("content is not an object")
	}
	return &res, nil
}

func decodeCreateMessageResult(raw json.RawMessage) (*CreateMessageResult, error) {
	var res struct {
		Role, Model *string
		StopReason  *string
		Content     json.RawMessage
	}
	if !isJSONObject(raw) || json.Unmarshal(raw, &res) != nil || res.Role == nil || res.Model == nil {
		return nil, errors.New("want an object with string role and model and a content block or array of blocks")
	}
	if *res.Role != "user" && *res.Role != "assistant" {
		return nil, fmt.Errorf("role %q is not user or assistant", *res.Role)
	}
	if !isContentBlocks(res.Content) {
		return nil, errors.New("content is not a content block or an array of blocks")
	}
	out := &CreateMessageResult{Role: *res.Role, Model: *res.Model, Content: res.Content}
	if res.StopReason != nil {
		out.StopReason = *res.StopReason
	}
	return out, nil
}

// isContentBlocks reports whether raw is an object with a string type, or a
// non-empty array of such objects.
func isContentBlocks(raw json.RawMessage) bool {
	var blocks []json.RawMessage
	if isJSONObject(raw) {
		blocks = []json.RawMessage{raw}
	} else if json.Unmarshal(raw, &blocks) != nil || len(blocks) == 0 {
		return false
	}
	for _, b := range blocks {
		var block struct{ Type *string }
		if !isJSONObject(b) || json.Unmarshal(b, &block) != nil || block.Type == nil {
			return false
		}
	}
	return true
}

func decodeListRootsResult(raw json.RawMessage) ([]Root, error) {
	var res struct {
		Roots []json.RawMessage `json:"roots"`
	}
	if !isJSONObject(raw) || json.Unmarshal(raw, &res) != nil || res.Roots == nil {
		return nil, errors.New("want an object with a roots array")
	}
	roots := make([]Root, len(res.Roots))
	for i, r := range res.Roots {
		var root struct{ URI, Name *string }
		if !isJSONObject(r) || json.Unmarshal(r, &root) != nil || root.URI == nil {
			return nil, fmt.Errorf("roots[%d] is not an object with a string uri", i)
		}
		roots[i].URI = *root.URI
		if root.Name != nil {
			roots[i].Name = *root.Name
		}
	}
	return roots, nil
}

// ---- runtime side ----

// inputRequiredResult is the 2026 answer of a request that needs the
// client's input first. It always carries a requestState: it holds the
// answers already given and binds the retry to this method and subject.
type inputRequiredResult struct {
	InputRequests map[string]InputRequest `json:"inputRequests,omitempty"`
	RequestState  string                  `json:"requestState"`
	resultEnvelope
}

// startAsking sets up a, the asking state of c, a tools/call, prompts/get or
// resources/read about subject, before its handler runs. In 2026-07-28 it
// reads the retry's inputResponses and verifies its requestState: -32602 when
// inputResponses is not an object of objects, requestState is not a string,
// or the state fails verification.
func (rt *Runtime) startAsking(c *methodCall, a *askState, subject string) *RPCError {
	a.enabled, a.method, a.subject = true, c.req.Method, subject
	if c.era != eraStateless {
		a.peer, a.timeout = c.req.Peer, rt.clientRequestTimeout
		return nil
	}
	a.stateless = true
	var rerr *RPCError
	if a.responses, rerr = inputResponsesParam(c.params.inputResponses); rerr != nil {
		return rerr
	}
	raw := c.params.requestState
	if raw == nil {
		return nil
	}
	token, ok := decodeString(raw)
	if !ok {
		return invalidParams("Invalid params: requestState must be a string")
	}
	s, rerr := rt.states.open(c.req.Method, subject, c.binding(), token)
	if rerr != nil {
		return rerr
	}
	a.carried, a.handlerState = s.Answers, s.Handler
	return nil
}

// inputResponsesParam reads params.inputResponses, raw: absent, or an object
// whose every value is an object (a client result).
func inputResponsesParam(raw json.RawMessage) (map[string]json.RawMessage, *RPCError) {
	if raw == nil {
		return nil, nil
	}
	var responses map[string]json.RawMessage
	if !isJSONObject(raw) || json.Unmarshal(raw, &responses) != nil {
		return nil, invalidParams("Invalid params: inputResponses must be an object of client results by input key")
	}
	for _, key := range slices.Sorted(maps.Keys(responses)) {
		if !isJSONObject(responses[key]) {
			return nil, invalidParams(fmt.Sprintf("Invalid params: inputResponses[%q] must be a result object", key))
		}
	}
	return responses, nil
}

// inputRequired answers, with ok true, a 2026 request whose handler returned
// err wrapping ErrInputRequired: input_required with every unanswered
// question and a sealed requestState. ok is false (the caller answers as
// usual) in the initialize era, for any other error, and when err also
// holds an *RPCError, which takes precedence.
func (rt *Runtime) inputRequired(c *methodCall, a *askState, err error) (reply Reply, ok bool) {
	if !a.stateless || !errors.Is(err, ErrInputRequired) {
		return Reply{}, false
	}
	if _, isRPC := errors.AsType[*RPCError](err); isRPC {
		return Reply{}, false
	}
	pending, next := a.outcome()
	token, sealErr := rt.states.seal(a.method, a.subject, c.binding(), next)
	if sealErr != nil {
		rt.logger.ErrorContext(c.ctx, "sealing requestState failed", "method", a.method, "subject", a.subject, "err", sealErr)
		return Reply{Error: internalError()}, true
	}
	if len(pending) == 0 {
		pending = nil
	}
	return rt.resultReply(c, inputRequiredResult{
		InputRequests:  pending,
		RequestState:   token,
		resultEnvelope: resultEnvelope{ResultType: "input_required", Meta: rt.serverInfoMeta},
	}), true
}
