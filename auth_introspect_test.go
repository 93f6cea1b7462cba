package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// testIntrospector is an introspection endpoint in the test process: it
// answers for the tokens the test registers, authenticates its client with
// client_secret_basic, and counts the calls.
type testIntrospector struct {
	url, issuer string
	calls       atomic.Int32
	down        atomic.Bool
	mu          sync.Mutex
	answers     map[string]map[string]any // by token
}

const (
	introspectionClient = "mcp:server" // a colon and a space: Basic needs them form-encoded
	introspectionSecret = "s3cret pass"
)

func newTestIntrospector(t *testing.T) *testIntrospector {
	t.Helper()
	ti := &testIntrospector{answers: map[string]map[string]any{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /introspect", func(w http.ResponseWriter, r *http.Request) {
		ti.calls.Add(1)
		if ti.down.Load() {
			http.Error(w, "down", http.StatusBadGateway)
			return
		}
		id, secret, ok := r.BasicAuth()
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
		if !ok || id != introspectionClient || secret != introspectionSecret {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"error":"invalid_client"}`)
			return
		}
		if r.FormValue("token_type_hint") != "access_token" {
			http.Error(w, "no hint", http.StatusBadRequest)
			return
		}
		ti.mu.Lock()
		answer, ok := ti.answers[r.FormValue("token")]
		ti.mu.Unlock()
		if !ok {
			answer = map[string]any{"active": false}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(answer)
	})
	base := newLoopbackServer(t, mux)
	ti.url, ti.issuer = base+"/introspect", base
	return ti
}

// issue registers token as active with the usual claims, changed by changes
// (a nil value deletes one).
func (ti *testIntrospector) issue(token string, changes map[string]any) {
	now := time.Now().Unix()
	a := map[string]any{"active": true, "client_id": "robot", "iss": ti.issuer, "aud": testResource, "scope": "mcp:read",
		"token_type": "Bearer", "iat": now, "exp": now + 3600}
	for k, v := range changes {
		if v == nil {
			delete(a, k)
		} else {
			a[k] = v
		}
	}
	ti.mu.Lock()
	ti.answers[token] = a
	ti.mu.Unlock()
}

// revoke makes token inactive.
func (ti *testIntrospector) revoke(token string) {
	ti.mu.Lock()
	ti.answers[token] = map[string]any{"active": false}
	ti.mu.Unlock()
}

func newTestIntrospectionVerifier(t *testing.T, ti *testIntrospector, clock *testClock, change func(*IntrospectionVerifierOptions)) *IntrospectionVerifier {
	t.Helper()
	opts := IntrospectionVerifierOptions{Endpoint: ti.url, ClientID: introspectionClient, ClientSecret: introspectionSecret,
		Issuer: ti.issuer, Resource: testResource, Logger: quietLogger()}
	if change != nil {
		change(&opts)
	}
	v, err := NewIntrospectionVerifier(opts)
	if err != nil {
		t.Fatal(err)
	}
	v.now = clock.Now
	return v
}

// introspectionRefusal returns the reason v refused token, "" when it
// accepted it.
func introspectionRefusal(t *testing.T, v *IntrospectionVerifier, token string) string {
	t.Helper()
	p, err := v.VerifyToken(context.Background(), token)
	if err == nil {
		if p.ID() == "" {
			t.Fatalf("accepted with principal %+v", p)
		}
		return ""
	}
	te, ok := errors.AsType[*TokenError](err)
	if !ok || !errors.Is(err, ErrInvalidToken) {
		t.Fatalf("refused with %v, not a *TokenError wrapping ErrInvalidToken", err)
	}
	return te.Reason
}

// TestIntrospectionVerifierAnswers: what each answer of the authorization
// server makes of the token.
func TestIntrospectionVerifierAnswers(t *testing.T) {
	ti := newTestIntrospector(t)
	v := newTestIntrospectionVerifier(t, ti, newTestClock(), nil)
	now := time.Now().Unix()
	tests := []struct {
		name    string
		changes map[string]any
		want    string
	}{
		{"active", nil, ""},
		{"audience in an array", map[string]any{"aud": []string{"x", testResource}}, ""},
		{"no iss in the answer", map[string]any{"iss": nil}, ""},
		{"no token_type in the answer", map[string]any{"token_type": nil}, ""},
		{"inactive", map[string]any{"active": false}, reasonInactive},
		{"active not a boolean true", map[string]any{"active": "true"}, reasonIntrospected},
		{"another audience", map[string]any{"aud": "https://other.example/mcp"}, reasonAudience},
		{"no audience", map[string]any{"aud": nil}, reasonAudience},
		{"another issuer", map[string]any{"iss": "https://evil.example"}, reasonIssuer},
		{"a refresh token", map[string]any{"token_type": "refresh_token"}, reasonNotBearer},
		{"a DPoP-bound token", map[string]any{"token_type": "DPoP", "cnf": map[string]string{"jkt": testThumbprint}}, ""},
		{"a DPoP-bound token without token_type", map[string]any{"token_type": nil, "cnf": map[string]string{"jkt": testThumbprint}}, ""},
		{"a DPoP-bound token typed Bearer", map[string]any{"cnf": map[string]string{"jkt": testThumbprint}}, reasonNotBearer},
		{"typed DPoP without cnf", map[string]any{"token_type": "DPoP"}, reasonNotBearer},
		{"a jkt that is not a thumbprint", map[string]any{"token_type": "DPoP", "cnf": map[string]string{"jkt": "x"}}, reasonBound},
		{"sender-constrained by a certificate", map[string]any{"cnf": map[string]string{"x5t#S256": "x"}}, reasonBound},
		{"a jkt beside a certificate", map[string]any{"token_type": "DPoP", "cnf": map[string]string{"jkt": testThumbprint, "x5t#S256": "x"}}, reasonBound},
		{"expired", map[string]any{"exp": now - 61}, reasonExpired},
		{"not yet valid", map[string]any{"nbf": now + 120}, reasonNotYetValid},
		{"neither sub nor client_id", map[string]any{"client_id": nil}, reasonNoSubject},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			token := fmt.Sprint("opaque-", i)
			ti.issue(token, tt.changes)
			if got := introspectionRefusal(t, v, token); got != tt.want {
				t.Fatalf("reason %q, want %q", got, tt.want)
			}
		})
	}
	if got := introspectionRefusal(t, v, "never-issued"); got != reasonInactive {
		t.Fatalf("unknown token: %q", got)
	}
}

// TestIntrospectionVerifierPrincipal: sub, else client_id, names the
// principal; the answer is its claims.
func TestIntrospectionVerifierPrincipal(t *testing.T) {
	ti := newTestIntrospector(t)
	v := newTestIntrospectionVerifier(t, ti, newTestClock(), nil)
	ti.issue("client-token", nil)
	ti.issue("user-token", map[string]any{"sub": "alice", "scope": "a b"})
	p, err := v.VerifyToken(context.Background(), "client-token")
	if err != nil || p.ID() != "robot" || p.Subject != "" || p.Issuer != ti.issuer || p.ExpiresAt.IsZero() {
		t.Fatalf("client token: %+v, %v", p, err)
	}
	p, err = v.VerifyToken(context.Background(), "user-token")
	if err != nil || p.ID() != "alice" || p.ClientID != "robot" || strings.Join(p.Scopes, " ") != "a b" || !strings.Contains(string(p.Claims), `"sub":"alice"`) {
		t.Fatalf("user token: %+v, %v", p, err)
	}
}

// TestIntrospectionVerifierRevocation: answers are reused within the cache
// TTL, so a token revoked at the server is refused once it has passed
// (within 10 seconds by default), and a refusal is cached as well.
func TestIntrospectionVerifierRevocation(t *testing.T) {
	ti := newTestIntrospector(t)
	clock := newTestClock()
	v := newTestIntrospectionVerifier(t, ti, clock, nil)
	ti.issue("t", nil)
	for range 3 {
		if got := introspectionRefusal(t, v, "t"); got != "" {
			t.Fatal(got)
		}
	}
	if n := ti.calls.Load(); n != 1 {
		t.Fatalf("%d introspections for three uses within the TTL, want 1", n)
	}
	ti.revoke("t")
	clock.advance(DefaultIntrospectionCacheTTL - time.Millisecond)
	if got := introspectionRefusal(t, v, "t"); got != "" {
		t.Fatalf("within the TTL after revocation: %q (the cached answer stands)", got)
	}
	clock.advance(time.Millisecond)
	if got := introspectionRefusal(t, v, "t"); got != reasonInactive {
		t.Fatalf("after the TTL: %q, want %q", got, reasonInactive)
	}
	if got := introspectionRefusal(t, v, "t"); got != reasonInactive || ti.calls.Load() != 2 {
		t.Fatalf("the refusal again: %q after %d introspections, want it cached", got, ti.calls.Load())
	}
	if _, err := NewIntrospectionVerifier(IntrospectionVerifierOptions{Endpoint: ti.url, ClientID: "a", ClientSecret: "b", Issuer: ti.issuer, Resource: testResource, CacheTTL: 11 * time.Second}); err == nil {
		t.Fatal("a cache TTL over 10s was accepted")
	}
}

// TestIntrospectionVerifierServerFailures: a server that refuses this
// server's credentials or cannot be reached makes every token 401 (never
// cached: the next request asks again).
func TestIntrospectionVerifierServerFailures(t *testing.T) {
	ti := newTestIntrospector(t)
	ti.issue("t", nil)
	wrong := newTestIntrospectionVerifier(t, ti, newTestClock(), func(o *IntrospectionVerifierOptions) { o.ClientSecret = "wrong" })
	if got := introspectionRefusal(t, wrong, "t"); got != reasonUncheckable {
		t.Fatalf("wrong client secret: %q", got)
	}
	v := newTestIntrospectionVerifier(t, ti, newTestClock(), nil)
	ti.down.Store(true)
	before := ti.calls.Load()
	for range 2 {
		if got := introspectionRefusal(t, v, "t"); got != reasonUncheckable {
			t.Fatalf("server down: %q", got)
		}
	}
	if n := ti.calls.Load() - before; n != 2 {
		t.Fatalf("%d introspections for two requests while the server failed, want 2 (failures are not cached)", n)
	}
	ti.down.Store(false)
	if got := introspectionRefusal(t, v, "t"); got != "" {
		t.Fatalf("server back: %q", got)
	}
}

// TestIntrospectionCacheIsBounded: beyond MaxCacheEntries the oldest answers
// go.
func TestIntrospectionCacheIsBounded(t *testing.T) {
	ti := newTestIntrospector(t)
	v := newTestIntrospectionVerifier(t, ti, newTestClock(), func(o *IntrospectionVerifierOptions) { o.MaxCacheEntries = 3 })
	for i := range 10 {
		token := fmt.Sprint("t", i)
		ti.issue(token, nil)
		if got := introspectionRefusal(t, v, token); got != "" {
			t.Fatal(got)
		}
	}
	v.cache.mu.Lock()
	entries, order := len(v.cache.entries), len(v.cache.order)
	v.cache.mu.Unlock()
	if entries != 3 || order != 3 {
		t.Fatalf("%d entries (%d in order), want 3", entries, order)
	}
	before := ti.calls.Load()
	introspectionRefusal(t, v, "t9") // kept
	introspectionRefusal(t, v, "t0") // evicted
	if n := ti.calls.Load() - before; n != 1 {
		t.Fatalf("%d introspections, want 1 (t9 cached, t0 evicted)", n)
	}
}

// TestNewIntrospectionVerifierValidates: the endpoint must be https but on
// loopback, and the client's credentials, issuer and resource are required.
func TestNewIntrospectionVerifierValidates(t *testing.T) {
	valid := IntrospectionVerifierOptions{Endpoint: "https://as.example/introspect", ClientID: "c", ClientSecret: "s", Issuer: "https://as.example", Resource: testResource}
	tests := []struct {
		name   string
		change func(*IntrospectionVerifierOptions)
		want   string
	}{
		{"http endpoint", func(o *IntrospectionVerifierOptions) { o.Endpoint = "http://as.example/introspect" }, "Endpoint"},
		{"no secret", func(o *IntrospectionVerifierOptions) { o.ClientSecret = "" }, "ClientSecret are required"},
		{"no issuer", func(o *IntrospectionVerifierOptions) { o.Issuer = "" }, "Issuer"},
		{"no resource", func(o *IntrospectionVerifierOptions) { o.Resource = "" }, "Resource"},
		{"negative cache", func(o *IntrospectionVerifierOptions) { o.MaxCacheEntries = -1 }, "mcpstdio: IntrospectionVerifierOptions.MaxCacheEntries must be >= 0, got -1"},
	}
	for _, tt := range tests {
		opts := valid
		tt.change(&opts)
		if _, err := NewIntrospectionVerifier(opts); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want an error containing %q", tt.name, err, tt.want)
		}
	}
	if _, err := NewIntrospectionVerifier(valid); err != nil {
		t.Fatal(err)
	}
}
