package main

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestAppendJSONStringMatchesMarshalJSON checks the hand-written string
// encoder against marshalJSON byte for byte.
func TestAppendJSONStringMatchesMarshalJSON(t *testing.T) {
	for _, s := range []string{
		"", "plain", `quote " backslash \ slash /`, "<&>", "\x00\x01\b\f\n\r\t\x1f\x7f",
		"é ü 中文 😀", "\u2028\u2029", "bad \xff utf8 \xc3", "\xed\xa0\x80 surrogate bytes", strings.Repeat("x", 300),
		"\xe4\xb8", "\xf0\x9f\x98", "\xc0\x80 \xe0\x80\x80 \xf0\x80\x80\x80 \xf4\x90\x80\x80 \xf5\x80", "\x80\xbf\xc1",
		"1234567\n", "12345678\n", "123456789\"", "1234567é", "12345678é", "日本語のテキスト、中文文本😀😀😀",
		nonASCIIText(100), strings.Repeat("héllo wörld ", 20) + "\x00",
	} {
		want, err := marshalJSON(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendJSONString([]byte("prefix"), s); string(got) != "prefix"+string(want) {
			t.Errorf("appendJSONString(%q) = %s, want prefix%s", s, got, want)
		}
	}
}

// reuseFields has fields that appendJSONReusing may copy from a known
// encoding (Text, Same) and others it must encode themselves.
type reuseFields struct {
	Text   string       `json:"text"`
	Same   string       `json:"same"`
	Quoted string       `json:"quoted,string"`
	Marked markedString `json:"marked"`
	Inner  reuseInner   `json:"inner"`
	Count  int          `json:"count"`
}

type reuseInner struct {
	Text string `json:"text"`
}

// markedString encodes itself as its text with a mark.
type markedString string

func (m markedString) MarshalJSON() ([]byte, error) { return json.Marshal("marked " + string(m)) }

// structuredOf returns the structured content of *ptr, as a typed tool
// makes it.
func structuredOf(ptr any) *structuredOutput {
	v := reflect.ValueOf(ptr).Elem()
	return &structuredOutput{v: v, plan: newPlanBuilder(nil).plan(v.Type())}
}

// TestAppendJSONReusingCopiesKnownEncoding checks that the top-level string
// fields with the known text are copied from its encoding, and nothing else
// is.
func TestAppendJSONReusingCopiesKnownEncoding(t *testing.T) {
	v := &reuseFields{Text: "t", Same: "t", Quoted: "t", Marked: "t", Inner: reuseInner{Text: "t"}, Count: 1}
	dst := []byte(`"KNOWN"`) // stands for the encoding of "t", to show where it is copied
	got, err := structuredOf(&v).appendJSONReusing(dst, &encodedString{text: "t", start: 0, end: len(dst)})
	if err != nil {
		t.Fatal(err)
	}
	want := `"KNOWN"{"text":"KNOWN","same":"KNOWN","quoted":"\"t\"","marked":"marked t","inner":{"text":"t"},"count":1}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// TestPlainToolResultMatchesEnvelopeReply checks that the direct encoding of
// plain text results equals the encoding/json path, in both eras.
func TestPlainToolResultMatchesEnvelopeReply(t *testing.T) {
	rt, err := NewRuntime(RuntimeOptions{ServerInfo: Implementation{Name: "n<&>é", Version: "1", Title: "t"}})
	if err != nil {
		t.Fatal(err)
	}
	structured := struct {
		Text string            `json:"text"`
		Tags map[string][]int  `json:"tags"`
		Ptr  *struct{ N uint } `json:"ptr,omitempty"`
	}{Text: "é \"q\"", Tags: map[string][]int{"b": {1}, "a": nil}}
	sv := reflect.ValueOf(&structured).Elem()
	// Non-ASCII text takes up to three times its length escaped: the
	// reserved size must count it.
	wide := struct {
		Text string `json:"text"`
	}{Text: nonASCIIText(300)}
	wv := reflect.ValueOf(&wide).Elem()
	// Fields with the content's text, reused or not: the encoding is the
	// same either way.
	text := "reused \"text\" é 😀"
	repeating := &reuseFields{Text: text, Same: strings.Clone(text), Quoted: text, Marked: markedString(text), Inner: reuseInner{Text: text}}
	results := []*ToolResult{
		{},
		{Content: []Content{}},
		TextResult("hi \"there\" é\n"),
		{Content: []Content{TextContent("a"), TextContent("b")}, IsError: true},
		{Content: []Content{TextContent("t")}, StructuredContent: &structuredOutput{v: sv, plan: newPlanBuilder(nil).plan(sv.Type())}},
		{Content: []Content{TextContent("t")}, StructuredContent: &structuredOutput{encoded: []byte(`{"a":1}`)}, IsError: true},
		{Content: []Content{TextContent(wide.Text)}, StructuredContent: &structuredOutput{v: wv, plan: newPlanBuilder(nil).plan(wv.Type())}},
		{Content: []Content{TextContent(text)}, StructuredContent: structuredOf(repeating)},
		{Content: []Content{TextContent(text)}, StructuredContent: structuredOf(&repeating)},
		{Content: []Content{TextContent("other"), TextContent(text)}, StructuredContent: structuredOf(repeating)},
		{StructuredContent: structuredOf(repeating)},
	}
	for _, e := range []era{eraLegacy, eraStateless} {
		c := &methodCall{req: &Request{Method: "tools/call"}, dialectInfo: dialectInfo{era: e}}
		for _, res := range results {
			size, ok := rt.plainToolResultSize(c, res)
			if !ok {
				t.Fatalf("era %v: %+v not taken by the direct encoder", e, res)
			}
			fast, err := rt.appendPlainToolResult(nil, c, res)
			if err != nil {
				t.Fatalf("era %v: %+v: %v", e, res, err)
			}
			if len(fast) > size {
				t.Errorf("era %v: %s is longer than the %d bytes reserved", e, fast, size)
			}
			content := res.Content
			if content == nil {
				content = []Content{}
			}
			slow := rt.envelopeReply(c, false, nil, func(env resultEnvelope) any {
				return callToolResult{Content: content, StructuredContent: res.StructuredContent, IsError: res.IsError, resultEnvelope: env}
			})
			if string(fast) != string(slow.Result) {
				t.Errorf("era %v: direct %s, encoding/json %s", e, fast, slow.Result)
			}
		}
	}
	c := &methodCall{req: &Request{Method: "tools/call"}}
	for _, res := range []*ToolResult{
		{Content: []Content{ImageContent([]byte{1}, "image/png")}},
		{Content: []Content{{Type: ContentText, Text: "x", Meta: json.RawMessage(`{}`)}}},
		{Content: []Content{TextContent("x")}, StructuredContent: map[string]int{}},
		{Content: []Content{TextContent("x")}, Meta: json.RawMessage(`{}`)},
	} {
		if _, ok := rt.plainToolResultSize(c, res); ok {
			t.Errorf("%+v taken by the direct encoder", res)
		}
	}
}

// TestReplyFrame checks that the frame the runtime builds along with a plain
// tool result is written as is, and only while it is exactly the frame
// resultFrame would build.
func TestReplyFrame(t *testing.T) {
	rt := newCatalogRuntime(t)
	for _, id := range []string{`"a\u00e9"`, `7`} {
		env, err := decodeEnvelope([]byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"echo","arguments":{"text":"h\u00e9 \"x\" \n"},` + meta2026 + `}}`))
		if err != nil {
			t.Fatal(err)
		}
		canonical, _ := canonicalID(env.id)
		req := new(Request)
		if ok, rerr := admit(req, env, canonical); !ok {
			t.Fatal(rerr)
		}
		r := dispatch(rt, req)
		want := resultFrame(canonical, r.Result)
		got := replyFrame(canonical, &r)
		if string(got) != string(want) {
			t.Fatalf("id %s: frame %s, want %s", id, got, want)
		}
		if &got[0] != &r.frame[0] {
			t.Errorf("id %s: the runtime's frame was not written as is", id)
		}
		if _ = append(r.Result, '!'); string(r.frame[len(r.frame)-2:]) != "}\n" {
			t.Errorf("id %s: appending to Result wrote into the frame", id)
		}

		replaced := r
		replaced.Result = slices.Clone(r.Result)
		for _, tc := range []struct {
			name, id string
			r        Reply
		}{
			{"another id", `"other"`, r},
			{"a notification's id", "", r},
			{"Result replaced", canonical, replaced},
			{"Result shortened", canonical, Reply{Result: r.Result[:len(r.Result)-1], frame: r.frame}},
			{"no frame", canonical, Reply{Result: r.Result}},
		} {
			if _, ok := tc.r.builtFrame(tc.id); ok {
				t.Errorf("id %s, %s: the runtime's frame would be written", id, tc.name)
			}
			if got, want := replyFrame(tc.id, &tc.r), resultFrame(tc.id, tc.r.Result); string(got) != string(want) {
				t.Errorf("id %s, %s: frame %s, want %s", id, tc.name, got, want)
			}
		}
	}
}

// TestHandlerRequestSpace checks that the room a Request offers for its
// HandlerRequest serves its first Dispatch only.
func TestHandlerRequestSpace(t *testing.T) {
	var space handlerRequestSpace
	req := &Request{handlerSpace: &space}
	copied := *req
	if got := req.newHandlerRequest(); got != &space.req {
		t.Error("the first HandlerRequest is not built in the space")
	}
	if got := req.newHandlerRequest(); got == &space.req {
		t.Error("the space served a second Dispatch")
	}
	if got := copied.newHandlerRequest(); got == &space.req {
		t.Error("the space served a copy of the Request")
	}
	if got := new(Request).newHandlerRequest(); got == nil {
		t.Error("no HandlerRequest without a space")
	}
}

// longRunText returns a string of n bytes from a fixed seed: mostly plain
// ASCII, with quotes, backslashes, control characters, non-ASCII and
// invalid UTF-8 placed now and then, so that runs of every length up to
// well past longRunBytes end in every kind of byte.
func longRunText(r *rand.Rand, n int) string {
	specials := []string{`"`, `\`, "\n", "\x01", "\x1f", "\x7f", "é", "中", "😀", "\xff", "\xc3", "\u2028"}
	var b strings.Builder
	for b.Len() < n {
		if r.IntN(40) == 0 {
			b.WriteString(specials[r.IntN(len(specials))])
			continue
		}
		b.WriteByte(byte(' ' + r.IntN(95)))
	}
	return b.String()
}

// The string scanners' long-run path (longRun) changes no result:
// appendJSONString agrees with marshalJSON, and scanString with
// scanStringWordByWord, on strings whose runs end in every kind of byte at
// every offset.
func TestStringScannersOnLongRuns(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		s := longRunText(r, r.IntN(300))
		want, err := marshalJSON(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendJSONString(nil, s); string(got) != string(want) {
			t.Fatalf("appendJSONString(%q) = %s, want %s", s, got, want)
		}
		for _, token := range [][]byte{want, []byte(`"` + s + `"`), []byte(`"` + s)} {
			end, escaped, err := scanString(token, 0)
			wantEnd, wantEscaped, wantErr := scanStringWordByWord(token, 0)
			if end != wantEnd || escaped != wantEscaped || (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
				t.Fatalf("scanString(%q) = %d, %v, %v; want %d, %v, %v", token, end, escaped, err, wantEnd, wantEscaped, wantErr)
			}
		}
	}
}

// scanStringWordByWord is scanString as it was before longRun: every word
// examined for all four stoppers.
func scanStringWordByWord(data []byte, i int) (end int, escaped bool, err error) {
	i++
	for {
		i = skipToStopper(data, i, stringStopper)
		if i >= len(data) {
			return i, escaped, syntaxError("unterminated string", i)
		}
		switch c := data[i]; {
		case c == '"':
			return i + 1, escaped, nil
		case c == '\\':
			escaped = true
			if i, err = scanEscape(data, i); err != nil {
				return i, escaped, err
			}
		case c < 0x20:
			return i, escaped, syntaxError("control character in string", i)
		case c < utf8.RuneSelf:
			i++
		default:
			if i, err = scanNonASCII(data, i); err != nil {
				return i, escaped, err
			}
		}
	}
}

// escapeGrowth counts what escaping adds to valid UTF-8 text, whatever
// the length of its ASCII runs (its 32-byte fast path included).
func TestEscapeGrowthCountsEscapes(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 3000 {
		s := strings.ToValidUTF8(longRunText(r, r.IntN(300)), "")
		want := 0
		for _, c := range s {
			switch {
			case c > 0xffff:
				want += 12 - utf8.RuneLen(c)
			case c >= utf8.RuneSelf:
				want += 6 - utf8.RuneLen(c)
			}
		}
		if got := escapeGrowth(s); got != want {
			t.Fatalf("escapeGrowth(%q) = %d, want %d", s, got, want)
		}
		if got := escapeGrowth([]byte(s)); got != want {
			t.Fatalf("escapeGrowth([]byte(%q)) = %d, want %d", s, got, want)
		}
	}
}
