package main

import (
	"encoding/base64"
	"testing"
)

func TestCursorRoundTrip(t *testing.T) {
	cc, err := newCursorCodec()
	if err != nil {
		t.Fatal(err)
	}
	cursor := cc.encode(listTools, 7, 42)
	if off, ok := cc.decode(cursor, listTools, 7); !ok || off != 42 {
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
		{"zero offset", cc.encode(listTools, 7, 0), listTools, 7},
	}
	for _, r := range refused {
		if off, ok := cc.decode(r.cursor, r.kind, r.generation); ok {
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
		if _, ok := cc.decode(base64.RawURLEncoding.EncodeToString(forged), listTools, 7); ok {
			t.Errorf("cursor with byte %d flipped accepted", i)
		}
	}
	other, err := newCursorCodec()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := other.decode(cursor, listTools, 7); ok {
		t.Error("another codec's key accepted the cursor")
	}
}

func TestPaginate(t *testing.T) {
	cc, err := newCursorCodec()
	if err != nil {
		t.Fatal(err)
	}
	list := []int{1, 2, 3}
	page, next, rerr := paginate(cc, listTools, list, 1, "", 2)
	if rerr != nil || len(page) != 2 || next == "" {
		t.Fatalf("first page %v next %q err %v", page, next, rerr)
	}
	page, next, rerr = paginate(cc, listTools, list, 1, next, 2)
	if rerr != nil || len(page) != 1 || page[0] != 3 || next != "" {
		t.Fatalf("last page %v next %q err %v", page, next, rerr)
	}
	page, next, rerr = paginate(cc, listTools, list, 1, "", 3)
	if rerr != nil || len(page) != 3 || next != "" {
		t.Fatalf("exact single page %v next %q err %v", page, next, rerr)
	}
	if _, _, rerr := paginate(cc, listTools, list, 1, cc.encode(listTools, 1, 3), 2); rerr == nil || rerr.Message != "Invalid cursor" {
		t.Fatalf("cursor past the end: %v", rerr)
	}
	if page, next, rerr := paginate(cc, listTools, []int{}, 0, "", 2); rerr != nil || len(page) != 0 || next != "" {
		t.Fatalf("empty list: %v %q %v", page, next, rerr)
	}
}
