package main

import (
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"time"
)

// ExampleDPoPOptions: a resource server that takes DPoP-bound access
// tokens only, and the metadata it then publishes.
func ExampleDPoPOptions() {
	rt, err := NewRuntime(RuntimeOptions{ServerInfo: Implementation{Name: "notes", Version: "1.0.0"}})
	if err != nil {
		log.Fatal(err)
	}
	verifier, err := NewJWTVerifier(JWTVerifierOptions{Issuer: "https://auth.example.com", Resource: "https://mcp.example.com/mcp"})
	if err != nil {
		log.Fatal(err)
	}
	// region dpop-options
	h, err := NewHTTPHandler(rt, HTTPOptions{Auth: &AuthOptions{
		Resource:             "https://mcp.example.com/mcp",
		AuthorizationServers: []string{"https://auth.example.com"},
		Verifier:             verifier,
		DPoP:                 DPoPOptions{Mode: DPoPRequire},
	}})
	// endregion dpop-options
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close()
	path, metadata := h.ProtectedResourceMetadata()
	w := httptest.NewRecorder()
	metadata.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "http://127.0.0.1"+path, nil))
	fmt.Println(w.Body.String())
	w = httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", nil))
	fmt.Println(w.Code, w.Header().Get("WWW-Authenticate"))
	// Output:
	// {"resource":"https://mcp.example.com/mcp","authorization_servers":["https://auth.example.com"],"bearer_methods_supported":["header"],"dpop_signing_alg_values_supported":["ES256","EdDSA","PS256","RS256"],"dpop_bound_access_tokens_required":true}
	// 401 DPoP algs="ES256 EdDSA PS256 RS256", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
}

// newDPoPProof returns the DPoP proof of one request, signed with an ES256
// key: its header carries the public key, its claims a fresh jti, the
// request's method and URL (without query), the time, and the hash of the
// access token sent with it (none at the token endpoint).
func newDPoPProof(key *ecdsa.PrivateKey, method, url, accessToken string) (string, error) {
	// region dpop-proof
	b64 := base64.RawURLEncoding.EncodeToString
	point, err := key.PublicKey.Bytes() // 0x04, then X and Y
	if err != nil {
		return "", err
	}
	header, err := json.Marshal(map[string]any{"typ": "dpop+jwt", "alg": "ES256",
		"jwk": map[string]string{"kty": "EC", "crv": "P-256", "x": b64(point[1:33]), "y": b64(point[33:])}})
	if err != nil {
		return "", err
	}
	claims := map[string]any{"jti": rand.Text(), "htm": method, "htu": url, "iat": time.Now().Unix()}
	if accessToken != "" {
		hash := sha256.Sum256([]byte(accessToken))
		claims["ath"] = b64(hash[:])
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	input := b64(header) + "." + b64(payload)
	digest := sha256.Sum256([]byte(input))
	r, s, err := ecdsa.Sign(rand.Reader, key, digest[:])
	if err != nil {
		return "", err
	}
	signature := append(r.FillBytes(make([]byte, 32)), s.FillBytes(make([]byte, 32))...)
	return input + "." + b64(signature), nil
	// endregion dpop-proof
}
