package main

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// testIssuer is an authorization server in the test process: it serves its
// RFC 8414 metadata and a JWKS the test changes, counts the JWKS fetches,
// can hold them (to line up concurrent verifiers) or be down, and signs
// tokens with keys the test generated.
type testIssuer struct {
	t   testing.TB
	srv *httptest.Server
	url string // the issuer identifier

	jwksFetches atomic.Int32
	down        atomic.Bool
	mu          sync.Mutex
	published   []*testKey    // what /jwks serves
	hold        chan struct{} // when set, /jwks waits for it to close
}

// testKey is a signing key of the test issuer.
type testKey struct {
	kid, alg string
	priv     crypto.Signer
	jwk      map[string]string // its public JWK
}

var (
	testRSAOnce sync.Once
	testRSAKey  *rsa.PrivateKey
)

// newTestKey generates a key for alg (RS256 and PS256 share one RSA key,
// generated once per test binary: RSA generation is slow under -race).
func newTestKey(t testing.TB, kid, alg string) *testKey {
	t.Helper()
	k := &testKey{kid: kid, alg: alg}
	b64 := base64.RawURLEncoding.EncodeToString
	switch alg {
	case algRS256, algPS256:
		testRSAOnce.Do(func() {
			var err error
			if testRSAKey, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
				panic(err)
			}
		})
		k.priv = testRSAKey
		k.jwk = map[string]string{"kty": "RSA", "n": b64(testRSAKey.N.Bytes()), "e": b64(big.NewInt(int64(testRSAKey.E)).Bytes())}
	case algES256:
		priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		point, err := priv.PublicKey.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		k.priv = priv
		k.jwk = map[string]string{"kty": "EC", "crv": "P-256", "x": b64(point[1:33]), "y": b64(point[33:])}
	case algEdDSA:
		pub, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		k.priv = priv
		k.jwk = map[string]string{"kty": "OKP", "crv": "Ed25519", "x": b64(pub)}
	default:
		t.Fatalf("no test key for %s", alg)
	}
	k.jwk["kid"], k.jwk["alg"], k.jwk["use"] = kid, alg, "sig"
	return k
}

// sign returns the JWS of header and claims signed with k's key by alg
// (which may differ from k.alg, for attacks).
func (k *testKey) sign(t testing.TB, alg string, header, claims map[string]any) string {
	t.Helper()
	h := map[string]any{"alg": alg, "typ": "at+jwt", "kid": k.kid}
	for name, v := range header {
		if v == nil {
			delete(h, name)
		} else {
			h[name] = v
		}
	}
	input := b64JSON(t, h) + "." + b64JSON(t, claims)
	digest := sha256.Sum256([]byte(input))
	var sig []byte
	var err error
	switch alg {
	case algRS256:
		sig, err = rsa.SignPKCS1v15(rand.Reader, k.priv.(*rsa.PrivateKey), crypto.SHA256, digest[:])
	case algPS256:
		sig, err = rsa.SignPSS(rand.Reader, k.priv.(*rsa.PrivateKey), crypto.SHA256, digest[:], &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash})
	case algES256:
		var r, s *big.Int
		if r, s, err = ecdsa.Sign(rand.Reader, k.priv.(*ecdsa.PrivateKey), digest[:]); err == nil {
			sig = append(r.FillBytes(make([]byte, 32)), s.FillBytes(make([]byte, 32))...)
		}
	case algEdDSA:
		sig = ed25519.Sign(k.priv.(ed25519.PrivateKey), []byte(input))
	case "HS256":
		// The classic confusion: the public key used as an HMAC secret.
		pub, _ := x509.MarshalPKIXPublicKey(k.priv.Public())
		sig = hmacSHA256(pub, []byte(input))
	case "none":
	default:
		t.Fatalf("cannot sign %s", alg)
	}
	if err != nil {
		t.Fatal(err)
	}
	return input + "." + base64.RawURLEncoding.EncodeToString(sig)
}

func b64JSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// newTestIssuer starts an issuer publishing keys.
func newTestIssuer(t testing.TB, keys ...*testKey) *testIssuer {
	t.Helper()
	iss := &testIssuer{t: t, published: keys}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		if iss.down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]string{"issuer": iss.url, "jwks_uri": iss.url + "/jwks"})
	})
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, r *http.Request) {
		iss.jwksFetches.Add(1)
		iss.mu.Lock()
		hold, keys := iss.hold, iss.published
		iss.mu.Unlock()
		if hold != nil {
			<-hold
		}
		if iss.down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		var set struct {
			Keys []map[string]string `json:"keys"`
		}
		set.Keys = []map[string]string{}
		for _, k := range keys {
			set.Keys = append(set.Keys, k.jwk)
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(set)
	})
	iss.srv = httptest.NewServer(mux)
	iss.url = iss.srv.URL
	t.Cleanup(iss.srv.Close)
	return iss
}

// publish replaces the JWKS.
func (iss *testIssuer) publish(keys ...*testKey) {
	iss.mu.Lock()
	iss.published = keys
	iss.mu.Unlock()
}

// holdJWKS makes JWKS fetches wait until the returned function is called.
func (iss *testIssuer) holdJWKS() (release func()) {
	ch := make(chan struct{})
	iss.mu.Lock()
	iss.hold = ch
	iss.mu.Unlock()
	return func() {
		iss.mu.Lock()
		iss.hold = nil
		iss.mu.Unlock()
		close(ch)
	}
}

// claims returns valid claims for this issuer and testResource, changed by
// the pairs given (a nil value deletes the claim).
func (iss *testIssuer) claims(changes map[string]any) map[string]any {
	now := time.Now().Unix()
	c := map[string]any{"iss": iss.url, "aud": testResource, "sub": "alice", "client_id": "app", "scope": "mcp:read mcp:admin",
		"iat": now, "exp": now + 3600, "jti": "t1"}
	for name, v := range changes {
		if v == nil {
			delete(c, name)
		} else {
			c[name] = v
		}
	}
	return c
}

// testClock is a verifier's clock the test moves.
type testClock struct{ now atomic.Int64 }

func newTestClock() *testClock {
	c := &testClock{}
	c.now.Store(time.Now().UnixNano())
	return c
}

func (c *testClock) Now() time.Time                      { return time.Unix(0, c.now.Load()) }
func (c *testClock) advance(d time.Duration)             { c.now.Add(int64(d)) }
func (c *testClock) install(v *JWTVerifier) *JWTVerifier { v.now = c.Now; return v }

func encodeB64URL(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// jsonText returns v encoded as JSON text.
func jsonText(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// newLoopbackServer serves h on loopback for the test and returns its URL.
func newLoopbackServer(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// hmacSHA256 is the HMAC-SHA256 of input under key.
func hmacSHA256(key, input []byte) []byte {
	mac := hmac.New(sha256.New, key)
	mac.Write(input)
	return mac.Sum(nil)
}
