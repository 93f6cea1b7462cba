package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
)

// forecastPage is the weather app's page. A real one draws the forecast it
// receives from the host (ui/notifications/tool-result).
const forecastPage = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Forecast</title></head>
<body><canvas id="chart"></canvas><script>/* speaks ui/initialize, draws each tool-result */</script></body></html>`

// region support
// forecastHandler answers every client with the forecast as text, and a
// client that renders apps with the hourly figures its app draws too.
func forecastHandler(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
	res := TextResult("Paris: sunny, 21 °C at noon")
	if req.ClientRendersApps() {
		res.StructuredContent = map[string]any{"city": "Paris", "hourly": []int{14, 17, 21, 19}}
	}
	return res, nil
}

// endregion support

// An app beside a tool's result: the page, the tool linked to it, a tool
// only the app calls, and what a host that renders apps and one that does
// not get from the same call.
func ExampleRuntime_AddApp() {
	rt, err := NewRuntime(RuntimeOptions{ServerInfo: Implementation{Name: "weather", Version: "1.0.0"}})
	if err != nil {
		log.Fatal(err)
	}
	// region app
	err = rt.AddApp(App{
		URI:  "ui://weather/forecast",
		Name: "forecast-view",
		HTML: forecastPage,
		UI: AppUI{
			CSP:           AppCSP{ConnectDomains: []string{"https://api.weather.example"}},
			PrefersBorder: new(true),
		},
	})
	// endregion app
	if err != nil {
		log.Fatal(err)
	}
	// region link
	forecast, err := LinkApp(Tool{Name: "forecast", Description: "Tomorrow's weather in a city"},
		ToolUI{ResourceURI: "ui://weather/forecast"})
	if err != nil {
		log.Fatal(err)
	}
	if err := rt.AddTool(forecast, forecastHandler); err != nil {
		log.Fatal(err)
	}
	// endregion link
	// region apponly
	refresh, err := LinkApp(Tool{Name: "refresh_forecast", Description: "Fetches the forecast again"},
		ToolUI{ResourceURI: "ui://weather/forecast", Visibility: []string{VisibleToApp}})
	if err != nil {
		log.Fatal(err)
	}
	if err := rt.AddTool(refresh, forecastHandler); err != nil {
		log.Fatal(err)
	}
	// endregion apponly

	call := func(method, params, clientCapabilities string) {
		reply := rt.Dispatch(context.Background(), &Request{Method: method, ID: json.RawMessage(`1`), Params: json.RawMessage(
			`{` + params + `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + clientCapabilities + `}}`)})
		var result struct {
			Tools []struct {
				Name string          `json:"name"`
				Meta json.RawMessage `json:"_meta"`
			} `json:"tools"`
			Contents []struct {
				MIMEType string `json:"mimeType"`
			} `json:"contents"`
			Content           json.RawMessage `json:"content"`
			StructuredContent json.RawMessage `json:"structuredContent"`
		}
		if reply.Error != nil || json.Unmarshal(reply.Result, &result) != nil {
			log.Fatalf("%s: %s %v", method, reply.Result, reply.Error)
		}
		for _, tool := range result.Tools {
			fmt.Printf("%s %s\n", tool.Name, tool.Meta)
		}
		for _, c := range result.Contents {
			fmt.Println("read:", c.MIMEType)
		}
		if result.Content != nil {
			structured := string(result.StructuredContent)
			if structured == "" {
				structured = "none"
			}
			fmt.Printf("content %s, structuredContent %s\n", result.Content, structured)
		}
	}
	const rendersApps = `{"extensions":{"io.modelcontextprotocol/ui":{"mimeTypes":["text/html;profile=mcp-app"]}}}`
	call("tools/list", ``, `{}`)
	call("resources/read", `"uri":"ui://weather/forecast",`, rendersApps)
	call("tools/call", `"name":"forecast",`, rendersApps)
	call("tools/call", `"name":"forecast",`, `{}`)
	// Output:
	// forecast {"ui":{"resourceUri":"ui://weather/forecast"},"ui/resourceUri":"ui://weather/forecast"}
	// refresh_forecast {"ui":{"resourceUri":"ui://weather/forecast","visibility":["app"]},"ui/resourceUri":"ui://weather/forecast"}
	// read: text/html;profile=mcp-app
	// content [{"type":"text","text":"Paris: sunny, 21 \u00b0C at noon"}], structuredContent {"city":"Paris","hourly":[14,17,21,19]}
	// content [{"type":"text","text":"Paris: sunny, 21 \u00b0C at noon"}], structuredContent none
}
