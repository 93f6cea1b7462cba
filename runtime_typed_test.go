package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"
)

type (
	schemaAddress struct {
		Street string `json:"street" jsonschema:"Street and number"`
		City   string `json:"city,omitempty"`
	}
	schemaBase struct {
		ID string `json:"id"`
	}
	schemaAll struct {
		schemaBase
		Name     string            `json:"name" jsonschema:"Who \"quoted\""`
		Age      int               `json:"age,omitzero"`
		Small    int8              `json:"small"`
		Count    uint              `json:"count"`
		Port     uint16            `json:"port"`
		Ratio    float64           `json:"ratio"`
		OK       bool              `json:"ok"`
		Tags     []string          `json:"tags"`
		Pair     [2]int            `json:"pair"`
		Labels   map[string]string `json:"labels"`
		Home     schemaAddress     `json:"home"`
		Work     *schemaAddress    `json:"work,omitempty"`
		Blob     []byte            `json:"blob"`
		Raw      json.RawMessage   `json:"raw"`
		Anything any               `json:"anything"`
		When     time.Time         `json:"when"`
		MaybeAt  *time.Time        `json:"maybeAt"`
		Addr     netip.Addr        `json:"addr"`
		Quoted   int64             `json:"quoted,string"`
		Number   json.Number       `json:"number"`
		Skip     int               `json:"-"`
		Untagged string
	}
)

// TestInferSchema checks the inferred JSON Schema of a struct with every
// supported kind of field.
func TestInferSchema(t *testing.T) {
	p := newPlanBuilder(nil).plan(reflect.TypeFor[*schemaAll]())
	got, err := inferSchema(p, true)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"object","properties":{` +
		`"id":{"type":"string"},` +
		`"name":{"type":"string","description":"Who \"quoted\""},` +
		`"age":{"type":"integer"},` +
		`"small":{"type":"integer","minimum":-128,"maximum":127},` +
		`"count":{"type":"integer","minimum":0},` +
		`"port":{"type":"integer","minimum":0,"maximum":65535},` +
		`"ratio":{"type":"number"},` +
		`"ok":{"type":"boolean"},` +
		`"tags":{"type":["array","null"],"items":{"type":"string"}},` +
		`"pair":{"type":"array","items":{"type":"integer"}},` +
		`"labels":{"type":["object","null"],"additionalProperties":{"type":"string"}},` +
		`"home":{"type":"object","properties":{"street":{"type":"string","description":"Street and number"},"city":{"type":"string"}},"required":["street"]},` +
		`"work":{"type":["object","null"],"properties":{"street":{"type":"string","description":"Street and number"},"city":{"type":"string"}},"required":["street"]},` +
		`"blob":{"type":["string","null"],"contentEncoding":"base64"},` +
		`"raw":{},` +
		`"anything":{},` +
		`"when":{"type":"string","format":"date-time"},` +
		`"maybeAt":{"type":["string","null"],"format":"date-time"},` +
		`"addr":{"type":"string"},` +
		`"quoted":{"type":"string"},` +
		`"number":{"type":"number"},` +
		`"Untagged":{"type":"string"}` +
		`},"required":["id","name","small","count","port","ratio","ok","tags","pair","labels","home","blob","raw","anything","when","maybeAt","addr","quoted","number","Untagged"]}`
	if string(got) != want {
		t.Errorf("schema\n got %s\nwant %s", got, want)
	}
	if !json.Valid(got) {
		t.Error("the schema is not valid JSON")
	}

	out, err := inferSchema(newPlanBuilder(nil).plan(reflect.TypeFor[map[string][]int]()), false)
	if want := `{"type":"object","additionalProperties":{"type":["array","null"],"items":{"type":"integer"}}}`; err != nil || string(out) != want {
		t.Errorf("map schema %s, %v; want %s", out, err, want)
	}
}

type (
	typedRecursive struct {
		Next *typedRecursive `json:"next"`
	}
	typedRecursiveSlice []typedRecursiveSlice
	typedIn             struct {
		Text string `json:"text"`
	}
	typedStringer struct {
		N int `json:"n"`
	}
)

func (s typedStringer) String() string { return fmt.Sprintf("n is %d", s.N) }

// TestAddTypedToolRefuses checks the types and tools AddTypedTool refuses.
func TestAddTypedToolRefuses(t *testing.T) {
	rt := newTestRuntime(t, testOptions())
	tool := Tool{Name: "t"}
	type withChan struct {
		C chan int `json:"c"`
	}
	type withFunc struct {
		F func() `json:"f"`
	}
	type withIntMap struct {
		M map[int]string `json:"m"`
	}
	type withIface struct {
		E error `json:"e"`
	}
	tests := []struct {
		name string
		add  func() error
		want string
	}{
		{"input not a struct", func() error {
			return AddTypedTool(rt, tool, func(context.Context, *HandlerRequest, string) (typedIn, error) { return typedIn{}, nil })
		}, "the input type string is not a struct"},
		{"input a map", func() error {
			return AddTypedTool(rt, tool, func(context.Context, *HandlerRequest, map[string]any) (typedIn, error) { return typedIn{}, nil })
		}, "is not a struct or a pointer to one"},
		{"output a slice", func() error {
			return AddTypedTool(rt, tool, func(context.Context, *HandlerRequest, typedIn) ([]int, error) { return nil, nil })
		}, "the output type []int is not a struct"},
		{"output an int-keyed map", func() error {
			return AddTypedTool(rt, tool, func(context.Context, *HandlerRequest, typedIn) (map[int]int, error) { return nil, nil })
		}, "not a struct, a pointer to one or a map with string keys"},
		{"output a time", func() error {
			return AddTypedTool(rt, tool, func(context.Context, *HandlerRequest, typedIn) (time.Time, error) { return time.Time{}, nil })
		}, "the output type time.Time is not"},
		{"recursive input", func() error {
			return AddTypedTool(rt, tool, func(context.Context, *HandlerRequest, typedRecursive) (typedIn, error) { return typedIn{}, nil })
		}, "is recursive"},
		{"recursive slice", func() error {
			return AddTypedTool(rt, tool, func(context.Context, *HandlerRequest, struct{ S typedRecursiveSlice }) (typedIn, error) {
				return typedIn{}, nil
			})
		}, "is recursive"},
		{"channel", func() error {
			return AddTypedTool(rt, tool, func(context.Context, *HandlerRequest, withChan) (typedIn, error) { return typedIn{}, nil })
		}, "chan values have no JSON form"},
		{"func in output", func() error {
			return AddTypedTool(rt, tool, func(context.Context, *HandlerRequest, typedIn) (withFunc, error) { return withFunc{}, nil })
		}, "func values have no JSON form"},
		{"int-keyed map field", func() error {
			return AddTypedTool(rt, tool, func(context.Context, *HandlerRequest, withIntMap) (typedIn, error) { return typedIn{}, nil })
		}, "JSON Schema describes only string keys"},
		{"interface with methods", func() error {
			return AddTypedTool(rt, tool, func(context.Context, *HandlerRequest, withIface) (typedIn, error) { return typedIn{}, nil })
		}, "interface type error has methods"},
		{"nil handler", func() error { return AddTypedTool[typedIn, typedIn](rt, tool, nil) }, "nil handler"},
		{"bad name", func() error {
			return AddTypedTool(rt, Tool{Name: "a b"}, func(context.Context, *HandlerRequest, typedIn) (typedIn, error) { return typedIn{}, nil })
		}, "a tool name is"},
	}
	for _, tt := range tests {
		err := tt.add()
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: AddTypedTool = %v, want an error containing %q", tt.name, err, tt.want)
		}
	}
	if rt.capabilities().Tools != nil {
		t.Error("a refused tool was registered")
	}
}

// TestTypedToolSchemas checks the schemas tools/list shows: inferred, or the
// tool's own, verbatim (compacted, as every result is).
func TestTypedToolSchemas(t *testing.T) {
	rt := newTestRuntime(t, testOptions())
	echo := func(_ context.Context, _ *HandlerRequest, in typedIn) (typedIn, error) { return in, nil }
	if err := AddTypedTool(rt, Tool{Name: "inferred"}, echo); err != nil {
		t.Fatal(err)
	}
	own := Tool{Name: "own", InputSchema: json.RawMessage(`{ "type" : "object", "x-keep": [1] }`), OutputSchema: json.RawMessage(`{"type":"object","x-out":true}`)}
	if err := AddTypedTool(rt, own, echo); err != nil {
		t.Fatal(err)
	}
	schema := `{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`
	wantResult(t, dispatch(rt, legacyRequest(ProtocolVersion20250618, "tools/list", "")),
		`{"tools":[{"name":"inferred","inputSchema":`+schema+`,"outputSchema":`+schema+`},`+
			`{"name":"own","inputSchema":{"type":"object","x-keep":[1]},"outputSchema":{"type":"object","x-out":true}}]}`)
}

// TestTypedToolCalls checks a typed tool's results: structured content with
// its text copy, refusals of arguments that do not fit, and handler errors.
func TestTypedToolCalls(t *testing.T) {
	rt := newTestRuntime(t, testOptions())
	type address struct {
		City string `json:"city"`
		Zip  string `json:"zip,omitempty"`
	}
	type in struct {
		Text    string   `json:"text"`
		Times   uint8    `json:"times,omitempty"`
		Address *address `json:"address,omitempty"`
	}
	type out struct {
		Echoed []string `json:"echoed"`
		City   string   `json:"city,omitempty"`
		Note   *string  `json:"note"`
	}
	repeat := func(_ context.Context, _ *HandlerRequest, a in) (out, error) {
		o := out{Echoed: []string{}}
		for range max(a.Times, 1) {
			o.Echoed = append(o.Echoed, a.Text)
		}
		if a.Address != nil {
			o.City = a.Address.City
		}
		return o, nil
	}
	mustAdd := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	mustAdd(AddTypedTool(rt, Tool{Name: "repeat"}, repeat))
	mustAdd(AddTypedTool(rt, Tool{Name: "stringer"}, func(_ context.Context, _ *HandlerRequest, a typedIn) (typedStringer, error) {
		return typedStringer{N: len(a.Text)}, nil
	}))
	mustAdd(AddTypedTool(rt, Tool{Name: "pointer"}, func(_ context.Context, _ *HandlerRequest, a *typedIn) (*typedStringer, error) {
		if a.Text == "nil" {
			return nil, nil
		}
		return &typedStringer{N: len(a.Text)}, nil
	}))
	mustAdd(AddTypedTool(rt, Tool{Name: "map"}, func(_ context.Context, _ *HandlerRequest, a typedIn) (map[string]float64, error) {
		switch a.Text {
		case "nil":
			return nil, nil
		case "nan":
			return map[string]float64{"x": math.NaN()}, nil
		}
		return map[string]float64{"b": 0.5, "a": 1e21}, nil
	}))
	mustAdd(AddTypedTool(rt, Tool{Name: "fails"}, func(_ context.Context, _ *HandlerRequest, a typedIn) (typedIn, error) {
		if a.Text == "rpc" {
			return typedIn{}, &RPCError{Code: CodeInvalidParams, Message: "refused"}
		}
		return typedIn{}, errors.New("it failed")
	}))

	failure := func(text string) string {
		b, _ := marshalJSON(text)
		return `{"content":[{"type":"text","text":` + string(b) + `}],"isError":true}`
	}
	tests := []struct{ name, params, want string }{
		{"structured content and its JSON", `{"name":"repeat","arguments":{"text":"hi","times":2,"Times":9}}`,
			`{"content":[{"type":"text","text":"{\"echoed\":[\"hi\",\"hi\"],\"note\":null}"}],"structuredContent":{"echoed":["hi","hi"],"note":null}}`},
		{"nested", `{"name":"repeat","arguments":{"text":"hi","address":{"city":"Oslo"},"extra":[1]}}`,
			`{"content":[{"type":"text","text":"{\"echoed\":[\"hi\"],\"city\":\"Oslo\",\"note\":null}"}],"structuredContent":{"echoed":["hi"],"city":"Oslo","note":null}}`},
		{"missing required", `{"name":"repeat","arguments":{"times":2}}`, failure("Invalid arguments for tool repeat: missing required argument(s): text")},
		{"missing nested required", `{"name":"repeat","arguments":{"text":"a","address":{"zip":"1"}}}`, failure(`Invalid arguments: "address.city" is required`)},
		{"wrong type", `{"name":"repeat","arguments":{"text":["a"]}}`, failure(`Invalid arguments: "text" must be a string`)},
		{"out of range", `{"name":"repeat","arguments":{"text":"a","times":300}}`, failure(`Invalid arguments: "times" must be an integer from 0 to 255`)},
		{"null where not allowed", `{"name":"repeat","arguments":{"text":null}}`, failure(`Invalid arguments: "text" must be a string`)},
		{"null where allowed", `{"name":"repeat","arguments":{"text":"a","address":null}}`,
			`{"content":[{"type":"text","text":"{\"echoed\":[\"a\"],\"note\":null}"}],"structuredContent":{"echoed":["a"],"note":null}}`},
		{"stringer text", `{"name":"stringer","arguments":{"text":"abc"}}`, `{"content":[{"type":"text","text":"n is 3"}],"structuredContent":{"n":3}}`},
		{"pointer types", `{"name":"pointer","arguments":{"text":"ab"}}`, `{"content":[{"type":"text","text":"n is 2"}],"structuredContent":{"n":2}}`},
		{"map output, sorted", `{"name":"map","arguments":{"text":""}}`, `{"content":[{"type":"text","text":"{\"a\":1e+21,\"b\":0.5}"}],"structuredContent":{"a":1e+21,"b":0.5}}`},
		{"nil map output", `{"name":"map","arguments":{"text":"nil"}}`, `{"content":[{"type":"text","text":"{}"}],"structuredContent":{}}`},
		{"handler error", `{"name":"fails","arguments":{"text":""}}`, failure("it failed")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantResult(t, dispatch(rt, legacyRequest(ProtocolVersion20250618, "tools/call", tt.params)), tt.want)
			stateless := strings.TrimSuffix(tt.want, "}") + "," + complete2026 + "}"
			wantResult(t, dispatch(rt, statelessRequest("tools/call", tt.params)), stateless)
		})
	}
	errs := []struct {
		name, params string
		code         int
		message      string
	}{
		{"handler *RPCError", `{"name":"fails","arguments":{"text":"rpc"}}`, CodeInvalidParams, "refused"},
		{"nil pointer result", `{"name":"pointer","arguments":{"text":"nil"}}`, CodeInternalError, "Internal error"},
		{"unencodable result", `{"name":"map","arguments":{"text":"nan"}}`, CodeInternalError, "Internal error"},
	}
	for _, tt := range errs {
		t.Run(tt.name, func(t *testing.T) {
			wantError(t, dispatch(rt, statelessRequest("tools/call", tt.params)), tt.code, tt.message, "")
		})
	}
}

// TestTypedEncodingMatchesMarshalJSON checks the encoder plan against
// marshalJSON of a pointer to the same value.
func TestTypedEncodingMatchesMarshalJSON(t *testing.T) {
	type opts struct {
		Empty   string            `json:"empty,omitempty"`
		Zero    time.Time         `json:"zero,omitzero"`
		ZeroInt int               `json:"zeroInt,omitzero"`
		NilPtr  *int              `json:"nilPtr,omitempty"`
		Map     map[string]int    `json:"map,omitempty"`
		QInt    int               `json:"qInt,string"`
		QStr    string            `json:"qStr,string"`
		QBool   *bool             `json:"qBool,string"`
		F32     float32           `json:"f32"`
		Tiny    float64           `json:"tiny"`
		Number  json.Number       `json:"number"`
		Raw     json.RawMessage   `json:"raw"`
		Addr    netip.Addr        `json:"addr"`
		Any     any               `json:"any"`
		Nested  map[string][]byte `json:"nested"`
		Arr     [2]bool           `json:"arr"`
		Zeroer  interface {
			IsZero() bool
		} `json:"zeroer,omitzero"`
	}
	yes := true
	values := []any{
		&schemaAll{Name: "ü <&> \u2028", Tags: []string{"a"}, Labels: map[string]string{"z": "1", "a": "2"}, Work: &schemaAddress{Street: "s"}, Blob: []byte{0, 1, 2}, Raw: json.RawMessage(` {"a" : 1} `), When: time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC), Quoted: -5, Number: "12.5"},
		&schemaAll{},
		&opts{},
		&opts{Empty: "e", Zero: time.Unix(1, 0).UTC(), ZeroInt: 1, NilPtr: new(int), Map: map[string]int{"k": 1}, QInt: 3, QStr: `a"b`, QBool: &yes, F32: 0.1, Tiny: 1e-7, Number: "-0", Raw: json.RawMessage(`[1]`), Addr: netip.MustParseAddr("::1"), Any: map[string]any{"x": []any{1.5, "y"}}, Nested: map[string][]byte{"b": nil, "a": {255}}},
	}
	for _, v := range values {
		want, err := marshalJSON(v)
		if err != nil {
			t.Fatal(err)
		}
		rv := reflect.ValueOf(v)
		p := newPlanBuilder(nil).plan(rv.Type())
		got, err := p.appendJSON(nil, rv)
		if err != nil {
			t.Fatalf("%T: %v", v, err)
		}
		if string(got) != string(want) {
			t.Errorf("%T:\n got %s\nwant %s", v, got, want)
		}
		if hint := p.sizeHint(rv); hint < len(got) {
			t.Errorf("%T: size hint %d < %d bytes", v, hint, len(got))
		}
	}
	for _, f := range []float64{math.NaN(), math.Inf(1)} {
		if _, err := newPlanBuilder(nil).plan(reflect.TypeFor[float64]()).appendJSON(nil, reflect.ValueOf(f)); err == nil {
			t.Errorf("%v encoded", f)
		}
	}
}
