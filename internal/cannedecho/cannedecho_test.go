package cannedecho

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"
)

// Each line gets its answer: a tools/call's text as sent, however its
// quotes and backslashes are escaped, under the request's id; canned
// results for the other methods; nothing for a notification or a blank
// line; a parse error for a line that is no request.
func TestAppendLine(t *testing.T) {
	tests := []struct{ line, want string }{
		{`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"plain"}}}`,
			`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"plain"}]}}`},
		{`{"jsonrpc":"2.0","id":"a,b}","method":"tools/call","params":{"name":"echo","arguments":{"text":"say \"hi\""}}}`,
			`{"jsonrpc":"2.0","id":"a,b}","result":{"content":[{"type":"text","text":"say \"hi\""}]}}`},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"ends in \\"}}}` + "\r\n",
			`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"ends in \\"}]}}`},
		{`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"\\\"q\\\\"}}}`,
			`{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"\\\"q\\\\"}]}}`},
		{`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"é 中"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
			`{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"é 中"}]}}`},
		{`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`,
			`{"jsonrpc":"2.0","id":0,"result":` + initializeResult + `}`},
		{`{"jsonrpc":"2.0","id":4,"method":"tools/list"}`, `{"jsonrpc":"2.0","id":4,"result":` + toolsListResult + `}`},
		{`{"jsonrpc":"2.0","id":5,"method":"ping"}`, `{"jsonrpc":"2.0","id":5,"result":{}}`},
		{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, ``},
		{"\r\n", ``},
		{`not json`, strings.TrimSuffix(parseErrorLine, "\n")},
	}
	for _, tt := range tests {
		want := tt.want
		if want != "" {
			want += "\n"
		}
		if got := string(AppendLine(nil, []byte(tt.line))); got != want {
			t.Errorf("AppendLine(%s)\n got %s\nwant %s", tt.line, got, want)
		}
	}
}

// ServeLines answers every line, however its reads cut the input, a line
// longer than its buffer and a last line without a newline included, and
// returns nil at the end of its input.
func TestServeLines(t *testing.T) {
	long := strings.Repeat("x", readChunk+100)
	var in, want strings.Builder
	for i, text := range []string{"a", long, "b", "c"} {
		id := string(rune('1' + i))
		in.WriteString(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + text + `"}}}`)
		if i < 3 {
			in.WriteString("\n")
		}
		want.WriteString(`{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[{"type":"text","text":"` + text + `"}]}}` + "\n")
	}
	for name, reader := range map[string]func(io.Reader) io.Reader{
		"whole reads":    func(r io.Reader) io.Reader { return r },
		"half reads":     iotest.HalfReader,
		"one byte reads": iotest.OneByteReader,
	} {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			if err := ServeLines(reader(strings.NewReader(in.String())), &out); err != nil {
				t.Fatal(err)
			}
			if out.String() != want.String() {
				t.Fatalf("answers differ: got %d bytes, want %d", out.Len(), want.Len())
			}
		})
	}
}

// ServeLines answers the lines of one read in one write, and returns the
// error of a failed read or write.
func TestServeLinesWritesAndErrors(t *testing.T) {
	lines := strings.Repeat(`{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n", 3)
	w := &countingWriter{}
	if err := ServeLines(strings.NewReader(lines), w); err != nil || w.writes != 1 {
		t.Fatalf("three lines in one read: %d writes, error %v; want 1 write", w.writes, err)
	}
	if err := ServeLines(iotest.ErrReader(io.ErrUnexpectedEOF), io.Discard); err != io.ErrUnexpectedEOF {
		t.Fatalf("a failed read: %v", err)
	}
	if err := ServeLines(strings.NewReader(lines), failingWriter{}); err != io.ErrClosedPipe {
		t.Fatalf("a failed write: %v", err)
	}
}

type countingWriter struct{ writes int }

func (w *countingWriter) Write(p []byte) (int, error) { w.writes++; return len(p), nil }

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, io.ErrClosedPipe }

// Handler answers a POSTed request with its JSON answer (an initialize with
// the session id), a notification 202, any other method 405, and a body
// over MaxBody 413.
func TestHandler(t *testing.T) {
	srv := httptest.NewServer(Handler())
	defer srv.Close()
	tests := []struct {
		name, method, body string
		status             int
		session, answer    string
	}{
		{"tools/call", http.MethodPost, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`, http.StatusOK, "",
			`{"jsonrpc":"2.0","id":9,"result":{"content":[{"type":"text","text":"hi"}]}}`},
		{"initialize", http.MethodPost, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}`, http.StatusOK, SessionID,
			`{"jsonrpc":"2.0","id":0,"result":` + initializeResult + `}`},
		{"notification", http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, http.StatusAccepted, "", ""},
		{"GET", http.MethodGet, "", http.StatusMethodNotAllowed, "", "Method Not Allowed\n"},
		{"too large", http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{"text":"` + strings.Repeat("x", MaxBody) + `"}}}`, http.StatusRequestEntityTooLarge, "", errTooLarge.Error() + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, srv.URL+"/mcp", strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.status || resp.Header.Get("Mcp-Session-Id") != tt.session || string(body) != tt.answer {
				t.Fatalf("status %d, session %q, body %.200s; want %d, %q, %.200s", resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), body, tt.status, tt.session, tt.answer)
			}
		})
	}
}
