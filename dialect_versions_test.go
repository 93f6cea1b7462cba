package main

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// releaseOrder is every version this package speaks, oldest first.
func releaseOrder() []string {
	return []string{ProtocolVersion20241105, ProtocolVersion20250326, ProtocolVersion20250618, ProtocolVersion20251125, ProtocolVersion20260728}
}

// TestDialectFeaturesAccumulate: a version keeps every result field, content
// type and capability of the one before it; only batches went away (in
// 2025-06-18), and Tool.execution (2025-11-25's, which 2026-07-28's Tool
// does not define: the tasks extension). A flag dropped by mistake from one
// line of dialectOf shows here.
func TestDialectFeaturesAccumulate(t *testing.T) {
	versions := releaseOrder()
	for i := 1; i < len(versions); i++ {
		older, newer := reflect.ValueOf(dialectOf(versions[i-1])), reflect.ValueOf(dialectOf(versions[i]))
		for f := range older.NumField() {
			name := older.Type().Field(f).Name
			if name == "batches" || name == "stateless" || name == "toolExecution" {
				continue
			}
			if older.Field(f).Bool() && !newer.Field(f).Bool() {
				t.Errorf("%s has %s, %s does not", versions[i-1], name, versions[i])
			}
		}
	}
	if d := dialectOf("2025-01-01"); d.known {
		t.Error("an unknown version is known")
	}
	if !reflect.DeepEqual(releaseOrder(), reversed(defaultProtocolVersions())) {
		t.Errorf("defaultProtocolVersions %v is not every version, newest first", defaultProtocolVersions())
	}
}

func reversed(s []string) []string {
	out := make([]string, 0, len(s))
	for i := len(s) - 1; i >= 0; i-- {
		out = append(out, s[i])
	}
	return out
}

// TestAcceptsBatches: only 2025-03-26 has JSON-RPC batches.
func TestAcceptsBatches(t *testing.T) {
	for _, v := range append(releaseOrder(), "", "2099-01-01") {
		if got, want := acceptsBatches(v), v == ProtocolVersion20250326; got != want {
			t.Errorf("acceptsBatches(%q) = %v, want %v", v, got, want)
		}
	}
}

// TestInitializeNegotiatesByTransport: initialize answers the proposed
// version when it is enabled and the transport carries it; 2024-11-05
// predates Streamable HTTP, so an HTTP client proposing it is answered the
// preferred version, as for any version not served there.
func TestInitializeNegotiatesByTransport(t *testing.T) {
	all := defaultProtocolVersions()
	tests := []struct {
		name      string
		enabled   []string
		proposed  string
		transport string
		want      string // "" for the -32602 refusal
	}{
		{"stdio 2024-11-05", all, ProtocolVersion20241105, "", ProtocolVersion20241105},
		{"stdio 2025-03-26", all, ProtocolVersion20250326, "", ProtocolVersion20250326},
		{"http 2025-03-26", all, ProtocolVersion20250326, TransportStreamableHTTP, ProtocolVersion20250326},
		{"http 2024-11-05 gets the preferred version", all, ProtocolVersion20241105, TransportStreamableHTTP, ProtocolVersion20251125},
		{"http 2024-11-05, preferring 2025-03-26", []string{ProtocolVersion20250326, ProtocolVersion20241105}, ProtocolVersion20241105, TransportStreamableHTTP, ProtocolVersion20250326},
		{"stdio unknown gets the preferred version", []string{ProtocolVersion20241105, ProtocolVersion20250618}, "2099-01-01", "", ProtocolVersion20241105},
		{"http unknown skips 2024-11-05", []string{ProtocolVersion20241105, ProtocolVersion20250618}, "2099-01-01", TransportStreamableHTTP, ProtocolVersion20250618},
		{"disabled older version", []string{ProtocolVersion20251125}, ProtocolVersion20250326, "", ProtocolVersion20251125},
		{"http with only 2024-11-05", []string{ProtocolVersion20260728, ProtocolVersion20241105}, ProtocolVersion20241105, TransportStreamableHTTP, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := testOptions()
			opts.ProtocolVersions = tt.enabled
			rt := newTestRuntime(t, opts)
			r := newRequest("initialize", `{"protocolVersion":"`+tt.proposed+`","capabilities":{},"clientInfo":{"name":"c","version":"1"}}`)
			r.Transport = tt.transport
			reply := dispatch(rt, r)
			if tt.want == "" {
				wantError(t, reply, CodeInvalidParams, "Unsupported protocol version: no initialize-era version this server enables is served over this transport",
					`{"supported":["2026-07-28","2024-11-05"],"requested":"2024-11-05"}`)
				return
			}
			var res struct{ ProtocolVersion string }
			decodeResult(t, reply, &res)
			if res.ProtocolVersion != tt.want || reply.Initialized == nil || reply.Initialized.ProtocolVersion != tt.want {
				t.Errorf("negotiated %q (session %+v), want %q", res.ProtocolVersion, reply.Initialized, tt.want)
			}
		})
	}
}

// TestAskElicitationNeedsItsVersion: before 2025-06-18 there is no
// elicitation, so an ask fails with ErrVersionLacksMethod and sends
// nothing, even when the client declares the capability; sampling and roots
// are asked in every version.
func TestAskElicitationNeedsItsVersion(t *testing.T) {
	for _, version := range releaseOrder()[:4] {
		for _, method := range []string{MethodElicit, MethodCreateMessage, MethodListRoots} {
			t.Run(version+" "+method, func(t *testing.T) {
				params := map[string]string{MethodElicit: formParams, MethodCreateMessage: samplingAsk}[method]
				rt := askingRuntime(t, testOptions(), askOnce(method, params))
				peer := answering(map[string]string{MethodElicit: elicitAccepted, MethodCreateMessage: `{"role":"assistant","model":"m","content":{"type":"text","text":"hi"}}`, MethodListRoots: `{"roots":[]}`}[method])
				r := legacyRequest(version, "tools/call", `{"name":"ask"}`)
				r.Session.ClientCapabilities = json.RawMessage(`{"elicitation":{},"sampling":{},"roots":{}}`)
				r.Peer = peer
				reply := dispatch(rt, r)
				defined := method != MethodElicit || version >= ProtocolVersion20250618
				if sent := len(peer.recorded()); sent != map[bool]int{true: 1, false: 0}[defined] {
					t.Fatalf("%d requests sent; defined in this version: %v", sent, defined)
				}
				if defined {
					if reply.Error != nil || strings.Contains(string(reply.Result), `"isError":true`) {
						t.Fatalf("reply %s %v, want the client's answer", reply.Result, reply.Error)
					}
					return
				}
				wantResult(t, reply, toolFailure("asking the client elicitation/create: the request's protocol version does not define this method (the request is served at "+version+")"))
			})
		}
	}
}

// TestAskVersionErrorIs: the error of an undefined ask matches
// ErrVersionLacksMethod.
func TestAskVersionErrorIs(t *testing.T) {
	got := make(chan error, 1)
	rt := askingRuntime(t, testOptions(), func(ctx context.Context, req *HandlerRequest) (*ToolResult, error) {
		_, err := req.Elicit(ctx, "k", json.RawMessage(formParams))
		got <- err
		return nil, err
	})
	r := legacyRequest(ProtocolVersion20250326, "tools/call", `{"name":"ask"}`)
	r.Peer = answering(elicitAccepted)
	dispatch(rt, r)
	if err := <-got; !errors.Is(err, ErrVersionLacksMethod) {
		t.Fatalf("Elicit error %v, want ErrVersionLacksMethod", err)
	}
}
