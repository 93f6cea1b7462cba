package main

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"testing"
)

func TestCursorRoundTrip(t *testing.T) {
	cc, err := newCursorCodec(nil)
	if err != nil {
		t.Fatal(err)
	}
	cursor := cc.encode(listTools, 7, 42, "")
	if off, ok := cc.decode(cursor, listTools, 7, ""); !ok || off != 42 {
		t.Fatalf("decode = %d, %v", off, ok)
	}
	refused := []struct {
		name       string
		cursor     string
		kind       listKind
		generation uint64
	}{
		{"other list", cursor, listPrompts, 7},
		{"stale", cursor, listTools, 8},
		{"empty", "", listTools, 7},
		{"padded base64", cursor + "=", listTools, 7},
		{"zero offset", cc.encode(listTools, 7, 0, ""), listTools, 7},
	}
	for _, r := range refused {
		if off, ok := cc.decode(r.cursor, r.kind, r.generation, ""); ok {
			t.Errorf("%s: decoded offset %d", r.name, off)
		}
	}
	// Flipping any bit of payload or tag invalidates the cursor.
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		t.Fatal(err)
	}
	for i := range raw {
		forged := append([]byte(nil), raw...)
		forged[i] ^= 0x10
		if _, ok := cc.decode(base64.RawURLEncoding.EncodeToString(forged), listTools, 7, ""); ok {
			t.Errorf("cursor with byte %d flipped accepted", i)
		}
	}
	other, err := newCursorCodec(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := other.decode(cursor, listTools, 7, ""); ok {
		t.Error("another codec's key accepted the cursor")
	}
}

func TestPaginate(t *testing.T) {
	cc, err := newCursorCodec(nil)
	if err != nil {
		t.Fatal(err)
	}
	list := []int{1, 2, 3}
	page, next, rerr := paginate(cc, listTools, list, 1, "", 2, "")
	if rerr != nil || len(page) != 2 || next == "" {
		t.Fatalf("first page %v next %q err %v", page, next, rerr)
	}
	page, next, rerr = paginate(cc, listTools, list, 1, next, 2, "")
	if rerr != nil || len(page) != 1 || page[0] != 3 || next != "" {
		t.Fatalf("last page %v next %q err %v", page, next, rerr)
	}
	page, next, rerr = paginate(cc, listTools, list, 1, "", 3, "")
	if rerr != nil || len(page) != 3 || next != "" {
		t.Fatalf("exact single page %v next %q err %v", page, next, rerr)
	}
	if _, _, rerr := paginate(cc, listTools, list, 1, cc.encode(listTools, 1, 3, ""), 2, ""); rerr == nil || rerr.Message != "Invalid cursor" {
		t.Fatalf("cursor past the end: %v", rerr)
	}
	if page, next, rerr := paginate(cc, listTools, []int{}, 0, "", 2, ""); rerr != nil || len(page) != 0 || next != "" {
		t.Fatalf("empty list: %v %q %v", page, next, rerr)
	}
}

// stateKey returns a 32-byte state key filled with b.
func stateKey(b byte) []byte { return bytes.Repeat([]byte{b}, minStateKeyBytes) }

// Runtimes given the same StateKey accept each other's cursors: a client
// may page through tools/list across replicas. A different key, or none,
// refuses them.
func TestCursorAcrossReplicas(t *testing.T) {
	replica := func(key []byte) *Runtime {
		opts := testOptions()
		opts.PageSize, opts.StateKey = 2, key
		rt := newTestRuntime(t, opts)
		for _, name := range []string{"a", "b", "c"} {
			mustAddTool(t, rt, Tool{Name: name}, echoTool(name))
		}
		return rt
	}
	tests := []struct {
		name         string
		issuer, user []byte
		accepted     bool
	}{
		{"same key", stateKey(1), stateKey(1), true},
		{"same key, longer than 32 bytes", bytes.Repeat([]byte("k"), 100), bytes.Repeat([]byte("k"), 100), true},
		{"different keys", stateKey(1), stateKey(2), false},
		{"issuer has no key", nil, stateKey(1), false},
		{"user has no key", stateKey(1), nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var first struct{ NextCursor string }
			decodeResult(t, dispatch(replica(tt.issuer), statelessRequest("tools/list", "")), &first)
			if first.NextCursor == "" {
				t.Fatal("no nextCursor on the first page of three tools at two a page")
			}
			reply := dispatch(replica(tt.user), statelessRequest("tools/list", fmt.Sprintf(`{"cursor":%q}`, first.NextCursor)))
			if !tt.accepted {
				wantError(t, reply, CodeInvalidParams, "Invalid cursor", "")
				return
			}
			var second struct{ Tools []Tool }
			decodeResult(t, reply, &second)
			if len(second.Tools) != 1 || second.Tools[0].Name != "c" {
				t.Fatalf("second page %+v, want tool c", second.Tools)
			}
		})
	}
}

// The cursor and requestState keys derived from one state key differ, so a
// tag of one kind never verifies as the other.
func TestCodecKeysFromStateKey(t *testing.T) {
	cc, err := newCursorCodec(stateKey(7))
	if err != nil {
		t.Fatal(err)
	}
	sc, err := newRequestStateCodec(stateKey(7), 0)
	if err != nil {
		t.Fatal(err)
	}
	again, err := newCursorCodec(stateKey(7))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(cc.key, again.key) || len(cc.key) != 32 {
		t.Fatalf("cursor keys from one state key: %x and %x", cc.key, again.key)
	}
	if bytes.Equal(cc.key, sc.key) || bytes.Equal(cc.key, stateKey(7)) {
		t.Fatalf("cursor key %x, requestState key %x: want distinct keys, neither the state key", cc.key, sc.key)
	}
}

// A cursor has one spelling: the same bytes written with a line break
// (which base64 decoders skip), or with stray bits in its last character,
// are refused as a forged cursor. (Found by FuzzCursorTampering, which
// inserted "\r".)
func TestCursorHasOneSpelling(t *testing.T) {
	cc, err := newCursorCodec(nil)
	if err != nil {
		t.Fatal(err)
	}
	cursor := cc.encode(listTools, 7, 42, "")
	for _, spelling := range []string{cursor[:10] + "\r" + cursor[10:], cursor[:10] + "\n" + cursor[10:], cursor + "\r\n", "\n" + cursor} {
		if off, ok := cc.decode(spelling, listTools, 7, ""); ok {
			t.Errorf("cursor %q decoded to %d", spelling, off)
		}
	}
}
