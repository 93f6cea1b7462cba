package main

// Scanning JSON text: whitespace, literals, numbers and strings, checked
// strictly as decodeEnvelope needs them, and unescaping strings.

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

func isJSONDigit(c byte) bool { return '0' <= c && c <= '9' }

func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// skipJSONSpace returns the offset of the first non-whitespace byte at or
// after i, or len(data).
func skipJSONSpace(data []byte, i int) int {
	for i < len(data) && isJSONSpace(data[i]) {
		i++
	}
	return i
}

func scanLiteral(data []byte, i int, literal string) (int, error) {
	if len(data)-i < len(literal) || string(data[i:i+len(literal)]) != literal {
		return i, syntaxError("invalid literal, expected "+literal, i)
	}
	return i + len(literal), nil
}

// scanNumber validates the number literal starting at data[i] and returns the
// offset just after it. An integer literal (no fraction, no exponent) of more
// than maxIntegerDigits digits is refused (docs/explanation/contract.md,
// "Framing"); a fraction or an exponent may have any number of digits, and so
// may the integer part of a number that has one. Each byte is looked at once.
func scanNumber(data []byte, i int) (int, error) {
	start := i
	if data[i] == '-' {
		i++
	}
	integerStart := i
	switch {
	case i < len(data) && data[i] == '0':
		i++
	case i < len(data) && isJSONDigit(data[i]):
		for i < len(data) && isJSONDigit(data[i]) {
			i++
		}
	default:
		return i, syntaxError("invalid number: expected a digit", i)
	}
	integer := i == len(data) || data[i] != '.' && data[i] != 'e' && data[i] != 'E'
	if integer && i-integerStart > maxIntegerDigits {
		return i, syntaxError("integer literal has more than "+strconv.Itoa(maxIntegerDigits)+" digits", start)
	}
	if i < len(data) && data[i] == '.' {
		end, err := scanDigits(data, i+1)
		if err != nil {
			return end, err
		}
		i = end
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		end, err := scanDigits(data, i)
		if err != nil {
			return end, err
		}
		i = end
	}
	return i, nil
}

// scanDigits consumes a non-empty digit run at data[i].
func scanDigits(data []byte, i int) (int, error) {
	digitsStart := i
	for i < len(data) && isJSONDigit(data[i]) {
		i++
	}
	if i == digitsStart {
		return i, syntaxError("invalid number: expected a digit", i)
	}
	return i, nil
}

// Masks for examining 8 bytes of a string at once.
const (
	swarOnes     = 0x0101010101010101
	swarHighBits = 0x8080808080808080
)

// swarZeroBytes flags (sets the high bit of) the lowest zero byte of w, and may
// flag bytes above it; it is zero when w has no zero byte. Borrows only
// propagate upward, so the lowest flag is always exact.
func swarZeroBytes(w uint64) uint64 { return (w - swarOnes) &^ w & swarHighBits }

// quoteOrBackslash flags the lowest '"' or '\\' byte of w (see swarZeroBytes).
func quoteOrBackslash(w uint64) uint64 {
	return swarZeroBytes(w^('"'*swarOnes)) | swarZeroBytes(w^('\\'*swarOnes))
}

// stringStopper flags the lowest byte of w that a string scanner must look at:
// non-ASCII, a control character, '"' or '\\'. The control-character test
// only borrows from bytes below 0x20, so the lowest flag is exact.
func stringStopper(w uint64) uint64 {
	return w&swarHighBits | (w-0x20*swarOnes)&^w&swarHighBits | quoteOrBackslash(w)
}

// copyStopper flags the lowest byte of w that appendASCII does not copy
// as it is inside a string: non-ASCII, '"' or '\\'.
func copyStopper(w uint64) uint64 { return w&swarHighBits | quoteOrBackslash(w) }

// skipToStopper returns the offset of the first byte at or after i that stop
// flags, examining eight bytes at a time, or the offset where fewer than eight
// bytes remain.
func skipToStopper(data []byte, i int, stop func(uint64) uint64) int {
	for i+8 <= len(data) {
		if m := stop(binary.LittleEndian.Uint64(data[i:])); m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
		i += 8
	}
	return i
}

// notPrintableASCII flags every byte of w that is a control character or
// non-ASCII, and may flag bytes above the lowest such byte (a borrow of the
// subtraction), never one below it: the lowest flag is exact.
func notPrintableASCII(w uint64) uint64 { return (w - 0x20*swarOnes | w) & swarHighBits }

// longRunBytes is how far a string must go on before scanString looks for
// its end with bytes.IndexByte, whose call costs more than a few words
// examined in place.
const longRunBytes = 32

// stringStops is what a string scanner knows of one string's next '"' and '\\':
// their offsets once found (quote: len(data) when there is none; backslash:
// quote when there is none before it), -1 before. A search starts where the
// last one ended and stops at the string's closing quote, so each byte of a
// string is searched at most once for each: scanning stays linear however
// the string mixes escapes and text.
type stringStops struct{ quote, backslash int }

// longRun returns the offset of the first byte at or after i that a string
// scanner must look at (stringStopper's: a control character, non-ASCII, '"'
// or '\\'), or len(data) when there is none, where the string has gone on
// for longRunBytes without one: it finds the next '"' and '\\' with IndexByte
// and checks the text before them for the other two 32 bytes at a time,
// which costs about a third of examining each word for all four.
func longRun[T string | []byte](s *stringStops, data T, i int) int {
	if s.quote < i {
		s.quote = len(data)
		if q := indexByte(data[i:], '"'); q >= 0 {
			s.quote = i + q
		}
	}
	if s.backslash < i {
		s.backslash = s.quote
		if b := indexByte(data[i:s.quote], '\\'); b >= 0 {
			s.backslash = i + b
		}
	}
	return i + printableRun(data[i:min(s.quote, s.backslash)])
}

// indexByte is bytes.IndexByte or strings.IndexByte.
func indexByte[T string | []byte](b T, c byte) int {
	if s, ok := any(b).(string); ok {
		return strings.IndexByte(s, c)
	}
	return bytes.IndexByte([]byte(b), c)
}

// printableRun returns the length of the prefix of b that is printable ASCII,
// examining 32 bytes at a time while all are.
func printableRun[T string | []byte](b T) int {
	i := 0
	for ; i+32 <= len(b); i += 32 {
		if notPrintableASCII(wordAt(b, i))|notPrintableASCII(wordAt(b, i+8))|
			notPrintableASCII(wordAt(b, i+16))|notPrintableASCII(wordAt(b, i+24)) != 0 {
			break
		}
	}
	for ; i+8 <= len(b); i += 8 {
		if m := notPrintableASCII(wordAt(b, i)); m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; c < 0x20 || c >= utf8.RuneSelf {
			return i
		}
	}
	return i
}

// scanString validates the string token starting at data[i] == '"' and returns
// the offset just after its closing quote and whether it contains escapes.
func scanString(data []byte, i int) (end int, escaped bool, err error) {
	i++
	stops := stringStops{quote: -1, backslash: -1}
	for {
		// Eight bytes at a time; past longRunBytes of plain text, longRun.
		for plain := 0; i+8 <= len(data); {
			if m := stringStopper(binary.LittleEndian.Uint64(data[i:])); m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				break
			}
			if i, plain = i+8, plain+8; plain == longRunBytes {
				i = longRun(&stops, data, i)
				break
			}
		}
		if i >= len(data) {
			return i, escaped, syntaxError("unterminated string", i)
		}
		switch c := data[i]; {
		case c == '"':
			return i + 1, escaped, nil
		case c == '\\':
			escaped = true
			if i, err = scanEscape(data, i); err != nil {
				return i, escaped, err
			}
		case c < 0x20:
			return i, escaped, syntaxError("control character in string", i)
		case c < utf8.RuneSelf:
			i++
		default:
			if i, err = scanNonASCII(data, i); err != nil {
				return i, escaped, err
			}
		}
	}
}

// scanNonASCII validates the run of non-ASCII bytes starting at data[i] and
// returns the offset just after it: text is valid UTF-8 exactly when each of
// its maximal non-ASCII runs is.
func scanNonASCII(data []byte, i int) (int, error) {
	for i < len(data) && data[i] >= utf8.RuneSelf {
		_, size := decodeRuneAt(data, i)
		if size == 1 {
			return i, syntaxError("invalid UTF-8 in string", i)
		}
		i += size
	}
	return i, nil
}

// scanEscape validates the escape sequence at data[i] == '\\' and returns the
// offset just after it. Lone surrogates (\ud800) are accepted, as encoding/json does.
func scanEscape(data []byte, i int) (int, error) {
	if i+1 >= len(data) {
		return i, syntaxError("unterminated escape sequence", i)
	}
	switch data[i+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return i + 2, nil
	case 'u':
		if _, ok := parseHex4(data[i+2:]); !ok {
			return i, syntaxError(`invalid \u escape`, i)
		}
		return i + 6, nil
	}
	return i, syntaxError("invalid escape sequence", i)
}

// parseHex4 parses the four hex digits that start b.
func parseHex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// nextStringUnit decodes one character of the content of a validated string
// token at s[i]: an escape sequence (a surrogate pair counts as one) or one
// UTF-8 sequence. lone reports an escaped surrogate without its partner, which
// is returned as its own code unit. size is the number of bytes consumed.
func nextStringUnit(s []byte, i int) (r rune, size int, lone bool) {
	c := s[i]
	if c >= utf8.RuneSelf {
		r, size = utf8.DecodeRune(s[i:])
		return r, size, false
	}
	if c != '\\' || i+1 >= len(s) {
		return rune(c), 1, false
	}
	switch s[i+1] {
	case 'b':
		return '\b', 2, false
	case 'f':
		return '\f', 2, false
	case 'n':
		return '\n', 2, false
	case 'r':
		return '\r', 2, false
	case 't':
		return '\t', 2, false
	case 'u':
		r, ok := parseHex4(s[i+2:])
		if !ok {
			return utf8.RuneError, 2, false
		}
		if !utf16.IsSurrogate(r) {
			return r, 6, false
		}
		if r < 0xdc00 && i+12 <= len(s) && s[i+6] == '\\' && s[i+7] == 'u' {
			if low, ok := parseHex4(s[i+8:]); ok && 0xdc00 <= low && low <= 0xdfff {
				return utf16.DecodeRune(r, low), 12, false
			}
		}
		return r, 6, true
	}
	return rune(s[i+1]), 2, false // \" \\ \/
}

// appendUnescaped appends the text of the validated string content s (the
// token without its quotes) to dst, as encoding/json unescapes it: a lone
// surrogate becomes U+FFFD.
func appendUnescaped(dst, s []byte) []byte {
	for i := 0; i < len(s); {
		run := bytes.IndexByte(s[i:], '\\')
		if run < 0 {
			return append(dst, s[i:]...)
		}
		dst = append(dst, s[i:i+run]...)
		i += run
		r, size, lone := nextStringUnit(s, i)
		if lone {
			r = utf8.RuneError
		}
		dst = utf8.AppendRune(dst, r)
		i += size
	}
	return dst
}

// decodeString unescapes a raw JSON string token (including its quotes). ok is
// false when raw is not exactly one strict string token (as decodeEnvelope
// accepts one: valid UTF-8, no raw control characters, valid escapes). Escaped
// lone surrogates become U+FFFD, as with encoding/json.
func decodeString(raw []byte) (s string, ok bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	end, escaped, err := scanString(raw, 0)
	if err != nil || end != len(raw) {
		return "", false
	}
	content := raw[1 : len(raw)-1]
	if !escaped {
		return string(content), true
	}
	return string(appendUnescaped(make([]byte, 0, len(content)), content)), true
}
