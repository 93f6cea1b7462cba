package main

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// requestStateDomain separates requestState tags from every other use of
// the key, names the requestState key derived from a shared state key, and
// names the format version.
const requestStateDomain = "mcpstdio requestState v1"

// Messages of the -32602 errors for a requestState that is refused.
const (
	msgRequestStateInvalid = "requestState integrity check failed"
	msgRequestStateExpired = "requestState expired"
)

// requestStateCodec seals and opens the requestState of 2026 multi-round
// requests: base64url(payload) "." base64url(HMAC-SHA256(key, domain,
// method, subject, payload[, binding])). The tag binds the payload to the
// method, to the tool or prompt name or resource URI it was issued for, and
// to the principal it was issued to (principalBinding; "" without one,
// which adds no part), so a state replayed on another request, or by
// another principal, fails verification like a tampered one. The
// payload is JSON readable by the client: integrity-protected, not secret.
//
// All fields are set once by newRequestStateCodec; it is safe for
// concurrent use.
type requestStateCodec struct {
	key []byte
	ttl time.Duration // <= 0: states never expire
	now func() time.Time
}

// newRequestStateCodec returns a codec whose key is derived from stateKey
// (see codecKey): nil draws a fresh random key, so only this codec accepts
// its states.
func newRequestStateCodec(stateKey []byte, ttl time.Duration) (requestStateCodec, error) {
	key, err := codecKey(stateKey, requestStateDomain)
	if err != nil {
		return requestStateCodec{}, err
	}
	return requestStateCodec{key: key, ttl: ttl, now: time.Now}, nil
}

// sealedState is what a requestState carries from one round of a request to
// the next.
type sealedState struct {
	// Expires is the Unix time, in seconds, after which the state is
	// refused; 0 when it never expires.
	Expires int64 `json:"exp,omitempty"`
	// Answers are the client's results the handler has obtained so far, by
	// input key.
	Answers map[string]storedAnswer `json:"answers,omitempty"`
	// Handler is the handler's own state (HandlerRequest.SetState).
	Handler json.RawMessage `json:"state,omitempty"`
}

// storedAnswer is one client result and the method it answered.
type storedAnswer struct {
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
}

// seal returns the requestState of s for a request of method about subject
// by the principal binding names, setting its expiry from the codec's TTL.
func (sc requestStateCodec) seal(method, subject, binding string, s sealedState) (string, error) {
	s.Expires = 0
	if sc.ttl > 0 {
		s.Expires = sc.now().Add(sc.ttl).Unix()
	}
	payload, err := marshalJSON(s)
	if err != nil {
		return "", fmt.Errorf("encoding requestState: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(payload) + "." +
		base64.RawURLEncoding.EncodeToString(sc.tag(method, subject, binding, payload)), nil
}

// open verifies a requestState received on a request of method about subject
// by the principal binding names, and returns what it carries. A state that
// is malformed, forged, altered or issued for another method, subject or
// principal (or by a Runtime with another state key) is -32602
// "requestState integrity check failed"; a genuine state past its expiry is
// -32602 "requestState expired".
func (sc requestStateCodec) open(method, subject, binding, token string) (sealedState, *RPCError) {
	encPayload, encTag, ok := strings.Cut(token, ".")
	if !ok {
		return sealedState{}, invalidParams(msgRequestStateInvalid)
	}
	payload, ok1 := decodeTokenPart(encPayload)
	tag, ok2 := decodeTokenPart(encTag)
	if !ok1 || !ok2 || !hmac.Equal(tag, sc.tag(method, subject, binding, payload)) {
		return sealedState{}, invalidParams(msgRequestStateInvalid)
	}
	var s sealedState
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		// Only this codec signs payloads, so this is a bug, not an attack.
		return sealedState{}, invalidParams(msgRequestStateInvalid)
	}
	if s.Expires != 0 && sc.now().Unix() > s.Expires {
		return sealedState{}, invalidParams(msgRequestStateExpired)
	}
	return s, nil
}

// tag is the HMAC-SHA256 of the domain, method, subject, payload and, when
// not empty, binding, each length-prefixed so no two different inputs share
// a byte string.
func (sc requestStateCodec) tag(method, subject, binding string, payload []byte) []byte {
	mac := hmac.New(sha256.New, sc.key)
	parts := [][]byte{[]byte(requestStateDomain), []byte(method), []byte(subject), payload}
	if binding != "" {
		parts = append(parts, []byte(binding))
	}
	for _, part := range parts {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(part)))
		mac.Write(n[:])
		mac.Write(part)
	}
	return mac.Sum(nil)
}
