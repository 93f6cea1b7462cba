package main

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"math"
	"math/big"
	"strings"
	"testing"
	"time"
)

// Differential fuzzing of the JWT access-token verifier and the JWKS parser
// against strict checks written apart from them (RFC 7515, 7517, 7518, 7519,
// 9068). Seeds: f.Add below and testdata/fuzz/<FuzzName>/.

// fuzzNow is the verifiers' clock in these targets.
var fuzzNow = time.Unix(1_700_000_000, 0)

// FuzzJWTAgainstStrictCheck signs the input's header and claims (JSON text,
// any bytes) with one of the issuer's keys, applies the input's mutation to
// the token (cut bytes from pos replaced by with), and checks that the
// verifier never accepts a token that the strict check refuses, nor panics.
func FuzzJWTAgainstStrictCheck(f *testing.F) {
	keys := []*testKey{newTestKey(f, "rs", algRS256), newTestKey(f, "ps", algPS256), newTestKey(f, "es", algES256), newTestKey(f, "ed", algEdDSA)}
	iss := newTestIssuer(f, keys...)
	v, err := NewJWTVerifier(JWTVerifierOptions{Issuer: iss.url, Resource: testResource, Logger: quietLogger(), RefreshInterval: 30 * time.Second})
	if err != nil {
		f.Fatal(err)
	}
	v.now = func() time.Time { return fuzzNow }
	claims := `{"iss":"` + iss.url + `","aud":"` + testResource + `","sub":"alice","exp":1700003600,"iat":1699999000,"scope":"a b"}`
	for i, k := range keys {
		header := `{"alg":"` + k.alg + `","typ":"at+jwt","kid":"` + k.kid + `"}`
		f.Add([]byte(header), []byte(claims), uint8(i), uint16(0), "", uint8(0))
		// The seeds are accepted: the target checks tokens the verifier takes.
		input := base64.RawURLEncoding.EncodeToString([]byte(header)) + "." + base64.RawURLEncoding.EncodeToString([]byte(claims))
		if _, err := v.VerifyToken(context.Background(), input+"."+base64.RawURLEncoding.EncodeToString(fuzzSign(f, k, []byte(input)))); err != nil {
			f.Fatalf("the seed of %s is refused: %v", k.alg, err)
		}
	}
	f.Add([]byte(`{"alg":"ES256","typ":"application/AT+JWT"}`), []byte(`{"iss":"`+iss.url+`","aud":["x","`+testResource+`"],"client_id":"app","exp":1700000001.5,"nbf":1700000030}`), uint8(2), uint16(0), "", uint8(0))
	f.Add([]byte(`{"alg":"RS256","typ":"at+jwt","kid":"rs","crit":["exp"]}`), []byte(claims), uint8(0), uint16(10), "A", uint8(1))
	f.Fuzz(func(t *testing.T, header, claims []byte, key uint8, pos uint16, with string, cut uint8) {
		k := keys[int(key)%len(keys)]
		input := base64.RawURLEncoding.EncodeToString(header) + "." + base64.RawURLEncoding.EncodeToString(claims)
		token := tamper(input+"."+base64.RawURLEncoding.EncodeToString(fuzzSign(t, k, []byte(input))), pos, with, cut)
		p, err := v.VerifyToken(context.Background(), token)
		if err != nil {
			return
		}
		if why := strictJWTRefusal(token, keys, iss.url, fuzzNow); why != "" {
			t.Fatalf("token accepted (principal %+v) that a strict check refuses: %s\nheader %q\nclaims %q\ntoken %q", p, why, header, claims, token)
		}
	})
}

// fuzzSign signs input with k by its own algorithm.
func fuzzSign(t testing.TB, k *testKey, input []byte) []byte {
	digest := sha256.Sum256(input)
	var sig []byte
	var err error
	switch k.alg {
	case algRS256:
		sig, err = rsa.SignPKCS1v15(nil, k.priv.(*rsa.PrivateKey), crypto.SHA256, digest[:])
	case algPS256:
		sig, err = rsa.SignPSS(zeroReader{}, k.priv.(*rsa.PrivateKey), crypto.SHA256, digest[:], &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash})
	case algES256:
		var r, s *big.Int
		if r, s, err = ecdsa.Sign(zeroReader{}, k.priv.(*ecdsa.PrivateKey), digest[:]); err == nil {
			sig = append(r.FillBytes(make([]byte, 32)), s.FillBytes(make([]byte, 32))...)
		}
	case algEdDSA:
		sig = ed25519.Sign(k.priv.(ed25519.PrivateKey), input)
	}
	if err != nil {
		t.Fatal(err)
	}
	return sig
}

// zeroReader is a source of zero bytes: signing needs no real randomness to
// be verified.
type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// strictJWTRefusal says why a strict reading of RFC 7515, 7519 and 9068
// refuses token ("" when it accepts it): each part canonical unpadded
// base64url; header and claims JSON objects whose member names are matched
// exactly, none twice; alg one of RS256, PS256, ES256, EdDSA, with a key of
// the issuer for it (and its kid, when named) that verifies the signature;
// typ at+jwt (case-insensitively, application/ optional); no crit; iss the
// issuer; aud the resource or an array of strings holding it; exp a number
// not past (60 s of skew), nbf and iat numbers not in the future; no cnf;
// sub or client_id a non-empty string; scope a string.
func strictJWTRefusal(token string, keys []*testKey, issuer string, now time.Time) string {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return "not three parts"
	}
	var decoded [3][]byte
	for i, p := range parts {
		b, err := base64.RawURLEncoding.DecodeString(p)
		if err != nil || base64.RawURLEncoding.EncodeToString(b) != p {
			return "part " + string(rune('0'+i)) + " is not canonical base64url"
		}
		decoded[i] = b
	}
	header, why := strictMembers(decoded[0])
	if why != "" {
		return "header: " + why
	}
	claims, why := strictMembers(decoded[1])
	if why != "" {
		return "claims: " + why
	}
	var alg, typ, kid string
	if !jsonStringMember(header, "alg", &alg) || alg != algRS256 && alg != algPS256 && alg != algES256 && alg != algEdDSA {
		return "alg"
	}
	if !jsonStringMember(header, "typ", &typ) || !strings.EqualFold(typ, "at+jwt") && !strings.EqualFold(typ, "application/at+jwt") {
		return "typ"
	}
	if _, ok := header["kid"]; ok && !jsonStringMember(header, "kid", &kid) {
		return "kid not a string"
	}
	if _, ok := header["crit"]; ok {
		return "crit"
	}
	var iss, sub, clientID, scope string
	if !jsonStringMember(claims, "iss", &iss) || iss != issuer {
		return "iss"
	}
	if !audienceHolds(claims["aud"], testResource) {
		return "aud"
	}
	skew := DefaultClockSkew.Seconds()
	secs := float64(now.Unix())
	exp, ok := jsonNumberMember(claims, "exp")
	if !ok || exp+skew <= secs {
		return "exp"
	}
	for _, name := range []string{"nbf", "iat"} {
		if _, present := claims[name]; present {
			if at, ok := jsonNumberMember(claims, name); !ok || at > secs+skew+1e-6 {
				return name
			}
		}
	}
	if _, ok := claims["cnf"]; ok {
		return "cnf"
	}
	for name, v := range map[string]*string{"sub": &sub, "client_id": &clientID, "scope": &scope} {
		if _, present := claims[name]; present && !jsonStringMember(claims, name, v) {
			return name + " not a string"
		}
	}
	if sub == "" && clientID == "" {
		return "no subject nor client"
	}
	input := []byte(parts[0] + "." + parts[1])
	for _, k := range keys {
		if k.alg == alg && (kid == "" || k.kid == kid) && strictVerify(k, alg, input, decoded[2]) {
			return ""
		}
	}
	return "no key verifies the signature"
}

// strictMembers returns the members of the JSON object text b by exact
// name, or why it is not one: invalid JSON or UTF-8, not an object, a
// member named twice.
func strictMembers(b []byte) (map[string]json.RawMessage, string) {
	if !json.Valid(b) || !bytes.Equal(bytes.ToValidUTF8(b, nil), b) {
		return nil, "not valid JSON"
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, "not an object"
	}
	members := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, "malformed"
		}
		name := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, "malformed"
		}
		if _, twice := members[name]; twice {
			return nil, "member " + name + " twice"
		}
		members[name] = v
	}
	return members, ""
}

func jsonStringMember(m map[string]json.RawMessage, name string, v *string) bool {
	raw, ok := m[name]
	return ok && raw[0] == '"' && json.Unmarshal(raw, v) == nil
}

func jsonNumberMember(m map[string]json.RawMessage, name string) (float64, bool) {
	raw, ok := m[name]
	if !ok || raw[0] != '-' && (raw[0] < '0' || raw[0] > '9') {
		return 0, false
	}
	var f float64
	return f, json.Unmarshal(raw, &f) == nil && !math.IsInf(f, 0)
}

// audienceHolds reports whether aud is the string resource or an array of
// strings one of which is resource.
func audienceHolds(aud json.RawMessage, resource string) bool {
	if len(aud) == 0 {
		return false
	}
	if aud[0] == '"' {
		var s string
		return json.Unmarshal(aud, &s) == nil && s == resource
	}
	var list []json.RawMessage
	if aud[0] != '[' || json.Unmarshal(aud, &list) != nil {
		return false
	}
	found := false
	for _, e := range list {
		var s string
		if e[0] != '"' || json.Unmarshal(e, &s) != nil {
			return false
		}
		found = found || s == resource
	}
	return found
}

// strictVerify checks sig over input with k's public key by alg.
func strictVerify(k *testKey, alg string, input, sig []byte) bool {
	digest := sha256.Sum256(input)
	switch pub := k.priv.Public().(type) {
	case *rsa.PublicKey:
		if alg == algPS256 {
			return rsa.VerifyPSS(pub, crypto.SHA256, digest[:], sig, &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash}) == nil
		}
		return rsa.VerifyPKCS1v15(pub, crypto.SHA256, digest[:], sig) == nil
	case *ecdsa.PublicKey:
		return len(sig) == 64 && ecdsa.Verify(pub, digest[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:]))
	case ed25519.PublicKey:
		return ed25519.Verify(pub, input, sig)
	}
	return false
}

// FuzzJWKSAgainstStrictCheck parses the input as a JWKS and checks each key
// it keeps against a strict reading of RFC 7517 and 7518: a signature key
// (use absent or "sig", key_ops absent or holding "verify"), RSA of 2048 to
// 8192 bits with an odd exponent from 3 to 2^31-1, a point of P-256, or an
// Ed25519 key of 32 bytes, each member canonical base64url, its alg absent
// or one its type allows; and that the keys kept are, in order, exactly
// those the strict reading keeps of the first 100.
func FuzzJWKSAgainstStrictCheck(f *testing.F) {
	for _, alg := range []string{algRS256, algES256, algEdDSA} {
		k := newTestKey(f, "k", alg)
		b, _ := json.Marshal(map[string]any{"keys": []any{k.jwk}})
		f.Add(b)
	}
	f.Add([]byte(`{"keys":[{"kty":"EC","crv":"P-256","x":"AA","y":"AA"},{"kty":"oct","k":"c2VjcmV0"},5,{"kty":"OKP","crv":"Ed25519","x":"` + strings.Repeat("A", 43) + `","use":"enc"}]}`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		keys, err := parseJWKS(doc)
		want, ok := strictJWKS(doc)
		if (err == nil) != ok {
			t.Fatalf("parseJWKS error %v, strict reading of the document ok %v: %q", err, ok, doc)
		}
		if len(keys) != len(want) {
			t.Fatalf("parseJWKS kept %d keys, the strict reading %d: %q", len(keys), len(want), doc)
		}
		for i, k := range keys {
			w := want[i]
			switch {
			case k.kid != w.kid || strings.Join(k.algs, ",") != strings.Join(w.algs, ","):
				t.Fatalf("key %d: kid %q algs %v, want %q %v", i, k.kid, k.algs, w.kid, w.algs)
			case k.rsa != nil && (w.rsa == nil || k.rsa.N.Cmp(w.rsa.N) != 0 || k.rsa.E != w.rsa.E),
				k.ec != nil && (w.ec == nil || !k.ec.Equal(w.ec)),
				k.ed != nil && !bytes.Equal(k.ed, w.ed):
				t.Fatalf("key %d differs from the strict reading's: %+v, want %+v", i, k, w)
			}
		}
	})
}

// strictJWKS returns the keys a strict reading keeps of doc, and false when
// doc is not a JSON object with a "keys" array.
func strictJWKS(doc []byte) ([]*verifyKey, bool) {
	var set map[string]json.RawMessage
	if json.Unmarshal(doc, &set) != nil {
		return nil, false
	}
	var raws []json.RawMessage
	if json.Unmarshal(set["keys"], &raws) != nil || raws == nil {
		return nil, false
	}
	var keys []*verifyKey
	for _, raw := range raws[:min(len(raws), maxJWKSKeys)] {
		var j map[string]json.RawMessage
		if json.Unmarshal(raw, &j) != nil || j == nil {
			continue
		}
		str := func(name string) (string, bool) {
			var s string
			v, present := j[name]
			if !present {
				return "", true
			}
			return s, json.Unmarshal(v, &s) == nil && v[0] == '"'
		}
		kty, ok1 := str("kty")
		use, ok2 := str("use")
		alg, ok3 := str("alg")
		crv, ok4 := str("crv")
		kid, ok5 := str("kid")
		if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 || use != "" && use != "sig" {
			continue
		}
		if ops, present := j["key_ops"]; present {
			var list []string
			if json.Unmarshal(ops, &list) != nil || list != nil && !contains(list, "verify") {
				continue
			}
		}
		b64 := func(name string) []byte {
			s, ok := str(name)
			b, err := base64.RawURLEncoding.DecodeString(s)
			if !ok || err != nil || base64.RawURLEncoding.EncodeToString(b) != s || strings.ContainsAny(s, "\r\n") {
				return nil
			}
			return b
		}
		k := &verifyKey{kid: kid}
		var algs []string
		switch {
		case kty == "RSA":
			n, e := b64("n"), b64("e")
			if len(n) == 0 || n[0] == 0 || len(e) == 0 || len(e) > 4 {
				continue
			}
			mod, exp := new(big.Int).SetBytes(n), new(big.Int).SetBytes(e).Int64()
			if mod.BitLen() < 2048 || mod.BitLen() > 8192 || exp < 3 || exp > 1<<31-1 || exp%2 == 0 {
				continue
			}
			k.rsa, algs = &rsa.PublicKey{N: mod, E: int(exp)}, []string{algRS256, algPS256}
		case kty == "EC" && crv == "P-256":
			x, y := b64("x"), b64("y")
			if len(x) != 32 || len(y) != 32 {
				continue
			}
			point := append(append([]byte{4}, x...), y...)
			if _, err := ecdh.P256().NewPublicKey(point); err != nil {
				continue
			}
			pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), point)
			if err != nil {
				continue
			}
			k.ec, algs = pub, []string{algES256}
		case kty == "OKP" && crv == "Ed25519":
			x := b64("x")
			if len(x) != ed25519.PublicKeySize {
				continue
			}
			k.ed, algs = ed25519.PublicKey(x), []string{algEdDSA}
		default:
			continue
		}
		k.algs = algs
		if alg != "" {
			if !contains(algs, alg) {
				continue
			}
			k.algs = []string{alg}
		}
		keys = append(keys, k)
	}
	return keys, true
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}
