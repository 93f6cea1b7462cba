package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"
)

// dpopTestServer is the reference catalog (and whoami) behind a gate
// taking DPoP tokens, on a test clock.
type dpopTestServer struct {
	*httpTestServer
	clock *testClock
}

// newDPoPTestServer serves behind a gate with dpop, mcp:read required of
// every request and mcp:admin of echo. Its verifier knows: "bound" (alice,
// both scopes) and "bound-reader" (alice, mcp:read) bound to key, "bob"
// bound to bobKey, "bearer" (alice, both scopes) not bound, "x5t" bound to
// a certificate.
func newDPoPTestServer(t *testing.T, key, bobKey *testKey, dpop DPoPOptions, opts HTTPOptions) *dpopTestServer {
	t.Helper()
	bound := func(sub string, k *testKey, scopes ...string) *Principal {
		return &Principal{Subject: sub, Scopes: scopes, Claims: []byte(`{"sub":"` + sub + `","cnf":{"jkt":"` + k.thumbprint(t) + `"}}`)}
	}
	verifier := staticVerifier{
		"bound":        bound("alice", key, "mcp:read", "mcp:admin"),
		"bound-reader": bound("alice", key, "mcp:read"),
		"bob":          bound("bob", bobKey, "mcp:read"),
		"bearer":       {Subject: "alice", Scopes: []string{"mcp:read", "mcp:admin"}, Claims: []byte(`{"sub":"alice"}`)},
		"x5t":          {Subject: "alice", Scopes: []string{"mcp:read"}, Claims: []byte(`{"sub":"alice","cnf":{"x5t#S256":"` + testThumbprint + `"}}`)},
	}
	opts.Logger = quietLogger()
	opts.Auth = &AuthOptions{Resource: testResource, AuthorizationServers: []string{"https://as.example.test"}, Verifier: verifier,
		Scopes: []string{"mcp:read"}, ToolScopes: map[string][]string{"echo": {"mcp:admin"}}, DPoP: dpop}
	s := newHTTPTestServer(t, newWhoamiRuntime(t), opts)
	clock := newTestClock()
	if s.h.auth.dpop != nil {
		s.h.auth.dpop.now = clock.Now
	}
	return &dpopTestServer{httpTestServer: s, clock: clock}
}

// dpopAnswer is what the gate answered a request.
type dpopAnswer struct {
	status     int
	challenges []string // the WWW-Authenticate fields, in order
	nonce      string   // DPoP-Nonce
	body       string
}

// call posts a 2026 tools/call of tool (whoami when "") with the
// Authorization header (none when "") and the DPoP header lines given,
// and extra headers.
func (s *dpopTestServer) call(authorization, tool string, extra map[string]string, proofs ...string) dpopAnswer {
	s.t.Helper()
	if tool == "" {
		tool = "whoami"
	}
	body := toolCall("1", tool, meta2026)
	if tool == "echo" {
		body = echoCall2026
	}
	req, err := http.NewRequest(http.MethodPost, s.url, strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range stateless("tools/call", tool) {
		req.Header.Set(k, v)
	}
	for k, v := range extra {
		req.Header.Set(k, v)
	}
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	for _, p := range proofs {
		req.Header.Add(headerDPoP, p)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	return dpopAnswer{resp.StatusCode, resp.Header.Values("WWW-Authenticate"), resp.Header.Get(headerDPoPNonce), readBody(s.t, resp)}
}

// proofFor returns k's proof of a POST to the resource with token at the
// server's time, changed by changes.
func (s *dpopTestServer) proofFor(k *testKey, token string, changes map[string]any) string {
	s.t.Helper()
	return k.proof(s.t, k.alg, nil, proofClaims(http.MethodPost, testResource, token, s.clock.Now(), changes))
}

// Challenges of the gate tests.
const (
	dpopAlgs          = `algs="ES256 EdDSA PS256 RS256"`
	challengeTail     = wantMetadataURL + `, scope="mcp:read"`
	bearerChallenge   = `Bearer ` + challengeTail
	dpopChallenge     = `DPoP ` + dpopAlgs + `, ` + challengeTail
	whoamiAlice       = `"text":"principal alice scopes mcp:read mcp:admin"`
	invalidTokenError = `error="invalid_token", error_description=`
	invalidProofError = `error="invalid_dpop_proof", error_description=`
)

// withError is a challenge of scheme carrying error params.
func withError(scheme, params, reason string) string {
	tail := challengeTail
	if scheme == authSchemeDPoP {
		tail = dpopAlgs + ", " + tail
	}
	return scheme + " " + params + `"` + reason + `", ` + tail
}

// TestDPoPGateAllow: with DPoPAllow the gate takes bearer tokens as Bearer
// and DPoP-bound ones as DPoP with a valid proof of their key, refuses
// every other combination with the challenge RFC 9449 §7.1 and §7.2 ask
// for, and offers both schemes.
func TestDPoPGateAllow(t *testing.T) {
	key, bobKey, other := newTestKey(t, "k", algES256), newTestKey(t, "b", algEdDSA), newTestKey(t, "o", algES256)
	s := newDPoPTestServer(t, key, bobKey, DPoPOptions{Mode: DPoPAllow}, HTTPOptions{})
	tests := []struct {
		name          string
		authorization string
		tool          string
		proofs        []string
		status        int
		challenges    []string
	}{
		{name: "a bearer token as Bearer", authorization: "Bearer bearer", status: 200},
		{name: "a bound token with its proof", authorization: "DPoP bound", proofs: []string{s.proofFor(key, "bound", nil)}, status: 200},
		{name: "the scheme in another case", authorization: "dpop bound", proofs: []string{s.proofFor(key, "bound", nil)}, status: 200},
		{name: "another principal's bound token with its proof", authorization: "DPoP bob", proofs: []string{s.proofFor(bobKey, "bob", nil)}, status: 200},
		{name: "no credential", status: 401, challenges: []string{bearerChallenge, dpopChallenge}},
		{name: "a bound token as Bearer", authorization: "Bearer bound", status: 401,
			challenges: []string{withError("Bearer", invalidTokenError, reasonBoundAsBearer), dpopChallenge}},
		{name: "a bound token as Bearer with its proof", authorization: "Bearer bound", proofs: []string{s.proofFor(key, "bound", nil)}, status: 401,
			challenges: []string{withError("Bearer", invalidTokenError, reasonBoundAsBearer), dpopChallenge}},
		{name: "a bound token without a proof", authorization: "DPoP bound", status: 401,
			challenges: []string{withError("DPoP", invalidProofError, reasonProofMissing), bearerChallenge}},
		{name: "a bound token with a proof of another key", authorization: "DPoP bound", proofs: []string{s.proofFor(other, "bound", nil)}, status: 401,
			challenges: []string{withError("DPoP", invalidTokenError, reasonOtherKey), bearerChallenge}},
		{name: "a bound token with a proof of another token", authorization: "DPoP bound", proofs: []string{s.proofFor(key, "bound-reader", nil)}, status: 401,
			challenges: []string{withError("DPoP", invalidProofError, reasonProofTokenHash), bearerChallenge}},
		{name: "a bearer token as DPoP", authorization: "DPoP bearer", proofs: []string{s.proofFor(key, "bearer", nil)}, status: 401,
			challenges: []string{withError("DPoP", invalidTokenError, reasonNotBound), bearerChallenge}},
		{name: "a token bound to a certificate", authorization: "Bearer x5t", status: 401,
			challenges: []string{withError("Bearer", invalidTokenError, reasonBound), dpopChallenge}},
		{name: "an unknown token with a proof", authorization: "DPoP forged", proofs: []string{s.proofFor(key, "forged", nil)}, status: 401,
			challenges: []string{withError("DPoP", invalidTokenError, "unknown token"), bearerChallenge}},
		{name: "a DPoP credential that is not a token68", authorization: "DPoP a b", status: 400,
			challenges: []string{withError("Bearer", `error="invalid_request", error_description=`, "the DPoP credential is not a token68"),
				withError("DPoP", `error="invalid_request", error_description=`, "the DPoP credential is not a token68")}},
		{name: "a bound token without the tool's scope", authorization: "DPoP bound-reader", tool: "echo", proofs: []string{s.proofFor(key, "bound-reader", nil)}, status: 403,
			challenges: []string{`DPoP error="insufficient_scope", error_description="the tool echo needs more scopes", ` + dpopAlgs + `, ` + wantMetadataURL + `, scope="mcp:read mcp:admin"`,
				`Bearer ` + wantMetadataURL + `, scope="mcp:read mcp:admin"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := s.call(tt.authorization, tt.tool, nil, tt.proofs...)
			if got.status != tt.status || strings.Join(got.challenges, "\n") != strings.Join(tt.challenges, "\n") {
				t.Fatalf("status %d, challenges\n%s\nbody %s\nwant %d and\n%s", got.status, strings.Join(got.challenges, "\n"), got.body, tt.status, strings.Join(tt.challenges, "\n"))
			}
			switch {
			case tt.status == 200 && tt.tool == "" && !strings.Contains(got.body, `"text":"principal `):
				t.Fatalf("body %s, want whoami's answer", got.body)
			case tt.status != 200 && !strings.Contains(got.body, `"error":{"code":-32600`):
				t.Fatalf("body %s, want a JSON-RPC error", got.body)
			}
		})
	}
}

// TestDPoPGateReplay: a proof passes once; sent again, on its own or with
// another request, it is refused until it expires, and then it is too old.
func TestDPoPGateReplay(t *testing.T) {
	key := newTestKey(t, "k", algES256)
	s := newDPoPTestServer(t, key, key, DPoPOptions{Mode: DPoPRequire}, HTTPOptions{})
	proof := s.proofFor(key, "bound", nil)
	if got := s.call("DPoP bound", "", nil, proof); got.status != 200 || !strings.Contains(got.body, whoamiAlice) {
		t.Fatalf("first use: %+v", got)
	}
	replayed := []string{withError("DPoP", invalidProofError, reasonProofReplayed)}
	for range 2 {
		if got := s.call("DPoP bound", "", nil, proof); got.status != 401 || strings.Join(got.challenges, "\n") != strings.Join(replayed, "\n") {
			t.Fatalf("replay: %+v", got)
		}
	}
	s.clock.advance(DefaultDPoPProofWindow + time.Second)
	if got := s.call("DPoP bound", "", nil, proof); got.status != 401 || !strings.Contains(got.challenges[0], reasonProofTime) {
		t.Fatalf("replay after the window: %+v", got)
	}
	if n := s.h.auth.dpop.ledger.len(); n != 1 {
		t.Fatalf("the ledger holds %d proofs, want the one accepted", n)
	}
	if got := s.call("DPoP bound", "", nil, s.proofFor(key, "bound", nil)); got.status != 200 {
		t.Fatalf("a fresh proof after the window: %+v", got)
	}
	if n := s.h.auth.dpop.ledger.len(); n != 1 {
		t.Fatalf("the ledger holds %d proofs, want the fresh one only (the expired one forgotten)", n)
	}
}

// TestDPoPGateRequire: with DPoPRequire only DPoP-bound tokens with their
// proofs pass; a Bearer credential gets the DPoP challenge, without error.
func TestDPoPGateRequire(t *testing.T) {
	key := newTestKey(t, "k", algES256)
	s := newDPoPTestServer(t, key, key, DPoPOptions{Mode: DPoPRequire}, HTTPOptions{})
	for _, authorization := range []string{"", "Bearer bearer", "Bearer bound", "Basic YWxpY2U6cHc="} {
		got := s.call(authorization, "", nil)
		if got.status != 401 || strings.Join(got.challenges, "\n") != dpopChallenge {
			t.Fatalf("%q: %+v, want 401 and only %s", authorization, got, dpopChallenge)
		}
		if strings.HasPrefix(authorization, "Bearer") && !strings.Contains(got.body, reasonDPoPOnly) {
			t.Fatalf("%q: body %s, want it to say why", authorization, got.body)
		}
	}
	if got := s.call("DPoP bound", "", nil, s.proofFor(key, "bound", nil)); got.status != 200 || !strings.Contains(got.body, whoamiAlice) {
		t.Fatalf("a bound token with its proof: %+v", got)
	}
	got := s.call("DPoP bearer", "", nil, s.proofFor(key, "bearer", nil))
	if want := withError("DPoP", invalidTokenError, reasonNotBound); got.status != 401 || strings.Join(got.challenges, "\n") != want {
		t.Fatalf("a bearer token as DPoP: %+v, want %s", got, want)
	}
}

// TestDPoPGateOff: without DPoP a bound token is refused as a token the
// server cannot check, and the DPoP scheme is no credential.
func TestDPoPGateOff(t *testing.T) {
	key := newTestKey(t, "k", algES256)
	s := newDPoPTestServer(t, key, key, DPoPOptions{}, HTTPOptions{})
	if got := s.call("Bearer bound", "", nil); got.status != 401 || strings.Join(got.challenges, "\n") != withError("Bearer", invalidTokenError, reasonBound) {
		t.Fatalf("a bound token as Bearer: %+v", got)
	}
	if got := s.call("DPoP bound", "", nil, s.proofFor(key, "bound", nil)); got.status != 401 || strings.Join(got.challenges, "\n") != bearerChallenge {
		t.Fatalf("a bound token as DPoP: %+v", got)
	}
	if got := s.call("Bearer bearer", "", nil); got.status != 200 {
		t.Fatalf("a bearer token: %+v", got)
	}
}

// TestDPoPMetadata: the protected resource metadata says which algorithms
// proofs may use and whether DPoP is required (RFC 9728 §2).
func TestDPoPMetadata(t *testing.T) {
	key := newTestKey(t, "k", algES256)
	for _, tt := range []struct {
		dpop DPoPOptions
		want string
	}{
		{DPoPOptions{}, `"bearer_methods_supported":["header"]}`},
		{DPoPOptions{Mode: DPoPAllow}, `"bearer_methods_supported":["header"],"dpop_signing_alg_values_supported":["ES256","EdDSA","PS256","RS256"],"dpop_bound_access_tokens_required":false}`},
		{DPoPOptions{Mode: DPoPRequire, Algorithms: []string{algEdDSA, algES256}}, `"bearer_methods_supported":["header"],"dpop_signing_alg_values_supported":["EdDSA","ES256"],"dpop_bound_access_tokens_required":true}`},
	} {
		s := newDPoPTestServer(t, key, key, tt.dpop, HTTPOptions{})
		resp, err := http.Get(strings.TrimSuffix(s.url, "/mcp") + wellKnownProtectedResource + "/mcp")
		if err != nil {
			t.Fatal(err)
		}
		if body := readBody(t, resp); !strings.HasSuffix(body, tt.want) {
			t.Errorf("%v: metadata %s, want it to end with %s", tt.dpop.Mode, body, tt.want)
		}
	}
}

// TestDPoPGateNonces: with a nonce key, a proof without a nonce is
// answered use_dpop_nonce with one, which the retry carries; every answer
// of the endpoint carries the current nonce, and a refused proof is not
// remembered.
func TestDPoPGateNonces(t *testing.T) {
	key := newTestKey(t, "k", algES256)
	s := newDPoPTestServer(t, key, key, DPoPOptions{Mode: DPoPAllow, NonceKey: []byte(strings.Repeat("n", 32))}, HTTPOptions{})
	got := s.call("DPoP bound", "", nil, s.proofFor(key, "bound", nil))
	want := withError("DPoP", `error="use_dpop_nonce", error_description=`, reasonProofNonce)
	if got.status != 401 || len(got.challenges) != 2 || got.challenges[0] != want || got.nonce == "" {
		t.Fatalf("a proof without a nonce: %+v, want 401, %s and a DPoP-Nonce", got, want)
	}
	if n := s.h.auth.dpop.ledger.len(); n != 0 {
		t.Fatalf("the refused proof was remembered (%d)", n)
	}
	retry := s.call("DPoP bound", "", nil, s.proofFor(key, "bound", map[string]any{"nonce": got.nonce}))
	if retry.status != 200 || retry.nonce == "" {
		t.Fatalf("the retry with the nonce: %+v", retry)
	}
	if plain := s.call("", "", nil); plain.nonce == "" {
		t.Fatalf("a challenge without a nonce: %+v", plain)
	}
}

// TestDPoPBehindProxy: behind a trusted proxy, htu is the URL the client
// addressed as the proxy facing it reports it in Forwarded; from a peer
// that is not trusted, Forwarded is ignored and htu is the resource's.
func TestDPoPBehindProxy(t *testing.T) {
	key := newTestKey(t, "k", algES256)
	const public = "https://public.example:8443/mcp"
	forwarded := map[string]string{"Forwarded": `for=203.0.113.9;host="public.example:8443";proto=https, for=127.0.0.1;host=inner.example;proto=http`}
	proof := func(s *dpopTestServer, htu string) string {
		return key.proof(t, algES256, nil, proofClaims(http.MethodPost, htu, "bound", s.clock.Now(), nil))
	}
	tests := []struct {
		name    string
		proxies []netip.Prefix
		header  map[string]string
		htu     string
		ok      bool
	}{
		{"trusted: the public URL", []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, forwarded, public, true},
		{"trusted: the resource's URL", []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, forwarded, testResource, false},
		{"trusted: the inner proxy's URL", []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, forwarded, "http://inner.example/mcp", false},
		{"trusted, no Forwarded: the resource's URL", []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, map[string]string{"X-Forwarded-Host": "public.example"}, testResource, true},
		{"trusted, a malformed host: the resource's URL", []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, map[string]string{"Forwarded": `for=203.0.113.9;host="evil.example/x";proto=https`}, testResource, true},
		{"untrusted: the public URL", nil, forwarded, public, false},
		{"untrusted: the resource's URL", nil, forwarded, testResource, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newDPoPTestServer(t, key, key, DPoPOptions{Mode: DPoPAllow}, HTTPOptions{TrustedProxies: tt.proxies})
			got := s.call("DPoP bound", "", tt.header, proof(s, tt.htu))
			if (got.status == 200) != tt.ok || !tt.ok && !strings.Contains(got.challenges[0], reasonProofURL) {
				t.Fatalf("%+v, want accepted %v", got, tt.ok)
			}
		})
	}
}

// TestDPoPGateLedgerFull: a proof the ledger has no room for is refused
// 503, as is one beyond its principal's share, while another principal's
// still passes.
func TestDPoPGateLedgerFull(t *testing.T) {
	key, bobKey := newTestKey(t, "k", algES256), newTestKey(t, "b", algES256)
	s := newDPoPTestServer(t, key, bobKey, DPoPOptions{Mode: DPoPAllow, MaxProofs: 3, MaxClientProofs: 2}, HTTPOptions{})
	for i := range 2 {
		if got := s.call("DPoP bound", "", nil, s.proofFor(key, "bound", nil)); got.status != 200 {
			t.Fatalf("alice's proof %d: %+v", i, got)
		}
	}
	got := s.call("DPoP bound", "", nil, s.proofFor(key, "bound", nil))
	if got.status != 503 || len(got.challenges) != 0 || !strings.Contains(got.body, `"code":-32603`) || !strings.Contains(got.body, "this principal sent as many DPoP proofs") {
		t.Fatalf("alice's third proof: %+v, want 503 for her share", got)
	}
	if got := s.call("DPoP bob", "", nil, s.proofFor(bobKey, "bob", nil)); got.status != 200 {
		t.Fatalf("bob's proof: %+v", got)
	}
	got = s.call("DPoP bob", "", nil, s.proofFor(bobKey, "bob", nil))
	if got.status != 503 || !strings.Contains(got.body, "the server holds as many recent DPoP proofs as it may") {
		t.Fatalf("a proof beyond MaxProofs: %+v, want 503", got)
	}
	s.clock.advance(DefaultDPoPProofWindow + time.Second)
	if got := s.call("DPoP bob", "", nil, s.proofFor(bobKey, "bob", nil)); got.status != 200 {
		t.Fatalf("a proof once the others expired: %+v", got)
	}
}

// TestDPoPGetAndDelete: a session's GET stream and DELETE take proofs of
// their own method.
func TestDPoPGetAndDelete(t *testing.T) {
	key := newTestKey(t, "k", algES256)
	s := newDPoPTestServer(t, key, key, DPoPOptions{Mode: DPoPRequire}, HTTPOptions{})
	proof := func(method string) string {
		return key.proof(t, algES256, nil, proofClaims(method, testResource, "bound", s.clock.Now(), nil))
	}
	resp := s.post(map[string]string{"Authorization": "DPoP bound", headerDPoP: proof(http.MethodPost)},
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	readBody(t, resp)
	sid := resp.Header.Get(headerSessionID)
	if resp.StatusCode != 200 || sid == "" {
		t.Fatalf("initialize: %d", resp.StatusCode)
	}
	session := func(method string) map[string]string {
		return map[string]string{"Authorization": "DPoP bound", headerDPoP: proof(method), headerSessionID: sid, "MCP-Protocol-Version": "2025-11-25", "Accept": "text/event-stream"}
	}
	ctx, cancel := context.WithCancel(context.Background())
	wrong := s.do(ctx, http.MethodGet, session(http.MethodPost), "")
	wrong.Body.Close()
	if wrong.StatusCode != 401 || !strings.Contains(wrong.Header.Get("WWW-Authenticate"), reasonProofMethod) {
		t.Fatalf("GET with a POST's proof: %d %q", wrong.StatusCode, wrong.Header.Get("WWW-Authenticate"))
	}
	stream := s.do(ctx, http.MethodGet, session(http.MethodGet), "")
	if stream.StatusCode != 200 {
		t.Fatalf("GET with its proof: %d", stream.StatusCode)
	}
	cancel()
	stream.Body.Close()
	resp = s.do(context.Background(), http.MethodDelete, session(http.MethodDelete), "")
	if readBody(t, resp); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE with its proof: %d", resp.StatusCode)
	}
}

// TestDPoPGateConcurrentReplay: one proof sent by many requests at once
// passes exactly once, the others are refused as replays. Run with -race.
func TestDPoPGateConcurrentReplay(t *testing.T) {
	key := newTestKey(t, "k", algES256)
	s := newDPoPTestServer(t, key, key, DPoPOptions{Mode: DPoPAllow}, HTTPOptions{})
	const senders = 8
	for round := range 5 {
		proof := s.proofFor(key, "bound", nil)
		answers := make(chan dpopAnswer, senders)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for range senders {
			wg.Go(func() {
				<-start
				answers <- s.call("DPoP bound", "", nil, proof)
			})
		}
		close(start)
		wg.Wait()
		close(answers)
		passed := 0
		for a := range answers {
			switch {
			case a.status == 200:
				passed++
			case a.status != 401 || !strings.Contains(a.challenges[0], reasonProofReplayed):
				t.Fatalf("round %d: %+v", round, a)
			}
		}
		if passed != 1 {
			t.Fatalf("round %d: the proof passed %d times, want once", round, passed)
		}
	}
}

// TestDPoPPathAsSent: htu's path is the one the client sent, also when the
// handler is mounted under a prefix that http.StripPrefix takes off.
func TestDPoPPathAsSent(t *testing.T) {
	key := newTestKey(t, "k", algES256)
	s := newDPoPTestServer(t, key, key, DPoPOptions{Mode: DPoPAllow}, HTTPOptions{})
	prefixed := httptest.NewServer(http.StripPrefix("/api", s.h))
	t.Cleanup(prefixed.Close)
	s.url = prefixed.URL + "/api/mcp"
	const origin = "https://mcp.example.test"
	for _, tt := range []struct {
		htu string
		ok  bool
	}{
		{origin + "/api/mcp", true},
		{origin + "/mcp", false},
	} {
		got := s.call("DPoP bound", "", nil, key.proof(t, algES256, nil, proofClaims(http.MethodPost, tt.htu, "bound", s.clock.Now(), nil)))
		if (got.status == 200) != tt.ok || !tt.ok && !strings.Contains(got.challenges[0], reasonProofURL) {
			t.Errorf("htu %s: %+v, want accepted %v", tt.htu, got, tt.ok)
		}
	}
}
