package main

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"slices"
	"sync"
	"time"
)

// The JWS algorithms a JWTVerifier accepts (RFC 7518, RFC 8037). Never
// "none", never an HMAC: a resource server holds no shared secret.
const (
	algRS256 = "RS256"
	algPS256 = "PS256"
	algES256 = "ES256"
	algEdDSA = "EdDSA"
)

// Limits of the keys a JWKS may hold.
const (
	maxJWKSKeys    = 100
	minRSAKeyBits  = 2048
	maxRSAKeyBits  = 8192
	maxRSAExponent = 1<<31 - 1
)

// verifyKey is one public key of the issuer's JWKS and the algorithms it
// verifies: the key's own "alg" when it names one, else those its type
// allows (RS256 and PS256 for RSA, ES256 for P-256, EdDSA for Ed25519).
// Read-only once parsed.
type verifyKey struct {
	kid  string
	algs []string
	rsa  *rsa.PublicKey
	ec   *ecdsa.PublicKey
	ed   ed25519.PublicKey
}

// verifies reports whether the key may verify a signature of alg: the
// token's header never chooses the key's algorithm.
func (k *verifyKey) verifies(alg string) bool { return slices.Contains(k.algs, alg) }

// verify checks sig over input with alg, which k.verifies.
func (k *verifyKey) verify(alg string, input, sig []byte) bool {
	digest := sha256.Sum256(input)
	switch alg {
	case algRS256:
		return k.rsa != nil && rsa.VerifyPKCS1v15(k.rsa, crypto.SHA256, digest[:], sig) == nil
	case algPS256:
		return k.rsa != nil && rsa.VerifyPSS(k.rsa, crypto.SHA256, digest[:], sig, &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash}) == nil
	case algES256:
		// RFC 7518 §3.4: R and S as two 32-byte big-endian integers.
		if k.ec == nil || len(sig) != 64 {
			return false
		}
		r, s := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])
		return ecdsa.Verify(k.ec, digest[:], r, s)
	case algEdDSA:
		return k.ed != nil && ed25519.Verify(k.ed, input, sig)
	}
	return false
}

// jwk is a JSON Web Key as published (RFC 7517), public members only.
type jwk struct {
	Kty    string   `json:"kty"`
	Kid    string   `json:"kid"`
	Use    string   `json:"use"`
	Alg    string   `json:"alg"`
	KeyOps []string `json:"key_ops"`
	N      string   `json:"n"`
	E      string   `json:"e"`
	Crv    string   `json:"crv"`
	X      string   `json:"x"`
	Y      string   `json:"y"`
}

// parseJWKS returns the signature keys of a JWKS document that this
// verifier can use: keys for encryption ("use" other than "sig", "key_ops"
// without "verify"), of another type or curve, naming an algorithm that is
// not accepted or does not fit the key, or too weak are left out. An error
// means the document itself is malformed.
func parseJWKS(doc []byte) ([]*verifyKey, error) {
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := unmarshalExact(doc, &set); err != nil || set.Keys == nil {
		return nil, errors.New("the JWKS has no keys array")
	}
	var keys []*verifyKey
	for _, raw := range set.Keys[:min(len(set.Keys), maxJWKSKeys)] {
		var j jwk
		if unmarshalExact(raw, &j) != nil {
			continue // a member of another type: not a key we can use
		}
		if k := j.verifyKey(); k != nil {
			keys = append(keys, k)
		}
	}
	return keys, nil
}

// verifyKey returns the key j describes, or nil when it is not one this
// verifier accepts.
func (j *jwk) verifyKey() *verifyKey {
	if j.Use != "" && j.Use != "sig" || j.KeyOps != nil && !slices.Contains(j.KeyOps, "verify") {
		return nil
	}
	k := &verifyKey{kid: j.Kid}
	var typeAlgs []string
	switch {
	case j.Kty == "RSA":
		k.rsa, typeAlgs = parseRSAKey(j.N, j.E), []string{algRS256, algPS256}
	case j.Kty == "EC" && j.Crv == "P-256":
		k.ec, typeAlgs = parseP256Key(j.X, j.Y), []string{algES256}
	case j.Kty == "OKP" && j.Crv == "Ed25519":
		if x := decodeB64URL(j.X); len(x) == ed25519.PublicKeySize {
			k.ed = ed25519.PublicKey(x)
		}
		typeAlgs = []string{algEdDSA}
	}
	if k.rsa == nil && k.ec == nil && k.ed == nil {
		return nil
	}
	k.algs = typeAlgs
	if j.Alg != "" {
		if !slices.Contains(typeAlgs, j.Alg) {
			return nil // an algorithm the key's type does not fit, or not accepted
		}
		k.algs = []string{j.Alg}
	}
	return k
}

func parseRSAKey(n64, e64 string) *rsa.PublicKey {
	n, e := decodeB64URL(n64), decodeB64URL(e64)
	if len(n) == 0 || len(e) == 0 || len(e) > 4 || n[0] == 0 {
		return nil
	}
	modulus := new(big.Int).SetBytes(n)
	exp := new(big.Int).SetBytes(e)
	if bits := modulus.BitLen(); bits < minRSAKeyBits || bits > maxRSAKeyBits ||
		exp.Cmp(big.NewInt(3)) < 0 || exp.Cmp(big.NewInt(maxRSAExponent)) > 0 || exp.Bit(0) == 0 {
		return nil
	}
	return &rsa.PublicKey{N: modulus, E: int(exp.Int64())}
}

func parseP256Key(x64, y64 string) *ecdsa.PublicKey {
	x, y := decodeB64URL(x64), decodeB64URL(y64)
	if len(x) != 32 || len(y) != 32 {
		return nil
	}
	point := append(append([]byte{4}, x...), y...)
	k, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), point)
	if err != nil {
		return nil // not on the curve
	}
	return k
}

// decodeB64URL decodes unpadded base64url strictly (no padding, no stray
// bits, no line breaks); nil when s is not.
func decodeB64URL(s string) []byte {
	b, ok := decodeTokenPart(s)
	if !ok {
		return nil
	}
	return b
}

// Defaults of a JWTVerifier's key cache.
const (
	// DefaultJWKSRefreshInterval is the least time between two fetches of
	// the JWKS: a token naming a key not cached (a rotation, or an attacker's
	// flood of unknown kids) fetches it at most once per interval, so a
	// rotated key is picked up within it.
	DefaultJWKSRefreshInterval = 10 * time.Second
	// DefaultJWKSMaxAge is how long fetched keys are used without fetching
	// the JWKS again (then refetched in the background while they are still
	// used), so that a key the issuer withdrew stops being trusted.
	DefaultJWKSMaxAge = 10 * time.Minute
)

// keyCache holds the issuer's keys and refetches them: when a token names a
// key it does not hold (at most once per minInterval; concurrent callers
// share one fetch) and, in the background, when they are older than maxAge.
// A failed fetch keeps the keys held. Safe for concurrent use.
type keyCache struct {
	fetch       func(ctx context.Context) ([]*verifyKey, error) // read-only
	minInterval time.Duration                                   // read-only
	maxAge      time.Duration                                   // read-only
	now         func() time.Time                                // read-only
	logger      *slog.Logger                                    // read-only

	mu       sync.Mutex
	keys     []*verifyKey  // the last fetched
	loaded   time.Time     // when keys were fetched; zero before the first success
	tried    time.Time     // when the last fetch started; zero before any
	inflight chan struct{} // non-nil while a fetch runs, closed when it ends
	lastErr  error         // of the last fetch; nil after a success
}

// errNoKey is the keyCache's answer when no key it holds fits a token.
var errNoKey = errors.New("no key of the issuer fits the token")

// keysFor returns the keys that may verify a token whose header names kid
// ("" when it names none: every key) and alg. When none fits, or the keys
// have never been fetched, it fetches them unless a fetch started less than
// minInterval ago, waiting for the fetch (its own or one under way) or ctx.
// It never fetches more than once per call.
func (c *keyCache) keysFor(ctx context.Context, kid, alg string) ([]*verifyKey, error) {
	joined := false
	for {
		c.mu.Lock()
		fit := c.fitting(kid, alg)
		now := c.now()
		stale := !c.loaded.IsZero() && now.Sub(c.loaded) > c.maxAge
		if len(fit) > 0 {
			if stale && c.inflight == nil && now.Sub(c.tried) >= c.minInterval {
				c.startFetchLocked(now) // used meanwhile: revalidated in the background
			}
			c.mu.Unlock()
			return fit, nil
		}
		if c.inflight == nil {
			if joined || !c.tried.IsZero() && now.Sub(c.tried) < c.minInterval {
				err := c.lastErr
				c.mu.Unlock()
				if err != nil {
					return nil, fmt.Errorf("%w (the last fetch of the keys failed: %w)", errNoKey, err)
				}
				return nil, errNoKey
			}
			c.startFetchLocked(now)
		}
		done := c.inflight
		c.mu.Unlock()
		select {
		case <-done:
			joined = true
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// fitting returns the held keys that kid and alg select. Called with mu.
func (c *keyCache) fitting(kid, alg string) []*verifyKey {
	var fit []*verifyKey
	for _, k := range c.keys {
		if (kid == "" || k.kid == kid) && k.verifies(alg) {
			fit = append(fit, k)
		}
	}
	return fit
}

// startFetchLocked starts a fetch in its own goroutine, which ends within
// the fetch's timeout whoever waits for it. Called with mu.
func (c *keyCache) startFetchLocked(now time.Time) {
	done := make(chan struct{})
	c.inflight, c.tried = done, now
	go func() {
		keys, err := c.fetch(context.Background())
		c.mu.Lock()
		defer c.mu.Unlock()
		if err != nil {
			c.lastErr = err
			c.logger.Warn("mcpstdio: fetching the issuer's keys failed; the keys held are kept", "err", err)
		} else {
			c.keys, c.loaded, c.lastErr = keys, c.now(), nil
		}
		c.inflight = nil
		close(done)
	}()
}
