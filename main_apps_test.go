package main

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// catalogWantEchoApp is the echo app's resources/list entry.
var catalogWantEchoApp = `{"uri":"ui://echo/view.html","name":"echo-view","title":"Echo",` +
	`"description":"Shows the text the echo tool returned, and echoes more","mimeType":"text/html;profile=mcp-app",` +
	`"size":` + strconv.Itoa(len(echoAppHTML)) + `,"_meta":{"ui":{"prefersBorder":true}}}`

// TestReferenceEchoApp checks the reference server's app as a host reads it:
// echo's tools/list entry names the app in both _meta keys, resources/read
// serves the page with the app MIME type and its _meta.ui, and echo's result
// keeps its text content for a host that renders the app.
func TestReferenceEchoApp(t *testing.T) {
	rt := newCatalogRuntime(t)
	const echoEntry = `{"name":"echo","description":"Returns the given text unchanged, as one text content block",` +
		`"inputSchema":{"type":"object","properties":{"text":{"type":"string","description":"The text to return"}},"required":["text"]},` +
		`"_meta":{"ui":{"resourceUri":"ui://echo/view.html"},"ui/resourceUri":"ui://echo/view.html"}}`
	page, err := marshalJSON(echoAppHTML)
	if err != nil {
		t.Fatal(err)
	}
	contents := `"contents":[{"uri":"ui://echo/view.html","mimeType":"text/html;profile=mcp-app","text":` + string(page) + `,"_meta":{"ui":{"prefersBorder":true}}}]`
	for _, version := range catalogVersions() {
		t.Run(version, func(t *testing.T) {
			var tools struct{ Tools []json.RawMessage }
			decodeResult(t, catalogDispatch(rt, version, "tools/list", ""), &tools)
			found := false
			for _, tool := range tools.Tools {
				found = found || string(tool) == echoEntry
			}
			if !found {
				t.Errorf("tools/list has no entry %s", echoEntry)
			}
			wantResult(t, catalogDispatch(rt, version, "resources/read", `"uri":"ui://echo/view.html"`), catalogWant(version, contents, true))
			call := catalogRequest(version, "tools/call", `"name":"echo","arguments":{"text":"shown in the app"}`, appsClientCaps)
			wantResult(t, rt.Dispatch(context.Background(), call), catalogWant(version, `"content":[`+catalogText("shown in the app")+`]`, false))
		})
	}
}

// TestEchoAppPageIsSelfContained checks what the browser test (.ci/apps)
// relies on: the page is an HTML5 document that names no other document,
// script, style or image to load, and speaks the Apps protocol itself.
func TestEchoAppPageIsSelfContained(t *testing.T) {
	if !startsWithHTML5Doctype(echoAppHTML) {
		t.Error("the echo app's page does not start with the HTML5 doctype")
	}
	for _, loads := range []string{"src=", "href=", "<link", "url(", "@import", "://", "<iframe", "<object", "<embed"} {
		if strings.Contains(strings.ToLower(echoAppHTML), loads) {
			t.Errorf("the echo app's page holds %q: it must load nothing from elsewhere", loads)
		}
	}
	for _, method := range []string{"ui/initialize", "ui/notifications/initialized", "ui/notifications/tool-result", "ui/notifications/size-changed", "tools/call"} {
		if !strings.Contains(echoAppHTML, `"`+method+`"`) {
			t.Errorf("the echo app's page never names %s", method)
		}
	}
}
