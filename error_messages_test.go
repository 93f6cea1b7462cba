package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A client never sees a Go error string or a Go type name: error answers
// (and tool results with isError) say what is wrong with which field in
// words of their own. These tests drive a corpus of malformed messages, a
// wrongly typed value at every field each method reads, through both
// transports in both eras, and scan every answer; and they scan the error
// answers of the golden transcripts.

// goLeak matches what Go's own errors and type names look like.
var goLeak = regexp.MustCompile(`json: |Go struct|Go value|cannot unmarshal|invalid character|unexpected end of JSON|reflect[.:]|interface ?\{\}|map\[|\[\]interface|\bu?int(8|16|32|64)\b|\bfloat(32|64)\b|\bmain\.[A-Za-z]|struct ?\{|runtime error|nil pointer|goroutine \d`)

// leakIn returns what of frame, a JSON-RPC message, a client should not
// see: the match of goLeak in its error, or in the content of a result
// with isError; "" when there is none.
func leakIn(frame []byte) string {
	var msg struct {
		Error  json.RawMessage `json:"error"`
		Result *struct {
			IsError bool            `json:"isError"`
			Content json.RawMessage `json:"content"`
		} `json:"result"`
	}
	if json.Unmarshal(frame, &msg) != nil {
		return ""
	}
	switch {
	case msg.Error != nil:
		return goLeak.FindString(string(msg.Error))
	case msg.Result != nil && msg.Result.IsError:
		return goLeak.FindString(string(msg.Result.Content))
	}
	return ""
}

// wrongValues are put at each field: every JSON type, and values at the
// edges of what a decoder accepts.
var wrongValues = []string{`"s"`, `""`, `"\u0000"`, `1`, `-1`, `1.5`, `1e400`, `99999999999999999999`, `true`, `null`, `[]`, `[1]`, `[[[[]]]]`, `{}`, `{"a":1}`}

// corpusMethod is a method with valid params and the fields it reads.
type corpusMethod struct {
	method string
	params string // a valid params object, without _meta
	fields [][]string
}

func field(path ...string) []string { return path }

// corpusMethods are the methods of the reference server; legacy ones only in
// the initialize era, listen only in 2026.
func corpusMethods(legacy bool) []corpusMethod {
	methods := []corpusMethod{
		{"ping", `{}`, nil},
		{"tools/list", `{}`, [][]string{field("cursor")}},
		{"prompts/list", `{}`, [][]string{field("cursor")}},
		{"resources/list", `{}`, [][]string{field("cursor")}},
		{"resources/templates/list", `{}`, [][]string{field("cursor")}},
		{"tools/call", `{"name":"echo","arguments":{"text":"x"}}`, [][]string{field("name"), field("arguments"), field("arguments", "text")}},
		{"tools/call", `{"name":"sleep","arguments":{"ms":1}}`, [][]string{field("arguments", "ms")}},
		{"tools/call", `{"name":"json_schema_2020_12_tool","arguments":{"name":"n","email":"e@example.com"}}`, [][]string{field("arguments", "name"), field("arguments", "address"), field("arguments", "address", "city")}},
		{"tools/call", `{"name":"test_elicitation","arguments":{"message":"m"}}`, [][]string{field("arguments", "message")}},
		{"tools/call", `{"name":"test_sampling","arguments":{"prompt":"p"}}`, [][]string{field("arguments", "prompt")}},
		{"tools/call", `{"name":"test_input_required_result_request_state","arguments":{}}`, [][]string{field("inputResponses"), field("inputResponses", "k"), field("requestState")}},
		{"prompts/get", `{"name":"test_prompt_with_arguments","arguments":{"arg1":"a","arg2":"b"}}`, [][]string{field("name"), field("arguments"), field("arguments", "arg1")}},
		{"prompts/get", `{"name":"test_prompt_with_embedded_resource","arguments":{"resourceUri":"test://static-text"}}`, [][]string{field("arguments", "resourceUri")}},
		{"resources/read", `{"uri":"test://static-text"}`, [][]string{field("uri")}},
		{"resources/read", `{"uri":"test://template/1/data"}`, [][]string{field("uri")}},
		{"completion/complete", `{"ref":{"type":"ref/prompt","name":"test_prompt_with_arguments"},"argument":{"name":"arg1","value":"a"}}`,
			[][]string{field("ref"), field("ref", "type"), field("ref", "name"), field("ref", "uri"), field("argument"), field("argument", "name"), field("argument", "value"), field("context"), field("context", "arguments")}},
		{"nope/nope", `{}`, nil},
	}
	if legacy {
		return append(methods,
			corpusMethod{"logging/setLevel", `{"level":"info"}`, [][]string{field("level")}},
			corpusMethod{"resources/subscribe", `{"uri":"test://static-text"}`, [][]string{field("uri")}},
			corpusMethod{"resources/unsubscribe", `{"uri":"test://static-text"}`, [][]string{field("uri")}},
		)
	}
	return append(methods,
		corpusMethod{"server/discover", `{}`, nil},
		corpusMethod{"subscriptions/listen", `{"notifications":{"toolsListChanged":true}}`,
			[][]string{field("notifications"), field("notifications", "toolsListChanged"), field("notifications", "promptsListChanged"),
				field("notifications", "resourcesListChanged"), field("notifications", "resourceSubscriptions")}},
	)
}

// metaFields are the _meta members a 2026 request carries.
var metaFields = [][]string{
	field("_meta"), field("_meta", metaKeyProtocolVersion), field("_meta", metaKeyClientCapabilities),
	field("_meta", metaKeyClientCapabilities, "elicitation"), field("_meta", metaKeyClientInfo),
	field("_meta", metaKeyClientInfo, "name"), field("_meta", metaKeyProgressToken), field("_meta", metaKeyLogLevel),
}

// initializeFields are what initialize reads.
var initializeFields = [][]string{
	field("protocolVersion"), field("capabilities"), field("capabilities", "roots"), field("clientInfo"), field("clientInfo", "name"), field("clientInfo", "version"),
}

// withValue returns the JSON object params with value (JSON) at path,
// creating the objects on the way.
func withValue(t *testing.T, params string, path []string, value string) string {
	t.Helper()
	var root map[string]any
	dec := json.NewDecoder(strings.NewReader(params))
	dec.UseNumber()
	if err := dec.Decode(&root); err != nil {
		t.Fatalf("corpus params %s: %v", params, err)
	}
	obj := root
	for _, key := range path[:len(path)-1] {
		next, ok := obj[key].(map[string]any)
		if !ok {
			next = map[string]any{}
			obj[key] = next
		}
		obj = next
	}
	obj[path[len(path)-1]] = json.RawMessage(value)
	out, err := json.Marshal(root)
	if err != nil {
		t.Fatalf("corpus params: %v", err)
	}
	return string(out)
}

// malformedCorpus returns the messages of the corpus for one era, as
// params objects by method, each with an id. 2026 params carry _meta.
func malformedCorpus(t *testing.T, legacy bool) []string {
	var lines []string
	add := func(method, params string) {
		id, _ := json.Marshal(len(lines) + 1)
		lines = append(lines, `{"jsonrpc":"2.0","id":`+string(id)+`,"method":"`+method+`","params":`+params+`}`)
	}
	for _, m := range corpusMethods(legacy) {
		params := m.params
		fields := m.fields
		if !legacy {
			params = withValue(t, params, field("_meta"), `{"`+metaKeyProtocolVersion+`":"2026-07-28","`+metaKeyClientCapabilities+`":{}}`)
			fields = append(fields, metaFields...)
		}
		add(m.method, params)
		for _, f := range fields {
			for _, v := range wrongValues {
				add(m.method, withValue(t, params, f, v))
			}
		}
		for _, v := range wrongValues {
			if v[0] != '{' {
				add(m.method, v) // params itself not an object
			}
		}
	}
	if legacy { // last: a successful one renegotiates the session
		base := `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}`
		for _, f := range initializeFields {
			for _, v := range wrongValues {
				add("initialize", withValue(t, base, f, v))
			}
		}
	}
	// The envelope itself.
	for _, v := range wrongValues {
		lines = append(lines, `{"jsonrpc":"2.0","id":`+v+`,"method":"ping"}`, `{"jsonrpc":`+v+`,"id":1,"method":"ping"}`, `{"jsonrpc":"2.0","id":1,"method":`+v+`}`)
	}
	return lines
}

func checkNoLeak(t *testing.T, where string, frame []byte) {
	t.Helper()
	if leak := leakIn(frame); leak != "" {
		t.Errorf("%s: %q in %.400s", where, leak, frame)
	}
}

func TestNoGoErrorStringsOverStdio(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		name := "2026"
		if legacy {
			name = "legacy"
		}
		t.Run(name, func(t *testing.T) {
			h := startHarnessWith(t, Options{MaxConcurrency: 1, MaxQueue: 100_000}, newHTTPCatalogRuntime(t))
			if legacy {
				h.initialize(ProtocolVersion20251125)
			}
			corpus := malformedCorpus(t, legacy)
			for _, line := range corpus {
				h.send(line)
			}
			err, frames := h.finish()
			if err != nil {
				t.Fatalf("Serve: %v", err)
			}
			if len(frames) < len(corpus)/2 {
				t.Fatalf("%d frames for %d messages", len(frames), len(corpus))
			}
			for _, f := range frames {
				checkNoLeak(t, "stdio "+name, []byte(f))
			}
		})
	}
}

func TestNoGoErrorStringsOverHTTP(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		name := "2026"
		if legacy {
			name = "legacy"
		}
		t.Run(name, func(t *testing.T) {
			s := newHTTPTestServer(t, nil, HTTPOptions{})
			var session map[string]string
			if legacy {
				session = s.legacySession(ProtocolVersion20251125, `{}`)
			}
			answered := 0
			for _, line := range malformedCorpus(t, legacy) {
				header := session
				if !legacy {
					header = mirroredHeaders(line)
				}
				if strings.Contains(line, `"method":"initialize"`) {
					header = nil
				}
				for _, frame := range postAndCollect(t, s, header, line) {
					answered++
					checkNoLeak(t, "HTTP "+name+" "+line, frame)
				}
			}
			if answered == 0 {
				t.Fatal("no answers")
			}
		})
	}
}

// mirroredHeaders returns the 2026 headers that mirror the body line, as
// far as its fields are strings.
func mirroredHeaders(line string) map[string]string {
	var msg struct {
		Method json.RawMessage `json:"method"`
		Params struct {
			Name json.RawMessage `json:"name"`
			URI  json.RawMessage `json:"uri"`
		} `json:"params"`
	}
	json.Unmarshal([]byte(line), &msg)
	header := map[string]string{"MCP-Protocol-Version": ProtocolVersion20260728}
	var method, name string
	if json.Unmarshal(msg.Method, &method) == nil && isHeaderValue(method) {
		header["Mcp-Method"] = method
	}
	if json.Unmarshal(msg.Params.Name, &name) == nil || json.Unmarshal(msg.Params.URI, &name) == nil {
		if !isHeaderValue(name) {
			name = "=?base64?" + base64.StdEncoding.EncodeToString([]byte(name)) + "?="
		}
		header["Mcp-Name"] = name
	}
	return header
}

// postAndCollect posts line and returns the JSON-RPC messages of the
// answer: a JSON body, or an SSE stream's events up to the response (a
// listen stream up to its acknowledgement, then it is closed).
func postAndCollect(t *testing.T, s *httpTestServer, header map[string]string, line string) [][]byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), failAfter)
	defer cancel()
	resp := s.do(ctx, http.MethodPost, header, line)
	defer resp.Body.Close()
	if resp.Header.Get("Content-Type") != "text/event-stream" {
		body, _ := io.ReadAll(resp.Body)
		if len(bytes.TrimSpace(body)) == 0 {
			return nil
		}
		return [][]byte{body}
	}
	var frames [][]byte
	r := bufio.NewReader(resp.Body)
	for {
		l, err := r.ReadString('\n')
		if err != nil {
			return frames
		}
		data, ok := strings.CutPrefix(strings.TrimSuffix(l, "\n"), "data: ")
		if !ok {
			continue
		}
		frames = append(frames, []byte(data))
		if strings.Contains(data, `"result"`) || strings.Contains(data, `"error"`) || strings.Contains(data, "subscriptions/acknowledged") {
			return frames
		}
	}
}

// The golden transcripts' answers are what the reference server writes; none
// of them shows a Go error either.
func TestNoGoErrorStringsInGoldenTranscripts(t *testing.T) {
	outputs, err := filepath.Glob(filepath.Join("testdata", "golden", "*.out.jsonl"))
	if err != nil || len(outputs) == 0 {
		t.Fatalf("no golden outputs: %v", err)
	}
	for _, path := range outputs {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for frame := range bytes.Lines(data) {
			checkNoLeak(t, path, frame)
		}
	}
}

// The scan itself catches what it is for.
func TestLeakInFindsGoErrors(t *testing.T) {
	for _, frame := range []string{
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid params: notifications: json: cannot unmarshal string into Go struct field listenRequest.toolsListChanged of type bool"}}`,
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad","data":{"why":"invalid character 'x' looking for beginning of value"}}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"cannot use map[string]interface {} as main.args"}],"isError":true}}`,
	} {
		if leakIn([]byte(frame)) == "" {
			t.Errorf("no leak found in %s", frame)
		}
	}
	for _, frame := range []string{
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid params: notifications.toolsListChanged must be a boolean"}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"json: fine in a result that is not an error"}]}}`,
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"\"id\" must be a 64-bit integer","data":{"uri":"test://domain.example"}}}`,
	} {
		if leak := leakIn([]byte(frame)); leak != "" {
			t.Errorf("leak %q found in %s", leak, frame)
		}
	}
}

// The example: a listen opt-in that is not a boolean is refused with
// a message naming it (it used to carry encoding/json's error).
func TestListenOptInOfAnotherTypeIsNamed(t *testing.T) {
	h := startHarnessWith(t, Options{}, newHTTPCatalogRuntime(t))
	for _, tt := range []struct{ notifications, want string }{
		{`{"toolsListChanged":"yes"}`, `notifications.toolsListChanged must be a boolean`},
		{`{"resourcesListChanged":1}`, `notifications.resourcesListChanged must be a boolean`},
		{`{"resourceSubscriptions":"test://static-text"}`, `notifications.resourceSubscriptions must be an array of strings`},
		{`{"resourceSubscriptions":[1]}`, `notifications.resourceSubscriptions must be an array of strings`},
	} {
		got := h.roundTrip(`{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":` + tt.notifications + `,` + meta2026 + `}}`)
		want := `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid params: ` + tt.want + `"}}` + "\n"
		if got != want {
			t.Errorf("notifications %s:\n got  %s want %s", tt.notifications, got, want)
		}
	}
}
