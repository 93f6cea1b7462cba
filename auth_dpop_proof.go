package main

// DPoP proofs (RFC 9449 §4): a JWT the client signs with its own key and
// sends in the DPoP header of each request, beside a DPoP-bound access
// token. This file parses one and checks it against the request; the gate
// (auth_dpop.go) checks the token's binding and remembers the proof.

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// maxDPoPProofBytes bounds the DPoP header a proof is read from: a proof with
// a 4096-bit RSA key, the largest a proof's key may be, takes about 2 KiB.
const maxDPoPProofBytes = 8 << 10

// maxProofRSAKeyBits bounds the RSA keys of proofs, which anyone may send:
// a signature of an 8192-bit key, which an issuer's JWKS may hold, takes
// about 1 ms to verify, 20 times one of a 2048-bit key.
const maxProofRSAKeyBits = 4096

// dpopProofType is the typ of every DPoP proof (RFC 9449 §4.2).
const dpopProofType = "dpop+jwt"

// dpopProof is a parsed DPoP proof: its header's key and the claims the
// request is checked against. Its signature is checked by signed, not by
// parsing. Read-only once parsed.
type dpopProof struct {
	alg        string
	key        *verifyKey
	thumbprint string // of the jwk (RFC 7638), base64url
	input, sig []byte // the signing input (header.payload) and the signature

	jti, htm, htu, ath string
	nonce              string // "" when the proof has none
	iat                time.Time
}

// jwkPrivateMembers are the members of a JWK that carry a private or secret
// key (RFC 7518 §6.2.2, §6.3.2, §6.4; RFC 8037 §2): a proof's jwk must have
// none.
type jwkPrivateMembers struct {
	D   json.RawMessage `json:"d"`
	P   json.RawMessage `json:"p"`
	Q   json.RawMessage `json:"q"`
	DP  json.RawMessage `json:"dp"`
	DQ  json.RawMessage `json:"dq"`
	QI  json.RawMessage `json:"qi"`
	Oth json.RawMessage `json:"oth"`
	K   json.RawMessage `json:"k"`
}

func (m *jwkPrivateMembers) any() bool {
	return m.D != nil || m.P != nil || m.Q != nil || m.DP != nil || m.DQ != nil || m.QI != nil || m.Oth != nil || m.K != nil
}

// Reasons a proof is refused, as clients see them (error_description of an
// invalid_dpop_proof challenge). Those naming a claim are built by
// proofClaimMissing.
const (
	reasonProofMissing    = "the request has no DPoP proof"
	reasonProofRepeated   = "the request has more than one DPoP header"
	reasonProofMalformed  = "the DPoP proof is not a well-formed JWT"
	reasonProofType       = "the DPoP proof's typ is not dpop+jwt"
	reasonProofAlgorithm  = "the DPoP proof's alg is not one this server accepts"
	reasonProofCritical   = "the DPoP proof has critical header parameters"
	reasonProofKey        = "the DPoP proof's jwk is not a public key for its alg"
	reasonProofPrivateKey = "the DPoP proof's jwk contains a private key"
	reasonProofSignature  = "the DPoP proof's signature does not verify with its jwk"
	reasonProofMethod     = "the DPoP proof's htm is not the request's method"
	reasonProofURL        = "the DPoP proof's htu is not the request's URL"
	reasonProofTime       = "the DPoP proof's iat is too far from the server's time"
	reasonProofTokenHash  = "the DPoP proof's ath is not the hash of the access token"
	reasonProofReplayed   = "the DPoP proof was already used"
	reasonProofNonce      = "the DPoP proof must carry a recent nonce of this server (DPoP-Nonce)"
	reasonProofNonceType  = "the DPoP proof's nonce claim is not a string"
)

// proofClaimMissing is the reason for a required claim that is absent or
// not of its type.
func proofClaimMissing(claim, kind string) string {
	return "the DPoP proof's " + claim + " claim is missing or not " + kind
}

// parseDPoPProof parses proof, a compact JWS, and checks what needs no
// request: typ dpop+jwt, an alg of algs whose key type the jwk has, a jwk
// with public members only, no crit, and the claims jti, htm, htu and iat
// (and ath, required of every proof sent with an access token) of their
// types (a string claim must not be empty); a nonce, when there is one,
// must be a string. Members are matched by their exact names; other header
// parameters and claims are ignored. A refusal is its reason. It never panics, whatever proof holds.
func parseDPoPProof(proof string, algs []string) (*dpopProof, string) {
	if len(proof) > maxDPoPProofBytes {
		return nil, reasonProofMalformed
	}
	parts := strings.Split(proof, ".")
	if len(parts) != 3 {
		return nil, reasonProofMalformed
	}
	headerJSON, payload, sig := decodeB64URL(parts[0]), decodeB64URL(parts[1]), decodeB64URL(parts[2])
	if headerJSON == nil || payload == nil || sig == nil || !isStrictJSONObject(headerJSON) || !isStrictJSONObject(payload) {
		return nil, reasonProofMalformed
	}
	typ, alg := stringMember(headerJSON, "typ"), stringMember(headerJSON, "alg")
	_, crit := lookupMember(headerJSON, "crit")
	switch {
	case !isDPoPProofType(typ):
		return nil, reasonProofType
	case !slices.Contains(algs, alg):
		return nil, reasonProofAlgorithm
	case crit:
		return nil, reasonProofCritical
	}
	p := &dpopProof{alg: alg, input: []byte(proof[:len(parts[0])+1+len(parts[1])]), sig: sig}
	jwkJSON, _ := lookupMember(headerJSON, "jwk")
	var reason string
	if p.key, p.thumbprint, reason = proofKey(jwkJSON, alg); reason != "" {
		return nil, reason
	}
	for _, c := range []struct {
		name string
		to   *string
	}{{"jti", &p.jti}, {"htm", &p.htm}, {"htu", &p.htu}, {"ath", &p.ath}} {
		if *c.to = stringMember(payload, c.name); *c.to == "" {
			return nil, proofClaimMissing(c.name, "a string")
		}
	}
	var iat float64
	if raw, _ := lookupMember(payload, "iat"); len(raw) == 0 || raw[0] != '-' && (raw[0] < '0' || raw[0] > '9') || json.Unmarshal(raw, &iat) != nil || !finite(iat) {
		return nil, proofClaimMissing("iat", "a number")
	}
	p.iat = unixTime(iat)
	if raw, has := lookupMember(payload, "nonce"); has {
		var ok bool
		if p.nonce, ok = decodeString(raw); !ok {
			return nil, reasonProofNonceType
		}
	}
	return p, ""
}

// isDPoPProofType reports whether typ is dpop+jwt, in any case, with or
// without its media type's "application/" (RFC 7515 §4.1.9).
func isDPoPProofType(typ string) bool {
	t := strings.ToLower(typ)
	return t == dpopProofType || t == "application/"+dpopProofType
}

// proofKey returns the key of a proof's jwk and its thumbprint, or the
// reason it is refused: absent, not a JSON object, holding a private member,
// not a key of a type (and curve) alg signs with, or an RSA key of more than
// 4096 bits.
func proofKey(raw json.RawMessage, alg string) (*verifyKey, string, string) {
	if raw == nil || raw[0] != '{' {
		return nil, "", reasonProofKey
	}
	var private jwkPrivateMembers
	if json.Unmarshal(raw, &private) != nil {
		return nil, "", reasonProofKey
	}
	if private.any() {
		return nil, "", reasonProofPrivateKey
	}
	var j jwk
	if json.Unmarshal(raw, &j) != nil {
		return nil, "", reasonProofKey
	}
	key := j.verifyKey()
	if key == nil || !key.verifies(alg) || key.rsa != nil && key.rsa.N.BitLen() > maxProofRSAKeyBits {
		return nil, "", reasonProofKey
	}
	return key, j.thumbprint(), ""
}

// thumbprint returns the JWK SHA-256 thumbprint of j (RFC 7638), base64url:
// the hash of its required members, in lexicographic order, without
// whitespace. Only for a key verifyKey accepted, whose members are then
// base64url strings and known curve names, which need no escaping.
func (j *jwk) thumbprint() string {
	var members string
	switch j.Kty {
	case "EC":
		members = `{"crv":"` + j.Crv + `","kty":"EC","x":"` + j.X + `","y":"` + j.Y + `"}`
	case "RSA":
		members = `{"e":"` + j.E + `","kty":"RSA","n":"` + j.N + `"}`
	case "OKP":
		members = `{"crv":"` + j.Crv + `","kty":"OKP","x":"` + j.X + `"}`
	}
	sum := sha256.Sum256([]byte(members))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// signed reports whether the proof's signature verifies with its own jwk.
func (p *dpopProof) signed() bool { return p.key.verify(p.alg, p.input, p.sig) }

// accessTokenHash is a proof's ath for token: base64url(SHA-256(token)).
func accessTokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// proofTarget is what a proof is checked against: the request it came with
// and the server's time.
type proofTarget struct {
	method string    // the request's method
	uri    string    // the request's URL as the client addressed it, without query
	token  string    // the access token sent with the proof
	now    time.Time // the server's time
	window time.Duration
}

// matches checks the proof's claims against t: htm is the request's method,
// htu its URL (both normalized, query and fragment ignored), iat within
// t.window of now either way, and ath the hash of the token. A refusal is
// its reason.
func (p *dpopProof) matches(t proofTarget) string {
	switch {
	case p.htm != t.method:
		return reasonProofMethod
	case !sameHTTPURI(p.htu, t.uri):
		return reasonProofURL
	case p.iat.Before(t.now.Add(-t.window)) || p.iat.After(t.now.Add(t.window)):
		return reasonProofTime
	case p.ath != accessTokenHash(t.token):
		return reasonProofTokenHash
	}
	return ""
}

// sameHTTPURI reports whether a and b are the same http(s) URI once
// normalized (RFC 3986 §6.2.2 and §6.2.3) with their queries and fragments
// left out.
func sameHTTPURI(a, b string) bool {
	na, ok := normalizeHTTPURI(a)
	if !ok {
		return false
	}
	nb, ok := normalizeHTTPURI(b)
	return ok && na == nb
}

// normalizeHTTPURI returns s, an absolute http or https URI, without its
// query and fragment and normalized: scheme and host in lower case, the
// scheme's default port left out, an empty path as "/", percent-encodings
// of unreserved characters decoded (the others' hex digits in upper case),
// then dot segments removed. False when s is not such a URI or has
// user information.
func normalizeHTTPURI(s string) (string, bool) {
	if i := strings.IndexAny(s, "?#"); i >= 0 {
		s = s[:i]
	}
	u, err := url.Parse(s)
	if err != nil || u.Opaque != "" || u.User != nil || u.Host == "" {
		return "", false
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		return "", false
	}
	host := strings.TrimSuffix(strings.ToLower(u.Host), ":") // an empty port is no port
	if port := u.Port(); scheme == "https" && port == "443" || scheme == "http" && port == "80" {
		host = strings.TrimSuffix(host, ":"+port)
	}
	if host == "" || host[0] == ':' {
		return "", false // a port without a host
	}
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	return scheme + "://" + host + removeDotSegments(normalizePercentEncoding(path)), true
}

// removeDotSegments removes the "." and ".." segments of path, which starts
// with "/" (RFC 3986 §5.2.4).
func removeDotSegments(path string) string {
	segments := strings.Split(path[1:], "/")
	out := make([]string, 0, len(segments))
	for i, seg := range segments {
		last := i == len(segments)-1
		switch seg {
		case ".":
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
		default:
			out = append(out, seg)
			continue
		}
		if last { // "/a/." and "/a/b/.." name the folder "/a/"
			out = append(out, "")
		}
	}
	return "/" + strings.Join(out, "/")
}

// normalizePercentEncoding decodes the percent-encodings of unreserved
// characters in s and writes the hex digits of the others in upper case.
func normalizePercentEncoding(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' || i+2 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		v, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
		if err != nil {
			b.WriteByte(s[i])
			continue
		}
		if c := byte(v); isUnreservedURIChar(c) {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
		i += 2
	}
	return b.String()
}

// isUnreservedURIChar reports whether c is unreserved (RFC 3986 §2.3).
func isUnreservedURIChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}
