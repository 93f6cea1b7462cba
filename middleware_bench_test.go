package main

import (
	"context"
	"strings"
	"testing"
)

// passThrough is the least a middleware does: it calls next.
func passThrough(next Dispatcher) Dispatcher {
	return DispatcherFunc(func(ctx context.Context, req *Request) Reply { return next.Dispatch(ctx, req) })
}

// BenchmarkMiddleware measures a 2026 tools/call of the echo tool (Inline,
// 100 bytes) without middleware ("none") and with one that only passes it
// on ("one"): through Runtime.Dispatch alone (the Request as a transport
// admits it, with the room for its HandlerRequest), through Serve over
// io.Pipe (one call at a time), and through the HTTP handler alone (as
// BenchmarkHTTPHandlerEcho).
func BenchmarkMiddleware(b *testing.B) {
	line := `{"jsonrpc":"2.0","id":"0000000000","method":"tools/call","params":{"name":"echo","arguments":{"text":"` + strings.Repeat("x", 100) + `"},` + binMeta2026 + `}}`
	for _, mw := range []struct {
		name string
		use  []Middleware
	}{
		{"none", nil},
		{"one", []Middleware{passThrough}},
	} {
		runtime := func(b *testing.B) *Runtime {
			rt := newCatalogRuntime(b)
			rt.Use(mw.use...)
			return rt
		}
		b.Run("dispatch/"+mw.name, func(b *testing.B) {
			rt := runtime(b)
			env, err := decodeEnvelope([]byte(line))
			if err != nil {
				b.Fatal(err)
			}
			req := new(Request)
			if ok, rerr := admit(req, env, `"0000000000"`); !ok {
				b.Fatal(rerr)
			}
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
		b.Run("stdio/"+mw.name, func(b *testing.B) {
			benchRoundTripLine(b, runtime(b), 1, line)
		})
		b.Run("http/"+mw.name, func(b *testing.B) {
			h, err := NewHTTPHandler(runtime(b), HTTPOptions{Logger: quietLogger()})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(h.Close)
			benchHTTPHandlerEcho(b, h, ProtocolVersion20260728)
		})
	}
}
