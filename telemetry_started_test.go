package main

import (
	"strconv"
	"testing"
	"time"
)

// The executor's worker tells a request's span when the request starts
// running, after its wait in the queue: the span has the event
// mcp.server.request.started at that moment and the wait as
// mcp.server.request.queue_wait_ns; a request that never ran has neither.
func TestTelemetrySpanRecordsTheStartAfterTheQueue(t *testing.T) {
	col := newTestCollector(t, nil)
	tel := newTestTelemetry(t, col, 64)
	started := make(chan struct{}, 1)
	client := memorySession(t, telemetryRuntime(t, started), Options{Observer: tel, MaxConcurrency: 1, MaxQueue: 4, RequestTimeout: time.Hour})

	telSend(t, client, `{"jsonrpc":"2.0","id":"block","method":"tools/call","params":{"name":"block","arguments":{}}}`)
	<-started
	// Both wait for the one worker; the first is cancelled while queued.
	telSend(t, client, `{"jsonrpc":"2.0","id":"never","method":"tools/call","params":{"name":"missing","arguments":{}}}`)
	telSend(t, client, `{"jsonrpc":"2.0","id":"queued","method":"tools/call","params":{"name":"greet","arguments":{}}}`)
	telSend(t, client, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"never"}}`)
	telSend(t, client, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"block"}}`)
	if res := telReceive(t, client); string(res["id"]) != `"queued"` || res["error"] != nil {
		t.Fatalf("want the queued request answered, got %v", res)
	}
	spans := flush(t, tel, col)

	for _, tt := range []struct {
		name    string
		started bool
	}{{"tools/call block", true}, {"tools/call greet", true}, {"tools/call missing", false}} {
		s := spanNamed(t, spans, tt.name)
		wait, hasWait := s.Attributes["mcp.server.request.queue_wait_ns"]
		if !tt.started {
			if len(s.Events) != 0 || hasWait || s.Attributes["error.type"] != "cancelled" {
				t.Errorf("%s never ran, but its span says it started: %+v", tt.name, s)
			}
			continue
		}
		if len(s.Events) != 1 || s.Events[0].Name != "mcp.server.request.started" {
			t.Fatalf("%s: events %+v, want one mcp.server.request.started", tt.name, s.Events)
		}
		at := s.Events[0].Time
		if at < s.Start || at > s.End {
			t.Errorf("%s: started at %d, outside the span [%d, %d]", tt.name, at, s.Start, s.End)
		}
		if n, err := strconv.ParseUint(wait, 10, 64); err != nil || n != at-s.Start {
			t.Errorf("%s: queue_wait_ns %q, want the start minus the receipt, %d", tt.name, wait, at-s.Start)
		}
	}
	// The queued request started only once block's worker was free, which
	// is after block was cancelled (its span ended then) and returned.
	block, queued := spanNamed(t, spans, "tools/call block"), spanNamed(t, spans, "tools/call greet")
	if queued.Events[0].Time < block.End {
		t.Errorf("the queued request started before the worker was free: %+v / %+v", queued, block)
	}
}
