package main

// DPoP against a real authorization server: oidc-provider
// (testdata/auth/provider.mjs) binds the tokens it issues to the key of the
// token request's DPoP proof; the test is the client, holding the keys and
// making the proofs. Like the other TestOIDC tests, these need .ci/auth.

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// dpopToken gets a DPoP-bound access token of client for resource, bound to
// the key that signs proof (a proof of the token request, made by proof
// for the token endpoint's URL). It fails the test unless the provider
// says the token is DPoP-bound.
func (p *oidcProvider) dpopToken(client, resource, scope string, proof func(htu string) string) string {
	p.t.Helper()
	token, tokenType := p.tokenWith(client, resource, scope, map[string]string{headerDPoP: proof(p.issuer + "/token")})
	if tokenType != "DPoP" {
		p.t.Fatalf("%s's token is of type %q, not DPoP", client, tokenType)
	}
	return token
}

// oidcDPoPCall sends a 2026 tools/list to endpoint with the Authorization
// header and the DPoP header lines given.
func oidcDPoPCall(t *testing.T, endpoint, authorization string, proofs ...string) attackResult {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+meta2026+`}}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range stateless("tools/list", "") {
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
		t.Fatal(err)
	}
	resp.Body.Close()
	return attackResult{resp.StatusCode, strings.Join(resp.Header.Values("WWW-Authenticate"), " | ")}
}

// TestOIDCDPoPAttacks: the binary with -auth-dpop allow takes the
// DPoP-bound JWTs of a real authorization server with valid proofs, and
// bearer tokens as Bearer, and refuses every proof it must (RFC 9449 §4.3,
// §7); with -auth-dpop require it refuses bearer tokens. The answers are
// logged for the record.
func TestOIDCDPoPAttacks(t *testing.T) {
	e := needOIDC(t)
	port := freeLoopbackPort(t)
	resource := "http://127.0.0.1:" + port + "/mcp"
	as := e.startProvider(resource, "")
	srv := startHTTPServer(t, "-http", "127.0.0.1:"+port, "-auth-issuer", as.issuer, "-auth-resource", resource, "-auth-dpop", "allow")
	defer srv.stop()
	endpoint := srv.base + "/mcp"

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	proofOf := func(method, uri, accessToken string) string {
		t.Helper()
		proof, err := newDPoPProof(key, method, uri, accessToken)
		if err != nil {
			t.Fatal(err)
		}
		return proof
	}
	token := as.dpopToken("dpop-client", resource, "mcp:read", func(htu string) string { return proofOf(http.MethodPost, htu, "") })
	otherToken := as.dpopToken("dpop-client", resource, "mcp:read", func(htu string) string { return proofOf(http.MethodPost, htu, "") })
	bearerToken := as.token("mcp-client", resource, "mcp:read")

	// The client's key as a testKey, to forge proofs the helper would not
	// make; and an attacker's key, which holds no token.
	point, _ := key.PublicKey.Bytes()
	mine := &testKey{kid: "client", alg: algES256, priv: key,
		jwk: map[string]string{"kty": "EC", "crv": "P-256", "x": encodeB64URL(point[1:33]), "y": encodeB64URL(point[33:])}}
	attacker := newTestKey(t, "attacker", algES256)
	claims := func(changes map[string]any) map[string]any {
		return proofClaims(http.MethodPost, resource, token, time.Now(), changes)
	}
	withPrivate := mergeJWK(mine.publicJWK(), "d", encodeB64URL(key.D.FillBytes(make([]byte, 32))))
	baseline := proofOf(http.MethodPost, resource, token)

	const (
		invalidProof = `DPoP error="invalid_dpop_proof", error_description="`
		invalidToken = `DPoP error="invalid_token", error_description="`
	)
	attacks := []struct {
		name          string
		authorization string
		proofs        []string
		status        int
		want          string // a part of the challenges
	}{
		{"a bound token with its proof (the baseline)", "DPoP " + token, []string{baseline}, 200, ""},
		{"a bearer token as Bearer (allowed)", "Bearer " + bearerToken, nil, 200, ""},
		{"the wrong method", "DPoP " + token, []string{proofOf(http.MethodGet, resource, token)}, 401, invalidProof + reasonProofMethod},
		{"the wrong URL (another path)", "DPoP " + token, []string{proofOf(http.MethodPost, strings.TrimSuffix(resource, "/mcp")+"/other", token)}, 401, invalidProof + reasonProofURL},
		{"the wrong URL (the authorization server's)", "DPoP " + token, []string{proofOf(http.MethodPost, as.issuer+"/token", token)}, 401, invalidProof + reasonProofURL},
		{"an old iat", "DPoP " + token, []string{mine.proof(t, algES256, nil, claims(map[string]any{"iat": time.Now().Add(-DefaultDPoPProofWindow - time.Minute).Unix()}))}, 401, invalidProof + reasonProofTime},
		{"an iat in the future", "DPoP " + token, []string{mine.proof(t, algES256, nil, claims(map[string]any{"iat": time.Now().Add(DefaultDPoPProofWindow + time.Minute).Unix()}))}, 401, invalidProof + reasonProofTime},
		{"a replayed jti (the baseline's proof again)", "DPoP " + token, []string{baseline}, 401, invalidProof + reasonProofReplayed},
		{"the ath of another token", "DPoP " + token, []string{proofOf(http.MethodPost, resource, otherToken)}, 401, invalidProof + reasonProofTokenHash},
		{"a proof signed by another key (the attacker's)", "DPoP " + token, []string{attacker.proof(t, algES256, nil, claims(nil))}, 401, invalidToken + reasonOtherKey},
		{"the client's jwk, signed by another key", "DPoP " + token, []string{attacker.proof(t, algES256, map[string]any{"jwk": mine.publicJWK()}, claims(nil))}, 401, invalidProof + reasonProofSignature},
		{"alg none", "DPoP " + token, []string{mine.proof(t, "none", nil, claims(nil))}, 401, invalidProof + reasonProofAlgorithm},
		{"alg HS256 keyed with the public key", "DPoP " + token, []string{mine.proof(t, "HS256", nil, claims(nil))}, 401, invalidProof + reasonProofAlgorithm},
		{"two proof headers", "DPoP " + token, []string{proofOf(http.MethodPost, resource, token), proofOf(http.MethodPost, resource, token)}, 401, invalidProof + reasonProofRepeated},
		{"no proof", "DPoP " + token, nil, 401, invalidProof + reasonProofMissing},
		{"typ JWT", "DPoP " + token, []string{mine.proof(t, algES256, map[string]any{"typ": "JWT"}, claims(nil))}, 401, invalidProof + reasonProofType},
		{"the private key in the jwk", "DPoP " + token, []string{mine.proof(t, algES256, map[string]any{"jwk": withPrivate}, claims(nil))}, 401, invalidProof + reasonProofPrivateKey},
		{"a bound token as Bearer", "Bearer " + token, nil, 401, `Bearer error="invalid_token", error_description="` + reasonBoundAsBearer},
		{"a bound token as Bearer, with its proof", "Bearer " + token, []string{proofOf(http.MethodPost, resource, token)}, 401, `Bearer error="invalid_token", error_description="` + reasonBoundAsBearer},
		{"a bearer token as DPoP", "DPoP " + bearerToken, []string{proofOf(http.MethodPost, resource, bearerToken)}, 401, invalidToken + reasonNotBound},
	}
	for _, a := range attacks {
		got := oidcDPoPCall(t, endpoint, a.authorization, a.proofs...)
		t.Logf("attack %q: %d, WWW-Authenticate: %s", a.name, got.status, got.challenge)
		if got.status != a.status || !strings.Contains(got.challenge, a.want) {
			t.Errorf("%s: %d %q, want %d and challenges containing %q", a.name, got.status, got.challenge, a.status, a.want)
		}
	}

	required := startHTTPServer(t, "-http", "127.0.0.1:0", "-auth-issuer", as.issuer, "-auth-resource", resource, "-auth-dpop", "require")
	defer required.stop()
	got := oidcDPoPCall(t, required.base+"/mcp", "Bearer "+bearerToken)
	t.Logf("attack %q: %d, WWW-Authenticate: %s", "a bearer token where DPoP is required", got.status, got.challenge)
	if want := `DPoP algs="ES256 EdDSA PS256 RS256", resource_metadata=`; got.status != 401 || !strings.HasPrefix(got.challenge, want) || strings.Contains(got.challenge, "Bearer") {
		t.Errorf("a bearer token where DPoP is required: %+v, want 401 and only %s...", got, want)
	}
	if got := oidcDPoPCall(t, required.base+"/mcp", "DPoP "+token, proofOf(http.MethodPost, resource, token)); got.status != 200 {
		t.Errorf("a bound token with its proof where DPoP is required: %+v", got)
	}
}

// TestOIDCDPoPKeyTypes: tokens the authorization server bound to EdDSA,
// PS256 and RS256 keys (RFC 7638 thumbprints computed by its JOSE library)
// pass with proofs of those keys, through the library's verifier and gate.
func TestOIDCDPoPKeyTypes(t *testing.T) {
	e := needOIDC(t)
	port := freeLoopbackPort(t)
	resource := "http://127.0.0.1:" + port + "/mcp"
	as := e.startProvider(resource, "")
	srv := startHTTPServer(t, "-http", "127.0.0.1:"+port, "-auth-issuer", as.issuer, "-auth-resource", resource, "-auth-dpop", "require")
	defer srv.stop()
	for _, alg := range []string{algEdDSA, algPS256, algRS256} {
		k := newTestKey(t, "client", alg)
		token := as.dpopToken("dpop-client", resource, "", func(htu string) string {
			return k.proof(t, alg, nil, proofClaims(http.MethodPost, htu, "", time.Now(), map[string]any{"ath": nil}))
		})
		if got := oidcDPoPCall(t, srv.base+"/mcp", "DPoP "+token, k.proof(t, alg, nil, proofClaims(http.MethodPost, resource, token, time.Now(), nil))); got.status != 200 {
			t.Errorf("%s: %+v", alg, got)
		}
		var claims struct {
			Cnf struct{ Jkt string } `json:"cnf"`
		}
		json.Unmarshal(decodeB64URL(strings.Split(token, ".")[1]), &claims)
		if claims.Cnf.Jkt != k.thumbprint(t) {
			t.Errorf("%s: the issuer bound the token to %q, the thumbprint here is %q", alg, claims.Cnf.Jkt, k.thumbprint(t))
		}
	}
}

// TestOIDCDPoPIntrospection: an opaque DPoP-bound token's key comes from the
// introspection answer (cnf.jkt, token_type DPoP): it passes with a proof
// of that key, and not with another's.
func TestOIDCDPoPIntrospection(t *testing.T) {
	e := needOIDC(t)
	port := freeLoopbackPort(t)
	resource := "http://127.0.0.1:" + port + "/mcp"
	as := e.startProvider(resource, "")
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("mcp-server-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := startHTTPServer(t, "-http", "127.0.0.1:"+port, "-auth-issuer", as.issuer, "-auth-resource", resource, "-auth-dpop", "allow",
		"-auth-introspection-url", as.issuer+"/token/introspection", "-auth-client-id", "mcp-server", "-auth-client-secret-file", secret)
	defer srv.stop()
	k, attacker := newTestKey(t, "client", algES256), newTestKey(t, "attacker", algES256)
	token := as.dpopToken("dpop-opaque-client", resource, "", func(htu string) string {
		return k.proof(t, algES256, nil, proofClaims(http.MethodPost, htu, "", time.Now(), map[string]any{"ath": nil}))
	})
	if strings.Count(token, ".") == 2 {
		t.Fatalf("the token is a JWT, not opaque: %s", token)
	}
	if got := oidcDPoPCall(t, srv.base+"/mcp", "DPoP "+token, k.proof(t, algES256, nil, proofClaims(http.MethodPost, resource, token, time.Now(), nil))); got.status != 200 {
		t.Fatalf("the opaque bound token with its proof: %+v", got)
	}
	for _, a := range []struct {
		name, authorization, proof, want string
	}{
		{"an opaque bound token with a proof of another key", "DPoP " + token,
			attacker.proof(t, algES256, nil, proofClaims(http.MethodPost, resource, token, time.Now(), nil)), `DPoP error="invalid_token", error_description="` + reasonOtherKey},
		{"an opaque bound token as Bearer", "Bearer " + token, "", `Bearer error="invalid_token", error_description="` + reasonBoundAsBearer},
	} {
		var proofs []string
		if a.proof != "" {
			proofs = append(proofs, a.proof)
		}
		got := oidcDPoPCall(t, srv.base+"/mcp", a.authorization, proofs...)
		t.Logf("attack %q: %d, WWW-Authenticate: %s", a.name, got.status, got.challenge)
		if got.status != 401 || !strings.Contains(got.challenge, a.want) {
			t.Errorf("%s: %+v, want 401 and %q", a.name, got, a.want)
		}
	}
}
