package main

// Reading valid JSON text that decodeEnvelope accepted: looking members up
// in an object, walking its members, skipping values, splitting arrays.

import (
	"bytes"
	"encoding/binary"
	"math/bits"
)

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
