package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/bits"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
)

// The encoding half of the JSON layer: pure-ASCII output, byte-identical to
// compact encoding/json (HTML escaping off) for ASCII data.

// appendJSONString appends s as a JSON string exactly as marshalJSON encodes
// it: encoding/json's escapes with HTML escaping off (invalid UTF-8 as
// \ufffd), then every non-ASCII character as appendASCII escapes it.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	stops := stringStops{quote: -1, backslash: -1}
	start, plain := 0, 0 // s[start:i] is copied as it is; plain: its words examined
	for i := 0; i < len(s); {
		// Eight bytes at a time up to the first byte that is not copied as
		// it is, handing a long run of them to longRun; in the last few
		// bytes, one at a time.
		c := s[i]
		if i+8 <= len(s) {
			m := stringStopper(wordAt(s, i))
			if m == 0 {
				if i, plain = i+8, plain+8; plain >= longRunBytes {
					i, plain = longRun(&stops, s, i), 0
				}
				continue
			}
			i += bits.TrailingZeros64(m) >> 3
			c = s[i]
		} else if c >= 0x20 && c < utf8.RuneSelf && c != '"' && c != '\\' {
			i++
			continue
		}
		dst = append(dst, s[start:i]...)
		if c < utf8.RuneSelf {
			dst = appendCanonicalRune(dst, rune(c))
			i++
		} else {
			dst, i = appendNonASCIIRun(dst, s, i)
		}
		start, plain = i, 0
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// appendNonASCIIRun appends the run of non-ASCII characters at s[i] as
// appendRuneEscape escapes them (invalid UTF-8 as \ufffd) and returns the
// offset where the run ends. Non-ASCII text comes in runs (words, scripts),
// escaped here in one tight loop.
func appendNonASCIIRun[T string | []byte](dst []byte, s T, i int) ([]byte, int) {
	for i < len(s) && s[i] >= utf8.RuneSelf {
		r, size := decodeRuneAt(s, i)
		i += size
		if r > 0xffff {
			high, low := utf16.EncodeRune(r)
			dst = appendUnicodeEscape(dst, high)
			r = low
		}
		dst = appendUnicodeEscape(dst, r)
	}
	return dst, i
}

// decodeRuneAt decodes the non-ASCII UTF-8 sequence at s[i] as
// utf8.DecodeRune does: RuneError and size 1 for an invalid one (a valid
// sequence is never 1 byte long).
func decodeRuneAt[T string | []byte](s T, i int) (rune, int) {
	c := s[i]
	switch {
	case c < 0xc2:
	case c < 0xe0:
		if i+1 < len(s) && s[i+1]&0xc0 == 0x80 {
			return rune(c&0x1f)<<6 | rune(s[i+1]&0x3f), 2
		}
	case c < 0xf0:
		if i+2 < len(s) && s[i+1]&0xc0 == 0x80 && s[i+2]&0xc0 == 0x80 {
			// Valid unless overlong (below U+0800) or a surrogate.
			if r := rune(c&0x0f)<<12 | rune(s[i+1]&0x3f)<<6 | rune(s[i+2]&0x3f); r >= 0x800 && !utf16.IsSurrogate(r) {
				return r, 3
			}
		}
	case c < 0xf5:
		if i+3 < len(s) && s[i+1]&0xc0 == 0x80 && s[i+2]&0xc0 == 0x80 && s[i+3]&0xc0 == 0x80 {
			// Valid unless overlong (below U+10000) or beyond U+10FFFF.
			if r := rune(c&0x07)<<18 | rune(s[i+1]&0x3f)<<12 | rune(s[i+2]&0x3f)<<6 | rune(s[i+3]&0x3f); r >= 0x10000 && r <= utf8.MaxRune {
				return r, 4
			}
		}
	}
	return utf8.RuneError, 1
}

// wordAt returns the eight bytes of b at i as one little-endian word, as
// binary.LittleEndian.Uint64 does (the compiler makes it one load).
func wordAt[T string | []byte](b T, i int) uint64 {
	b = b[i : i+8]
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

// appendCanonicalRune appends r as encoding/json (HTML escaping off) writes it
// in a string, with every non-ASCII character escaped as appendASCII does.
func appendCanonicalRune(dst []byte, r rune) []byte {
	switch r {
	case '"':
		return append(dst, '\\', '"')
	case '\\':
		return append(dst, '\\', '\\')
	case '\b':
		return append(dst, '\\', 'b')
	case '\f':
		return append(dst, '\\', 'f')
	case '\n':
		return append(dst, '\\', 'n')
	case '\r':
		return append(dst, '\\', 'r')
	case '\t':
		return append(dst, '\\', 't')
	}
	if r < 0x20 || r >= utf8.RuneSelf {
		return appendRuneEscape(dst, r)
	}
	return append(dst, byte(r))
}

// appendRuneEscape appends r as \uXXXX, or as a surrogate pair of them above U+FFFF.
func appendRuneEscape(dst []byte, r rune) []byte {
	if r > 0xffff {
		high, low := utf16.EncodeRune(r)
		return appendUnicodeEscape(appendUnicodeEscape(dst, high), low)
	}
	return appendUnicodeEscape(dst, r)
}

// appendUnicodeEscape appends the escape \uXXXX of the 16-bit code unit u, in lower-case hex.
func appendUnicodeEscape(dst []byte, u rune) []byte {
	const hex = "0123456789abcdef"
	return append(dst, '\\', 'u', hex[u>>12&0xf], hex[u>>8&0xf], hex[u>>4&0xf], hex[u&0xf])
}

// appendASCII appends raw, a valid JSON text, to dst in compact form
// (insignificant whitespace removed) with every non-ASCII character inside
// strings escaped as \uXXXX (lower-case hex; characters above U+FFFF as a
// UTF-16 surrogate pair), so the result is pure ASCII and U+2028/U+2029 never
// appear raw. Invalid UTF-8 bytes inside strings become \ufffd (as
// encoding/json does). Everything else is copied byte for byte, so an
// all-ASCII compact input is appended unchanged, with a single append. On
// input that is not valid JSON it never panics; the output is then unspecified.
func appendASCII(dst, raw []byte) []byte {
	i, inString := compactASCIIPrefix(raw)
	if i == len(raw) {
		return append(dst, raw...)
	}
	if need := len(raw) + escapeGrowth(raw[i:]); cap(dst)-len(dst) < need {
		grown := make([]byte, len(dst), len(dst)+need)
		copy(grown, dst)
		dst = grown
	}
	dst = append(dst, raw[:i]...)
	for i < len(raw) {
		c := raw[i]
		switch {
		case !inString:
			if !isJSONSpace(c) {
				dst = append(dst, c)
			}
			inString = c == '"'
			i++
		case c >= utf8.RuneSelf:
			dst, i = appendNonASCIIRun(dst, raw, i) // invalid bytes as \ufffd
		case c == '"':
			dst = append(dst, c)
			inString = false
			i++
		case c == '\\':
			n := escapeSpan(raw, i)
			dst = append(dst, raw[i:i+n]...)
			i += n
		default:
			run := copyableStringRun(raw, i)
			dst = append(dst, raw[i:i+run]...)
			i += run
		}
	}
	return dst
}

// compactASCIIPrefix returns the length of the longest prefix of raw that
// appendASCII copies unchanged (no whitespace outside strings, no non-ASCII
// byte) and whether that prefix ends inside a string.
func compactASCIIPrefix(raw []byte) (n int, inString bool) {
	i := 0
	for i < len(raw) {
		if inString {
			i += copyableStringRun(raw, i)
			if i >= len(raw) {
				break
			}
			switch c := raw[i]; {
			case c == '"':
				inString = false
				i++
			case c == '\\':
				i += escapeSpan(raw, i)
			default:
				return i, true
			}
			continue
		}
		c := raw[i]
		if isJSONSpace(c) {
			return i, false
		}
		inString = c == '"'
		i++
	}
	return i, inString
}

// escapeGrowth returns how many bytes escaping the non-ASCII characters of
// valid UTF-8 text b adds, so that appendASCII, and the size hints of the
// direct tool results, can size their output once: a 2- or 4-byte sequence
// grows by twice its length (to \uXXXX or a pair of them), a 3-byte one by
// its length. Counting eight bytes at a time (32 while all are ASCII), it
// takes two per non-ASCII byte and gives three back per 3-byte lead byte
// (1110xxxx). It may err either way on invalid UTF-8 or text outside
// strings; its callers stay correct then (their buffers grow).
func escapeGrowth[T string | []byte](b T) int {
	const low7 = 0x7f7f7f7f7f7f7f7f
	growth, i := 0, 0
	for ; i+8 <= len(b); i += 8 {
		w := wordAt(b, i)
		if w&swarHighBits == 0 {
			// Plain ASCII: on 32 bytes at a time while it lasts.
			for i+40 <= len(b) && (wordAt(b, i+8)|wordAt(b, i+16)|wordAt(b, i+24)|wordAt(b, i+32))&swarHighBits == 0 {
				i += 32
			}
			continue
		}
		x := w&(0xf0*swarOnes) ^ 0xe0*swarOnes          // zero bytes mark 3-byte leads
		threeByteLeads := ^((x&low7 + low7) | x | low7) // exact, unlike swarZeroBytes
		growth += 2*bits.OnesCount64(w&swarHighBits) - 3*bits.OnesCount64(threeByteLeads)
	}
	for ; i < len(b); i++ {
		// Byte by byte as a word is counted, so that a character split
		// between the last word and these bytes is counted once.
		if c := b[i]; c >= utf8.RuneSelf {
			growth += 2
			if c&0xf0 == 0xe0 {
				growth -= 3
			}
		}
	}
	return growth
}

// copyableStringRun returns how many bytes from raw[i] are ASCII other than
// '"' and '\\'.
func copyableStringRun(raw []byte, i int) int {
	start := i
	i = skipToStopper(raw, i, copyStopper)
	for i < len(raw) && raw[i] < utf8.RuneSelf && raw[i] != '"' && raw[i] != '\\' {
		i++
	}
	return i - start
}

// escapeSpan returns how many bytes of the escape at raw[i] == '\\' are copied
// as they are: the backslash and the ASCII byte after it (the hex digits of a
// \u escape follow as plain string bytes).
func escapeSpan(raw []byte, i int) int {
	if i+1 < len(raw) && raw[i+1] < utf8.RuneSelf {
		return 2
	}
	return 1
}

// marshalBuffer is a reusable encoding buffer with its encoder bound to it.
type marshalBuffer struct {
	buf bytes.Buffer
	enc *json.Encoder
}

// marshalBuffers recycles marshalBuffers between marshalJSON calls; it holds no
// state beyond the buffers themselves.
var marshalBuffers = sync.Pool{
	New: func() any {
		b := new(marshalBuffer)
		b.enc = json.NewEncoder(&b.buf)
		b.enc.SetEscapeHTML(false)
		return b
	},
}

// marshalJSON encodes v like json.Marshal but with HTML escaping off
// (encoding/json Encoder.SetEscapeHTML(false), no trailing newline) and passed
// through appendASCII, so the result is pure ASCII and, for all-ASCII data,
// byte-identical to compact encoding/json output with HTML escaping off. The
// result is a new slice owned by the caller. Errors are encoding/json's, wrapped.
// Safe for concurrent use.
func marshalJSON(v any) ([]byte, error) {
	mb := marshalBuffers.Get().(*marshalBuffer)
	defer func() {
		if mb.buf.Cap() <= maxPooledMarshalBuffer {
			marshalBuffers.Put(mb)
		}
	}()
	mb.buf.Reset()
	if err := mb.enc.Encode(v); err != nil {
		return nil, fmt.Errorf("marshal JSON: %w", err)
	}
	encoded := bytes.TrimSuffix(mb.buf.Bytes(), []byte{'\n'})
	return appendASCII(nil, encoded), nil
}
