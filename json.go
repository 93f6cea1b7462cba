package main

// The decoding half of the JSON layer: each input line is decoded once,
// strictly (duplicate keys, over-long numbers, invalid UTF-8, trailing data
// and excessive nesting are parse errors), into an envelope that keeps the
// members the pipeline reads. json_scan.go scans the tokens, json_members.go
// reads text this decoder accepted, json_ids.go gives request ids their
// canonical text, json_encode.go encodes.

import (
	"bytes"
	"errors"
	"hash/maphash"
	"strconv"
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
	// maxIntegerDigits bounds the digits of an integer literal
	// (docs/explanation/contract.md, "Framing").
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
