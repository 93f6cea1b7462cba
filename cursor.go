package main

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"strings"
)

// listKind names one paginated list of the catalog. A cursor is only valid
// for the list it was issued for. Features number their lists from 64.
type listKind byte

const (
	listTools listKind = iota + 1
	listPrompts
	listResources
	listResourceTemplates
)

// kindCount sizes per-kind arrays; listKind values start at 1.
const kindCount = int(listResourceTemplates) + 1

const (
	cursorPayloadBytes = 1 + 8 + 8 // kind, generation, offset
	cursorTagBytes     = 16        // truncated HMAC-SHA256
)

// cursorDomain names the cursor key derived from a shared state key, and the
// cursor format version.
const cursorDomain = "mcpstdio cursor v1"

// cursorCodec issues and checks opaque pagination cursors: base64url of
// (list kind, catalog generation, offset) followed by a truncated
// HMAC-SHA256 tag of those and of the principal binding the cursor was
// issued to (principalBinding: "" without one), so that a cursor pages only
// the list of the principal it was issued to. Its key is set once at construction; it is safe for
// concurrent use.
type cursorCodec struct {
	key []byte
}

// newCursorCodec returns a codec whose key is derived from stateKey (see
// codecKey): nil draws a fresh random key, so only this codec accepts its
// cursors.
func newCursorCodec(stateKey []byte) (cursorCodec, error) {
	key, err := codecKey(stateKey, cursorDomain)
	if err != nil {
		return cursorCodec{}, err
	}
	return cursorCodec{key: key}, nil
}

// minStateKeyBytes is the shortest RuntimeOptions.StateKey accepted: as
// long as the HMAC-SHA256 keys derived from it.
const minStateKeyBytes = 32

// codecKey returns the HMAC-SHA256 key of the codec named by domain. With a
// shared state key it is HMAC-SHA256(stateKey, domain), so every Runtime
// given the same state key derives the same key, and codecs of different
// domains never share one. With a nil state key it is minStateKeyBytes
// fresh bytes from crypto/rand.
func codecKey(stateKey []byte, domain string) ([]byte, error) {
	if stateKey == nil {
		key := make([]byte, minStateKeyBytes)
		if _, err := rand.Read(key); err != nil {
			return nil, fmt.Errorf("drawing the %q key: %w", domain, err)
		}
		return key, nil
	}
	mac := hmac.New(sha256.New, stateKey)
	mac.Write([]byte(domain))
	return mac.Sum(nil), nil
}

func (cc cursorCodec) encode(kind listKind, generation uint64, offset int, binding string) string {
	buf := make([]byte, cursorPayloadBytes, cursorPayloadBytes+cursorTagBytes)
	buf[0] = byte(kind)
	binary.BigEndian.PutUint64(buf[1:9], generation)
	binary.BigEndian.PutUint64(buf[9:17], uint64(offset))
	buf = append(buf, cc.tag(buf, binding)...)
	return base64.RawURLEncoding.EncodeToString(buf)
}

// decode returns the offset a cursor names. ok is false for a cursor that is
// malformed, forged, issued for another list or another binding, or stale
// (issued for another generation of the list).
func (cc cursorCodec) decode(cursor string, kind listKind, generation uint64, binding string) (offset int, ok bool) {
	buf, ok := decodeTokenPart(cursor)
	if !ok || len(buf) != cursorPayloadBytes+cursorTagBytes {
		return 0, false
	}
	payload, tag := buf[:cursorPayloadBytes], buf[cursorPayloadBytes:]
	if !hmac.Equal(tag, cc.tag(payload, binding)) {
		return 0, false
	}
	if listKind(payload[0]) != kind || binary.BigEndian.Uint64(payload[1:9]) != generation {
		return 0, false
	}
	off := binary.BigEndian.Uint64(payload[9:17])
	if off == 0 || off > uint64(maxInt) {
		return 0, false
	}
	return int(off), true
}

const maxInt = int(^uint(0) >> 1)

// decodeTokenPart decodes s, a part of a token the runtime issued (a cursor,
// a requestState), written as unpadded base64url: in that one spelling only
// (no padding, no stray bits in its last character, no line breaks, which a
// base64 decoder otherwise skips), so that no other text passes for a token
// issued.
func decodeTokenPart(s string) ([]byte, bool) {
	if strings.ContainsAny(s, "\r\n") {
		return nil, false
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(s)
	return b, err == nil
}

// tag is the truncated HMAC-SHA256 of payload, which has a fixed length,
// followed by binding.
func (cc cursorCodec) tag(payload []byte, binding string) []byte {
	mac := hmac.New(sha256.New, cc.key)
	mac.Write(payload)
	mac.Write([]byte(binding))
	return mac.Sum(nil)[:cursorTagBytes]
}

// paginate returns the page of list that cursor starts (the first page for
// ""), and the cursor of the next page ("" on the last page). list and
// generation must be one consistent snapshot; cursors are bound to binding. A cursor that decode refuses,
// or that points past the list, is -32602 "Invalid cursor".
func paginate[E any](cc cursorCodec, kind listKind, list []E, generation uint64, cursor string, pageSize int, binding string) ([]E, string, *RPCError) {
	offset := 0
	if cursor != "" {
		off, ok := cc.decode(cursor, kind, generation, binding)
		if !ok || off >= len(list) {
			return nil, "", &RPCError{Code: CodeInvalidParams, Message: "Invalid cursor"}
		}
		offset = off
	}
	end := min(offset+pageSize, len(list))
	next := ""
	if end < len(list) {
		next = cc.encode(kind, generation, end, binding)
	}
	return list[offset:end], next, nil
}
