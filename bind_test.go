package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// Types the binder is checked against encoding/json with.
type (
	bindInner struct {
		City string `json:"city"`
		Zip  *int   `json:"zip,omitempty"`
	}
	bindEmbedded struct {
		Promoted string `json:"promoted"`
		Shadowed string `json:"shadowed"`
	}
	BindEmbeddedPtr struct {
		Deep int `json:"deep"`
	}
	bindConflictA struct{ Same int }
	bindConflictB struct{ Same int }
	bindAll       struct {
		bindEmbedded
		*BindEmbeddedPtr
		bindConflictA
		bindConflictB
		Shadowed  string            `json:"shadowed"`
		Str       string            `json:"str"`
		Untagged  int               //
		Skipped   int               `json:"-"`
		Dash      int               `json:"-,"`
		I8        int8              `json:"i8"`
		U16       uint16            `json:"u16"`
		I64       int64             `json:"i64"`
		F64       float64           `json:"f64"`
		F32       float32           `json:"f32"`
		Bool      bool              `json:"bool"`
		List      []string          `json:"list"`
		Arr       [3]int            `json:"arr"`
		Map       map[string]int    `json:"map"`
		IntMap    map[int]string    `json:"intMap"`
		Inner     bindInner         `json:"inner"`
		InnerPtr  *bindInner        `json:"innerPtr"`
		Inners    []bindInner       `json:"inners"`
		Raw       json.RawMessage   `json:"raw"`
		Any       any               `json:"any"`
		AnyMap    map[string]any    `json:"anyMap"`
		When      time.Time         `json:"when"`
		Bytes     []byte            `json:"bytes"`
		Number    json.Number       `json:"number"`
		Addr      netip.Addr        `json:"addr"`
		Quoted    int               `json:"quoted,string"`
		QuotedB   bool              `json:"quotedB,string"`
		QuotedS   string            `json:"quotedS,string"`
		PtrStr    *string           `json:"ptrStr"`
		Nested    [][]int           `json:"nested"`
		unexposed int               //nolint:unused // never bound
		Opt       string            `json:"opt,omitempty"`
		Weird     string            `json:"we ird"`
		Bad       string            `json:"\u00e9\x01"` // an invalid tag name: the Go name is used
		MapPtr    map[string]*int64 `json:"mapPtr"`
	}
)

// TestBindAgreesWithEncodingJSON binds inputs whose keys match exactly with
// both decoders and compares the results.
func TestBindAgreesWithEncodingJSON(t *testing.T) {
	inputs := []string{
		`{}`,
		`{"str":"a\u00e9\n","Untagged":7,"Skipped":1,"-":2,"i8":-128,"u16":65535,"i64":-9223372036854775808,"f64":1.5e300,"f32":0.1,"bool":true}`,
		`{"list":["a","b"],"arr":[1,2,3,4],"map":{"x":1,"y":2},"intMap":{"-3":"a","4":"b"}}`,
		`{"arr":[9]}`,
		`{"list":[],"map":{},"inners":[]}`,
		`{"list":null,"map":null,"innerPtr":null,"ptrStr":null,"any":null,"raw":null,"bytes":null}`,
		`{"inner":{"city":"Oslo","zip":123},"innerPtr":{"city":"Rome"},"inners":[{"city":"a"},{"zip":null}]}`,
		`{"raw":{"a": [1, 2]},"any":{"a":[1,"b",true,null,2.5]},"anyMap":{"k":{"n":1}}}`,
		`{"when":"2024-05-06T07:08:09.123Z","bytes":"aGVsbG8=","number":-1.25e3,"addr":"192.0.2.1"}`,
		`{"quoted":"42","quotedB":"true","quotedS":"\"inner\"","ptrStr":"p"}`,
		`{"quoted":null,"quotedS":null}`,
		`{"promoted":"p","shadowed":"outer","deep":5,"Same":1}`,
		`{"nested":[[1],[],[2,3]],"opt":"o","we ird":"w","Bad":"b","mapPtr":{"a":1,"b":null}}`,
		`{"str":null,"i64":null,"bool":null,"inner":null,"arr":null}`,
		`{"str":"first","str":"second"}`,
		`{"unexposed":3,"bindEmbedded":{"promoted":"no"}}`,
	}
	for _, in := range inputs {
		var want bindAll
		if err := json.Unmarshal([]byte(in), &want); err != nil {
			t.Fatalf("encoding/json %s: %v", in, err)
		}
		for _, validated := range []bool{false, true} {
			var got bindAll
			if err := argumentsRequest(in, validated, nil).Bind(&got); err != nil {
				t.Errorf("Bind %s (validated %v): %v", in, validated, err)
				continue
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Bind %s (validated %v):\n got %+v\nwant %+v", in, validated, got, want)
			}
		}
	}
}

// argumentsRequest returns a HandlerRequest of rt (nil for none) whose
// Arguments are args: as Dispatch validated them (setArguments), or as a
// HandlerRequest built outside Dispatch has them.
func argumentsRequest(args string, validated bool, rt *Runtime) *HandlerRequest {
	req := &HandlerRequest{rt: rt}
	if validated {
		req.setArguments(json.RawMessage(args))
	} else {
		req.Arguments = json.RawMessage(args)
	}
	return req
}

// TestBindValidatedArguments checks that the arguments Dispatch validated
// are bound without being checked again, and that any others still are.
func TestBindValidatedArguments(t *testing.T) {
	rt := newTestRuntime(t, testOptions())
	validated := make(chan bool, 2)
	err := rt.AddTool(Tool{Name: "probe"}, func(_ context.Context, req *HandlerRequest) (*ToolResult, error) {
		validated <- req.argumentsValidated()
		req.Arguments = slices.Clone(req.Arguments)
		validated <- req.argumentsValidated()
		return TextResult("ok"), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if r := dispatch(rt, statelessRequest("tools/call", `{"name":"probe","arguments":{"a":"é"}}`)); r.Error != nil {
		t.Fatal(r.Error)
	}
	if !<-validated {
		t.Error("a tool's Arguments from Dispatch are not marked validated")
	}
	if <-validated {
		t.Error("Arguments replaced by a copy are still marked validated")
	}

	// Invalid UTF-8 passes json.Valid; only the string check refuses it.
	var got struct {
		A string `json:"a"`
	}
	err = argumentsRequest("{\"a\":\"\xff\"}", false, nil).Bind(&got)
	if err == nil || err.Error() != `Invalid arguments: "a" must be a string` {
		t.Errorf("Bind of invalid UTF-8 = %v (bound %q), want the argument refused", err, got.A)
	}
}

// TestBinderValidatedStrings checks the validated binder's string decoding
// against decodeString.
func TestBinderValidatedStrings(t *testing.T) {
	for _, tok := range []string{
		`""`, `"plain"`, `"é 世界 😀"`, `"\"q\" \\ \/ \b\f\n\r\t"`, `"\u00e9\u4e16"`,
		`"\ud83d\ude00"`, `"lone \ud800 x"`, `"\udc00\ud800"`, `"a\\"`,
	} {
		want, ok := decodeString([]byte(tok))
		if !ok {
			t.Fatalf("decodeString(%s) failed", tok)
		}
		if got, ok := (binder{validated: true}).decodeString([]byte(tok)); !ok || got != want {
			t.Errorf("validated decodeString(%s) = %q, %v; want %q", tok, got, ok, want)
		}
	}
	for _, notString := range []string{`5`, `null`, `{}`, `["a"]`, `true`} {
		if got, ok := (binder{validated: true}).decodeString([]byte(notString)); ok {
			t.Errorf("validated decodeString(%s) = %q, true; want false", notString, got)
		}
	}
}

// TestBindIntoExistingValues checks that binding merges into what v holds,
// as encoding/json does: absent fields and map entries stay, slices are
// replaced.
func TestBindIntoExistingValues(t *testing.T) {
	type target struct {
		Keep string         `json:"keep"`
		Map  map[string]int `json:"map"`
		List []int          `json:"list"`
		Ptr  *bindInner     `json:"ptr"`
	}
	in := `{"map":{"b":2},"list":[5],"ptr":{"city":"c"}}`
	fresh := func() target {
		return target{Keep: "k", Map: map[string]int{"a": 1}, List: []int{1, 2, 3}, Ptr: &bindInner{City: "old", Zip: new(int)}}
	}
	want, got := fresh(), fresh()
	if err := json.Unmarshal([]byte(in), &want); err != nil {
		t.Fatal(err)
	}
	if err := (&HandlerRequest{Arguments: json.RawMessage(in)}).Bind(&got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

// TestBindExactKeys checks that keys match field names exactly, case
// included, after unescaping.
func TestBindExactKeys(t *testing.T) {
	type args struct {
		Ms       int    `json:"ms"`
		Untagged string //
	}
	tests := []struct {
		in   string
		want args
	}{
		{`{"ms":0,"MS":3000}`, args{}},
		{`{"MS":3000,"Ms":1,"mS":2}`, args{}},
		{`{"m\u0073":4}`, args{Ms: 4}},
		{`{"untagged":"no","UNTAGGED":"no"}`, args{}},
		{`{"Untagged":"yes"}`, args{Untagged: "yes"}},
	}
	for _, tt := range tests {
		var got args
		if err := (&HandlerRequest{Arguments: json.RawMessage(tt.in)}).Bind(&got); err != nil || got != tt.want {
			t.Errorf("Bind %s = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}

// TestBindErrors checks the messages of values that do not fit: neutral,
// naming the argument, with the detail in the log only.
func TestBindErrors(t *testing.T) {
	type item struct {
		Name string `json:"name"`
	}
	type args struct {
		Ms     int            `json:"ms"`
		U8     uint8          `json:"u8"`
		I8     int8           `json:"i8"`
		F32    float32        `json:"f32"`
		Flag   bool           `json:"flag"`
		Items  []item         `json:"items"`
		Arr    [2]int         `json:"arr"`
		Counts map[string]int `json:"counts"`
		ByID   map[int]string `json:"byId"`
		Inner  struct {
			Deep struct {
				N int `json:"n"`
			} `json:"deep"`
		} `json:"inner"`
		When   time.Time  `json:"when"`
		Addr   netip.Addr `json:"addr"`
		Bytes  []byte     `json:"bytes"`
		Quoted int        `json:"quoted,string"`
		Ch     chan int   `json:"ch"`
	}
	tests := []struct{ in, want string }{
		{`{"ms":"5"}`, `Invalid arguments: "ms" must be an integer`},
		{`{"ms":1.5}`, `Invalid arguments: "ms" must be an integer`},
		{`{"ms":1.0000000000000000000000000000000000000001}`, `Invalid arguments: "ms" must be an integer`},
		{`{"ms":12345678901234567891e-1}`, `Invalid arguments: "ms" must be an integer`},
		{`{"ms":1e400}`, `Invalid arguments: "ms" must be an integer from -9223372036854775808 to 9223372036854775807`},
		{`{"ms":true}`, `Invalid arguments: "ms" must be an integer`},
		{`{"ms":99999999999999999999}`, `Invalid arguments: "ms" must be an integer from -9223372036854775808 to 9223372036854775807`},
		{`{"u8":256}`, `Invalid arguments: "u8" must be an integer from 0 to 255`},
		{`{"u8":-1}`, `Invalid arguments: "u8" must be an integer from 0 to 255`},
		{`{"i8":-129}`, `Invalid arguments: "i8" must be an integer from -128 to 127`},
		{`{"f32":1e39}`, `Invalid arguments: "f32" is out of range`},
		{`{"f32":"x"}`, `Invalid arguments: "f32" must be a number`},
		{`{"flag":"true"}`, `Invalid arguments: "flag" must be a boolean`},
		{`{"items":{}}`, `Invalid arguments: "items" must be an array`},
		{`{"items":[{"name":"a"},{"name":7}]}`, `Invalid arguments: "items[1].name" must be a string`},
		{`{"arr":[1,"x"]}`, `Invalid arguments: "arr[1]" must be an integer`},
		{`{"counts":{"a":1,"b":"2"}}`, `Invalid arguments: "counts.b" must be an integer`},
		{`{"counts":[]}`, `Invalid arguments: "counts" must be an object`},
		{`{"byId":{"x":"a"}}`, `Invalid arguments: "byId" must have integer keys`},
		{`{"inner":{"deep":{"n":"x"}}}`, `Invalid arguments: "inner.deep.n" must be an integer`},
		{`{"inner":{"deep":5}}`, `Invalid arguments: "inner.deep" must be an object`},
		{`{"when":"yesterday"}`, `Invalid arguments: "when" must be a date-time string`},
		{`{"when":5}`, `Invalid arguments: "when" must be a date-time string`},
		{`{"addr":"not an address"}`, `Invalid arguments: "addr" is not valid`},
		{`{"addr":5}`, `Invalid arguments: "addr" must be a string`},
		{`{"bytes":"!!"}`, `Invalid arguments: "bytes" must be a base64-encoded string`},
		{`{"quoted":5}`, `Invalid arguments: "quoted" must be a string`},
		{`{"quoted":"x"}`, `Invalid arguments: "quoted" must be a string holding an integer`},
		{`{"ch":1}`, `Invalid arguments: "ch" cannot be bound`},
		{`{"ms":1,"ms":"x"}`, `Invalid arguments: "ms" must be an integer`},
	}
	for _, tt := range tests {
		var logged bytes.Buffer
		rt, err := NewRuntime(RuntimeOptions{ServerInfo: Implementation{Name: "n", Version: "1"},
			Logger: slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelDebug}))})
		if err != nil {
			t.Fatal(err)
		}
		var got args
		err = argumentsRequest(tt.in, false, rt).Bind(&got)
		if err == nil || err.Error() != tt.want {
			t.Errorf("Bind %s = %v, want %s", tt.in, err, tt.want)
			continue
		}
		if verr := argumentsRequest(tt.in, true, rt).Bind(&got); verr == nil || verr.Error() != tt.want {
			t.Errorf("Bind %s (validated) = %v, want %s", tt.in, verr, tt.want)
		}
		for _, leak := range []string{"json:", "Go struct", "unmarshal", "main.", "int64"} {
			if strings.Contains(err.Error(), leak) {
				t.Errorf("Bind %s: the message %q mentions %q", tt.in, err, leak)
			}
		}
		if _, ok := err.(*ArgumentError); !ok {
			t.Errorf("Bind %s: the error is a %T, not an *ArgumentError", tt.in, err)
		}
		if !strings.Contains(logged.String(), "arguments did not bind") {
			t.Errorf("Bind %s: nothing logged (%q)", tt.in, logged.String())
		}
	}
}

// TestBindNeverPanics binds into every kind of Go value, supported or not.
func TestBindNeverPanics(t *testing.T) {
	type withMethods interface{ M() }
	type recursive struct {
		Next *recursive `json:"next"`
		Kids []recursive
	}
	var (
		n  int
		s  struct{ F func() }
		m  map[[2]int]string
		c  complex128
		wm withMethods
		r  recursive
	)
	targets := []any{nil, 5, "x", &n, new(*int), &s, &m, &c, &wm, &r, (*int)(nil), new(any), new([]any), new(map[string]any), new(chan int)}
	for _, v := range targets {
		for _, in := range []string{`{}`, `{"F":1,"next":{"next":{"Kids":[{}]}}}`, ``, `{"a":`, `[1,2]`, `"s"`} {
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Errorf("Bind(%T) of %q panicked: %v", v, in, p)
					}
				}()
				err := (&HandlerRequest{Arguments: json.RawMessage(in)}).Bind(v)
				if err != nil && !strings.HasPrefix(err.Error(), "Invalid arguments: ") {
					t.Errorf("Bind(%T) of %q = %v", v, in, err)
				}
			}()
		}
	}
	if r.Next == nil || r.Next.Next == nil || len(r.Next.Next.Kids) != 1 {
		t.Errorf("a recursive type bound as %+v", r)
	}
}

// TestBindStrict checks the rules strict binding adds: required fields at
// every depth, and null only where the inferred schema allows it.
func TestBindStrict(t *testing.T) {
	type inner struct {
		City string `json:"city"`
		Zip  string `json:"zip,omitempty"`
	}
	type args struct {
		Name  string   `json:"name"`
		Inner inner    `json:"inner"`
		Opt   *inner   `json:"opt,omitzero"`
		List  []string `json:"list,omitempty"`
		Bytes []byte   `json:"bytes,omitempty"`
	}
	p := newPlanBuilder(nil).plan(reflect.TypeFor[args]())
	tests := []struct {
		in       string
		required bool
		want     string // "" for success
	}{
		{`{"name":"n","inner":{"city":"c"}}`, true, ""},
		{`{"name":"n","inner":{}}`, true, `Invalid arguments: "inner.city" is required`},
		{`{"name":"n","inner":{}}`, false, ""},
		{`{"name":"n","inner":{"city":"c"},"opt":{"zip":"z"}}`, true, `Invalid arguments: "opt.city" is required`},
		{`{"name":null,"inner":{"city":"c"}}`, true, `Invalid arguments: "name" must be a string`},
		{`{"name":"n","inner":null}`, false, `Invalid arguments: "inner" must be an object`},
		{`{"name":"n","inner":{"city":"c"},"opt":null,"list":null,"bytes":null}`, true, ""},
		{`{"name":"n","inner":{"city":"c"},"bytes":[1,2]}`, true, `Invalid arguments: "bytes" must be a base64-encoded string`},
	}
	for _, tt := range tests {
		var v args
		err := binder{strict: true, required: tt.required}.bind([]byte(tt.in), reflect.ValueOf(&v).Elem(), p)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("strict bind %s (required %v) = %q, want %q", tt.in, tt.required, got, tt.want)
		}
	}
}

// TestBindFieldRules checks which fields a struct's JSON members are, against
// encoding/json's encoding of the same struct.
func TestBindFieldRules(t *testing.T) {
	v := bindAll{BindEmbeddedPtr: &BindEmbeddedPtr{}, Opt: "o"}
	encoded, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(encoded, &members); err != nil {
		t.Fatal(err)
	}
	p := newPlanBuilder(nil).plan(reflect.TypeFor[bindAll]())
	var names []string
	for _, f := range p.fields {
		names = append(names, f.name)
		if _, ok := members[f.name]; !ok {
			t.Errorf("field %q is not a member encoding/json writes", f.name)
		}
	}
	if len(names) != len(members) {
		t.Errorf("fields %v, encoding/json writes %d members: %s", names, len(members), encoded)
	}
	if fmt.Sprint(names[:4]) != "[promoted deep shadowed str]" {
		t.Errorf("fields start %v, want encoding/json's order", names[:4])
	}
}

func TestParseJSONIntegerIsExact(t *testing.T) {
	tests := []struct {
		in  string
		neg bool
		mag uint64
		ok  bool
	}{
		{"0", false, 0, true},
		{"-0", true, 0, true},
		{"250", false, 250, true},
		{"250.0", false, 250, true},
		{"2.5e2", false, 250, true},
		{"2.5E+2", false, 250, true},
		{"25000e-2", false, 250, true},
		{"-12.300e1", true, 123, true},
		{"0.0000e999999999999999999", false, 0, true},
		{"0e-5", false, 0, true},
		{"9007199254740993.0", false, 9007199254740993, true}, // 2^53+1, not exact as a float64
		{"18446744073709551615", false, math.MaxUint64, true},
		{"1.8446744073709551616e19", false, math.MaxUint64, true}, // saturates
		{"1e400", false, math.MaxUint64, true},
		{"1.5", false, 0, false},
		{"1.0000000000000000000000000000000000000001", false, 0, false},
		{"12345678901234567891e-1", false, 0, false},
		{"1e-400", false, 0, false},
		{"-0.5e1", true, 5, true},
	}
	for _, tt := range tests {
		neg, mag, ok := parseJSONInteger([]byte(tt.in))
		if neg != tt.neg || mag != tt.mag || ok != tt.ok {
			t.Errorf("parseJSONInteger(%s) = %v, %d, %v; want %v, %d, %v", tt.in, neg, mag, ok, tt.neg, tt.mag, tt.ok)
		}
	}
}

// A field with the string option takes the text of a JSON value of its type
// and nothing around it, as encoding/json does: " 7", "true\n" are refused.
// (Found by FuzzBindAgainstEncodingJSON: {"quoted":"0 "} bound 0.)
func TestBindStringOptionTakesNoSpace(t *testing.T) {
	for _, in := range []string{`{"quoted":"0 "}`, `{"quoted":" 7"}`, `{"quotedB":"true\n"}`, `{"quoted":"\t1"}`} {
		var got bindAll
		err := argumentsRequest(in, true, nil).Bind(&got)
		var want bindAll
		if json.Unmarshal([]byte(in), &want) == nil {
			t.Fatalf("encoding/json binds %s", in)
		}
		if err == nil || !strings.Contains(err.Error(), "must be a string holding") {
			t.Errorf("Bind %s = %v, want the argument refused", in, err)
		}
	}
}

// The binder's documented differences from encoding/json (bind.go's comment;
// FuzzBindAgainstEncodingJSON leaves them out of its comparison), each
// asserted with both decoders on the same input: the key's case, an
// integral number for an integer, the text a string option takes. (The
// strict binder's, null and []byte, are TestBindStrict's.)
func TestBindDifferencesFromEncodingJSON(t *testing.T) {
	type args struct {
		Ms int     `json:"ms"`
		N  int     `json:"n"`
		Q  int     `json:"q,string"`
		F  float64 `json:"f,string"`
	}
	tests := []struct {
		name, in       string
		json, bind     args // what each binds
		jsonOK, bindOK bool
	}{
		{"a key of another case", `{"MS":3000}`, args{Ms: 3000}, args{}, true, true},
		{"an integral number for an integer", `{"n":2.5e2}`, args{}, args{N: 250}, false, true},
		{"a string option's leading zeros", `{"q":"007"}`, args{Q: 7}, args{}, true, false},
		{"a string option's hexadecimal float", `{"f":"0x1p4"}`, args{F: 16}, args{}, true, false},
		{"a string option's trailing point", `{"f":"1."}`, args{F: 1}, args{}, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var viaJSON args
			if err := json.Unmarshal([]byte(tt.in), &viaJSON); (err == nil) != tt.jsonOK || err == nil && viaJSON != tt.json {
				t.Errorf("encoding/json: %+v, %v; want %+v, ok %v", viaJSON, err, tt.json, tt.jsonOK)
			}
			var bound args
			if err := argumentsRequest(tt.in, true, nil).Bind(&bound); (err == nil) != tt.bindOK || err == nil && bound != tt.bind {
				t.Errorf("Bind: %+v, %v; want %+v, ok %v", bound, err, tt.bind, tt.bindOK)
			}
		})
	}
}
