package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestAuthFlags: the -auth-* flags that go together, and what each refuses.
func TestAuthFlags(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("s3cret \n\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, []byte(" \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	jwt := []string{"-http", ":0", "-auth-issuer", "https://as.example", "-auth-resource", "https://mcp.example/mcp"}
	with := func(base []string, more ...string) []string { return append(append([]string(nil), base...), more...) }
	introspection := with(jwt, "-auth-introspection-url", "https://as.example/introspect", "-auth-client-id", "mcp")
	tests := []struct {
		name string
		args []string
		want string // "" when the flags are accepted
	}{
		{"JWT", with(jwt, "-auth-scopes", "a,b", "-auth-tool-scopes", "echo=x,echo=y,sleep=z"), ""},
		{"introspection", with(introspection, "-auth-client-secret-file", secret), ""},
		{"no -http", jwt[2:], "-auth-issuer applies to -http only"},
		{"no -auth-resource", jwt[:4], "-auth-issuer needs -auth-resource"},
		{"resource without issuer", []string{"-http", ":0", "-auth-resource", "https://mcp.example/mcp"}, "-auth-resource needs -auth-issuer"},
		{"untyped without issuer", []string{"-auth-accept-untyped-tokens"}, "-auth-accept-untyped-tokens needs -auth-issuer"},
		{"introspection without secret", introspection, "-auth-introspection-url needs -auth-client-id and -auth-client-secret-file"},
		{"client id without introspection", with(jwt, "-auth-client-id", "mcp"), "apply to -auth-introspection-url only"},
		{"untyped with introspection", with(introspection, "-auth-client-secret-file", secret, "-auth-accept-untyped-tokens"), "applies to JWT access tokens"},
		{"missing secret file", with(introspection, "-auth-client-secret-file", filepath.Join(t.TempDir(), "none")), "-auth-client-secret-file: open"},
		{"empty secret file", with(introspection, "-auth-client-secret-file", empty), "is empty"},
		{"tool scope without =", with(jwt, "-auth-tool-scopes", "echo"), `-auth-tool-scopes: "echo" is not TOOL=SCOPE`},
		{"DPoP allowed", with(jwt, "-auth-dpop", "allow"), ""},
		{"DPoP off", with(jwt, "-auth-dpop", "off"), ""},
		{"DPoP required, with its bounds", with(introspection, "-auth-client-secret-file", secret, "-auth-dpop", "require", "-auth-dpop-max-proofs", "10", "-auth-dpop-max-client-proofs", "unlimited"), ""},
		{"DPoP of an unknown mode", with(jwt, "-auth-dpop", "on"), `"on" is not off, allow or require`},
		{"DPoP without issuer", []string{"-auth-dpop", "allow"}, "-auth-dpop needs -auth-issuer"},
		{"DPoP bounds without DPoP", with(jwt, "-auth-dpop-max-client-proofs", "3"), "need -auth-dpop allow or require"},
		{"negative DPoP proofs", with(jwt, "-auth-dpop", "allow", "-auth-dpop-max-proofs", "-1"), `invalid value "-1" for flag -auth-dpop-max-proofs: must be >= 0, got -1`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr strings.Builder
			_, err := parseFlags(tt.args, &stderr)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("refused: %s", stderr.String())
				}
				return
			}
			if err == nil || !strings.Contains(stderr.String(), tt.want) {
				t.Fatalf("err %v, stderr %q; want %q", err, stderr.String(), tt.want)
			}
		})
	}
	var stderr strings.Builder
	c, err := parseFlags(with(introspection, "-auth-client-secret-file", secret, "-auth-tool-scopes", "echo=x,echo=y"), &stderr)
	if err != nil || c.auth.clientSecret != "s3cret" || strings.Join(c.auth.toolScopeMap["echo"], " ") != "x y" {
		t.Fatalf("parsed %+v, %v", c.auth, err)
	}
	for _, tt := range []struct {
		args []string
		want DPoPOptions
	}{
		{jwt, DPoPOptions{}},
		{with(jwt, "-auth-dpop", "allow"), DPoPOptions{Mode: DPoPAllow, MaxProofs: DefaultDPoPMaxProofs}},
		{with(jwt, "-auth-dpop", "require", "-auth-dpop-max-proofs", "10", "-auth-dpop-max-client-proofs", "unlimited"), DPoPOptions{Mode: DPoPRequire, MaxProofs: 10, MaxClientProofs: Unlimited}},
		{with(jwt, "-auth-dpop", "allow", "-auth-dpop-max-proofs", "0", "-auth-dpop-max-client-proofs", "0"), DPoPOptions{Mode: DPoPAllow}},
	} {
		c, err := parseFlags(tt.args, &stderr)
		if err != nil {
			t.Fatal(err)
		}
		opts, err := c.auth.options(quietLogger())
		if err != nil || opts.DPoP.Mode != tt.want.Mode || opts.DPoP.MaxProofs != tt.want.MaxProofs || opts.DPoP.MaxClientProofs != tt.want.MaxClientProofs {
			t.Fatalf("%v: DPoP options %+v, %v; want %+v", tt.args, opts.DPoP, err, tt.want)
		}
	}
	var usage strings.Builder
	parseFlags([]string{"-h"}, &usage)
	for _, line := range []string{"  -auth-dpop MODE\n", "off, allow (bearer and DPoP tokens) or require (DPoP tokens only) (default off)", "  -auth-dpop-max-proofs int\n", "(default 100000)", "  -auth-dpop-max-client-proofs int\n"} {
		if !strings.Contains(usage.String(), line) {
			t.Errorf("-h does not say %q", line)
		}
	}
}

// TestBinaryServesDPoP: the binary with -auth-dpop require takes a
// DPoP-bound JWT with a proof of its key, for the resource's URL, once;
// it refuses the same token as Bearer, and its metadata says DPoP is
// required.
func TestBinaryServesDPoP(t *testing.T) {
	es, client := newTestKey(t, "es", algES256), newTestKey(t, "client", algEdDSA)
	iss := newTestIssuer(t, es)
	const resource = "http://localhost:8080/mcp"
	p := startHTTPServer(t, "-auth-issuer", iss.url, "-auth-resource", resource, "-auth-dpop", "require")
	defer p.stop()
	token := es.sign(t, algES256, nil, iss.claims(map[string]any{"aud": resource, "cnf": map[string]string{"jkt": client.thumbprint(t)}}))
	call := func(authorization, proof string) *http.Response {
		req, err := http.NewRequest(http.MethodPost, p.base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+meta2026+`}}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range stateless("tools/list", "") {
			req.Header.Set(k, v)
		}
		req.Header.Set("Authorization", authorization)
		if proof != "" {
			req.Header.Set(headerDPoP, proof)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	proof := client.proof(t, algEdDSA, nil, proofClaims(http.MethodPost, resource, token, time.Now(), nil))
	if resp := call("DPoP "+token, proof); resp.StatusCode != 200 {
		t.Fatalf("a bound token with its proof: %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	if resp := call("DPoP "+token, proof); resp.StatusCode != 401 || !strings.Contains(resp.Header.Get("WWW-Authenticate"), reasonProofReplayed) {
		t.Fatalf("the proof again: %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	want := `DPoP algs="ES256 EdDSA PS256 RS256", resource_metadata="http://localhost:8080/.well-known/oauth-protected-resource/mcp"`
	if resp := call("Bearer "+token, ""); resp.StatusCode != 401 || strings.Join(resp.Header.Values("WWW-Authenticate"), "\n") != want {
		t.Fatalf("the token as Bearer: %d %q", resp.StatusCode, resp.Header.Values("WWW-Authenticate"))
	}
	md, err := http.Get(p.base + "/.well-known/oauth-protected-resource/mcp")
	if err != nil {
		t.Fatal(err)
	}
	if body, _ := io.ReadAll(md.Body); !strings.Contains(string(body), `"dpop_bound_access_tokens_required":true`) {
		t.Fatalf("metadata: %s", body)
	}
	md.Body.Close()
}

// TestBinaryServesAuthorization: the binary with -http and the -auth-*
// flags verifies JWTs with a real issuer's keys, answers challenges and
// serves its metadata; with -auth-introspection-url it asks the
// introspection endpoint, authenticating with the secret file's secret.
func TestBinaryServesAuthorization(t *testing.T) {
	es := newTestKey(t, "es", algES256)
	iss := newTestIssuer(t, es)
	const resource = "http://localhost:8080/mcp"
	p := startHTTPServer(t, "-auth-issuer", iss.url, "-auth-resource", resource, "-auth-scopes", "mcp:read", "-auth-tool-scopes", "echo=mcp:admin")
	defer p.stop()
	call := func(token, method, name, body string) (*http.Response, string) {
		req, err := http.NewRequest(http.MethodPost, p.base+"/mcp", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range stateless(method, name) {
			req.Header.Set(k, v)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + meta2026 + `}}`
	echo := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},` + meta2026 + `}}`
	resp, _ := call("", "tools/list", "", list)
	if want := `Bearer resource_metadata="http://localhost:8080/.well-known/oauth-protected-resource/mcp", scope="mcp:read"`; resp.StatusCode != 401 || resp.Header.Get("WWW-Authenticate") != want {
		t.Fatalf("no token: %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	reader := es.sign(t, algES256, nil, iss.claims(map[string]any{"aud": resource, "scope": "mcp:read"}))
	adminToken := es.sign(t, algES256, nil, iss.claims(map[string]any{"aud": resource}))
	if resp, body := call(reader, "tools/list", "", list); resp.StatusCode != 200 || !strings.Contains(body, `"name":"echo"`) {
		t.Fatalf("tools/list: %d", resp.StatusCode)
	}
	if resp, _ := call(reader, "tools/call", "echo", echo); resp.StatusCode != 403 || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `scope="mcp:read mcp:admin"`) {
		t.Fatalf("echo without mcp:admin: %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	if resp, body := call(adminToken, "tools/call", "echo", echo); resp.StatusCode != 200 || !strings.Contains(body, `"text":"hi"`) {
		t.Fatalf("echo with mcp:admin: %d %s", resp.StatusCode, body)
	}
	// The metadata is where the challenge points, and at the root
	// well-known path for clients that look there.
	for _, path := range []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"} {
		md, err := http.Get(p.base + path)
		if err != nil {
			t.Fatal(err)
		}
		if body, _ := io.ReadAll(md.Body); md.StatusCode != 200 || !strings.Contains(string(body), `"authorization_servers":["`+iss.url+`"]`) {
			t.Fatalf("metadata at %s: %d %s", path, md.StatusCode, body)
		}
		md.Body.Close()
	}

	ti := newTestIntrospector(t)
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte(introspectionSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ip := startHTTPServer(t, "-auth-issuer", ti.issuer, "-auth-resource", testResource, "-auth-introspection-url", ti.url,
		"-auth-client-id", introspectionClient, "-auth-client-secret-file", secret)
	defer ip.stop()
	ti.issue("opaque", nil)
	p = ip
	if resp, body := call("opaque", "tools/list", "", list); resp.StatusCode != 200 || !strings.Contains(body, `"name":"echo"`) {
		t.Fatalf("introspected token: %d", resp.StatusCode)
	}
	if resp, _ := call("unknown", "tools/list", "", list); resp.StatusCode != 401 || !strings.Contains(resp.Header.Get("WWW-Authenticate"), reasonInactive) {
		t.Fatalf("unknown opaque token: %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
}
