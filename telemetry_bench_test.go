package main

import (
	"context"
	"log/slog"
	"testing"
	"time"
)

// BenchmarkObserver is a tools/call round trip through a memory transport
// (the runtime's typed echo tool, 2026-07-28) with no observer, and with a
// Telemetry that records spans and metrics (sampled, exported nowhere: the
// cost of recording, not of a collector), and with one that samples no
// request (the metrics alone, as for most requests at a small ratio). With none the seam is one nil
// check per point: compare allocs/op with BenchmarkServeRuntimeEcho on main.
func BenchmarkObserver(b *testing.B) {
	for _, tt := range []struct {
		name     string
		observer func() Observer
	}{
		{"none", func() Observer { return nil }},
		{"telemetry", func() Observer {
			return mustTelemetry(b, TelemetryOptions{SampleRatio: 1, MetricInterval: time.Hour, Logger: slog.New(slog.DiscardHandler)})
		}},
		{"telemetry-unsampled", func() Observer {
			return mustTelemetry(b, TelemetryOptions{SampleRatio: None, MetricInterval: time.Hour, Logger: slog.New(slog.DiscardHandler)})
		}},
	} {
		b.Run(tt.name, func(b *testing.B) {
			rt := newCatalogRuntime(b)
			tr, client, err := NewMemoryTransport(rt, Options{Observer: tt.observer()})
			if err != nil {
				b.Fatal(err)
			}
			served := make(chan error, 1)
			go func() { served <- tr.Serve(context.Background()) }()
			defer func() { client.Close(); <-served }()
			msg := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},` + binMeta2026 + `}}`)
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if err := client.Send(ctx, msg); err != nil {
					b.Fatal(err)
				}
				if _, err := client.Receive(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkObserverOwner is what the goroutine that owns a connection
// spends on a request's span when it receives it (StartOperation): a
// tools/call with a traceparent, tracestate and baggage in its _meta. The
// trace context is read on the request's worker (telemetrySpan.resolve), so
// this is one small allocation; BenchmarkObserver has the whole round trip.
func BenchmarkObserverOwner(b *testing.B) {
	tel := mustTelemetry(b, TelemetryOptions{SampleRatio: 1, MetricInterval: time.Hour, Logger: slog.New(slog.DiscardHandler)})
	op := &OperationStart{
		Method: "tools/call", RequestID: "1", SessionID: "S", ProtocolVersion: "2025-06-18", Values: context.Background(), Received: time.Now(),
		Params: []byte(`{"name":"echo","arguments":{"text":"hi"},"_meta":{"progressToken":7,"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","tracestate":"k=v","baggage":"user=ada"}}`),
	}
	spans := make([]OperationSpan, 64) // kept, as the connection keeps them
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		spans[i%len(spans)] = tel.StartOperation(op)
		i++
	}
	if spans[0] == nil {
		b.Fatal("no span")
	}
}
