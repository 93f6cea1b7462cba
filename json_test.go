package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func jsonNestedArrays(depth int) string {
	return strings.Repeat("[", depth) + strings.Repeat("]", depth)
}

func jsonNestedObjects(depth int) string {
	return strings.Repeat(`{"a":`, depth-1) + "{}" + strings.Repeat("}", depth-1)
}

// jsonObjectWithKeys returns an object with n distinct keys k0…k(n-1) and then extra.
func jsonObjectWithKeys(n int, extra string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"k%d":%d`, i, i)
	}
	b.WriteString(extra)
	b.WriteByte('}')
	return b.String()
}

func TestDecodeEnvelopeRejects(t *testing.T) {
	digits64 := "1" + strings.Repeat("0", 63)
	tests := []struct {
		name   string
		line   string
		reason string // a substring of the error message
	}{
		{"empty", "", "empty line"},
		{"blank", " \t\r\n ", "empty line"},
		{"trailing value", "{} {}", "trailing data"},
		{"trailing number", "1 2", "trailing data"},
		{"trailing garbage", `{"a":1}x`, "trailing data"},
		{"trailing NUL", "{}\x00", "trailing data"},
		{"unterminated object", `{"a":1`, "unterminated object"},
		{"unterminated array", `[1,2`, "unterminated array"},
		{"missing value", `{"a":}`, "where a value should start"},
		{"missing colon", `{"a" 1}`, "expected ':'"},
		{"key not string", `{a:1}`, "expected a string object key"},
		{"number key", `{1:1}`, "expected a string object key"},
		{"trailing comma object", `{"a":1,}`, "expected a string object key"},
		{"trailing comma array", `[1,]`, "where a value should start"},
		{"missing comma", `[1 2]`, "expected ',' or ']'"},
		{"missing comma object", `{"a":1 "b":2}`, "expected ',' or '}'"},
		{"leading comma", `[,1]`, "where a value should start"},
		{"single quotes", `'a'`, "where a value should start"},
		{"short literal", `nul`, "invalid literal"},
		{"wrong literal", `trUe`, "invalid literal"},
		{"capital literal", `True`, "where a value should start"},
		{"literal with suffix", `[truex]`, "expected ',' or ']'"},
		{"leading zero", `01`, "trailing data"},
		{"negative leading zero", `-01`, "trailing data"},
		{"plus sign", `+1`, "where a value should start"},
		{"bare minus", `-`, "expected a digit"},
		{"minus letter", `-a`, "expected a digit"},
		{"leading dot", `.5`, "where a value should start"},
		{"trailing dot", `1.`, "expected a digit"},
		{"empty exponent", `1e`, "expected a digit"},
		{"signed empty exponent", `1e+`, "expected a digit"},
		{"hex number", `0x10`, "trailing data"},
		{"NaN", `NaN`, "where a value should start"},
		{"Infinity", `-Infinity`, "expected a digit"},
		{"unterminated string", `"abc`, "unterminated string"},
		{"duplicate key", `{"a":1,"a":2}`, "duplicate object key"},
		{"duplicate after unescaping", `{"a":1,"\u0061":2}`, "duplicate object key"},
		{"duplicate both escaped", `{"\u0061":1,"\u0061":2}`, "duplicate object key"},
		{"duplicate escaped solidus", `{"a/b":1,"a\/b":2}`, "duplicate object key"},
		{"duplicate surrogate pair", `{"😀":1,"\ud83d\ude00":2}`, "duplicate object key"},
		{"duplicate lone surrogates as U+FFFD", `{"\ud800":1,"\udc00":2}`, "duplicate object key"},
		{"duplicate empty key", `{"":1,"":2}`, "duplicate object key"},
		{"duplicate nested", `{"x":{"b":1,"c":2,"b":3}}`, "duplicate object key"},
		{"duplicate escaped after nested escaped keys", `{"\u0061":{"\u0062":1,"\u0063":2},"\u0061":3}`, "duplicate object key"},
		{"duplicate in array element", `[{},{"k":1,"k":1}]`, "duplicate object key"},
		{"duplicate deep", strings.Repeat(`{"a":`, 99) + `{"a":1,"a":2}` + strings.Repeat("}", 99), "duplicate object key"},
		{"duplicate in large object", jsonObjectWithKeys(40, `,"k7":0`), "duplicate object key"},
		{"duplicate escaped in large object", jsonObjectWithKeys(40, `,"\u006b39":0`), "duplicate object key"},
		{"duplicate at the switch to the index", jsonObjectWithKeys(smallObjectKeys, `,"k0":0`), "duplicate object key"},
		{"65-digit integer", digits64 + "0", "integer literal has more than 64 digits"},
		{"65-digit negative integer", "-" + digits64 + "0", "integer literal has more than 64 digits"},
		{"65-digit integer in an array", "[" + digits64 + "0]", "integer literal has more than 64 digits"},
		{"65-digit integer before a comma", "[" + digits64 + "0,1]", "integer literal has more than 64 digits"},
		{"65-digit integer as a member", `{"id":` + digits64 + "0}", "integer literal has more than 64 digits"},
		{"65-digit integer and a long fraction elsewhere", "[1." + strings.Repeat("5", 100) + "," + digits64 + "0]", "integer literal has more than 64 digits"},
		{"65-digit integer and a letter", digits64 + "0x", "integer literal has more than 64 digits"},
		{"invalid UTF-8 byte", "\"\xff\"", "invalid UTF-8"},
		{"invalid UTF-8 in key", "{\"\xfe\":1}", "invalid UTF-8"},
		{"overlong encoding", "\"\xc0\xaf\"", "invalid UTF-8"},
		{"UTF-8 encoded surrogate", "\"\xed\xa0\x80\"", "invalid UTF-8"},
		{"truncated UTF-8", "\"\xe2\x82\"", "invalid UTF-8"},
		{"above U+10FFFF", "\"\xf4\x90\x80\x80\"", "invalid UTF-8"},
		{"non-ASCII outside string", "[1,\xc3\xa9]", "where a value should start"},
		{"BOM", "\xef\xbb\xbf{}", "where a value should start"},
		{"raw tab in string", "\"a\tb\"", "control character"},
		{"raw newline in string", "\"a\nb\"", "control character"},
		{"raw NUL in string", "\"\x00\"", "control character"},
		{"raw control in long string", `"` + strings.Repeat("x", 40) + "\x1f" + `"`, "control character"},
		{"invalid escape", `"\x41"`, "invalid escape"},
		{"escaped single quote", `"\'"`, "invalid escape"},
		{"short unicode escape", `"\u12"`, `invalid \u escape`},
		{"bad hex digit", `"\u12G4"`, `invalid \u escape`},
		{"capital U escape", `"\U0041"`, "invalid escape"},
		{"backslash at end", `"\`, "unterminated escape"},
		{"escaped quote unterminated", `"\"`, "unterminated string"},
		{"arrays 513 deep", jsonNestedArrays(maxJSONDepth + 1), "nesting deeper than 512"},
		{"objects 513 deep", jsonNestedObjects(maxJSONDepth + 1), "nesting deeper than 512"},
		{"mixed 513 deep", strings.Repeat(`[{"a":`, 256) + "[]" + strings.Repeat("}]", 256), "nesting deeper than 512"},
		{"very deep", jsonNestedArrays(100000), "nesting deeper than 512"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, err := decodeEnvelope([]byte(tt.line))
			if !errors.Is(err, errParse) {
				t.Fatalf("decodeEnvelope(%q) error = %v, want errParse", tt.line, err)
			}
			if !strings.Contains(err.Error(), tt.reason) {
				t.Errorf("error %q does not mention %q", err, tt.reason)
			}
			if !reflect.DeepEqual(env, envelope{}) {
				t.Errorf("envelope = %+v, want the zero value on failure", env)
			}
		})
	}
}

// TestScanStringEveryAlignment puts each kind of byte the string scanner must
// stop at in every position of an eight-byte word, inside a long string, so
// the word-at-a-time scan cannot skip it.
func TestScanStringEveryAlignment(t *testing.T) {
	bad := []struct {
		insert string
		reason string
	}{
		{"\x00", "control character"},
		{"\x1f", "control character"},
		{"\n", "control character"},
		{"\xff", "invalid UTF-8"},
		{"\xc0\xaf", "invalid UTF-8"},
		{"\xe2\x82", "invalid UTF-8"},
		{`\x`, "invalid escape"},
	}
	good := []struct{ insert, decoded string }{
		{`\n`, "\n"},
		{`\"`, `"`},
		{`\u00e9`, "é"},
		{"é", "é"},
		{"😀", "😀"},
		{"\x7f", "\x7f"},
		{" ", " "},
	}
	pad := strings.Repeat("x", 24)
	for pos := range 17 {
		for _, b := range bad {
			line := `"` + pad[:pos] + b.insert + pad + `"`
			_, err := decodeEnvelope([]byte(line))
			var se *jsonSyntaxError
			if !errors.As(err, &se) || !strings.Contains(err.Error(), b.reason) || se.offset != 1+pos {
				t.Errorf("decodeEnvelope(%q) = %v, want %q at offset %d", line, err, b.reason, 1+pos)
			}
		}
		for _, g := range good {
			line := `"` + pad[:pos] + g.insert + pad + `"`
			if _, err := decodeEnvelope([]byte(line)); err != nil {
				t.Errorf("decodeEnvelope(%q) = %v, want success", line, err)
			}
			if s, ok := decodeString([]byte(line)); !ok || s != pad[:pos]+g.decoded+pad {
				t.Errorf("decodeString(%q) = %q, %v; want %q", line, s, ok, pad[:pos]+g.decoded+pad)
			}
			got := appendASCII(nil, []byte(line))
			if !isPureASCII(got) || !json.Valid(got) || jsonDecodeAny(t, got) != jsonDecodeAny(t, []byte(line)) {
				t.Errorf("appendASCII(%q) = %q, want pure-ASCII JSON of the same string", line, got)
			}
		}
	}
}

func TestDecodeEnvelopeErrorOffset(t *testing.T) {
	tests := []struct {
		line   string
		offset int
	}{
		{`{"a":1,"a":2}`, 7},
		{`  `, 2},
		{`{"a":1} x`, 8},
		{"\"ab\xff\"", 3},
		{`[1,2,]`, 5},
		{"1" + strings.Repeat("2", 1_000_000), 0},
	}
	for _, tt := range tests {
		_, err := decodeEnvelope([]byte(tt.line))
		var se *jsonSyntaxError
		if !errors.As(err, &se) {
			t.Fatalf("decodeEnvelope(%.20q) error = %v, want a *jsonSyntaxError", tt.line, err)
		}
		if se.offset != tt.offset {
			t.Errorf("decodeEnvelope(%.20q) offset = %d, want %d (%v)", tt.line, se.offset, tt.offset, err)
		}
		if want := "at byte offset " + strconv.Itoa(tt.offset); !strings.HasSuffix(err.Error(), want) {
			t.Errorf("error %q does not end with %q", err, want)
		}
	}
}

func TestDecodeEnvelopeAccepts(t *testing.T) {
	digits64 := "9" + strings.Repeat("0", 63)
	tests := []struct {
		name string
		line string
		kind jsonKind
	}{
		{"empty object", `{}`, kindObject},
		{"empty array", `[]`, kindArray},
		{"string", `"x"`, kindString},
		{"number", `-12.5e+3`, kindNumber},
		{"zero", `0`, kindNumber},
		{"negative zero", `-0`, kindNumber},
		{"exponent forms", `[1E5,1e-5,0.0e0,-0.5E+10]`, kindArray},
		{"true", `true`, kindBool},
		{"false", `false`, kindBool},
		{"null", `null`, kindNull},
		{"surrounding whitespace", " \t\r\n{\"a\" : [ 1 , 2 ] }\r\n\t ", kindObject},
		{"same key in sibling objects", `{"a":{"a":1},"b":{"a":2}}`, kindObject},
		{"same key in array elements", `[{"a":1},{"a":1}]`, kindArray},
		{"same key at every depth", `{"a":{"a":{"a":{"a":1}}}}`, kindObject},
		{"key reused after nested object closes", `{"x":{"y":1,"z":{"y":2}},"y":3}`, kindObject},
		{"escaped key of a closed nested object reused", `{"\u0061":{"\u0062":1},"\u0062":2,"c":{"\u0061":{"\u0062":3}}}`, kindObject},
		{"escaped keys that differ", `{"\u0061":1,"\u0062":2,"a\"":3,"a\\":4}`, kindObject},
		{"distinct lone surrogates do not collide with text", `{"\ud800":1,"x":2}`, kindObject},
		{"case differs", `{"a":1,"A":2}`, kindObject},
		{"prefix keys", `{"a":1,"ab":2,"abc":3}`, kindObject},
		{"17 keys", jsonObjectWithKeys(smallObjectKeys+1, ""), kindObject},
		{"1000 keys", jsonObjectWithKeys(1000, ""), kindObject},
		{"1000 keys and escaped distinct", jsonObjectWithKeys(1000, `,"\u006bx":0`), kindObject},
		{"64-digit integer", digits64, kindNumber},
		{"64-digit negative integer", "-" + digits64, kindNumber},
		// Only an integer literal's digits are limited
		// (docs/explanation/contract.md, "Framing").
		{"100-digit fraction", "1." + strings.Repeat("5", 100), kindNumber},
		{"300-digit fraction", "0." + strings.Repeat("3", 300), kindNumber},
		{"negative fraction of many digits", "-0." + strings.Repeat("0", 500) + "1", kindNumber},
		{"exponent beyond float64", "1e400", kindNumber},
		{"negative exponent beyond float64", "-1E-400", kindNumber},
		{"200-digit exponent", "1e+" + strings.Repeat("5", 200), kindNumber},
		{"65-digit integer part with a fraction", digits64 + "0.5", kindNumber},
		{"65-digit integer part with an exponent", "-" + digits64 + "0e0", kindNumber},
		{"long fraction and exponent", digits64 + "." + strings.Repeat("5", 200) + "e-7", kindNumber},
		{"long numbers in an object", `{"a":1.` + strings.Repeat("5", 200) + `,"b":[` + digits64 + `,2e999]}`, kindObject},
		{"arrays 512 deep", jsonNestedArrays(maxJSONDepth), kindArray},
		{"objects 512 deep", jsonNestedObjects(maxJSONDepth), kindObject},
		{"lone high surrogate", `"\ud800"`, kindString},
		{"lone low surrogate", `"\udc00x"`, kindString},
		{"reversed surrogates", `"\udc00\ud800"`, kindString},
		{"all simple escapes", `"\"\\\/\b\f\n\r\t\u0000\uFFFF"`, kindString},
		{"DEL is not a control character", "\"\x7f\"", kindString},
		{"raw U+2028", "\"\u2028\u2029\"", kindString},
		{"raw 4-byte UTF-8", "\"😀\"", kindString},
		{"raw U+FFFD", "\"\ufffd\"", kindString},
		{"U+10FFFF", "\"\U0010ffff\"", kindString},
		{"long string", `"` + strings.Repeat("abcdefgh", 1000) + `"`, kindString},
		{"long non-ASCII string", `"` + strings.Repeat("é€😀", 1000) + `"`, kindString},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, err := decodeEnvelope([]byte(tt.line))
			if err != nil {
				t.Fatalf("decodeEnvelope(%.60q) = %v, want success", tt.line, err)
			}
			if env.kind != tt.kind {
				t.Errorf("kind = %d, want %d", env.kind, tt.kind)
			}
			if !json.Valid([]byte(tt.line)) {
				t.Errorf("encoding/json disagrees: %.60q is not valid", tt.line)
			}
		})
	}
}

func TestDecodeEnvelopeMembers(t *testing.T) {
	type members struct{ jsonrpc, method, id, params, result, errorV string }
	absent := "<absent>"
	allAbsent := members{absent, absent, absent, absent, absent, absent}
	tests := []struct {
		name string
		line string
		kind jsonKind
		want members
	}{
		{
			"request with whitespace",
			` { "jsonrpc" : "2.0" , "id" : 7 , "method" : "tools/call" , "params" : { "name" : "echo" } } `,
			kindObject,
			members{`"2.0"`, `"tools/call"`, `7`, `{ "name" : "echo" }`, absent, absent},
		},
		{
			"response",
			`{"jsonrpc":"2.0","id":"s1","result":{"ok":true},"error":null}`,
			kindObject,
			members{`"2.0"`, absent, `"s1"`, absent, `{"ok":true}`, `null`},
		},
		{
			"nested members are not captured",
			`{"params":{"method":"x","id":1,"jsonrpc":"1","result":2,"error":3,"params":4}}`,
			kindObject,
			members{absent, absent, absent, `{"method":"x","id":1,"jsonrpc":"1","result":2,"error":3,"params":4}`, absent, absent},
		},
		{
			"members inside arrays are not captured",
			`{"x":[{"method":"m"}],"id":[1]}`,
			kindObject,
			members{absent, absent, `[1]`, absent, absent, absent},
		},
		{
			"escaped member names",
			`{"\u006dethod":"m","\u0069d":null,"err\u006fr":{}}`,
			kindObject,
			members{absent, `"m"`, `null`, absent, absent, `{}`},
		},
		{
			"names are case sensitive",
			`{"Method":"m","ID":1,"Params":{}}`,
			kindObject,
			allAbsent,
		},
		{
			"many other members",
			jsonObjectWithKeys(50, `,"method":"late"`),
			kindObject,
			members{absent, absent, absent, absent, absent, `<skip>`},
		},
		{"empty object", `{}`, kindObject, allAbsent},
		{"batch", `[{"jsonrpc":"2.0","method":"m"}]`, kindArray, allAbsent},
		{"string", `"method"`, kindString, allAbsent},
		{"number", `1`, kindNumber, allAbsent},
		{"bool", `false`, kindBool, allAbsent},
		{"null", `null`, kindNull, allAbsent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			line := []byte(tt.line)
			env, err := decodeEnvelope(line)
			if err != nil {
				t.Fatalf("decodeEnvelope(%q) = %v", tt.line, err)
			}
			if env.kind != tt.kind {
				t.Errorf("kind = %d, want %d", env.kind, tt.kind)
			}
			if tt.want.errorV == "<skip>" {
				if string(env.method) != `"late"` {
					t.Errorf("method = %q, want %q", env.method, `"late"`)
				}
				return
			}
			check := func(field string, got []byte, want string) {
				t.Helper()
				if want == absent {
					if got != nil {
						t.Errorf("%s = %q, want nil", field, got)
					}
					return
				}
				if string(got) != want {
					t.Errorf("%s = %q, want %q", field, got, want)
				}
				if cap(got) != len(got) || !sliceAliases(line, got) {
					t.Errorf("%s does not alias the line with a capped capacity", field)
				}
			}
			check("jsonrpc", env.jsonrpc, tt.want.jsonrpc)
			check("method", env.method, tt.want.method)
			check("id", env.id, tt.want.id)
			check("params", env.params, tt.want.params)
			check("result", env.result, tt.want.result)
			check("error", env.errorV, tt.want.errorV)
		})
	}
}

// sliceAliases reports whether sub lies within the memory of line.
func sliceAliases(line, sub []byte) bool {
	for i := range len(line) - len(sub) + 1 {
		if len(sub) > 0 && &line[i] == &sub[0] {
			return true
		}
	}
	return false
}

func TestDecodeEnvelopeAllocations(t *testing.T) {
	tests := []struct {
		name   string
		line   string
		allocs float64
	}{
		{"tools/call", `{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello, world"},"_meta":{"progressToken":"p-1"}}}`, 0},
		{"response", `{"jsonrpc":"2.0","id":"srv-1","result":{"content":[{"type":"text","text":"ok"}],"isError":false}}`, 0},
		{"non-ASCII", `{"jsonrpc":"2.0","id":1,"method":"m","params":{"text":"héllo wörld 😀"}}`, 0},
		{"deep", jsonNestedObjects(maxJSONDepth), 0},
		{"16 keys", jsonObjectWithKeys(smallObjectKeys, ""), 0},
		{"10 MB string", `"` + strings.Repeat("0123456789", 1_000_000) + `"`, 0},
		{"10 MB key", `{"` + strings.Repeat("0123456789", 1_000_000) + `":1}`, 0},
		{"1.5-million-digit number", "1" + strings.Repeat("0", 1_500_000), 3},
		{"1.5-million-digit fraction", "[0." + strings.Repeat("0", 1_500_000) + "]", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			line := []byte(tt.line)
			got := testing.AllocsPerRun(5, func() { _, _ = decodeEnvelope(line) })
			// A rejection costs the error value and its message.
			if got > tt.allocs {
				t.Errorf("decodeEnvelope allocates %v times, want at most %v", got, tt.allocs)
			}
		})
	}
}

// TestDecodeEnvelopeLinear decodes inputs that make naive decoders quadratic
// or make them parse huge numbers. It asserts on results and allocation
// counts, never on wall-clock time; a quadratic regression shows as a
// time-out of the test binary.
func TestDecodeEnvelopeLinear(t *testing.T) {
	const manyKeys = 200_000
	huge := jsonObjectWithKeys(manyKeys, "")
	escapedKeys := strings.Replace(huge, `"k`, `"\u006b`, -1)
	manyObjects := "[" + strings.Repeat(jsonObjectWithKeys(20, "")+",", 10_000) + "{}]"
	backslashes := `"` + strings.Repeat(`\\`, 2_000_000) + `"`
	tests := []struct {
		name      string
		line      string
		wantErr   string // "" for success
		maxAllocs float64
	}{
		{"1.5-million-digit number", "1" + strings.Repeat("7", 1_500_000), "integer literal has more than 64 digits", 3},
		{"1.5-million-digit negative number", "-" + strings.Repeat("7", 1_500_000), "integer literal has more than 64 digits", 3},
		{"1.5-million-digit integer part with a fraction", strings.Repeat("7", 1_500_000) + ".5", "", 0},
		{"1.5-million-digit fraction", "1." + strings.Repeat("7", 1_500_000), "", 0},
		{"1.5-million-digit exponent", "1e" + strings.Repeat("7", 1_500_000), "", 0},
		{"100k long fractions", "[" + strings.Repeat("0."+strings.Repeat("1", 50)+",", 100_000) + "1]", "", 0},
		{"10 MB string", `"` + strings.Repeat("x", 10_000_000) + `"`, "", 0},
		{"10 MB non-ASCII string", `"` + strings.Repeat("é", 5_000_000) + `"`, "", 0},
		{"10 MB of escapes", backslashes, "", 0},
		{"200k keys", huge, "", 100},
		{"200k keys and a duplicate", huge[:len(huge)-1] + `,"k199999":0}`, "duplicate object key", 100},
		{"200k escaped keys", escapedKeys, "", 150},
		{"10k objects of 20 keys", manyObjects, "", 10_000 * 3},
		{"200k nested arrays", jsonNestedArrays(200_000), "nesting deeper than 512", 3},
		{"200k-element array", "[" + strings.Repeat("1,", 200_000) + "1]", "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			line := []byte(tt.line)
			var err error
			// AllocsPerRun counts the whole process's allocations, so a
			// goroutine left by an earlier test can add one to a run; the
			// decoder's own allocations are the same in every run, so the
			// fewer of two runs is its count.
			decode := func() { _, err = decodeEnvelope(line) }
			allocs := min(testing.AllocsPerRun(1, decode), testing.AllocsPerRun(1, decode))
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("decodeEnvelope = %v, want success", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("decodeEnvelope = %v, want an error mentioning %q", err, tt.wantErr)
			}
			if allocs > tt.maxAllocs {
				t.Errorf("decodeEnvelope allocates %v times, want at most %v", allocs, tt.maxAllocs)
			}
		})
	}
}

// TestDecodeEnvelopeDuplicateKeysAgreeWithReference checks random objects with
// many keys, some written with escapes and some repeated, against the slow
// reference checker, so the inline and the hashed key sets both face
// duplicates at every position.
func TestDecodeEnvelopeDuplicateKeysAgreeWithReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	writeKey := func(b *strings.Builder, key string) {
		b.WriteByte('"')
		for _, c := range []byte(key) {
			if rng.IntN(4) == 0 {
				fmt.Fprintf(b, `\u%04x`, c)
			} else {
				b.WriteByte(c)
			}
		}
		b.WriteByte('"')
	}
	var writeObject func(b *strings.Builder, depth int)
	writeObject = func(b *strings.Builder, depth int) {
		n := rng.IntN(3 * smallObjectKeys)
		pool := 1 + rng.IntN(8*smallObjectKeys) // a small pool makes duplicates likely
		b.WriteByte('{')
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			writeKey(b, "key"+strconv.Itoa(rng.IntN(pool)))
			b.WriteByte(':')
			if depth < 3 && rng.IntN(8) == 0 {
				writeObject(b, depth+1)
			} else {
				b.WriteString(strconv.Itoa(i))
			}
		}
		b.WriteByte('}')
	}
	accepted, rejected := 0, 0
	for range 800 {
		var b strings.Builder
		writeObject(&b, 0)
		line := []byte(b.String())
		_, err := decodeEnvelope(line)
		if want := jsonReferenceAccepts(line); (err == nil) != want {
			t.Fatalf("decodeEnvelope(%s) = %v, reference accepts: %v", line, err, want)
		}
		if err == nil {
			accepted++
		} else {
			rejected++
		}
	}
	t.Logf("%d accepted, %d rejected", accepted, rejected)
	if accepted < 50 || rejected < 50 {
		t.Errorf("generator is unbalanced: %d accepted, %d rejected", accepted, rejected)
	}
}

func TestCanonicalID(t *testing.T) {
	tests := []struct {
		name string
		raw  string
		want string
		ok   bool
	}{
		{"plain string", `"abc-1"`, `"abc-1"`, true},
		{"empty string", `""`, `""`, true},
		{"256-byte string", `"` + strings.Repeat("a", 256) + `"`, `"` + strings.Repeat("a", 256) + `"`, true},
		{"257-byte string", `"` + strings.Repeat("a", 257) + `"`, "", false},
		{"300-byte string", `"` + strings.Repeat("a", 300) + `"`, "", false},
		{"256 bytes unescaped from 1536", `"` + strings.Repeat(`\u0061`, 256) + `"`, `"` + strings.Repeat("a", 256) + `"`, true},
		{"257 bytes unescaped", `"` + strings.Repeat(`\u0061`, 257) + `"`, "", false},
		{"128 two-byte characters", `"` + strings.Repeat("é", 128) + `"`, `"` + strings.Repeat(`\u00e9`, 128) + `"`, true},
		{"129 two-byte characters", `"` + strings.Repeat("é", 129) + `"`, "", false},
		{"64 four-byte characters", `"` + strings.Repeat("😀", 64) + `"`, `"` + strings.Repeat(`\ud83d\ude00`, 64) + `"`, true},
		{"65 four-byte characters", `"` + strings.Repeat("😀", 65) + `"`, "", false},
		{"escaped letter", `"\u0061"`, `"a"`, true},
		{"escaped solidus", `"a\/b"`, `"a/b"`, true},
		{"escapes kept short", `"\"\\\b\f\n\r\t"`, `"\"\\\b\f\n\r\t"`, true},
		{"control escapes", `"\u0001\u001F"`, `"\u0001\u001f"`, true},
		{"non-ASCII", `"héllo"`, `"h\u00e9llo"`, true},
		{"upper-case hex lowered", `"\u00E9"`, `"\u00e9"`, true},
		{"astral", `"😀"`, `"\ud83d\ude00"`, true},
		{"escaped pair", `"\uD83D\uDE00"`, `"\ud83d\ude00"`, true},
		{"U+2028", "\"\u2028\"", `"\u2028"`, true},
		{"lone surrogate kept", `"\uD800x"`, `"\ud800x"`, true},
		{"HTML characters raw", `"<a&b>"`, `"<a&b>"`, true},
		{"DEL raw", "\"\x7f\"", "\"\x7f\"", true},
		{"invalid UTF-8", "\"\xff\"", "", false},
		{"raw control", "\"\x01\"", "", false},
		{"unterminated", `"abc`, "", false},
		{"trailing data", `"a"b"`, "", false},
		{"zero", `0`, `0`, true},
		{"negative zero", `-0`, `0`, true},
		{"integer", `42`, `42`, true},
		{"negative", `-17`, `-17`, true},
		{"max int64", `9223372036854775807`, `9223372036854775807`, true},
		{"2^63", `9223372036854775808`, "", false},
		{"min int64", `-9223372036854775808`, `-9223372036854775808`, true},
		{"below min int64", `-9223372036854775809`, "", false},
		{"20 digits", `10000000000000000000`, "", false},
		{"max uint64", `18446744073709551615`, "", false},
		{"fraction", `1.0`, "", false},
		{"exponent", `1e2`, "", false},
		{"300-digit fraction", "1." + strings.Repeat("0", 300), "", false},
		{"exponent beyond float64", `1e400`, "", false},
		{"leading zero", `01`, "", false},
		{"plus", `+1`, "", false},
		{"bare minus", `-`, "", false},
		{"true", `true`, "", false},
		{"false", `false`, "", false},
		{"null", `null`, "", false},
		{"object", `{}`, "", false},
		{"array", `[1]`, "", false},
		{"empty", ``, "", false},
		{"leading whitespace", ` 1`, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := canonicalID([]byte(tt.raw))
			if got != tt.want || ok != tt.ok {
				t.Errorf("canonicalID(%q) = %q, %v; want %q, %v", tt.raw, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestCanonicalIDMatchesFormatInt(t *testing.T) {
	for _, v := range []int64{0, 1, -1, 9, 10, -10, math.MaxInt32, math.MinInt32, math.MaxInt64, math.MinInt64} {
		want := strconv.FormatInt(v, 10)
		if got, ok := canonicalID([]byte(want)); !ok || got != want {
			t.Errorf("canonicalID(%q) = %q, %v; want %q, true", want, got, ok, want)
		}
	}
}

func TestDecodeString(t *testing.T) {
	tests := []struct {
		raw  string
		want string
		ok   bool
	}{
		{`""`, "", true},
		{`"abc"`, "abc", true},
		{`"\u0061\n\t\"\\\/"`, "a\n\t\"\\/", true},
		{`"\b\f\r"`, "\b\f\r", true},
		{`"\u00e9\u00E9"`, "éé", true},
		{`"\ud83d\ude00"`, "😀", true},
		{`"\ud800"`, "\ufffd", true},
		{`"\ud800\u0041"`, "\ufffdA", true},
		{`"\udc00\ud800"`, "\ufffd\ufffd", true},
		{`"\ud800\ud800\udc00"`, "\ufffd\U00010000", true},
		{"\"\u2028 é\"", "\u2028 é", true},
		{`"a`, "", false},
		{`a"`, "", false},
		{`"`, "", false},
		{``, "", false},
		{`"a" `, "", false},
		{` "a"`, "", false},
		{`"a""`, "", false},
		{`"\x"`, "", false},
		{"\"\xff\"", "", false},
		{"\"\x1f\"", "", false},
		{`1`, "", false},
	}
	for _, tt := range tests {
		got, ok := decodeString([]byte(tt.raw))
		if got != tt.want || ok != tt.ok {
			t.Errorf("decodeString(%q) = %q, %v; want %q, %v", tt.raw, got, ok, tt.want, tt.ok)
		}
		if !ok {
			continue
		}
		var fromJSON string
		if err := json.Unmarshal([]byte(tt.raw), &fromJSON); err != nil || fromJSON != got {
			t.Errorf("encoding/json decodes %q to %q, %v; decodeString to %q", tt.raw, fromJSON, err, got)
		}
	}
}

func TestLookupMember(t *testing.T) {
	obj := ` { "name" : "echo" , "arguments" : { "text" : "a,}]\"" , "n" : [1, {"x": "}"}] } ,` +
		` "\u005fmeta" : {"progressToken":1}, "e\"k" : true, "last":-1.5e3 } `
	tests := []struct {
		obj   string
		name  string
		value string
		ok    bool
	}{
		{obj, "name", `"echo"`, true},
		{obj, "arguments", `{ "text" : "a,}]\"" , "n" : [1, {"x": "}"}] }`, true},
		{obj, "_meta", `{"progressToken":1}`, true},
		{obj, `e"k`, `true`, true},
		{obj, "last", `-1.5e3`, true},
		{obj, "text", "", false},
		{obj, "x", "", false},
		{obj, "nam", "", false},
		{obj, "", "", false},
		{`{"":0}`, "", `0`, true},
		{`{"a":null}`, "a", `null`, true},
		{`{"\ud83d\ude00":1}`, "😀", `1`, true},
		{`{"\ud800":1}`, "\ufffd", `1`, true},
		{`{}`, "a", "", false},
		{`[{"a":1}]`, "a", "", false},
		{`"a"`, "a", "", false},
		{``, "a", "", false},
		{`{"a":1,"a":2}`, "a", `1`, true},
		{`{"a"`, "a", "", false},
		{`{"a":`, "a", "", false},
		{`{"a":"x`, "a", "", false},
		{`{"b":1 "a":2}`, "a", "", false},
	}
	for _, tt := range tests {
		got, ok := lookupMember([]byte(tt.obj), tt.name)
		if string(got) != tt.value || ok != tt.ok {
			t.Errorf("lookupMember(%q, %q) = %q, %v; want %q, %v", tt.obj, tt.name, got, ok, tt.value, tt.ok)
		}
	}
}

func TestLookupMemberAgreesWithEncodingJSON(t *testing.T) {
	v := map[string]any{
		"name": "x", "arguments": map[string]any{"deep": []any{1, "two", map[string]any{"name": "inner"}}},
		"<tag>": "&", "é": "ü", "\u2028": nil, "quote\"d": true,
	}
	obj, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]json.RawMessage
	if err := json.Unmarshal(obj, &want); err != nil {
		t.Fatal(err)
	}
	for name, value := range want {
		got, ok := lookupMember(obj, name)
		if !ok || !bytes.Equal(got, value) {
			t.Errorf("lookupMember(%s, %q) = %q, %v; want %q", obj, name, got, ok, value)
		}
	}
}

func TestLookupMemberDoesNotAllocate(t *testing.T) {
	obj := []byte(`{"name":"echo","arguments":{"text":"hi"},"_meta":{"progressToken":"t"}}`)
	escaped := []byte(`{"n\u0061me":"echo","_meta":{}}`)
	allocs := testing.AllocsPerRun(10, func() {
		_, _ = lookupMember(obj, "_meta")
		_, _ = lookupMember(escaped, "name")
	})
	if allocs != 0 {
		t.Errorf("lookupMember allocates %v times, want 0", allocs)
	}
}

func TestAppendASCII(t *testing.T) {
	tests := []struct {
		name string
		raw  string
		want string
	}{
		{"compact ASCII unchanged", `{"a":[1,true,null,"x y"]}`, `{"a":[1,true,null,"x y"]}`},
		{"whitespace removed outside strings", " {\n\t\"a b\" : [ 1 ,\r\n 2 ] } ", `{"a b":[1,2]}`},
		{"escapes copied as they are", `"\"\\\/\b\f\n\r\t\u00E9\uD800"`, `"\"\\\/\b\f\n\r\t\u00E9\uD800"`},
		{"escaped quote does not end the string", `["\" ", 1]`, `["\" ",1]`},
		{"backslash before quote", `["\\", 1]`, `["\\",1]`},
		{"two-byte", `"é"`, `"\u00e9"`},
		{"three-byte", `"€"`, `"\u20ac"`},
		{"U+2028 and U+2029", "\"a\u2028b\u2029c\"", `"a\u2028b\u2029c"`},
		{"astral plane", `"😀"`, `"\ud83d\ude00"`},
		{"U+10FFFF", "\"\U0010ffff\"", `"\udbff\udfff"`},
		{"U+FFFD", "\"\ufffd\"", `"\ufffd"`},
		{"invalid byte", "\"a\xffb\"", `"a\ufffdb"`},
		{"truncated sequence", "\"\xe2\x82\"", `"\ufffd\ufffd"`},
		{"UTF-8 surrogate", "\"\xed\xa0\x80\"", `"\ufffd\ufffd\ufffd"`},
		{"non-ASCII key and whitespace", "{ \"ключ\" : \"значение\" }", `{"\u043a\u043b\u044e\u0447":"\u0437\u043d\u0430\u0447\u0435\u043d\u0438\u0435"}`},
		{"non-ASCII then whitespace", "[\"é\", \"ü\" ]", `["\u00e9","\u00fc"]`},
		{"long ASCII run then non-ASCII", `"` + strings.Repeat("a", 100) + `é"`, `"` + strings.Repeat("a", 100) + `\u00e9"`},
		{"empty", ``, ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := appendASCII([]byte("prefix:"), []byte(tt.raw))
			if string(got) != "prefix:"+tt.want {
				t.Errorf("appendASCII(%q) = %q, want %q", tt.raw, got, "prefix:"+tt.want)
			}
			if !isPureASCII(got) {
				t.Errorf("appendASCII(%q) is not pure ASCII", tt.raw)
			}
		})
	}
}

func TestAppendASCIIFastPathAllocations(t *testing.T) {
	raw := []byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hello"}]}}`)
	dst := make([]byte, 0, 2*len(raw))
	allocs := testing.AllocsPerRun(10, func() { _ = appendASCII(dst, raw) })
	if allocs != 0 {
		t.Errorf("appendASCII on compact ASCII with room allocates %v times, want 0", allocs)
	}
	nonASCII := []byte(`{"text":"` + strings.Repeat("é😀", 1000) + `"}`)
	allocs = testing.AllocsPerRun(10, func() { _ = appendASCII(nil, nonASCII) })
	if allocs != 1 {
		t.Errorf("appendASCII on non-ASCII input allocates %v times, want 1", allocs)
	}
}

func isPureASCII(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

// encodingJSONCompact is the reference: json.Encoder with HTML escaping off,
// without its trailing newline.
func encodingJSONCompact(t *testing.T, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

type jsonSampleResult struct {
	Content []jsonSampleContent `json:"content"`
	IsError bool                `json:"isError,omitempty"`
	Meta    map[string]any      `json:"_meta,omitempty"`
}

type jsonSampleContent struct {
	Type string `json:"type"`
	Text string `json:"text,omitempty"`
}

func TestMarshalJSONMatchesEncodingJSON(t *testing.T) {
	ascii := []any{
		nil,
		true,
		42,
		-1.5e300,
		"plain",
		"<html> & 'quotes' \"double\" \\ / \b\f\n\r\t \x00 \x1f \x7f",
		[]any{1, "two", nil, map[string]any{"z": 1, "a": 2}},
		map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(` "x" `), "result": json.RawMessage(`{ "a" : [ 1 , 2 ] }`)},
		jsonSampleResult{Content: []jsonSampleContent{{Type: "text", Text: "a<b>&c"}}, Meta: map[string]any{"k": []int{}}},
		json.RawMessage(`"\u00e9 \ud800"`),
		[]byte("bytes become base64"),
		map[string]string{},
		[]string(nil),
	}
	for _, v := range ascii {
		want := encodingJSONCompact(t, v)
		got, err := marshalJSON(v)
		if err != nil {
			t.Fatalf("marshalJSON(%#v) = %v", v, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("marshalJSON(%#v) = %s, want %s", v, got, want)
		}
	}
}

func TestMarshalJSONEscapesNonASCII(t *testing.T) {
	tests := []struct {
		v    any
		want string
	}{
		{"é", `"\u00e9"`},
		{"😀", `"\ud83d\ude00"`},
		{"\u2028\u2029", `"\u2028\u2029"`},
		{"bad \xff byte", `"bad \ufffd byte"`},
		{map[string]string{"ключ": "<é>"}, `{"\u043a\u043b\u044e\u0447":"<\u00e9>"}`},
		{json.RawMessage("{ \"a\" : \"ü\" }"), `{"a":"\u00fc"}`},
	}
	for _, tt := range tests {
		got, err := marshalJSON(tt.v)
		if err != nil {
			t.Fatalf("marshalJSON(%#v) = %v", tt.v, err)
		}
		if string(got) != tt.want {
			t.Errorf("marshalJSON(%#v) = %s, want %s", tt.v, got, tt.want)
		}
		var back, orig any
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("output %s does not unmarshal: %v", got, err)
		}
		if err := json.Unmarshal(encodingJSONCompact(t, tt.v), &orig); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(back, orig) {
			t.Errorf("marshalJSON(%#v) decodes to %#v, want %#v", tt.v, back, orig)
		}
	}
}

func TestMarshalJSONErrors(t *testing.T) {
	_, err := marshalJSON(map[string]any{"c": make(chan int)})
	var unsupported *json.UnsupportedTypeError
	if !errors.As(err, &unsupported) {
		t.Fatalf("marshalJSON(chan) error = %v, want a *json.UnsupportedTypeError", err)
	}
	// The pooled encoder must still work after a failure.
	if got, err := marshalJSON([]int{1}); err != nil || string(got) != "[1]" {
		t.Errorf("marshalJSON after an error = %s, %v; want [1]", got, err)
	}
	if _, err := marshalJSON(json.RawMessage(`{bad`)); err == nil {
		t.Error("marshalJSON of an invalid RawMessage succeeded")
	}
}

func TestMarshalJSONResultIsNotShared(t *testing.T) {
	first, err := marshalJSON("first")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := marshalJSON("second value overwriting a pooled buffer"); err != nil {
		t.Fatal(err)
	}
	if string(first) != `"first"` {
		t.Errorf("first result changed to %s after another call", first)
	}
}
