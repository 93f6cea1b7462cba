package main

import (
	"encoding/json"
	"io"
	"log"
	"slices"
	"testing"
)

func newTestRouter(lim limits) *router {
	return &router{calls: map[string]*exchange{}, lim: lim, log: log.New(io.Discard, "", 0), label: "t"}
}

// openRequest registers a request with id and progress token (JSON texts,
// "" for none) and returns its exchange.
func openRequest(r *router, id, progress string) *exchange {
	x := &exchange{clientID: json.RawMessage(id), box: newMailbox(r.lim.maxQueued)}
	if progress != "" {
		x.progress = canonicalID(json.RawMessage(progress))
	}
	r.register(x)
	return x
}

func taken(x *exchange) []string {
	msgs, _, _ := x.box.take()
	var out []string
	for _, m := range msgs {
		out = append(out, string(m))
	}
	return out
}

// Each message of the server goes to the exchange it belongs to: an answer
// to its request (under the client's id), a progress notification to the
// request that asked for it, a listen stream's notification to its listen
// request (under the client's id), anything else to the newest request.
func TestRouterRoutes(t *testing.T) {
	r := newTestRouter(testLimits)
	older := openRequest(r, `1`, `"tok"`)
	listen := openRequest(r, `1`, "") // its id is taken: the server sees another
	newer := openRequest(r, `"x"`, "")
	if !listen.rewritten() || older.rewritten() {
		t.Fatalf("wire ids %s, %s", older.wireID, listen.wireID)
	}
	r.route([]byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"tok","progress":1}}`))
	r.route([]byte(`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"a","_meta":{"io.modelcontextprotocol/subscriptionId":` + string(listen.wireID) + `}}}`))
	r.route([]byte(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}`))
	r.route([]byte(`{"jsonrpc":"2.0","id":` + string(listen.wireID) + `,"result":{}}`))
	r.route([]byte(`{"jsonrpc":"2.0","id":1,"result":{"n":1}}`))
	if got := taken(older); !slices.Equal(got, []string{
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"tok","progress":1}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"n":1}}`,
	}) {
		t.Errorf("the request with the progress token got %q", got)
	}
	if got := taken(listen); !slices.Equal(got, []string{
		`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":1},"uri":"a"}}`,
		`{"id":1,"jsonrpc":"2.0","result":{}}`,
	}) {
		t.Errorf("the listen request got %q", got)
	}
	if got := taken(newer); !slices.Equal(got, []string{`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}`}) {
		t.Errorf("the newest request got %q", got)
	}
	if len(r.calls) != 1 || len(r.open) != 1 {
		t.Errorf("after two answers: %d calls, %d open, want 1 each", len(r.calls), len(r.open))
	}
}

// A client's notifications/cancelled names the request by the id the
// server knows it under.
func TestRouterWireIDOf(t *testing.T) {
	r := newTestRouter(testLimits)
	openRequest(r, `5`, "")
	second := openRequest(r, `5.0`, "") // the same id, written otherwise
	if got := r.wireIDOf(json.RawMessage(`5`)); string(got) != string(second.wireID) || !second.rewritten() {
		t.Fatalf("wireIDOf(5) = %s, want the newest's %s", got, second.wireID)
	}
	if got := r.wireIDOf(json.RawMessage(`6`)); got != nil {
		t.Fatalf("wireIDOf(6) = %s, want nil", got)
	}
}

// A client that reads slower than the server writes loses its exchange
// once maxQueued messages wait for it, and nothing else.
func TestRouterEndsAnOverflowingExchange(t *testing.T) {
	r := newTestRouter(limits{maxQueued: 2, maxBacklog: 8})
	x := openRequest(r, `1`, "")
	for range 3 {
		r.route([]byte(`{"jsonrpc":"2.0","method":"notifications/message","params":{}}`))
	}
	msgs, final, err := x.box.take()
	if len(msgs) != 2 || final || err != errOverflow {
		t.Fatalf("took %d messages, final %v, err %v; want 2, false, errOverflow", len(msgs), final, err)
	}
	if len(r.calls) != 0 || len(r.open) != 0 {
		t.Fatalf("the overflowing exchange is still open")
	}
}

// Messages no exchange is open for wait, the newest maxBacklog of them,
// for the next GET stream.
func TestRouterBacklog(t *testing.T) {
	r := newTestRouter(limits{maxQueued: 8, maxBacklog: 2})
	for _, n := range []string{"1", "2", "3"} {
		r.route([]byte(`{"jsonrpc":"2.0","method":"n` + n + `"}`))
	}
	get := &exchange{get: true, box: newMailbox(8)}
	r.register(get)
	if got := taken(get); !slices.Equal(got, []string{`{"jsonrpc":"2.0","method":"n2"}`, `{"jsonrpc":"2.0","method":"n3"}`}) {
		t.Fatalf("the GET stream got %q", got)
	}
	r.route([]byte(`{"jsonrpc":"2.0","method":"n4"}`))
	if got := taken(get); !slices.Equal(got, []string{`{"jsonrpc":"2.0","method":"n4"}`}) {
		t.Fatalf("the GET stream then got %q", got)
	}
}

// An exchange of a child that is gone ends with errChildGone; one whose
// answer came keeps it.
func TestRouterEndAll(t *testing.T) {
	r := newTestRouter(testLimits)
	answered, waiting := openRequest(r, `1`, ""), openRequest(r, `2`, "")
	r.route([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`))
	r.endAll(errChildGone)
	if _, final, err := answered.box.take(); !final || err != nil {
		t.Errorf("the answered exchange: final %v, err %v", final, err)
	}
	if _, final, err := waiting.box.take(); final || err != errChildGone {
		t.Errorf("the waiting exchange: final %v, err %v", final, err)
	}
}

// Equal ids compare equal however they are written; ids of other values
// or types do not.
func TestCanonicalID(t *testing.T) {
	same := [][2]string{{`1`, `1.0`}, {`1`, ` 1 `}, {`"a"`, `"\u0061"`}, {`100`, `1e2`}, {`null`, `null`}}
	for _, p := range same {
		if canonicalID(json.RawMessage(p[0])) != canonicalID(json.RawMessage(p[1])) {
			t.Errorf("%s and %s differ", p[0], p[1])
		}
	}
	differ := [][2]string{{`1`, `"1"`}, {`1`, `2`}, {`"a"`, `"A"`}, {`null`, `"null"`}}
	for _, p := range differ {
		if canonicalID(json.RawMessage(p[0])) == canonicalID(json.RawMessage(p[1])) {
			t.Errorf("%s and %s are equal", p[0], p[1])
		}
	}
	if canonicalID(nil) != "" {
		t.Error("an absent id is not empty")
	}
}

// withMember sets a member on a path of objects, and leaves a message
// without that path as it is.
func TestWithMember(t *testing.T) {
	tests := []struct {
		in    string
		path  []string
		value string
		want  string
	}{
		{`{"id":1,"method":"m"}`, []string{"id"}, `"b"`, `{"id":"b","method":"m"}`},
		{`{"params":{"_meta":{"k":1},"x":2}}`, []string{"params", "_meta", "k"}, `3`, `{"params":{"_meta":{"k":3},"x":2}}`},
		{`{"params":{}}`, []string{"params", "_meta", "k"}, `3`, `{"params":{}}`},
		{`{"params":[1]}`, []string{"params", "requestId"}, `3`, `{"params":[1]}`},
	}
	for _, tt := range tests {
		if got := string(withMember([]byte(tt.in), json.RawMessage(tt.value), tt.path...)); got != tt.want {
			t.Errorf("withMember(%s, %v, %s) = %s, want %s", tt.in, tt.path, tt.value, got, tt.want)
		}
	}
}

// parseMessage tells the kinds apart, keeps a null id as present, and
// reads what routing and the HTTP rules need.
func TestParseMessage(t *testing.T) {
	m, err := parseMessage([]byte("{\"jsonrpc\": \"2.0\",\n \"id\": null, \"error\": {\"code\": -32700, \"message\": \"x\"}}"))
	if err != nil || !m.isResponse() || string(m.id) != "null" || !m.hasCode || m.code != codeParseError || string(m.line) != `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}` {
		t.Fatalf("an error response with id null: %+v, %v", m, err)
	}
	m, err = parseMessage([]byte(`{"jsonrpc":"2.0","id":"r","method":"resources/read","params":{"uri":"u","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","progressToken":7}}}`))
	if err != nil || !m.isRequest() || m.version != "2026-07-28" || !m.hasVersion || string(m.mirrored) != `"u"` || string(m.metaProgress) != "7" {
		t.Fatalf("a 2026 resources/read: %+v, %v", m, err)
	}
	m, err = parseMessage([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`))
	if err != nil || !m.isNotification() || string(m.requestID) != "3" || m.hasVersion {
		t.Fatalf("a cancellation: %+v, %v", m, err)
	}
	for _, bad := range []string{``, `[]`, `"x"`, `{"id":`} {
		if _, err := parseMessage([]byte(bad)); err == nil {
			t.Errorf("parseMessage(%q) succeeded", bad)
		}
	}
}
