package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// The conformance suite's client: what it declares and how it answers in its
// input-required-result scenarios, written out independently of
// main_catalog_ask.go.
const (
	suiteCaps      = `{"sampling":{},"elicitation":{},"roots":{"listChanged":true}}`
	suiteRoots     = `{"roots":[{"uri":"file:///test/root","name":"Test Root"}]}`
	suiteNameForm  = `{"message":"What is your name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}}`
	suiteConfirm   = `{"message":"Please confirm","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}}`
	suiteConfirmed = `{"action":"accept","content":{"ok":true}}`
	suiteAlice     = `{"action":"accept","content":{"name":"Alice"}}`
	// suiteSEP1034 and suiteSEP1330 are the elicitation/create params the
	// suite checks property by property.
	suiteSEP1034 = `{"message":"Please review and update the form fields with defaults","requestedSchema":{"type":"object","properties":{"name":{"type":"string","description":"User name","default":"John Doe"},"age":{"type":"integer","description":"User age","default":30},"score":{"type":"number","description":"User score","default":95.5},"status":{"type":"string","description":"User status","enum":["active","inactive","pending"],"default":"active"},"verified":{"type":"boolean","description":"Verification status","default":true}},"required":[]}}`
	suiteSEP1330 = `{"message":"Please select options from the enum fields","requestedSchema":{"type":"object","properties":{"untitledSingle":{"type":"string","description":"Select one option","enum":["option1","option2","option3"]},"titledSingle":{"type":"string","description":"Select one option with titles","oneOf":[{"const":"value1","title":"First Option"},{"const":"value2","title":"Second Option"},{"const":"value3","title":"Third Option"}]},"legacyEnum":{"type":"string","description":"Select one option (legacy)","enum":["opt1","opt2","opt3"],"enumNames":["Option One","Option Two","Option Three"]},"untitledMulti":{"type":"array","description":"Select multiple options","minItems":1,"maxItems":3,"items":{"type":"string","enum":["option1","option2","option3"]}},"titledMulti":{"type":"array","description":"Select multiple options with titles","minItems":1,"maxItems":3,"items":{"anyOf":[{"const":"value1","title":"First Choice"},{"const":"value2","title":"Second Choice"},{"const":"value3","title":"Third Choice"}]}}},"required":[]}}`
)

func suiteSampled(text string) string {
	return `{"role":"assistant","content":{"type":"text","text":"` + text + `"},"model":"test-model","stopReason":"endTurn"}`
}

func suiteSampling(text string, maxTokens string) string {
	return `{"messages":[{"role":"user","content":{"type":"text","text":"` + text + `"}}],"maxTokens":` + maxTokens + `}`
}

func inputReq(key, method, params string) string {
	return `"` + key + `":{"method":"` + method + `","params":` + params + `}`
}

// askingFixture is one fixture that asks, with the questions of its first
// 2026 round (the inputRequests members, in key order), the suite's answers
// by key, and its final result members.
type askingFixture struct {
	method, params string // request method and params members
	questions      string
	answers        map[string]string
	final          string
}

func catalogToolDone(text string) string { return `"content":[` + catalogText(text) + `]` }

func askingFixtures() map[string]askingFixture {
	tool := func(name string) string { return `"name":"` + name + `","arguments":{}` }
	return map[string]askingFixture{
		"test_sampling": {
			"tools/call", `"name":"test_sampling","arguments":{"prompt":"Test prompt for sampling"}`,
			inputReq("llm_response", MethodCreateMessage, suiteSampling("Test prompt for sampling", "100")),
			map[string]string{"llm_response": suiteSampled("This is a test response from the client")},
			catalogToolDone("LLM response: This is a test response from the client"),
		},
		"test_elicitation": {
			"tools/call", `"name":"test_elicitation","arguments":{"message":"Please provide your information"}`,
			inputReq("user_info", MethodElicit, `{"message":"Please provide your information","requestedSchema":{"type":"object","properties":{"username":{"type":"string","description":"User's response"},"email":{"type":"string","description":"User's email address"}},"required":["username","email"]}}`),
			map[string]string{"user_info": `{"action":"accept","content":{"username":"testuser","email":"test@example.com"}}`},
			catalogToolDone(`User response: action=accept, content={"username":"testuser","email":"test@example.com"}`),
		},
		"test_elicitation_sep1034_defaults": {
			"tools/call", tool("test_elicitation_sep1034_defaults"),
			inputReq("form", MethodElicit, suiteSEP1034),
			map[string]string{"form": `{"action":"accept","content":{"name":"Jane Smith","age":25,"score":88,"status":"inactive","verified":false}}`},
			catalogToolDone(`Elicitation completed: action=accept, content={"name":"Jane Smith","age":25,"score":88,"status":"inactive","verified":false}`),
		},
		"test_elicitation_sep1330_enums": {
			"tools/call", tool("test_elicitation_sep1330_enums"),
			inputReq("form", MethodElicit, suiteSEP1330),
			map[string]string{"form": `{"action":"decline"}`},
			catalogToolDone(`Elicitation completed: action=decline, content={}`),
		},
		"test_streaming_elicitation": {
			"tools/call", tool("test_streaming_elicitation"),
			inputReq("confirm", MethodElicit, suiteConfirm),
			map[string]string{"confirm": suiteConfirmed},
			catalogToolDone("Streaming complete"),
		},
		"test_input_required_result_elicitation": {
			"tools/call", tool("test_input_required_result_elicitation"),
			inputReq("user_name", MethodElicit, suiteNameForm),
			map[string]string{"user_name": suiteAlice},
			catalogToolDone("Hello, Alice!"),
		},
		"test_input_required_result_sampling": {
			"tools/call", tool("test_input_required_result_sampling"),
			inputReq("capital_question", MethodCreateMessage, suiteSampling("What is the capital of France?", "100")),
			map[string]string{"capital_question": suiteSampled("The capital of France is Paris.")},
			catalogToolDone("Sampling result: The capital of France is Paris."),
		},
		"test_input_required_result_list_roots": {
			"tools/call", tool("test_input_required_result_list_roots"),
			inputReq("client_roots", MethodListRoots, `{}`),
			map[string]string{"client_roots": suiteRoots},
			catalogToolDone("Found 1 root(s): file:///test/root"),
		},
		"test_input_required_result_request_state": {
			"tools/call", tool("test_input_required_result_request_state"),
			inputReq("confirm", MethodElicit, suiteConfirm),
			map[string]string{"confirm": suiteConfirmed},
			catalogToolDone("state-ok: requestState validated"),
		},
		"test_input_required_result_multiple_inputs": {
			"tools/call", tool("test_input_required_result_multiple_inputs"),
			inputReq("client_roots", MethodListRoots, `{}`) + "," +
				inputReq("greeting", MethodCreateMessage, suiteSampling("Generate a greeting", "50")) + "," +
				inputReq("user_name", MethodElicit, suiteNameForm),
			map[string]string{"user_name": suiteAlice, "greeting": suiteSampled("Hello there!"), "client_roots": suiteRoots},
			catalogToolDone("Name: Alice; Greeting: Hello there!; Roots: 1"),
		},
		"test_input_required_result_tampered_state": {
			"tools/call", tool("test_input_required_result_tampered_state"),
			inputReq("confirm", MethodElicit, suiteConfirm),
			map[string]string{"confirm": suiteConfirmed},
			catalogToolDone("integrity-ok: state verified"),
		},
		"test_input_required_result_capabilities": {
			"tools/call", tool("test_input_required_result_capabilities"),
			inputReq("client_roots", MethodListRoots, `{}`) + "," +
				inputReq("elicit_input", MethodElicit, `{"message":"Elicitation input","requestedSchema":{"type":"object","properties":{"value":{"type":"string"}},"required":["value"]}}`) + "," +
				inputReq("sample_input", MethodCreateMessage, suiteSampling("Sample request", "50")),
			map[string]string{"elicit_input": `{"action":"accept","content":{"value":"v"}}`, "sample_input": suiteSampled("s"), "client_roots": suiteRoots},
			catalogToolDone("capabilities-ok: received elicit_input,sample_input,client_roots"),
		},
		"test_input_required_result_prompt": {
			"prompts/get", `"name":"test_input_required_result_prompt"`,
			inputReq("user_context", MethodElicit, `{"message":"What context should the prompt use?","requestedSchema":{"type":"object","properties":{"context":{"type":"string"}},"required":["context"]}}`),
			map[string]string{"user_context": `{"action":"accept","content":{"context":"test context"}}`},
			`"messages":[{"role":"user","content":` + catalogText("Prompt with context: test context") + `}]`,
		},
	}
}

// responsesJSON encodes answers as an inputResponses object.
func responsesJSON(answers map[string]string) string {
	members := make([]string, 0, len(answers))
	for key, answer := range answers {
		members = append(members, `"`+key+`":`+answer)
	}
	return "{" + strings.Join(members, ",") + "}"
}

// TestAskingFixtures2026: round one asks exactly the suite's questions;
// round two, with its answers and the requestState, completes.
func TestAskingFixtures2026(t *testing.T) {
	rt := newCatalogRuntime(t)
	for name, f := range askingFixtures() {
		t.Run(name, func(t *testing.T) {
			round1 := rt.Dispatch(context.Background(), catalogRequest(ProtocolVersion20260728, f.method, f.params, suiteCaps))
			state := catalogInputRequired(t, round1, "{"+f.questions+"}")
			members := f.params + `,"inputResponses":` + responsesJSON(f.answers) + `,"requestState":"` + state + `"`
			round2 := rt.Dispatch(context.Background(), catalogRequest(ProtocolVersion20260728, f.method, members, suiteCaps))
			wantResult(t, round2, catalogWant(ProtocolVersion20260728, f.final, false))
		})
	}
}

// catalogInputRequired checks an input_required result of the reference
// server and returns its requestState.
func catalogInputRequired(t *testing.T, reply Reply, inputRequests string) string {
	t.Helper()
	return inputRequiredState(t, reply, inputRequests, catalogServerMeta)
}

func TestAskingFixtureMultiRound2026(t *testing.T) {
	rt := newCatalogRuntime(t)
	call := func(members string) Reply {
		return rt.Dispatch(context.Background(), catalogRequest(ProtocolVersion20260728, "tools/call", `"name":"test_input_required_result_multi_round","arguments":{}`+members, suiteCaps))
	}
	s1 := catalogInputRequired(t, call(""), "{"+inputReq("step1", MethodElicit, `{"message":"Step 1: What is your name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}}`)+"}")
	s2 := catalogInputRequired(t, call(`,"inputResponses":{"step1":`+suiteAlice+`},"requestState":"`+s1+`"`),
		"{"+inputReq("step2", MethodElicit, `{"message":"Step 2: What is your favorite color?","requestedSchema":{"type":"object","properties":{"color":{"type":"string"}},"required":["color"]}}`)+"}")
	if s1 == s2 {
		t.Error("round 2 returned the requestState of round 1")
	}
	wantResult(t, call(`,"inputResponses":{"step2":{"action":"accept","content":{"color":"blue"}}},"requestState":"`+s2+`"`),
		catalogWant(ProtocolVersion20260728, catalogToolDone("Multi-round complete for Alice who likes blue"), false))
}

// TestAskingFixtureScenarios2026 replays the suite's other
// input-required-result scenarios and its server-stateless probe of them.
func TestAskingFixtureScenarios2026(t *testing.T) {
	rt := newCatalogRuntime(t)
	call := func(tool, members, caps string) Reply {
		return rt.Dispatch(context.Background(), catalogRequest(ProtocolVersion20260728, "tools/call", joinMembers(`"name":"`+tool+`","arguments":{}`, members), caps))
	}
	const elicitation = "test_input_required_result_elicitation"
	userName := "{" + inputReq("user_name", MethodElicit, suiteNameForm) + "}"

	t.Run("missing-input-response", func(t *testing.T) {
		catalogInputRequired(t, call(elicitation, `"inputResponses":{"wrong_key":{"action":"accept","content":{"data":"wrong"}}}`, suiteCaps), userName)
	})
	t.Run("ignore-extra-params", func(t *testing.T) {
		reply := call(elicitation, `"inputResponses":{"user_name":`+suiteAlice+`,"unknown_extra_key":{"action":"accept","content":{"x":1}},"another_unexpected":{"foo":"bar"}}`, suiteCaps)
		wantResult(t, reply, catalogWant(ProtocolVersion20260728, catalogToolDone("Hello, Alice!"), false))
	})
	t.Run("validate-input", func(t *testing.T) {
		wantError(t, call(elicitation, `"inputResponses":{"user_name":12345}`, suiteCaps),
			CodeInvalidParams, `Invalid params: inputResponses["user_name"] must be a result object`, "")
		wantError(t, call(elicitation, `"inputResponses":null`, suiteCaps),
			CodeInvalidParams, "Invalid params: inputResponses must be an object of client results by input key", "")
	})
	t.Run("tampered-state", func(t *testing.T) {
		const tool = "test_input_required_result_tampered_state"
		state := catalogInputRequired(t, call(tool, "", suiteCaps), "{"+inputReq("confirm", MethodElicit, suiteConfirm)+"}")
		wantError(t, call(tool, `"inputResponses":{"confirm":`+suiteConfirmed+`},"requestState":"`+state+`-TAMPERED"`, suiteCaps),
			CodeInvalidParams, "requestState integrity check failed", "")
	})
	t.Run("capability-check", func(t *testing.T) {
		catalogInputRequired(t, call("test_input_required_result_capabilities", "", `{"sampling":{}}`),
			"{"+inputReq("sample_input", MethodCreateMessage, suiteSampling("Sample request", "50"))+"}")
		wantResult(t, call("test_input_required_result_capabilities", "", `{}`),
			catalogWant(ProtocolVersion20260728, catalogToolDone("No supported capabilities declared"), false))
	})
	t.Run("streaming elicitation without the capability", func(t *testing.T) {
		wantResult(t, call("test_streaming_elicitation", "", `{}`),
			catalogWant(ProtocolVersion20260728, catalogToolDone("Streaming complete"), false))
	})
	t.Run("undeclared capability", func(t *testing.T) {
		wantError(t, call(elicitation, "", `{"sampling":{}}`), CodeMissingCapability,
			"Missing required client capability: elicitation", `{"requiredCapabilities":{"elicitation":{}}}`)
	})
	t.Run("unsupported-methods", func(t *testing.T) {
		for _, method := range []string{"tools/list", "prompts/list"} {
			reply := rt.Dispatch(context.Background(), catalogRequest(ProtocolVersion20260728, method, "", suiteCaps))
			if reply.Error != nil || !strings.Contains(string(reply.Result), `"resultType":"complete"`) || strings.Contains(string(reply.Result), `"resultType":"input_required"`) {
				t.Errorf("%s: %.200s %+v", method, reply.Result, reply.Error)
			}
		}
	})
}

// suitePeer answers like the suite's legacy client: by method, from
// answers.
func suitePeer(answers map[string]string) *fakePeer {
	return &fakePeer{answer: func(_ context.Context, method string, _ json.RawMessage) (json.RawMessage, error) {
		if a, ok := answers[method]; ok {
			return json.RawMessage(a), nil
		}
		return nil, &RPCError{Code: CodeMethodNotFound, Message: "Method not found"}
	}}
}

// TestAskingFixturesLegacy: in the initialize era the same fixtures send
// server-to-client requests with the same params, one per question, and
// complete in one call.
func TestAskingFixturesLegacy(t *testing.T) {
	rt := newCatalogRuntime(t)
	for name, f := range askingFixtures() {
		for _, version := range []string{ProtocolVersion20251125, ProtocolVersion20250618} {
			t.Run(name+"/"+version, func(t *testing.T) {
				answers := map[string]string{}
				var wantCalls []string
				for key, answer := range f.answers {
					method, params := questionOf(t, f.questions, key)
					answers[method] = answer
					wantCalls = append(wantCalls, method+" "+params)
				}
				peer := suitePeer(answers)
				req := catalogRequest(version, f.method, f.params, suiteCaps)
				req.Peer = peer
				wantResult(t, rt.Dispatch(context.Background(), req), catalogWant(version, f.final, false))
				calls := peer.recorded()
				if len(calls) != len(wantCalls) {
					t.Fatalf("requests sent: %q, want %q", calls, wantCalls)
				}
				for _, want := range wantCalls {
					if !strings.Contains(strings.Join(calls, "\n"), want) {
						t.Errorf("request %s not sent; sent %q", want, calls)
					}
				}
			})
		}
	}
}

// questionOf returns the method and params asked under key in
// inputRequests members.
func questionOf(t *testing.T, questions, key string) (method, params string) {
	t.Helper()
	var qs map[string]struct {
		Method string
		Params json.RawMessage
	}
	if err := json.Unmarshal([]byte("{"+questions+"}"), &qs); err != nil {
		t.Fatal(err)
	}
	q, ok := qs[key]
	if !ok {
		t.Fatalf("no question %q", key)
	}
	return q.Method, string(q.Params)
}

func TestAskingFixtureFailuresLegacy(t *testing.T) {
	rt := newCatalogRuntime(t)
	tests := []struct {
		name, members, caps string
		peer                *fakePeer
		want                string // result members; "" for the -32021
	}{
		{"sampling refused by the client", `"name":"test_sampling","arguments":{"prompt":"p"}`, suiteCaps, suitePeer(nil),
			catalogToolFailure("the client answered sampling/createMessage with error -32601: Method not found")},
		{"elicitation cancelled", `"name":"test_elicitation","arguments":{"message":"m"}`, suiteCaps, suitePeer(map[string]string{MethodElicit: `{"action":"cancel"}`}),
			catalogToolDone("User response: action=cancel, content={}")},
		{"sampling not declared", `"name":"test_sampling","arguments":{"prompt":"p"}`, `{"elicitation":{}}`, suitePeer(nil), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := catalogRequest(ProtocolVersion20251125, "tools/call", tt.members, tt.caps)
			req.Peer = tt.peer
			reply := rt.Dispatch(context.Background(), req)
			if tt.want == "" {
				wantError(t, reply, CodeMissingCapability, "Missing required client capability: sampling", `{"requiredCapabilities":{"sampling":{}}}`)
				if calls := tt.peer.recorded(); len(calls) != 0 {
					t.Errorf("requests sent without the capability: %q", calls)
				}
				return
			}
			wantResult(t, reply, catalogWant(ProtocolVersion20251125, tt.want, false))
		})
	}
}
