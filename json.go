package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/maphash"
	"math/bits"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// jsonKind is the kind of a JSON value.
type jsonKind uint8

const (
	kindInvalid jsonKind = iota
	kindObject
	kindArray
	kindString
	kindNumber
	kindBool
	kindNull
)

const (
	// maxJSONDepth is the deepest nesting of objects and arrays a line may have;
	// a top-level object or array is at depth 1.
	maxJSONDepth = 512
	// maxIDBytes is the longest unescaped string id (in UTF-8 bytes) that is tracked.
	maxIDBytes = 256
	// maxIntegerDigits bounds the digits of an integer literal (SPEC §3).
	maxIntegerDigits = 64
	// smallObjectKeys is how many keys an object may have before duplicate
	// detection switches from a linear scan of an inline array to a hash index.
	smallObjectKeys = 16
	// shortStringWords is how many eight-byte words of a string skipString
	// examines itself before it hands the rest to bytes.IndexByte.
	shortStringWords = 2
	// maxPooledMarshalBuffer keeps the odd huge frame from pinning its buffer
	// in the marshal pool.
	maxPooledMarshalBuffer = 1 << 20
)

// envelope is one decoded input line: the kind of its top-level value and, when
// it is an object, the raw bytes (aliasing the line, whitespace-trimmed) of the
// members the JSON-RPC pipeline needs. A member absent from the object is nil.
type envelope struct {
	kind    jsonKind
	jsonrpc []byte
	method  []byte
	id      []byte
	params  []byte
	result  []byte
	errorV  []byte // the "error" member
}

// errParse (a sentinel; wrap it with detail for logs, callers use errors.Is)
// is returned for any line that is not exactly one strict JSON value.
var errParse = errors.New("parse error")

// jsonSyntaxError says why and where a line was rejected; it unwraps to errParse.
type jsonSyntaxError struct {
	reason string
	offset int // byte offset in the line
}

func (e *jsonSyntaxError) Error() string {
	return errParse.Error() + ": " + e.reason + " at byte offset " + strconv.Itoa(e.offset)
}

func (e *jsonSyntaxError) Unwrap() error { return errParse }

func syntaxError(reason string, offset int) error {
	return &jsonSyntaxError{reason: reason, offset: offset}
}

// decodeEnvelope validates line as exactly one strict JSON value in a single
// linear pass and returns its envelope. It rejects, with an error wrapping
// errParse, anything but optional JSON whitespace around one value, duplicate
// object keys at any depth (compared after unescaping, as encoding/json would
// see them), an integer literal (no fraction, no exponent) longer than 64
// digits, invalid UTF-8, raw control characters or invalid escapes in
// strings, and nesting deeper than maxJSONDepth. The error is a
// *jsonSyntaxError naming the reason and the byte offset; the envelope is then
// the zero value.
//
// The captured members alias line (the caller must not modify line while it
// uses them); their capacity is capped, so appending to one never writes into
// line. It does not allocate unless the line has an escaped object key, an
// object with more than smallObjectKeys keys, or is rejected. Nesting is
// decoded recursively, so a line nested maxJSONDepth deep costs a few hundred
// KiB of goroutine stack while it is decoded. Safe for concurrent use.
func decodeEnvelope(line []byte) (envelope, error) {
	d := envelopeDecoder{data: line}
	start := skipJSONSpace(line, 0)
	if start == len(line) {
		return envelope{}, syntaxError("empty line", start)
	}
	end, err := d.value(start, 0)
	if err != nil {
		return envelope{}, err
	}
	if end = skipJSONSpace(line, end); end != len(line) {
		return envelope{}, syntaxError("trailing data after the value", end)
	}
	d.env.kind = kindOf(line[start])
	return d.env, nil
}

// kindOf returns the kind of the valid value that starts with c.
func kindOf(c byte) jsonKind {
	switch c {
	case '{':
		return kindObject
	case '[':
		return kindArray
	case '"':
		return kindString
	case 't', 'f':
		return kindBool
	case 'n':
		return kindNull
	}
	return kindNumber
}

// envelopeDecoder is the state of one decodeEnvelope call.
type envelopeDecoder struct {
	data []byte
	// scratch holds the unescaped text of the escaped keys of the objects
	// currently open, in nesting order; an object truncates it when it closes.
	scratch []byte
	seed    maphash.Seed // valid when seeded; made for the first large object
	seeded  bool
	env     envelope
}

// value validates the value starting at data[i] (not whitespace), nested in
// depth open containers, and returns the offset just after it.
func (d *envelopeDecoder) value(i, depth int) (int, error) {
	data := d.data
	if i >= len(data) {
		return i, syntaxError("unexpected end of input", i)
	}
	switch c := data[i]; c {
	case '{':
		return d.object(i, depth+1)
	case '[':
		return d.array(i, depth+1)
	case '"':
		end, _, err := scanString(data, i)
		return end, err
	case 't':
		return scanLiteral(data, i, "true")
	case 'f':
		return scanLiteral(data, i, "false")
	case 'n':
		return scanLiteral(data, i, "null")
	default:
		if c == '-' || isJSONDigit(c) {
			return scanNumber(data, i)
		}
		return i, syntaxError("unexpected byte "+describeJSONByte(c)+" where a value should start", i)
	}
}

// describeJSONByte names c for an error message: quoted when printable ASCII, in hex otherwise.
func describeJSONByte(c byte) string {
	if c < 0x20 || c >= 0x7f {
		return "0x" + strconv.FormatUint(uint64(c), 16)
	}
	return strconv.QuoteRune(rune(c))
}

func (d *envelopeDecoder) array(i, depth int) (int, error) {
	if depth > maxJSONDepth {
		return i, syntaxError("nesting deeper than "+strconv.Itoa(maxJSONDepth), i)
	}
	data := d.data
	i = skipJSONSpace(data, i+1)
	if i < len(data) && data[i] == ']' {
		return i + 1, nil
	}
	for {
		end, err := d.value(i, depth)
		if err != nil {
			return end, err
		}
		i = skipJSONSpace(data, end)
		if i >= len(data) {
			return i, syntaxError("unterminated array", i)
		}
		switch data[i] {
		case ',':
			i = skipJSONSpace(data, i+1)
		case ']':
			return i + 1, nil
		default:
			return i, syntaxError("expected ',' or ']' after an array element", i)
		}
	}
}

func (d *envelopeDecoder) object(i, depth int) (int, error) {
	if depth > maxJSONDepth {
		return i, syntaxError("nesting deeper than "+strconv.Itoa(maxJSONDepth), i)
	}
	mark := len(d.scratch)
	end, err := d.members(i, depth)
	d.scratch = d.scratch[:mark]
	return end, err
}

// members validates the object starting at data[i] == '{' and checks its keys
// for duplicates; at depth 1 it records the envelope members.
func (d *envelopeDecoder) members(i, depth int) (int, error) {
	data := d.data
	i = skipJSONSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return i + 1, nil
	}
	var keys objectKeySet // after the empty case, which need not zero it
	for {
		if i >= len(data) {
			return i, syntaxError("unterminated object", i)
		}
		if data[i] != '"' {
			return i, syntaxError("expected a string object key", i)
		}
		keyEnd, escaped, err := scanString(data, i)
		if err != nil {
			return keyEnd, err
		}
		key := objectKeyRef{start: i + 1, end: keyEnd - 1}
		if escaped {
			key = d.unescapeKey(key)
		}
		if keys.add(d, key) {
			return i, syntaxError("duplicate object key", i)
		}
		var slot *[]byte
		if depth == 1 {
			slot = d.env.slot(d.keyBytes(key))
		}
		i = skipJSONSpace(data, keyEnd)
		if i >= len(data) || data[i] != ':' {
			return i, syntaxError("expected ':' after an object key", i)
		}
		valueStart := skipJSONSpace(data, i+1)
		valueEnd, err := d.value(valueStart, depth)
		if err != nil {
			return valueEnd, err
		}
		if slot != nil {
			*slot = data[valueStart:valueEnd:valueEnd]
		}
		i = skipJSONSpace(data, valueEnd)
		if i >= len(data) {
			return i, syntaxError("unterminated object", i)
		}
		switch data[i] {
		case ',':
			i = skipJSONSpace(data, i+1)
		case '}':
			return i + 1, nil
		default:
			return i, syntaxError("expected ',' or '}' after an object member", i)
		}
	}
}

// slot returns the envelope field that records the top-level member named
// key, or nil when the pipeline does not need that member.
func (e *envelope) slot(key []byte) *[]byte {
	switch string(key) {
	case "jsonrpc":
		return &e.jsonrpc
	case "method":
		return &e.method
	case "id":
		return &e.id
	case "params":
		return &e.params
	case "result":
		return &e.result
	case "error":
		return &e.errorV
	}
	return nil
}

// objectKeyRef locates the unescaped text of an object key: a key without
// escapes is its raw content in the line, any other is unescaped onto scratch.
type objectKeyRef struct {
	start, end int
	inScratch  bool
}

// unescapeKey returns the reference to the text of the validated key whose
// escaped content in the line is raw, unescaping it onto scratch.
func (d *envelopeDecoder) unescapeKey(raw objectKeyRef) objectKeyRef {
	start := len(d.scratch)
	d.scratch = appendUnescaped(d.scratch, d.data[raw.start:raw.end])
	return objectKeyRef{start: start, end: len(d.scratch), inScratch: true}
}

func (d *envelopeDecoder) keyBytes(k objectKeyRef) []byte {
	if k.inScratch {
		return d.scratch[k.start:k.end]
	}
	return d.data[k.start:k.end]
}

func (d *envelopeDecoder) hashSeed() maphash.Seed {
	if !d.seeded {
		d.seed, d.seeded = maphash.MakeSeed(), true
	}
	return d.seed
}

// objectKeySet holds the keys seen so far in one object. Up to smallObjectKeys keys
// live inline and are compared pairwise (a bounded cost per key); beyond that
// they move to an open-addressing hash table keyed with a per-call random
// seed, so the check stays linear in the object's size whatever its keys are.
type objectKeySet struct {
	small [smallObjectKeys]objectKeyRef
	n     int // keys in small; unused once keys is in use
	// Once the object outgrows small, keys and hashes hold every key and its
	// hash, and slots is a power-of-two table, at most half full, of indexes
	// into keys plus one (zero marks an empty slot), probed linearly.
	keys   []objectKeyRef
	hashes []uint64
	slots  []int32
}

// add records key and reports whether the object already had it.
func (s *objectKeySet) add(d *envelopeDecoder, key objectKeyRef) (duplicate bool) {
	if s.slots != nil {
		return s.addIndexed(d, key)
	}
	text := d.keyBytes(key)
	for _, seen := range s.small[:s.n] {
		if seen.end-seen.start == len(text) && bytes.Equal(d.keyBytes(seen), text) {
			return true
		}
	}
	if s.n < smallObjectKeys {
		s.small[s.n] = key
		s.n++
		return false
	}
	s.keys = make([]objectKeyRef, 0, 4*smallObjectKeys)
	s.hashes = make([]uint64, 0, 4*smallObjectKeys)
	s.slots = make([]int32, 8*smallObjectKeys)
	for _, seen := range s.small[:s.n] {
		s.addIndexed(d, seen)
	}
	return s.addIndexed(d, key)
}

func (s *objectKeySet) addIndexed(d *envelopeDecoder, key objectKeyRef) (duplicate bool) {
	text := d.keyBytes(key)
	h := maphash.Bytes(d.hashSeed(), text)
	mask := uint64(len(s.slots) - 1)
	i := h & mask
	for ; s.slots[i] != 0; i = (i + 1) & mask {
		k := s.slots[i] - 1
		if s.hashes[k] == h && bytes.Equal(d.keyBytes(s.keys[k]), text) {
			return true
		}
	}
	s.keys = append(s.keys, key)
	s.hashes = append(s.hashes, h)
	s.slots[i] = int32(len(s.keys))
	if 2*len(s.keys) > len(s.slots) {
		s.rehash(2 * len(s.slots))
	}
	return false
}

// rehash moves the keys into a fresh table of size slots, a power of two.
func (s *objectKeySet) rehash(size int) {
	s.slots = make([]int32, size)
	mask := uint64(size - 1)
	for k, h := range s.hashes {
		i := h & mask
		for s.slots[i] != 0 {
			i = (i + 1) & mask
		}
		s.slots[i] = int32(k + 1)
	}
}

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
// than maxIntegerDigits digits is refused (SPEC §3); a fraction or an exponent
// may have any number of digits, and so may the integer part of a number that
// has one. Each byte is looked at once.
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

// scanString validates the string token starting at data[i] == '"' and returns
// the offset just after its closing quote and whether it contains escapes.
func scanString(data []byte, i int) (end int, escaped bool, err error) {
	i++
	for {
		i = skipToStopper(data, i, stringStopper)
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

// lookupMember returns the raw value (whitespace-trimmed) of member name in
// obj, a valid JSON object as accepted by decodeEnvelope or produced by
// encoding/json; ok is false when obj is not an object or has no such member.
// Keys are compared after unescaping; should the name occur twice (impossible
// in input decodeEnvelope accepts), the first wins. Linear in len(obj); it
// never panics, and on malformed input it returns a best-effort answer.
func lookupMember(obj []byte, name string) (value []byte, ok bool) {
	members := newMemberScanner(obj)
	for {
		key, escaped, value, ok := members.next()
		if !ok {
			return nil, false
		}
		if keyMatches(key, escaped, name) {
			return value, true
		}
	}
}

// memberScanner walks the members of a JSON object in order, without
// validating or decoding them: one pass over the object picks out any number
// of members. Like lookupMember it never panics; on malformed input it stops
// early.
type memberScanner struct {
	obj []byte
	i   int // offset of the next key's opening quote, or past the members
}

// newMemberScanner starts a scan of obj; when obj is not an object, next
// reports no member.
func newMemberScanner(obj []byte) memberScanner {
	i := skipJSONSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return memberScanner{obj: obj, i: len(obj)}
	}
	return memberScanner{obj: obj, i: skipJSONSpace(obj, i+1)}
}

// next returns the next member: the raw content of its key (between the
// quotes; escaped says whether it has escapes, see keyMatches and
// unescapedKey) and its raw value, whitespace-trimmed, with its capacity
// capped. ok is false past the last member.
func (s *memberScanner) next() (key []byte, escaped bool, value []byte, ok bool) {
	obj, i := s.obj, s.i
	s.i = len(obj) // unless a complete member follows
	if i >= len(obj) || obj[i] != '"' {
		return nil, false, nil, false
	}
	keyEnd, escaped, ok := skipString(obj, i)
	if !ok {
		return nil, false, nil, false
	}
	key = obj[i+1 : keyEnd-1]
	i = skipJSONSpace(obj, keyEnd)
	if i >= len(obj) || obj[i] != ':' {
		return nil, false, nil, false
	}
	valueStart := skipJSONSpace(obj, i+1)
	valueEnd, ok := skipValue(obj, valueStart)
	if !ok {
		return nil, false, nil, false
	}
	if i = skipJSONSpace(obj, valueEnd); i < len(obj) && obj[i] == ',' {
		s.i = skipJSONSpace(obj, i+1)
	}
	return key, escaped, obj[valueStart:valueEnd:valueEnd], true
}

// unescapedKey returns the text of the raw key content from
// memberScanner.next: key itself when it has no escapes, else its unescaped
// text in buf (or on the heap when longer).
func unescapedKey(buf *[64]byte, key []byte, escaped bool) []byte {
	if !escaped {
		return key
	}
	return appendUnescaped(buf[:0], key)
}

// keyMatches reports whether the raw key content (escaped says whether it has
// escapes) unescapes to name.
func keyMatches(content []byte, escaped bool, name string) bool {
	if !escaped {
		return string(content) == name
	}
	// Unescaping never lengthens text and shrinks it at most sixfold (\u0061 → a).
	if len(name) > len(content) || len(content) > 6*len(name) {
		return false
	}
	var buf [64]byte
	return string(appendUnescaped(buf[:0], content)) == name
}

// skipString returns the offset just after the string token starting at
// data[i] == '"' and whether it has escapes; ok is false when it is
// unterminated. It does not validate the content. Each byte is examined at
// most twice.
func skipString(data []byte, i int) (end int, escaped, ok bool) {
	i++
	// Most strings (keys, short values) end within a few words: look at
	// those eight bytes at a time, and only then settle in with
	// bytes.IndexByte, whose calls cost more than a short string.
	for range shortStringWords {
		if i+8 > len(data) {
			break
		}
		m := quoteOrBackslash(binary.LittleEndian.Uint64(data[i:]))
		if m == 0 {
			i += 8
			continue
		}
		i += bits.TrailingZeros64(m) >> 3
		if data[i] == '"' {
			return i + 1, false, true
		}
		break // a backslash: the loop below takes it from here
	}
	quote := -1 // the first '"' at or after i, once known
	for {
		if quote < i {
			q := bytes.IndexByte(data[i:], '"')
			if q < 0 {
				return len(data), escaped, false
			}
			quote = i + q
		}
		b := bytes.IndexByte(data[i:quote], '\\')
		if b < 0 {
			return quote + 1, escaped, true
		}
		escaped = true
		i += b + 2 // the backslash and the byte it escapes
	}
}

// skipValue returns the offset just after the value starting at data[i],
// matching brackets without validating; ok is false when it is cut short.
func skipValue(data []byte, i int) (end int, ok bool) {
	if i >= len(data) {
		return i, false
	}
	switch data[i] {
	case '"':
		end, _, ok := skipString(data, i)
		return end, ok
	case '{', '[':
		depth := 0
		for i < len(data) {
			switch data[i] {
			case '"':
				end, _, ok := skipString(data, i)
				if !ok {
					return end, false
				}
				i = end
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, true
				}
			}
			i++
		}
		return i, false
	}
	start := i
	for i < len(data) && !isJSONSpace(data[i]) && data[i] != ',' && data[i] != '}' && data[i] != ']' {
		i++
	}
	return i, i > start
}

// arrayElements returns the raw elements of arr, a valid JSON array (as
// decodeEnvelope checked it), without their surrounding whitespace.
func arrayElements(arr []byte) [][]byte {
	i := skipJSONSpace(arr, 0)
	if i >= len(arr) || arr[i] != '[' {
		return nil
	}
	var elems [][]byte
	i = skipJSONSpace(arr, i+1)
	for i < len(arr) && arr[i] != ']' {
		end, ok := skipValue(arr, i)
		if !ok {
			return elems
		}
		elems = append(elems, arr[i:end])
		i = skipJSONSpace(arr, end)
		if i < len(arr) && arr[i] == ',' {
			i = skipJSONSpace(arr, i+1)
		}
	}
	return elems
}
