package main

// Request ids: which ids are tracked, and the one canonical text of each
// (docs/explanation/contract.md, "The per-line pipeline").

import (
	"unicode/utf8"
)

// canonicalID returns the canonical JSON text of a tracked request id and
// true, or "", false when raw is not trackable.
//
// Tracked: a JSON string whose unescaped value is at most maxIDBytes UTF-8
// bytes, or an integer literal (no fraction, no exponent) in the signed 64-bit
// range. Canonical text: for strings, the ASCII-only JSON encoding of the
// unescaped value (escapes as encoding/json writes them, non-ASCII as \uXXXX);
// an escaped lone surrogate is kept as its own \uXXXX escape (counted as 3
// bytes) so the id echoed back is the one the client sent. For integers,
// strconv.FormatInt of the value (so "-0" becomes "0").
func canonicalID(raw []byte) (string, bool) {
	if len(raw) == 0 {
		return "", false
	}
	if raw[0] == '"' {
		return canonicalStringID(raw)
	}
	return canonicalIntegerID(raw)
}

func canonicalStringID(raw []byte) (string, bool) {
	// Unescaping shrinks text at most sixfold (\u0061 → a), so a longer token
	// is too long for an id whatever it holds.
	if len(raw)-2 > 6*maxIDBytes {
		return "", false
	}
	if isPlainASCIIString(raw) {
		if len(raw)-2 > maxIDBytes {
			return "", false
		}
		return string(raw), true
	}
	end, _, err := scanString(raw, 0)
	if err != nil || end != len(raw) {
		return "", false
	}
	content := raw[1 : len(raw)-1]
	out := make([]byte, 0, len(raw)+16)
	out = append(out, '"')
	decodedBytes := 0
	for i := 0; i < len(content); {
		r, size, lone := nextStringUnit(content, i)
		i += size
		if lone {
			decodedBytes += 3 // as U+FFFD or as the surrogate's own 3-byte sequence
			out = appendUnicodeEscape(out, r)
		} else {
			decodedBytes += utf8.RuneLen(r)
			out = appendCanonicalRune(out, r)
		}
		if decodedBytes > maxIDBytes {
			return "", false
		}
	}
	return string(append(out, '"')), true
}

// isPlainASCIIString reports whether raw is a string token whose content is
// printable ASCII without quotes or backslashes: its own canonical form.
func isPlainASCIIString(raw []byte) bool {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return false
	}
	for _, c := range raw[1 : len(raw)-1] {
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// plainStringContent returns the content of raw, without its quotes, when
// raw is a string token isPlainASCIIString accepts (its text is its
// content); nil otherwise.
func plainStringContent(raw []byte) []byte {
	if !isPlainASCIIString(raw) {
		return nil
	}
	return raw[1 : len(raw)-1]
}

func canonicalIntegerID(raw []byte) (string, bool) {
	digits := raw
	negative := raw[0] == '-'
	if negative {
		digits = raw[1:]
	}
	// 19 digits hold every int64; fewer-than-20-digit values cannot overflow uint64.
	if len(digits) == 0 || len(digits) > 19 || (digits[0] == '0' && len(digits) > 1) {
		return "", false
	}
	var magnitude uint64
	for _, c := range digits {
		if !isJSONDigit(c) {
			return "", false
		}
		magnitude = magnitude*10 + uint64(c-'0')
	}
	limit := uint64(1<<63 - 1)
	if negative {
		limit = 1 << 63
	}
	switch {
	case magnitude > limit:
		return "", false
	case magnitude == 0:
		return "0", true
	}
	return string(raw), true
}
