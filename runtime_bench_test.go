package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// BenchmarkDispatchToolsCall measures Runtime.Dispatch alone on a pre-built
// 2026 tools/call of the echo tool: dialect selection, the tools/call
// pipeline, the handler and the encoding of its result. "admitted" is the
// Request as the transport hands it over (its line decoded and admitted),
// "direct" one a direct caller built, whose params Dispatch validates;
// "admitted_clientInfo" adds the optional clientInfo to the _meta;
// "admitted_space" also gives each call the room for its HandlerRequest that
// the transport gives each message.
func BenchmarkDispatchToolsCall(b *testing.B) {
	rt := newCatalogRuntime(b)
	args := `"name":"echo","arguments":{"text":"` + strings.Repeat("x", 100) + `"}`
	admitted := func(meta string) *Request {
		env, err := decodeEnvelope([]byte(`{"jsonrpc":"2.0","id":"1","method":"tools/call","params":{` + args + `,` + meta + `}}`))
		if err != nil {
			b.Fatal(err)
		}
		req := new(Request)
		if ok, rerr := admit(req, env, `"1"`); !ok {
			b.Fatal(rerr)
		}
		return req
	}
	withClientInfo := strings.TrimSuffix(binMeta2026, "}") + `,"io.modelcontextprotocol/clientInfo":{"name":"bench-client","version":"1.0.0"}}`
	for _, bench := range []struct {
		name string
		req  *Request
	}{
		{"admitted", admitted(binMeta2026)},
		{"direct", &Request{Method: "tools/call", ID: json.RawMessage(`"1"`), Params: json.RawMessage(`{` + args + `,` + binMeta2026 + `}`)}},
		{"admitted_clientInfo", admitted(withClientInfo)},
	} {
		b.Run(bench.name, func(b *testing.B) {
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if r := rt.Dispatch(ctx, bench.req); r.Error != nil {
					b.Fatal(r.Error)
				}
			}
		})
	}
	b.Run("admitted_space", func(b *testing.B) {
		req := admitted(binMeta2026)
		var space handlerRequestSpace
		req.handlerSpace = &space
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			space = handlerRequestSpace{}
			if r := rt.Dispatch(ctx, req); r.Error != nil {
				b.Fatal(r.Error)
			}
		}
	})
}
