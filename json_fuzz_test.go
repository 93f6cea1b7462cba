package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// The seed corpora live in testdata/fuzz/<FuzzName>/.

// jsonReferenceAccepts is a slow statement, independent of decodeEnvelope, of
// which lines decodeEnvelope must accept: encoding/json finds one valid value
// in valid UTF-8, and walking its tokens finds no duplicate key (as
// encoding/json unescapes keys), no nesting deeper than maxJSONDepth and no
// over-long number.
func jsonReferenceAccepts(line []byte) bool {
	if !json.Valid(line) || !utf8.Valid(line) {
		return false
	}
	type container struct {
		keys     map[string]bool // nil for an array
		awaitKey bool            // an object expecting a key next
	}
	var stack []*container
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return true
		}
		if err != nil {
			panic("encoding/json rejects tokens of a valid line: " + err.Error())
		}
		var top *container
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{', '[':
				if len(stack) == maxJSONDepth {
					return false
				}
				c := &container{}
				if v == '{' {
					c.keys, c.awaitKey = map[string]bool{}, true
				}
				stack = append(stack, c)
				continue // the parent's value completes at the matching close
			default:
				stack = stack[:len(stack)-1]
				if len(stack) > 0 {
					top = stack[len(stack)-1]
				} else {
					top = nil
				}
			}
		case string:
			if top != nil && top.awaitKey {
				if top.keys[v] {
					return false
				}
				top.keys[v], top.awaitKey = true, false
				continue
			}
		case json.Number:
			if !jsonNumberWithinLimits(string(v)) {
				return false
			}
		}
		if top != nil && top.keys != nil {
			top.awaitKey = true
		}
	}
}

// jsonNumberWithinLimits reports whether n, a valid JSON number, keeps the
// decoder's limit (docs/explanation/contract.md, "Framing"): an integer
// literal (no fraction, no exponent) has at most 64 digits; a number with a
// fraction or an exponent may be of any length.
func jsonNumberWithinLimits(n string) bool {
	if strings.ContainsAny(n, ".eE") {
		return true
	}
	return len(strings.TrimPrefix(n, "-")) <= maxIntegerDigits
}

func FuzzDecodeEnvelope(f *testing.F) {
	f.Fuzz(func(t *testing.T, line []byte) {
		env, err := decodeEnvelope(line)
		want := jsonReferenceAccepts(line)
		if err != nil {
			if !errors.Is(err, errParse) {
				t.Fatalf("decodeEnvelope(%q) error %v does not wrap errParse", line, err)
			}
			if want {
				t.Fatalf("decodeEnvelope(%q) = %v, but the reference accepts it", line, err)
			}
			if !reflect.DeepEqual(env, envelope{}) {
				t.Fatalf("decodeEnvelope(%q) failed but returned %+v", line, env)
			}
			return
		}
		if !want {
			t.Fatalf("decodeEnvelope(%q) accepted what the reference rejects", line)
		}
		checkEnvelopeKind(t, line, env.kind)
		checkEnvelopeMembers(t, line, env)
	})
}

func checkEnvelopeKind(t *testing.T, line []byte, kind jsonKind) {
	t.Helper()
	var v any
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("encoding/json cannot decode accepted line %q: %v", line, err)
	}
	var want jsonKind
	switch v.(type) {
	case map[string]any:
		want = kindObject
	case []any:
		want = kindArray
	case string:
		want = kindString
	case json.Number:
		want = kindNumber
	case bool:
		want = kindBool
	case nil:
		want = kindNull
	}
	if kind != want {
		t.Fatalf("decodeEnvelope(%q).kind = %d, want %d", line, kind, want)
	}
}

// checkEnvelopeMembers compares the captured members with encoding/json's view of the
// top-level object and with lookupMember.
func checkEnvelopeMembers(t *testing.T, line []byte, env envelope) {
	t.Helper()
	fields := []struct {
		name string
		got  []byte
	}{
		{"jsonrpc", env.jsonrpc}, {"method", env.method}, {"id", env.id},
		{"params", env.params}, {"result", env.result}, {"error", env.errorV},
	}
	var members map[string]json.RawMessage
	if env.kind == kindObject {
		if err := json.Unmarshal(line, &members); err != nil {
			t.Fatalf("encoding/json cannot decode accepted object %q: %v", line, err)
		}
	}
	for _, field := range fields {
		want, present := members[field.name]
		if present != (field.got != nil) || !bytes.Equal(field.got, want) {
			t.Fatalf("decodeEnvelope(%q) member %s = %q, want %q (present %v)", line, field.name, field.got, want, present)
		}
		looked, ok := lookupMember(line, field.name)
		if ok != present || !bytes.Equal(looked, want) {
			t.Fatalf("lookupMember(%q, %q) = %q, %v; want %q, %v", line, field.name, looked, ok, want, present)
		}
	}
}

func FuzzAppendASCII(f *testing.F) {
	f.Fuzz(func(t *testing.T, raw []byte) {
		out := appendASCII(nil, raw) // must not panic on any input
		if withPrefix := appendASCII([]byte("p"), raw); string(withPrefix) != "p"+string(out) {
			t.Fatalf("appendASCII with a prefix = %q, want %q", withPrefix, "p"+string(out))
		}
		if !json.Valid(raw) {
			return
		}
		if !isPureASCII(out) {
			t.Fatalf("appendASCII(%q) = %q is not pure ASCII", raw, out)
		}
		if !json.Valid(out) {
			t.Fatalf("appendASCII(%q) = %q is not valid JSON", raw, out)
		}
		if again := appendASCII(nil, out); !bytes.Equal(again, out) {
			t.Fatalf("appendASCII is not idempotent: %q → %q → %q", raw, out, again)
		}
		if isPureASCII(raw) {
			var compact bytes.Buffer
			if err := json.Compact(&compact, raw); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out, compact.Bytes()) {
				t.Fatalf("appendASCII(%q) = %q, want json.Compact's %q", raw, out, compact.Bytes())
			}
		}
		// Invalid UTF-8 and lone surrogates both decode to U+FFFD in
		// encoding/json, so compare decoded values.
		if want, got := jsonDecodeAny(t, raw), jsonDecodeAny(t, out); !reflect.DeepEqual(got, want) {
			t.Fatalf("appendASCII(%q) = %q decodes to %#v, want %#v", raw, out, got, want)
		}
	})
}

// FuzzAppendJSONString checks the string encoder against marshalJSON on
// any text, valid UTF-8 or not.
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "plain", "é 世界 😀", "\xff\xe4\xb8", "\"\\\n\x00", nonASCIIText(40)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := marshalJSON(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendJSONString([]byte("p"), s); string(got) != "p"+string(want) {
			t.Fatalf("appendJSONString(%q) = %s, want p%s", s, got, want)
		}
	})
}

func jsonDecodeAny(t *testing.T, data []byte) any {
	t.Helper()
	var v any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode %q: %v", data, err)
	}
	return v
}

func FuzzCanonicalID(f *testing.F) {
	f.Fuzz(func(t *testing.T, raw []byte) {
		id, ok := canonicalID(raw)
		decoded, isString := decodeString(raw)
		if isString {
			var fromJSON string
			if err := json.Unmarshal(raw, &fromJSON); err != nil || fromJSON != decoded {
				t.Fatalf("decodeString(%q) = %q; encoding/json gives %q, %v", raw, decoded, fromJSON, err)
			}
		} else if json.Valid(raw) && utf8.Valid(raw) && raw[0] == '"' && raw[len(raw)-1] == '"' {
			t.Fatalf("decodeString(%q) rejects a valid string token", raw)
		}
		integer, intErr := strconv.ParseInt(string(raw), 10, 64)
		isInteger := intErr == nil && json.Valid(raw) && !bytes.ContainsAny(raw, ".eE")
		switch {
		case isString:
			if ok != (len(decoded) <= maxIDBytes) {
				t.Fatalf("canonicalID(%q) ok = %v for a %d-byte string", raw, ok, len(decoded))
			}
		case isInteger:
			if !ok || id != strconv.FormatInt(integer, 10) {
				t.Fatalf("canonicalID(%q) = %q, %v; want %q", raw, id, ok, strconv.FormatInt(integer, 10))
			}
		case ok:
			t.Fatalf("canonicalID(%q) = %q, true for an untrackable id", raw, id)
		}
		if !ok {
			if id != "" {
				t.Fatalf("canonicalID(%q) = %q, false; want an empty string", raw, id)
			}
			return
		}
		if !isPureASCII([]byte(id)) {
			t.Fatalf("canonicalID(%q) = %q is not pure ASCII", raw, id)
		}
		if again, ok := canonicalID([]byte(id)); !ok || again != id {
			t.Fatalf("canonicalID is not idempotent: %q → %q → %q, %v", raw, id, again, ok)
		}
		if isString {
			if back, _ := decodeString([]byte(id)); back != decoded {
				t.Fatalf("canonicalID(%q) = %q decodes to %q, want %q", raw, id, back, decoded)
			}
			if canonical := string(appendASCII(nil, encodingJSONCompact(t, decoded))); !strings.Contains(decoded, "\ufffd") && id != canonical {
				t.Fatalf("canonicalID(%q) = %q, want encoding/json's %q", raw, id, canonical)
			}
		}
	})
}

func FuzzLookupMember(f *testing.F) {
	f.Fuzz(func(t *testing.T, obj []byte, name string) {
		value, ok := lookupMember(obj, name) // must not panic on any input
		if ok && !bytes.Contains(obj, value) {
			t.Fatalf("lookupMember(%q, %q) = %q is not part of the object", obj, name, value)
		}
		env, err := decodeEnvelope(obj)
		if err != nil || env.kind != kindObject {
			return
		}
		var members map[string]json.RawMessage
		if err := json.Unmarshal(obj, &members); err != nil {
			t.Fatalf("encoding/json cannot decode accepted object %q: %v", obj, err)
		}
		want, present := members[name]
		if ok != present || !bytes.Equal(value, want) {
			t.Fatalf("lookupMember(%q, %q) = %q, %v; want %q, %v", obj, name, value, ok, want, present)
		}
	})
}
