package main

import (
	"encoding/json"
	"testing"
)

// A legacy tool that asks the client, over real pipes: the reference binary
// sends sampling/createMessage with its own id, takes the client's answer
// and completes the call; a client error becomes an isError result.
func TestBinaryServerToClientRequest(t *testing.T) {
	p := startServer(t)
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"sampling":{},"elicitation":{}},"clientInfo":{"name":"test","version":"1"}}}`
	resultOf(t, p.call(init))
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	ask := func(callID string) map[string]any {
		t.Helper()
		req := p.call(`{"jsonrpc":"2.0","id":` + callID + `,"method":"tools/call","params":{"name":"test_sampling","arguments":{"prompt":"Hi"}}}`)
		if req["method"] != "sampling/createMessage" || req["id"] == nil {
			t.Fatalf("expected a sampling/createMessage request, got %v", req)
		}
		params, _ := json.Marshal(req["params"])
		if string(params) != `{"maxTokens":100,"messages":[{"content":{"text":"Hi","type":"text"},"role":"user"}]}` {
			t.Fatalf("sampling params %s", params)
		}
		return req
	}
	req := ask("2")
	id, _ := json.Marshal(req["id"])
	res := p.call(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":{"role":"assistant","content":{"type":"text","text":"Hello!"},"model":"m"}}`)
	content := resultOf(t, res)["content"].([]any)[0].(map[string]any)
	if res["id"] != float64(2) || content["text"] != "LLM response: Hello!" {
		t.Fatalf("tool answered %v", res)
	}

	req = ask("3")
	id, _ = json.Marshal(req["id"])
	res = p.call(`{"jsonrpc":"2.0","id":` + string(id) + `,"error":{"code":-1,"message":"User rejected sampling request"}}`)
	result := resultOf(t, res)
	if result["isError"] != true || result["content"].([]any)[0].(map[string]any)["text"] != "the client answered sampling/createMessage with error -1: User rejected sampling request" {
		t.Fatalf("refused sampling answered %v", res)
	}
	if code, rest := p.exit(); code != 0 || len(rest) != 0 {
		t.Fatalf("exit status %d, extra lines %v", code, rest)
	}
}
