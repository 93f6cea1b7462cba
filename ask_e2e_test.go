package main

import (
	"strings"
	"testing"
)

// The multi-round-trip flow over real pipes: the reference binary answers
// input_required twice, then completes, and refuses a tampered state.
func TestBinaryMultiRoundTrip(t *testing.T) {
	p := startServer(t)
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`
	call := func(id, extra string) map[string]any {
		return p.call(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"test_input_required_result_multi_round","arguments":{}` + extra + `,` + meta + `}}`)
	}
	stateOf := func(round string, res map[string]any, key string) string {
		t.Helper()
		requests, _ := res["inputRequests"].(map[string]any)
		state, _ := res["requestState"].(string)
		if res["resultType"] != "input_required" || requests[key] == nil || state == "" {
			t.Fatalf("%s answered %v", round, res)
		}
		return state
	}
	s1 := stateOf("round 1", resultOf(t, call("1", "")), "step1")
	s2 := stateOf("round 2", resultOf(t, call("2", `,"inputResponses":{"step1":{"action":"accept","content":{"name":"Ann"}}},"requestState":"`+s1+`"`)), "step2")

	tampered := call("3", `,"inputResponses":{"step2":{"action":"accept","content":{"color":"red"}}},"requestState":"`+s2+`-TAMPERED"`)
	if e, _ := tampered["error"].(map[string]any); e == nil || e["code"] != float64(CodeInvalidParams) || e["message"] != "requestState integrity check failed" {
		t.Fatalf("tampered state answered %v", tampered)
	}
	done := resultOf(t, call("4", `,"inputResponses":{"step2":{"action":"accept","content":{"color":"red"}}},"requestState":"`+s2+`"`))
	content, _ := done["content"].([]any)
	if done["resultType"] != "complete" || len(content) != 1 || !strings.Contains(content[0].(map[string]any)["text"].(string), "Ann who likes red") {
		t.Fatalf("round 3 answered %v", done)
	}
	if code, rest := p.exit(); code != 0 || len(rest) != 0 {
		t.Fatalf("exit status %d, extra lines %v", code, rest)
	}
}
