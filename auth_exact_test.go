package main

import (
	"context"
	"strings"
	"testing"
)

// Member names of a JWKS, of a JWS header and of JWT claims are matched
// exactly (RFC 7517 §4, RFC 7515 §4, RFC 7519 §4: they are case-sensitive),
// not folded as encoding/json folds them. (Found by
// FuzzJWKSAgainstStrictCheck: {"keYs":[...]} was read as a JWKS; the JWS
// header and the claims were read by the same folding decoder.)
func TestParseJWKSMatchesNamesExactly(t *testing.T) {
	es := newTestKey(t, "es", algES256)
	key := jsonText(t, es.jwk)
	for _, doc := range []string{`{"KEYS":[` + key + `]}`, `{"keYs":[` + key + `]}`} {
		if keys, err := parseJWKS([]byte(doc)); err == nil {
			t.Errorf("%s: %d keys, want no keys array", doc, len(keys))
		}
	}
	folded := strings.Replace(strings.Replace(key, `"kty"`, `"KTY"`, 1), `"crv"`, `"Crv"`, 1)
	if keys, err := parseJWKS([]byte(`{"keys":[` + folded + `]}`)); err != nil || len(keys) != 0 {
		t.Errorf("a key whose kty and crv are spelled KTY and Crv: %d keys (%v), want none usable", len(keys), err)
	}
	// A member of another case is another member: "USE" is not "use".
	if keys, err := parseJWKS([]byte(`{"keys":[` + strings.TrimSuffix(key, "}") + `,"USE":"enc"}]}`)); err != nil || len(keys) != 1 {
		t.Errorf("a signature key with an unknown member USE: %d keys (%v), want it usable", len(keys), err)
	}
}

func TestJWTVerifierMatchesNamesExactly(t *testing.T) {
	k := newTestKey(t, "es", algES256)
	iss := newTestIssuer(t, k)
	v := newTestJWTVerifier(t, iss, newTestClock(), nil)
	claims := iss.claims(nil)
	good := jsonText(t, claims)
	if why := refusal(t, v, k.signRaw(t, `{"alg":"ES256","typ":"at+jwt","kid":"es"}`, good)); why != "" {
		t.Fatalf("the genuine token refused: %s", why)
	}
	tests := []struct {
		name, header, claims, reason string
	}{
		{"ALG", `{"ALG":"ES256","typ":"at+jwt","kid":"es"}`, good, reasonMalformed},
		{"Typ", `{"alg":"ES256","Typ":"at+jwt","kid":"es"}`, good, reasonType},
		{"ISS", `{"alg":"ES256","typ":"at+jwt","kid":"es"}`, strings.Replace(good, `"iss"`, `"ISS"`, 1), reasonIssuer},
		{"Aud", `{"alg":"ES256","typ":"at+jwt","kid":"es"}`, strings.Replace(good, `"aud"`, `"Aud"`, 1), reasonAudience},
		{"EXP", `{"alg":"ES256","typ":"at+jwt","kid":"es"}`, strings.Replace(good, `"exp"`, `"EXP"`, 1), reasonExpired},
	}
	for _, tt := range tests {
		// Signed for real: only the spelling of a name is wrong.
		token := k.signRaw(t, tt.header, tt.claims)
		if got := refusal(t, v, token); got != tt.reason {
			t.Errorf("%s: refused %q, want %q", tt.name, got, tt.reason)
		}
	}
}

// The parts of a JWS have one spelling: a line break inserted (which a
// base64 decoder skips) makes it another token, refused. (The cause
// FuzzCursorTampering found in cursors.)
func TestJWTVerifierRefusesLineBreaks(t *testing.T) {
	k := newTestKey(t, "es", algES256)
	iss := newTestIssuer(t, k)
	v := newTestJWTVerifier(t, iss, newTestClock(), nil)
	token := k.sign(t, algES256, nil, iss.claims(nil))
	if why := refusal(t, v, token); why != "" {
		t.Fatalf("the genuine token refused: %s", why)
	}
	sig := strings.LastIndexByte(token, '.') + 5
	for _, broken := range []string{token[:sig] + "\n" + token[sig:], token[:sig] + "\r" + token[sig:], token + "\r\n"} {
		if _, err := v.VerifyToken(context.Background(), broken); err == nil {
			t.Errorf("token with a line break %q accepted", broken)
		}
	}
}

// signRaw returns the JWS of header and claims, JSON texts as given, signed
// with k by its algorithm.
func (k *testKey) signRaw(t testing.TB, header, claims string) string {
	input := encodeB64URL([]byte(header)) + "." + encodeB64URL([]byte(claims))
	return input + "." + encodeB64URL(fuzzSign(t, k, []byte(input)))
}
