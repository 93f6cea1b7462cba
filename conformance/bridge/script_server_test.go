package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"testing"
)

// scriptedServerArg makes the test binary act as a stdio MCP server whose
// tools script what the tests need of a child (scriptedServer).
const scriptedServerArg = "scripted-stdio-server"

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == scriptedServerArg {
		scriptedServer()
		return
	}
	os.Exit(m.Run())
}

// scriptedArgv is the command line of a child that is a scripted server.
func scriptedArgv(t *testing.T) []string {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return []string{self, scriptedServerArg}
}

// scriptedServer serves stdin until it ends. initialize answers with the
// version asked for ("bad" is refused -32602); tools/call runs the tool
// params.name names:
//
//	echo          answers arguments.text
//	whoami        answers the request's id as the server sees it
//	progress      sends a progress notification for _meta.progressToken
//	              and a log message, then answers
//	hold          sends a progress notification for _meta.progressToken,
//	              then answers only after a release
//	release       answers every held request "released", then itself
//	awaitCancel   answers once a notifications/cancelled named the id
//	              arguments.requestId
//	sample        sends the client a sampling/createMessage request and
//	              answers with the text of the client's response
//	unsolicited   answers, then sends a tools/list_changed notification
//	exit          exits at once, answering nothing
//
// ping answers {}; any other method is answered -32601.
func scriptedServer() {
	out := bufio.NewWriter(os.Stdout)
	send := func(v any) {
		b, _ := json.Marshal(v)
		out.Write(append(b, '\n'))
		out.Flush()
	}
	result := func(id json.RawMessage, text string) {
		send(map[string]any{"jsonrpc": "2.0", "id": id, "result": map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}}})
	}
	held := []json.RawMessage{}
	cancelled := map[string]bool{}
	awaiting := map[string]json.RawMessage{} // the request id awaited -> the awaiting request's id
	var sampling json.RawMessage             // the id of the request waiting for the client's sample
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 1<<20)
	for in.Scan() {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
			Params struct {
				Name            string          `json:"name"`
				ProtocolVersion string          `json:"protocolVersion"`
				RequestID       json.RawMessage `json:"requestId"`
				Arguments       struct {
					Text      string          `json:"text"`
					RequestID json.RawMessage `json:"requestId"`
				} `json:"arguments"`
				Meta struct {
					ProgressToken json.RawMessage `json:"progressToken"`
				} `json:"_meta"`
			} `json:"params"`
		}
		if err := json.Unmarshal(in.Bytes(), &msg); err != nil {
			fmt.Fprintf(os.Stderr, "scripted server: %v\n", err)
			continue
		}
		p := msg.Params
		progress := func() {
			send(map[string]any{"jsonrpc": "2.0", "method": "notifications/progress", "params": map[string]any{"progressToken": p.Meta.ProgressToken, "progress": 1}})
		}
		switch {
		case msg.Method == "" && string(msg.ID) == `"s1"`:
			var r struct {
				Content struct{ Text string } `json:"content"`
			}
			json.Unmarshal(msg.Result, &r)
			result(sampling, "sampled: "+r.Content.Text)
		case msg.Method == "notifications/cancelled":
			key := string(p.RequestID)
			cancelled[key] = true
			if id, ok := awaiting[key]; ok {
				result(id, "cancelled "+key)
				delete(awaiting, key)
			}
		case msg.ID == nil:
			// another notification
		case msg.Method == "initialize" && p.ProtocolVersion == "bad":
			send(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "error": map[string]any{"code": codeInvalidParams, "message": "unsupported protocol version"}})
		case msg.Method == "initialize":
			send(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "result": map[string]any{"protocolVersion": p.ProtocolVersion, "capabilities": map[string]any{}, "serverInfo": map[string]any{"name": "scripted", "version": "1"}}})
		case msg.Method == "ping":
			send(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "result": map[string]any{}})
		case msg.Method != "tools/call":
			send(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "error": map[string]any{"code": codeMethodNotFound, "message": "Method not found: " + msg.Method}})
		case p.Name == "echo":
			result(msg.ID, p.Arguments.Text)
		case p.Name == "whoami":
			result(msg.ID, string(msg.ID))
		case p.Name == "progress":
			progress()
			send(map[string]any{"jsonrpc": "2.0", "method": "notifications/message", "params": map[string]any{"level": "info", "data": "working"}})
			result(msg.ID, "done")
		case p.Name == "hold":
			progress()
			held = append(held, msg.ID)
		case p.Name == "release":
			for _, id := range held {
				result(id, "released")
			}
			held = held[:0]
			result(msg.ID, "released all")
		case p.Name == "awaitCancel":
			key := string(p.Arguments.RequestID)
			if cancelled[key] {
				result(msg.ID, "cancelled "+key)
			} else {
				awaiting[key] = msg.ID
			}
		case p.Name == "sample":
			sampling = msg.ID
			send(map[string]any{"jsonrpc": "2.0", "id": "s1", "method": "sampling/createMessage", "params": map[string]any{"maxTokens": 10, "messages": []any{}}})
		case p.Name == "unsolicited":
			result(msg.ID, "answered")
			send(map[string]any{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
		case p.Name == "exit":
			os.Exit(3)
		default:
			send(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "error": map[string]any{"code": codeInvalidParams, "message": "no tool " + p.Name}})
		}
	}
}
