package main

// What the bridge reads of a JSON-RPC message: its kind, its id and method,
// and the few params members that routing and the HTTP rules need.
// Everything else passes through as the client or the server wrote it.

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
)

// The _meta keys of the 2026-07-28 protocol the bridge reads.
const (
	metaProtocolVersion = "io.modelcontextprotocol/protocolVersion"
	metaSubscriptionID  = "io.modelcontextprotocol/subscriptionId"
)

// JSON-RPC and MCP error codes the bridge answers with or maps onto HTTP
// statuses.
const (
	codeParseError         = -32700
	codeInvalidRequest     = -32600
	codeMethodNotFound     = -32601
	codeInvalidParams      = -32602
	codeInternalError      = -32603
	codeHeaderMismatch     = -32020
	codeMissingCapability  = -32021
	codeUnsupportedVersion = -32022
)

// message is one decoded JSON-RPC message.
type message struct {
	line     []byte          // the message compacted onto one line, as stdio carries it
	id       json.RawMessage // nil when absent; a literal null is kept as "null"
	method   string
	answered bool // it has a result or an error member
	code     int  // the error's code when hasCode
	hasCode  bool

	progressToken json.RawMessage // params.progressToken: a progress notification's
	metaProgress  json.RawMessage // params._meta.progressToken: a request's, asking for progress
	subscription  json.RawMessage // params._meta's subscriptionId: a listen stream's notification
	requestID     json.RawMessage // params.requestId: a notifications/cancelled's
	version       string          // params._meta's protocolVersion
	hasVersion    bool
	mirrored      json.RawMessage // the params member Mcp-Name mirrors (mirroredMember), nil when absent
}

func (m *message) isRequest() bool      { return m.id != nil && m.method != "" }
func (m *message) isNotification() bool { return m.id == nil && m.method != "" }
func (m *message) isResponse() bool     { return m.id != nil && m.method == "" && m.answered }

var errNotObject = errors.New("the message is not a JSON object")

// parseMessage decodes one message, which must be a single JSON object.
func parseMessage(data []byte) (*message, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return nil, errNotObject
	}
	var line bytes.Buffer
	if err := json.Compact(&line, data); err != nil {
		return nil, err
	}
	var env struct {
		ID     json.RawMessage `json:"id"` // a literal null reads as "null": present
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code *int `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(line.Bytes(), &env); err != nil {
		return nil, err
	}
	m := &message{line: line.Bytes(), id: env.ID, method: env.Method, answered: env.Result != nil || env.Error != nil}
	if env.Error != nil && env.Error.Code != nil {
		m.code, m.hasCode = *env.Error.Code, true
	}
	m.readParams(env.Params)
	return m, nil
}

// readParams fills in what the bridge reads of params; params that are not
// an object are left for the server to refuse.
func (m *message) readParams(raw json.RawMessage) {
	var params map[string]json.RawMessage
	if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &params) != nil {
		return
	}
	m.progressToken = params["progressToken"]
	m.requestID = params["requestId"]
	if member := mirroredMember(m.method); member != "" {
		m.mirrored = params[member]
	}
	var meta map[string]json.RawMessage
	if raw := params["_meta"]; len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &meta) != nil {
		return
	}
	m.metaProgress = meta["progressToken"]
	m.subscription = meta[metaSubscriptionID]
	if v, ok := meta[metaProtocolVersion]; ok {
		m.hasVersion = true
		json.Unmarshal(v, &m.version) // a version that is not a string reads as ""
	}
}

// mirroredMember returns the params member of a request of method whose
// value a 2026-07-28 client mirrors in the Mcp-Name header, "" for none.
func mirroredMember(method string) string {
	switch method {
	case "tools/call", "prompts/get":
		return "name"
	case "resources/read":
		return "uri"
	case "tasks/get", "tasks/update", "tasks/cancel":
		return "taskId"
	}
	return ""
}

// canonicalID returns a key under which equal JSON-RPC ids (or progress
// tokens) compare equal however they are written: a string by its decoded
// value, a number by its value. "" stands for an absent value.
func canonicalID(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return ""
	}
	switch raw[0] {
	case '"':
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return "s" + s
		}
	case 'n':
		return "null"
	default:
		if f, err := strconv.ParseFloat(string(raw), 64); err == nil {
			return "n" + strconv.FormatFloat(f, 'g', -1, 64)
		}
	}
	return "r" + string(raw)
}

// withMember returns the JSON object obj with the member at path (object
// keys, outermost first) set to value, or obj itself when a member on the
// way is missing or not an object. The objects on the path are re-encoded
// (their keys sorted), which JSON-RPC does not mind.
func withMember(obj []byte, value json.RawMessage, path ...string) []byte {
	var members map[string]json.RawMessage
	if len(path) == 0 || json.Unmarshal(obj, &members) != nil {
		return obj
	}
	old, ok := members[path[0]]
	if !ok {
		return obj
	}
	if len(path) == 1 {
		members[path[0]] = value
	} else {
		members[path[0]] = withMember(old, value, path[1:]...)
	}
	out, err := json.Marshal(members)
	if err != nil {
		return obj
	}
	return out
}

// errorLine is a JSON-RPC error response with id (null when nil).
func errorLine(id json.RawMessage, code int, text string) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	type rpcError struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	out, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   rpcError        `json:"error"`
	}{"2.0", id, rpcError{code, text}})
	return out
}
