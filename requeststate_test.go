package main

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func newTestStateCodec(t *testing.T, ttl time.Duration, now time.Time) requestStateCodec {
	t.Helper()
	sc, err := newRequestStateCodec(nil, ttl)
	if err != nil {
		t.Fatal(err)
	}
	sc.now = func() time.Time { return now }
	return sc
}

func TestRequestStateRoundTrip(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	in := sealedState{
		Answers: map[string]storedAnswer{"k": {Method: MethodElicit, Result: json.RawMessage(`{"action":"accept","content":{"name":"Ünïcode"}}`)}},
		Handler: json.RawMessage(`{"round":2}`),
	}
	tests := []struct {
		name        string
		ttl         time.Duration
		wantExpires int64
	}{
		{"expiring", time.Minute, now.Unix() + 60},
		{"never expiring", -1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := newTestStateCodec(t, tt.ttl, now)
			token, err := sc.seal("tools/call", "tool", "", in)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Trim(token, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.") != "" {
				t.Errorf("token %q has characters outside base64url and '.'", token)
			}
			sc.now = func() time.Time { return now.Add(1000 * time.Hour) }
			out, rerr := sc.open("tools/call", "tool", "", token)
			if tt.wantExpires != 0 {
				if rerr == nil || rerr.Message != msgRequestStateExpired {
					t.Fatalf("open after the expiry = %+v, want %q", rerr, msgRequestStateExpired)
				}
				sc.now = func() time.Time { return now }
				out, rerr = sc.open("tools/call", "tool", "", token)
			}
			if rerr != nil {
				t.Fatalf("open: %+v", rerr)
			}
			want := in
			want.Expires = tt.wantExpires
			// Compared as encoded: the payload escapes non-ASCII characters.
			if got, want := mustJSON(t, out), mustJSON(t, want); got != want {
				t.Errorf("opened %s, want %s", got, want)
			}
		})
	}
}

// TestRequestStateBinding: the tag covers method and subject without
// ambiguity, and only this codec's key verifies.
func TestRequestStateBinding(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	sc := newTestStateCodec(t, time.Hour, now)
	other := newTestStateCodec(t, time.Hour, now)
	token, err := sc.seal("tools/call", "ab", "", sealedState{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name            string
		codec           requestStateCodec
		method, subject string
	}{
		{"other subject", sc, "tools/call", "abc"},
		{"other method", sc, "prompts/get", "ab"},
		{"boundary moved between method and subject", sc, "tools/calla", "b"},
		{"other key", other, "tools/call", "ab"},
	}
	for _, tt := range tests {
		if _, rerr := tt.codec.open(tt.method, tt.subject, "", token); rerr == nil || rerr.Code != CodeInvalidParams || rerr.Message != msgRequestStateInvalid {
			t.Errorf("%s: open = %+v, want -32602 %q", tt.name, rerr, msgRequestStateInvalid)
		}
	}
	if _, rerr := sc.open("tools/call", "ab", "", token); rerr != nil {
		t.Errorf("the genuine state was refused: %+v", rerr)
	}
}

// TestRequestStateRefusesUnknownPayload: a correctly tagged payload this
// codec would never produce is refused too.
func TestRequestStateRefusesUnknownPayload(t *testing.T) {
	sc := newTestStateCodec(t, time.Hour, time.Unix(1_700_000_000, 0))
	for _, payload := range []string{`{"zzz":1}`, `[]`, `{"exp":"soon"}`, ``} {
		token := base64.RawURLEncoding.EncodeToString([]byte(payload)) + "." +
			base64.RawURLEncoding.EncodeToString(sc.tag("tools/call", "t", "", []byte(payload)))
		if _, rerr := sc.open("tools/call", "t", "", token); rerr == nil || rerr.Message != msgRequestStateInvalid {
			t.Errorf("payload %q: open = %+v", payload, rerr)
		}
	}
}

// Runtimes given the same StateKey accept each other's requestStates: the
// retry of an input_required round may reach another replica. A different
// key, or none, refuses them.
func TestRequestStateAcrossReplicas(t *testing.T) {
	replica := func(key []byte) *Runtime {
		opts := testOptions()
		opts.StateKey = key
		return askingRuntime(t, opts, survey)
	}
	tests := []struct {
		name         string
		issuer, user []byte
		accepted     bool
	}{
		{"same key", stateKey(1), stateKey(1), true},
		{"different keys", stateKey(1), stateKey(2), false},
		{"issuer has no key", nil, stateKey(1), false},
		{"user has no key", stateKey(1), nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state := wantInputRequired(t, dispatch(replica(tt.issuer), mrtrRequest("tools/call", retry("ask", "", ""), allCaps2026)), surveyAB)
			reply := dispatch(replica(tt.user), mrtrRequest("tools/call", retry("ask", `{"a":`+elicitAccepted+`,"b":`+sampledText+`}`, state), allCaps2026))
			if !tt.accepted {
				wantError(t, reply, CodeInvalidParams, msgRequestStateInvalid, "")
				return
			}
			s := wantInputRequired(t, reply, surveyC)
			wantResult(t, dispatch(replica(tt.user), mrtrRequest("tools/call", retry("ask", `{"c":`+rootsListed+`}`, s), allCaps2026)), completeText(surveyOK))
		})
	}
}

// A requestState has one spelling: the same bytes written with a line break
// (which base64 decoders skip), or with stray bits in the last character of
// a part, are refused as a tampered state. (Found by
// FuzzRequestStateTampering, which inserted "\r".)
func TestRequestStateHasOneSpelling(t *testing.T) {
	sc := newTestStateCodec(t, time.Hour, time.Unix(1_700_000_000, 0))
	token, err := sc.seal("tools/call", "t", "", sealedState{Handler: json.RawMessage(`{"step":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	payload, tag, _ := strings.Cut(token, ".")
	// The tag's 32 bytes take 43 characters, whose last one carries 2 spare
	// bits: the next character of the alphabet spells the same bytes.
	last := strings.IndexByte(b64URLAlphabet, tag[len(tag)-1])
	strayBits := payload + "." + tag[:len(tag)-1] + string(b64URLAlphabet[last+1])
	for _, spelling := range []string{payload[:5] + "\r" + payload[5:], payload + "." + tag[:3] + "\n" + tag[3:], token + "\r\n", strayBits} {
		if _, rerr := sc.open("tools/call", "t", "", spelling); rerr == nil || rerr.Message != msgRequestStateInvalid {
			t.Errorf("state %q: open = %+v", spelling, rerr)
		}
	}
}

const b64URLAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
