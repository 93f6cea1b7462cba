package main

import (
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testThumbprint is RFC 7638's example thumbprint (§3.1): a well-formed
// cnf.jkt of a key no test holds.
const testThumbprint = "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs"

// publicJWK returns k's public JWK as a proof carries it: the key's
// members only.
func (k *testKey) publicJWK() map[string]string {
	pub := map[string]string{}
	for name, v := range k.jwk {
		if name != "kid" && name != "use" && name != "alg" {
			pub[name] = v
		}
	}
	return pub
}

// thumbprint returns the RFC 7638 thumbprint of k's public key.
func (k *testKey) thumbprint(t testing.TB) string {
	t.Helper()
	pub, err := json.Marshal(k.publicJWK())
	if err != nil {
		t.Fatal(err)
	}
	_, thumb, reason := proofKey(pub, k.alg)
	if reason != "" {
		t.Fatalf("thumbprint of %s: %s", k.alg, reason)
	}
	return thumb
}

// proof returns a DPoP proof signed by k with alg, with k's public JWK in
// its header: header and claims change the defaults (a nil value deletes).
func (k *testKey) proof(t testing.TB, alg string, header, claims map[string]any) string {
	t.Helper()
	h := map[string]any{"typ": dpopProofType, "kid": nil, "jwk": k.publicJWK()}
	for name, v := range header {
		h[name] = v
	}
	return k.sign(t, alg, h, claims)
}

// proofClaims returns the claims of a valid proof of a request to uri by
// method with token at iat, changed by the pairs given (a nil value deletes
// the claim).
func proofClaims(method, uri, token string, iat time.Time, changes map[string]any) map[string]any {
	jti := make([]byte, 16)
	rand.Read(jti)
	c := map[string]any{"jti": encodeB64URL(jti), "htm": method, "htu": uri, "iat": iat.Unix(), "ath": accessTokenHash(token)}
	for name, v := range changes {
		if v == nil {
			delete(c, name)
		} else {
			c[name] = v
		}
	}
	return c
}

// TestDPoPRFCExamples: the proof, key, thumbprint and access token hash of
// RFC 9449's examples (§7.1, §6.1) and the thumbprint of RFC 7638's (§3.1)
// come out as the RFCs say.
func TestDPoPRFCExamples(t *testing.T) {
	const (
		token = "Kz~8mXK1EalYznwH-LC-1fBAo.4Ljp~zsPE_NeO.gxU"
		proof = "eyJ0eXAiOiJkcG9wK2p3dCIsImFsZyI6IkVTMjU2IiwiandrIjp7Imt0eSI6IkVDIiwieCI6Imw4dEZyaHgtMzR0VjNoUklDUkRZOXpDa0RscEJoRjQyVVFVZldWQVdCRnMiLCJ5IjoiOVZFNGpmX09rX282NHpiVFRsY3VOSmFqSG10NnY5VERWclUwQ2R2R1JEQSIsImNydiI6IlAtMjU2In19" +
			".eyJqdGkiOiJlMWozVl9iS2ljOC1MQUVCIiwiaHRtIjoiR0VUIiwiaHR1IjoiaHR0cHM6Ly9yZXNvdXJjZS5leGFtcGxlLm9yZy9wcm90ZWN0ZWRyZXNvdXJjZSIsImlhdCI6MTU2MjI2MjYxOCwiYXRoIjoiZlVIeU8ycjJaM0RaNTNFc05yV0JiMHhXWG9hTnk1OUlpS0NBcWtzbVFFbyJ9" +
			".2oW9RP35yRqzhrtNP86L-Ey71EOptxRimPPToA1plemAgR6pxHF8y6-yqyVnmcw6Fy1dqd-jfxSYoMxhAJpLjA"
	)
	if got := accessTokenHash(token); got != "fUHyO2r2Z3DZ53EsNrWBb0xWXoaNy59IiKCAqksmQEo" {
		t.Errorf("ath of the example token: %s", got)
	}
	p, reason := parseDPoPProof(proof, dpopAlgorithms())
	if reason != "" {
		t.Fatalf("the example proof: %s", reason)
	}
	if p.thumbprint != "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I" {
		t.Errorf("thumbprint of the example key: %s", p.thumbprint)
	}
	if !p.signed() {
		t.Error("the example proof's signature does not verify")
	}
	target := proofTarget{method: http.MethodGet, uri: "https://resource.example.org/protectedresource", token: token,
		now: time.Unix(1562262618, 0), window: DefaultDPoPProofWindow}
	if reason := p.matches(target); reason != "" {
		t.Errorf("the example proof against its request: %s", reason)
	}
	rsa := jwk{Kty: "RSA", E: "AQAB", N: "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw"}
	if got := rsa.thumbprint(); got != testThumbprint {
		t.Errorf("thumbprint of RFC 7638's key: %s", got)
	}
}

// dpopTestURI is the URL the gate tests' requests are addressed to: the
// resource they configure.
const dpopTestURI = testResource

// newTestDPoPGate returns the DPoP part of a gate for testResource with
// opts (Mode DPoPAllow when unset) on clock.
func newTestDPoPGate(t *testing.T, opts DPoPOptions, clock *testClock, forwarded forwardedOrigin) *dpopGate {
	t.Helper()
	if opts.Mode == DPoPOff {
		opts.Mode = DPoPAllow
	}
	resource, err := parseResourceURI(testResource)
	if err != nil {
		t.Fatal(err)
	}
	d, err := newDPoPGate(opts, resource, forwarded)
	if err != nil {
		t.Fatal(err)
	}
	d.now = clock.Now
	return d
}

// TestDPoPProofChecks: each check of a proof (RFC 9449 §4.3) refuses what
// it must, for its reason, and valid proofs of each algorithm pass.
func TestDPoPProofChecks(t *testing.T) {
	es, ed := newTestKey(t, "es", algES256), newTestKey(t, "ed", algEdDSA)
	rs, ps := newTestKey(t, "rs", algRS256), newTestKey(t, "ps", algPS256)
	other := newTestKey(t, "other", algES256)
	clock := newTestClock()
	clock.now.Store(time.Now().Truncate(time.Second).UnixNano()) // iat has whole seconds: the window's edges are now's
	d := newTestDPoPGate(t, DPoPOptions{}, clock, nil)
	esOnly := newTestDPoPGate(t, DPoPOptions{Algorithms: []string{algES256}}, clock, nil)
	const token = "the-access-token"
	now := clock.Now()
	valid := func(changes map[string]any) map[string]any {
		return proofClaims(http.MethodPost, dpopTestURI, token, now, changes)
	}
	withD := map[string]string{"d": "AAAA"}
	for k, v := range es.publicJWK() {
		withD[k] = v
	}
	bigModulus := make([]byte, 8192/8)
	rand.Read(bigModulus)
	bigModulus[0] |= 0x80
	tampered := func(proof string) string {
		parts := strings.Split(proof, ".")
		var c map[string]any
		json.Unmarshal(decodeB64URL(parts[1]), &c)
		c["htm"] = http.MethodPost // the same, re-encoded with another jti below
		c["jti"] = "another"
		parts[1] = b64JSON(t, c)
		return strings.Join(parts, ".")
	}
	tests := []struct {
		name    string
		proofs  []string // the DPoP header lines
		gate    *dpopGate
		method  string // default POST
		reason  string // "" when the proof passes
		useNone bool   // refused use_dpop_nonce rather than invalid_dpop_proof
	}{
		{name: "ES256", proofs: []string{es.proof(t, algES256, nil, valid(nil))}},
		{name: "EdDSA", proofs: []string{ed.proof(t, algEdDSA, nil, valid(nil))}},
		{name: "RS256", proofs: []string{rs.proof(t, algRS256, nil, valid(nil))}},
		{name: "PS256", proofs: []string{ps.proof(t, algPS256, nil, valid(nil))}},
		{name: "typ application/dpop+jwt", proofs: []string{es.proof(t, algES256, map[string]any{"typ": "application/DPoP+JWT"}, valid(nil))}},
		{name: "other claims and headers ignored", proofs: []string{es.proof(t, algES256, map[string]any{"x": 1}, valid(map[string]any{"y": "z"}))}},

		// 1. one DPoP header
		{name: "no DPoP header", reason: reasonProofMissing},
		{name: "two DPoP headers", proofs: []string{es.proof(t, algES256, nil, valid(nil)), es.proof(t, algES256, nil, valid(nil))}, reason: reasonProofRepeated},
		// 2. a well-formed JWT
		{name: "two parts", proofs: []string{"eyJhbGciOiJFUzI1NiJ9.eyJqdGkiOiJ4In0"}, reason: reasonProofMalformed},
		{name: "padded base64", proofs: []string{strings.Replace(es.proof(t, algES256, nil, valid(nil)), ".", "=.", 1)}, reason: reasonProofMalformed},
		{name: "a header that is not an object", proofs: []string{b64JSON(t, []string{"dpop+jwt"}) + ".e30.AA"}, reason: reasonProofMalformed},
		{name: "a repeated claim", proofs: []string{rawToken(t, es, `{"typ":"dpop+jwt","alg":"ES256","jwk":`+jsonText(t, es.publicJWK())+`}`, `{"htm":"POST","htm":"GET"}`)}, reason: reasonProofMalformed},
		{name: "too long", proofs: []string{strings.Repeat("a", maxDPoPProofBytes+1)}, reason: reasonProofMalformed},
		// 3. the required claims
		{name: "no jti", proofs: []string{es.proof(t, algES256, nil, valid(map[string]any{"jti": nil}))}, reason: proofClaimMissing("jti", "a string")},
		{name: "an empty jti", proofs: []string{es.proof(t, algES256, nil, valid(map[string]any{"jti": ""}))}, reason: proofClaimMissing("jti", "a string")},
		{name: "a jti that is a number", proofs: []string{es.proof(t, algES256, nil, valid(map[string]any{"jti": 7}))}, reason: proofClaimMissing("jti", "a string")},
		{name: "an iat that is a string", proofs: []string{es.proof(t, algES256, nil, valid(map[string]any{"iat": "1700000000"}))}, reason: proofClaimMissing("iat", "a number")},
		{name: "a nonce that is not a string", proofs: []string{es.proof(t, algES256, nil, valid(map[string]any{"nonce": 1}))}, reason: reasonProofNonceType},
		{name: "a claim named in another case", proofs: []string{es.proof(t, algES256, nil, valid(map[string]any{"jti": nil, "JTI": "x"}))}, reason: proofClaimMissing("jti", "a string")},
		{name: "no htm", proofs: []string{es.proof(t, algES256, nil, valid(map[string]any{"htm": nil}))}, reason: proofClaimMissing("htm", "a string")},
		{name: "no htu", proofs: []string{es.proof(t, algES256, nil, valid(map[string]any{"htu": nil}))}, reason: proofClaimMissing("htu", "a string")},
		{name: "no iat", proofs: []string{es.proof(t, algES256, nil, valid(map[string]any{"iat": nil}))}, reason: proofClaimMissing("iat", "a number")},
		{name: "no ath", proofs: []string{es.proof(t, algES256, nil, valid(map[string]any{"ath": nil}))}, reason: proofClaimMissing("ath", "a string")},
		// 4. typ dpop+jwt
		{name: "no typ", proofs: []string{es.proof(t, algES256, map[string]any{"typ": nil}, valid(nil))}, reason: reasonProofType},
		{name: "typ JWT", proofs: []string{es.proof(t, algES256, map[string]any{"typ": "JWT"}, valid(nil))}, reason: reasonProofType},
		{name: "typ at+jwt (an access token for a proof)", proofs: []string{es.proof(t, algES256, map[string]any{"typ": "at+jwt"}, valid(nil))}, reason: reasonProofType},
		// 5. an asymmetric alg the server lists
		{name: "alg none", proofs: []string{es.proof(t, "none", nil, valid(nil))}, reason: reasonProofAlgorithm},
		{name: "alg HS256 (the public key as the secret)", proofs: []string{es.proof(t, "HS256", nil, valid(nil))}, reason: reasonProofAlgorithm},
		{name: "alg ES384, which the server does not list", proofs: []string{es.proof(t, algES256, map[string]any{"alg": "ES384"}, valid(nil))}, reason: reasonProofAlgorithm},
		{name: "EdDSA where only ES256 is listed", gate: esOnly, proofs: []string{ed.proof(t, algEdDSA, nil, valid(nil))}, reason: reasonProofAlgorithm},
		{name: "critical header parameters", proofs: []string{es.proof(t, algES256, map[string]any{"crit": []string{"x"}, "x": 1}, valid(nil))}, reason: reasonProofCritical},
		// 6. the signature verifies with the jwk
		{name: "signed by another key than its jwk", proofs: []string{other.proof(t, algES256, map[string]any{"jwk": es.publicJWK()}, valid(nil))}, reason: reasonProofSignature},
		{name: "claims changed under the signature", proofs: []string{tampered(es.proof(t, algES256, nil, valid(nil)))}, reason: reasonProofSignature},
		{name: "no signature", proofs: []string{strings.TrimRight(es.proof(t, algES256, nil, valid(nil)), "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")}, reason: reasonProofSignature},
		{name: "no jwk", proofs: []string{es.proof(t, algES256, map[string]any{"jwk": nil}, valid(nil))}, reason: reasonProofKey},
		{name: "a jwk that is not an object", proofs: []string{es.proof(t, algES256, map[string]any{"jwk": "key"}, valid(nil))}, reason: reasonProofKey},
		{name: "an RSA alg with an EC jwk", proofs: []string{es.proof(t, algES256, map[string]any{"alg": algRS256}, valid(nil))}, reason: reasonProofKey},
		{name: "a jwk whose alg is another", proofs: []string{rs.proof(t, algRS256, map[string]any{"jwk": mergeJWK(rs.publicJWK(), "alg", algPS256)}, valid(nil))}, reason: reasonProofKey},
		{name: "an RSA jwk of 8192 bits", proofs: []string{rs.proof(t, algRS256, map[string]any{"jwk": mergeJWK(rs.publicJWK(), "n", encodeB64URL(bigModulus))}, valid(nil))}, reason: reasonProofKey},
		{name: "a jwk of another curve", proofs: []string{es.proof(t, algES256, map[string]any{"jwk": mergeJWK(es.publicJWK(), "crv", "P-384")}, valid(nil))}, reason: reasonProofKey},
		// 7. no private key in the jwk
		{name: "a jwk with its private key", proofs: []string{es.proof(t, algES256, map[string]any{"jwk": withD}, valid(nil))}, reason: reasonProofPrivateKey},
		{name: "a jwk with a symmetric key", proofs: []string{es.proof(t, algES256, map[string]any{"jwk": mergeJWK(es.publicJWK(), "k", "c2VjcmV0")}, valid(nil))}, reason: reasonProofPrivateKey},
		// 8. htm is the request's method
		{name: "htm of another method", method: http.MethodGet, proofs: []string{es.proof(t, algES256, nil, valid(nil))}, reason: reasonProofMethod},
		{name: "htm in lower case", proofs: []string{es.proof(t, algES256, nil, valid(map[string]any{"htm": "post"}))}, reason: reasonProofMethod},
		// 9. htu is the request's URL, normalized, query and fragment ignored
		{name: "htu with a query and a fragment", proofs: []string{es.proof(t, algES256, nil, valid(map[string]any{"htu": dpopTestURI + "?x=1#y"}))}},
		{name: "htu with the default port, upper case", proofs: []string{es.proof(t, algES256, nil, valid(map[string]any{"htu": "HTTPS://MCP.Example.TEST:443/mcp"}))}},
		{name: "htu with dot segments and encoded unreserved characters", proofs: []string{es.proof(t, algES256, nil, valid(map[string]any{"htu": "https://mcp.example.test/a/../%6Dcp"}))}},
		{name: "htu of another host", proofs: []string{es.proof(t, algES256, nil, valid(map[string]any{"htu": "https://evil.example/mcp"}))}, reason: reasonProofURL},
		{name: "htu of another path", proofs: []string{es.proof(t, algES256, nil, valid(map[string]any{"htu": "https://mcp.example.test/mcp/other"}))}, reason: reasonProofURL},
		{name: "htu of another scheme", proofs: []string{es.proof(t, algES256, nil, valid(map[string]any{"htu": "http://mcp.example.test/mcp"}))}, reason: reasonProofURL},
		{name: "htu of another port", proofs: []string{es.proof(t, algES256, nil, valid(map[string]any{"htu": "https://mcp.example.test:8443/mcp"}))}, reason: reasonProofURL},
		{name: "htu with a path only", proofs: []string{es.proof(t, algES256, nil, valid(map[string]any{"htu": "/mcp"}))}, reason: reasonProofURL},
		{name: "htu with user information", proofs: []string{es.proof(t, algES256, nil, valid(map[string]any{"htu": "https://u@mcp.example.test/mcp"}))}, reason: reasonProofURL},
		// 11. iat within the window
		{name: "iat at the window's past edge", proofs: []string{es.proof(t, algES256, nil, valid(map[string]any{"iat": now.Add(-DefaultDPoPProofWindow).Unix()}))}},
		{name: "iat at the window's future edge", proofs: []string{es.proof(t, algES256, nil, valid(map[string]any{"iat": now.Add(DefaultDPoPProofWindow).Unix()}))}},
		{name: "iat too old", proofs: []string{es.proof(t, algES256, nil, valid(map[string]any{"iat": now.Add(-DefaultDPoPProofWindow - time.Second).Unix()}))}, reason: reasonProofTime},
		{name: "iat too far in the future", proofs: []string{es.proof(t, algES256, nil, valid(map[string]any{"iat": now.Add(DefaultDPoPProofWindow + time.Second).Unix()}))}, reason: reasonProofTime},
		// 12. ath is the hash of the access token
		{name: "ath of another token", proofs: []string{es.proof(t, algES256, nil, valid(map[string]any{"ath": accessTokenHash("another-token")}))}, reason: reasonProofTokenHash},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gate := tt.gate
			if gate == nil {
				gate = d
			}
			method := tt.method
			if method == "" {
				method = http.MethodPost
			}
			r := httptest.NewRequest(method, "http://127.0.0.1:8080/mcp?session=x", nil)
			for _, p := range tt.proofs {
				r.Header.Add("dpop", p) // any case: header names are not
			}
			proof, refusal := gate.checkProof(r, token)
			switch {
			case tt.reason == "" && refusal != nil:
				t.Fatalf("refused: %+v", refusal)
			case tt.reason == "" && proof.thumbprint == "":
				t.Fatal("passed without a thumbprint")
			case tt.reason != "" && refusal == nil:
				t.Fatalf("passed, want %q", tt.reason)
			case tt.reason != "" && (refusal.reason != tt.reason || refusal.code != errorCodeInvalidDPoP || refusal.status != http.StatusUnauthorized):
				t.Fatalf("refused %+v, want 401 invalid_dpop_proof %q", refusal, tt.reason)
			}
		})
	}
}

// mergeJWK returns jwk with one member set.
func mergeJWK(jwk map[string]string, name, value string) map[string]string {
	out := map[string]string{name: value}
	for k, v := range jwk {
		if k != name {
			out[k] = v
		}
	}
	return out
}

// TestDPoPNonces: with a nonce key, a proof must carry a nonce the server
// (or another sharing its key) issued within the window; otherwise it is
// refused use_dpop_nonce.
func TestDPoPNonces(t *testing.T) {
	key := []byte(strings.Repeat("k", minDPoPNonceKeyBytes))
	clock := newTestClock()
	d := newTestDPoPGate(t, DPoPOptions{NonceKey: key}, clock, nil)
	replica := newTestDPoPGate(t, DPoPOptions{NonceKey: key}, clock, nil)
	stranger := newTestDPoPGate(t, DPoPOptions{NonceKey: []byte(strings.Repeat("x", minDPoPNonceKeyBytes))}, clock, nil)
	es := newTestKey(t, "es", algES256)
	const token = "tok"
	issued := d.nonceAt(clock.Now())
	if again := d.nonceAt(clock.Now()); again != issued {
		t.Fatalf("two nonces within a granule: %s, %s", issued, again)
	}
	if len(issued) != 32 || !isScopeToken(issued) {
		t.Fatalf("nonce %q is not 32 NQCHARs", issued)
	}
	check := func(nonce any) *authRefusal {
		t.Helper()
		r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		r.Header.Set(headerDPoP, es.proof(t, algES256, nil, proofClaims(http.MethodPost, dpopTestURI, token, clock.Now(), map[string]any{"nonce": nonce})))
		_, refusal := d.checkProof(r, token)
		return refusal
	}
	if refusal := check(issued); refusal != nil {
		t.Fatalf("the nonce issued: %+v", refusal)
	}
	if refusal := check(replica.nonceAt(clock.Now())); refusal != nil {
		t.Fatalf("a replica's nonce: %+v", refusal)
	}
	clock.advance(DefaultDPoPProofWindow - dpopNonceTimeGranularity)
	if refusal := check(issued); refusal != nil {
		t.Fatalf("a nonce within the window: %+v", refusal)
	}
	stale := issued
	clock.advance(dpopNonceTimeGranularity + time.Second)
	for _, tt := range []struct {
		name  string
		nonce any
	}{
		{"no nonce", nil},
		{"a nonce older than the window", stale},
		{"a nonce of another key", stranger.nonceAt(clock.Now())},
		{"a nonce made up", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"},
		{"a nonce from the window's future", d.nonceAt(clock.Now().Add(DefaultDPoPProofWindow + dpopNonceTimeGranularity))},
	} {
		refusal := check(tt.nonce)
		if refusal == nil || refusal.code != errorCodeUseDPoPNonce || refusal.status != http.StatusUnauthorized {
			t.Errorf("%s: %+v, want 401 use_dpop_nonce", tt.name, refusal)
		}
	}
}

// TestDPoPBinding: the cnf claims a token may carry, and what the gate
// makes of them.
func TestDPoPBinding(t *testing.T) {
	tests := []struct {
		cnf       string
		jkt       string
		checkable bool
	}{
		{``, "", true},
		{`{"jkt":"` + testThumbprint + `"}`, testThumbprint, true},
		{`{"jkt":"x"}`, "", false},
		{`{"jkt":"` + testThumbprint + `=="}`, "", false},
		{`{"jkt":7}`, "", false},
		{`{"x5t#S256":"` + testThumbprint + `"}`, "", false},
		{`{"jkt":"` + testThumbprint + `","x5t#S256":"x"}`, "", false},
		{`{}`, "", false},
		{`"` + testThumbprint + `"`, "", false},
		{`null`, "", false},
	}
	for _, tt := range tests {
		var raw json.RawMessage
		if tt.cnf != "" {
			raw = json.RawMessage(tt.cnf)
		}
		jkt, ok := dpopBinding(raw)
		claims := `{"sub":"a"}`
		if tt.cnf != "" {
			claims = `{"sub":"a","cnf":` + tt.cnf + `}`
		}
		pjkt, pok := principalBindingKey(&Principal{Subject: "a", Claims: json.RawMessage(claims)})
		if jkt != tt.jkt || ok != tt.checkable || pjkt != jkt || pok != ok {
			t.Errorf("cnf %s: %q %v (from the principal: %q %v), want %q %v", tt.cnf, jkt, ok, pjkt, pok, tt.jkt, tt.checkable)
		}
	}
}

// TestDPoPOptionsValidation: invalid DPoPOptions are errors naming the
// option.
func TestDPoPOptionsValidation(t *testing.T) {
	rt := newTestRuntime(t, testOptions())
	tests := []struct {
		name string
		opts DPoPOptions
		want string
	}{
		{"an option without a mode", DPoPOptions{MaxProofs: 10}, "DPoP.Mode is off"},
		{"an unknown mode", DPoPOptions{Mode: 7}, "Mode DPoPMode(7) is not"},
		{"no algorithm", DPoPOptions{Mode: DPoPAllow, Algorithms: []string{}}, "must name at least one"},
		{"alg none", DPoPOptions{Mode: DPoPAllow, Algorithms: []string{"none"}}, `"none" is not one of ES256, EdDSA, PS256, RS256`},
		{"alg HS256", DPoPOptions{Mode: DPoPAllow, Algorithms: []string{"HS256"}}, `"HS256" is not one of`},
		{"an algorithm twice", DPoPOptions{Mode: DPoPAllow, Algorithms: []string{algES256, algES256}}, "named twice"},
		{"a negative window", DPoPOptions{Mode: DPoPAllow, ProofWindow: -time.Second}, "ProofWindow must be >= 0 and <= 10m0s, got -1s"},
		{"a window too long", DPoPOptions{Mode: DPoPAllow, ProofWindow: time.Hour}, "ProofWindow must be >= 0 and <= 10m0s, got 1h0m0s"},
		{"unlimited proofs", DPoPOptions{Mode: DPoPAllow, MaxProofs: Unlimited}, "MaxProofs must be >= 0, got -1"},
		{"a negative share", DPoPOptions{Mode: DPoPAllow, MaxClientProofs: -3}, "MaxClientProofs must be >= 0 or Unlimited, got -3"},
		{"a short nonce key", DPoPOptions{Mode: DPoPAllow, NonceKey: []byte("short")}, "NonceKey must hold at least 32 bytes"},
	}
	for _, tt := range tests {
		opts := &AuthOptions{Resource: testResource, AuthorizationServers: []string{"https://as.example.test"}, Verifier: testPrincipals, DPoP: tt.opts}
		if _, err := NewHTTPHandler(rt, HTTPOptions{Auth: opts}); err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "HTTPOptions.Auth.DPoP.") {
			t.Errorf("%s: err = %v, want one naming HTTPOptions.Auth.DPoP and containing %q", tt.name, err, tt.want)
		}
	}
	d := newTestDPoPGate(t, DPoPOptions{MaxClientProofs: Unlimited}, newTestClock(), nil)
	if d.window != DefaultDPoPProofWindow || d.ledger.max != DefaultDPoPMaxProofs || d.ledger.perClient != DefaultDPoPMaxProofs || d.algsParam != `"ES256 EdDSA PS256 RS256"` {
		t.Fatalf("defaults: window %v, proofs %d, per client %d, algs %s", d.window, d.ledger.max, d.ledger.perClient, d.algsParam)
	}
	if d := newTestDPoPGate(t, DPoPOptions{MaxProofs: 100}, newTestClock(), nil); d.ledger.perClient != 25 {
		t.Fatalf("a client's default share of 100 proofs: %d, want 25", d.ledger.perClient)
	}
}

// TestNormalizeHTTPURI: how htu and the request's URL are compared
// (RFC 9449 §4.3 with RFC 3986 §6.2.2 and §6.2.3).
func TestNormalizeHTTPURI(t *testing.T) {
	tests := []struct{ in, want string }{
		{"https://mcp.example.test/mcp", "https://mcp.example.test/mcp"},
		{"HTTPS://MCP.Example.Test/mcp", "https://mcp.example.test/mcp"},
		{"https://mcp.example.test:443/mcp", "https://mcp.example.test/mcp"},
		{"http://mcp.example.test:80/mcp", "http://mcp.example.test/mcp"},
		{"http://mcp.example.test:443/mcp", "http://mcp.example.test:443/mcp"},
		{"https://mcp.example.test:/mcp", "https://mcp.example.test/mcp"},
		{"https://[::1]:443/mcp", "https://[::1]/mcp"},
		{"https://mcp.example.test", "https://mcp.example.test/"},
		{"https://mcp.example.test/mcp?a=1#f", "https://mcp.example.test/mcp"},
		{"https://mcp.example.test/mcp#f?a", "https://mcp.example.test/mcp"},
		{"https://mcp.example.test/%6D%63p", "https://mcp.example.test/mcp"},
		{"https://mcp.example.test/a%2fb%c3%a9", "https://mcp.example.test/a%2Fb%C3%A9"},
		{"https://mcp.example.test/a/b/../c", "https://mcp.example.test/a/c"},
		{"https://mcp.example.test/a/.", "https://mcp.example.test/a/"},
		{"https://mcp.example.test/a/..", "https://mcp.example.test/"},
		{"https://mcp.example.test/..", "https://mcp.example.test/"},
		{"https://mcp.example.test/a/../../b", "https://mcp.example.test/b"},
		{"https://mcp.example.test/a/b/c/./../../g", "https://mcp.example.test/a/g"},
		{"https://mcp.example.test/%2E%2E/mcp", "https://mcp.example.test/mcp"},
		{"https://mcp.example.test/a//b", "https://mcp.example.test/a//b"},
		{"https://mcp.example.test/mcp/", "https://mcp.example.test/mcp/"},
		{"/mcp", ""},
		{"mcp.example.test/mcp", ""},
		{"ftp://mcp.example.test/mcp", ""},
		{"https://user@mcp.example.test/mcp", ""},
		{"https://:443/mcp", ""},
		{"http://:", ""},
		{"https://mcp.example.test/%zz", ""},
		{"", ""},
	}
	for _, tt := range tests {
		got, ok := normalizeHTTPURI(tt.in)
		if got != tt.want || ok != (tt.want != "") {
			t.Errorf("%q: %q %v, want %q", tt.in, got, ok, tt.want)
		}
	}
}

// TestDPoPHowToNamesEveryRefusal: docs/how-to/dpop.md quotes every reason
// the gate gives for refusing a DPoP request, and every error code.
func TestDPoPHowToNamesEveryRefusal(t *testing.T) {
	page, err := os.ReadFile(filepath.Join("docs", "how-to", "dpop.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(strings.Fields(string(page)), " ")
	for _, s := range []string{
		reasonProofMissing, reasonProofRepeated, reasonProofMalformed, reasonProofType, reasonProofAlgorithm, reasonProofCritical,
		reasonProofKey, reasonProofPrivateKey, reasonProofSignature, reasonProofMethod, reasonProofURL, reasonProofTime,
		reasonProofTokenHash, reasonProofReplayed, reasonProofNonce, reasonProofNonceType,
		proofClaimMissing("jti", "a string"), proofClaimMissing("iat", "a number"),
		reasonBoundAsBearer, reasonNotBound, reasonOtherKey, reasonDPoPOnly, reasonProofsFull, reasonClientProofsFull,
		errorCodeInvalidDPoP, errorCodeUseDPoPNonce, errorCodeInvalidToken, headerDPoPNonce,
		`algs="ES256 EdDSA PS256 RS256"`,
	} {
		if !strings.Contains(text, s) {
			t.Errorf("docs/how-to/dpop.md does not say %q", s)
		}
	}
}
