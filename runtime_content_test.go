package main

import (
	"context"
	"encoding/json"
	"testing"
)

func TestContentJSON(t *testing.T) {
	priority := 0.5
	tests := []struct {
		name    string
		content Content
		want    string
	}{
		{"empty text is sent", TextContent(""), `{"type":"text","text":""}`},
		{"text keeps HTML characters", TextContent("<a & b>"), `{"type":"text","text":"<a & b>"}`},
		{"annotated text", Content{Type: ContentText, Text: "t", Annotations: &Annotations{Audience: []string{"user", "assistant"}, Priority: &priority, LastModified: "2025-01-12T15:00:58Z"}, Meta: json.RawMessage(`{"k":1}`)},
			`{"type":"text","text":"t","annotations":{"audience":["user","assistant"],"priority":0.5,"lastModified":"2025-01-12T15:00:58Z"},"_meta":{"k":1}}`},
		{"image", ImageContent([]byte{0xff, 0x00}, "image/png"), `{"type":"image","data":"/wA=","mimeType":"image/png"}`},
		{"empty audio data is a string", AudioContent(nil, "audio/wav"), `{"type":"audio","data":"","mimeType":"audio/wav"}`},
		{"resource link", ResourceLinkContent(Resource{URI: "file:///a.txt", Name: "a", Description: "d", Annotations: &Annotations{Audience: []string{"user"}}}),
			`{"type":"resource_link","uri":"file:///a.txt","name":"a","description":"d","annotations":{"audience":["user"]}}`},
		{"embedded text", EmbeddedResourceContent(ResourceContents{URI: "test://e", Text: "x"}), `{"type":"resource","resource":{"uri":"test://e","text":"x"}}`},
		{"embedded blob", EmbeddedResourceContent(ResourceContents{URI: "test://b", MIMEType: "application/octet-stream", Blob: []byte{}, Meta: json.RawMessage(`{"m":true}`)}),
			`{"type":"resource","resource":{"uri":"test://b","mimeType":"application/octet-stream","blob":"","_meta":{"m":true}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := marshalJSON(tt.content)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("\n got: %s\nwant: %s", got, tt.want)
			}
		})
	}
	for _, bad := range []Content{{Type: "video"}, {Type: ContentResourceLink}, {Type: ContentEmbeddedResource}, {}} {
		if got, err := marshalJSON(bad); err == nil {
			t.Errorf("content %+v encoded as %s, want an error", bad, got)
		}
	}
}

func TestBadContentIsInternalError(t *testing.T) {
	rt := newTestRuntime(t, testOptions())
	mustAddTool(t, rt, Tool{Name: "bad"}, func(_ context.Context, _ *HandlerRequest) (*ToolResult, error) {
		return &ToolResult{Content: []Content{{Type: "video"}}}, nil
	})
	mustAddTool(t, rt, Tool{Name: "bad_meta"}, func(_ context.Context, _ *HandlerRequest) (*ToolResult, error) {
		return &ToolResult{Meta: json.RawMessage(`[1]`)}, nil
	})
	for _, name := range []string{"bad", "bad_meta"} {
		wantError(t, dispatch(rt, statelessRequest("tools/call", `{"name":"`+name+`"}`)), CodeInternalError, "Internal error", "")
		wantError(t, dispatch(rt, legacyRequest(ProtocolVersion20251125, "tools/call", `{"name":"`+name+`"}`)), CodeInternalError, "Internal error", "")
	}
}
