package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
)

var (
	alice = &Principal{Subject: "alice", ClientID: "app"}
	bob   = &Principal{Subject: "bob", ClientID: "app"}
	admin = &Principal{Subject: "admin", ClientID: "app"}
)

// secretPolicy refuses every item whose name or URI says "secret" to anyone
// but admin; prompts are refused with an error of its own.
func secretPolicy(p *Principal, item CatalogItem) error {
	if p == admin || !strings.Contains(item.Name+item.URI+item.RequestedURI, "secret") {
		return nil
	}
	if item.Kind == ItemPrompt {
		return &RPCError{Code: -32010, Message: "Prompt reserved for administrators"}
	}
	return errors.New("not for " + p.ID())
}

// newPolicyRuntime has an open and a secret item of every kind; ran counts
// the handler calls of the secret ones.
func newPolicyRuntime(t *testing.T, ran *atomic.Int32) *Runtime {
	t.Helper()
	opts := testOptions()
	opts.Policy = secretPolicy
	opts.ResourcesSubscribe = true
	rt := newTestRuntime(t, opts)
	secretTool := func(context.Context, *HandlerRequest) (*ToolResult, error) { ran.Add(1); return TextResult("s"), nil }
	mustAddTool(t, rt, Tool{Name: "open"}, echoTool("o"))
	mustAddTool(t, rt, Tool{Name: "secret", InputSchema: json.RawMessage(`{"type":"object","required":["x"]}`)}, secretTool)
	mustAdd(t, rt.AddPrompt(Prompt{Name: "open_p"}, emptyPrompt))
	mustAdd(t, rt.AddPrompt(Prompt{Name: "secret_p", Arguments: []PromptArgument{{Name: "a", Required: true}}}, emptyPrompt))
	mustAdd(t, rt.AddResource(Resource{URI: "test://open", Name: "open"}, staticText("o")))
	mustAdd(t, rt.AddResource(Resource{URI: "test://hidden", Name: "secret"}, staticText("s")))
	mustAdd(t, rt.AddResourceTemplate(ResourceTemplate{URITemplate: "secret://{id}", Name: "t"}, func(context.Context, *HandlerRequest) (*ResourceResult, error) {
		ran.Add(1)
		return &ResourceResult{}, nil
	}))
	mustAdd(t, rt.AddTemplateCompletion("secret://{id}", "id", PrefixCompletion("1", "2")))
	return rt
}

// as dispatches r for principal p (nil: none).
func as(rt *Runtime, p *Principal, r *Request) Reply {
	return rt.Dispatch(ContextWithPrincipal(context.Background(), p), r)
}

// listed returns the names a list result shows, in order.
func listed(t *testing.T, reply Reply) string {
	t.Helper()
	var res map[string]json.RawMessage
	decodeResult(t, reply, &res)
	var out []string
	for _, key := range []string{"tools", "prompts", "resources", "resourceTemplates"} {
		var items []struct{ Name string }
		if raw, ok := res[key]; ok {
			if err := json.Unmarshal(raw, &items); err != nil {
				t.Fatal(err)
			}
		}
		for _, it := range items {
			out = append(out, it.Name)
		}
	}
	return strings.Join(out, " ")
}

// TestPolicyFiltersLists: each list leaves out what the principal may not
// see, with or without a principal, in both eras.
func TestPolicyFiltersLists(t *testing.T) {
	var ran atomic.Int32
	rt := newPolicyRuntime(t, &ran)
	tests := []struct {
		method          string
		forAlice, admin string
	}{
		{"tools/list", "open", "open secret"},
		{"prompts/list", "open_p", "open_p secret_p"},
		{"resources/list", "open", "secret open"},
		{"resources/templates/list", "", "t"},
	}
	for _, tt := range tests {
		for _, r := range []*Request{statelessRequest(tt.method, ""), legacyRequest(ProtocolVersion20251125, tt.method, "")} {
			if got := listed(t, as(rt, alice, r)); got != tt.forAlice {
				t.Errorf("%s for alice: %q, want %q", tt.method, got, tt.forAlice)
			}
			if got := listed(t, as(rt, nil, r)); got != tt.forAlice {
				t.Errorf("%s without a principal: %q, want %q", tt.method, got, tt.forAlice)
			}
			if got := listed(t, as(rt, admin, r)); got != tt.admin {
				t.Errorf("%s for admin: %q, want %q", tt.method, got, tt.admin)
			}
		}
	}
}

// TestPolicyRefusesCallsBeforeArguments: a refused call fails with the
// policy's error (or -32003) before its arguments are looked at and before
// any handler runs; the same call by admin gets to the argument checks.
func TestPolicyRefusesCallsBeforeArguments(t *testing.T) {
	var ran atomic.Int32
	rt := newPolicyRuntime(t, &ran)
	denied := func(t *testing.T, reply Reply) {
		t.Helper()
		wantError(t, reply, CodeAccessDenied, "Access denied", "")
	}
	secretCall := with2026(`{"name":"secret","arguments":"not an object"}`)
	denied(t, as(rt, alice, newRequest("tools/call", secretCall)))
	wantError(t, as(rt, admin, newRequest("tools/call", secretCall)), CodeInvalidParams, "Invalid params: arguments must be an object", "")
	// Missing required arguments: refused first, then a tool error for admin.
	missing := with2026(`{"name":"secret","arguments":{}}`)
	denied(t, as(rt, bob, newRequest("tools/call", missing)))
	if reply := as(rt, admin, newRequest("tools/call", missing)); reply.Error != nil || !strings.Contains(string(reply.Result), "missing required argument(s): x") {
		t.Fatalf("admin's call without x: %s %+v", reply.Result, reply.Error)
	}
	wantError(t, as(rt, alice, statelessRequest("prompts/get", `{"name":"secret_p","arguments":7}`)), -32010, "Prompt reserved for administrators", "")
	wantError(t, as(rt, admin, statelessRequest("prompts/get", `{"name":"secret_p","arguments":7}`)), CodeInvalidParams, "Invalid params: prompt arguments must be an object of strings", "")
	denied(t, as(rt, alice, statelessRequest("resources/read", `{"uri":"secret://1"}`)))
	denied(t, as(rt, alice, statelessRequest("resources/read", `{"uri":"test://hidden"}`)))
	denied(t, as(rt, alice, statelessRequest("completion/complete", `{"ref":{"type":"ref/resource","uri":"secret://{id}"},"argument":{"name":"nope","value":""}}`)))
	wantError(t, as(rt, admin, statelessRequest("completion/complete", `{"ref":{"type":"ref/resource","uri":"secret://{id}"},"argument":{"name":"nope","value":""}}`)),
		CodeInvalidParams, `Unknown variable "nope" of resource template secret://{id}`, "")
	wantError(t, as(rt, alice, statelessRequest("completion/complete", `{"ref":{"type":"ref/prompt","name":"secret_p"},"argument":{"name":"nope","value":""}}`)),
		-32010, "Prompt reserved for administrators", "")
	denied(t, as(rt, alice, legacyRequest(ProtocolVersion20251125, "resources/subscribe", `{"uri":"secret://1"}`)))
	if ran.Load() != 0 {
		t.Fatalf("a refused item's handler ran %d times", ran.Load())
	}
	// The open ones still work for alice, and admin reaches the secret ones.
	if reply := as(rt, alice, statelessRequest("resources/read", `{"uri":"test://open"}`)); reply.Error != nil {
		t.Fatalf("alice reading test://open: %+v", reply.Error)
	}
	if reply := as(rt, admin, statelessRequest("resources/read", `{"uri":"secret://1"}`)); reply.Error != nil || ran.Load() != 1 {
		t.Fatalf("admin reading secret://1: %+v, ran %d", reply.Error, ran.Load())
	}
}

// TestPolicyListenLeavesOutRefusedResources: subscriptions/listen honours
// only the resource subscriptions the principal may read.
func TestPolicyListenLeavesOutRefusedResources(t *testing.T) {
	var ran atomic.Int32
	rt := newPolicyRuntime(t, &ran)
	r := statelessRequest("subscriptions/listen", `{"notifications":{"resourceSubscriptions":["test://open","secret://1","test://hidden"]}}`)
	if got := as(rt, alice, r).Listen; got == nil || strings.Join(got.ResourceURIs, " ") != "test://open" {
		t.Fatalf("alice's listen: %+v, want test://open only", got)
	}
	if got := as(rt, admin, r).Listen; got == nil || len(got.ResourceURIs) != 3 {
		t.Fatalf("admin's listen: %+v, want all three", got)
	}
}

// TestCursorsAreBoundToThePrincipal: a cursor pages only the list of the
// principal it was issued to, with or without a policy.
func TestCursorsAreBoundToThePrincipal(t *testing.T) {
	for _, policy := range []AccessPolicy{nil, secretPolicy} {
		opts := testOptions()
		opts.PageSize, opts.Policy = 1, policy
		rt := newTestRuntime(t, opts)
		mustAddTool(t, rt, Tool{Name: "a"}, echoTool("a"))
		mustAddTool(t, rt, Tool{Name: "b"}, echoTool("b"))
		var first struct{ NextCursor string }
		decodeResult(t, as(rt, alice, statelessRequest("tools/list", "")), &first)
		if first.NextCursor == "" {
			t.Fatal("no nextCursor on the first page")
		}
		next := statelessRequest("tools/list", `{"cursor":"`+first.NextCursor+`"}`)
		if got := listed(t, as(rt, alice, next)); got != "b" {
			t.Fatalf("alice's second page: %q", got)
		}
		for _, other := range []*Principal{bob, nil, {ClientID: "alice"}} {
			wantError(t, as(rt, other, next), CodeInvalidParams, "Invalid cursor", "")
		}
	}
}

// TestRequestStatesAreBoundToThePrincipal: a requestState issued to alice
// is refused to anyone else, and completes for her (another token of hers
// included: the binding is the principal, not the token).
func TestRequestStatesAreBoundToThePrincipal(t *testing.T) {
	rt := askingRuntime(t, testOptions(), func(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
		res, err := req.Elicit(ctx, "k", json.RawMessage(formParams))
		if err != nil {
			return nil, err
		}
		return TextResult("answered " + res.Action), nil
	})
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`
	reply := as(rt, alice, newRequest("tools/call", `{"name":"ask",`+meta+`}`))
	m := requestStatePattern.FindSubmatch(reply.Result)
	if m == nil {
		t.Fatalf("no requestState in %s (error %+v)", reply.Result, reply.Error)
	}
	retry := newRequest("tools/call", `{"name":"ask","inputResponses":{"k":`+elicitAccepted+`},"requestState":"`+string(m[1])+`",`+meta+`}`)
	for _, other := range []*Principal{bob, nil, {ClientID: "alice"}} {
		wantError(t, as(rt, other, retry), CodeInvalidParams, msgRequestStateInvalid, "")
	}
	aliceAgain := &Principal{Subject: "alice", ClientID: "other-app"}
	if reply := as(rt, aliceAgain, retry); reply.Error != nil || !strings.Contains(string(reply.Result), "answered accept") {
		t.Fatalf("alice's retry: %s %+v", reply.Result, reply.Error)
	}
}

// TestPolicyRefusesPublicCache: results differ per principal under a
// policy, so a public cache scope is an error.
func TestPolicyRefusesPublicCache(t *testing.T) {
	opts := testOptions()
	opts.Policy, opts.CacheScope = secretPolicy, CacheScopePublic
	if _, err := NewRuntime(opts); err == nil || !strings.Contains(err.Error(), "cannot go with a Policy") {
		t.Fatalf("NewRuntime = %v, want the cache scope refused", err)
	}
}
