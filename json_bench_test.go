package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// jsonToolsCallLine is a typical tools/call request of about 150 bytes.
const jsonToolsCallLine = `{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"search_files","arguments":{"query":"TODO","path":"src/"},"_meta":{"progressToken":"p17"}}}`

// jsonLargeParamsLine returns a tools/call request whose params hold about
// 64 KiB of structured arguments (records of strings, numbers and booleans).
func jsonLargeParamsLine() []byte {
	var b strings.Builder
	b.WriteString(`{"jsonrpc":"2.0","id":18,"method":"tools/call","params":{"name":"bulk_insert","arguments":{"rows":[`)
	for i := 0; b.Len() < 64<<10; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":%d,"name":"row-%d","score":%d.25,"active":%t,"tags":["a","b\n"],"note":"plain text with \"quotes\""}`, i, i, i*7, i%2 == 0)
	}
	b.WriteString(`]}}}`)
	return []byte(b.String())
}

func BenchmarkDecodeEnvelope(b *testing.B) {
	cases := []struct {
		name string
		line []byte
	}{
		{"tools-call-150B", []byte(jsonToolsCallLine)},
		{"params-64KiB", jsonLargeParamsLine()},
		{"string-64KiB", []byte(`{"jsonrpc":"2.0","id":19,"method":"tools/call","params":{"name":"write","arguments":{"text":"` + strings.Repeat("lorem ipsum ", 64<<10/12) + `"}}}`)},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.line)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := decodeEnvelope(c.line); err != nil {
					b.Fatal(err)
				}
			}
		})
		// The baseline: encoding/json's syntax check alone, which neither finds
		// duplicate keys nor captures members.
		b.Run(c.name+"/json.Valid", func(b *testing.B) {
			b.SetBytes(int64(len(c.line)))
			b.ReportAllocs()
			for b.Loop() {
				if !json.Valid(c.line) {
					b.Fatal("invalid")
				}
			}
		})
	}
}

// jsonBenchResult is a tools/call result carrying text of a chosen size.
type jsonBenchResult struct {
	Content []jsonBenchContent `json:"content"`
	IsError bool               `json:"isError"`
}

type jsonBenchContent struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// jsonFrameValues returns response frames of about size bytes whose text is
// ASCII, or non-ASCII (mixed Latin, CJK and emoji).
func jsonFrameValues(size int) (ascii, nonASCII any) {
	frame := func(text string) any {
		return map[string]any{"jsonrpc": "2.0", "id": 1, "result": jsonBenchResult{Content: []jsonBenchContent{{Type: "text", Text: text}}}}
	}
	overhead := len(`{"id":1,"jsonrpc":"2.0","result":{"content":[{"text":"","type":"text"}],"isError":false}}`)
	n := max(size-overhead, 8)
	const asciiUnit, nonASCIIUnit = "hello world ", "héllo 世界 😀 "
	asciiText := strings.Repeat(asciiUnit, n/len(asciiUnit)+1)[:n]
	nonASCIIText := strings.Repeat(nonASCIIUnit, n/len(nonASCIIUnit)+1)
	nonASCIIText = nonASCIIText[:strings.LastIndex(nonASCIIText[:n], " ")] // on a character boundary
	return frame(asciiText), frame(nonASCIIText)
}

func jsonMarshalCases(b *testing.B) []struct {
	name string
	v    any
} {
	ascii100, nonASCII100 := jsonFrameValues(100)
	ascii64K, nonASCII64K := jsonFrameValues(64 << 10)
	return []struct {
		name string
		v    any
	}{
		{"ascii-100B", ascii100},
		{"nonascii-100B", nonASCII100},
		{"ascii-64KiB", ascii64K},
		{"nonascii-64KiB", nonASCII64K},
	}
}

func BenchmarkMarshalJSON(b *testing.B) {
	for _, c := range jsonMarshalCases(b) {
		b.Run(c.name, func(b *testing.B) {
			out, err := marshalJSON(c.v)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(out)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := marshalJSON(c.v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkEncodingJSONBaseline is the baseline marshalJSON builds on: encoding/json
// with HTML escaping off, writing into a reused buffer.
func BenchmarkEncodingJSONBaseline(b *testing.B) {
	for _, c := range jsonMarshalCases(b) {
		b.Run(c.name, func(b *testing.B) {
			var buf strings.Builder
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			b.ReportAllocs()
			for b.Loop() {
				buf.Reset()
				if err := enc.Encode(c.v); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(int64(buf.Len()))
		})
	}
}

func BenchmarkAppendASCII(b *testing.B) {
	for _, c := range jsonMarshalCases(b) {
		raw, err := json.Marshal(c.v)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			dst := make([]byte, 0, 4*len(raw))
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				dst = appendASCII(dst[:0], raw)
			}
		})
	}
}

// BenchmarkAppendJSONString measures the string encoder of the direct
// result path on ASCII text and on as many bytes of mixed non-ASCII text
// (Latin, CJK, emoji), which it escapes as \uXXXX.
func BenchmarkAppendJSONString(b *testing.B) {
	for _, size := range []int{100, 64 << 10} {
		for _, c := range []struct{ name, text string }{
			{"ascii", strings.Repeat("x", size)},
			{"nonascii", nonASCIIText(size)},
		} {
			b.Run(fmt.Sprintf("%s-%dB", c.name, size), func(b *testing.B) {
				dst := make([]byte, 0, 4*size)
				b.SetBytes(int64(size))
				b.ReportAllocs()
				for b.Loop() {
					dst = appendJSONString(dst[:0], c.text)
				}
			})
		}
	}
}

// BenchmarkEscapeGrowth sizes the escaping of a 64 KiB text, as a direct
// tool result is sized before it is built.
func BenchmarkEscapeGrowth(b *testing.B) {
	for _, c := range []struct{ name, text string }{
		{"ascii-65536B", strings.Repeat("x", 65536)},
		{"nonascii-65536B", nonASCIIText(65536)},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.text)))
			for b.Loop() {
				escapeGrowth(c.text)
			}
		})
	}
}
