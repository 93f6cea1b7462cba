package main

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// newTestJWTVerifier verifies tokens of iss for testResource on clock.
func newTestJWTVerifier(t *testing.T, iss *testIssuer, clock *testClock, change func(*JWTVerifierOptions)) *JWTVerifier {
	t.Helper()
	opts := JWTVerifierOptions{Issuer: iss.url, Resource: testResource, Logger: quietLogger()}
	if change != nil {
		change(&opts)
	}
	v, err := NewJWTVerifier(opts)
	if err != nil {
		t.Fatal(err)
	}
	return clock.install(v)
}

// refusal returns the reason VerifyToken gave, "" when it accepted.
func refusal(t *testing.T, v *JWTVerifier, token string) string {
	t.Helper()
	p, err := v.VerifyToken(context.Background(), token)
	if err == nil {
		if p == nil || p.ID() == "" {
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

// TestJWTVerifierAttacks: every token a resource server must refuse is
// refused for its reason, and the valid ones of each algorithm pass.
func TestJWTVerifierAttacks(t *testing.T) {
	es, ed := newTestKey(t, "es", algES256), newTestKey(t, "ed", algEdDSA)
	rs, ps := newTestKey(t, "rs", algRS256), newTestKey(t, "ps", algPS256)
	other := newTestKey(t, "es", algES256) // another key under a published kid
	iss := newTestIssuer(t, es, ed, rs, ps)
	clock := newTestClock()
	v := newTestJWTVerifier(t, iss, clock, nil)
	now := clock.Now().Unix()
	valid := iss.claims(nil)
	// tamper changes one character of a token's part to another of the
	// base64url alphabet, so the part still decodes (an ES256 signature is
	// random: flipping a bit of it could leave the alphabet).
	tamper := func(token string, part int) string {
		parts := strings.Split(token, ".")
		b := []byte(parts[part])
		if i := len(b) / 2; b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
		parts[part] = string(b)
		return strings.Join(parts, ".")
	}
	tests := []struct {
		name, token, want string
	}{
		{"ES256", es.sign(t, algES256, nil, valid), ""},
		{"EdDSA", ed.sign(t, algEdDSA, nil, valid), ""},
		{"RS256", rs.sign(t, algRS256, nil, valid), ""},
		{"PS256", ps.sign(t, algPS256, nil, valid), ""},
		{"audience in an array", es.sign(t, algES256, nil, iss.claims(map[string]any{"aud": []string{"https://other.example", testResource}})), ""},
		{"typ application/at+jwt", es.sign(t, algES256, map[string]any{"typ": "application/at+jwt"}, valid), ""},
		{"expired within the skew", es.sign(t, algES256, nil, iss.claims(map[string]any{"exp": now - 30})), ""},
		{"not yet valid within the skew", es.sign(t, algES256, nil, iss.claims(map[string]any{"nbf": now + 30})), ""},
		{"only a client id", es.sign(t, algES256, nil, iss.claims(map[string]any{"sub": nil})), ""},
		{"no kid: every key is tried", es.sign(t, algES256, map[string]any{"kid": nil}, valid), ""},

		{"another audience", es.sign(t, algES256, nil, iss.claims(map[string]any{"aud": "https://other.example/mcp"})), reasonAudience},
		{"audience with a trailing slash", es.sign(t, algES256, nil, iss.claims(map[string]any{"aud": testResource + "/"})), reasonAudience},
		{"no audience", es.sign(t, algES256, nil, iss.claims(map[string]any{"aud": nil})), reasonAudience},
		{"another issuer", es.sign(t, algES256, nil, iss.claims(map[string]any{"iss": "https://evil.example"})), reasonIssuer},
		{"issuer with a trailing slash", es.sign(t, algES256, nil, iss.claims(map[string]any{"iss": iss.url + "/"})), reasonIssuer},
		{"expired", es.sign(t, algES256, nil, iss.claims(map[string]any{"exp": now - 61})), reasonExpired},
		{"no exp", es.sign(t, algES256, nil, iss.claims(map[string]any{"exp": nil})), reasonExpired},
		{"exp not a number", es.sign(t, algES256, nil, iss.claims(map[string]any{"exp": "tomorrow"})), reasonMalformed},
		{"not yet valid", es.sign(t, algES256, nil, iss.claims(map[string]any{"nbf": now + 120})), reasonNotYetValid},
		{"issued in the future", es.sign(t, algES256, nil, iss.claims(map[string]any{"iat": now + 120})), reasonNotYetValid},
		{"alg none", es.sign(t, "none", nil, valid), reasonAlgorithm},
		{"HMAC signed with the RSA public key", rs.sign(t, "HS256", nil, valid), reasonAlgorithm},
		{"HMAC signed with the EC public key", es.sign(t, "HS256", nil, valid), reasonAlgorithm},
		{"tampered signature", tamper(es.sign(t, algES256, nil, valid), 2), reasonSignature},
		{"tampered claims", claimsSwapped(t, rs.sign(t, algRS256, nil, valid), `"sub":"alice"`, `"sub":"admin"`), reasonSignature},
		{"claims swapped under a valid signature", swapClaims(t, es.sign(t, algES256, nil, valid), iss.claims(map[string]any{"sub": "mallory"})), reasonSignature},
		{"signed by another key under a published kid", other.sign(t, algES256, nil, valid), reasonSignature},
		{"unknown kid", es.sign(t, algES256, map[string]any{"kid": "nope"}, valid), reasonNoKey},
		{"RS256 under the PS256 key", ps.sign(t, algRS256, nil, valid), reasonNoKey},
		{"PS256 under the RS256 key", rs.sign(t, algPS256, nil, valid), reasonNoKey},
		{"ES256 under the Ed25519 key's kid", es.sign(t, algES256, map[string]any{"kid": "ed"}, valid), reasonNoKey},
		{"typ JWT", es.sign(t, algES256, map[string]any{"typ": "JWT"}, valid), reasonType},
		{"no typ", es.sign(t, algES256, map[string]any{"typ": nil}, valid), reasonType},
		{"typ of an ID token's cousin", es.sign(t, algES256, map[string]any{"typ": "logout+jwt"}, valid), reasonType},
		{"critical header", es.sign(t, algES256, map[string]any{"crit": []string{"exp"}}, valid), reasonCritical},
		{"DPoP-bound (cnf.jkt)", es.sign(t, algES256, nil, iss.claims(map[string]any{"cnf": map[string]string{"jkt": testThumbprint}})), ""},
		{"cnf.jkt not a thumbprint", es.sign(t, algES256, nil, iss.claims(map[string]any{"cnf": map[string]string{"jkt": "x"}})), reasonBound},
		{"sender-constrained by a certificate (cnf.x5t#S256)", es.sign(t, algES256, nil, iss.claims(map[string]any{"cnf": map[string]string{"x5t#S256": testThumbprint}})), reasonBound},
		{"cnf not an object", es.sign(t, algES256, nil, iss.claims(map[string]any{"cnf": testThumbprint})), reasonBound},
		{"neither sub nor client_id", es.sign(t, algES256, nil, iss.claims(map[string]any{"sub": nil, "client_id": nil})), reasonNoSubject},
		{"two parts", "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJhIn0", reasonMalformed},
		{"padded base64", strings.Replace(es.sign(t, algES256, nil, valid), ".", "=.", 1), reasonMalformed},
		{"repeated claim", rawToken(t, es, `{"alg":"ES256","typ":"at+jwt","kid":"es"}`, `{"sub":"alice","sub":"admin"}`), reasonMalformed},
		{"too long", strings.Repeat("a", maxJWTBytes+1), reasonMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := refusal(t, v, tt.token); got != tt.want {
				t.Fatalf("reason %q, want %q", got, tt.want)
			}
		})
	}
	if n := iss.jwksFetches.Load(); n != 1 {
		t.Fatalf("%d JWKS fetches, want 1 (the unknown kids came within the refresh interval)", n)
	}
}

// swapClaims replaces the claims of a signed token, keeping its header and
// signature.
func swapClaims(t *testing.T, token string, claims map[string]any) string {
	parts := strings.Split(token, ".")
	return parts[0] + "." + b64JSON(t, claims) + "." + parts[2]
}

// rawToken signs header and claims given as JSON text with k.
func rawToken(t *testing.T, k *testKey, header, claims string) string {
	t.Helper()
	signed := k.sign(t, k.alg, nil, map[string]any{})
	parts := strings.Split(signed, ".")
	return encodeB64URL([]byte(header)) + "." + encodeB64URL([]byte(claims)) + "." + parts[2]
}

// TestJWTVerifierPrincipal: the principal carries the token's claims.
func TestJWTVerifierPrincipal(t *testing.T) {
	es := newTestKey(t, "es", algES256)
	iss := newTestIssuer(t, es)
	v := newTestJWTVerifier(t, iss, newTestClock(), nil)
	p, err := v.VerifyToken(context.Background(), es.sign(t, algES256, nil, iss.claims(map[string]any{"tenant": "acme"})))
	if err != nil {
		t.Fatal(err)
	}
	if p.Subject != "alice" || p.ClientID != "app" || p.Issuer != iss.url || strings.Join(p.Scopes, " ") != "mcp:read mcp:admin" ||
		p.ExpiresAt.IsZero() || !strings.Contains(string(p.Claims), `"tenant":"acme"`) {
		t.Fatalf("principal %+v", p)
	}
}

// TestJWTVerifierAcceptUntypedTokens: the option admits typ JWT and none,
// never another type.
func TestJWTVerifierAcceptUntypedTokens(t *testing.T) {
	es := newTestKey(t, "es", algES256)
	iss := newTestIssuer(t, es)
	v := newTestJWTVerifier(t, iss, newTestClock(), func(o *JWTVerifierOptions) { o.AcceptUntypedTokens = true })
	for typ, want := range map[any]string{"JWT": "", nil: "", "at+jwt": "", "logout+jwt": reasonType} {
		if got := refusal(t, v, es.sign(t, algES256, map[string]any{"typ": typ}, iss.claims(nil))); got != want {
			t.Errorf("typ %v: %q, want %q", typ, got, want)
		}
	}
}

// TestJWTVerifierKeyRotation: the issuer rotates its key without the server
// restarting; a token of the new key is refused only until the refresh
// interval has passed since the last fetch, then accepted, and the old key's
// tokens stop passing once it is withdrawn.
func TestJWTVerifierKeyRotation(t *testing.T) {
	oldKey, newKey := newTestKey(t, "k1", algES256), newTestKey(t, "k2", algEdDSA)
	iss := newTestIssuer(t, oldKey)
	clock := newTestClock()
	v := newTestJWTVerifier(t, iss, clock, nil)
	oldToken, newToken := oldKey.sign(t, algES256, nil, iss.claims(nil)), newKey.sign(t, algEdDSA, nil, iss.claims(nil))
	if got := refusal(t, v, oldToken); got != "" {
		t.Fatalf("old key before the rotation: %q", got)
	}
	iss.publish(newKey)
	clock.advance(DefaultJWKSRefreshInterval - time.Second)
	if got := refusal(t, v, newToken); got != reasonNoKey {
		t.Fatalf("new key within the interval: %q, want %q", got, reasonNoKey)
	}
	if n := iss.jwksFetches.Load(); n != 1 {
		t.Fatalf("%d fetches within the interval, want 1", n)
	}
	clock.advance(time.Second)
	if got := refusal(t, v, newToken); got != "" {
		t.Fatalf("new key after the interval: %q", got)
	}
	if got := refusal(t, v, oldToken); got != reasonNoKey {
		t.Fatalf("withdrawn key: %q, want %q", got, reasonNoKey)
	}
	if n := iss.jwksFetches.Load(); n != 2 {
		t.Fatalf("%d fetches, want 2", n)
	}
}

// waitForKeyFetch waits for the fetch of v's keys under way, if any.
func waitForKeyFetch(v *JWTVerifier) {
	v.keys.mu.Lock()
	done := v.keys.inflight
	v.keys.mu.Unlock()
	if done != nil {
		<-done
	}
}

// TestJWTVerifierRefetchesOldKeys: keys past MaxKeyAge are still used while
// they are fetched again in the background; a key the issuer withdrew then
// stops passing.
func TestJWTVerifierRefetchesOldKeys(t *testing.T) {
	k1, k2 := newTestKey(t, "k1", algES256), newTestKey(t, "k2", algES256)
	iss := newTestIssuer(t, k1, k2)
	clock := newTestClock()
	v := newTestJWTVerifier(t, iss, clock, nil)
	token := k1.sign(t, algES256, nil, iss.claims(nil))
	if got := refusal(t, v, token); got != "" {
		t.Fatal(got)
	}
	iss.publish(k2) // k1 withdrawn
	clock.advance(DefaultJWKSMaxAge - time.Second)
	if got := refusal(t, v, token); got != "" || iss.jwksFetches.Load() != 1 {
		t.Fatalf("within the age: %q after %d fetches", got, iss.jwksFetches.Load())
	}
	clock.advance(2 * time.Second)
	if got := refusal(t, v, token); got != "" {
		t.Fatalf("past the age, while refetching: %q", got)
	}
	waitForKeyFetch(v)
	if got := refusal(t, v, token); got != reasonNoKey {
		t.Fatalf("withdrawn key after the refetch: %q, want %q", got, reasonNoKey)
	}
}

// TestJWTVerifierUnknownKidFlood: many tokens naming unknown keys, at once
// and in a row, cost one fetch per refresh interval; verifiers waiting for
// a fetch share it.
func TestJWTVerifierUnknownKidFlood(t *testing.T) {
	es := newTestKey(t, "es", algES256)
	iss := newTestIssuer(t, es)
	clock := newTestClock()
	v := newTestJWTVerifier(t, iss, clock, nil)
	if got := refusal(t, v, es.sign(t, algES256, nil, iss.claims(nil))); got != "" {
		t.Fatal(got)
	}
	clock.advance(DefaultJWKSRefreshInterval)
	release := iss.holdJWKS()
	var wg sync.WaitGroup
	reasons := make(chan string, 100)
	for i := range 100 {
		wg.Go(func() {
			_, err := v.VerifyToken(context.Background(), es.sign(t, algES256, map[string]any{"kid": fmt.Sprint("forged-", i)}, iss.claims(nil)))
			te, _ := errors.AsType[*TokenError](err)
			if te == nil {
				reasons <- fmt.Sprint("accepted or not a TokenError: ", err)
				return
			}
			reasons <- te.Reason
		})
	}
	release()
	wg.Wait()
	close(reasons)
	for r := range reasons {
		if r != reasonNoKey {
			t.Fatalf("reason %q, want %q", r, reasonNoKey)
		}
	}
	if n := iss.jwksFetches.Load(); n != 2 {
		t.Fatalf("%d fetches for 100 unknown kids, want 2 (the first load and one refetch)", n)
	}
}

// TestJWTVerifierSharesOneFetch: verifiers that need a key being fetched
// wait for that one fetch and all pass.
func TestJWTVerifierSharesOneFetch(t *testing.T) {
	es := newTestKey(t, "es", algES256)
	iss := newTestIssuer(t, es)
	v := newTestJWTVerifier(t, iss, newTestClock(), nil)
	release := iss.holdJWKS()
	token := es.sign(t, algES256, nil, iss.claims(nil))
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for range 20 {
		wg.Go(func() {
			_, err := v.VerifyToken(context.Background(), token)
			errs <- err
		})
	}
	release()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := iss.jwksFetches.Load(); n != 1 {
		t.Fatalf("%d fetches, want 1", n)
	}
}

// TestJWTVerifierIssuerDown: an issuer that cannot be reached leaves the
// keys held in use (also past their age) and refuses the rest with 401,
// never 5xx; before any key was fetched, every token is refused 401.
func TestJWTVerifierIssuerDown(t *testing.T) {
	es := newTestKey(t, "es", algES256)
	iss := newTestIssuer(t, es)
	clock := newTestClock()
	v := newTestJWTVerifier(t, iss, clock, nil)
	token := es.sign(t, algES256, nil, iss.claims(nil))
	if got := refusal(t, v, token); got != "" {
		t.Fatal(got)
	}
	iss.down.Store(true)
	clock.advance(DefaultJWKSMaxAge + time.Minute)
	if got := refusal(t, v, token); got != "" {
		t.Fatalf("a held key past its age while the issuer is down: %q", got)
	}
	waitForKeyFetch(v)
	if got := refusal(t, v, token); got != "" {
		t.Fatalf("a held key after the failed refetch: %q", got)
	}
	if n := iss.jwksFetches.Load(); n != 2 {
		t.Fatalf("%d fetches, want 2 (the refetch of keys past their age)", n)
	}
	clock.advance(DefaultJWKSRefreshInterval)
	if got := refusal(t, v, es.sign(t, algES256, map[string]any{"kid": "new"}, iss.claims(nil))); got != reasonNoKey {
		t.Fatalf("an unknown key while the issuer is down: %q", got)
	}

	// Over HTTP, with an issuer that never answered.
	gone := newTestIssuer(t, es)
	gone.srv.Close()
	s := newHTTPTestServer(t, nil, HTTPOptions{Logger: quietLogger(), Auth: &AuthOptions{
		Resource: testResource, AuthorizationServers: []string{gone.url},
		Verifier: newTestJWTVerifier(t, gone, newTestClock(), nil),
	}})
	resp := s.post(bearer(es.sign(t, algES256, nil, gone.claims(nil)), stateless("tools/list", "")), `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+meta2026+`}}`)
	if readBody(t, resp); resp.StatusCode != http.StatusUnauthorized ||
		!strings.Contains(resp.Header.Get("WWW-Authenticate"), `error="invalid_token", error_description="`+reasonNoKey+`"`) {
		t.Fatalf("issuer never reached: status %d, WWW-Authenticate %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
}

// TestJWTVerifierDiscovery: keys are found through the issuer's metadata
// (RFC 8414 with the path inserted, else OpenID Connect Discovery); a
// document naming another issuer, or a jwks_uri over plain http elsewhere
// than loopback, is not used.
func TestJWTVerifierDiscovery(t *testing.T) {
	es := newTestKey(t, "es", algES256)
	keys := newTestIssuer(t, es) // serves /jwks
	tests := []struct {
		name, path, document, jwksURI, issuerSuffix string
		ok                                          bool
	}{
		{"RFC 8414 with a path", "/.well-known/oauth-authorization-server/tenant", "oauth", keys.url + "/jwks", "/tenant", true},
		{"OpenID Connect inserted", "/.well-known/openid-configuration/tenant", "oidc", keys.url + "/jwks", "/tenant", true},
		{"OpenID Connect appended", "/tenant/.well-known/openid-configuration", "oidc", keys.url + "/jwks", "/tenant", true},
		{"no path", "/.well-known/openid-configuration", "oidc", keys.url + "/jwks", "", true},
		{"another issuer named", "/.well-known/oauth-authorization-server", "evil", keys.url + "/jwks", "", false},
		{"jwks_uri over http", "/.well-known/oauth-authorization-server", "oauth", "http://keys.example/jwks", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var issuer string
			mux := http.NewServeMux()
			mux.HandleFunc("GET "+tt.path, func(w http.ResponseWriter, r *http.Request) {
				named := issuer
				if tt.document == "evil" {
					named = "https://evil.example"
				}
				fmt.Fprintf(w, `{"issuer":%q,"jwks_uri":%q}`, named, tt.jwksURI)
			})
			srv := newLoopbackServer(t, mux)
			issuer = srv + tt.issuerSuffix
			v, err := NewJWTVerifier(JWTVerifierOptions{Issuer: issuer, Resource: testResource, Logger: quietLogger()})
			if err != nil {
				t.Fatal(err)
			}
			claims := keys.claims(map[string]any{"iss": issuer})
			got := refusal(t, v, es.sign(t, algES256, nil, claims))
			if (got == "") != tt.ok {
				t.Fatalf("reason %q, want accepted %v", got, tt.ok)
			}
		})
	}
}

// TestNewJWTVerifierValidates: issuers and key URLs must be https but on
// loopback, and the limits stay within their bounds.
func TestNewJWTVerifierValidates(t *testing.T) {
	tests := []struct {
		name string
		opts JWTVerifierOptions
		want string
	}{
		{"http issuer", JWTVerifierOptions{Issuer: "http://as.example", Resource: testResource}, "must use https"},
		{"issuer with a fragment", JWTVerifierOptions{Issuer: "https://as.example#x", Resource: testResource}, "without query or fragment"},
		{"no resource", JWTVerifierOptions{Issuer: "https://as.example"}, "Resource"},
		{"http JWKS", JWTVerifierOptions{Issuer: "https://as.example", Resource: testResource, JWKSURL: "http://as.example/jwks"}, "JWKSURL"},
		{"skew too large", JWTVerifierOptions{Issuer: "https://as.example", Resource: testResource, ClockSkew: time.Hour}, "ClockSkew"},
		{"refresh too slow", JWTVerifierOptions{Issuer: "https://as.example", Resource: testResource, RefreshInterval: time.Minute}, "RefreshInterval"},
	}
	for _, tt := range tests {
		if _, err := NewJWTVerifier(tt.opts); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want an error containing %q", tt.name, err, tt.want)
		}
	}
	if _, err := NewJWTVerifier(JWTVerifierOptions{Issuer: "http://127.0.0.1:9", Resource: "http://localhost:8080/mcp", JWKSURL: "http://[::1]:9/jwks"}); err != nil {
		t.Fatalf("loopback http: %v", err)
	}
}

// TestParseJWKSLeavesOutUnusableKeys: keys for encryption, of other types,
// too small, off the curve or naming an algorithm their type does not fit
// are left out; a malformed document is an error.
func TestParseJWKSLeavesOutUnusableKeys(t *testing.T) {
	es := newTestKey(t, "es", algES256)
	rs := newTestKey(t, "rs", algRS256)
	jwk := func(base map[string]string, changes map[string]string) string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for k, v := range changes {
			if v == "" {
				delete(m, k)
			} else {
				m[k] = v
			}
		}
		return jsonText(t, m)
	}
	tests := []struct {
		name, key string
		usable    bool
	}{
		{"EC key", jwk(es.jwk, nil), true},
		{"RSA key without alg", jwk(rs.jwk, map[string]string{"alg": ""}), true},
		{"for encryption", jwk(es.jwk, map[string]string{"use": "enc"}), false},
		{"HMAC key", `{"kty":"oct","k":"c2VjcmV0","alg":"HS256"}`, false},
		{"P-384", jwk(es.jwk, map[string]string{"crv": "P-384"}), false},
		{"EC key naming RS256", jwk(es.jwk, map[string]string{"alg": "RS256"}), false},
		{"RSA key naming none", jwk(rs.jwk, map[string]string{"alg": "none"}), false},
		{"RSA 1024", jwk(rs.jwk, map[string]string{"n": encodeB64URL(append([]byte{0xc1}, make([]byte, 127)...))}), false},
		{"off the curve", jwk(es.jwk, map[string]string{"y": encodeB64URL(make([]byte, 32))}), false},
		{"key_ops sign only", strings.TrimSuffix(jwk(es.jwk, nil), "}") + `,"key_ops":["sign"]}`, false},
	}
	for _, tt := range tests {
		keys, err := parseJWKS([]byte(`{"keys":[` + tt.key + `]}`))
		if err != nil || (len(keys) == 1) != tt.usable {
			t.Errorf("%s: %d keys, %v; want usable %v", tt.name, len(keys), err, tt.usable)
		}
	}
	if _, err := parseJWKS([]byte(`{"keys":"x"}`)); err == nil {
		t.Error("a JWKS whose keys is not an array was accepted")
	}
}

// claimsSwapped returns token with old replaced by new in its claims, the
// header and signature kept: well-formed claims the signature does not
// cover.
func claimsSwapped(t *testing.T, token, old, new string) string {
	t.Helper()
	parts := strings.Split(token, ".")
	claims, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil || !strings.Contains(string(claims), old) {
		t.Fatalf("claims %s (%v) do not hold %s", claims, err, old)
	}
	parts[1] = encodeB64URL([]byte(strings.Replace(string(claims), old, new, 1)))
	return strings.Join(parts, ".")
}
