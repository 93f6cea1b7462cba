package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkJWTVerify measures verifying one access token whose key is held,
// for each algorithm.
func BenchmarkJWTVerify(b *testing.B) {
	for _, alg := range []string{algES256, algEdDSA, algRS256, algPS256} {
		b.Run(alg, func(b *testing.B) {
			k := newTestKey(b, "k", alg)
			iss := newTestIssuer(b, k)
			v, err := NewJWTVerifier(JWTVerifierOptions{Issuer: iss.url, Resource: testResource, Logger: quietLogger()})
			if err != nil {
				b.Fatal(err)
			}
			token := k.sign(b, alg, nil, iss.claims(nil))
			if _, err := v.VerifyToken(context.Background(), token); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := v.VerifyToken(context.Background(), token); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkHTTPEchoAuthorized is BenchmarkHTTPEcho with an ES256 access
// token verified on every request.
func BenchmarkHTTPEchoAuthorized(b *testing.B) {
	rt, err := NewRuntime(RuntimeOptions{ServerInfo: Implementation{Name: "bench", Version: "1"}, Tasks: TaskOptions{}})
	if err != nil {
		b.Fatal(err)
	}
	if err := registerReferenceCatalog(rt); err != nil {
		b.Fatal(err)
	}
	k := newTestKey(b, "k", algES256)
	iss := newTestIssuer(b, k)
	v, err := NewJWTVerifier(JWTVerifierOptions{Issuer: iss.url, Resource: testResource, Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	h, err := NewHTTPHandler(rt, HTTPOptions{Auth: &AuthOptions{Resource: testResource, AuthorizationServers: []string{iss.url}, Verifier: v}})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer func() { srv.Close(); h.Close() }()
	token := "Bearer " + k.sign(b, algES256, nil, iss.claims(nil))
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"},` + meta2026 + `}}`
	client := srv.Client()
	b.ReportAllocs()
	for b.Loop() {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", ProtocolVersion20260728)
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", "echo")
		req.Header.Set("Authorization", token)
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
}

// BenchmarkDPoPProofCheck measures the gate's check of one DPoP proof
// (parse, match the request, verify the signature), for each algorithm.
func BenchmarkDPoPProofCheck(b *testing.B) {
	resource, err := parseResourceURI(testResource)
	if err != nil {
		b.Fatal(err)
	}
	d, err := newDPoPGate(DPoPOptions{Mode: DPoPAllow}, resource, nil)
	if err != nil {
		b.Fatal(err)
	}
	for _, alg := range []string{algES256, algEdDSA, algRS256, algPS256} {
		b.Run(alg, func(b *testing.B) {
			k := newTestKey(b, "k", alg)
			r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
			r.Header.Set(headerDPoP, k.proof(b, alg, nil, proofClaims(http.MethodPost, testResource, "token", time.Now(), nil)))
			b.ReportAllocs()
			for b.Loop() {
				if _, refusal := d.checkProof(r, "token"); refusal != nil {
					b.Fatal(refusal.reason)
				}
			}
		})
	}
}

// BenchmarkProofLedger measures remembering one proof in a ledger of
// DefaultDPoPMaxProofs that holds as many as it may (each proof remembered
// forgets the one expiring first), and reports the heap a remembered proof
// takes: proofs-B is the heap of the full ledger per proof.
func BenchmarkProofLedger(b *testing.B) {
	jtis := make([]string, DefaultDPoPMaxProofs)
	for i := range jtis {
		jtis[i] = strconv.Itoa(i)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	l := newProofLedger(DefaultDPoPMaxProofs, DefaultDPoPMaxProofs)
	base := time.Unix(1_700_000_000, 0)
	for i, jti := range jtis {
		if l.remember(testThumbprint, jti, "client-"+strconv.Itoa(i%100), base.Add(time.Duration(i)), base) != proofRemembered {
			b.Fatal("the ledger did not fill")
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	perProof := float64(after.HeapAlloc-before.HeapAlloc) / float64(l.len())
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		i++
		at := base.Add(time.Duration(i)) // the oldest proof has just expired
		if l.remember(testThumbprint, "next-"+strconv.Itoa(i), "client", at.Add(DefaultDPoPMaxProofs), at) != proofRemembered {
			b.Fatal("refused")
		}
	}
	runtime.KeepAlive(jtis)
	b.ReportMetric(perProof, "proof-B")
}
