package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// TestAppendJSONStringMatchesMarshalJSON checks the hand-written string
// encoder against marshalJSON byte for byte.
func TestAppendJSONStringMatchesMarshalJSON(t *testing.T) {
	for _, s := range []string{
		"", "plain", `quote " backslash \ slash /`, "<&>", "\x00\x01\b\f\n\r\t\x1f\x7f",
		"é ü 中文 😀", "\u2028\u2029", "bad \xff utf8 \xc3", "\xed\xa0\x80 surrogate bytes", strings.Repeat("x", 300),
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

// TestPlainToolResultMatchesEnvelopeReply checks that the direct encoding of
// plain text results equals the encoding/json path, in both eras.
func TestPlainToolResultMatchesEnvelopeReply(t *testing.T) {
	rt, err := NewRuntime(RuntimeOptions{ServerInfo: Implementation{Name: "n<&>é", Version: "1", Title: "t"}})
	if err != nil {
		t.Fatal(err)
	}
	results := []*ToolResult{
		{},
		{Content: []Content{}},
		TextResult("hi \"there\" é\n"),
		{Content: []Content{TextContent("a"), TextContent("b")}, IsError: true},
	}
	for _, e := range []era{eraLegacy, eraStateless} {
		c := &call{req: &Request{Method: "tools/call"}, dialectInfo: dialectInfo{era: e}}
		for _, res := range results {
			fast, ok := rt.appendPlainToolResult(nil, c, res)
			if !ok {
				t.Fatalf("era %v: %+v not taken by the direct encoder", e, res)
			}
			content := res.Content
			if content == nil {
				content = []Content{}
			}
			slow := rt.envelopeReply(c, false, nil, func(env resultEnvelope) any {
				return callToolResult{Content: content, IsError: res.IsError, resultEnvelope: env}
			})
			if string(fast) != string(slow.Result) {
				t.Errorf("era %v: direct %s, encoding/json %s", e, fast, slow.Result)
			}
		}
	}
	c := &call{req: &Request{Method: "tools/call"}}
	for _, res := range []*ToolResult{
		{Content: []Content{ImageContent([]byte{1}, "image/png")}},
		{Content: []Content{{Type: ContentText, Text: "x", Meta: json.RawMessage(`{}`)}}},
		{Content: []Content{TextContent("x")}, StructuredContent: map[string]int{}},
		{Content: []Content{TextContent("x")}, Meta: json.RawMessage(`{}`)},
	} {
		if _, ok := rt.appendPlainToolResult(nil, c, res); ok {
			t.Errorf("%+v taken by the direct encoder", res)
		}
	}
}

// TestEchoTextArgumentShapes checks that echo's shortcut past Bind answers
// as Bind does, including keys Bind matches case-insensitively.
func TestEchoTextArgumentShapes(t *testing.T) {
	tests := []struct{ args, want string }{
		{`{"text":"a"}`, "a"},
		{` { "text" : "a\u0062" } `, "ab"},
		{`{"text":"a","TEXT":"b"}`, "a"}, // the exact name wins
		{`{"Text":"c"}`, "c"},
		{`{"te\u0078t":"d"}`, "d"},
		{`{"other":1,"text":"e"}`, "e"},
	}
	for _, tt := range tests {
		res, err := echoText(context.Background(), &HandlerRequest{Arguments: json.RawMessage(tt.args)})
		if err != nil || len(res.Content) != 1 || res.Content[0].Text != tt.want {
			t.Errorf("echo %s = %+v, %v; want %q", tt.args, res, err, tt.want)
		}
	}
}
