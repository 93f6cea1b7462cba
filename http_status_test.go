package main

import (
	"net"
	"strings"
	"testing"
)

// frameErrorCode tells a result from an error whatever the frame holds,
// whether the connection built it (a result told by its key alone) or not.
func TestFrameErrorCode(t *testing.T) {
	tests := []struct {
		name  string
		frame string
		want  int
	}{
		{"result, string id", string(resultFrame(`"a"`, []byte(`{"error":{"code":-32601}}`))), 0},
		{"result, integer id", string(resultFrame("7", []byte(`{"content":[]}`))), 0},
		{"error", string(errorFrame("7", &RPCError{Code: CodeMethodNotFound, Message: "Method not found: x"})), CodeMethodNotFound},
		{"error, null id", string(errorFrame("", &RPCError{Code: CodeParseError, Message: "Parse error"})), CodeParseError},
		{"error with data", string(errorFrame(`"b"`, &RPCError{Code: CodeInvalidParams, Message: "m", Data: map[string]string{"result": "x"}})), CodeInvalidParams},
		{"another writer's spacing", `{ "jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "m"} }`, CodeInternalError},
		{"another writer's order", `{"error":{"code":-32602,"message":"m"},"jsonrpc":"2.0","id":1}`, CodeInvalidParams},
		{"not a frame", `[]`, 0},
	}
	for _, tt := range tests {
		if got := frameErrorCode([]byte(tt.frame)); got != tt.want {
			t.Errorf("%s: frameErrorCode(%s) = %d, want %d", tt.name, tt.frame, got, tt.want)
		}
	}
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
