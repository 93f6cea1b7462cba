package main

import (
	"context"
	"strings"
	"testing"
)

// Refusals the connection decides after (or instead of) the handler have
// spans that say so: a resources/subscribe over the subscription limit, a
// listen stream over it, and a request whose id is already in flight.
func TestTelemetryRefusedSubscribeListenAndDuplicateID(t *testing.T) {
	col := newTestCollector(t, nil)
	tel := newTestTelemetry(t, col, 64)
	started := make(chan struct{}, 1)
	rt := telemetryRuntime(t, started)
	for _, uri := range []string{"x://1", "x://2"} {
		if err := rt.AddResource(Resource{URI: uri, Name: uri}, staticText("r")); err != nil {
			t.Fatal(err)
		}
	}
	rt.resourcesSubscribe = true
	client := memorySession(t, rt, Options{Observer: tel, MaxSubscriptions: 1})

	telSend(t, client, `{"jsonrpc":"2.0","id":"s1","method":"resources/subscribe","params":{"uri":"x://1"}}`)
	if res := telReceive(t, client); res["error"] != nil {
		t.Fatalf("first subscribe: %s", res["error"])
	}
	telSend(t, client, `{"jsonrpc":"2.0","id":"s2","method":"resources/subscribe","params":{"uri":"x://2"}}`)
	if res := telReceive(t, client); !strings.Contains(string(res["error"]), "Subscription limit reached") {
		t.Fatalf("want the subscription limit, got %v", res)
	}
	telSend(t, client, `{"jsonrpc":"2.0","id":"b","method":"tools/call","params":{"name":"block","arguments":{}}}`)
	<-started
	telSend(t, client, `{"jsonrpc":"2.0","id":"b","method":"tools/call","params":{"name":"greet","arguments":{}}}`)
	if res := telReceive(t, client); !strings.Contains(string(res["error"]), "Duplicate in-flight request id") {
		t.Fatalf("want a duplicate id refusal, got %v", res)
	}
	telSend(t, client, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"b"}}`)
	telSend(t, client, `not json`) // a sync point: answered by the owner after the cancel
	telReceive(t, client)

	// A 2026-07-28 listen stream over the limit, on a connection of its own.
	tr, listener, err := NewMemoryTransport(telemetryRuntime(t, nil), Options{Observer: tel, MaxSubscriptions: 1})
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- tr.Serve(context.Background()) }()
	defer func() { listener.Close(); <-served }()
	telSend(t, listener, `{"jsonrpc":"2.0","id":"L1","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},`+meta2026+`}}`)
	telReceive(t, listener) // acknowledged
	telSend(t, listener, `{"jsonrpc":"2.0","id":"L2","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},`+meta2026+`}}`)
	if res := telReceive(t, listener); res["error"] == nil {
		t.Fatalf("want the second listen stream refused, got %v", res)
	}

	spans := flush(t, tel, col)
	byID := map[string]otlpSpan{}
	dupes := 0
	for _, s := range spans {
		id := s.Attributes["jsonrpc.request.id"]
		if id == "b" && s.Name == "tools/call greet" {
			dupes++
		}
		byID[id+" "+s.Name] = s
	}
	tests := []struct {
		key, errType, reason string
	}{
		{"s1 resources/subscribe", "", ""},
		{"s2 resources/subscribe", "-32602", ""},
		{"b tools/call greet", "-32600", "duplicate_id"},
		{"b tools/call block", "cancelled", ""},
		{"L1 subscriptions/listen", "", ""},
		{"L2 subscriptions/listen", "-32603", ""},
	}
	for _, tt := range tests {
		s, ok := byID[tt.key]
		if !ok {
			t.Errorf("no span %q among %+v", tt.key, spans)
			continue
		}
		if got := s.Attributes["error.type"]; got != tt.errType {
			t.Errorf("%s: error.type %q, want %q (%v)", tt.key, got, tt.errType, s.Attributes)
		}
		if tt.errType != "" && s.Status.Code != 2 {
			t.Errorf("%s: status %+v, want an error", tt.key, s.Status)
		}
		if got := s.Attributes["mcp.request.refused.reason"]; got != tt.reason {
			t.Errorf("%s: refused reason %q, want %q", tt.key, got, tt.reason)
		}
	}
	if dupes != 1 {
		t.Errorf("want one span of the duplicate, got %d", dupes)
	}
	var b strings.Builder
	tel.metrics.writePrometheus(&b)
	if !strings.Contains(b.String(), `mcp_server_request_refused_total{reason="duplicate_id"} 1`) {
		t.Errorf("duplicate id refusal not counted:\n%s", b.String())
	}
}
