package main

import (
	"crypto/sha256"
	"net/http"
	"testing"
	"time"
)

// FuzzDPoPProof: parsing any DPoP header never panics and either refuses
// it with a reason or returns a proof with every required claim and a
// SHA-256 thumbprint; checking that proof's signature and claims against a
// request never panics, nor does the gate's whole check; and normalizing a
// URI (the proof's htu, or the input itself) is idempotent and keeps it
// the same URI. The seed corpus is testdata/fuzz/FuzzDPoPProof.
func FuzzDPoPProof(f *testing.F) {
	clock := newTestClock()
	clock.now.Store(time.Unix(1_700_000_000, 0).UnixNano())
	resource, err := parseResourceURI(testResource)
	if err != nil {
		f.Fatal(err)
	}
	gate, err := newDPoPGate(DPoPOptions{Mode: DPoPAllow, NonceKey: make([]byte, minDPoPNonceKeyBytes)}, resource, nil)
	if err != nil {
		f.Fatal(err)
	}
	gate.now = clock.Now
	f.Fuzz(func(t *testing.T, proof string) {
		p, reason := parseDPoPProof(proof, dpopAlgorithms())
		if (p == nil) == (reason == "") {
			t.Fatalf("proof %v with reason %q", p != nil, reason)
		}
		if p != nil {
			if len(decodeB64URL(p.thumbprint)) != sha256.Size || p.jti == "" || p.htm == "" || p.htu == "" || p.ath == "" || p.key == nil {
				t.Fatalf("an accepted proof lacks a part: %+v", p)
			}
			p.signed()
			p.matches(proofTarget{method: http.MethodPost, uri: testResource, token: "t", now: clock.Now(), window: DefaultDPoPProofWindow})
			checkURINormalization(t, p.htu)
		}
		checkURINormalization(t, proof)
		r, err := http.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", nil)
		if err != nil {
			t.Fatal(err)
		}
		r.Header.Set(headerDPoP, proof)
		if proof, refusal := gate.checkProof(r, "t"); (proof == nil) == (refusal == nil) {
			t.Fatalf("the gate's check: proof %v, refusal %+v", proof != nil, refusal)
		}
	})
}

// checkURINormalization fails t unless normalizing s, when it is an http(s)
// URI, is idempotent and leaves the same URI.
func checkURINormalization(t *testing.T, s string) {
	t.Helper()
	n, ok := normalizeHTTPURI(s)
	if !ok {
		return
	}
	again, ok := normalizeHTTPURI(n)
	if !ok || again != n || !sameHTTPURI(s, n) {
		t.Fatalf("%q normalizes to %q, then to %q (%v)", s, n, again, ok)
	}
}
