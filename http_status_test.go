package main

import (
	"context"
	"net"
	"strings"
	"testing"
)

// A connection hands its transport typed answers: the code of an error
// answer is the error's, a result's is 0, so that no transport parses the
// frame (HTTP picks a 2026 answer's status from it).
func TestFinalFrameCarriesItsCode(t *testing.T) {
	tests := []struct {
		name string
		f    finalFrame
		want int
	}{
		{"error", errorAnswer("7", &RPCError{Code: CodeMethodNotFound, Message: "Method not found: x"}), CodeMethodNotFound},
		{"error, null id", errorAnswer("", errParseFrame), CodeParseError},
		{"result", serveEnvelope(context.Background(), echoDispatcher, new(Request), mustEnvelope(t, `{"jsonrpc":"2.0","id":1,"method":"x","params":{}}`), "1", nil).answer, 0},
		{"envelope error", serveEnvelope(context.Background(), echoDispatcher, new(Request), mustEnvelope(t, `{"jsonrpc":"1.0","id":1,"method":"x"}`), "1", nil).answer, CodeInvalidRequest},
	}
	for _, tt := range tests {
		if tt.f.code != tt.want || tt.f.frame == nil {
			t.Errorf("%s: code %d (frame %q), want %d", tt.name, tt.f.code, tt.f.frame, tt.want)
		}
	}
}

// mustEnvelope decodes line.
func mustEnvelope(t *testing.T, line string) envelope {
	t.Helper()
	env, err := decodeEnvelope([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// isLoopbackHost answers as net.ParseIP and IP.IsLoopback do (zones
// refused, IPv4-mapped addresses unmapped), and for localhost.
func TestIsLoopbackHost(t *testing.T) {
	reference := func(hostport string) bool {
		host := hostWithoutPort(hostport)
		ip := net.ParseIP(host)
		return strings.EqualFold(host, "localhost") || ip != nil && ip.IsLoopback()
	}
	for _, tt := range []struct {
		hostport string
		want     bool
	}{
		{"127.0.0.1", true}, {"127.0.0.1:8080", true}, {"127.9.8.7:1", true}, {"localhost", true}, {"LocalHost:80", true},
		{"[::1]:8080", true}, {"::1", true}, {"[::1]", true}, {"[::ffff:127.0.0.1]:1", true},
		{"[::1%lo]:1", false}, {"[fe80::1%eth0]:1", false}, {"10.0.0.1:80", false}, {"example.com", false},
		{"localhost.example.com", false}, {"", false}, {"[::2]:1", false}, {"0.0.0.0", false},
	} {
		if got := isLoopbackHost(tt.hostport); got != tt.want || got != reference(tt.hostport) {
			t.Errorf("isLoopbackHost(%q) = %v, want %v (net.ParseIP says %v)", tt.hostport, got, tt.want, reference(tt.hostport))
		}
	}
}
