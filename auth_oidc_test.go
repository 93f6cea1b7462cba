package main

// Tests against a real authorization server, npm's oidc-provider
// (testdata/auth/provider.mjs), and a real MCP client, the TypeScript SDK's
// (testdata/auth/client.mjs). They need Node.js and those packages: .ci/auth
// installs them and sets MCPSTDIO_AUTH_NODE_MODULES; without it they skip.

import (
	"bufio"
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Environment of the tests against a real authorization server.
const (
	envAuthNodeModules = "MCPSTDIO_AUTH_NODE_MODULES" // a node_modules with oidc-provider and @modelcontextprotocol/client
	envAuthNode        = "MCPSTDIO_AUTH_NODE"         // the node binary (default: node)
)

// oidcEnv is a folder holding the scripts of testdata/auth beside the
// installed node_modules, and the node that runs them.
type oidcEnv struct {
	t         *testing.T
	node, dir string
}

// needOIDC skips the test unless the Node.js packages are installed.
func needOIDC(t *testing.T) *oidcEnv {
	t.Helper()
	modules := os.Getenv(envAuthNodeModules)
	if modules == "" {
		t.Skip("set " + envAuthNodeModules + " to a node_modules folder with oidc-provider and @modelcontextprotocol/client (.ci/auth installs them) to test against a real authorization server and client")
	}
	node := os.Getenv(envAuthNode)
	if node == "" {
		node = "node"
	}
	dir := t.TempDir()
	for _, name := range []string{"provider.mjs", "client.mjs"} {
		b, err := os.ReadFile(filepath.Join("testdata", "auth", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(modules, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	return &oidcEnv{t: t, node: node, dir: dir}
}

// oidcProvider is a running provider.mjs.
type oidcProvider struct {
	t      *testing.T
	cmd    *exec.Cmd
	issuer string
	port   string
	done   chan struct{}
}

// startProvider starts provider.mjs issuing tokens for resource (and
// otherResource), with env's extra variables (PORT, KID, ALG).
func (e *oidcEnv) startProvider(resource, otherResource string, env ...string) *oidcProvider {
	t := e.t
	t.Helper()
	cmd := exec.Command(e.node, "provider.mjs")
	cmd.Dir = e.dir
	cmd.Env = append(os.Environ(), append([]string{"MCP_RESOURCE=" + resource, "OTHER_RESOURCE=" + otherResource}, env...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &oidcProvider{t: t, cmd: cmd, done: make(chan struct{})}
	lines := bufio.NewScanner(stdout)
	if lines.Scan() {
		p.issuer, _ = strings.CutPrefix(lines.Text(), "issuer ")
	}
	go func() {
		io.Copy(io.Discard, stdout)
		cmd.Wait()
		close(p.done)
	}()
	if !strings.HasPrefix(p.issuer, "http://127.0.0.1:") {
		<-p.done
		t.Fatalf("provider.mjs did not start: %q, %s", p.issuer, stderr.String())
	}
	p.port = p.issuer[strings.LastIndexByte(p.issuer, ':')+1:]
	t.Cleanup(p.stop)
	return p
}

// stop ends the provider and waits for it. Idempotent.
func (p *oidcProvider) stop() {
	p.cmd.Process.Signal(syscall.SIGTERM)
	<-p.done
}

// token gets an access token of client for resource with scope ("": the
// client's default).
func (p *oidcProvider) token(client, resource, scope string) string {
	p.t.Helper()
	token, _ := p.tokenWith(client, resource, scope, nil)
	return token
}

// tokenWith gets an access token of client for resource with scope ("":
// the client's default), sending the request's header fields given (a DPoP
// proof, say), and returns it with its token_type.
func (p *oidcProvider) tokenWith(client, resource, scope string, header map[string]string) (token, tokenType string) {
	t := p.t
	t.Helper()
	form := url.Values{"grant_type": {"client_credentials"}, "resource": {resource}}
	if scope != "" {
		form.Set("scope", scope)
	}
	var answer struct {
		AccessToken string `json:"access_token"`
		TokenType   string `json:"token_type"`
	}
	p.post("/token", client, form, &answer, header)
	if answer.AccessToken == "" {
		t.Fatalf("no access token for %s", client)
	}
	return answer.AccessToken, answer.TokenType
}

// revoke revokes token, as client.
func (p *oidcProvider) revoke(client, token string) {
	p.t.Helper()
	p.post("/token/revocation", client, url.Values{"token": {token}}, nil, nil)
}

func (p *oidcProvider) post(path, client string, form url.Values, answer any, header map[string]string) {
	t := p.t
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, p.issuer+path, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(client, client+"-secret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("POST %s as %s: %d %s", path, client, resp.StatusCode, body)
	}
	if answer != nil {
		if err := json.Unmarshal(body, answer); err != nil {
			t.Fatal(err)
		}
	}
}

// publicKeyDER returns the DER of the provider's signing key, as published.
func (p *oidcProvider) publicKeyDER() []byte {
	t := p.t
	t.Helper()
	resp, err := http.Get(p.issuer + "/jwks")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	doc, _ := io.ReadAll(resp.Body)
	keys, err := parseJWKS(doc)
	if err != nil || len(keys) != 1 {
		t.Fatalf("the provider's JWKS: %d keys, %v", len(keys), err)
	}
	var pub any = keys[0].ec
	if keys[0].rsa != nil {
		pub = keys[0].rsa
	}
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

// freeLoopbackPort returns a port nothing listens on now.
func freeLoopbackPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// TestOIDCRealClientBothEras: the TypeScript SDK's client, given only its
// client credentials, finds the authorization server through the binary's
// metadata, gets a token for its resource, lists the tools and calls echo,
// stepping up to mcp:admin on the 403 — in a 2025-11-25 session (which the
// new token keeps: same principal) and statelessly in 2026-07-28.
func TestOIDCRealClientBothEras(t *testing.T) {
	e := needOIDC(t)
	port := freeLoopbackPort(t)
	resource := "http://127.0.0.1:" + port + "/mcp"
	as := e.startProvider(resource, "")
	srv := startHTTPServer(t, "-http", "127.0.0.1:"+port, "-auth-issuer", as.issuer, "-auth-resource", resource,
		"-auth-scopes", "mcp:read", "-auth-tool-scopes", "echo=mcp:admin")
	defer srv.stop()
	for _, era := range []string{ProtocolVersion20251125, ProtocolVersion20260728} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		cmd := exec.CommandContext(ctx, e.node, "client.mjs", resource, era, "mcp-client", as.issuer)
		cmd.Dir = e.dir
		out, err := cmd.Output()
		cancel()
		var got struct {
			ProtocolVersion string
			SessionID       *string
			Tools           int
			Echo            string
			TokenScopes     []string
			Error           string
		}
		if jerr := json.Unmarshal(out, &got); jerr != nil || err != nil || got.Error != "" {
			t.Fatalf("%s: client.mjs: %v, %s", era, err, out)
		}
		t.Logf("TypeScript SDK client, %s: %s", era, strings.TrimSpace(string(out)))
		if got.ProtocolVersion != era || got.Echo != "hello over "+era || got.Tools == 0 || (got.SessionID != nil) != (era == ProtocolVersion20251125) ||
			strings.Join(got.TokenScopes, "|") != "mcp:read|mcp:read mcp:admin" {
			t.Fatalf("%s: %+v; want the era, the echo, a session only in 2025-11-25, and a token for mcp:read then one stepped up to mcp:admin", era, got)
		}
	}
}

// attackResult is what the server answered an attack.
type attackResult struct {
	status    int
	challenge string
}

// TestOIDCAttacks: the binary, verifying JWTs of a real authorization
// server, refuses every token it must; the answers are logged for the
// record.
func TestOIDCAttacks(t *testing.T) {
	e := needOIDC(t)
	port := freeLoopbackPort(t)
	resource := "http://127.0.0.1:" + port + "/mcp"
	const otherResource = "https://other.example/mcp"
	as := e.startProvider(resource, otherResource)
	otherAS := e.startProvider(resource, "")
	srv := startHTTPServer(t, "-http", "127.0.0.1:"+port, "-auth-issuer", as.issuer, "-auth-resource", resource,
		"-auth-scopes", "mcp:read", "-auth-tool-scopes", "echo=mcp:admin")
	defer srv.stop()
	endpoint := srv.base + "/mcp"

	send := func(method, rawURL, token string, header map[string]string, body string) attackResult {
		t.Helper()
		req, err := http.NewRequest(method, rawURL, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range header {
			req.Header.Set(k, v)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return attackResult{resp.StatusCode, resp.Header.Get("WWW-Authenticate")}
	}
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + meta2026 + `}}`
	listHeader := stateless("tools/list", "")

	valid := as.token("mcp-client", resource, "mcp:read")
	parts := strings.Split(valid, ".")
	var header, claims map[string]any
	json.Unmarshal(decodeB64URL(parts[0]), &header)
	json.Unmarshal(decodeB64URL(parts[1]), &claims)
	reencode := func(h, c map[string]any, sig string) string {
		return b64JSON(t, h) + "." + b64JSON(t, c) + "." + sig
	}
	with := func(m map[string]any, k string, v any) map[string]any {
		out := map[string]any{}
		for key, val := range m {
			out[key] = val
		}
		out[k] = v
		return out
	}
	hmacToken := func() string {
		h := with(header, "alg", "HS256")
		input := b64JSON(t, h) + "." + parts[1]
		return input + "." + encodeB64URL(hmacSHA256(as.publicKeyDER(), []byte(input)))
	}()
	sigBytes := decodeB64URL(parts[2])
	sigBytes[0] ^= 0x01

	const (
		metadata = `resource_metadata="http://127.0.0.1:`
		invalid  = `Bearer error="invalid_token", error_description="`
	)
	attacks := []struct {
		name   string
		token  string
		query  string
		status int
		want   string // a part of the challenge
	}{
		{"a valid token (the baseline)", valid, "", 200, ""},
		{"no token", "", "", 401, `Bearer ` + metadata},
		{"a token for another audience", as.token("mcp-client", otherResource, "mcp:read"), "", 401, invalid + reasonAudience},
		{"a token from another issuer", otherAS.token("mcp-client", resource, "mcp:read"), "", 401, invalid + reasonIssuer},
		{"alg none", reencode(with(header, "alg", "none"), claims, ""), "", 401, invalid + reasonAlgorithm},
		{"HMAC signed with the issuer's public key", hmacToken, "", 401, invalid + reasonAlgorithm},
		{"a tampered signature", parts[0] + "." + parts[1] + "." + encodeB64URL(sigBytes), "", 401, invalid + reasonSignature},
		{"claims changed under the signature", reencode(header, with(claims, "sub", "admin"), parts[2]), "", 401, invalid + reasonSignature},
		{"an unknown kid", reencode(with(header, "kid", "attacker"), claims, parts[2]), "", 401, invalid + reasonNoKey},
		{"an opaque token where JWTs are expected", as.token("opaque-client", resource, "mcp:read"), "", 401, invalid + reasonMalformed},
		{"a token in the query string", "", "?access_token=" + valid, 400, `Bearer error="invalid_request", error_description="access tokens are accepted in the Authorization header only"`},
	}
	for _, a := range attacks {
		got := send(http.MethodPost, endpoint+a.query, a.token, listHeader, list)
		t.Logf("attack %q: %d, WWW-Authenticate: %s", a.name, got.status, got.challenge)
		if got.status != a.status || !strings.Contains(got.challenge, a.want) {
			t.Errorf("%s: %d %q, want %d and a challenge containing %q", a.name, got.status, got.challenge, a.status, a.want)
		}
	}

	// A tool that needs a scope the token lacks: the step-up challenge.
	echo := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"},` + meta2026 + `}}`
	got := send(http.MethodPost, endpoint, valid, stateless("tools/call", "echo"), echo)
	t.Logf("attack %q: %d, WWW-Authenticate: %s", "a tool call without the tool's scope", got.status, got.challenge)
	if got.status != 403 || !strings.Contains(got.challenge, `error="insufficient_scope"`) || !strings.Contains(got.challenge, `scope="mcp:read mcp:admin"`) {
		t.Errorf("tool scope: %+v", got)
	}

	// A session used with another principal's token.
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	req, _ := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(initialize))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+valid)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	sid := resp.Header.Get(headerSessionID)
	if resp.StatusCode != 200 || sid == "" {
		t.Fatalf("initialize: %d", resp.StatusCode)
	}
	session := map[string]string{headerSessionID: sid, "MCP-Protocol-Version": "2025-11-25"}
	legacyList := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	fresh := as.token("mcp-client", resource, "mcp:read")
	if got := send(http.MethodPost, endpoint, fresh, session, legacyList); got.status != 200 {
		t.Fatalf("the session with a fresh token of its principal: %+v", got)
	}
	intruder := as.token("other-client", resource, "mcp:read")
	for _, method := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
		got := send(method, endpoint, intruder, session, legacyList)
		t.Logf("attack %q: %d", "the session used with another principal's token ("+method+")", got.status)
		if got.status != 404 {
			t.Errorf("%s by another principal: %d, want 404", method, got.status)
		}
	}
	if got := send(http.MethodDelete, endpoint, valid, session, ""); got.status != 204 {
		t.Fatalf("DELETE by the owner: %+v", got)
	}
}

// TestOIDCKeyRotationAndIssuerDown: the authorization server restarts with
// a new signing key (another kid and algorithm) while the server runs on;
// the new key's tokens pass once the refresh interval has passed, the old
// key's stop passing; then the authorization server goes down and the
// keys held still verify, while the rest is refused 401.
func TestOIDCKeyRotationAndIssuerDown(t *testing.T) {
	e := needOIDC(t)
	port := freeLoopbackPort(t)
	resource := "http://127.0.0.1:" + port + "/mcp"
	as := e.startProvider(resource, "", "KID=k1", "ALG=ES256")
	clock := newTestClock()
	v, err := NewJWTVerifier(JWTVerifierOptions{Issuer: as.issuer, Resource: resource, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	clock.install(v)
	h, err := NewHTTPHandler(newHTTPCatalogRuntime(t), HTTPOptions{Logger: quietLogger(), Auth: &AuthOptions{
		Resource: resource, AuthorizationServers: []string{as.issuer}, Verifier: v}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() { h.endStreams(); srv.Close(); h.Close() })
	list := func(token string) attackResult {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+meta2026+`}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range stateless("tools/list", "") {
			req.Header.Set(k, v)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return attackResult{resp.StatusCode, resp.Header.Get("WWW-Authenticate")}
	}
	oldToken := as.token("mcp-client", resource, "")
	if got := list(oldToken); got.status != 200 {
		t.Fatalf("before the rotation: %+v", got)
	}
	as.stop()
	rotated := e.startProvider(resource, "", "PORT="+as.port, "KID=k2", "ALG=EdDSA")
	newToken := rotated.token("mcp-client", resource, "")
	got := list(newToken)
	t.Logf("attack %q: %d, WWW-Authenticate: %s", "a rotated key within the refresh interval", got.status, got.challenge)
	if got.status != 401 || !strings.Contains(got.challenge, reasonNoKey) {
		t.Fatalf("the new key within the interval: %+v", got)
	}
	clock.advance(DefaultJWKSRefreshInterval)
	if got := list(newToken); got.status != 200 {
		t.Fatalf("the new key after the interval: %+v", got)
	}
	got = list(oldToken)
	t.Logf("attack %q: %d, WWW-Authenticate: %s", "a token of the withdrawn key", got.status, got.challenge)
	if got.status != 401 {
		t.Fatalf("the withdrawn key: %+v", got)
	}

	rotated.stop()
	clock.advance(DefaultJWKSMaxAge + time.Second)
	for range 2 {
		if got := list(newToken); got.status != 200 {
			t.Fatalf("a held key while the issuer is down: %+v", got)
		}
		waitForKeyFetch(v)
	}
	clock.advance(DefaultJWKSRefreshInterval)
	forged := strings.Split(newToken, ".")
	var header map[string]any
	json.Unmarshal(decodeB64URL(forged[0]), &header)
	header["kid"] = "k3"
	got = list(b64JSON(t, header) + "." + forged[1] + "." + forged[2])
	t.Logf("attack %q: %d, WWW-Authenticate: %s", "an unknown kid while the issuer is down", got.status, got.challenge)
	if got.status != 401 || !strings.Contains(got.challenge, reasonNoKey) {
		t.Fatalf("an unknown key while the issuer is down: %+v", got)
	}
}

// TestOIDCIntrospection: opaque tokens are verified at the real server's
// introspection endpoint by the binary; a revoked one is refused once the
// cached answer expires (5s by default, so within 10s), which the library's
// verifier shows on a test clock.
func TestOIDCIntrospection(t *testing.T) {
	e := needOIDC(t)
	port := freeLoopbackPort(t)
	resource := "http://127.0.0.1:" + port + "/mcp"
	as := e.startProvider(resource, "")
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("mcp-server-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := startHTTPServer(t, "-http", "127.0.0.1:"+port, "-auth-issuer", as.issuer, "-auth-resource", resource,
		"-auth-introspection-url", as.issuer+"/token/introspection", "-auth-client-id", "mcp-server", "-auth-client-secret-file", secret)
	defer srv.stop()
	call := func(token string) attackResult {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, srv.base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+meta2026+`}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range stateless("tools/list", "") {
			req.Header.Set(k, v)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return attackResult{resp.StatusCode, resp.Header.Get("WWW-Authenticate")}
	}
	opaque := as.token("opaque-client", resource, "")
	if got := call(opaque); got.status != 200 {
		t.Fatalf("an opaque token: %+v", got)
	}
	for _, a := range []struct{ name, token string }{
		{"an opaque token made up", "made-up-token-0123456789"},
		{"a JWT where opaque tokens are introspected", as.token("mcp-client", resource, "")},
	} {
		got := call(a.token)
		t.Logf("attack %q: %d, WWW-Authenticate: %s", a.name, got.status, got.challenge)
		if got.status != 401 {
			t.Errorf("%s: %+v", a.name, got)
		}
	}

	clock := newTestClock()
	v, err := NewIntrospectionVerifier(IntrospectionVerifierOptions{Endpoint: as.issuer + "/token/introspection", ClientID: "mcp-server", ClientSecret: "mcp-server-secret",
		Issuer: as.issuer, Resource: resource, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	v.now = clock.Now
	revoked := as.token("opaque-client", resource, "")
	if _, err := v.VerifyToken(context.Background(), revoked); err != nil {
		t.Fatalf("before the revocation: %v", err)
	}
	as.revoke("opaque-client", revoked)
	if _, err := v.VerifyToken(context.Background(), revoked); err != nil {
		t.Fatalf("within the cache TTL after the revocation: %v (the cached answer stands)", err)
	}
	clock.advance(DefaultIntrospectionCacheTTL)
	_, err = v.VerifyToken(context.Background(), revoked)
	t.Logf("attack %q after %v: %v", "a revoked opaque token", DefaultIntrospectionCacheTTL, err)
	if te, ok := errors.AsType[*TokenError](err); !ok || te.Reason != reasonInactive {
		t.Fatalf("after the cache TTL: %v, want %q", err, reasonInactive)
	}
}
