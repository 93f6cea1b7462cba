package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Prompt describes a prompt as prompts/list shows it.
type Prompt struct {
	Name        string           `json:"name"`
	Title       string           `json:"title,omitempty"`
	Description string           `json:"description,omitempty"`
	Arguments   []PromptArgument `json:"arguments,omitempty"`
	Icons       []Icon           `json:"icons,omitempty"`
	Meta        json.RawMessage  `json:"_meta,omitempty"` // a JSON object, or nil
	// A client of an older protocol version is sent only the fields its
	// version defines (dialect.prompt): no Icons before 2025-11-25; no Title
	// (of the prompt and its arguments) or Meta before 2025-06-18.
}

// PromptArgument describes one (string) argument of a prompt.
type PromptArgument struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	// Required arguments are checked before the handler runs: a missing one
	// is answered -32602 with data {"missing": [names]}.
	Required bool `json:"required,omitempty"`
}

// PromptResult is the answer to prompts/get.
type PromptResult struct {
	Description string
	Messages    []PromptMessage
	Meta        json.RawMessage // a JSON object, or nil
}

// PromptHandler renders a prompt. req.Name is the prompt's name and
// req.Arguments its arguments, an object of strings. An *RPCError is sent as
// is; any other error is logged and answered -32603 "Internal error". A nil
// result with a nil error has no messages.
type PromptHandler func(ctx context.Context, req *HandlerRequest) (*PromptResult, error)

type promptEntry struct {
	prompt  Prompt
	handler PromptHandler
	// completers are the completion handlers by argument; the map is
	// replaced, never modified, once the entry is in the catalog.
	completers map[string]CompletionHandler
}

// AddPrompt registers a prompt. It fails for an empty name, unnamed or
// repeated arguments, a nil handler, or a name already registered.
func (rt *Runtime) AddPrompt(p Prompt, handler PromptHandler) error {
	if err := checkPrompt(p, handler); err != nil {
		return fmt.Errorf("adding prompt %q: %w", p.Name, err)
	}
	p.Arguments = slices.Clone(p.Arguments)
	p.Icons = slices.Clone(p.Icons)
	p.Meta = slices.Clone(p.Meta)
	rt.mu.Lock()
	added := rt.cat.prompts.add(p.Name, &promptEntry{prompt: p, handler: handler})
	rt.mu.Unlock()
	if !added {
		return fmt.Errorf("adding prompt %q: a prompt of that name is already registered", p.Name)
	}
	rt.AnnounceListChanged(PromptsChanged)
	return nil
}

// RemovePrompt unregisters the named prompt, with its completion handlers,
// and reports whether it was registered.
func (rt *Runtime) RemovePrompt(name string) bool {
	rt.mu.Lock()
	if e := rt.cat.prompts.byKey[name]; e != nil {
		rt.cat.completers -= len(e.completers)
	}
	removed := rt.cat.prompts.remove(name)
	rt.mu.Unlock()
	return rt.announceIf(removed, PromptsChanged)
}

func checkPrompt(p Prompt, handler PromptHandler) error {
	if p.Name == "" {
		return errors.New("a name is required")
	}
	for i, a := range p.Arguments {
		if a.Name == "" {
			return fmt.Errorf("argument %d has no name", i)
		}
		if slices.ContainsFunc(p.Arguments[:i], func(b PromptArgument) bool { return b.Name == a.Name }) {
			return fmt.Errorf("argument %q is declared twice", a.Name)
		}
	}
	if p.Meta != nil && !isJSONObjectText(p.Meta) {
		return errors.New("_meta must be a JSON object")
	}
	if handler == nil {
		return errors.New("nil handler")
	}
	return nil
}

type listPromptsResult struct {
	Prompts    []Prompt `json:"prompts"`
	NextCursor string   `json:"nextCursor,omitempty"`
	resultEnvelope
}

func (rt *Runtime) listPrompts(c *methodCall) Reply {
	d := dialectOf(c.version)
	prompts, next, rerr := listPage(rt, c, &rt.cat.prompts, listPrompts, true, (*promptEntry).item, func(e *promptEntry) Prompt {
		return d.prompt(e.prompt)
	})
	if rerr != nil {
		return Reply{Error: rerr}
	}
	return rt.envelopeReply(c, true, nil, func(env resultEnvelope) any {
		return listPromptsResult{Prompts: prompts, NextCursor: next, resultEnvelope: env}
	})
}

type getPromptResult struct {
	Description string          `json:"description,omitempty"`
	Messages    []PromptMessage `json:"messages"`
	resultEnvelope
}

// missingArgumentsData is the data of the -32602 for missing prompt
// arguments.
type missingArgumentsData struct {
	Missing []string `json:"missing"`
}

func (rt *Runtime) getPrompt(ctx context.Context, c *methodCall) Reply {
	rt.mu.RLock()
	registered := len(rt.cat.prompts.list) > 0
	rt.mu.RUnlock()
	if !registered {
		return Reply{Error: methodNotFound(c.req.Method)}
	}
	name, ok := decodeString(c.params.name)
	if !ok {
		return Reply{Error: invalidParams("Invalid params: prompts/get requires a string name")}
	}
	rt.mu.RLock()
	entry := rt.cat.prompts.byKey[name]
	rt.mu.RUnlock()
	if entry != nil {
		if rerr := rt.checkAccess(c, entry.item()); rerr != nil {
			return Reply{Error: rerr}
		}
	}
	args, rerr := stringArguments(c.params.arguments)
	if rerr != nil {
		return Reply{Error: rerr}
	}
	if entry == nil {
		return Reply{Error: invalidParams("Unknown prompt: " + name)}
	}
	if missing := missingKeys(args, entry.requiredArguments()); len(missing) > 0 {
		return Reply{Error: &RPCError{
			Code:    CodeInvalidParams,
			Message: fmt.Sprintf("Missing required arguments for prompt %s: %s", name, strings.Join(missing, ", ")),
			Data:    missingArgumentsData{Missing: missing},
		}}
	}
	req := c.handlerRequest()
	req.Name = name
	raw := c.params.arguments
	if raw == nil {
		raw = json.RawMessage(`{}`)
	}
	req.setArguments(raw)
	if rerr = rt.startAsking(c, &req.ask, name); rerr != nil {
		return Reply{Error: rerr}
	}
	res, err := runHandler(rt, c, name, func() (*PromptResult, error) { return entry.handler(ctx, req) })
	if reply, ok := rt.inputRequired(c, &req.ask, err); ok {
		return reply
	}
	if err != nil {
		return rt.handlerErrorReply(c, name, err)
	}
	if res == nil {
		res = &PromptResult{}
	}
	messages := dialectOf(c.version).promptMessages(res.Messages)
	if messages == nil {
		messages = []PromptMessage{}
	}
	return rt.envelopeReply(c, false, res.Meta, func(env resultEnvelope) any {
		return getPromptResult{Description: res.Description, Messages: messages, resultEnvelope: env}
	})
}

func (e *promptEntry) requiredArguments() []string {
	var names []string
	for _, a := range e.prompt.Arguments {
		if a.Required {
			names = append(names, a.Name)
		}
	}
	return names
}

// stringArguments reads params.arguments of prompts/get, raw, an object of
// strings when present.
func stringArguments(raw json.RawMessage) (map[string]string, *RPCError) {
	args := map[string]string{}
	if raw == nil {
		return args, nil
	}
	if !isJSONObject(raw) || json.Unmarshal(raw, &args) != nil {
		return nil, invalidParams("Invalid params: prompt arguments must be an object of strings")
	}
	return args, nil
}

// CompletionHandler suggests values for a prompt argument or a template
// variable. An *RPCError is sent as is; any other error is logged and
// answered -32603 "Internal error". More than 100 values are cut to 100 with
// hasMore set.
type CompletionHandler func(ctx context.Context, req *CompletionRequest) (*Completion, error)

// CompletionRequest is a completion/complete request. HandlerRequest.Name is
// the prompt's name (ref/prompt) or HandlerRequest.URI the template
// (ref/resource).
type CompletionRequest struct {
	*HandlerRequest
	// Argument is the argument or variable being completed, Value its
	// partial value.
	Argument string
	Value    string
	// Context holds the arguments or variables the client already resolved.
	Context map[string]string
}

// Completion is the answer to completion/complete.
type Completion struct {
	Values  []string
	Total   int  // total number of matches when known (may exceed len(Values)); 0 = omitted
	HasMore bool // more matches exist than Values holds
}

// maxCompletionValues is the protocol's limit on values per answer.
const maxCompletionValues = 100

// PrefixCompletion returns a handler suggesting, in order, the values that
// start with the typed value, ignoring case.
func PrefixCompletion(values ...string) CompletionHandler {
	values = slices.Clone(values)
	return func(_ context.Context, req *CompletionRequest) (*Completion, error) {
		var matches []string
		for _, v := range values {
			if len(v) >= len(req.Value) && strings.EqualFold(v[:len(req.Value)], req.Value) {
				matches = append(matches, v)
			}
		}
		return &Completion{Values: matches, Total: len(matches)}, nil
	}
}

// AddPromptCompletion registers the completion handler of one argument of a
// registered prompt. It fails when the prompt or argument is unknown, the
// handler is nil, or the argument already has one.
func (rt *Runtime) AddPromptCompletion(prompt, argument string, handler CompletionHandler) error {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	e := rt.cat.prompts.byKey[prompt]
	if e == nil {
		return fmt.Errorf("adding completion for prompt %q: no such prompt", prompt)
	}
	if !slices.ContainsFunc(e.prompt.Arguments, func(a PromptArgument) bool { return a.Name == argument }) {
		return fmt.Errorf("adding completion for prompt %q: it has no argument %q", prompt, argument)
	}
	completers, err := withCompleter(e.completers, argument, handler)
	if err != nil {
		return fmt.Errorf("adding completion for prompt %q argument %q: %w", prompt, argument, err)
	}
	next := *e
	next.completers = completers
	rt.cat.prompts.replace(prompt, &next)
	rt.cat.completers++
	return nil
}

// AddTemplateCompletion registers the completion handler of one variable of
// a registered resource template. It fails when the template or variable is
// unknown, the handler is nil, or the variable already has one.
func (rt *Runtime) AddTemplateCompletion(uriTemplate, variable string, handler CompletionHandler) error {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	e := rt.cat.templates.byKey[uriTemplate]
	if e == nil {
		return fmt.Errorf("adding completion for template %q: no such template", uriTemplate)
	}
	if !slices.Contains(e.parsed.vars, variable) {
		return fmt.Errorf("adding completion for template %q: it has no variable %q", uriTemplate, variable)
	}
	completers, err := withCompleter(e.completers, variable, handler)
	if err != nil {
		return fmt.Errorf("adding completion for template %q variable %q: %w", uriTemplate, variable, err)
	}
	next := *e
	next.completers = completers
	rt.cat.templates.replace(uriTemplate, &next)
	rt.cat.completers++
	return nil
}

// withCompleter returns a copy of completers with handler added under name.
func withCompleter(completers map[string]CompletionHandler, name string, handler CompletionHandler) (map[string]CompletionHandler, error) {
	if handler == nil {
		return nil, errors.New("nil handler")
	}
	if _, taken := completers[name]; taken {
		return nil, errors.New("a completion handler is already registered")
	}
	next := maps.Clone(completers)
	if next == nil {
		next = map[string]CompletionHandler{}
	}
	next[name] = handler
	return next, nil
}

// completeParams are the params of completion/complete.
type completeParams struct {
	Ref struct {
		Type *string `json:"type"`
		Name *string `json:"name"`
		URI  *string `json:"uri"`
	} `json:"ref"`
	Argument struct {
		Name  *string `json:"name"`
		Value *string `json:"value"`
	} `json:"argument"`
	Context struct {
		Arguments map[string]string `json:"arguments"`
	} `json:"context"`
}

type completeResult struct {
	Completion completionJSON `json:"completion"`
	resultEnvelope
}

type completionJSON struct {
	Values  []string `json:"values"`
	Total   int      `json:"total,omitempty"`
	HasMore bool     `json:"hasMore,omitempty"`
}

func (rt *Runtime) complete(ctx context.Context, c *methodCall) Reply {
	rt.mu.RLock()
	registered := rt.cat.completers > 0
	rt.mu.RUnlock()
	if !registered {
		return Reply{Error: methodNotFound(c.req.Method)}
	}
	p, rerr := readCompleteParams(c.req.Params)
	if rerr != nil {
		return Reply{Error: rerr}
	}
	req := &CompletionRequest{HandlerRequest: c.handlerRequest(), Argument: *p.Argument.Name, Value: *p.Argument.Value, Context: p.Context.Arguments}
	handler, rerr := rt.findCompleter(c, p, req.HandlerRequest)
	if rerr != nil {
		return Reply{Error: rerr}
	}
	completion := &Completion{}
	if handler != nil {
		res, err := runHandler(rt, c, req.Name+req.URI, func() (*Completion, error) { return handler(ctx, req) })
		if err != nil {
			return rt.handlerErrorReply(c, req.Name+req.URI, err)
		}
		if res != nil {
			completion = res
		}
	}
	return rt.envelopeReply(c, false, nil, func(env resultEnvelope) any {
		return completeResult{Completion: capCompletion(completion), resultEnvelope: env}
	})
}

func readCompleteParams(raw json.RawMessage) (*completeParams, *RPCError) {
	var p completeParams
	if len(raw) == 0 || json.Unmarshal(raw, &p) != nil {
		return nil, invalidParams("Invalid params: completion/complete requires ref {type, name|uri}, argument {name, value} and optional context {arguments: object of strings}")
	}
	if p.Ref.Type == nil {
		return nil, invalidParams("Invalid params: completion/complete requires ref.type")
	}
	switch *p.Ref.Type {
	case "ref/prompt":
		if p.Ref.Name == nil {
			return nil, invalidParams("Invalid params: a ref/prompt requires a string name")
		}
	case "ref/resource":
		if p.Ref.URI == nil {
			return nil, invalidParams("Invalid params: a ref/resource requires a string uri")
		}
	default:
		return nil, invalidParams(fmt.Sprintf("Invalid params: unknown ref type %q (want ref/prompt or ref/resource)", *p.Ref.Type))
	}
	if p.Argument.Name == nil || p.Argument.Value == nil {
		return nil, invalidParams("Invalid params: completion/complete requires argument with string name and value")
	}
	return &p, nil
}

// findCompleter returns the handler for the referenced argument, nil when the
// argument exists but has none. It sets req.Name or req.URI from the ref.
// The prompt or template referenced must be one c's principal may use
// (checked before the argument).
func (rt *Runtime) findCompleter(c *methodCall, p *completeParams, req *HandlerRequest) (CompletionHandler, *RPCError) {
	arg := *p.Argument.Name
	if *p.Ref.Type == "ref/prompt" {
		req.Name = *p.Ref.Name
		rt.mu.RLock()
		e := rt.cat.prompts.byKey[req.Name]
		rt.mu.RUnlock()
		if e == nil {
			return nil, invalidParams("Unknown prompt: " + req.Name)
		}
		if rerr := rt.checkAccess(c, e.item()); rerr != nil {
			return nil, rerr
		}
		if !slices.ContainsFunc(e.prompt.Arguments, func(a PromptArgument) bool { return a.Name == arg }) {
			return nil, invalidParams(fmt.Sprintf("Unknown argument %q of prompt %s", arg, req.Name))
		}
		return e.completers[arg], nil
	}
	req.URI = *p.Ref.URI
	rt.mu.RLock()
	e := rt.cat.templates.byKey[req.URI]
	rt.mu.RUnlock()
	if e == nil {
		return nil, invalidParams("Unknown resource template: " + req.URI)
	}
	if rerr := rt.checkAccess(c, e.item()); rerr != nil {
		return nil, rerr
	}
	if !slices.Contains(e.parsed.vars, arg) {
		return nil, invalidParams(fmt.Sprintf("Unknown variable %q of resource template %s", arg, req.URI))
	}
	return e.completers[arg], nil
}

// capCompletion applies the 100-value limit and never sends null values.
func capCompletion(c *Completion) completionJSON {
	out := completionJSON{Values: c.Values, Total: c.Total, HasMore: c.HasMore}
	if len(out.Values) > maxCompletionValues {
		out.Total = max(out.Total, len(out.Values))
		out.Values = out.Values[:maxCompletionValues]
		out.HasMore = true
	}
	if out.Values == nil {
		out.Values = []string{}
	}
	return out
}
